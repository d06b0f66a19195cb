#include "sequence_placement.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "../coherence.hpp"
#include "../policy.hpp"

namespace canopy::runtime {

std::vector<PlacedInput> placed_inputs(const ir::Kernel& kernel, std::uint64_t kernel_hash,
                                       const std::vector<ArgRef>& args, std::int64_t rows) {
  std::vector<PlacedInput> inputs;
  if (rows <= 0) return inputs;
  for (std::size_t p = 0; p < kernel.params.size() && p < args.size(); ++p) {
    auto* storage = std::get_if<std::shared_ptr<ArrayStorage>>(&args[p]);
    if (!storage || !kernel.params[p].reads()) continue;
    const auto& array = **storage;
    if (array.shape().rank() == 0 || array.shape()[0] != rows) continue;
    auto placed = array.placed_rows();
    if (!placed || placed->extent != rows || placed->leader == kernel_hash) continue;
    inputs.push_back({std::move(placed), static_cast<double>(array.bytes()) / static_cast<double>(rows)});
  }
  return inputs;
}

std::vector<double> copy_seconds(const std::vector<PlacedInput>& inputs, const std::vector<int>& places,
                                 const std::vector<std::int64_t>& bounds, const LinkPrice& price) {
  auto link = [&](int place) { return place == Coherence::kHost ? 0.0 : price(place); };
  std::vector<double> seconds(places.size(), 0.0);
  for (const auto& input : inputs)
    for (std::size_t leaf = 0; leaf < places.size() && leaf + 1 < bounds.size(); ++leaf)
      for (const auto& piece : input.placed->pieces) {
        if (piece.place == places[leaf]) continue;  // its rows are in this leaf's memory
        const std::int64_t overlap = std::min(piece.end, bounds[leaf + 1]) - std::max(piece.begin, bounds[leaf]);
        if (overlap > 0)
          seconds[leaf] +=
              static_cast<double>(overlap) * input.bytes_per_row * (link(piece.place) + link(places[leaf]));
      }
  return seconds;
}

namespace {

// The slowest leaf's time for the split `bounds`: its rows, and the seconds
// of its copies in (`copy_seconds`, per leaf; empty: none), which delay that
// leaf alone, since each leaf's worker makes its own. NaN when a leaf with
// rows has no rate.
double split_seconds(const std::vector<std::int64_t>& bounds, const std::vector<double>& row_seconds,
                     const std::vector<double>& copy_seconds = {}) {
  double slowest = 0;
  for (std::size_t leaf = 0; leaf + 1 < bounds.size(); ++leaf) {
    const std::int64_t rows = bounds[leaf + 1] - bounds[leaf];
    if (rows == 0) continue;
    if (leaf >= row_seconds.size() || !(row_seconds[leaf] > 0)) return std::numeric_limits<double>::quiet_NaN();
    const double copies = leaf < copy_seconds.size() ? copy_seconds[leaf] : 0.0;
    slowest = std::max(slowest, static_cast<double>(rows) * row_seconds[leaf] + copies);
  }
  return slowest;
}

// The rows each of `leaves` takes in `placed`, when its pieces lie in the
// leaves' order (as split() would make them); nothing otherwise.
std::optional<std::vector<double>> rows_per_leaf(const RowPlacement& placed, const std::vector<std::string>& leaves) {
  std::vector<double> rows(leaves.size(), 0.0);
  std::size_t next_leaf = 0;
  std::int64_t next_row = 0;
  for (const auto& piece : placed.pieces) {
    auto it = std::find(leaves.begin() + static_cast<std::ptrdiff_t>(next_leaf), leaves.end(), piece.leaf);
    if (it == leaves.end() || piece.begin != next_row) return std::nullopt;
    next_leaf = static_cast<std::size_t>(it - leaves.begin()) + 1;
    rows[next_leaf - 1] = static_cast<double>(piece.end - piece.begin);
    next_row = piece.end;
  }
  if (next_row != placed.extent) return std::nullopt;
  return rows;
}

}  // namespace

std::optional<FollowedSplit> follow_inputs(const std::vector<PlacedInput>& inputs, const SplitQuestion& region) {
  const auto& leaves = region.leaves;
  if (inputs.empty() || leaves.size() < 2 || region.own_shares.size() != leaves.size() ||
      region.places.size() != leaves.size() || !region.link_price)
    return std::nullopt;
  // The placement that holds the most of what the region reads (the first
  // parameter's among equals).
  std::vector<std::pair<const RowPlacement*, double>> by_placement;
  for (const auto& input : inputs) {
    auto it = std::find_if(by_placement.begin(), by_placement.end(),
                           [&](const auto& entry) { return entry.first == input.placed.get(); });
    if (it == by_placement.end()) it = by_placement.insert(by_placement.end(), {input.placed.get(), 0.0});
    it->second += input.bytes_per_row;
  }
  const RowPlacement& candidate =
      *std::max_element(by_placement.begin(), by_placement.end(), [](const auto& a, const auto& b) {
         return a.second < b.second;
       })->first;
  const auto follow_rows = rows_per_leaf(candidate, leaves);
  if (!follow_rows) return std::nullopt;
  const auto own = share_boundaries(region.own_shares, region.rows);
  const auto follow = share_boundaries(*follow_rows, region.rows);
  if (own == follow) return std::nullopt;
  FollowedSplit split;
  split.shares = *follow_rows;
  split.follows = candidate.kernel;
  split.leader = candidate.leader;
  if (region.always) return split;
  split.own_seconds =
      split_seconds(own, region.row_seconds, copy_seconds(inputs, region.places, own, region.link_price));
  split.follow_seconds =
      split_seconds(follow, region.row_seconds, copy_seconds(inputs, region.places, follow, region.link_price));
  if (!std::isfinite(split.own_seconds) || !std::isfinite(split.follow_seconds) ||
      split.follow_seconds >= split.own_seconds * (1 - region.margin))
    return std::nullopt;
  // Copies are paid once where the kernels that share the arrays settle on
  // one split, an imbalance at every launch: the kernel that loses less by
  // taking the other's split follows.
  if (region.leader_row_seconds) {
    const auto leader = region.leader_row_seconds(candidate.leader);
    const double leader_loss = split_seconds(own, leader) - split_seconds(follow, leader);
    const double region_loss = split_seconds(follow, region.row_seconds) - split_seconds(own, region.row_seconds);
    if (std::isfinite(leader_loss) && leader_loss < region_loss) return std::nullopt;
  }
  return split;
}

std::shared_ptr<const RowPlacement> placement_of(const std::string& kernel, std::uint64_t leader, std::int64_t rows,
                                                 const std::vector<RowPlacement::Rows>& pieces) {
  auto placed = std::make_shared<RowPlacement>();
  placed->kernel = kernel;
  placed->leader = leader;
  placed->extent = rows;
  placed->pieces = pieces;
  return placed;
}

}  // namespace canopy::runtime
