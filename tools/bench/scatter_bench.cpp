// canopy-bench scatter: what keeping every write costs when a region whose
// pieces may write the same elements is split over two memories. A histogram
// (atomic adds at colliding bins, summed from private copies) and a
// permutation scatter (each device's changed elements merged back against a
// twin) run split over a CPU leaf and an OpenCL device, beside the same
// region on each leaf alone; every result is checked against a serial loop.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <numeric>
#include <random>

#include <canopy/canopy.hpp>

#include "report.hpp"

namespace canopy::bench {

namespace {

const Kernel<void(In<std::int32_t>, InOut<std::int32_t>)>& histogram() {
  static const Kernel kernel(
      "bench_histogram",
      [](In<std::int32_t> key, InOut<std::int32_t> bins) { atomic_add(bins[cast<std::int64_t>(key[index(0)])], 1); },
      {"key", "bins"});
  return kernel;
}

const Kernel<void(In<std::int64_t>, Out<std::int64_t>)>& scatter() {
  static const Kernel kernel("bench_scatter",
                             [](In<std::int64_t> to, Out<std::int64_t> o) { o[to[index(0)]] = index(0); }, {"to", "o"});
  return kernel;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Measured {
  double seconds = 0;      ///< median over the repeats: launch to the end of the pause
  std::int64_t moved = 0;  ///< bytes moved per launch
  bool correct = true;
};

}  // namespace

namespace {

// The workloads on `rt` (arrays of its own): each leaf alone, then split
// over both, with the runtime's choice (CANOPY_SPLIT_WRITES as it was when
// `rt` was made). Rows go to `rows`; false when a result was wrong.
struct ScatterBench {
  Runtime& rt;
  std::int64_t n;
  int repeat;
  const std::vector<std::int32_t>& keys;
  const std::vector<std::int64_t>& permutation;
  const std::vector<std::int32_t>& want_bins;
  std::string cpu, device, where;

  template <class Reset, class Launch, class Check>
  Measured measure(Reset&& reset, Launch&& launch, Check&& check) {
    Measured m;
    std::vector<double> times;
    for (int r = 0; r < repeat; ++r) {
      reset();
      const auto before = rt.stats().transfers;
      const auto start = std::chrono::steady_clock::now();
      launch();
      rt.pause();
      times.push_back(seconds_since(start));
      const auto after = rt.stats().transfers;
      m.moved = after.host_to_device + after.device_to_host - before.host_to_device - before.device_to_host;
      m.correct = m.correct && check();
    }
    m.seconds = median(times);
    return m;
  }

  std::vector<std::pair<std::string, Measured>> run(const std::string& workload, bool alone, const std::string& how) {
    auto key = rt.array<std::int32_t>(n, named("key"));
    auto to = rt.array<std::int64_t>(n, named("to"));
    auto bins = rt.array<std::int32_t>(std::int64_t(want_bins.size()), named("bins"));
    auto o = rt.array<std::int64_t>(n, named("o"));
    std::copy(keys.begin(), keys.end(), key.host().begin());
    std::copy(permutation.begin(), permutation.end(), to.host().begin());
    auto at = [&](const std::string& location, const std::string& policy) {
      if (workload == "histogram")
        return measure([&] { std::fill(bins.host().begin(), bins.host().end(), 0); },
                       [&] { rt.region(histogram()).over(n).at(location).policy(policy).launch(key, bins); },
                       [&] {
                         auto h = bins.host_read();
                         return std::equal(h.begin(), h.end(), want_bins.begin());
                       });
      return measure([&] { std::fill(o.host().begin(), o.host().end(), -1); },
                     [&] { rt.region(scatter()).over(n).at(location).policy(policy).launch(to, o); },
                     [&] {
                       auto h = o.host_read();
                       for (std::int64_t i = 0; i < n; ++i)
                         if (h[permutation[static_cast<std::size_t>(i)]] != i) return false;
                       return true;
                     });
    };
    std::vector<std::pair<std::string, Measured>> rows;
    if (alone) {
      rows.emplace_back(cpu, at(cpu, "static"));
      rows.emplace_back(device, at(device, "static"));
    }
    rows.emplace_back(cpu + " + " + device + " static, " + how, at(where, "static"));
    rows.emplace_back(cpu + " + " + device + " [20,80], " + how, at(where, "percentage:[20,80]"));
    return rows;
  }
};

// A runtime made with CANOPY_SPLIT_WRITES set to `choice`.
std::unique_ptr<Runtime> runtime_choosing(const char* choice) {
  const char* before = std::getenv("CANOPY_SPLIT_WRITES");
  const std::string saved = before ? before : "";
  setenv("CANOPY_SPLIT_WRITES", choice, 1);
  auto rt = std::make_unique<Runtime>();
  if (before)
    setenv("CANOPY_SPLIT_WRITES", saved.c_str(), 1);
  else
    unsetenv("CANOPY_SPLIT_WRITES");
  return rt;
}

}  // namespace

int scatter_command(int argc, char** argv) {
  Args args(argc, argv, {});
  const std::int64_t n = args.count("--size", std::int64_t{1} << 22);
  const std::int64_t bins_count = args.count("--bins", 64);
  const int repeat = static_cast<int>(args.count("--repeat", 10));
  setenv("CANOPY_DEVICES", "cpu,opencl:0", 0);
  const auto chooser = runtime_choosing("auto");
  const auto merger = runtime_choosing("merge");
  Runtime& chooses = *chooser;
  Runtime& merges = *merger;
  const auto tree = chooses.hierarchy();
  std::string cpu, device;
  for (auto* leaf : tree.leaves(*tree.root())) {
    if (leaf->kind() == LocationKind::Cpu && cpu.empty()) cpu = leaf->name();
    if (leaf->kind() == LocationKind::OpenCL && device.empty()) device = leaf->name();
  }
  if (cpu.empty() || device.empty())
    fail("scatter needs a CPU leaf and an OpenCL device (CANOPY_DEVICES=cpu,opencl:0)");
  const std::string where = tree.at(cpu).parent()->name();

  std::mt19937_64 rng(7);
  std::vector<std::int32_t> keys(static_cast<std::size_t>(n));
  for (auto& k : keys) k = static_cast<std::int32_t>(rng() % static_cast<std::uint64_t>(bins_count));
  std::vector<std::int64_t> permutation(static_cast<std::size_t>(n));
  std::iota(permutation.begin(), permutation.end(), 0);
  std::shuffle(permutation.begin(), permutation.end(), rng);
  std::vector<std::int32_t> want_bins(static_cast<std::size_t>(bins_count), 0);
  for (auto k : keys) ++want_bins[static_cast<std::size_t>(k)];

  std::printf("%s", tree.to_text().c_str());
  std::printf("%lld points; histogram into %lld bins (i32 atomic adds), permutation scatter (i64); median of %d\n",
              static_cast<long long>(n), static_cast<long long>(bins_count), repeat);
  std::printf("%-10s %-40s %10s %8s %14s %8s\n", "workload", "where", "ms", "ratio", "bytes moved", "correct");
  std::vector<Row> rows;
  bool all_correct = true;
  for (const std::string workload : {"histogram", "scatter"}) {
    ScatterBench on_chooser{chooses, n, repeat, keys, permutation, want_bins, cpu, device, where};
    ScatterBench on_merger{merges, n, repeat, keys, permutation, want_bins, cpu, device, where};
    auto results = on_chooser.run(workload, true, "chosen");
    for (auto& r : on_merger.run(workload, false, "merged")) results.push_back(std::move(r));
    const double best = std::min(results[0].second.seconds, results[1].second.seconds);
    for (const auto& [label, m] : results) {
      std::printf("%-10s %-40s %10.3f %7.2fx %14lld %8s\n", workload.c_str(), label.c_str(), m.seconds * 1e3,
                  m.seconds / best, static_cast<long long>(m.moved), m.correct ? "yes" : "NO");
      all_correct = all_correct && m.correct;
      rows.push_back(Row()
                         .set("workload", workload)
                         .set("where", label)
                         .set("seconds", m.seconds)
                         .set("ratio_to_best_leaf", m.seconds / best)
                         .set("bytes_moved", double(m.moved))
                         .set("correct", m.correct ? 1.0 : 0.0));
    }
  }
  for (auto* rt : {&chooses, &merges}) {
    const auto split = rt->stats().split_writes;
    std::printf("%s: %lld regions merged changed elements, %lld summed atomic adds, %lld ran on one memory\n",
                rt == &chooses ? "chosen by cost" : "always merged", static_cast<long long>(split.changed_merged),
                static_cast<long long>(split.sums_merged), static_cast<long long>(split.one_memory));
    for (const auto& note : split.notes) std::printf("  %s\n", note.c_str());
  }
  if (args.has("--json")) write_json(args.get("--json", ""), rows);
  return all_correct ? 0 : 1;
}

}  // namespace canopy::bench
