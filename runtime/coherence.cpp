#include "coherence.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <canopy/ir/error.hpp>
#include <cstdlib>

namespace canopy::runtime {

namespace {

const IntervalSet kNothing;

std::string place_name(int place) { return place == Coherence::kHost ? "the host" : fmt::format("place {}", place); }

}  // namespace

std::ostream& operator<<(std::ostream& out, const Transfer& transfer) {
  return out << transfer.range << ' ' << transfer.from << "->" << transfer.to;
}

CoherenceCounters& CoherenceCounters::operator+=(const CoherenceCounters& other) {
  host_to_device += other.host_to_device;
  device_to_host += other.device_to_host;
  device_to_device += other.device_to_device;
  avoided += other.avoided;
  return *this;
}

std::ostream& operator<<(std::ostream& out, const CoherenceCounters& counters) {
  return out << "h2d " << counters.host_to_device << " d2h " << counters.device_to_host << " d2d "
             << counters.device_to_device << " avoided " << counters.avoided;
}

// ---------------------------------------------------------------- directory

Coherence::Coherence(std::int64_t elements, std::int64_t element_size, Routing routing)
    : elements_(elements), element_size_(element_size), routing_(routing) {
  if (elements < 0) {
    throw Error(fmt::format("coherence: an array of {} elements is impossible; give a count of 0 or more", elements));
  }
  if (element_size < 1) {
    throw Error(fmt::format("coherence: an element size of {} bytes is impossible; give 1 or more", element_size));
  }
  copies_[kHost].valid.add(Range{0, elements});
}

std::vector<int> Coherence::places() const {
  std::vector<int> result;
  result.reserve(copies_.size());
  for (const auto& [place, copy] : copies_) result.push_back(place);
  return result;
}

bool Coherence::has_copy(int place) const { return copies_.count(place) != 0; }

const IntervalSet& Coherence::valid(int place) const {
  auto it = copies_.find(place);
  return it == copies_.end() ? kNothing : it->second.valid;
}

const IntervalSet& Coherence::merging(int place) const {
  auto it = copies_.find(place);
  return it == copies_.end() ? kNothing : it->second.merging;
}

IntervalSet Coherence::merging() const {
  IntervalSet all;
  for (const auto& [place, copy] : copies_) all.add(copy.merging);
  return all;
}

Coherence::Copy& Coherence::copy_at(int place) { return copies_[place]; }

void Coherence::check_place(int place, const char* operation) const {
  if (place < 0) {
    throw Error(
        fmt::format("coherence: {} at place {}: places are 0 (the host) or positive device numbers", operation, place));
  }
}

void Coherence::check_inside(const IntervalSet& ranges, int place, const char* operation) const {
  if (ranges.empty()) return;
  const Range hull = ranges.hull();
  if (hull.begin < 0 || hull.end > elements_) {
    throw Error(
        fmt::format("coherence: {} of elements {} at {} is outside the array's {} elements; pass ranges "
                    "within [0,{})",
                    operation, ranges, place_name(place), elements_, elements_));
  }
}

void Coherence::check_not_merging(const IntervalSet& ranges, int place, const char* operation) const {
  const IntervalSet pending = merging().intersect(ranges);
  if (!pending.empty()) {
    throw Error(
        fmt::format("coherence: {} of elements {} at {} overlaps elements {} whose merge copies are not "
                    "combined yet; call end_merge() (at the pause) before reading or writing them",
                    operation, ranges, place_name(place), pending));
  }
}

void Coherence::count(const Transfer& transfer) {
  const std::int64_t bytes = transfer.range.size() * element_size_;
  if (transfer.from == kHost) {
    counters_.host_to_device += bytes;
  } else if (transfer.to == kHost) {
    counters_.device_to_host += bytes;
  } else {
    counters_.device_to_device += bytes;
  }
}

// ------------------------------------------------------------------ acquire

std::vector<Transfer> Coherence::acquire(int place, Range need) { return acquire(place, IntervalSet(need)); }

std::vector<Transfer> Coherence::acquire(int place, const IntervalSet& need) {
  check_place(place, "acquire");
  check_inside(need, place, "acquire");
  check_not_merging(need, place, "acquire");
  return plan(place, need, /*count_avoided=*/true);
}

std::vector<Transfer> Coherence::acquire_host(Range range) { return acquire(kHost, range); }

std::vector<Transfer> Coherence::acquire_host() { return acquire(kHost, Range{0, elements_}); }

std::vector<Transfer> Coherence::plan(int place, const IntervalSet& need, bool count_avoided) {
  Copy& destination = copy_at(place);
  IntervalSet missing = need;
  missing.subtract(destination.valid);
  if (count_avoided) counters_.avoided += (need.total() - missing.total()) * element_size_;

  std::vector<Transfer> transfers;
  if (place != kHost) {
    const IntervalSet from_host = missing.intersect(copies_.at(kHost).valid);
    for (const Range& range : from_host) transfers.push_back(Transfer{range, kHost, place});
    missing.subtract(from_host);
  }
  for (const Range& run : missing) cover_from_devices(run, place, transfers);
  for (const Transfer& transfer : transfers) count(transfer);
  // Stable: a ThroughHost pair keeps its order (to the host, then from it).
  std::stable_sort(transfers.begin(), transfers.end(),
                   [](const Transfer& a, const Transfer& b) { return a.range.begin < b.range.begin; });
  destination.valid.add(need);
  return transfers;
}

void Coherence::cover_from_devices(Range run, int place, std::vector<Transfer>& transfers) {
  std::int64_t position = run.begin;
  while (position < run.end) {
    // Greedy interval cover: the source whose current range from `position`
    // reaches furthest; optimal in the number of transfers for this run.
    int source = -1;
    std::int64_t reach = position;
    for (const auto& [other, copy] : copies_) {
      if (other == place || other == kHost) continue;
      const Range* held = copy.valid.find(position);
      if (held != nullptr && held->end > reach) {
        source = other;
        reach = held->end;
      }
    }
    if (source < 0) {
      throw Error(
          fmt::format("coherence: internal error: element {} has no current copy (directory: {}); please "
                      "report this with the calls that led to it",
                      position, *this));
    }
    const Range piece{position, std::min(reach, run.end)};
    if (place == kHost) {
      transfers.push_back(Transfer{piece, source, kHost});
    } else if (routing_ == Routing::ThroughHost) {
      transfers.push_back(Transfer{piece, source, kHost});
      transfers.push_back(Transfer{piece, kHost, place});
      copies_.at(kHost).valid.add(piece);
    } else {
      transfers.push_back(Transfer{piece, source, place});
    }
    position = piece.end;
  }
}

// -------------------------------------------------------------------- wrote

void Coherence::wrote(int place, Range range) { wrote(place, IntervalSet(range)); }

void Coherence::wrote(int place, const IntervalSet& ranges) {
  check_place(place, "wrote");
  check_inside(ranges, place, "wrote");
  check_not_merging(ranges, place, "wrote");
  if (ranges.empty()) return;
  copy_at(place).valid.add(ranges);
  for (auto& [other, copy] : copies_) {
    if (other != place) copy.valid.subtract(ranges);
  }
}

// ------------------------------------------------------------------ release

IntervalSet Coherence::only_at(int place) const {
  auto it = copies_.find(place);
  if (it == copies_.end()) return {};
  IntervalSet only = it->second.valid;
  for (const auto& [other, copy] : copies_) {
    if (other != place) only.subtract(copy.valid);
  }
  return only;
}

std::vector<Transfer> Coherence::release(int place) {
  check_place(place, "release");
  if (place == kHost) {
    throw Error("coherence: release of the host copy: it is the array's home and stays; release device places only");
  }
  auto it = copies_.find(place);
  if (it == copies_.end()) return {};
  if (!it->second.merging.empty()) {
    throw Error(
        fmt::format("coherence: release of place {} while its merge copy {} is not combined yet; call "
                    "end_merge() first",
                    place, it->second.merging));
  }
  const IntervalSet only = only_at(place);
  std::vector<Transfer> transfers;
  for (const Range& range : only) {
    transfers.push_back(Transfer{range, place, kHost});
    count(transfers.back());
  }
  copies_.at(kHost).valid.add(only);
  copies_.erase(it);
  return transfers;
}

// ------------------------------------------------------------------- merges

MergeStart Coherence::begin_merge(int place, Range range) { return begin_merge(place, IntervalSet(range)); }

MergeStart Coherence::begin_merge(int place, const IntervalSet& ranges) {
  check_place(place, "begin_merge");
  check_inside(ranges, place, "begin_merge");
  MergeStart start;
  Copy& copy = copy_at(place);
  if (ranges.empty()) return start;
  // Parts already being merged are current at the host (their other copies
  // went stale when their merge began), so the plan skips them.
  start.flush = plan(kHost, ranges, /*count_avoided=*/false);
  for (auto& [other, held] : copies_) {
    if (other != kHost) held.valid.subtract(ranges);
  }
  if (place != kHost) {
    start.initialize = ranges;
    start.initialize.subtract(copy.merging);
    copy.merging.add(ranges);
  }
  return start;
}

std::vector<Transfer> Coherence::end_merge() {
  std::vector<Transfer> transfers;
  for (auto& [place, copy] : copies_) {
    for (const Range& range : copy.merging) {
      transfers.push_back(Transfer{range, place, kHost});
      count(transfers.back());
    }
    copy.merging.clear();
  }
  return transfers;
}

std::ostream& operator<<(std::ostream& out, const Coherence& coherence) {
  out << "coherence of " << coherence.elements() << " elements (" << coherence.element_size() << " bytes each):";
  bool first = true;
  for (int place : coherence.places()) {
    out << (first ? " " : "; ") << (place == Coherence::kHost ? std::string("host") : fmt::format("place {}", place))
        << ' ' << coherence.valid(place);
    if (!coherence.merging(place).empty()) out << " merging " << coherence.merging(place);
    first = false;
  }
  return out;
}

// -------------------------------------------------------------- footprints

namespace {

// The elements from the first to the last that the per-dimension positions of
// `access` allow for rows [begin, end) of index(0).
Range element_hull(const ir::AccessFootprint& access, const Shape& array, std::int64_t begin, std::int64_t end,
                   const char* what) {
  if (!access.present) return Range{};
  if (static_cast<int>(access.dims.size()) != array.rank()) {
    throw Error(
        fmt::format("coherence: a {} footprint of rank {} does not fit an array of shape {} (rank {}); pass "
                    "the footprint of this array's parameter",
                    what, access.dims.size(), array.to_string(), array.rank()));
  }
  std::int64_t first = 0;
  std::int64_t last = 0;
  std::int64_t stride = 1;
  for (int dim = array.rank() - 1; dim >= 0; --dim) {
    const ir::Interval positions = ir::rows_touched(access, dim, begin, end, array[dim]);
    if (positions.empty()) return Range{};
    first += positions.begin * stride;
    last += (positions.end - 1) * stride;
    stride *= array[dim];
  }
  return Range{first, last + 1};
}

// True when array dimension `dim` (>= 1) surely takes every position of
// [0, extent) over the region's inner index extents, using index dimension
// `*used` (set here; -1 when the dimension is a constant).
bool covers_extent(const ir::DimFootprint& footprint, std::int64_t extent, const Shape& range, int& used) {
  used = -1;
  if (!footprint.is_affine() || footprint.lo != footprint.hi) return false;
  if (footprint.coeff[0] != 0) return false;
  if (footprint.is_invariant()) return extent == 1 && footprint.lo == 0;
  int index_dim = -1;
  for (int k = 1; k < 3; ++k) {
    if (footprint.coeff[static_cast<std::size_t>(k)] == 0) continue;
    if (index_dim >= 0) return false;  // two index dimensions: a diagonal band, not a full line
    index_dim = k;
  }
  const std::int64_t coeff = footprint.coeff[static_cast<std::size_t>(index_dim)];
  if (index_dim >= range.rank() || (coeff != 1 && coeff != -1)) return false;
  const std::int64_t count = range[index_dim];
  if (count <= 0) return false;
  // Positions coeff * x + lo for x in [0, count): a run of consecutive integers.
  const std::int64_t low = coeff == 1 ? footprint.lo : footprint.lo - (count - 1);
  const std::int64_t high = coeff == 1 ? footprint.lo + (count - 1) : footprint.lo;
  used = index_dim;
  return low <= 0 && high >= extent - 1;
}

bool surely_overwrites(const ir::AccessFootprint& writes, const Shape& array, const Shape& range) {
  if (!writes.present || !writes.unconditional || writes.atomic) return false;
  const ir::DimFootprint& rows = writes.dims.at(0);
  if (!rows.is_affine() || rows.lo != rows.hi) return false;
  if (std::llabs(rows.coeff[0]) != 1 || rows.coeff[1] != 0 || rows.coeff[2] != 0) return false;
  bool index_used[3] = {true, false, false};
  for (int dim = 1; dim < array.rank(); ++dim) {
    int used = -1;
    if (!covers_extent(writes.dims.at(static_cast<std::size_t>(dim)), array[dim], range, used)) return false;
    if (used < 0) continue;
    if (index_used[used]) return false;  // two dimensions on one index: a diagonal
    index_used[used] = true;
  }
  return true;
}

}  // namespace

ReadPlan reads_of(const ir::AccessFootprint& reads, const Shape& array, std::int64_t begin, std::int64_t end) {
  ReadPlan plan;
  plan.ranges = IntervalSet(element_hull(reads, array, begin, end, "read"));
  plan.whole_array = array.size() > 0 && plan.ranges.contains(Range{0, array.size()});
  return plan;
}

WritePlan writes_of(const ir::AccessFootprint& writes, const Shape& array, const Shape& range, std::int64_t begin,
                    std::int64_t end) {
  WritePlan plan;
  plan.written = IntervalSet(element_hull(writes, array, begin, end, "write"));
  plan.whole_array = array.size() > 0 && plan.written.contains(Range{0, array.size()});
  if (!surely_overwrites(writes, array, range)) plan.acquire_first = plan.written;
  return plan;
}

IntervalSet conflicting_writes(const std::vector<PlacedWrites>& pieces) {
  std::map<int, IntervalSet> by_place;
  for (const PlacedWrites& piece : pieces) by_place[piece.place].add(piece.written);
  IntervalSet conflicts;
  for (auto a = by_place.begin(); a != by_place.end(); ++a) {
    for (auto b = std::next(a); b != by_place.end(); ++b) conflicts.add(a->second.intersect(b->second));
  }
  return conflicts;
}

}  // namespace canopy::runtime
