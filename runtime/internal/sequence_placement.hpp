// Placement for a sequence of regions: a region that the adaptive or any
// policy places takes the split (or leaf) its inputs were left in by the
// regions that wrote them, instead of its own, when moving their rows to
// other memories would cost more than the imbalance of that split.
//
// Why it exists: the adaptive policy learns one split per kernel, and the
// any policy picks the leaf it predicts fastest for the kernel alone. Two
// kernels over the same arrays (an update and the stencil after it, srad's
// two steps) learn different splits, and then every launch of each moves the
// rows between the two splits' boundaries from one memory to the other:
// copies that neither split's balance counted, paid twice per iteration. The
// arrays' placement is known when a region is launched (each written array
// keeps the pieces of the region that wrote it, ArrayStorage::placed_rows,
// planned at that region's launch, so a region launched behind it sees where
// the rows will be), so the choice is made there, region by region, as the
// program runs:
//  - adaptive: the candidate is the placement that left the most bytes the
//    region reads (arrays whose first extent is the region's rows), when its
//    leaves are the region's own. Each split is priced at its slowest leaf:
//    the leaf's rows times its seconds per row (measured, else the machine
//    model) plus the bytes it must receive from another memory times the
//    seconds per byte that the transfers so far took over the links they
//    cross (each device's own once a MiB has moved over it, else all
//    devices' together; before a MiB has moved at all, a copy at the host's
//    memory bandwidth from the model); a leaf's worker makes its own copies,
//    so they delay that leaf alone. Seconds
//    per row are the kernel's own runs (PieceStats::run_seconds): the time
//    a piece waited for earlier regions or for its copies is not the
//    kernel's. The inputs' split runs when it is predicted faster by more
//    than the adaptive policy's dead band (8%), and unless the kernel that
//    leads it would lose less by taking the region's split (then the region
//    keeps its own, and that kernel follows it at its next launch): copies
//    are paid once where kernels settle on one split, an imbalance at every
//    launch. A region that follows still moves its own split by the rates
//    it measured (not in a probe), so that the choice stays informed.
//  - any: each idle leaf's predicted time gets the same price of the bytes
//    it would have to receive, so the data's leaf wins while the others are
//    not faster by more than the copy.
// Static, percentage, range and flatten splits and `.at()` are kept as
// given. CANOPY_SEQUENCE_PLACEMENT=off turns the choice off (on by default).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <canopy/ir/kernel.hpp>

#include "../array.hpp"
#include "../engine.hpp"

namespace canopy::runtime {

/// One array a region reads, where its last writer left it.
struct PlacedInput {
  std::shared_ptr<const RowPlacement> placed;
  double bytes_per_row = 0;
};

/// The arrays `kernel` reads in `args` that a region over `rows` rows left
/// split the same way (their first extent is `rows`), except those whose
/// split is the kernel's own (`kernel_hash` their leader).
std::vector<PlacedInput> placed_inputs(const ir::Kernel& kernel, std::uint64_t kernel_hash,
                                       const std::vector<ArgRef>& args, std::int64_t rows);

/// Seconds per byte moved between the host and the memory at a place (its
/// device's link); what the host's own place (0) is asked is never used.
using LinkPrice = std::function<double(int place)>;

/// The seconds each leaf spends receiving the rows of the inputs that are in
/// other memories when leaf i, in memory places[i], runs rows
/// [bounds[i], bounds[i + 1]): a byte from or to the host crosses the
/// device's link, a byte from one device to another crosses both (the
/// runtime routes it through the host).
std::vector<double> copy_seconds(const std::vector<PlacedInput>& inputs, const std::vector<int>& places,
                                 const std::vector<std::int64_t>& bounds, const LinkPrice& price);

/// A split that follows the inputs, and what both were priced at.
struct FollowedSplit {
  std::vector<double> shares;  ///< rows per leaf (share_boundaries gives them back exactly)
  std::string follows;         ///< the kernel that left the inputs so
  std::uint64_t leader = 0;    ///< whose own split it is (RowPlacement::leader)
  double own_seconds = 0;      ///< the region's own split, copies included
  double follow_seconds = 0;   ///< the followed split (copies of other inputs included)
};

/// What the adaptive choice knows of a region about to be split.
struct SplitQuestion {
  std::vector<std::string> leaves;  ///< its executing leaves, in tree order
  std::vector<int> places;          ///< their memories
  std::vector<double> own_shares;   ///< the split its kernel learned
  /// Its kernel's seconds per row on each leaf (NaN: unknown, which keeps
  /// the own split).
  std::vector<double> row_seconds;
  /// The same for the kernel whose split the inputs are in (by its hash);
  /// empty or NaN where unknown.
  std::function<std::vector<double>(std::uint64_t leader)> leader_row_seconds;
  LinkPrice link_price;   ///< the price of a byte moved over each device's link
  std::int64_t rows = 0;  ///< of its range
  /// The inputs' split is taken only when predicted faster by more than
  /// this fraction (the adaptive policy's dead band: less is noise here).
  double margin = 0;
  /// Follow wherever the inputs' split differs and its leaves are the
  /// region's, unpriced (CANOPY_SEQUENCE_PLACEMENT=always, for tests).
  bool always = false;
};

/// The adaptive choice (see the top of this file): the split the inputs
/// were left in when following it is predicted faster (by more than the
/// margin) than the region's own split with the copies that needs, and the kernel that leads that split
/// would not lose less by taking the region's split instead (else the
/// region keeps its own, and that kernel follows it at its next launch);
/// nothing otherwise.
std::optional<FollowedSplit> follow_inputs(const std::vector<PlacedInput>& inputs, const SplitQuestion& region);

/// The placement a region's pieces leave its written arrays in, for the
/// regions after it: `pieces` with each leaf's memory, the split `leader`'s.
std::shared_ptr<const RowPlacement> placement_of(const std::string& kernel, std::uint64_t leader, std::int64_t rows,
                                                 const std::vector<RowPlacement::Rows>& pieces);

}  // namespace canopy::runtime
