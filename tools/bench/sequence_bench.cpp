// canopy-bench sequence: placement chosen for a sequence of regions
// (runtime/internal/sequence_placement.hpp). A loop of two kernels over the
// same arrays, both split by the adaptive policy over a CPU leaf and a
// device leaf:
//   relax:  a = a polynomial of b (32 multiply-adds per point: compute-bound)
//   smooth: b = a 3-point average of a (memory-bound, a stencil, so the
//           recorder never fuses the two)
// Their learned splits differ, since the two leaves' speeds differ more for
// one than the other. With CANOPY_SEQUENCE_PLACEMENT=off each keeps its own
// split and the rows between the two boundaries change memory twice per
// iteration; on, the kernel that loses less by it takes the other's split.
// One Runtime per run, on and off interleaved (--repeat runs each); each
// run learns for --warm iterations, then times --iterations queued
// iterations and one pause. Prints the medians of the loop's time and of the
// bytes moved between memories per iteration, and their ratios; every run's
// result is checked against a serial loop.
//
// As canopy-bench adaptive: without CANOPY_DEVICES, CANOPY_CPU_LEAVES and
// POCL_MAX_PTHREAD_COUNT it sets CANOPY_DEVICES=cpu,opencl,
// CANOPY_CPU_LEAVES=core and POCL_MAX_PTHREAD_COUNT=1, and cuts the tree down
// to the two leaves (--leaves A,B to choose them). Without a device leaf it
// says SKIPPED and exits with 77.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <canopy/canopy.hpp>

#include "report.hpp"

namespace canopy::bench {

namespace {

constexpr int kTerms = 32;  // multiply-adds of relax per point

using Relax = Kernel<void(Out<double>, In<double>)>;
using Smooth = Kernel<void(Out<double>, In<double>, Val<std::int64_t>)>;

Relax relax_kernel() {
  return Relax("relax",
               [](Out<double> a, In<double> b) {
                 Idx i = index(0);
                 Var<double> y = b[i];
                 for (int t = 0; t < kTerms; ++t) y = y * 0.5 + 0.25;
                 a[i] = y;
               },
               {"a", "b"});
}

Smooth smooth_kernel() {
  return Smooth("smooth",
                [](Out<double> b, In<double> a, Val<std::int64_t> n) {
                  Idx i = index(0);
                  If(i > 0 && i < n - 1, [&] { b[i] = 0.25 * a[i - 1] + 0.5 * a[i] + 0.25 * a[i + 1]; }).Else([&] {
                    b[i] = a[i];
                  });
                },
                {"b", "a", "n"});
}

/// What one run measured.
struct RunResult {
  double seconds = 0;  ///< the timed iterations, launch to pause
  double bytes_per_iteration = 0;
  std::int64_t followed = 0;  ///< regions that took their inputs' split
  std::string splits;         ///< the last iteration's pieces
  bool right = true;
};

/// b after `iterations` of the loop from b = i % 10 / 10, by serial loops.
std::vector<double> reference(std::int64_t n, int iterations) {
  std::vector<double> a(n), b(n);
  for (std::int64_t i = 0; i < n; ++i) b[i] = double(i % 10) / 10.0;
  for (int it = 0; it < iterations; ++it) {
    for (std::int64_t i = 0; i < n; ++i) {
      double y = b[i];
      for (int t = 0; t < kTerms; ++t) y = y * 0.5 + 0.25;
      a[i] = y;
    }
    for (std::int64_t i = 0; i < n; ++i)
      b[i] = i > 0 && i < n - 1 ? 0.25 * a[i - 1] + 0.5 * a[i] + 0.25 * a[i + 1] : a[i];
  }
  return b;
}

std::string pieces_text(const RegionStats& region) {
  std::string text = region.kernel + ":";
  for (const auto& piece : region.pieces)
    text += " " + piece.leaf + "[" + std::to_string(piece.begin) + "," + std::to_string(piece.end) + ")";
  if (!region.follows.empty()) text += " (follows " + region.follows + ")";
  return text;
}

RunResult run_once(bool sequence, std::int64_t n, int warm, int iterations, const std::string& wanted_leaves,
                   const std::vector<double>& want) {
  setenv("CANOPY_SEQUENCE_PLACEMENT", sequence ? "on" : "off", 1);
  Runtime rt = runtime_off_first_core();
  const auto leaves = pick_cpu_and_device(rt.hierarchy(), wanted_leaves, "sequence");
  keep_only_leaves(rt, leaves);
  const std::string at = common_parent(rt.hierarchy(), leaves);
  const Relax relax = relax_kernel();
  const Smooth smooth = smooth_kernel();
  auto a = rt.array<double>(n, named("a")), b = rt.array<double>(n, named("b"));
  {
    auto hb = b.host();
    for (std::int64_t i = 0; i < n; ++i) hb[i] = double(i % 10) / 10.0;
  }
  auto iterate = [&] {
    rt.region(relax).over(n).at(at).policy("adaptive").launch(a, b);
    rt.region(smooth).over(n).at(at).policy("adaptive").launch(b, a, n);
  };
  for (int it = 0; it < warm; ++it) {
    iterate();
    rt.pause();  // each launch learns from the one before
  }
  const Stats before = rt.stats();
  settle();
  const auto start = std::chrono::steady_clock::now();
  for (int it = 0; it < iterations; ++it) iterate();
  rt.pause();
  RunResult result;
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const Stats after = rt.stats();
  const auto moved = [](const Stats& s) {
    return double(s.transfers.host_to_device + s.transfers.device_to_host + s.transfers.device_to_device);
  };
  result.bytes_per_iteration = (moved(after) - moved(before)) / iterations;
  result.followed = after.followed_regions;
  if (after.recent.size() >= 2)
    result.splits = pieces_text(after.recent[after.recent.size() - 2]) + " | " + pieces_text(after.recent.back());
  auto hb = b.host_read();
  for (std::int64_t i = 0; i < n && result.right; ++i)
    result.right = std::abs(hb[i] - want[i]) <= 1e-12 * std::max(1.0, std::abs(want[i]));
  return result;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t k = values.size();
  return k == 0 ? 0.0 : k % 2 ? values[k / 2] : (values[k / 2 - 1] + values[k / 2]) / 2;
}

}  // namespace

int sequence_command(int argc, char** argv) {
  Args args(argc, argv, {});
  const std::int64_t n = args.count("--size", std::int64_t{1} << 22);
  const int repeat = static_cast<int>(args.count("--repeat", 5));
  const int warm = static_cast<int>(args.count("--warm", 8));
  const int iterations = static_cast<int>(args.count("--iterations", 20));
  const std::string wanted = args.get("--leaves", "");
  setenv("CANOPY_DEVICES", "cpu,opencl", 0);
  setenv("CANOPY_CPU_LEAVES", "core", 0);
  setenv("POCL_MAX_PTHREAD_COUNT", "1", 0);
  if (wanted.empty()) {
    Runtime probe;
    const Hierarchy tree = probe.hierarchy();
    const auto leaves = tree.leaves(*tree.root());
    if (std::none_of(leaves.begin(), leaves.end(), [](const Location* l) { return is_device(l->kind()); })) {
      std::printf("canopy-bench sequence: SKIPPED: no device leaf (it needs OpenCL, e.g. PoCL)\n");
      return 77;
    }
  }
  const std::vector<double> want = reference(n, warm + iterations);

  std::vector<double> on_s, off_s, on_bytes, off_bytes;
  std::string on_splits, off_splits, problems;
  std::int64_t followed = 0;
  for (int r = 0; r < repeat; ++r) {
    for (bool sequence : {true, false}) {
      const RunResult run = run_once(sequence, n, warm, iterations, wanted, want);
      if (!run.right)
        problems += std::string("wrong result with sequence placement ") + (sequence ? "on" : "off") + "\n";
      (sequence ? on_s : off_s).push_back(run.seconds);
      (sequence ? on_bytes : off_bytes).push_back(run.bytes_per_iteration);
      (sequence ? on_splits : off_splits) = run.splits;
      if (sequence) followed += run.followed;
    }
  }
  std::printf("sequence bench, %lld doubles per array, %d warm-up and %d timed iterations, %d runs each, medians\n",
              static_cast<long long>(n), warm, iterations, repeat);
  std::printf("%-22s %12s %22s\n", "sequence placement", "loop s", "bytes moved / iteration");
  std::printf("%-22s %12.4f %22.0f   %s\n", "on", median(on_s), median(on_bytes), on_splits.c_str());
  std::printf("%-22s %12.4f %22.0f   %s\n", "off", median(off_s), median(off_bytes), off_splits.c_str());
  std::printf("ratio off / on: time %.2fx, bytes moved %.2fx; regions that followed their inputs: %lld\n",
              median(off_s) / median(on_s), median(on_bytes) > 0 ? median(off_bytes) / median(on_bytes) : INFINITY,
              static_cast<long long>(followed));
  if (!args.get("--json", "").empty())
    write_json(args.get("--json", ""), {Row()
                                            .set("on_seconds", median(on_s))
                                            .set("off_seconds", median(off_s))
                                            .set("on_bytes_per_iteration", median(on_bytes))
                                            .set("off_bytes_per_iteration", median(off_bytes))
                                            .set("followed", double(followed))});
  if (!problems.empty()) {
    std::fprintf(stderr, "canopy-bench sequence: %s", problems.c_str());
    return 1;
  }
  std::printf("results: equal to serial loops with sequence placement on and off\n");
  return 0;
}

}  // namespace canopy::bench
