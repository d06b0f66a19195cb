// canopy-bench overhead: what a region costs beyond its work. Launch + pause
// of an empty region on one CPU leaf, timed one by one, beside an OpenMP
// `parallel for` with the same empty body and range, in the same run.
#include <algorithm>
#include <chrono>
#include <cstdio>
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
  for (auto points : sizes) {
    auto o = measure(rt, empty, leaf, points, repeat);
    const double mine = percentile(o.canopy, 0.5), theirs = percentile(o.openmp, 0.5);
    const char* path = points < 16384 ? "canopy (small: runs in the caller)" : "canopy (queued to the leaf worker)";
    std::printf("%-10lld %-34s %8.2f %8.2f %8.2f %7.2fx\n", static_cast<long long>(points), path, mine * 1e6,
                percentile(o.canopy, 0.9) * 1e6, percentile(o.canopy, 0.99) * 1e6, mine / theirs);
    std::printf("%-10s %-34s %8.2f %8.2f %8.2f\n", "", "openmp parallel for", theirs * 1e6,
                percentile(o.openmp, 0.9) * 1e6, percentile(o.openmp, 0.99) * 1e6);
    for (auto [impl, samples] : {std::pair{"canopy", &o.canopy}, std::pair{"openmp", &o.openmp}})
      rows.push_back(Row()
                         .set("impl", impl)
                         .set("points", double(points))
                         .set("median_s", percentile(*samples, 0.5))
                         .set("p90_s", percentile(*samples, 0.9)));
  }
  if (args.has("--json")) write_json(args.get("--json", ""), rows);
  return 0;
}

}  // namespace canopy::bench
