// canopy-bench fusion: chains of element-wise regions run fused (the
// recorder's default) and unfused (Runtime::fuse(false)) in the same run,
// interleaved; medians and their ratio, results checked against each other
// and against a serial loop.
//   1. BabelStream's init -> triad -> dot over N doubles (its kernels and
//      starting values; arrays the program keeps);
//   2. a five-step element-wise pipeline whose four intermediate arrays the
//      program drops before it pauses: host memory those arrays took;
//   3. a ~50 ms region, 50 ms of host work, then pause(): the overlap kept.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <thread>

#include <canopy/canopy.hpp>

#include "../../examples/stream/babelstream.hpp"
#include "process.hpp"
#include "report.hpp"

namespace canopy::bench {

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Resident memory of this process now, and the most it held since the last
// reset_peak() (VmHWM), in bytes.
double resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  long long size = 0, resident = 0;
  statm >> size >> resident;
  return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE));
}

double peak_resident_bytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) * 1024.0;
  return 0;
}

// Sets the peak (VmHWM) to what is resident now (Linux 4.0 and later).
void reset_peak() { std::ofstream("/proc/self/clear_refs") << "5"; }

// The pipeline's step and the overlap's busy region (the chain is
// BabelStream's own init, triad and dot, examples/stream/babelstream.hpp).
struct Kernels {
  Kernel<void(In<double>, Out<double>, Val<double>, Val<double>)> step{
      "fb_step",
      [](In<double> x, Out<double> y, Val<double> m, Val<double> k) {
        Idx i = index(0);
        y[i] = x[i] * m + k;
      },
      {"x", "y", "m", "k"}};
  Kernel<void(Out<double>, Val<std::int64_t>)> busy{"fb_busy",
                                                    [](Out<double> y, Val<std::int64_t> work) {
                                                      Idx i = index(0);
                                                      Var<double> acc("acc", 0.0);
                                                      For(0, work,
                                                          [&](Idx k) { acc = acc + cast<double>((i + k) % 7) * 0.5; });
                                                      y[i] = acc;
                                                    },
                                                    {"y", "work"}};
};

// The pipeline's five steps: y = x * m + k.
constexpr double kSteps[5][2] = {{1.5, 1.0}, {0.5, -2.0}, {2.0, 0.25}, {-1.0, 3.0}, {0.75, 0.5}};

// Runs `round` until a fused kernel has run since `before` (it compiles in
// the background the first time its chain is seen), resting 5 ms between
// rounds so that the compile gets a core; at most 30 s.
template <class F>
void warm_until_fused(Runtime& rt, std::int64_t before, F round) {
  const auto start = std::chrono::steady_clock::now();
  while (rt.stats().fused_kernels == before && seconds_since(start) < 30) {
    round();
    if (rt.stats().fused_kernels == before) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

struct Median {
  std::vector<double> values;
  double median() const { return bench::median(values); }
};

}  // namespace

int fusion_command(int argc, char** argv) {
  Args args(argc, argv, {});
  const std::int64_t n = args.count("--size", std::int64_t{1} << 25);
  const int repeat = static_cast<int>(args.count("--repeat", 7));
  Runtime rt;
  Kernels k;
  babelstream::Kernels<double> stream;
  std::vector<Row> rows;
  std::string problems;

  // --- 1. init -> triad -> dot
  auto a = rt.array<double>(n), b = rt.array<double>(n), c = rt.array<double>(n);
  auto chain = [&](bool fused, double* dram) {
    rt.fuse(fused);
    const double before = rt.stats().modeled_dram_bytes;
    settle();
    const auto start = std::chrono::steady_clock::now();
    rt.region(stream.init).over(n).launch(a, b, c, babelstream::start_a, babelstream::start_b, babelstream::start_c);
    rt.region(stream.triad).over(n).launch(a, b, c, babelstream::start_scalar);
    const double sum = rt.region(stream.dot).over(n).reduce(a, b);
    const double seconds = seconds_since(start);
    *dram = rt.stats().modeled_dram_bytes - before;
    return std::make_pair(seconds, sum);
  };
  // The serial reference: the same sum, in index order.
  double reference = 0;
  const double triad_a = babelstream::start_b + babelstream::start_scalar * babelstream::start_c;
  for (std::int64_t i = 0; i < n; ++i) reference += triad_a * babelstream::start_b;
  // Warm up until the fused kernel is compiled and used (it compiles in the background).
  double dram = 0;
  warm_until_fused(rt, 0, [&] { chain(true, &dram); });
  chain(false, &dram);
  Median fused_s, unfused_s;
  double fused_dram = 0, unfused_dram = 0;
  for (int r = 0; r < repeat; ++r) {
    auto [fs, fsum] = chain(true, &fused_dram);
    auto [us, usum] = chain(false, &unfused_dram);
    fused_s.values.push_back(fs);
    unfused_s.values.push_back(us);
    if (std::abs(fsum - reference) > 1e-9 * std::abs(reference) ||
        std::abs(usum - reference) > 1e-9 * std::abs(reference))
      problems += "init->triad->dot: sums " + std::to_string(fsum) + " (fused), " + std::to_string(usum) +
                  " (unfused), serial " + std::to_string(reference) + "\n";
  }
  const Stats after_chain = rt.stats();
  std::printf("fusion bench, %lld doubles per array, %d interleaved runs each, medians\n", static_cast<long long>(n),
              repeat);
  std::printf("%-28s %10s %10s %7s %16s %16s %7s\n", "chain", "fused s", "unfused s", "ratio", "DRAM fused",
              "DRAM unfused", "bytes");
  std::printf("%-28s %10.4f %10.4f %6.2fx %16.0f %16.0f %6.2fx\n", "init->triad->dot", fused_s.median(),
              unfused_s.median(), unfused_s.median() / fused_s.median(), fused_dram, unfused_dram,
              fused_dram / unfused_dram);
  rows.push_back(Row()
                     .set("chain", "init-triad-dot")
                     .set("fused_seconds", fused_s.median())
                     .set("unfused_seconds", unfused_s.median())
                     .set("ratio", unfused_s.median() / fused_s.median())
                     .set("fused_dram_bytes", fused_dram)
                     .set("unfused_dram_bytes", unfused_dram));

  // --- 2. a five-step pipeline with four dropped intermediates
  auto input = rt.array<double>(n), output = rt.array<double>(n);
  {
    auto view = input.host();
    for (std::int64_t i = 0; i < n; ++i) view[i] = static_cast<double>(i % 997) * 0.01;
  }
  auto pipeline = [&](bool fused, double* touched) {
    rt.fuse(fused);
    settle();
    const auto start = std::chrono::steady_clock::now();
    double resident = 0;
    {
      auto t1 = rt.array<double>(n), t2 = rt.array<double>(n), t3 = rt.array<double>(n), t4 = rt.array<double>(n);
      reset_peak();
      resident = resident_bytes();
      rt.region(k.step).over(n).launch(input, t1, kSteps[0][0], kSteps[0][1]);
      rt.region(k.step).over(n).launch(t1, t2, kSteps[1][0], kSteps[1][1]);
      rt.region(k.step).over(n).launch(t2, t3, kSteps[2][0], kSteps[2][1]);
      rt.region(k.step).over(n).launch(t3, t4, kSteps[3][0], kSteps[3][1]);
      rt.region(k.step).over(n).launch(t4, output, kSteps[4][0], kSteps[4][1]);
    }
    rt.pause();
    const double seconds = seconds_since(start);
    *touched = peak_resident_bytes() - resident;
    return seconds;
  };
  auto check_pipeline = [&](const char* what) {
    auto in = input.host_read();
    auto out = output.host_read();
    for (std::int64_t i = 0; i < n; ++i) {
      double x = in[i];
      for (const auto& s : kSteps) x = x * s[0] + s[1];
      if (std::abs(out[i] - x) > 1e-12 * std::max(1.0, std::abs(x))) {
        problems += std::string("pipeline (") + what + "): element " + std::to_string(i) + " is " +
                    std::to_string(out[i]) + ", a serial loop gives " + std::to_string(x) + "\n";
        return;
      }
    }
  };
  double touched = 0;
  const auto fused_before = rt.stats().fused_kernels;
  warm_until_fused(rt, fused_before, [&] { pipeline(true, &touched); });
  Median pipe_fused, pipe_unfused;
  double touched_fused = 0, touched_unfused = 0;
  for (int r = 0; r < repeat; ++r) {
    pipe_fused.values.push_back(pipeline(true, &touched_fused));
    if (r == 0) check_pipeline("fused");
    pipe_unfused.values.push_back(pipeline(false, &touched_unfused));
    if (r == 0) check_pipeline("unfused");
  }
  std::printf("%-28s %10.4f %10.4f %6.2fx   host memory the run added at its peak: fused %.0f B, unfused %.0f B\n",
              "5-step pipeline", pipe_fused.median(), pipe_unfused.median(),
              pipe_unfused.median() / pipe_fused.median(), std::max(0.0, touched_fused), touched_unfused);
  rows.push_back(Row()
                     .set("chain", "pipeline-5")
                     .set("fused_seconds", pipe_fused.median())
                     .set("unfused_seconds", pipe_unfused.median())
                     .set("ratio", pipe_unfused.median() / pipe_fused.median())
                     .set("fused_touched_bytes", touched_fused)
                     .set("unfused_touched_bytes", touched_unfused));

  // --- 3. overlap: a ~50 ms region, 50 ms of host work, pause
  const std::int64_t busy_points = 1 << 16;
  auto busy_out = rt.array<double>(busy_points);
  std::int64_t work = 64;
  for (int calibrate = 0; calibrate < 12; ++calibrate) {  // about 50 ms per region
    rt.fuse(false);
    const auto start = std::chrono::steady_clock::now();
    rt.region(k.busy).over(busy_points).launch(busy_out, work);
    rt.pause();
    const double s = seconds_since(start);
    if (s > 0.04 && s < 0.06) break;
    work = std::max<std::int64_t>(1, static_cast<std::int64_t>(static_cast<double>(work) * 0.05 / s));
  }
  auto overlap = [&](bool fused) {
    rt.fuse(fused);
    settle();
    const auto start = std::chrono::steady_clock::now();
    rt.region(k.busy).over(busy_points).launch(busy_out, work);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    rt.pause();
    return seconds_since(start);
  };
  Median over_fused, over_unfused;
  for (int r = 0; r < repeat; ++r) {
    over_fused.values.push_back(overlap(true));
    over_unfused.values.push_back(overlap(false));
  }
  std::printf("%-28s %10.4f %10.4f %6.2fx   (fusion on / off: %.3f; at most 1.1 keeps the overlap)\n",
              "50 ms region + 50 ms host", over_fused.median(), over_unfused.median(),
              over_unfused.median() / over_fused.median(), over_fused.median() / over_unfused.median());
  rows.push_back(Row()
                     .set("chain", "overlap")
                     .set("fused_seconds", over_fused.median())
                     .set("unfused_seconds", over_unfused.median())
                     .set("ratio", over_unfused.median() / over_fused.median()));

  const Stats stats = rt.stats();
  std::printf("fused kernel runs: %lld, launched regions run inside them: %lld (after the first chain: %lld)\n",
              static_cast<long long>(stats.fused_kernels), static_cast<long long>(stats.fused_regions),
              static_cast<long long>(after_chain.fused_regions));
  if (!args.get("--json", "").empty()) write_json(args.get("--json", ""), rows);
  if (after_chain.fused_regions == 0 || stats.fused_regions <= after_chain.fused_regions)
    problems += "no chain ran fused (the fused kernels did not compile within 30 s of warm-up rounds)\n";
  if (!problems.empty()) {
    std::fprintf(stderr, "canopy-bench fusion: wrong results:\n%s", problems.c_str());
    return 1;
  }
  std::printf("results: the same fused and unfused, and equal to serial loops\n");
  return 0;
}

}  // namespace canopy::bench
