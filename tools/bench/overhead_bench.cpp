// canopy-bench overhead: what a region costs beyond its work. Launch + pause
// of an empty region on one CPU leaf, timed one by one, beside an OpenMP
// `parallel for` with the same empty body and range, in the same run. A
// large region is timed twice: as launched by default (recorded, then run
// by pause() on the caller's thread with the leaf's helpers) and with fusion
// off (queued to the leaf's worker thread at launch).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include <canopy/canopy.hpp>

#include "baselines.hpp"
#include "report.hpp"

namespace canopy::bench {

namespace {

double percentile(std::vector<double> samples, double p) {
  if (samples.empty()) return 0;
  std::sort(samples.begin(), samples.end());
  return samples[static_cast<std::size_t>(p * double(samples.size() - 1))];
}

template <class F>
void time_each(int count, std::vector<double>& samples, F&& body) {
  for (int i = 0; i < count; ++i) {
    const auto start = std::chrono::steady_clock::now();
    body();
    samples.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
}

struct Overhead {
  std::int64_t points;
  std::vector<double> canopy, openmp;
};

// Times launch + pause of the empty kernel over `points` on `leaf`, and the
// empty OpenMP loop, in alternating blocks so that both see the same machine;
// each side's idle threads go to sleep before the other side runs.
Overhead measure(Runtime& rt, const Kernel<void()>& empty, const std::string& leaf, std::int64_t points, int repeat) {
  Overhead o{points, {}, {}};
  for (int i = 0; i < 200; ++i) {
    rt.region(empty).over(points).at(leaf).launch();
    rt.pause();
    openmp::empty_parallel_for(points);
  }
  const int blocks = 5;
  for (int b = 0; b < blocks; ++b) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    time_each(repeat / blocks, o.canopy, [&] {
      rt.region(empty).over(points).at(leaf).launch();
      rt.pause();
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    time_each(repeat / blocks, o.openmp, [&] { openmp::empty_parallel_for(points); });
  }
  return o;
}

}  // namespace

int overhead_command(int argc, char** argv) {
  Args args(argc, argv, {});
  const int repeat = static_cast<int>(args.count("--repeat", 20000));
  std::vector<std::int64_t> sizes{1000, 1000000};
  if (args.has("--size")) sizes = {args.count("--size", 1000)};

  Runtime rt;
  const auto tree = rt.hierarchy();
  const auto leaves = tree.leaves(*tree.root());
  if (leaves.empty()) fail("this node's hierarchy has no leaf to run on");
  const std::string leaf = leaves.front()->name();
  Kernel empty("empty", [] {});

  std::printf(
      "launch + pause of an empty region on leaf %s (%d cores) beside an empty OpenMP parallel for (%d threads),\n"
      "%d launches each, microseconds\n",
      leaf.c_str(), leaves.front()->traits().cores, openmp::threads(), repeat);
  std::printf("%-10s %-34s %8s %8s %8s %8s\n", "points", "", "median", "p90", "p99", "ratio");
  std::vector<Row> rows;
  auto show = [&](std::int64_t points, const char* impl, const char* path, const std::vector<double>& samples,
                  const std::vector<double>* openmp) {
    const double mine = percentile(samples, 0.5);
    // Canopy's rows open with the size and end with the ratio to OpenMP's row, which has neither.
    std::printf("%-10s %-34s %8.2f %8.2f %8.2f", openmp ? std::to_string(points).c_str() : "", path, mine * 1e6,
                percentile(samples, 0.9) * 1e6, percentile(samples, 0.99) * 1e6);
    if (openmp) std::printf(" %7.2fx", mine / percentile(*openmp, 0.5));
    std::printf("\n");
    rows.push_back(Row()
                       .set("impl", impl)
                       .set("points", double(points))
                       .set("median_s", mine)
                       .set("p90_s", percentile(samples, 0.9)));
  };
  for (auto points : sizes) {
    const bool small = points < 16384;
    auto o = measure(rt, empty, leaf, points, repeat);
    show(points, "canopy", small ? "canopy (small: runs in the caller)" : "canopy (pause runs it on caller)", o.canopy,
         &o.openmp);
    if (!small) {
      rt.fuse(false);
      auto queued = measure(rt, empty, leaf, points, repeat);
      rt.fuse(true);
      show(points, "canopy_worker", "canopy, fusion off (leaf worker)", queued.canopy, &queued.openmp);
    }
    show(points, "openmp", "openmp parallel for", o.openmp, nullptr);
  }
  if (args.has("--json")) write_json(args.get("--json", ""), rows);
  return 0;
}

}  // namespace canopy::bench
