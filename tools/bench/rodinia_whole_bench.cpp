// canopy-bench rodinia --whole-process: each Rodinia example program run
// from start to exit beside the project's OpenMP port of it built as a
// standalone program (rodinia-openmp), as separate processes on the same
// input files, written once. Wall time and peak memory are what the OS
// reports for each finished process; the Canopy runs find their kernels in
// the kernel cache (warm, after one untimed run of each program), and one
// more Canopy run with an empty cache folder gives the cold figure beside it.
// Where both programs write an integer result file, the files are compared.
// Both read and write through the same code (examples/rodinia); the examples
// hold the data in canopy::HostVector, the port in std::vector, as a plain
// program would (rodinia::Vector).
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <canopy/canopy.hpp>

#include "process.hpp"
#include "report.hpp"

namespace canopy::bench {

namespace {

namespace fs = std::filesystem;

struct App {
  std::string name;
  /// Runs of the example that write the inputs (in the work folder), once.
  std::vector<std::vector<std::string>> prepare;
  /// The arguments of the timed runs, the same for both programs.
  std::vector<std::string> args;
  /// A file both write in their folder, compared byte for byte; empty: none.
  std::string result;
};

/// The programs and their inputs at each size: small to try the bench, medium
/// for the figures (a second or a few per run). gaussian runs quiet (-q), as
/// its port does: otherwise it prints both matrices, 8M numbers at medium.
std::vector<App> apps(bool medium, const fs::path& work) {
  auto at = [&](const std::string& file) { return (work / file).string(); };
  auto pick = [&](const char* small, const char* large) { return std::string(medium ? large : small); };
  const std::string grid = pick("512", "1024"), lud = pick("512", "2048"), gaussian = pick("256", "2048");
  return {
      {"hotspot",
       {{grid, grid, "1", "2", at("temp"), at("power"), at("first"), "--generate"}},
       {grid, grid, pick("100", "3000"), "2", at("temp"), at("power"), "output.out"},
       ""},
      {"srad_v2",
       {},
       {pick("512", "2048"), pick("512", "2048"), "0", "127", "0", "127", "2", "0.5", pick("20", "100")},
       ""},
      {"pathfinder", {}, {pick("100000", "1000000"), pick("100", "200")}, ""},
      {"lud", {{"-i", at("lud.dat"), "--generate", lud}}, {"-i", at("lud.dat")}, ""},
      {"nw", {}, {pick("2048", "16384"), "10", "2"}, "result.txt"},
      {"gaussian", {{"-f", at("gaussian.txt"), "--generate", gaussian}}, {"-f", at("gaussian.txt"), "-q"}, ""},
      {"backprop", {}, {pick("65536", "8388608")}, ""},
      {"kmeans",
       {{"--generate", pick("20000", "800000"), "--features", "34", "-i", at("kmeans.txt")}},
       {"-i", at("kmeans.txt")},
       ""},
      {"nn",
       {{at("nn-list.txt"), "--generate", pick("200000", "8000000"), "-q"}},
       {at("nn-list.txt"), "-r", "5", "-lat", "30", "-lng", "90"},
       ""},
      {"bfs", {{at("graph.txt"), "--generate", pick("100000", "1000000")}}, {at("graph.txt")}, "result.txt"},
      {"lavaMD", {}, {"-boxes1d", pick("4", "10")}, ""},
  };
}

std::string read_all(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

int rodinia_whole_process(const std::string& size, int runs, const std::vector<std::string>& wanted) {
  if (size != "small" && size != "medium") fail("--whole-process: --size " + size + ": expected small or medium");
  const fs::path bin = fs::path(this_program()).parent_path();
  const std::string openmp = (bin / "rodinia-openmp").string();
  if (!fs::exists(openmp)) fail("--whole-process needs " + openmp + " (built with canopy-bench)");
  char pattern[] = "/tmp/canopy-rodinia-XXXXXX";
  if (!mkdtemp(pattern)) fail("--whole-process: cannot make a temporary folder");
  const fs::path work = pattern;
  const std::vector<std::string> cpu{"CANOPY_DEVICES=cpu"};

  std::printf(
      "Rodinia whole processes, size %s: medians of %d runs of each, in turn, after one untimed run;\n"
      "CANOPY_DEVICES=cpu; ratio = OpenMP / Canopy wall time (above 1: Canopy is faster); memory: peak RSS;\n"
      "limit: the larger of 1.2x and +40 MB of OpenMP's; cold: one Canopy run with an empty cache folder\n",
      size.c_str(), runs);
  std::printf("%-11s %9s %9s %7s %10s %10s %9s %8s  %s\n", "program", "canopy s", "openmp s", "ratio", "canopy MB",
              "openmp MB", "limit MB", "cold s", "result");
  bool all_within = true;
  struct Cleanup {
    fs::path folder;
    ~Cleanup() {
      std::error_code ignored;
      fs::remove_all(folder, ignored);
    }
  } cleanup{work};
  for (const App& app : apps(size == "medium", work)) {
    if (!wanted.empty() && std::find(wanted.begin(), wanted.end(), app.name) == wanted.end()) continue;
    const std::string example = (bin / app.name).string();
    for (const auto& args : app.prepare)
      run_process({example, args, cpu, work.string(), (work / "prepare.txt").string()});
    const fs::path canopy_dir = work / (app.name + "-canopy"), openmp_dir = work / (app.name + "-openmp");
    fs::create_directories(canopy_dir);
    fs::create_directories(openmp_dir);
    std::vector<std::string> openmp_args{app.name};
    openmp_args.insert(openmp_args.end(), app.args.begin(), app.args.end());
    const ProcessRun canopy_run{example, app.args, cpu, canopy_dir.string(), (canopy_dir / "output.txt").string()};
    const ProcessRun openmp_run{openmp, openmp_args, {}, openmp_dir.string(), (openmp_dir / "output.txt").string()};
    run_process(canopy_run);
    run_process(openmp_run);
    std::vector<double> canopy_s, openmp_s, canopy_mb, openmp_mb;
    for (int k = 0; k < runs; ++k) {
      const ProcessSample c = run_process(canopy_run), o = run_process(openmp_run);
      canopy_s.push_back(c.seconds);
      canopy_mb.push_back(c.megabytes);
      openmp_s.push_back(o.seconds);
      openmp_mb.push_back(o.megabytes);
    }
    ProcessRun cold = canopy_run;
    const fs::path empty_cache = work / (app.name + "-cache");
    cold.environment.push_back("CANOPY_CACHE_DIR=" + empty_cache.string());
    const double cold_seconds = run_process(cold).seconds;
    fs::remove_all(empty_cache);

    std::string result = "-";
    if (!app.result.empty())
      result = read_all(canopy_dir / app.result) == read_all(openmp_dir / app.result) ? app.result + " same"
                                                                                      : app.result + " DIFFERS";
    const double c = median(canopy_s), o = median(openmp_s), cm = median(canopy_mb), om = median(openmp_mb);
    const double limit = std::max(1.2 * om, om + 40.0);
    all_within = all_within && cm <= limit && result.find("DIFFERS") == std::string::npos;
    std::printf("%-11s %9.3f %9.3f %6.2fx %10.1f %10.1f %9.1f %8.3f  %s%s\n", app.name.c_str(), c, o, o / c, cm, om,
                limit, cold_seconds, result.c_str(), cm <= limit ? "" : "  (memory above the limit)");
    std::fflush(stdout);
    fs::remove_all(canopy_dir);
    fs::remove_all(openmp_dir);
  }
  return all_within ? 0 : 1;
}

}  // namespace canopy::bench
