#include "interval_set.hpp"

#include <algorithm>

namespace canopy::runtime {

namespace {

// The first range of `ranges` (canonical) that ends after `position`.
std::vector<Range>::const_iterator first_ending_after(const std::vector<Range>& ranges, std::int64_t position) {
  return std::partition_point(ranges.begin(), ranges.end(), [&](const Range& r) { return r.end <= position; });
}

// Appends `range` to `ranges` built in increasing order, joining it with the
// last range when they touch or overlap.
void append_joined(std::vector<Range>& ranges, Range range) {
  if (range.empty()) return;
  if (!ranges.empty() && ranges.back().end >= range.begin) {
    ranges.back().end = std::max(ranges.back().end, range.end);
    return;
  }
  ranges.push_back(range);
}

}  // namespace

std::ostream& operator<<(std::ostream& out, const Range& range) {
  return out << '[' << range.begin << ',' << range.end << ')';
}

IntervalSet::IntervalSet(Range range) {
  if (!range.empty()) ranges_.push_back(range);
}

IntervalSet::IntervalSet(std::initializer_list<Range> ranges) {
  for (const Range& range : ranges) add(range);
}

void IntervalSet::add(Range range) {
  if (range.empty()) return;
  // Ranges that overlap or touch `range` form one run [first, last).
  auto first =
      std::partition_point(ranges_.begin(), ranges_.end(), [&](const Range& r) { return r.end < range.begin; });
  auto last = std::partition_point(first, ranges_.end(), [&](const Range& r) { return r.begin <= range.end; });
  if (first != last) {
    range.begin = std::min(range.begin, first->begin);
    range.end = std::max(range.end, std::prev(last)->end);
    *first = range;
    ranges_.erase(std::next(first), last);
  } else {
    ranges_.insert(first, range);
  }
}

void IntervalSet::add(const IntervalSet& other) {
  if (other.empty()) return;
  std::vector<Range> merged;
  merged.reserve(ranges_.size() + other.ranges_.size());
  auto a = ranges_.begin();
  auto b = other.ranges_.begin();
  while (a != ranges_.end() || b != other.ranges_.end()) {
    if (b == other.ranges_.end() || (a != ranges_.end() && a->begin <= b->begin)) {
      append_joined(merged, *a++);
    } else {
      append_joined(merged, *b++);
    }
  }
  ranges_ = std::move(merged);
}

void IntervalSet::subtract(Range range) {
  if (range.empty()) return;
  // Ranges that overlap `range` form one run [first, last).
  auto first =
      std::partition_point(ranges_.begin(), ranges_.end(), [&](const Range& r) { return r.end <= range.begin; });
  auto last = std::partition_point(first, ranges_.end(), [&](const Range& r) { return r.begin < range.end; });
  if (first == last) return;
  const Range left{first->begin, range.begin};
  const Range right{range.end, std::prev(last)->end};
  first = ranges_.erase(first, last);
  if (!right.empty()) first = ranges_.insert(first, right);
  if (!left.empty()) ranges_.insert(first, left);
}

void IntervalSet::subtract(const IntervalSet& other) {
  if (other.empty() || empty()) return;
  std::vector<Range> kept;
  kept.reserve(ranges_.size() + other.ranges_.size());
  auto cut = other.ranges_.begin();
  for (Range piece : ranges_) {
    // Skip the cuts that end before this range; then carve the ones inside it.
    while (cut != other.ranges_.end() && cut->end <= piece.begin) ++cut;
    auto inside = cut;
    while (inside != other.ranges_.end() && inside->begin < piece.end) {
      if (inside->begin > piece.begin) kept.push_back(Range{piece.begin, inside->begin});
      piece.begin = std::max(piece.begin, inside->end);
      if (inside->end > piece.end) break;  // this cut may reach into the next range too
      ++inside;
    }
    cut = inside;
    if (!piece.empty()) kept.push_back(piece);
  }
  ranges_ = std::move(kept);
}

IntervalSet IntervalSet::intersect(Range range) const {
  IntervalSet result;
  if (range.empty()) return result;
  for (auto it = first_ending_after(ranges_, range.begin); it != ranges_.end() && it->begin < range.end; ++it) {
    result.ranges_.push_back(Range{std::max(it->begin, range.begin), std::min(it->end, range.end)});
  }
  return result;
}

IntervalSet IntervalSet::intersect(const IntervalSet& other) const {
  IntervalSet result;
  auto a = ranges_.begin();
  auto b = other.ranges_.begin();
  while (a != ranges_.end() && b != other.ranges_.end()) {
    const Range common{std::max(a->begin, b->begin), std::min(a->end, b->end)};
    if (!common.empty()) result.ranges_.push_back(common);
    // Step past whichever range ends first (both when they end together).
    if (a->end < b->end) {
      ++a;
    } else if (b->end < a->end) {
      ++b;
    } else {
      ++a;
      ++b;
    }
  }
  return result;
}

IntervalSet IntervalSet::missing(Range range) const {
  IntervalSet result;
  if (range.empty()) return result;
  std::int64_t position = range.begin;
  for (auto it = first_ending_after(ranges_, range.begin); it != ranges_.end() && it->begin < range.end; ++it) {
    if (it->begin > position) result.ranges_.push_back(Range{position, it->begin});
    position = it->end;
  }
  if (position < range.end) result.ranges_.push_back(Range{position, range.end});
  return result;
}

bool IntervalSet::contains(Range range) const {
  if (range.empty()) return true;
  const Range* holder = find(range.begin);
  return holder != nullptr && holder->end >= range.end;
}

bool IntervalSet::contains(std::int64_t position) const { return find(position) != nullptr; }

bool IntervalSet::overlaps(Range range) const {
  if (range.empty()) return false;
  auto it = first_ending_after(ranges_, range.begin);
  return it != ranges_.end() && it->begin < range.end;
}

bool IntervalSet::overlaps(const IntervalSet& other) const {
  auto a = ranges_.begin();
  auto b = other.ranges_.begin();
  while (a != ranges_.end() && b != other.ranges_.end()) {
    if (a->end <= b->begin) {
      ++a;
    } else if (b->end <= a->begin) {
      ++b;
    } else {
      return true;
    }
  }
  return false;
}

const Range* IntervalSet::find(std::int64_t position) const {
  auto it = first_ending_after(ranges_, position);
  if (it == ranges_.end() || it->begin > position) return nullptr;
  return &*it;
}

std::int64_t IntervalSet::total() const {
  std::int64_t sum = 0;
  for (const Range& range : ranges_) sum += range.size();
  return sum;
}

Range IntervalSet::hull() const {
  if (ranges_.empty()) return Range{};
  return Range{ranges_.front().begin, ranges_.back().end};
}

std::ostream& operator<<(std::ostream& out, const IntervalSet& set) {
  out << '{';
  bool first = true;
  for (const Range& range : set) {
    if (!first) out << ' ';
    out << range;
    first = false;
  }
  return out << '}';
}

}  // namespace canopy::runtime
