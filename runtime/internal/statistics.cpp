#include "statistics.hpp"

#include <algorithm>

namespace canopy::runtime {

namespace {
// How many regions stats().recent keeps.
constexpr std::size_t kRecentRegions = 64;
}  // namespace

void StatsBook::remember(const std::shared_ptr<RegionStats>& record, double modeled_dram_bytes) {
  std::lock_guard lock(mutex_);
  record->id = static_cast<std::uint64_t>(++regions_);
  if (!record->fused.empty()) {
    regions_ += static_cast<std::int64_t>(record->fused.size()) - 1;
    fused_regions_ += static_cast<std::int64_t>(record->fused.size());
    ++fused_kernels_;
  }
  modeled_dram_bytes_ += modeled_dram_bytes;
  if (!record->follows.empty()) ++followed_regions_;
  recent_.push_back(record);
  while (recent_.size() > kRecentRegions) recent_.pop_front();
}

void StatsBook::piece_finished(RegionStats& record, std::size_t piece, std::int64_t points, double seconds,
                               double run_seconds, double finished_seconds, std::int64_t passes) {
  std::lock_guard lock(mutex_);
  auto& piece_stats = record.pieces[piece];
  piece_stats.passes = passes;
  piece_stats.seconds = seconds;
  piece_stats.run_seconds = run_seconds;
  piece_stats.finished_seconds = finished_seconds;
  auto& leaf = leaves_[piece_stats.leaf];
  leaf.leaf = piece_stats.leaf;
  leaf.regions += 1;
  leaf.iterations += points;
  leaf.busy_seconds += seconds;
}

void StatsBook::split_planned(const SplitWritePlan& writes) {
  std::lock_guard lock(mutex_);
  if (writes.one_memory) {
    ++split_writes_.one_memory;
    if (split_notes_seen_.insert(writes.one_memory_key).second) split_writes_.notes.push_back(*writes.one_memory);
  }
  const auto& modes = writes.modes;
  if (std::count(modes.begin(), modes.end(), WriteMode::Changed) > 0) ++split_writes_.changed_merged;
  if (std::count(modes.begin(), modes.end(), WriteMode::Added) > 0) ++split_writes_.sums_merged;
}

bool StatsBook::touches(const RegionStats& record, const std::vector<std::string>& leaves) const {
  std::lock_guard lock(mutex_);
  return std::any_of(record.pieces.begin(), record.pieces.end(), [&](const PieceStats& piece) {
    return std::find(leaves.begin(), leaves.end(), piece.leaf) != leaves.end();
  });
}

StatsBook::Mark StatsBook::mark() const {
  std::lock_guard lock(mutex_);
  return {regions_, leaves_, recent_};
}

void StatsBook::forget_since(const Mark& mark) {
  std::lock_guard lock(mutex_);
  hidden_regions_ += regions_ - mark.regions;
  leaves_ = mark.leaves;
  recent_ = mark.recent;
}

void StatsBook::fill(Stats& stats, const std::vector<std::string>& leaf_names) const {
  std::lock_guard lock(mutex_);
  stats.regions = regions_ - hidden_regions_;
  for (const auto& [name, leaf] : leaves_) stats.leaves.push_back(leaf);
  for (const auto& name : leaf_names)
    if (!leaves_.count(name)) stats.leaves.push_back(LeafStats{name, 0, 0, 0.0});
  std::sort(stats.leaves.begin(), stats.leaves.end(),
            [](const LeafStats& a, const LeafStats& b) { return a.leaf < b.leaf; });
  for (const auto& r : recent_) stats.recent.push_back(*r);
  stats.split_writes = split_writes_;
  stats.fused_regions = fused_regions_;
  stats.fused_kernels = fused_kernels_;
  stats.modeled_dram_bytes = modeled_dram_bytes_;
  stats.followed_regions = followed_regions_;
}

}  // namespace canopy::runtime
