// Calibration: the machine model measured by running small kernels on each
// leaf through a Runtime, as a program would (machine_model.hpp says what is
// measured and how it is kept). It drives the engine from outside, through
// the public Runtime, so it sits above the engine in the layering: the
// engine only calls it back through the model source Runtime gives it
// (Engine::set_machine_model_source), before taking any lock of its own.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <optional>

#include <canopy/backends/cpu/cpu_device.hpp>
#include <canopy/backends/launch.hpp>
#include <canopy/dsl/dsl.hpp>
#include <canopy/ir/error.hpp>
#include <canopy/jit/c_source.hpp>
#include <canopy/jit/checked_file.hpp>
#include <canopy/jit/cpu_compiler.hpp>

#include "internal/engine_access.hpp"
#include "machine_model.hpp"
#include "runtime.hpp"

namespace canopy {

namespace {

/// `text` on one line without tabs, for a leaf's note.
std::string one_line(std::string_view text) {
  std::string out(text);
  for (char& c : out)
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  return out;
}

// ---- what the OS and discovery say about a leaf -----------------------------

/// The clock of processing unit `pu` in GHz: cpufreq's maximum, else
/// /proc/cpuinfo's current "cpu MHz", else 0.
double clock_ghz_of(unsigned pu) {
  std::ifstream max_freq("/sys/devices/system/cpu/cpu" + std::to_string(pu) + "/cpufreq/cpuinfo_max_freq");
  double khz = 0;
  if (max_freq >> khz && khz > 0) return khz / 1e6;
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  long processor = -1;
  double first_mhz = 0;
  while (std::getline(cpuinfo, line)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string key = line.substr(0, line.find_last_not_of(" \t", colon - 1) + 1);
    if (key == "processor") processor = std::strtol(line.c_str() + colon + 1, nullptr, 10);
    if (key == "cpu MHz") {
      const double mhz = std::strtod(line.c_str() + colon + 1, nullptr);
      if (first_mhz == 0) first_mhz = mhz;
      if (processor == static_cast<long>(pu) && mhz > 0) return mhz / 1e3;
    }
  }
  return first_mhz / 1e3;
}

/// What discovery knows of `leaf`, before measuring.
LeafModel describe_leaf(const NodeInventory& node, const Location& leaf) {
  const LocationTraits& traits = leaf.traits();
  LeafModel m;
  m.leaf = leaf.name();
  m.kind = leaf.kind();
  m.device = traits.device;
  m.model = traits.model;
  m.cores = traits.cores;
  m.vector_bytes = traits.vector_width;
  if (leaf.kind() == LocationKind::Cpu) {
    if (m.cores == 0) m.cores = static_cast<int>(traits.pus.size());
    if (m.vector_bytes == 0) m.vector_bytes = node.vector_width;
    m.caches = node.caches;
    for (const auto& c : m.caches)
      if (c.line_bytes > 0) {
        m.line_bytes = c.line_bytes;
        break;
      }
    if (const CacheLevel* llc = last_level(m.caches)) {
      // Each last-level cache the leaf's cores sit below, counted once.
      std::vector<int> l3s;
      for (unsigned pu : traits.pus)
        for (const auto& core : node.cores)
          if (core.pu == pu && core.l3 >= 0 && std::find(l3s.begin(), l3s.end(), core.l3) == l3s.end())
            l3s.push_back(core.l3);
      std::int64_t count = static_cast<std::int64_t>(l3s.size());
      if (count == 0 || llc->level != 3)
        count = (std::max(1, m.cores) + std::max(1, llc->cores_sharing) - 1) / std::max(1, llc->cores_sharing);
      m.cache_bytes = llc->bytes * count;
    }
    // The CPU backend's own rule (it reads the caches from sysfs; hwloc may
    // say otherwise: a virtual machine here reports 508 MiB of L3 a core to
    // hwloc and nothing in sysfs).
    m.streaming_threshold = static_cast<std::int64_t>(backends::cpu::automatic_streaming_threshold(traits.pus));
    m.clock_ghz = clock_ghz_of(traits.pus.empty() ? 0u : traits.pus.front());
    if (m.clock_ghz > 0 && m.cores > 0 && m.vector_bytes > 0)
      m.peak_gflops = m.cores * (m.vector_bytes / 8.0) * 2.0 * m.clock_ghz;
  }
  return m;
}

// ---- the calibration kernels ------------------------------------------------

/// Independent multiply-add chains: enough work per point to be compute
/// bound, no loop, so the CPU JIT vectorises across points.
template <class T>
Kernel<void(Out<T>, In<T>, Val<T>, Val<T>)> flops_kernel() {
  constexpr int kChains = 8, kSteps = 16;
  return Kernel<void(Out<T>, In<T>, Val<T>, Val<T>)>(
      std::is_same_v<T, double> ? "canopy_model_flops_f64" : "canopy_model_flops_f32",
      [](Out<T> out, In<T> in, Val<T> s, Val<T> t) {
        Idx i = index(0);
        Value<T> x = in[i];
        std::array<Value<T>, kChains> chain;
        for (int c = 0; c < kChains; ++c) chain[static_cast<std::size_t>(c)] = x + static_cast<T>(c);
        for (int step = 0; step < kSteps; ++step)
          for (auto& v : chain) v = v * s + t;
        Value<T> sum = chain[0];
        for (int c = 1; c < kChains; ++c) sum = sum + chain[static_cast<std::size_t>(c)];
        out[i] = sum;
      },
      {"out", "in", "s", "t"});
}

/// Best wall time of `repeats` launch + pause, after one warm-up (which
/// compiles the kernel and copies the arrays to a device).
template <class Launch>
double best_seconds(Runtime& rt, int repeats, Launch&& launch, bool warm_up = true) {
  if (warm_up) {
    launch();
    rt.pause();
  }
  double best = std::numeric_limits<double>::infinity();
  for (int r = 0; r < std::max(1, repeats); ++r) {
    const auto start = std::chrono::steady_clock::now();
    launch();
    rt.pause();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return best;
}

/// Time spent on the work itself: the launch's time less the latency,
/// never below a tenth of the launch's time.
double work_seconds(double launch, double latency) { return std::max(launch - latency, launch * 0.1); }

/// Columns of the access-rate stencil's grid, and its most rows.
constexpr std::int64_t kGridCols = 512;
constexpr std::int64_t kGridRows = 4096;
// The stencil bandwidth's grid has rows as wide as an application's (three
// of them no longer fit in a core's first-level cache, so the reuse between
// rows comes from the second level, which halved the rate of narrow rows).
constexpr std::int64_t kBigCols = 4096;

struct Arrays {
  Array<double> a, b, c, one;
  Array<float> fa, fb;
  Array<double, 2> grid_in, grid_out;  ///< (kGridRows + 2) x (kGridCols + 2)
  /// (big_rows + 2) x (kBigCols + 2): several times the caches.
  Array<double, 2> big_in, big_out;
  std::int64_t big_rows = 0;
  std::int64_t points = 0;
  std::int64_t float_points = 0;
};

struct Kernels {
  Kernel<void(Out<double>, In<double>, In<double>, Val<double>)> triad{
      "canopy_model_triad",
      [](Out<double> a, In<double> b, In<double> c, Val<double> s) {
        Idx i = index(0);
        a[i] = b[i] + s * c[i];
      },
      {"a", "b", "c", "s"}};
  Kernel<void(Out<double>)> empty{"canopy_model_empty", [](Out<double> a) { a[index(0)] = 0.0; }, {"a"}};
  Kernel<void(Out<double>, In<double>, Val<double>, Val<double>)> flops64 = flops_kernel<double>();
  Kernel<void(Out<float>, In<float>, Val<float>, Val<float>)> flops32 = flops_kernel<float>();
  /// Five loads and a store a point, vectorisable along rows: the rate a
  /// leaf issues loads and stores when the bytes are not what limits it.
  Kernel<void(Out<double, 2>, In<double, 2>)> stencil{
      "canopy_model_stencil",
      [](Out<double, 2> out, In<double, 2> in) {
        Idx i = index(0), j = index(1);
        out(i + 1, j + 1) =
            0.2 * (in(i, j + 1) + in(i + 2, j + 1) + in(i + 1, j) + in(i + 1, j + 2) + in(i + 1, j + 1));
      },
      {"out", "in"}};
};

/// A rate on `leaf`, in units of `per_point` a point per ns (1e9/s):
/// `launch(count)` runs `count` x `unit` points; count grows from `first`
/// until a launch takes 2 ms or reaches `most`. Short launches, the best of
/// several, keep the data in cache and are least disturbed by other work on
/// the node.
template <class Launch>
double measure_rate(Runtime& rt, const LeafModel& leaf, double per_point, std::int64_t unit, std::int64_t first,
                    std::int64_t most, int repeats, Launch&& launch) {
  std::int64_t count = std::min(first, most);
  double seconds = 0;
  for (int round = 0; round < 6; ++round) {
    seconds = best_seconds(
        rt, repeats, [&] { launch(count); }, round == 0);
    const double work = work_seconds(seconds, leaf.launch_seconds);
    if (work >= 0.002 || count >= most) break;
    const double grow = std::clamp(0.0025 / std::max(work, 1e-6), 2.0, 64.0);
    count = std::min<std::int64_t>(most, static_cast<std::int64_t>(static_cast<double>(count) * grow));
  }
  return per_point * static_cast<double>(count * unit) / work_seconds(seconds, leaf.launch_seconds) / 1e9;
}

/// The flop rate, in the flops cost_of counts, of a multiply-add kernel.
template <class T, class K>
double measure_gflops(Runtime& rt, const MachineModel& model, const LeafModel& leaf, const K& kernel,
                      const Array<T>& out, const Array<T>& in, std::int64_t available, int repeats) {
  const double per_point = ir::cost_of(kernel.ir(), model.cost_options(leaf.leaf)).flops;
  return measure_rate(rt, leaf, per_point, 1, 1 << 16, available, repeats, [&](std::int64_t points) {
    rt.region(kernel).over(points).at(leaf.leaf).launch(out, in, static_cast<T>(0.5), static_cast<T>(1));
  });
}

/// Loads and stores issued per ns by the grid stencil, as cost_of counts them.
double measure_access_rate(Runtime& rt, const MachineModel& model, const LeafModel& leaf, const Kernels& k,
                           const Arrays& arrays, int repeats) {
  const double per_point = ir::cost_of(k.stencil.ir(), model.cost_options(leaf.leaf)).accesses();
  return measure_rate(rt, leaf, per_point, kGridCols, 64, kGridRows, repeats, [&](std::int64_t rows) {
    rt.region(k.stencil).over(rows, kGridCols).at(leaf.leaf).launch(arrays.grid_out, arrays.grid_in);
  });
}

/// The bytes per second (as cost_of counts them) of the grid stencil over
/// the big grid, which the caches cannot hold: the best of `repeats`
/// launches after a warm-up.
double measure_stencil_bandwidth(Runtime& rt, const MachineModel& model, const LeafModel& leaf, const Kernels& k,
                                 const Arrays& arrays, int repeats) {
  const std::int64_t rows = arrays.big_rows;
  const double bytes = model.cost_of(k.stencil.ir(), leaf.leaf, {rows, kBigCols, 0}).bytes();
  const double seconds = best_seconds(rt, repeats, [&] {
    rt.region(k.stencil).over(rows, kBigCols).at(leaf.leaf).launch(arrays.big_out, arrays.big_in);
  });
  return bytes * static_cast<double>(rows * kBigCols) / work_seconds(seconds, leaf.launch_seconds) / 1e9;
}

/// Wall time of one launch + pause.
template <class Launch>
double seconds_of(Runtime& rt, Launch&& launch) {
  const auto start = std::chrono::steady_clock::now();
  launch();
  rt.pause();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

/// Runs `phase` on every leaf still calibrating; a leaf that fails is left
/// out of the later phases, with the reason in its note.
template <class Phase>
void on_each_leaf(std::vector<LeafModel>& leaves, Phase&& phase) {
  for (auto& leaf : leaves) {
    if (!leaf.note.empty()) continue;
    try {
      phase(leaf);
    } catch (const Error& e) {
      leaf.note = one_line(std::string("calibration failed: ") + e.what());
    }
  }
}

/// The most last-level cache a core holds on any processor made (a 3D V-Cache
/// part has 12 MiB; 32 leaves room). A virtual machine may report the host's
/// whole L3 for each virtual core (here: 508 MiB), which would size the
/// calibration's arrays at gigabytes and make it take seconds.
constexpr std::int64_t kMostCachePerCore = std::int64_t{32} << 20;

/// The largest last-level cache share among `leaves`, at most
/// kMostCachePerCore a core: what the bandwidth arrays must outgrow.
std::int64_t largest_cache_share(const std::vector<LeafModel>& leaves) {
  std::int64_t largest = 0;
  for (const auto& leaf : leaves)
    largest = std::max(largest, std::min(leaf.cache_bytes, std::max(1, leaf.cores) * kMostCachePerCore));
  return largest;
}

/// Measures every leaf. The latency and triad launches go round the leaves
/// in turn (a, b, a, b, ...), so that other work starting or stopping on the
/// node disturbs all leaves alike and their ratio stays right.
void measure_leaves(Runtime& rt, MachineModel& model, const Kernels& k, const Arrays& arrays,
                    const CalibrationOptions& options) {
  auto empty = [&](const std::string& at) { rt.region(k.empty).over(1).at(at).launch(arrays.one); };
  auto triad = [&](const std::string& at) {
    rt.region(k.triad).over(arrays.points).at(at).launch(arrays.a, arrays.b, arrays.c, 0.4);
  };
  constexpr double kNever = std::numeric_limits<double>::infinity();
  std::map<std::string, double> best_triad;
  on_each_leaf(model.leaves, [&](LeafModel& leaf) {  // warm-up: compile, copy the arrays to a device
    seconds_of(rt, [&] { empty(leaf.leaf); });
    seconds_of(rt, [&] { triad(leaf.leaf); });
    leaf.launch_seconds = kNever;
    best_triad[leaf.leaf] = kNever;
  });
  for (int r = 0; r < std::max(1, options.latency_repeats); ++r)
    on_each_leaf(model.leaves, [&](LeafModel& leaf) {
      leaf.launch_seconds = std::min(leaf.launch_seconds, seconds_of(rt, [&] { empty(leaf.leaf); }));
    });
  for (int r = 0; r < std::max(1, options.repeats); ++r)
    on_each_leaf(model.leaves, [&](LeafModel& leaf) {
      best_triad[leaf.leaf] = std::min(best_triad[leaf.leaf], seconds_of(rt, [&] { triad(leaf.leaf); }));
    });
  on_each_leaf(model.leaves, [&](LeafModel& leaf) {
    const double triad_bytes = model.cost_of(k.triad.ir(), leaf.leaf, {arrays.points, 0, 0}).bytes();
    leaf.bandwidth_gbs = triad_bytes * static_cast<double>(arrays.points) /
                         work_seconds(best_triad[leaf.leaf], leaf.launch_seconds) / 1e9;
    leaf.gflops_f64 =
        measure_gflops<double>(rt, model, leaf, k.flops64, arrays.a, arrays.b, arrays.points, options.repeats + 2);
    leaf.gflops_f32 = measure_gflops<float>(rt, model, leaf, k.flops32, arrays.fa, arrays.fb, arrays.float_points,
                                            options.repeats + 2);
    leaf.access_gps = measure_access_rate(rt, model, leaf, k, arrays, options.repeats + 2);
    leaf.stencil_bandwidth_gbs =
        measure_stencil_bandwidth(rt, model, leaf, k, arrays, std::max(1, options.repeats - 2));
    leaf.calibrated = true;
  });
  for (auto& leaf : model.leaves)
    if (!leaf.calibrated) {
      leaf.launch_seconds = leaf.bandwidth_gbs = leaf.gflops_f64 = leaf.gflops_f32 = leaf.access_gps =
          leaf.stencil_bandwidth_gbs = 0;
    }
}

}  // namespace

std::string fingerprint_of(Runtime& rt) {
  std::map<std::string, std::string> drivers;
  for (const auto& d : rt.node().devices)
    if (auto device = runtime::engine_of(rt).device(d.id)) drivers[d.id] = device->info().fingerprint;
  return fingerprint_of(rt.node(), rt.hierarchy(), drivers);
}

MachineModel MachineModel::calibrate(Runtime& rt, const CalibrationOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  MachineModel model;
  model.fingerprint = fingerprint_of(rt);
  model.source = "calibrated";
  const Hierarchy tree = rt.hierarchy();
  if (!tree.root()) return model;
  for (const Location* leaf : tree.leaves(*tree.root())) {
    LeafModel m = describe_leaf(rt.node(), *leaf);
    if (!m.device.empty())
      if (auto device = runtime::engine_of(rt).device(m.device))
        m.streaming_threshold = device->info().streaming_threshold;
    model.leaves.push_back(std::move(m));
  }
  if (model.leaves.empty()) return model;

  const std::int64_t largest = largest_cache_share(model.leaves);
  std::int64_t points = options.triad_points;
  if (points <= 0) points = std::clamp<std::int64_t>(3 * largest / 24, std::int64_t{1} << 21, std::int64_t{1} << 26);
  Arrays arrays;
  arrays.points = points;
  arrays.float_points = std::max<std::int64_t>(1, points / 2);
  arrays.a = rt.array<double>(points, named("model_a"));
  arrays.b = rt.array<double>(points, named("model_b"));
  arrays.c = rt.array<double>(points, named("model_c"));
  arrays.one = rt.array<double>(1, named("model_one"));
  arrays.fa = rt.array<float>(arrays.float_points, named("model_fa"));
  arrays.fb = rt.array<float>(arrays.float_points, named("model_fb"));
  arrays.grid_in = rt.array<double, 2>(Shape(kGridRows + 2, kGridCols + 2), named("model_grid_in"));
  arrays.grid_out = rt.array<double, 2>(Shape(kGridRows + 2, kGridCols + 2), named("model_grid_out"));
  {
    // Each array of the big grid twice the largest leaf's cache share (at least 32 MiB, at most
    // 256 MiB): a launch streams four times the cache, so nothing of the last one is left in it.
    const std::int64_t row_bytes = (kBigCols + 2) * std::int64_t{sizeof(double)};
    arrays.big_rows = std::clamp<std::int64_t>(2 * largest / row_bytes, (std::int64_t{32} << 20) / row_bytes,
                                               (std::int64_t{256} << 20) / row_bytes);
  }
  arrays.big_in = rt.array<double, 2>(Shape(arrays.big_rows + 2, kBigCols + 2), named("model_big_in"));
  arrays.big_out = rt.array<double, 2>(Shape(arrays.big_rows + 2, kBigCols + 2), named("model_big_out"));
  {
    // Written once so that the reads below come from memory: untouched
    // zero-filled pages would all map the one zero page, which stays in cache.
    auto a = arrays.a.host(), b = arrays.b.host(), c = arrays.c.host();
    for (std::int64_t i = 0; i < points; ++i) a[i] = b[i] = c[i] = 1.0;
    auto fa = arrays.fa.host(), fb = arrays.fb.host();
    for (std::int64_t i = 0; i < arrays.float_points; ++i) fa[i] = fb[i] = 1.0f;
    auto in = arrays.grid_in.host(), out = arrays.grid_out.host();
    for (std::int64_t i = 0; i < kGridRows + 2; ++i)
      for (std::int64_t j = 0; j < kGridCols + 2; ++j) in(i, j) = out(i, j) = 1.0;
    auto big_in = arrays.big_in.host(), big_out = arrays.big_out.host();
    for (std::int64_t i = 0; i < arrays.big_rows + 2; ++i)
      for (std::int64_t j = 0; j < kBigCols + 2; ++j) big_in(i, j) = big_out(i, j) = 1.0;
  }
  const Kernels kernels;
  measure_leaves(rt, model, kernels, arrays, options);
  model.calibration_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return model;
}

MachineModel MachineModel::load_or_calibrate(Runtime& rt, const CalibrationOptions& options) {
  const std::string directory = machine_model_directory(options.cache_dir);
  const std::string fingerprint = fingerprint_of(rt);
  std::string path;
  std::optional<jit::CacheLock> lock;
  if (directory != "off") {
    path = machine_model_path(directory, fingerprint);
    auto kept = [&]() -> std::optional<MachineModel> {
      auto loaded = load(path);
      if (loaded && loaded->fingerprint != fingerprint) loaded.reset();
      return loaded;
    };
    if (auto loaded = kept()) return std::move(*loaded);
    // Another process of the node may be calibrating the same tree: wait for
    // it and read its model, rather than measure while it measures.
    lock.emplace(path + ".lock", jit::cache_sharing_from_environment());
    if (auto loaded = kept()) return std::move(*loaded);
  }
  MachineModel model = calibrate(rt, options);
  // A leaf whose calibration failed may have failed for a passing reason (a
  // device busy or short of memory at that moment): the model is used, but
  // not kept, so that the next run measures again instead of reading the
  // failure back for as long as the node stays the same.
  std::string failed;
  for (const LeafModel& leaf : model.leaves)
    if (!leaf.calibrated) failed += (failed.empty() ? "" : "; ") + leaf.leaf + ": " + leaf.note;
  if (!failed.empty()) {
    std::fprintf(stderr,
                 "canopy: the machine model has no numbers for some leaves (%s); it is not kept, the next run "
                 "calibrates again\n",
                 failed.c_str());
    return model;
  }
  if (!path.empty()) {
    try {
      model.save(path);
    } catch (const Error& e) {
      std::fprintf(stderr, "canopy: the machine model is not kept between runs: %s\n", e.what());
    }
  }
  return model;
}

}  // namespace canopy
