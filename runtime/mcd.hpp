// Most Common Descendant (Gecko, Algorithm 1): where a region runs, given where
// its arguments live.
//
// Memory placed at a location is visible at that location and everywhere
// below it. A region whose arguments live at L1..Ln can therefore run at a
// location that is at or below every Li; the MCD is the deepest of the Li
// themselves with that property (every other Li lies on its path to the root).
// When two arguments live on different branches no such location exists, and
// the region cannot run until one of them moves (rt.move).
//
// Why it exists: moving the computation to the data is cheaper than moving the
// data, and the rule is simple enough for a user to predict.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "hierarchy.hpp"

namespace canopy {

/// The location among `locations` that is at or below every other one, or
/// null when there is none (two of them on different branches, or in different
/// trees) or when the list holds no location. Null entries are skipped (an
/// argument without a location of its own, such as a distance-based array, does
/// not constrain the choice) and duplicates are harmless. O(n * depth).
const Location* most_common_descendant(const std::vector<const Location*>& locations);

/// Two entries of a list that have no common descendant: indexes into the list.
struct BranchConflict {
  std::size_t answer;  ///< the deepest location of the path agreed on so far
  std::size_t other;   ///< the first location off that path (neither above nor below `answer`)
};

/// The first conflict Algorithm 1 meets in `locations` (null entries skipped),
/// or nullopt when most_common_descendant() finds an answer or the list holds
/// no location.
std::optional<BranchConflict> find_branch_conflict(const std::vector<const Location*>& locations);

/// A sentence for canopy::Error when `locations` have no common descendant
/// (empty when they have one). It lists every entry (as "label at 'location'",
/// or the location's name alone when `labels` does not have one label per
/// entry), names the two that are on different branches and the location where
/// their branches part, and says what to do (move one onto the other's path).
/// The caller passes array names as labels and may prefix the region's name.
std::string explain_no_common_descendant(const std::vector<const Location*>& locations,
                                         const std::vector<std::string>& labels = {});

}  // namespace canopy
