#include "split_writes.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>

#include <canopy/ir/error.hpp>
#include <canopy/ir/settings.hpp>

#include "../coherence.hpp"

namespace canopy::runtime {

namespace {

// True when pieces in two different memories may write one element of the
// array (shape `shape`) whose write footprint is `writes`.
bool writes_overlap(const ir::AccessFootprint& writes, const Shape& shape, const Shape& range,
                    const std::vector<PlacedPiece>& pieces) {
  std::vector<PlacedWrites> placed;
  placed.reserve(pieces.size());
  for (const auto& piece : pieces)
    placed.push_back({piece.place, writes_of(writes, shape, range, piece.begin, piece.end).written});
  return !conflicting_writes(placed).empty();
}

// What merging costs per element of a device piece's span, in the simple
// operations of a kernel (measured, see split_writes.hpp).
constexpr double kTwinOpsPerElement = 20;
constexpr double kPrivateCopyOpsPerElement = 8;

std::string why_one_memory(const ir::Kernel& kernel, std::size_t param, const ArrayStorage& array,
                           const ir::ArrayFootprint& footprint) {
  const std::string also = footprint.reads.present ? "reads it" : "stores to it";
  return "kernel '" + kernel.name + "' adds atomically to parameter " + kernel.describe_param(param) + ", " +
         array.describe() + ", and also " + also +
         ", so the region's pieces cannot each keep a copy of it: the region ran on one "
         "memory (keep what it reads, or what it stores, in another array to let the region split)";
}

std::string too_costly(const ir::Kernel& kernel, std::size_t param, const ArrayStorage& array) {
  return "kernel '" + kernel.name + "' may write any element of parameter " + kernel.describe_param(param) + ", " +
         array.describe() +
         ", from every piece, and merging what each memory changed would cost more than splitting the region saves: "
         "the region ran on one memory (CANOPY_SPLIT_WRITES=merge splits it anyway)";
}

// The merge's cost for array `param` in `mode`: its span in each device
// piece, in operations.
double merge_ops(const ir::AccessFootprint& writes, const Shape& shape, const Shape& range,
                 const std::vector<PlacedPiece>& pieces, WriteMode mode) {
  double elements = 0;
  for (const auto& piece : pieces)
    if (piece.place != 0) elements += double(writes_of(writes, shape, range, piece.begin, piece.end).written.total());
  return elements * (mode == WriteMode::Changed ? kTwinOpsPerElement : kPrivateCopyOpsPerElement);
}

}  // namespace

SplitWriteChoice split_write_choice_from_environment() {
  const std::string& value = settings().split_writes;  // "", auto, merge or one (settings.hpp checks)
  if (value == "merge") return SplitWriteChoice::Merge;
  if (value == "one") return SplitWriteChoice::OneMemory;
  return SplitWriteChoice::Auto;
}

SplitWritePlan plan_split_writes(const ir::Kernel& kernel, const ir::Footprint& footprint, double ops_per_point,
                                 const std::vector<ArgRef>& args, const Shape& range,
                                 const std::vector<PlacedPiece>& pieces, SplitWriteChoice choice) {
  SplitWritePlan plan;
  const bool several_memories =
      std::any_of(pieces.begin(), pieces.end(), [&](const PlacedPiece& p) { return p.place != pieces.front().place; });
  if (!several_memories) return plan;
  // A checked kernel has one more parameter than arguments (its fault record,
  // which the engine keeps per piece).
  plan.modes.assign(args.size(), WriteMode::Plain);
  double merging = 0;  // what the merges chosen so far cost, in operations
  for (std::size_t p = 0; p < args.size(); ++p) {
    const ir::Param& param = kernel.params[p];
    const auto* storage = std::get_if<std::shared_ptr<ArrayStorage>>(&args[p]);
    const ir::ArrayFootprint* array = footprint.of(static_cast<int>(p));
    if (!param.writes() || !storage || !array || !array->writes.present || (*storage)->traits().merge) continue;
    if (!writes_overlap(array->writes, (*storage)->shape(), range, pieces)) continue;
    if (array->writes.only_atomic() && !array->reads.present) {
      plan.modes[p] = WriteMode::Added;
    } else if (array->writes.atomic) {
      plan.one_memory = why_one_memory(kernel, p, **storage, *array);
      plan.one_memory_key = kernel.name + "/" + std::to_string(p) + "/atomic";
    } else {
      plan.modes[p] = WriteMode::Changed;
    }
    if (!plan.one_memory && choice != SplitWriteChoice::Merge) {
      merging += merge_ops(array->writes, (*storage)->shape(), range, pieces, plan.modes[p]);
      // The most two memories can save is half the work.
      if (choice == SplitWriteChoice::OneMemory || merging > 0.5 * double(range.size()) * ops_per_point) {
        plan.one_memory = too_costly(kernel, p, **storage);
        plan.one_memory_key = kernel.name + "/" + std::to_string(p) + "/costly";
      }
    }
    if (plan.one_memory) {
      plan.modes.clear();
      return plan;
    }
  }
  return plan;
}

std::vector<Piece> on_one_memory(const std::vector<Piece>& pieces, const std::vector<int>& places, std::int64_t n) {
  std::map<int, std::int64_t> points;
  for (std::size_t k = 0; k < pieces.size(); ++k) points[places[k]] += pieces[k].size();
  int chosen = points.begin()->first;  // the host (place 0) when a piece runs there
  if (chosen != 0)
    for (const auto& [place, count] : points)
      if (count > points[chosen]) chosen = place;
  std::vector<Piece> kept;
  std::int64_t total = 0;
  for (std::size_t k = 0; k < pieces.size(); ++k)
    if (places[k] == chosen) {
      kept.push_back(pieces[k]);
      total += pieces[k].size();
    }
  std::sort(kept.begin(), kept.end(), [](const Piece& a, const Piece& b) { return a.begin < b.begin; });
  // Deal [0, n) out in order, each piece its share of the points it had.
  std::int64_t begin = 0, had = 0;
  for (auto& piece : kept) {
    had += piece.size();
    const std::int64_t end = total > 0 ? static_cast<std::int64_t>(static_cast<__int128>(n) * had / total)
                                       : (&piece == &kept.back() ? n : 0);
    piece.begin = begin;
    piece.end = std::max(begin, end);
    begin = piece.end;
  }
  kept.back().end = n;
  return kept;
}

}  // namespace canopy::runtime
