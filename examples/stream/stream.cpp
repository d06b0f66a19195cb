// STREAM on Canopy: BabelStream's five kernels, timed, checked, and reported
// in MB/s as BabelStream prints them.
//
//   stream [--size N] [--repeat K] [--float] [--policy P] [--stats]
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "babelstream.hpp"

namespace {

struct Options {
  std::int64_t size = std::int64_t{1} << 25;
  int repeat = 100;
  bool use_float = false;
  std::string policy = "static";
  bool stats = false;
};

[[noreturn]] void usage(const char* problem) {
  std::fprintf(stderr,
               "stream: %s\nusage: stream [--size N] [--repeat K] [--float] [--policy P] [--stats]\n"
               "  --size N     elements per array (default 33554432 = 2^25)\n"
               "  --repeat K   rounds of the five kernels (default 100)\n"
               "  --float      single precision (default double)\n"
               "  --policy P   how regions split over the leaves (default static)\n"
               "  --stats      print the runtime's statistics at the end (pieces, passes, bytes moved, memories)\n",
               problem);
  std::exit(2);
}

std::int64_t parse_count(const char* flag, const char* text) {
  char* end = nullptr;
  long long value = std::strtoll(text, &end, 10);
  if (!*text || *end || value < 1)
    usage((std::string(flag) + " takes a positive whole number, got '" + text + "'").c_str());
  return value;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto next = [&]() -> const char* {
      if (i + 1 >= argc) usage((arg + " needs a value").c_str());
      return argv[++i];
    };
    if (arg == "--size")
      o.size = parse_count("--size", next());
    else if (arg == "--repeat")
      o.repeat = static_cast<int>(parse_count("--repeat", next()));
    else if (arg == "--float")
      o.use_float = true;
    else if (arg == "--policy")
      o.policy = next();
    else if (arg == "--stats")
      o.stats = true;
    else if (arg == "--help" || arg == "-h")
      usage("BabelStream's kernels on Canopy");
    else
      usage(("unknown argument '" + arg + "'").c_str());
  }
  return o;
}

template <class T>
int run(canopy::Runtime& rt, const Options& o) {
  std::printf("Array size: %.1f MB (%lld elements of %s), %d repetitions\n", double(o.size) * sizeof(T) * 1e-6,
              static_cast<long long>(o.size), sizeof(T) == 4 ? "float" : "double", o.repeat);
  babelstream::Stream<T> stream(rt, o.size, o.policy);
  babelstream::Timings timings;
  for (int r = 0; r < o.repeat; ++r)
    for (int k = 0; k < 5; ++k) timings.add(k, stream.run(k));
  auto problems = stream.check(o.repeat);
  std::printf("%-10s %12s %11s %11s %11s\n", "Function", "MBytes/sec", "Min (sec)", "Max", "Average");
  for (int k = 0; k < 5; ++k) {
    // BabelStream skips the first repetition in its statistics only when there are several.
    double bytes = double(babelstream::arrays_touched[k]) * sizeof(T) * double(o.size);
    std::printf("%-10s %12.3f %11.5f %11.5f %11.5f\n", babelstream::kernel_names[k], bytes / timings.best[k] * 1e-6,
                timings.best[k], timings.worst[k], timings.total[k] / o.repeat);
  }
  if (o.stats) std::printf("%s", rt.stats().to_text().c_str());
  if (!problems.empty()) {
    std::fprintf(stderr, "stream: validation failed: %s\n", problems.c_str());
    return 1;
  }
  std::printf("Validation: ok\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  auto options = parse(argc, argv);
  try {
    canopy::Runtime rt;
    std::printf("%s", rt.describe().c_str());
    return options.use_float ? run<float>(rt, options) : run<double>(rt, options);
  } catch (const canopy::Error& e) {
    std::fprintf(stderr, "stream: %s\n", e.what());
    return 1;
  }
}
