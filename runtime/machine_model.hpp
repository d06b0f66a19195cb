// Machine model: how fast each executing leaf of this node's tree computes
// and moves data, so that the runtime can predict how long a piece of a
// region takes on a leaf before running it (the `adaptive` policy's first
// split, the `any` policy's choice, rt.stats()'s predicted times).
//
//   Runtime rt;
//   MachineModel model = MachineModel::load_or_calibrate(rt);  // ~0.1-0.5 s the first time, then a file read
//   ir::KernelCost cost = model.cost_of(kernel.ir(), "cpu0", {n, 0, 0});  // ir::cost_of with the leaf's options
//   double seconds = model.predict_seconds(cost, "cpu0", n);
//   std::vector<double> shares = model.balanced_shares(cost, {"cpu0", "opencl0"}, n);
//
// ## What it holds, per leaf
// From discovery (hwloc, the backends): cores or compute units, vector width,
// the data caches and their line size (CPU leaves; devices report none yet),
// the clock where the OS says it, and the peak f64 rate
// cores x (vector bytes / 8) x 2 (a fused multiply-add) x clock.
// Measured by calibrate(), through the Runtime, each launch on one leaf
// alone; the triad and latency launches go round the leaves in turn, so that
// other work on the node disturbs them alike:
//  - bandwidth: a STREAM triad over arrays 3x the largest last-level cache
//    (at least 6 Mi doubles in all), the best of a few launches, divided
//    into the bytes cost_of() counts for it on the leaf (32 per point: b, c,
//    a and a's allocating read; 24 where the backend writes a with
//    streaming stores). Predictions for kernels costed by cost_of() are
//    consistent with it;
//  - compute: a kernel of independent multiply-add chains (about 260 flops
//    per point, vectorisable across points), f64 and f32, in the flops
//    ir::cost_of counts for it, the best of a few launches of about 2 ms
//    (short, so that the data stays in cache and other work on the node
//    disturbs few of them);
//  - access rate: a 2-D 5-point stencil (5 loads and a store a point,
//    vectorisable along rows) on a grid of 512 columns, in the loads and
//    stores ir::cost_of counts for it: how fast the leaf issues accesses
//    when the bytes are not what limits it (misaligned vector loads, address
//    arithmetic, a compiler that vectorises less: a stencil on this kind of
//    CPU runs at a similar time per point in and out of cache);
//  - launch latency: launch + pause of a one-point region, the best of 20.
// All numbers are per second of wall time of Runtime::region(...).launch()
// plus pause(): they include the runtime's own overheads, as a policy sees them.
//
// ## Prediction (a roofline)
// predict_seconds = launch_seconds + points x max(compute, memory, issue),
// with, per point, compute = flops_f64 / gflops_f64 + flops_f32 / gflops_f32,
// memory = bytes / bandwidth and issue = (loads + stores) / access rate.
// Integer operations are not timed.
// Copies between memories (a device's first touch of an array, halos) are
// not part of it: the coherence directory's statistics show them.
//
// ## The cache file
// A calibration is kept in the cache directory ($CANOPY_CACHE_DIR, else
// ~/.cache/canopy; "off" keeps none) as machine-model-<hash>.txt, where hash
// is the hash of the node's fingerprint (fingerprint_of): the CPU model,
// cores, NUMA nodes and caches, every device with its driver, every leaf of
// the tree with its cores and binding, and Canopy's version. Any change to
// those gives another file, so a later run on the same node and tree loads it
// and one on a changed node or tree calibrates again. The file is text, one
// leaf a line, kept as a checked file (jit/checked_file.hpp: written whole or
// not at all, checksummed, read only from a directory no one else may
// write). An unreadable, truncated, corrupt, untrusted or foreign file is
// ignored (and replaced by the next calibration).
#pragma once

#include <fmt/ostream.h>

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include <canopy/ir/analysis/cost.hpp>

#include "discovery.hpp"
#include "hierarchy.hpp"

namespace canopy {

class Runtime;

/// What the model knows of one executing leaf; zero means unknown.
struct LeafModel {
  std::string leaf;  ///< the location's name ("cpu0", "opencl0")
  LocationKind kind = LocationKind::Cpu;
  std::string device;              ///< device leaves: the device id ("opencl:0")
  std::string model;               ///< CPU model or device name
  int cores = 0;                   ///< CPU leaf: cores (a thread each); device: compute units
  int vector_bytes = 0;            ///< widest vector register (CPU) or preferred vector width (device)
  int line_bytes = 64;             ///< cache line size (64 when unknown)
  std::vector<CacheLevel> caches;  ///< CPU leaves: the node's data caches, L1 first
  /// Bytes of cache the leaf's cores hold together at the last level (each
  /// last-level cache counted once); what cost_options() shares among its points.
  std::int64_t cache_bytes = 0;
  double clock_ghz = 0;      ///< the OS's maximum (or current) clock of its first core
  double peak_gflops = 0;    ///< f64: cores x (vector_bytes / 8) x 2 x clock
  double gflops_f64 = 0;     ///< measured
  double gflops_f32 = 0;     ///< measured
  double bandwidth_gbs = 0;  ///< measured, 1e9 bytes (as ir::cost_of counts them) per second
  double access_gps = 0;     ///< measured, 1e9 loads and stores issued per second (ir::KernelCost::accesses)
  /// Measured like bandwidth_gbs but by a 2-D 5-point stencil over a grid
  /// several times the caches: what a leaf sustains when it streams stencil
  /// windows from memory (three rows read at once and a row written), which
  /// on the CPU and PoCL measured here is about four fifths of the triad's
  /// rate. throughput() uses it for kernels that read an array in the
  /// stencil pattern; 0: not measured (the triad's is used).
  double stencil_bandwidth_gbs = 0;
  double launch_seconds = 0;  ///< measured: launch + pause of a one-point region
  /// Device leaves: the device's backends::DeviceInfo::streaming_threshold
  /// (bytes; -1: it never uses streaming stores). CPU leaves: the CPU
  /// backend's threshold before CANOPY_STREAMING_STORES
  /// (backends::cpu::automatic_streaming_threshold; -1 in a model from
  /// before it was kept: twice cache_bytes), which cost_of() applies the
  /// variable to.
  std::int64_t streaming_threshold = -1;
  /// True when the measured numbers are there; false when the leaf could not
  /// run the calibration kernels (`note` says why) or was not measured.
  bool calibrated = false;
  std::string note;  ///< why a leaf is not calibrated, else empty

  bool operator==(const LeafModel&) const = default;
};

/// How calibrate() measures.
struct CalibrationOptions {
  /// Points of the triad (doubles per array); 0: 3x the largest last-level
  /// cache share (at most 32 MiB a core) over 24 bytes, at least 2 Mi and at
  /// most 64 Mi.
  std::int64_t triad_points = 0;
  /// Timed launches of the triad per leaf (after one warm-up launch); the
  /// best counts. The compute kernels take two more (their launches are short).
  int repeats = 5;
  /// One-point launches timed for the latency; the best counts.
  int latency_repeats = 20;
  /// Where load_or_calibrate() keeps the file; empty: $CANOPY_CACHE_DIR,
  /// else $HOME/.cache/canopy; "off": no file (calibrate every time).
  std::string cache_dir;
};

/// How a model's predicted time ratio between two leaves compares with a
/// measured one (the adaptive policy's check: within 25% for triad and a stencil).
struct RatioCheck {
  double predicted_a = 0, predicted_b = 0;  ///< seconds
  double measured_a = 0, measured_b = 0;    ///< seconds
  double predicted_ratio() const { return predicted_a / predicted_b; }
  double measured_ratio() const { return measured_a / measured_b; }
  /// |predicted_ratio / measured_ratio - 1|: 0.25 means the prediction is
  /// 25% off. NaN when a time is zero or missing.
  double difference() const;
  bool within(double tolerance) const { return difference() <= tolerance; }
};

/// Compares predicted and measured times of the same work on leaves a and b.
RatioCheck check_ratio(double predicted_a, double predicted_b, double measured_a, double measured_b);

class MachineModel {
 public:
  /// The fingerprint of the node and tree the numbers were measured on (fingerprint_of()).
  std::string fingerprint;
  /// One per executing leaf, in tree order.
  std::vector<LeafModel> leaves;
  /// How calibrate() took, in seconds (0 for a model read from a file).
  double calibration_seconds = 0;
  /// "calibrated", or the file it was read from.
  std::string source;

  /// Measures every executing leaf of `rt`'s tree (see the top of this
  /// file). Leaves that cannot run the calibration kernels stay in the model
  /// with calibrated = false and a note. Never writes a file.
  static MachineModel calibrate(Runtime& rt, const CalibrationOptions& options = {});
  /// The file for `rt`'s fingerprint when it is there and sound, else
  /// calibrate() and save() (a file that cannot be written is only a
  /// warning on stderr: the model is still returned). A model in which some
  /// leaf failed its calibration is returned but not saved, with a warning
  /// naming the leaves: the next call measures again.
  static MachineModel load_or_calibrate(Runtime& rt, const CalibrationOptions& options = {});
  /// A model read from `path`; nothing when the file is missing, unreadable,
  /// truncated, fails its checksum, is not trusted, or is not a machine model.
  static std::optional<MachineModel> load(const std::string& path);
  /// Writes the model to `path` as a checked file, creating the directory.
  /// Throws canopy::Error naming the path and the reason when it cannot; a
  /// directory that is not trusted is skipped with checked_file's warning.
  void save(const std::string& path) const;

  /// The leaf called `leaf`, or null.
  const LeafModel* find(std::string_view leaf) const;
  /// The leaf called `leaf`; throws canopy::Error naming it and the leaves known.
  const LeafModel& at(std::string_view leaf) const;

  /// `base` with what the leaf knows: its line size, and as cache_bytes half
  /// of its last-level cache per core plus its L2 (the share of one thread's
  /// stream of points); devices keep base's cache_bytes.
  ir::CostOptions cost_options(std::string_view leaf, ir::CostOptions base = {}) const;
  /// The cost per point of `kernel` on `leaf` for a launch (or one leaf's
  /// piece) over `range` (index extents, 0 where unknown): ir::cost_of with
  /// cost_options(leaf, base), the range, and streaming stores where the
  /// leaf's backend uses them. CPU leaves write the write-only arrays of a
  /// kernel without reductions stored at each point's own element
  /// (jit::streaming_candidates) with streaming stores where
  /// backends::takes_streaming_stores says so with the leaf's
  /// streaming_threshold (the CPU backend's own threshold; arrays of
  /// another rank than the kernel's count whole where `base` gives their
  /// extents), or as
  /// CANOPY_STREAMING_STORES (on, off, auto) says; device leaves where their
  /// device said it streams. Throws for an unknown leaf.
  ir::KernelCost cost_of(const ir::Kernel& kernel, std::string_view leaf, std::array<std::int64_t, 3> range,
                         ir::CostOptions base = {}) const;

  /// Seconds for `points` points of a kernel costing `cost` per point on
  /// `leaf`, one launch: the roofline above plus the launch latency. Throws
  /// canopy::Error for an unknown or uncalibrated leaf, naming it.
  double predict_seconds(const ir::KernelCost& cost, std::string_view leaf, std::int64_t points) const;
  double predict_seconds(const ir::KernelCost& cost, const Location& leaf, std::int64_t points) const;
  /// Points per second once launched (the roofline without the latency);
  /// +infinity for a kernel that costs nothing. Throws like predict_seconds.
  double throughput(const ir::KernelCost& cost, std::string_view leaf) const;
  double throughput(const ir::KernelCost& cost, const Location& leaf) const;
  /// Fractions of `points` (summing to 1) that make the leaves' predicted
  /// times equal, latency included: proportional to throughput for large
  /// ranges; a leaf whose latency alone exceeds the common finishing time
  /// gets 0. Throws like predict_seconds.
  std::vector<double> balanced_shares(const ir::KernelCost& cost, const std::vector<std::string>& leaves,
                                      std::int64_t points) const;

  /// A table: per leaf its kind, cores, vector width, caches, clock, peak and
  /// measured rates, bandwidth and latency; then where the numbers came from.
  std::string describe() const;
  bool operator==(const MachineModel& other) const {
    return fingerprint == other.fingerprint && leaves == other.leaves;
  }
};

/// The fingerprint of a node and tree as one line: Canopy's version, the
/// CPU model, cores, NUMA nodes (their indices, not their memory, which can
/// change while a program runs), vector width and caches,
/// each device with its driver fingerprint (`drivers`: device id to
/// backends::DeviceInfo::fingerprint), and every executing leaf with its
/// kind, cores, processing units and device.
std::string fingerprint_of(const NodeInventory& node, const Hierarchy& tree,
                           const std::map<std::string, std::string>& drivers = {});
/// The fingerprint of `rt`'s node and current tree.
std::string fingerprint_of(Runtime& rt);

/// The last-level cache among `caches` (the highest level), or null when there is none.
const CacheLevel* last_level(const std::vector<CacheLevel>& caches);
/// `cache_dir` (see CalibrationOptions::cache_dir) resolved: the directory,
/// or "off".
std::string machine_model_directory(const std::string& cache_dir = {});
/// The file a model with `fingerprint` is kept in below `directory`.
std::string machine_model_path(const std::string& directory, const std::string& fingerprint);

std::ostream& operator<<(std::ostream& out, const MachineModel& model);

}  // namespace canopy

/// fmt::format("{}", model) gives model.describe().
template <>
struct fmt::formatter<canopy::MachineModel> : fmt::ostream_formatter {};
