// canopy-bench compile: what compiling costs a program's first launches. Five
// STREAM-like kernels, compiled from scratch (no disk cache): launched at
// once (the launch compiles), and another five of the same shape launched
// after Runtime::compile and some other work on the launching thread (the
// background thread compiles meanwhile; the variants with streaming stores,
// which these small launches do not use, follow at the lowest priority);
// each first launch beside the same kernel's second launch.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <canopy/canopy.hpp>

#include "report.hpp"

namespace canopy::bench {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

using Unary = Kernel<void(Out<double>, In<double>)>;

// Five kernels whose IR differs by `salt`, so that no compile of one set
// serves the other.
std::vector<Unary> kernels(double salt) {
  std::vector<Unary> made;
  made.emplace_back(
      "compile_copy", [salt](Out<double> out, In<double> in) { out[index(0)] = in[index(0)] + salt; },
      std::vector<std::string>{"out", "in"});
  made.emplace_back(
      "compile_scale", [salt](Out<double> out, In<double> in) { out[index(0)] = in[index(0)] * salt; },
      std::vector<std::string>{"out", "in"});
  made.emplace_back(
      "compile_square", [salt](Out<double> out, In<double> in) { out[index(0)] = in[index(0)] * in[index(0)] - salt; },
      std::vector<std::string>{"out", "in"});
  made.emplace_back(
      "compile_poly",
      [salt](Out<double> out, In<double> in) {
        const Value<double> x = in[index(0)];
        out[index(0)] = (x * salt + 2.0) * x + 1.0;
      },
      std::vector<std::string>{"out", "in"});
  made.emplace_back(
      "compile_clamp",
      [salt](Out<double> out, In<double> in) { out[index(0)] = select(in[index(0)] > salt, salt, in[index(0)]); },
      std::vector<std::string>{"out", "in"});
  return made;
}

// Each kernel's first and second launch (launch + pause), in seconds.
struct Launches {
  std::vector<double> first, second;
};

Launches launch_all(Runtime& rt, const std::vector<Unary>& set, Array<double>& out, Array<double>& in, std::int64_t n) {
  Launches l;
  for (const auto& k : set) {
    auto start = Clock::now();
    rt.region(k).over(n).launch(out, in);
    rt.pause();
    l.first.push_back(seconds_since(start));
    start = Clock::now();
    rt.region(k).over(n).launch(out, in);
    rt.pause();
    l.second.push_back(seconds_since(start));
  }
  return l;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

void print(const char* what, const Launches& l) {
  double first = 0, second = 0;
  for (double s : l.first) first += s;
  for (double s : l.second) second += s;
  std::printf("%-44s first launches %7.2f ms (median %5.2f), second launches %6.2f ms\n", what, first * 1e3,
              median(l.first) * 1e3, second * 1e3);
}

}  // namespace

int compile_command(int argc, char** argv) {
  Args args(argc, argv, {});
  const std::int64_t n = args.count("--size", 100000);
  const int work_ms = static_cast<int>(args.count("--work", 30));
  setenv("CANOPY_DEVICES", "cpu", 1);
  setenv("CANOPY_CACHE_DIR", "off", 1);  // every compile from scratch
  Runtime rt;
  auto in = rt.array<double>(n), out = rt.array<double>(n);
  {
    auto v = in.host();
    for (std::int64_t i = 0; i < n; ++i) v[i] = double(i % 1000) * 0.001;
  }
  // Warm the JIT itself (its first compile starts LLVM's machinery).
  const auto warm = kernels(0.5);
  rt.region(warm[0]).over(n).launch(out, in);
  rt.pause();

  const auto at_once = kernels(1.5);
  const Launches plain = launch_all(rt, at_once, out, in, n);

  const auto ahead = kernels(2.5);
  const auto start = Clock::now();
  Compilation compiling = rt.compile(ahead[0], ahead[1], ahead[2], ahead[3], ahead[4]);
  const double compile_call = seconds_since(start);
  // Other work on the launching thread meanwhile (say, reading input).
  volatile double sink = 0;
  while (seconds_since(start) < work_ms * 1e-3) sink = sink + 1.0;
  const bool ready = compiling.ready();
  const Launches prepared = launch_all(rt, ahead, out, in, n);

  std::printf("compile: five kernels over %lld doubles, compiled from scratch (CANOPY_CACHE_DIR=off), one CPU leaf\n",
              static_cast<long long>(n));
  print("launched at once (the launch compiles):", plain);
  char what[96];
  std::snprintf(what, sizeof what, "after rt.compile() and %d ms of other work:", work_ms);
  print(what, prepared);
  std::printf("rt.compile() returned in %.2f ms; all compiled before the first launch: %s\n", compile_call * 1e3,
              ready ? "yes" : "no");
  return 0;
}

}  // namespace canopy::bench
