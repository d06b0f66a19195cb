// canopy-bench stream: BabelStream's kernels through Canopy and, with
// --compare, through the in-binary OpenMP baseline in the same run, on the
// same arrays; plus what the JIT costs cold and from the disk cache.
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <type_traits>

#include <canopy/backends/opencl/opencl_device.hpp>
#include <canopy/ir/passes/optimize.hpp>
#include <canopy/jit/cpu_compiler.hpp>

#include <canopy/backends/discovery_cache.hpp>
#include <canopy/runtime/internal/engine_access.hpp>
#include "../../examples/stream/babelstream.hpp"
#include "baselines.hpp"
#include "report.hpp"
#include "stream_opencl_baseline.hpp"

namespace canopy::bench {

namespace {

using babelstream::kernel_names;
using babelstream::seconds_since;

// The JIT's cost for the five kernels: compiled with the disk cache off
// after the compiler's LLJIT has started (on a kernel of the other element
// type), the compile alone; cold into a fresh cache directory, the compiler
// and its LLJIT created for it and each kernel's shared object written
// before compile() returns; and from the disk cache.
struct JitFigures {
  double cold_total = 0;
  std::array<double, 5> uncached{}, cold{}, disk_hit{};
  bool all_from_disk = true;
};

template <class T>
JitFigures measure_jit() {
  JitFigures figures;
  char pattern[] = "/tmp/canopy-bench-cache-XXXXXX";
  if (!mkdtemp(pattern)) fail("cannot create a temporary cache directory under /tmp");
  const std::string dir = pattern;
  {
    using Other = std::conditional_t<std::is_same_v<T, double>, float, double>;
    babelstream::Kernels<Other> other;
    babelstream::Kernels<T> kernels;
    jit::CpuCompiler off({"off"});
    off.compile(ir::optimize(*other.ir()[0]));  // starts LLJIT
    auto ir = kernels.ir();
    for (int k = 0; k < 5; ++k) {
      auto t = std::chrono::steady_clock::now();
      off.compile(ir::optimize(*ir[k]));
      figures.uncached[k] = seconds_since(t);
    }
  }
  {
    const auto start = std::chrono::steady_clock::now();
    babelstream::Kernels<T> kernels;
    jit::CpuCompiler cold({dir});
    auto ir = kernels.ir();
    for (int k = 0; k < 5; ++k) {
      auto t = std::chrono::steady_clock::now();
      cold.compile(ir::optimize(*ir[k]));
      figures.cold[k] = seconds_since(t);
    }
    figures.cold_total = seconds_since(start);
  }
  {
    babelstream::Kernels<T> kernels;
    jit::CpuCompiler warm({dir});
    auto ir = kernels.ir();
    for (int k = 0; k < 5; ++k) {
      auto t = std::chrono::steady_clock::now();
      auto compiled = warm.compile(ir::optimize(*ir[k]));
      figures.disk_hit[k] = seconds_since(t);
      figures.all_from_disk = figures.all_from_disk && compiled.source == jit::CpuCompiler::Source::Disk;
    }
  }
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  return figures;
}

// What canopy-bench runs beside Canopy: the five kernels, one at a time.
class Baseline {
 public:
  virtual ~Baseline() = default;
  /// "openmp" or "opencl".
  virtual const char* name() const = 0;
  /// Runs kernel k (copy, mul, add, triad, dot) once; its time in seconds.
  virtual double run(int k) = 0;
  /// BabelStream's check after `repeats` rounds; empty when right.
  virtual std::string check(int repeats) const = 0;
};

// The OpenMP baseline, on Canopy's own arrays (through host views kept open,
// so its writes reach Canopy's next regions). With arrays of its own, the
// ratio measured their pages as much as the code: on this project's 2-core
// VM, one hand-written loop ran up to 15% faster over one set of three
// arrays than over another set of the same process, a different set from
// run to run (DESIGN.md). Every kernel of BabelStream writes an array that
// it does not read, so running one twice in a row, as the untimed round
// does (each side's copy, then each side's mul, ...), leaves the arrays as
// one run does.
template <class T>
class OpenMpStream final : public Baseline {
 public:
  explicit OpenMpStream(const babelstream::Stream<T>& canopy)
      : n_(canopy.a().size()), a_(canopy.a().host()), b_(canopy.b().host()), c_(canopy.c().host()) {}
  const char* name() const override { return "openmp"; }
  double run(int k) override {
    const T scalar = T(babelstream::start_scalar);
    auto start = std::chrono::steady_clock::now();
    switch (k) {
      case 0: openmp::copy(c_.data(), a_.data(), n_); break;
      case 1: openmp::mul(b_.data(), c_.data(), scalar, n_); break;
      case 2: openmp::add(c_.data(), a_.data(), b_.data(), n_); break;
      case 3: openmp::triad(a_.data(), b_.data(), c_.data(), scalar, n_); break;
      default: sum_ = openmp::dot(a_.data(), b_.data(), n_); break;
    }
    return seconds_since(start);
  }
  std::string check(int repeats) const override {
    return babelstream::Stream<T>::check_results(a_.data(), b_.data(), c_.data(), n_, sum_, repeats);
  }

 private:
  std::int64_t n_;
  HostView<T, 1> a_, b_, c_;
  T sum_ = 0;
};

// The hand-written OpenCL baseline, on the same device (context, queue) as
// Canopy's OpenCL leaf.
template <class T>
class OpenClStream final : public Baseline {
 public:
  OpenClStream(backends::opencl::OpenCLDevice& device, std::int64_t n) : baseline_(device, n), n_(n) {}
  const char* name() const override { return "opencl"; }
  double run(int k) override {
    switch (k) {
      case 0: return baseline_.copy();
      case 1: return baseline_.mul();
      case 2: return baseline_.add();
      case 3: return baseline_.triad();
      default: {
        double value = 0;
        const double seconds = baseline_.dot(&value);
        sum_ = static_cast<T>(value);
        return seconds;
      }
    }
  }
  std::string check(int repeats) const override {
    auto a = baseline_.read_a(), b = baseline_.read_b(), c = baseline_.read_c();
    return babelstream::Stream<T>::check_results(a.data(), b.data(), c.data(), n_, sum_, repeats);
  }

 private:
  opencl_baseline::StreamBaseline<T> baseline_;
  std::int64_t n_;
  T sum_ = 0;
};

template <class T>
int run(const Args& args) {
  const std::int64_t n = args.count("--size", std::int64_t{1} << 25);
  const int repeat = static_cast<int>(args.count("--repeat", 20));
  const bool compare = args.has("--compare");
  const std::string device = args.get("--device", "cpu");
  const std::string policy = args.get("--policy", "static");
  if (device != "cpu" && device != "opencl") fail("--device " + device + ": expected cpu or opencl");
  const char* type_name = sizeof(T) == 4 ? "float" : "double";

  auto jit = measure_jit<T>();

  // The tree holds just the device measured (CANOPY_DEVICES, when set, wins).
  setenv("CANOPY_DEVICES", device == "cpu" ? "cpu" : "opencl:0", 0);
  Runtime rt;
  std::printf("%s", rt.describe().c_str());
  std::printf("STREAM: %lld %ss per array (%.1f MB), %d repetitions, best time of each kernel\n",
              static_cast<long long>(n), type_name, double(n) * sizeof(T) * 1e-6, repeat);
  babelstream::Stream<T> canopy(rt, n, policy);
  std::unique_ptr<Baseline> baseline;
  if (compare && device == "cpu") baseline = std::make_unique<OpenMpStream<T>>(canopy);
  if (compare && device == "opencl") {
    const auto device0 = canopy::runtime::engine_of(rt).device("opencl:0");
    auto* opencl = device0 ? dynamic_cast<backends::opencl::OpenCLDevice*>(&backends::started(*device0)) : nullptr;
    if (!opencl) fail("--device opencl: this node has no OpenCL device (" + rt.node().absent.front().reason + ")");
    baseline = std::make_unique<OpenClStream<T>>(*opencl, n);
  }
  const std::string other = baseline ? baseline->name() : "";

  // One untimed round each (first touch, JIT), then the timed rounds, interleaved.
  babelstream::Timings canopy_times, baseline_times;
  for (int k = 0; k < 5; ++k) {
    canopy.run(k);
    if (baseline) baseline->run(k);
  }
  for (int r = 0; r < repeat; ++r) {
    if (baseline) canopy.run(4);
    for (int k = 0; k < 5; ++k) canopy_times.add(k, canopy.run(k));
    if (!baseline) continue;
    // Both runtimes poll for a while after their last parallel region (libgomp
    // for up to milliseconds): let those threads go to sleep before the other
    // side runs, or each would be timed while the other steals a core.
    // After that quiet, each side first runs an untimed dot (which changes
    // no array): the idle cores' wake-up would otherwise be timed in the
    // first kernel of each round, copy, on both sides.
    settle();
    baseline->run(4);
    for (int k = 0; k < 5; ++k) baseline_times.add(k, baseline->run(k));
    settle();
  }
  // The OpenMP baseline's rounds ran on Canopy's arrays too (its untimed
  // round and Canopy's count once); Canopy's last dot then saw the arrays a
  // round before the end, so it runs once more for the check.
  const bool shared = compare && device == "cpu";
  const int rounds = shared ? 1 + 2 * repeat : 1 + repeat;
  if (shared) canopy.run(4);
  const auto canopy_check = canopy.check(rounds);
  const auto baseline_check = baseline ? baseline->check(shared ? rounds : 1 + repeat) : std::string();

  std::vector<Row> rows;
  if (compare)
    std::printf("%-8s %14s %14s %15s\n", "kernel", "canopy MB/s", (other + " MB/s").c_str(),
                ("canopy/" + other).c_str());
  else
    std::printf("%-8s %14s\n", "kernel", "canopy MB/s");
  for (int k = 0; k < 5; ++k) {
    const double bytes = double(babelstream::arrays_touched[k]) * sizeof(T) * double(n);
    const double mine = bytes / canopy_times.best[k] * 1e-6;
    rows.push_back(Row()
                       .set("kernel", kernel_names[k])
                       .set("impl", "canopy")
                       .set("device", device)
                       .set("type", type_name)
                       .set("bytes", bytes)
                       .set("best_s", canopy_times.best[k])
                       .set("mean_s", canopy_times.total[k] / repeat)
                       .set("mbps", mine)
                       .set("check", canopy_check.empty() ? "ok" : canopy_check));
    if (!compare) {
      std::printf("%-8s %14.1f\n", kernel_names[k], mine);
      continue;
    }
    const double theirs = bytes / baseline_times.best[k] * 1e-6;
    rows.push_back(Row()
                       .set("kernel", kernel_names[k])
                       .set("impl", other)
                       .set("device", device)
                       .set("type", type_name)
                       .set("bytes", bytes)
                       .set("best_s", baseline_times.best[k])
                       .set("mean_s", baseline_times.total[k] / repeat)
                       .set("mbps", theirs)
                       .set("check", baseline_check.empty() ? "ok" : baseline_check));
    std::printf("%-8s %14.1f %14.1f %14.3fx\n", kernel_names[k], mine, theirs, mine / theirs);
  }
  std::array<double, 5> sorted = jit.uncached;
  std::sort(sorted.begin(), sorted.end());
  std::printf("JIT compile (cache off, LLJIT started): median %.1f ms (", sorted[2] * 1e3);
  for (int k = 0; k < 5; ++k) std::printf("%s%s %.1f", k ? ", " : "", kernel_names[k], jit.uncached[k] * 1e3);
  std::printf(" ms)\n");
  std::printf("JIT cold (fresh cache, 5 kernels, LLJIT start and shared-object writes included): %.1f ms total (",
              jit.cold_total * 1e3);
  for (int k = 0; k < 5; ++k) std::printf("%s%s %.1f", k ? ", " : "", kernel_names[k], jit.cold[k] * 1e3);
  std::printf(" ms)\nJIT disk-cache hit%s: ", jit.all_from_disk ? "" : " (NOT all from disk)");
  for (int k = 0; k < 5; ++k) std::printf("%s%s %.2f", k ? ", " : "", kernel_names[k], jit.disk_hit[k] * 1e3);
  std::printf(" ms\n");
  std::printf("check: canopy %s%s%s\n", canopy_check.empty() ? "ok" : canopy_check.c_str(),
              compare ? (", " + other + " ").c_str() : "",
              compare ? (baseline_check.empty() ? "ok" : baseline_check.c_str()) : "");

  if (args.has("--json")) {
    std::vector<std::pair<std::string, double>> extra{{"jit_cold_total_s", jit.cold_total}};
    for (int k = 0; k < 5; ++k) extra.emplace_back(std::string("jit_disk_hit_s_") + kernel_names[k], jit.disk_hit[k]);
    write_json(args.get("--json", ""), rows, extra);
  }
  return canopy_check.empty() && baseline_check.empty() ? 0 : 1;
}

}  // namespace

int stream_command(int argc, char** argv) {
  Args args(argc, argv, {"--compare", "--float"});
  return args.has("--float") ? run<float>(args) : run<double>(args);
}

}  // namespace canopy::bench
