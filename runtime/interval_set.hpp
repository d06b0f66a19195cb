// Interval sets: sets of element positions held as sorted, disjoint,
// half-open ranges. The coherence directory keeps one per copy of an array
// (the elements that copy holds current), and plans copies with their algebra.
//
// Why not a bitmap: a copy of an array split by rows over a few devices is
// valid over a handful of long runs (its own rows, a halo), whatever the
// array's size, so a few ranges describe it exactly and every operation costs
// a few comparisons instead of a pass over the array.
//
// Canonical form, kept by every operation: the ranges are non-empty, sorted by
// begin, and neither overlap nor touch (two ranges that would touch, like
// [0,5) and [5,9), are one range [0,9)). So two sets are equal exactly when
// they hold the same positions, and iteration visits maximal runs in order.
#pragma once

#include <fmt/ostream.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <ostream>
#include <vector>

namespace canopy::runtime {

/// A half-open range of element positions [begin, end). Empty when begin >= end.
struct Range {
  std::int64_t begin = 0;
  std::int64_t end = 0;

  bool empty() const { return begin >= end; }
  /// The number of positions (0 when empty).
  std::int64_t size() const { return empty() ? 0 : end - begin; }
  bool operator==(const Range&) const = default;
};

/// "[begin,end)".
std::ostream& operator<<(std::ostream& out, const Range& range);

/// A set of positions as canonical ranges (see the file comment). Operations
/// cost O(log k) to find their place plus the ranges they change, for a set of
/// k ranges; set-with-set operations are linear in both sets.
class IntervalSet {
 public:
  /// Iterates the ranges in order (read-only).
  using const_iterator = std::vector<Range>::const_iterator;

  /// The empty set.
  IntervalSet() = default;
  /// The positions of `range` (the empty set when it is empty).
  explicit IntervalSet(Range range);
  /// The union of `ranges`, in any order, overlapping or not.
  IntervalSet(std::initializer_list<Range> ranges);

  /// Adds the positions of `range`.
  void add(Range range);
  /// Adds every position of `other`.
  void add(const IntervalSet& other);
  /// Removes the positions of `range`.
  void subtract(Range range);
  /// Removes every position of `other`.
  void subtract(const IntervalSet& other);
  /// Removes every position.
  void clear() { ranges_.clear(); }

  /// The positions in both this set and `range`.
  IntervalSet intersect(Range range) const;
  /// The positions in both sets.
  IntervalSet intersect(const IntervalSet& other) const;
  /// The positions of `range` that this set does not hold (range minus set).
  IntervalSet missing(Range range) const;

  /// True when every position of `range` is in the set (always for an empty range).
  bool contains(Range range) const;
  /// True when `position` is in the set.
  bool contains(std::int64_t position) const;
  /// True when the set and `range` share a position.
  bool overlaps(Range range) const;
  /// True when the sets share a position.
  bool overlaps(const IntervalSet& other) const;
  /// The range of the set that holds `position`, or null when none does.
  const Range* find(std::int64_t position) const;

  /// The number of positions in the set.
  std::int64_t total() const;
  /// True when the set holds no position.
  bool empty() const { return ranges_.empty(); }
  /// The number of (maximal) ranges.
  std::size_t count() const { return ranges_.size(); }
  /// The smallest range holding every position ({0, 0} for the empty set).
  Range hull() const;
  /// The ranges, canonical (sorted, disjoint, not touching, non-empty).
  const std::vector<Range>& ranges() const { return ranges_; }
  const_iterator begin() const { return ranges_.begin(); }  ///< the first range
  const_iterator end() const { return ranges_.end(); }      ///< past the last range

  /// Equal when they hold the same positions (the form is canonical).
  bool operator==(const IntervalSet&) const = default;

 private:
  std::vector<Range> ranges_;
};

/// "{[0,5) [9,12)}", "{}" when empty.
std::ostream& operator<<(std::ostream& out, const IntervalSet& set);

}  // namespace canopy::runtime

/// fmt::format("{}", x) gives what operator<< writes.
template <>
struct fmt::formatter<canopy::runtime::Range> : fmt::ostream_formatter {};
template <>
struct fmt::formatter<canopy::runtime::IntervalSet> : fmt::ostream_formatter {};
