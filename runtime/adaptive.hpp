// Adaptive placement: the `adaptive` policy's learned splits and the `any`
// policy's choice of the fastest idle leaf.
//
// Why it exists: a region split evenly over a one-core CPU leaf and an
// OpenCL device runs as slowly as the slower of the two. The machine model
// (machine_model.hpp) predicts each leaf's throughput for a kernel, so the
// first launch can already split in proportion to it; the prediction is a
// roofline, right to within tens of percent, so every later launch measures
// how long each leaf's piece ran and moves the split toward equal finishing
// times. What was learned is kept in the cache directory, so that the next
// run of the program starts where this one ended.
//
// ## The `adaptive` policy, launch by launch
//  1. The first launch of a kernel over a set of leaves splits the range in
//     proportion to MachineModel::balanced_shares (latency included); leaves
//     the model knows nothing of get the mean rate of those it knows, and
//     without a model the split is even.
//  2. The engine times when each leaf finished its piece, counted from the
//     launch (PieceStats::finished_seconds): the kernel, the copies it needed
//     and the leaf's own overheads (waking its worker, the device's queue),
//     all of which a split changes. A leaf that is busy with earlier work
//     when the launch comes finishes later, and gets less.
//  3. Each leaf's rate (rows per second) is the median of its last three
//     launches, so that a launch slowed by other work on the machine does not
//     move the split on its own. rebalance() turns the split that ran and the
//     times those rates give into the next split:
//     each leaf's rate is its share over its time; the balanced split is
//     proportional to the rates, and the next split moves `damping` of the
//     way there. It stays as it is while the slowest leaf took at most
//     `dead_band` longer than the fastest (noise of a few percent never moves
//     it), and when no share would move by `min_change` or more.
//  4. Balanced finishing times are the fastest split only while each leaf's
//     speed does not depend on the split. Leaves that share the memory bus
//     break that: when the bus is saturated, the leaf with the smaller piece
//     can get the smaller part of the bandwidth, the rates measured at one
//     split mispredict every other, and the balanced split can be 10-20% slower
//     than the even one (measured on a two-core VM whose memory bandwidth
//     halved while other guests ran). So once the split has settled (a launch
//     that does not move it), the policy probes: it launches the even split and
//     the settled one alternately and compares their launch times (the last
//     leaf's finishing time): after one of each when they differ by more than
//     twice `probe_gain`, else after two of each, by their medians. A launch of
//     the settled split that takes a time outside the band below (the machine
//     changed during the probe) starts the probe again, twice at most; the next
//     launch of the settled split, not that one (it may be a one-off), is what
//     later ones are checked against. The even split is tried only where the
//     rates measured predict it at most `probe_margin` slower, so that leaves
//     of very different speed never pay for it. If it is faster by more than
//     `probe_gain`, the policy holds it and stops rebalancing; otherwise it
//     returns to the settled split. Either way it probes again when a share
//     moves by 5 points or more from the split last probed (noise moves a
//     settled split by a point or two, which cannot turn the even split's loss
//     into a win), or when the median of the last three launch times leaves a
//     band of twice the dead band around the median of the first three after
//     the probe (the machine changed: other work came or went). Hence
//     `adaptive` is not slower than the even (static) split by more than the
//     noise, whatever the leaves share.
//  5. The split is kept per key: the node's fingerprint, the location the
//     region runs at, its executing leaves (name, kind, cores, device), the
//     kernel's hash and the extents class (the bit width of each extent, so
//     2^20 and 2^20 + 1000 points share what they learn). It is saved after its
//     first launch, then at most once a second while it changes, and when the
//     runtime ends, as adaptive-<hash>.txt in the cache directory
//     (machine_model_directory(): $CANOPY_CACHE_DIR, else ~/.cache/canopy;
//     "off" keeps nothing), as a checked file (jit/checked_file.hpp); a
//     damaged, untrusted or foreign file is ignored.
//
// ## The `any` policy
// Among the idle leaves, the one with the smallest predicted time for the
// whole range: measured (seconds per point of this kernel on that leaf, from
// earlier adaptive or any launches of the same extents class) where there is
// history, else the model's prediction. Ties go to the first in tree order.
//
// ## Settings (environment)
//   CANOPY_ADAPTIVE_DEAD_BAND  fraction, default 0.08 (8%)
//   CANOPY_ADAPTIVE_DAMPING    fraction of the way to balance per launch, default 0.7
//   CANOPY_ADAPTIVE_PROBE      0: never probe the even split (step 4), default 1
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <canopy/ir/kernel.hpp>

#include "hierarchy.hpp"
#include "machine_model.hpp"
#include "shape.hpp"
#include "stats.hpp"

namespace canopy {

/// How the adaptive policy reacts to measured times.
struct FeedbackOptions {
  /// The split stays as it is while the slowest leaf's time is at most this
  /// fraction above the fastest's (0.08: 8%).
  double dead_band = 0.08;
  /// The fraction of the way to the balanced split taken per launch (1: all
  /// of it; less keeps a noisy measurement from swinging the split).
  double damping = 0.7;
  /// A new split whose shares all differ from the old by less than this
  /// (a fraction of the range) is not taken.
  double min_change = 0.005;
  /// Whether a settled split is compared with the even one (see the top of this file).
  bool probe = true;
  /// The even split is probed only where the rates measured at the settled
  /// split predict it at most this fraction slower (0.5: 50%; the even split
  /// was 10-15% faster here where they predicted it 28% slower).
  double probe_margin = 0.5;
  /// The even split replaces the settled one only when its median launch
  /// time is lower by more than this fraction (0.04: 4%).
  double probe_gain = 0.04;

  /// The defaults, with CANOPY_ADAPTIVE_DEAD_BAND and CANOPY_ADAPTIVE_DAMPING
  /// where they are set to a number in [0, 1] (dead band) or (0, 1] (damping),
  /// and CANOPY_ADAPTIVE_PROBE where it is 0 or 1.
  static FeedbackOptions from_environment();
};

/// What rebalance() decided for one launch.
struct Feedback {
  std::vector<double> shares;  ///< the next launch's split, summing to 1
  /// Slowest time over fastest, minus 1, among the leaves that ran (0 for
  /// fewer than two); NaN when a leaf with a share has no time.
  double imbalance = 0;
  bool changed = false;  ///< shares differ from the split that ran
};

/// The feedback rule (see the top of this file): `shares` is the split that
/// ran (fractions summing to 1, one per leaf), `seconds` each leaf's time
/// (ignored where its share is 0). Leaves with share 0 keep 0. A leaf with a
/// share but no positive, finite time leaves the split unchanged.
Feedback rebalance(const std::vector<double>& shares, const std::vector<double>& seconds,
                   const FeedbackOptions& options = {});

/// A kernel as AdaptivePlacement knows it: the optimized IR (for the model's
/// cost) and a hash of its text (for the keys).
struct AdaptiveKernel {
  const ir::Kernel* kernel = nullptr;
  std::uint64_t hash = 0;
};

/// A split one key has learned, as adaptive_splits() reports it.
struct AdaptiveSplit {
  std::string key;                   ///< see the top of this file
  std::string kernel;                ///< the kernel's name
  std::vector<std::string> leaves;   ///< in tree order
  std::vector<double> shares;        ///< the split the next launch takes
  std::vector<double> model_shares;  ///< what the model predicted (empty without a model)
  int launches = 0;                  ///< launches measured
  int changes = 0;                   ///< launches after which the split moved (probe launches aside)
  double last_imbalance = 0;         ///< Feedback::imbalance of the last measured launch
  int probes = 0;                    ///< probes finished (see the top of this file)
  /// The split is the even one, held because a probe found it faster than
  /// the balanced one; rebalancing is off while it holds.
  bool held = false;
  bool from_file = false;  ///< the first split was read from the cache directory
};

class AdaptivePlacement;

/// What one launch was planned with; the engine keeps it with the region and
/// hands it back with the region's statistics once every piece has run.
struct AdaptivePlan {
  AdaptivePlacement* placement = nullptr;
  std::string key;
  std::string kernel;
  std::uint64_t kernel_hash = 0;
  std::string extents_class;
  std::vector<std::string> leaves;
  std::vector<double> shares;     ///< the split asked of split(), per leaf
  std::vector<double> rates;      ///< predicted points per second per leaf (0: unknown)
  std::vector<double> latency;    ///< predicted launch latency per leaf, seconds
  std::int64_t inner_points = 1;  ///< points per row (the extents after the first)
  /// False for `any` launches: they teach the history, not a split.
  bool learns_split = true;
  /// The launch ran the split its inputs were left in instead of `shares`
  /// (runtime/internal/sequence_placement.hpp): its rates still move the
  /// kernel's own split, but it neither starts nor counts in a probe.
  bool followed = false;

  /// Fills each piece's share, predicted seconds in `record` (pieces and range set).
  void annotate(RegionStats& record) const;
  /// Hands the measured pieces of `record` back to the placement (call once,
  /// after every piece ran, and only when the region did not fail).
  void finished(const RegionStats& record) const;
};

/// The learned splits and history of one runtime; thread-safe.
class AdaptivePlacement {
 public:
  /// `cache_dir` as CalibrationOptions::cache_dir (empty: $CANOPY_CACHE_DIR,
  /// else ~/.cache/canopy; "off": nothing is kept between runs).
  explicit AdaptivePlacement(FeedbackOptions options = FeedbackOptions::from_environment(), std::string cache_dir = {});
  /// Writes the splits that changed since they were last written.
  ~AdaptivePlacement();
  AdaptivePlacement(const AdaptivePlacement&) = delete;
  AdaptivePlacement& operator=(const AdaptivePlacement&) = delete;

  /// Gives the machine model (none: splits start even, `any` uses history
  /// only) and the node's fingerprint (fingerprint_of with an empty tree),
  /// which is part of every key. Call before plan(); later calls replace them.
  void set_model(std::optional<MachineModel> model, std::string node_fingerprint);
  /// The model given to set_model(), or null.
  const MachineModel* model() const;

  /// The split for a launch of `kernel` over `range` at `at`, whose executing
  /// leaves are `leaves` (tree order): learned, else read from the cache
  /// directory, else the model's.
  std::shared_ptr<const AdaptivePlan> plan(const AdaptiveKernel& kernel, const Location& at,
                                           const std::vector<const Location*>& leaves, const Shape& range);
  /// A plan for an `any` launch that ran the whole range on `leaf`: it
  /// annotates the statistics and teaches the history.
  std::shared_ptr<const AdaptivePlan> plan_any(const AdaptiveKernel& kernel, const Location& leaf, const Shape& range);
  /// Predicted seconds for the whole of `range` on `leaf`: history first,
  /// else the model; NaN when neither knows.
  double predict_seconds(const AdaptiveKernel& kernel, const Location& leaf, const Shape& range);
  /// Predicted seconds per row of the plan's range on each of its leaves for
  /// the kernel alone (no copies, no waiting for earlier regions): measured
  /// on earlier launches (PieceStats::run_seconds), else the model's rate;
  /// NaN where neither knows.
  std::vector<double> row_seconds(const AdaptivePlan& plan) const;

  /// Learns from a finished launch (AdaptivePlan::finished calls it).
  void learn(const AdaptivePlan& plan, const RegionStats& record);

  /// Every split learned or read so far, ordered by key.
  std::vector<AdaptiveSplit> splits() const;
  /// Replaces the times learn() takes for each piece (PieceStats::finished_seconds
  /// and run_seconds) by `source(piece)`: for tests and experiments that need
  /// leaves of a known, noiseless speed. Empty: the measured times again.
  void set_time_source(std::function<double(const PieceStats&)> source);
  const FeedbackOptions& options() const { return options_; }

 private:
  struct Entry {
    AdaptiveSplit split;
    bool saved = false;                              ///< written (or read) at least once
    bool dirty = false;                              ///< changed since it was last written
    std::chrono::steady_clock::time_point saved_at;  ///< when it was last written
    /// Per leaf, its rows per second in the last few launches it ran: the
    /// feedback takes their median, so one launch slowed by something else
    /// on the machine does not move the split.
    std::vector<std::vector<double>> recent_rates;
    enum class Phase { Balancing, Probing, Holding };
    Phase phase = Phase::Balancing;
    /// The settled split the last probe compared with the even one (or
    /// declined to); empty while a probe is due whatever the split: before
    /// the first, and once the machine changed.
    std::vector<double> probed;
    /// Probing: [0] the settled split, [1] the even one; the launch times
    /// measured with each; the candidates still to launch, in order.
    std::vector<std::vector<double>> candidates;
    std::vector<std::vector<double>> candidate_seconds;
    std::vector<std::size_t> schedule;
    int probe_restarts = 0;  ///< times this probe started again (the machine changed during it)
    /// The launch time later ones are compared with (0: not yet known): while
    /// probing, the settled split's before the probe; else the median of the
    /// first three launches after a probe decided (or was declined). And the
    /// last three launch times at the current split (probe launches of the
    /// even split aside).
    double reference_seconds = 0;
    std::vector<double> recent_seconds;

    /// The split worth keeping between runs: the settled one while probing.
    const std::vector<double>& keeps() const { return phase == Phase::Probing ? candidates.front() : split.shares; }
  };
  struct LeafRate {
    double rate = 0;     ///< points per second, 0: unknown
    double latency = 0;  ///< seconds
  };

  /// Starts a probe of `entry`'s settled split when the rows per second of
  /// each leaf (`rates`, 0: unknown) predict the even split worth trying.
  void start_probe(Entry& entry, const std::vector<double>& rates) const;
  /// Takes one probe launch's time; decides when the last is in.
  void probe_step(Entry& entry, const std::vector<double>& ran_shares, double seconds) const;
  /// Whether a probe of `entry`'s split is due: a share lies kProbeMove or
  /// more from the split last probed, or none was.
  static bool probe_due(const Entry& entry);
  /// Whether `seconds` lies outside the band of twice the dead band around
  /// `reference` (false when there is no reference, 0).
  bool outside_band(double seconds, double reference) const;
  /// Whether the median of the last three launch times at the current split
  /// left that band around the reference; the first such median after a
  /// probe becomes the reference.
  bool drifted(Entry& entry) const;
  LeafRate model_rate(const AdaptiveKernel& kernel, const Location& leaf, const Shape& range,
                      const std::string& extents_class);
  std::string path_of(const std::string& key) const;
  void save(const Entry& entry) const;
  std::optional<std::vector<double>> load(const std::string& key, const std::vector<std::string>& leaves) const;

  FeedbackOptions options_;
  std::string directory_;
  mutable std::mutex mutex_;
  std::optional<MachineModel> model_;
  std::string node_;
  std::map<std::string, Entry> entries_;
  /// By kernel hash, leaf and extents class: the model's rate (computed once).
  std::map<std::string, LeafRate> model_rates_;
  /// By kernel hash, leaf and extents class: measured seconds per point.
  std::map<std::string, double> history_;
  /// Seconds per point of the kernel alone (PieceStats::run_seconds, or the
  /// time source), per kernel, leaf and extents class: row_seconds().
  std::map<std::string, double> run_history_;
  std::function<double(const PieceStats&)> time_source_;
};

/// "b20x12": the bit width of each extent of `range`.
std::string extents_class_of(const Shape& range);

/// Reads the split file at `path` for `key` and `leaves`; nothing when it is
/// missing, damaged, for another key or other leaves.
std::optional<std::vector<double>> read_adaptive_file(const std::string& path, const std::string& key,
                                                      const std::vector<std::string>& leaves);
/// Writes it as a checked file; throws canopy::Error naming the path when it
/// cannot (a directory that is not trusted is skipped with a warning).
void write_adaptive_file(const std::string& path, const std::string& key, const std::vector<std::string>& leaves,
                         const std::vector<double>& shares);

}  // namespace canopy
