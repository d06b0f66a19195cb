// Rodinia's nn on Canopy: reads the same command line and database files as
// Rodinia 3.1's nn (a file list naming files of hurricane records) and
// prints the nearest records the same way. It can also generate a database
// (--generate, fixed seed), run where --at and --policy say, and check
// itself against a plain search on the host (--verify).
//
//   nn filelist -r 5 -lat 30 -lng 90 [-q] [-t]
//   nn filelist 5 30 90                      (the OpenMP version's form)
//   nn list.txt --generate 100000 -r 5 -lat 30 -lng 90 --verify
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "../common/rodinia.hpp"
#include "nn.hpp"

namespace {

constexpr const char* kProgram = "nn";
constexpr const char* kUsage =
    "nn <filelist> [-r records] [-lat latitude] [-lng longitude] [-q] [-t] [options]\n"
    "   or: nn <filelist> <records> <latitude> <longitude>\n"
    "  filelist        a file naming the database files, one per line\n"
    "  -r records      how many nearest records to find (default 10)\n"
    "  -lat latitude   the target's latitude (default 0)\n"
    "  -lng longitude  the target's longitude (default 0)\n"
    "  -q              quiet: do not list the records found\n"
    "  -t              print the time the search took\n"
    "  --generate N    first write N generated records (fixed seed) into files named by filelist\n"
    "  --files F       how many database files --generate writes (default 4)\n"
    "  --at LOCATION   run the region at LOCATION (default: where the arrays are)\n"
    "  --policy P      how the records are split over the leaves (default static)\n"
    "  --verify        also search plainly on the host and compare";

struct Options {
  std::string list;
  long long neighbours = 10;
  float latitude = 0, longitude = 0;
  bool quiet = false, timing = false, verify = false;
  long long generate = 0, files = 4;
  std::string location, policy = "static";
};

Options parse(int argc, char** argv) {
  Options o;
  std::vector<std::string> positional;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) rodinia::usage_error(kProgram, arg + " needs a value", kUsage);
      return argv[++i];
    };
    if (arg == "-r")
      o.neighbours = rodinia::parse_integer(kProgram, "-r", value(), kUsage, 1);
    else if (arg == "-lat")
      o.latitude = static_cast<float>(rodinia::parse_number(kProgram, "-lat", value(), kUsage));
    else if (arg == "-lng")
      o.longitude = static_cast<float>(rodinia::parse_number(kProgram, "-lng", value(), kUsage));
    else if (arg == "-q")
      o.quiet = true;
    else if (arg == "-t")
      o.timing = true;
    else if (arg == "-h" || arg == "--help")
      rodinia::usage_error(kProgram, "help", kUsage);
    else if (arg == "--generate")
      o.generate = rodinia::parse_integer(kProgram, "--generate", value(), kUsage, 1);
    else if (arg == "--files")
      o.files = rodinia::parse_integer(kProgram, "--files", value(), kUsage, 1);
    else if (arg == "--at")
      o.location = value();
    else if (arg == "--policy")
      o.policy = value();
    else if (arg == "--verify")
      o.verify = true;
    else if (arg.size() > 1 && arg[0] == '-' && std::strtod(arg.c_str(), nullptr) == 0.0 && arg != "-0")
      rodinia::usage_error(kProgram, "unknown option '" + arg + "'", kUsage);
    else
      positional.push_back(arg);
  }
  if (positional.empty()) rodinia::usage_error(kProgram, "no file list", kUsage);
  o.list = positional[0];
  if (positional.size() == 4) {  // the OpenMP version: filelist records latitude longitude
    o.neighbours = rodinia::parse_integer(kProgram, "the number of records", positional[1].c_str(), kUsage, 1);
    o.latitude = static_cast<float>(rodinia::parse_number(kProgram, "the latitude", positional[2].c_str(), kUsage));
    o.longitude = static_cast<float>(rodinia::parse_number(kProgram, "the longitude", positional[3].c_str(), kUsage));
  } else if (positional.size() != 1) {
    rodinia::usage_error(kProgram, "expected a file list, or a file list, records, latitude and longitude", kUsage);
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  namespace nn = rodinia::nn;
  const Options o = parse(argc, argv);
  try {
    if (o.generate) {
      nn::write_database(o.list, nn::generate(o.generate), static_cast<int>(o.files));
      std::printf("Generated %lld records in %lld files named in %s\n", o.generate, o.files, o.list.c_str());
    }
    canopy::Runtime rt;
    const int k = static_cast<int>(o.neighbours);
    if (!o.verify) {
      // The files are searched a block of records at a time, as they are read.
      std::int64_t records = 0;
      const auto start = std::chrono::steady_clock::now();
      const auto found = nn::nearest_in_database(rt, o.list, k, o.latitude, o.longitude, records, o.location, o.policy);
      const double seconds = rodinia::seconds_since(start);
      if (!o.quiet)
        for (const nn::Found& f : found)
          std::printf("%s --> Distance=%f\n", f.line.c_str(), double(f.neighbour.distance));
      if (o.timing)
        std::printf("Search of %lld records (read as it goes): %.6f s\n", static_cast<long long>(records), seconds);
      return 0;
    }
    // --verify: the whole database at once, searched on the runtime and
    // plainly on the host; then the files searched as they are read.
    const nn::Records records = nn::read_database(o.list);
    std::vector<float> distances;
    const auto start = std::chrono::steady_clock::now();
    const std::vector<nn::Neighbour> found =
        nn::nearest(rt, records, k, o.latitude, o.longitude, distances, o.location, o.policy);
    const double seconds = rodinia::seconds_since(start);
    if (!o.quiet)
      for (const nn::Neighbour& n : found)
        std::printf("%s --> Distance=%f\n", records.line(n.record).c_str(), double(n.distance));
    if (o.timing) std::printf("Search of %lld records: %.6f s\n", static_cast<long long>(records.size()), seconds);
    // The plain search: every record parsed line by line, measured on the host.
    const std::vector<nn::Neighbour> plain = nn::nearest_serially(records, k, o.latitude, o.longitude);
    std::string problem = nn::compare(found, plain);
    if (problem.empty()) {
      // And the search that parses the files' text on the runtime as it reads them.
      std::int64_t read = 0;
      std::vector<nn::Neighbour> by_blocks;
      for (const nn::Found& f :
           nn::nearest_in_database(rt, o.list, k, o.latitude, o.longitude, read, o.location, o.policy))
        by_blocks.push_back(f.neighbour);
      problem = read != records.size() ? std::to_string(read) + " records searched as the files were read"
                                       : nn::compare(by_blocks, plain);
      if (!problem.empty()) problem = "reading the files as it searched: " + problem;
    }
    if (!problem.empty()) {
      std::printf("Verification: FAILED (against a plain search on the host: %s)\n", problem.c_str());
      return 1;
    }
    std::printf(
        "Verification: ok (the same %zu nearest records as a plain search on the host, with the records in memory "
        "and read from the files as searched)\n",
        found.size());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", kProgram, e.what());
    return 1;
  }
}
