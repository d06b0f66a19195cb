// Split writes: how a region whose pieces run in different memories keeps
// every write when the pieces may write the same elements.
//
// Why it exists: a device piece works in its own copy of each array, and the
// coherence directory records the elements a piece wrote as current in that
// copy only. That is right when the pieces write disjoint elements (rows of
// a row-split region). A scatter (`o[p[i]] = x`), a histogram
// (`atomic_add(h[k[i]], 1)`) or a transposed write lets any piece write any
// element, and recording either copy as current would lose the other's
// writes. So, per array written by a region over two or more memories whose
// pieces' written elements (from the footprint) overlap:
//  - Changed (stores): each device piece takes a twin of its copy of the
//    elements it may write and, when it ends, writes back to the host only
//    the elements that differ from the twin. Pieces of a region that is not
//    racy change disjoint elements, so every change lands. Costs two copies
//    of the piece's written span out of the device.
//  - Added (atomic adds only, the array not read by the kernel): each device
//    piece adds into a private copy that starts at zero, and the copies are
//    summed into the host copy when the region ends; CPU pieces add into the
//    host copy atomically. Costs one copy of the span out of the device.
//  - Neither fits atomic adds mixed with stores or reads of the same array:
//    the region runs on one memory instead, and rt.stats() says so once per
//    kernel and reason.
// Arrays with a merge trait keep their explicit merge (traits.hpp).
//
// What merging costs, measured with canopy-bench scatter on cpu0 + PoCL: per
// element of a device piece's span, about what 20 simple operations of a
// kernel cost for a twin (copy in, copy out, compare) and 8 for a private
// copy (fill, copy out, add). A region whose merges would cost more than half
// of its work (points times the operations per point, from ir::cost_of:
// the most two memories can save) runs on one memory instead: a memory-bound
// scatter (a permutation scatter ran 4.5x slower split than on one leaf) does,
// a scatter after real work per point splits. CANOPY_SPLIT_WRITES=merge
// always merges where a technique fits, =one never splits such a region,
// =auto (the default) chooses by cost.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <canopy/ir/analysis/footprint.hpp>

#include "../engine.hpp"
#include "../policy.hpp"

namespace canopy::runtime {

/// How the pieces of one region write one array parameter.
enum class WriteMode : std::uint8_t {
  Plain,    ///< disjoint elements, or one memory: each piece's writes recorded as they are
  Changed,  ///< device pieces merge back the elements they changed (twin compare)
  Added,    ///< device pieces add into private zeroed copies, summed at the region's end
};

/// The decision for one region.
struct SplitWritePlan {
  std::vector<WriteMode> modes;  ///< one per parameter (Plain for non-arrays); empty: all Plain
  /// Set when the region cannot be split over memories: the reason, naming
  /// the kernel and the array, for rt.stats().
  std::optional<std::string> one_memory;
  /// What rt.stats() tells one_memory notes apart by: the kernel, the
  /// parameter and the reason (not the array, which may be a new one each launch).
  std::string one_memory_key;

  WriteMode mode(std::size_t param) const { return param < modes.size() ? modes[param] : WriteMode::Plain; }
};

/// One piece of a region and the memory (coherence place) it runs in.
struct PlacedPiece {
  int place = 0;
  std::int64_t begin = 0;
  std::int64_t end = 0;
};

/// CANOPY_SPLIT_WRITES: how regions whose pieces may write the same elements
/// are split over memories.
enum class SplitWriteChoice : std::uint8_t {
  Auto,       ///< merge where it costs less than the split saves, else one memory
  Merge,      ///< merge wherever a technique fits
  OneMemory,  ///< always one memory
};

/// Reads CANOPY_SPLIT_WRITES (auto, merge or one; unset is auto). Throws
/// canopy::Error naming the value and the words it takes.
SplitWriteChoice split_write_choice_from_environment();

/// Chooses how each written array of a region of `kernel` (footprint
/// `footprint`, `ops_per_point` simple operations per point from its cost)
/// over `range` with `args`, split into `pieces`, is written.
SplitWritePlan plan_split_writes(const ir::Kernel& kernel, const ir::Footprint& footprint, double ops_per_point,
                                 const std::vector<ArgRef>& args, const Shape& range,
                                 const std::vector<PlacedPiece>& pieces, SplitWriteChoice choice);

/// The pieces of `pieces` (places[k] is piece k's place) that run in one
/// memory, the range [0, n) dealt out among them in order and in proportion to
/// what they had: the host's when a piece runs there (CPU leaves work in place
/// and share the cores), else the place with the most points.
std::vector<Piece> on_one_memory(const std::vector<Piece>& pieces, const std::vector<int>& places, std::int64_t n);

}  // namespace canopy::runtime
