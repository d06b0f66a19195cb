#include "mcd.hpp"

#include <fmt/format.h>

#include <unordered_set>

namespace canopy {

namespace {

// True when `upper` is `lower` or one of its ancestors; walks up from `lower`.
bool at_or_above(const Location* upper, const Location* lower) {
  for (const Location* step = lower; step != nullptr; step = step->parent()) {
    if (step == upper) return true;
  }
  return false;
}

// Algorithm 1 with indexes: the index of the answer, or the conflict that ends it.
struct Walk {
  std::optional<std::size_t> answer;
  std::optional<BranchConflict> conflict;
};

Walk walk(const std::vector<const Location*>& locations) {
  Walk result;
  for (std::size_t index = 0; index < locations.size(); ++index) {
    const Location* location = locations[index];
    if (location == nullptr) continue;
    if (!result.answer) {
      result.answer = index;
      continue;
    }
    const Location* answer = locations[*result.answer];
    if (at_or_above(location, answer)) continue;  // on the path agreed on: nothing changes
    if (at_or_above(answer, location)) {          // deeper, and its path holds the answer
      result.answer = index;
      continue;
    }
    result.conflict = BranchConflict{*result.answer, index};
    result.answer.reset();
    return result;
  }
  return result;
}

// The deepest location above or at both, or null when they are in different trees.
const Location* where_branches_part(const Location& first, const Location& second) {
  std::unordered_set<const Location*> above_first;
  for (const Location* step = &first; step != nullptr; step = step->parent()) above_first.insert(step);
  for (const Location* step = &second; step != nullptr; step = step->parent()) {
    if (above_first.count(step) != 0) return step;
  }
  return nullptr;
}

}  // namespace

const Location* most_common_descendant(const std::vector<const Location*>& locations) {
  const Walk result = walk(locations);
  return result.answer ? locations[*result.answer] : nullptr;
}

std::optional<BranchConflict> find_branch_conflict(const std::vector<const Location*>& locations) {
  return walk(locations).conflict;
}

std::string explain_no_common_descendant(const std::vector<const Location*>& locations,
                                         const std::vector<std::string>& labels) {
  const std::optional<BranchConflict> conflict = find_branch_conflict(locations);
  if (!conflict) return {};
  const bool labelled = labels.size() == locations.size();
  auto describe = [&](std::size_t index) {
    const Location* location = locations[index];
    if (!labelled) return fmt::format("'{}'", location->name());
    if (location == nullptr) return fmt::format("{} (no fixed location)", labels[index]);
    return fmt::format("{} at '{}'", labels[index], location->name());
  };

  std::string listing;
  for (std::size_t index = 0; index < locations.size(); ++index) {
    if (locations[index] == nullptr && !labelled) continue;
    if (!listing.empty()) listing += ", ";
    listing += describe(index);
  }

  const Location& answer = *locations[conflict->answer];
  const Location& other = *locations[conflict->other];
  const std::string pair = fmt::format("{} and {}", describe(conflict->answer), describe(conflict->other));
  const Location* meeting = where_branches_part(answer, other);
  if (meeting == nullptr) {
    return fmt::format(
        "no location sees the memory of every argument ({}): {} are in different trees; move one of them "
        "(rt.move) into the other's tree, onto its path to the root",
        listing, pair);
  }
  return fmt::format(
      "no location sees the memory of every argument ({}): {} are on different branches, which part at '{}'; "
      "move one of them (rt.move) onto the other's path to the root, for example to '{}'",
      listing, pair, meeting->name(), meeting->name());
}

}  // namespace canopy
