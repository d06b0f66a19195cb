// What the engine counts about the regions it ran, for Runtime::stats(): the
// recent regions with their pieces' times, per-leaf totals and how split
// writes were planned. Pieces finish on leaf threads while a program reads
// the numbers, so every count lives behind one mutex here. A calibration of
// the machine model launches regions of its own; they are the runtime's,
// not the program's, and forget_since() takes them out again.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "../stats.hpp"
#include "split_writes.hpp"

namespace canopy::runtime {

class StatsBook {
 public:
  /// Numbers `record` (ids count from 1) and keeps it among the recent regions.
  /// A fused region counts as the regions it ran (record->fused); its
  /// kernel's modelled DRAM bytes add to the total.
  void remember(const std::shared_ptr<RegionStats>& record, double modeled_dram_bytes = 0);
  /// Piece `piece` of `record` took `seconds` (`run_seconds` of them in its
  /// kernel) over `points` points, and ended `finished_seconds` after its
  /// region was queued, in `passes` passes; its leaf's totals grow.
  void piece_finished(RegionStats& record, std::size_t piece, std::int64_t points, double seconds, double run_seconds,
                      double finished_seconds, std::int64_t passes = 1);
  /// How a region split over memories writes its arrays (split_writes.hpp).
  void split_planned(const SplitWritePlan& writes);
  /// True when a piece of `record` runs on one of `leaves`.
  bool touches(const RegionStats& record, const std::vector<std::string>& leaves) const;

  /// What the book holds at one moment, so that what comes after can be forgotten.
  struct Mark {
    std::int64_t regions = 0;
    std::unordered_map<std::string, LeafStats> leaves;
    std::deque<std::shared_ptr<RegionStats>> recent;
  };
  Mark mark() const;
  /// The regions since `mark` stop counting (a calibration launched them).
  void forget_since(const Mark& mark);

  /// Fills `stats`' regions, leaves (those of `leaf_names` that ran nothing
  /// with zeros, all sorted by name), recent regions and split writes.
  void fill(Stats& stats, const std::vector<std::string>& leaf_names) const;

 private:
  mutable std::mutex mutex_;
  std::int64_t regions_ = 0;
  std::int64_t hidden_regions_ = 0;  ///< the machine model's calibration launched them
  std::unordered_map<std::string, LeafStats> leaves_;
  std::deque<std::shared_ptr<RegionStats>> recent_;
  SplitWriteStats split_writes_;
  /// The SplitWritePlan::one_memory_key of each note kept (once per kernel,
  /// parameter and reason).
  std::set<std::string> split_notes_seen_;
  std::int64_t fused_regions_ = 0, fused_kernels_ = 0;
  double modeled_dram_bytes_ = 0;
  std::int64_t followed_regions_ = 0;
};

}  // namespace canopy::runtime
