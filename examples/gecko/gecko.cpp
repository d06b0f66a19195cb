// The Gecko paper's STREAM program (section 7, Figure 6) on Canopy: load the
// configuration file, place the three arrays at the virtual location "LocH",
// run triad with the policy chosen when the program starts, and report the
// bandwidth and where the region ran. Moving LocH in the configuration file
// moves the work, with no change to this program.
//
//   gecko [CONFIG] [--policy P] [--size N] [--repeat K]
//
// CONFIG defaults to figure6a.conf next to this program (the build copies
// it there). Without --policy, the policy comes from CANOPY_POLICY or
// Gecko's GECKO_POLICY (the region's policy is "runtime"), else "static".
#include <canopy/canopy.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <string>

namespace {

struct Options {
  std::string config;
  std::string policy;
  std::int64_t size = std::int64_t{1} << 24;
  int repeat = 20;
};

[[noreturn]] void usage(const std::string& problem) {
  std::fprintf(
      stderr,
      "gecko: %s\nusage: gecko [CONFIG] [--policy P] [--size N] [--repeat K]\n"
      "  CONFIG       a configuration in Gecko's format (default: figure6a.conf beside this program)\n"
      "  --policy P   how triad splits over the leaves (default: $CANOPY_POLICY or $GECKO_POLICY, else static)\n"
      "  --size N     elements per array (default 16777216 = 2^24)\n"
      "  --repeat K   triad runs; the best is reported (default 20)\n",
      problem.c_str());
  std::exit(2);
}

std::int64_t parse_count(const std::string& flag, const char* text) {
  char* end = nullptr;
  const long long value = std::strtoll(text, &end, 10);
  if (!*text || *end || value < 1) usage(flag + " takes a positive whole number, got '" + text + "'");
  return value;
}

// The directory this program was started from, for the default configuration.
std::filesystem::path program_directory(const char* argv0) {
  std::error_code error;
  auto self = std::filesystem::read_symlink("/proc/self/exe", error);
  if (error) self = std::filesystem::absolute(argv0, error);
  return self.parent_path();
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto next = [&]() -> const char* {
      if (i + 1 >= argc) usage(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--policy")
      o.policy = next();
    else if (arg == "--size")
      o.size = parse_count(arg, next());
    else if (arg == "--repeat")
      o.repeat = static_cast<int>(parse_count(arg, next()));
    else if (arg == "--help" || arg == "-h")
      usage("STREAM's triad on the Gecko paper's configuration (a)");
    else if (!arg.empty() && arg[0] != '-' && o.config.empty())
      o.config = arg;
    else
      usage("unknown argument '" + arg + "'");
  }
  if (o.config.empty()) o.config = (program_directory(argv[0]) / "figure6a.conf").string();
  if (o.policy.empty()) {
    auto set = [](const char* name) {
      const char* value = std::getenv(name);
      return value && *value;
    };
    o.policy = set("CANOPY_POLICY") || set("GECKO_POLICY") ? "runtime" : "static";
  }
  return o;
}

int run(const Options& o) {
  using namespace canopy;
  Runtime rt;
  rt.load_config(o.config);
  std::printf("Configuration: %s\n%s", o.config.c_str(), rt.hierarchy().to_text().c_str());

  // Figure 6, lines 3-5: the three arrays at the virtual location LocH.
  auto a = rt.array<double>(o.size, at("LocH") | named("a"));
  auto b = rt.array<double>(o.size, at("LocH") | named("b"));
  auto c = rt.array<double>(o.size, at("LocH") | named("c"));

  Kernel init("init",
              [](Out<double> a, Out<double> b, Out<double> c) {
                Idx i = index(0);
                a[i] = 0.0;
                b[i] = 0.5;
                c[i] = cast<double>(i % 1000);
              },
              {"a", "b", "c"});
  Kernel triad("triad",
               [](Out<double> a, In<double> b, In<double> c, Val<double> scalar) {
                 Idx i = index(0);
                 a[i] = b[i] + scalar * c[i];
               },
               {"a", "b", "c", "scalar"});
  const double scalar = 0.4;

  // Figure 6, lines 7-14: initialise with the chosen policy, then pause.
  rt.region(init).over(o.size).policy(o.policy).launch(a, b, c);
  rt.pause();
  // Lines 19-27: triad, num_times times.
  double best = std::numeric_limits<double>::infinity();
  for (int r = 0; r < o.repeat; ++r) {
    const auto start = std::chrono::steady_clock::now();
    rt.region(triad).over(o.size).policy(o.policy).launch(a, b, c, scalar);
    rt.pause();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }

  const RegionStats where = rt.stats().recent.back();
  std::printf("triad ran at %s with policy %s:", where.location.c_str(), where.policy.c_str());
  for (const PieceStats& piece : where.pieces)
    std::printf(" %s[%lld,%lld)", piece.leaf.c_str(), static_cast<long long>(piece.begin),
                static_cast<long long>(piece.end));
  const double bytes = 3.0 * sizeof(double) * double(o.size);
  std::printf("\ntriad: %lld elements, best of %d runs %.6f s, %.1f GB/s\n", static_cast<long long>(o.size), o.repeat,
              best, bytes / best * 1e-9);

  auto ha = a.host();
  std::int64_t wrong = 0;
  for (std::int64_t i = 0; i < o.size; ++i) {
    const double expected = 0.5 + scalar * double(i % 1000);
    if (std::fabs(ha[i] - expected) > 1e-12 * std::fabs(expected)) ++wrong;
  }
  if (wrong != 0) {
    std::fprintf(stderr, "gecko: validation failed: %lld of %lld elements of a are wrong\n",
                 static_cast<long long>(wrong), static_cast<long long>(o.size));
    return 1;
  }
  std::printf("Validation: ok\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const Options options = parse(argc, argv);
  try {
    return run(options);
  } catch (const canopy::Error& e) {
    std::fprintf(stderr, "gecko: %s\n", e.what());
    return 1;
  }
}
