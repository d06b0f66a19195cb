// The coherence directory (runtime/coherence.hpp) and its interval sets
// (runtime/interval_set.hpp): interval algebra by hand and against a bitmap;
// every rule of the directory on small cases (acquire from the host or the
// furthest-reaching device, avoided counts, wrote, host pulls, release,
// routing, merge copies, errors, printing); footprint plans from parsed
// kernels (exact overwrites versus read-modify-write); 2-D 5-point stencils
// iterated 100 times over two places with the exact halo traffic worked out
// by hand; and a property test of the directory against a per-element
// reference model, with integer data simulated through every planned copy.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <bitset>
#include <canopy/ir/analysis/footprint.hpp>
#include <canopy/ir/error.hpp>
#include <canopy/ir/parser.hpp>
#include <canopy/runtime/coherence.hpp>
#include <canopy/runtime/interval_set.hpp>
#include <cstdint>
#include <random>
#include <sstream>
#include <string>
#include <vector>

using canopy::Error;
using canopy::Shape;
using canopy::runtime::Coherence;
using canopy::runtime::CoherenceCounters;
using canopy::runtime::conflicting_writes;
using canopy::runtime::IntervalSet;
using canopy::runtime::MergeStart;
using canopy::runtime::PlacedWrites;
using canopy::runtime::Range;
using canopy::runtime::reads_of;
using canopy::runtime::Routing;
using canopy::runtime::Transfer;
using canopy::runtime::writes_of;
namespace ir = canopy::ir;

namespace {

template <typename T>
std::string text(const T& value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

// ============================================================ interval sets

constexpr int kUniverse = 48;
using Bits = std::bitset<kUniverse>;

Bits bits_of(const IntervalSet& set) {
  Bits bits;
  for (const Range& r : set) {
    for (std::int64_t i = r.begin; i < r.end; ++i) bits.set(static_cast<std::size_t>(i));
  }
  return bits;
}

Bits bits_of(Range r) {
  Bits bits;
  for (std::int64_t i = std::max<std::int64_t>(r.begin, 0); i < std::min<std::int64_t>(r.end, kUniverse); ++i) {
    bits.set(static_cast<std::size_t>(i));
  }
  return bits;
}

// Sorted, non-empty, neither overlapping nor touching.
bool canonical(const IntervalSet& set) {
  const auto& ranges = set.ranges();
  for (std::size_t k = 0; k < ranges.size(); ++k) {
    if (ranges[k].empty()) return false;
    if (k > 0 && ranges[k - 1].end >= ranges[k].begin) return false;
  }
  return true;
}

Range random_range(std::mt19937& rng) {
  std::uniform_int_distribution<int> position(0, kUniverse);
  int a = position(rng), b = position(rng);
  if (a > b) std::swap(a, b);
  return Range{a, b};
}

IntervalSet random_set(std::mt19937& rng) {
  IntervalSet set;
  const int ranges = std::uniform_int_distribution<int>(0, 5)(rng);
  for (int k = 0; k < ranges; ++k) {
    Range r = random_range(rng);
    r.end = std::min<std::int64_t>(r.end, r.begin + 9);
    set.add(r);
  }
  return set;
}

TEST_CASE("interval set: add joins overlapping and touching ranges, subtract splits") {
  IntervalSet set;
  CHECK(set.empty());
  CHECK(text(set) == "{}");
  set.add(Range{10, 20});
  set.add(Range{30, 40});
  CHECK(text(set) == "{[10,20) [30,40)}");
  set.add(Range{20, 25});  // touches [10,20)
  CHECK(text(set) == "{[10,25) [30,40)}");
  set.add(Range{24, 31});  // bridges both
  CHECK(text(set) == "{[10,40)}");
  set.add(Range{5, 5});  // empty: nothing
  set.add(Range{7, 3});  // empty: nothing
  CHECK(set.count() == 1);
  set.subtract(Range{15, 18});
  CHECK(text(set) == "{[10,15) [18,40)}");
  set.subtract(Range{0, 11});
  set.subtract(Range{39, 100});
  CHECK(text(set) == "{[11,15) [18,39)}");
  CHECK(set.total() == 4 + 21);
  CHECK(set.hull() == Range{11, 39});
  set.subtract(Range{14, 19});
  CHECK(set == IntervalSet{Range{11, 14}, Range{19, 39}});
  CHECK(fmt::format("{}", set) == "{[11,14) [19,39)}");
  CHECK(fmt::format("{}", Range{3, 4}) == "[3,4)");
  set.clear();
  CHECK(set.empty());
  CHECK(set.hull() == Range{});
}

TEST_CASE("interval set: queries") {
  const IntervalSet set{Range{30, 40}, Range{0, 10}, Range{10, 12}};
  CHECK(text(set) == "{[0,12) [30,40)}");
  CHECK(set.contains(Range{0, 12}));
  CHECK(set.contains(Range{31, 40}));
  CHECK_FALSE(set.contains(Range{11, 13}));
  CHECK_FALSE(set.contains(Range{12, 30}));
  CHECK(set.contains(Range{20, 20}));  // empty
  CHECK(set.contains(std::int64_t{11}));
  CHECK_FALSE(set.contains(std::int64_t{12}));
  CHECK(set.overlaps(Range{11, 30}));
  CHECK_FALSE(set.overlaps(Range{12, 30}));
  CHECK(set.missing(Range{5, 35}) == IntervalSet(Range{12, 30}));
  CHECK(set.missing(Range{-5, 50}) == IntervalSet{Range{-5, 0}, Range{12, 30}, Range{40, 50}});
  CHECK(set.intersect(Range{5, 35}) == IntervalSet{Range{5, 12}, Range{30, 35}});
  CHECK(set.intersect(IntervalSet{Range{11, 31}, Range{39, 45}}) ==
        IntervalSet{Range{11, 12}, Range{30, 31}, Range{39, 40}});
  REQUIRE(set.find(35) != nullptr);
  CHECK(*set.find(35) == Range{30, 40});
  CHECK(set.find(20) == nullptr);
  CHECK(set.find(40) == nullptr);
}

TEST_CASE("interval set: every operation agrees with a bitmap (property)") {
  std::mt19937 rng(20240601);
  for (int trial = 0; trial < 4000; ++trial) {
    const IntervalSet a = random_set(rng);
    const IntervalSet b = random_set(rng);
    const Range r = random_range(rng);
    REQUIRE(canonical(a));
    const Bits A = bits_of(a), B = bits_of(b), R = bits_of(r);

    IntervalSet sum = a;
    sum.add(b);
    CHECK(canonical(sum));
    CHECK(bits_of(sum) == (A | B));
    IntervalSet with_range = a;
    with_range.add(r);
    CHECK(canonical(with_range));
    CHECK(bits_of(with_range) == (A | R));

    IntervalSet difference = a;
    difference.subtract(b);
    CHECK(canonical(difference));
    CHECK(bits_of(difference) == (A & ~B));
    IntervalSet less_range = a;
    less_range.subtract(r);
    CHECK(canonical(less_range));
    CHECK(bits_of(less_range) == (A & ~R));

    CHECK(canonical(a.intersect(b)));
    CHECK(bits_of(a.intersect(b)) == (A & B));
    CHECK(bits_of(a.intersect(r)) == (A & R));
    CHECK(canonical(a.missing(r)));
    CHECK(bits_of(a.missing(r)) == (R & ~A));

    CHECK(a.contains(r) == ((R & ~A).none()));
    CHECK(a.overlaps(r) == (A & R).any());
    CHECK(a.overlaps(b) == (A & B).any());
    CHECK(a.total() == static_cast<std::int64_t>(A.count()));
    CHECK((a == b) == (A == B));
    const std::int64_t position = std::uniform_int_distribution<int>(0, kUniverse - 1)(rng);
    CHECK(a.contains(position) == A.test(static_cast<std::size_t>(position)));
    const Range* holder = a.find(position);
    CHECK((holder != nullptr) == A.test(static_cast<std::size_t>(position)));
    if (holder != nullptr) CHECK(std::find(a.begin(), a.end(), *holder) != a.end());
  }
}

// ====================================================== directory, by hand

TEST_CASE("coherence: a new directory holds everything at the host; acquire copies only what is missing") {
  Coherence dir(100, 8);
  CHECK(dir.elements() == 100);
  CHECK(dir.element_size() == 8);
  CHECK(dir.routing() == Routing::Direct);
  CHECK(dir.places() == std::vector<int>{0});
  CHECK(dir.valid(0) == IntervalSet(Range{0, 100}));
  CHECK(dir.valid(3).empty());
  CHECK_FALSE(dir.has_copy(1));

  CHECK(dir.acquire(1, Range{10, 30}) == std::vector<Transfer>{{Range{10, 30}, 0, 1}});
  CHECK(dir.has_copy(1));
  CHECK(dir.places() == std::vector<int>{0, 1});
  CHECK(dir.valid(1) == IntervalSet(Range{10, 30}));
  CHECK(dir.counters() == CoherenceCounters{20 * 8, 0, 0, 0});

  // [20,30) is there already: only [30,40) moves, 10 elements avoided.
  CHECK(dir.acquire(1, Range{20, 40}) == std::vector<Transfer>{{Range{30, 40}, 0, 1}});
  CHECK(dir.counters() == CoherenceCounters{30 * 8, 0, 0, 10 * 8});
  CHECK(dir.acquire(1, Range{12, 18}).empty());
  CHECK(dir.counters().avoided == 16 * 8);
  // The host holds everything: a host read moves nothing.
  CHECK(dir.acquire_host().empty());
  CHECK(dir.counters().avoided == 116 * 8);
  dir.reset_counters();
  CHECK(dir.counters() == CoherenceCounters{});
}

TEST_CASE("coherence: wrote makes a range current at one place and stale everywhere else") {
  Coherence dir(100);
  dir.acquire(1, Range{0, 60});
  dir.acquire(2, Range{40, 100});
  dir.wrote(1, Range{10, 50});
  CHECK(dir.valid(0) == IntervalSet{Range{0, 10}, Range{50, 100}});
  CHECK(dir.valid(1) == IntervalSet(Range{0, 60}));
  CHECK(dir.valid(2) == IntervalSet(Range{50, 100}));
  // A place may write what it never held (an exact overwrite).
  dir.wrote(3, Range{90, 95});
  CHECK(dir.valid(3) == IntervalSet(Range{90, 95}));
  CHECK(dir.valid(2) == IntervalSet{Range{50, 90}, Range{95, 100}});
  CHECK(dir.valid(0) == IntervalSet{Range{0, 10}, Range{50, 90}, Range{95, 100}});
  dir.wrote(0, IntervalSet{Range{0, 5}, Range{55, 56}});
  CHECK(dir.valid(1) == IntervalSet{Range{5, 55}, Range{56, 60}});
  CHECK(dir.valid(2) == IntervalSet{Range{50, 55}, Range{56, 90}, Range{95, 100}});

  // a.host(): only the stale ranges come back, each from a place holding it.
  const std::vector<Transfer> pull = dir.acquire_host();
  CHECK(pull == std::vector<Transfer>{{Range{10, 50}, 1, 0}, {Range{90, 95}, 3, 0}});
  CHECK(dir.valid(0) == IntervalSet(Range{0, 100}));
  CHECK(dir.counters().device_to_host == 45);
  CHECK(dir.counters().avoided == 55);
  CHECK(text(dir) ==
        "coherence of 100 elements (1 bytes each): host {[0,100)}; place 1 {[5,55) [56,60)}; place 2 {[50,55) "
        "[56,90) [95,100)}; place 3 {[90,95)}");
}

TEST_CASE("coherence: the host is the preferred source, then the place reaching furthest (fewest transfers)") {
  Coherence dir(100);
  dir.wrote(2, Range{0, 100});  // only place 2 holds anything current
  CHECK(dir.valid(0).empty());
  CHECK(dir.acquire(1, Range{0, 50}) == std::vector<Transfer>{{Range{0, 50}, 2, 1}});
  // Places 1 and 2 both hold [0,50): place 2 reaches further, one transfer.
  CHECK(dir.acquire(3, Range{0, 100}) == std::vector<Transfer>{{Range{0, 100}, 2, 3}});
  // The host holds [0,30) now: it serves that part, a device the rest.
  dir.acquire_host(Range{0, 30});
  CHECK(dir.acquire(4, Range{0, 100}) == std::vector<Transfer>{{Range{0, 30}, 0, 4}, {Range{30, 100}, 2, 4}});
  CHECK(dir.counters() == CoherenceCounters{30, 30, 50 + 100 + 70, 0});

  // Greedy reach: place 1 holds [0,40), place 2 [40,80), place 3 [40,100).
  // From 40, place 3 reaches further than place 2: two transfers, not three.
  Coherence chain(100);
  chain.wrote(1, Range{0, 40});
  chain.wrote(2, Range{40, 80});
  chain.wrote(3, Range{80, 100});
  chain.acquire(3, Range{40, 80});
  CHECK(chain.valid(3) == IntervalSet(Range{40, 100}));
  CHECK(chain.acquire(5, Range{0, 100}) == std::vector<Transfer>{{Range{0, 40}, 1, 5}, {Range{40, 100}, 3, 5}});
  // Equal reach: the lowest place.
  Coherence tie(10);
  tie.wrote(2, Range{0, 10});
  tie.acquire(1, Range{0, 10});
  CHECK(tie.acquire(4, Range{0, 10}) == std::vector<Transfer>{{Range{0, 10}, 1, 4}});
}

TEST_CASE("coherence: routing through the host stages device data in the host copy") {
  Coherence dir(100, 4, Routing::ThroughHost);
  dir.wrote(2, Range{0, 100});
  dir.acquire_host(Range{0, 20});
  const std::vector<Transfer> plan = dir.acquire(1, Range{10, 50});
  CHECK(plan == std::vector<Transfer>{{Range{10, 20}, 0, 1}, {Range{20, 50}, 2, 0}, {Range{20, 50}, 0, 1}});
  CHECK(dir.valid(0) == IntervalSet(Range{0, 50}));
  CHECK(dir.valid(1) == IntervalSet(Range{10, 50}));
  CHECK(dir.counters() == CoherenceCounters{(10 + 30) * 4, (20 + 30) * 4, 0, 0});
  // The host itself never stages.
  CHECK(dir.acquire_host(Range{40, 60}) == std::vector<Transfer>{{Range{50, 60}, 2, 0}});
}

TEST_CASE("coherence: release flushes to the host only what the copy alone holds") {
  Coherence dir(100, 2);
  dir.acquire(1, Range{0, 100});
  dir.wrote(1, Range{0, 40});
  dir.acquire(2, Range{20, 30});  // place 2 holds [20,30) too
  dir.wrote(1, Range{90, 95});
  const std::vector<Transfer> flush = dir.release(1);
  CHECK(flush == std::vector<Transfer>{{Range{0, 20}, 1, 0}, {Range{30, 40}, 1, 0}, {Range{90, 95}, 1, 0}});
  CHECK_FALSE(dir.has_copy(1));
  CHECK(dir.places() == std::vector<int>{0, 2});
  CHECK(dir.valid(0) == IntervalSet{Range{0, 20}, Range{30, 100}});
  CHECK(dir.counters().device_to_host == (20 + 10 + 5) * 2);
  CHECK(dir.release(1).empty());  // no copy: nothing
  CHECK(dir.release(7).empty());
  CHECK(dir.release(2) == std::vector<Transfer>{{Range{20, 30}, 2, 0}});
  CHECK(dir.valid(0) == IntervalSet(Range{0, 100}));
}

TEST_CASE("coherence: errors name the input and the fix") {
  Coherence dir(100);
  CHECK_THROWS_WITH_AS(dir.acquire(1, Range{90, 101}),
                       "coherence: acquire of elements {[90,101)} at place 1 is outside the array's 100 elements; "
                       "pass ranges within [0,100)",
                       Error);
  CHECK_THROWS_AS(dir.acquire(1, Range{-1, 3}), Error);
  CHECK_THROWS_AS(dir.wrote(0, Range{0, 200}), Error);
  CHECK_THROWS_WITH_AS(dir.acquire(-2, Range{0, 1}),
                       "coherence: acquire at place -2: places are 0 (the host) or positive device numbers", Error);
  CHECK_THROWS_WITH_AS(
      dir.release(0),
      "coherence: release of the host copy: it is the array's home and stays; release device places only", Error);
  CHECK_THROWS_AS(Coherence(-1), Error);
  CHECK_THROWS_AS(Coherence(10, 0), Error);
  CHECK(dir.places() == std::vector<int>{0});  // nothing changed by the refused calls

  Coherence empty(0);
  CHECK(empty.valid(0).empty());
  CHECK(empty.acquire_host().empty());
  CHECK(empty.acquire(1, Range{0, 0}).empty());
}

// ================================================================= merges

TEST_CASE("coherence: merge copies start at the identity and are combined into the host at the pause") {
  // A histogram of 8 bins, merge(sum), filled by the host and two devices.
  Coherence dir(8, 4);
  dir.acquire(1, Range{0, 8});
  dir.wrote(1, Range{4, 8});  // place 1 holds the only current [4,8)

  const MergeStart at1 = dir.begin_merge(1, Range{0, 8});
  CHECK(at1.flush == std::vector<Transfer>{{Range{4, 8}, 1, 0}});  // home first
  CHECK(at1.initialize == IntervalSet(Range{0, 8}));
  const MergeStart at2 = dir.begin_merge(2, Range{0, 8});
  CHECK(at2.flush.empty());
  CHECK(at2.initialize == IntervalSet(Range{0, 8}));
  const MergeStart at0 = dir.begin_merge(0, Range{0, 8});
  CHECK(at0.flush.empty());
  CHECK(at0.initialize.empty());  // the host combines into its own copy
  // Place 1 again, over a wider part: only the new part starts at the identity.
  Coherence wide(16);
  wide.begin_merge(1, Range{0, 8});
  CHECK(wide.begin_merge(1, Range{4, 12}).initialize == IntervalSet(Range{8, 12}));
  CHECK(wide.merging(1) == IntervalSet(Range{0, 12}));

  CHECK(dir.merging(1) == IntervalSet(Range{0, 8}));
  CHECK(dir.merging(0).empty());
  CHECK(dir.merging() == IntervalSet(Range{0, 8}));
  CHECK(dir.valid(0) == IntervalSet(Range{0, 8}));
  CHECK(dir.valid(1).empty());
  CHECK(text(dir) ==
        "coherence of 8 elements (4 bytes each): host {[0,8)}; place 1 {} merging {[0,8)}; place 2 {} merging "
        "{[0,8)}");

  // While merging, reads and writes of those elements are refused.
  CHECK_THROWS_WITH_AS(dir.acquire(3, Range{6, 10 - 2}),
                       "coherence: acquire of elements {[6,8)} at place 3 overlaps elements {[6,8)} whose merge "
                       "copies are not combined yet; call end_merge() (at the pause) before reading or writing them",
                       Error);
  CHECK_THROWS_AS(dir.acquire_host(), Error);
  CHECK_THROWS_AS(dir.wrote(2, Range{0, 1}), Error);
  CHECK_THROWS_AS(dir.release(1), Error);

  // Simulate: host, place 1 and place 2 each count some items.
  std::vector<int> host = {5, 5, 5, 5, 7, 7, 7, 7};  // after the flush of [4,8) from place 1
  std::vector<int> one(8, 0), two(8, 0);             // initialised to the identity
  const int items[] = {0, 3, 3, 7, 1, 1, 1, 6, 2, 0, 5, 4};
  for (int k = 0; k < 12; ++k) {
    std::vector<int>& copy = k % 3 == 0 ? host : (k % 3 == 1 ? one : two);
    copy[static_cast<std::size_t>(items[k])] += 1;
  }
  const std::vector<Transfer> combine = dir.end_merge();
  CHECK(combine == std::vector<Transfer>{{Range{0, 8}, 1, 0}, {Range{0, 8}, 2, 0}});
  for (const Transfer& t : combine) {
    const std::vector<int>& from = t.from == 1 ? one : two;
    for (std::int64_t i = t.range.begin; i < t.range.end; ++i) host[static_cast<std::size_t>(i)] += from[i];
  }
  CHECK(host == std::vector<int>{5 + 2, 5 + 3, 5 + 1, 5 + 2, 7 + 1, 7 + 1, 7 + 1, 7 + 1});
  CHECK(dir.merging().empty());
  CHECK(dir.valid(0) == IntervalSet(Range{0, 8}));
  CHECK(dir.counters().device_to_host == (4 + 8 + 8) * 4);
  CHECK(dir.acquire(1, Range{0, 8}) == std::vector<Transfer>{{Range{0, 8}, 0, 1}});
  CHECK(dir.end_merge().empty());
}

// ==================================================== footprints to ranges

ir::Footprint footprint(const std::string& kernel_text) { return ir::footprint_of(ir::parse(kernel_text)); }

TEST_CASE("coherence: a histogram's scatter writes the whole array: split over places, it merges") {
  const ir::Footprint histogram = footprint(
      "kernel h(in i64[1] bins, inout i64[1] hist) dims 1 {\n"
      "  atomic hist[bins[index(0)]] += 1:i64\n"
      "}\n");
  const Shape bins(1000), hist(16);
  std::vector<PlacedWrites> placed;
  Coherence dir(16, 8);
  const std::int64_t bounds[] = {0, 400, 1000};
  for (int piece = 0; piece < 2; ++piece) {
    const int place = piece + 1;
    const auto reads = reads_of(histogram.arrays[0].reads, bins, bounds[piece], bounds[piece + 1]);
    CHECK(reads.ranges == IntervalSet(Range{bounds[piece], bounds[piece + 1]}));
    const auto writes = writes_of(histogram.arrays[1].writes, hist, bins, bounds[piece], bounds[piece + 1]);
    CHECK(writes.whole_array);
    CHECK(writes.acquire_first == IntervalSet(Range{0, 16}));
    placed.push_back(PlacedWrites{place, writes.written});
    const MergeStart start = dir.begin_merge(place, writes.written);
    CHECK(start.flush.empty());
    CHECK(start.initialize == IntervalSet(Range{0, 16}));
  }
  // Without the merge operator the two pieces would conflict everywhere.
  CHECK(conflicting_writes(placed) == IntervalSet(Range{0, 16}));
  CHECK(dir.end_merge() == std::vector<Transfer>{{Range{0, 16}, 1, 0}, {Range{0, 16}, 2, 0}});
  CHECK(dir.counters() == CoherenceCounters{0, 2 * 16 * 8, 0, 0});  // begin_merge avoids nothing: it needs no copy
}

TEST_CASE("coherence: reads_of gives the rows a piece reads with its halo, or everything for a gather") {
  const ir::Footprint stencil = footprint(
      "kernel s(out f64[2] next, in f64[2] grid) dims 2 {\n"
      "  next[(index(0) + 1:i64), (index(1) + 1:i64)] = ((grid[index(0), (index(1) + 1:i64)] + grid[(index(0) + "
      "2:i64), (index(1) + 1:i64)]) + (grid[(index(0) + 1:i64), index(1)] + grid[(index(0) + 1:i64), (index(1) + "
      "2:i64)]))\n"
      "}\n");
  const Shape grid(18, 10);
  // Piece over index rows [8,16): reads grid rows [8,18).
  auto plan = reads_of(stencil.arrays[1].reads, grid, 8, 16);
  CHECK(plan.ranges == IntervalSet(Range{80, 180}));
  CHECK(plan.whole_array == false);
  plan = reads_of(stencil.arrays[1].reads, grid, 0, 8);
  CHECK(plan.ranges == IntervalSet(Range{0, 100}));
  CHECK(reads_of(stencil.arrays[1].reads, grid, 0, 16).whole_array);
  CHECK(reads_of(stencil.arrays[1].reads, grid, 4, 4).ranges.empty());  // empty piece
  CHECK(reads_of(stencil.arrays[0].reads, grid, 0, 8).ranges.empty());  // next is not read

  // A column of a 3-D array: the hull from the first to the last element.
  const ir::Footprint column = footprint(
      "kernel c(out f64[1] a, in f64[3] b) dims 1 {\n"
      "  a[index(0)] = b[index(0), 2:i64, 1:i64]\n"
      "}\n");
  CHECK(reads_of(column.arrays[1].reads, Shape(10, 4, 3), 2, 5).ranges ==
        IntervalSet(Range{2 * 12 + 2 * 3 + 1, 4 * 12 + 2 * 3 + 1 + 1}));

  // A gather reads the whole array, whatever the piece.
  const ir::Footprint gather = footprint(
      "kernel g(out f64[1] a, in f64[1] b, in i64[1] idx) dims 1 {\n"
      "  a[index(0)] = b[idx[index(0)]]\n"
      "}\n");
  plan = reads_of(gather.arrays[1].reads, Shape(50), 10, 20);
  CHECK(plan.ranges == IntervalSet(Range{0, 50}));
  CHECK(plan.whole_array);
  CHECK(reads_of(gather.arrays[2].reads, Shape(50), 10, 20).ranges == IntervalSet(Range{10, 20}));
  CHECK_THROWS_AS(reads_of(gather.arrays[1].reads, Shape(5, 10), 0, 1), Error);
}

TEST_CASE("coherence: writes_of overwrites exactly only for unconditional one-to-one writes of whole rows") {
  const Shape grid(18, 10);
  struct Case {
    const char* body;
    const char* params;
    int dims;
    Shape range;
    std::int64_t begin, end;
    Range written;
    bool overwrites;
  };
  const Case cases[] = {
      // whole rows, index(1) over every column: exact
      {"a[index(0), index(1)] = 1:f64", "out f64[2] a", 2, Shape(18, 10), 3, 7, Range{30, 70}, true},
      {"a[(index(0) + 1:i64), index(1)] = 1:f64", "out f64[2] a", 2, Shape(16, 10), 0, 8, Range{10, 90}, true},
      // reversed rows and reversed columns: still one-to-one
      {"a[(17:i64 - index(0)), (9:i64 - index(1))] = 1:f64", "out f64[2] a", 2, Shape(18, 10), 0, 2, Range{160, 180},
       true},
      // interior columns only: read-modify-write of the rows (a dimension on
      // index(1) may take its whole extent, as far as rows_touched says)
      {"a[(index(0) + 1:i64), (index(1) + 1:i64)] = 1:f64", "out f64[2] a", 2, Shape(16, 8), 8, 16, Range{90, 170},
       false},
      // fewer columns in the range than in the array: some are left unwritten
      {"a[index(0), index(1)] = 1:f64", "out f64[2] a", 2, Shape(18, 9), 0, 2, Range{0, 20}, false},
      // conditional
      {"if (index(1) > 2:i64) {\n    a[index(0), index(1)] = 1:f64\n  }", "out f64[2] a", 2, Shape(18, 10), 0, 2,
       Range{0, 20}, false},
      // atomic
      {"atomic a[index(0), index(1)] += 1:f64", "inout f64[2] a", 2, Shape(18, 10), 0, 2, Range{0, 20}, false},
      // two offsets in dim 0
      {"a[index(0), index(1)] = 1:f64\n  a[(index(0) + 2:i64), index(1)] = 2:f64", "out f64[2] a", 2, Shape(16, 10), 0,
       2, Range{0, 40}, false},
      // one column of each row
      {"a[index(0), 0:i64] = 1:f64", "out f64[2] a", 1, Shape(18), 2, 4, Range{20, 31}, false},
  };
  for (const Case& c : cases) {
    const std::string kernel = fmt::format("kernel w({}) dims {} {{\n  {}\n}}\n", c.params, c.dims, c.body);
    CAPTURE(kernel);
    const ir::Footprint fp = footprint(kernel);
    const auto plan = writes_of(fp.arrays[0].writes, grid, c.range, c.begin, c.end);
    CHECK(plan.written == IntervalSet(c.written));
    CHECK(plan.overwrites() == c.overwrites);
    CHECK(plan.acquire_first == (c.overwrites ? IntervalSet() : IntervalSet(c.written)));
  }

  // 1-D: b[i] is exact, b[2*i] strided, b[99-i] exact, a scatter the whole array.
  const ir::Footprint strided = footprint(
      "kernel s(out f64[1] b, out f64[1] c, out f64[1] d, in i64[1] idx) dims 1 {\n"
      "  b[index(0)] = 1:f64\n"
      "  c[(2:i64 * index(0))] = 1:f64\n"
      "  d[idx[index(0)]] = 1:f64\n"
      "}\n");
  CHECK(writes_of(strided.arrays[0].writes, Shape(100), Shape(50), 10, 20).overwrites());
  const auto c_plan = writes_of(strided.arrays[1].writes, Shape(100), Shape(50), 10, 20);
  CHECK(c_plan.written == IntervalSet(Range{20, 39}));
  CHECK(c_plan.acquire_first == IntervalSet(Range{20, 39}));
  const auto d_plan = writes_of(strided.arrays[2].writes, Shape(100), Shape(50), 10, 20);
  CHECK(d_plan.whole_array);
  CHECK(d_plan.acquire_first == IntervalSet(Range{0, 100}));
  CHECK(writes_of(strided.arrays[3].writes, Shape(100), Shape(50), 10, 20).written.empty());

  // A diagonal of a 3-D array (two dimensions on one index) is not whole rows.
  const ir::Footprint diagonal = footprint(
      "kernel d(out f64[3] v) dims 2 {\n"
      "  v[index(0), index(1), index(1)] = 1:f64\n"
      "}\n");
  CHECK_FALSE(writes_of(diagonal.arrays[0].writes, Shape(4, 3, 3), Shape(4, 3), 0, 2).overwrites());
  const ir::Footprint cube = footprint(
      "kernel d(out f64[3] v) dims 3 {\n"
      "  v[index(0), index(2), index(1)] = 1:f64\n"
      "}\n");
  CHECK(writes_of(cube.arrays[0].writes, Shape(4, 3, 5), Shape(4, 5, 3), 1, 3).overwrites());
  CHECK(writes_of(cube.arrays[0].writes, Shape(4, 3, 5), Shape(4, 5, 3), 1, 3).written == IntervalSet(Range{15, 45}));
}

TEST_CASE("coherence: conflicting_writes finds elements that pieces at different places both write") {
  CHECK(conflicting_writes({{0, IntervalSet(Range{0, 50})}, {1, IntervalSet(Range{50, 100})}}).empty());
  CHECK(conflicting_writes({{0, IntervalSet(Range{0, 51})},
                            {0, IntervalSet(Range{40, 60})},
                            {1, IntervalSet(Range{49, 100})},
                            {2, IntervalSet(Range{95, 97})}}) == IntervalSet{Range{49, 60}, Range{95, 97}});
  CHECK(conflicting_writes({}).empty());
}

// ================================================================ stencils

// A Jacobi sweep of a 5-point stencil over an 18 x 10 grid, arrays A and B
// swapping roles each iteration, the index rows split over two places. Each
// piece acquires what reads_of and writes_of say, then records its writes.
class Sweep {
 public:
  Sweep(const std::string& kernel_text, Shape range, int first, int second, Routing routing)
      : fp_(footprint(kernel_text)),
        range_(range),
        places_{first, second},
        a_(kGrid.size(), 8, routing),
        b_(kGrid.size(), 8, routing) {}

  // One iteration; returns the bytes it planned.
  CoherenceCounters iterate(int iteration) {
    Coherence& in = iteration % 2 == 1 ? a_ : b_;
    Coherence& out = iteration % 2 == 1 ? b_ : a_;
    const CoherenceCounters before = totals();
    const std::int64_t half = range_[0] / 2;
    const std::int64_t bounds[3] = {0, half, range_[0]};
    canopy::runtime::WritePlan writes[2];
    for (int piece = 0; piece < 2; ++piece) {
      const int place = places_[piece];
      in.acquire(place, reads_of(fp_.arrays[1].reads, kGrid, bounds[piece], bounds[piece + 1]).ranges);
      writes[piece] = writes_of(fp_.arrays[0].writes, kGrid, range_, bounds[piece], bounds[piece + 1]);
      out.acquire(place, writes[piece].acquire_first);
    }
    REQUIRE(conflicting_writes({{places_[0], writes[0].written}, {places_[1], writes[1].written}}).empty());
    for (int piece = 0; piece < 2; ++piece) out.wrote(places_[piece], writes[piece].written);
    CoherenceCounters delta = totals();
    delta.host_to_device -= before.host_to_device;
    delta.device_to_host -= before.device_to_host;
    delta.device_to_device -= before.device_to_device;
    delta.avoided -= before.avoided;
    return delta;
  }

  CoherenceCounters totals() const {
    CoherenceCounters sum = a_.counters();
    sum += b_.counters();
    return sum;
  }
  Coherence& a() { return a_; }

  static inline const Shape kGrid{18, 10};

 private:
  ir::Footprint fp_;
  Shape range_;
  int places_[2];
  Coherence a_, b_;
};

// Writes every column of rows [1,17): exact overwrites. Column neighbours are
// read through select so that the boundary columns stay in bounds.
const char* const kWholeRows =
    "kernel jacobi(out f64[2] next, in f64[2] grid) dims 2 {\n"
    "  next[(index(0) + 1:i64), index(1)] = ((grid[index(0), index(1)] + grid[(index(0) + 2:i64), index(1)]) + "
    "(select((index(1) > 0:i64), grid[(index(0) + 1:i64), (index(1) - 1:i64)], 0:f64) + select((index(1) < 9:i64), "
    "grid[(index(0) + 1:i64), (index(1) + 1:i64)], 0:f64)))\n"
    "}\n";

// Writes the interior points only: read-modify-write of each piece's hull.
const char* const kInterior =
    "kernel jacobi(out f64[2] next, in f64[2] grid) dims 2 {\n"
    "  next[(index(0) + 1:i64), (index(1) + 1:i64)] = ((grid[index(0), (index(1) + 1:i64)] + grid[(index(0) + "
    "2:i64), (index(1) + 1:i64)]) + (grid[(index(0) + 1:i64), index(1)] + grid[(index(0) + 1:i64), (index(1) + "
    "2:i64)]))\n"
    "}\n";

CoherenceCounters bytes(std::int64_t h2d, std::int64_t d2h, std::int64_t d2d, std::int64_t avoided) {
  return CoherenceCounters{h2d * 8, d2h * 8, d2d * 8, avoided * 8};
}

TEST_CASE("coherence: a stencil over the host and a device moves one halo row each way per iteration") {
  // Index rows [0,8) on the host write grid rows [1,9) and read [0,10); index
  // rows [8,16) on device 1 write rows [9,17) and read [8,18). Rows are 10
  // elements (80 bytes).
  //  1: the device copies in its 10 rows of A (100 elements); the host reads in place.
  //  2: the host pulls B's row 9 (written by the device); the device takes B's
  //     rows 8 and 17 (17 is the boundary row it has not held yet).
  //  3+: one row each way: the host pulls row 9, the device takes row 8.
  // Avoided: the host's 10 read rows are current except the halo row; so are
  // the device's (but for 2 rows in iteration 2).
  Sweep sweep(kWholeRows, Shape(16, 10), 0, 1, Routing::Direct);
  CHECK(sweep.iterate(1) == bytes(100, 0, 0, 100));
  CHECK(sweep.iterate(2) == bytes(20, 10, 0, 90 + 80));
  for (int iteration = 3; iteration <= 100; ++iteration) {
    CAPTURE(iteration);
    REQUIRE(sweep.iterate(iteration) == bytes(10, 10, 0, 90 + 90));
  }
  CHECK(sweep.totals() == bytes(100 + 20 + 98 * 10, 10 + 98 * 10, 0, 100 + 170 + 98 * 180));
  // The result (A after an even iteration): pull back the device's 8 rows.
  CHECK(sweep.a().acquire_host() == std::vector<Transfer>{{Range{90, 170}, 1, 0}});
}

TEST_CASE("coherence: the interior stencil acquires the rows it writes first (read-modify-write)") {
  // Index (16 x 8) writes the interior points only, so each piece's written
  // rows (host [1,9), device [9,17)) are acquired before it runs: the
  // boundary columns it leaves unwritten must stay right in the copy it leaves.
  //  1: the device copies in A's rows [8,18) and B's rows [9,17) (100 + 80);
  //     the host has all of it (100 + 80 avoided).
  //  2: the host pulls B's row 9; the device takes B's rows 8 and 17; the
  //     written rows are current where they are written (avoided 90 + 80 and
  //     80 + 80).
  //  3+: one row each way, as for the exact stencil; avoided 90 + 80 per piece.
  Sweep sweep(kInterior, Shape(16, 8), 0, 1, Routing::Direct);
  CHECK(sweep.iterate(1) == bytes(180, 0, 0, 180));
  CHECK(sweep.iterate(2) == bytes(20, 10, 0, 90 + 80 + 80 + 80));
  for (int iteration = 3; iteration <= 100; ++iteration) {
    CAPTURE(iteration);
    REQUIRE(sweep.iterate(iteration) == bytes(10, 10, 0, 90 + 80 + 90 + 80));
  }
  CHECK(sweep.totals() == bytes(180 + 20 + 98 * 10, 10 + 98 * 10, 0, 180 + 330 + 98 * 340));
  CHECK(sweep.a().acquire_host() == std::vector<Transfer>{{Range{90, 170}, 1, 0}});
}

TEST_CASE("coherence: a stencil over two devices trades halo rows directly, or through the host") {
  // Device 1 takes index rows [0,8), device 2 [8,16).
  //  1: each copies in its 10 rows of A.
  //  2: device 1 takes B's row 0 from the host and row 9 from device 2; device
  //     2 row 8 from device 1 and row 17 from the host.
  //  3+: row 9 from device 2 to 1, row 8 from device 1 to 2.
  Sweep direct(kWholeRows, Shape(16, 10), 1, 2, Routing::Direct);
  CHECK(direct.iterate(1) == bytes(200, 0, 0, 0));
  CHECK(direct.iterate(2) == bytes(20, 0, 20, 80 + 80));
  for (int iteration = 3; iteration <= 100; ++iteration) {
    CAPTURE(iteration);
    REQUIRE(direct.iterate(iteration) == bytes(0, 0, 20, 90 + 90));
  }
  CHECK(direct.totals() == bytes(220, 0, 20 + 98 * 20, 160 + 98 * 180));
  CHECK(direct.a().acquire_host() == std::vector<Transfer>{{Range{10, 90}, 1, 0}, {Range{90, 170}, 2, 0}});

  // Through the host: each device-to-device row is a row down and a row up.
  Sweep staged(kWholeRows, Shape(16, 10), 1, 2, Routing::ThroughHost);
  CHECK(staged.iterate(1) == bytes(200, 0, 0, 0));
  CHECK(staged.iterate(2) == bytes(40, 20, 0, 80 + 80));
  for (int iteration = 3; iteration <= 100; ++iteration) {
    CAPTURE(iteration);
    REQUIRE(staged.iterate(iteration) == bytes(20, 20, 0, 90 + 90));
  }
  CHECK(staged.totals() == bytes(200 + 40 + 98 * 20, 20 + 98 * 20, 0, 160 + 98 * 180));
}

// ===================================================== the property test

constexpr std::int64_t kGarbage = -1;  // what a device copy holds before anything is copied in

// The directory under test beside a reference model: per element, a bitmap
// of the places that hold the current value and that value; and integer data
// per place, moved only by the directory's plans.
class Simulation {
 public:
  Simulation(std::mt19937& rng, int places, std::int64_t rows, std::int64_t cols, Routing routing)
      : rng_(rng),
        places_(places),
        rows_(rows),
        cols_(cols),
        n_(rows * cols),
        dir_(n_, 1, routing),
        holders_(static_cast<std::size_t>(n_), 1u),
        current_(static_cast<std::size_t>(n_)),
        present_(static_cast<std::size_t>(places), false),
        pending_(static_cast<std::size_t>(n_), 0u),
        pending_add_(static_cast<std::size_t>(n_), 0),
        merge_touched_(static_cast<std::size_t>(n_), false),
        host_merged_(static_cast<std::size_t>(n_), 0),
        data_(static_cast<std::size_t>(places), std::vector<std::int64_t>(static_cast<std::size_t>(n_), kGarbage)) {
    present_[0] = true;
    for (std::int64_t i = 0; i < n_; ++i) current_[at(i)] = data_[0][at(i)] = i + 1;
  }

  void step() {
    const int kind = pick(0, 99);
    if (kind < 55) {
      region();
    } else if (kind < 75) {
      host_read();
    } else if (kind < 87) {
      release(pick(1, places_ - 1));
    } else {
      merge();
    }
    check_state();
  }

 private:
  static std::size_t at(std::int64_t i) { return static_cast<std::size_t>(i); }
  int pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  std::int64_t pick64(std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng_);
  }
  Range random_range() {
    std::int64_t a = pick64(0, n_), b = pick64(0, n_);
    if (a > b) std::swap(a, b);
    return Range{a, b};
  }
  bool holds(std::int64_t i, int place) const { return (holders_[at(i)] >> place) & 1u; }

  void apply(const std::vector<Transfer>& transfers) {
    for (const Transfer& t : transfers) {
      REQUIRE(!t.range.empty());
      REQUIRE(t.from != t.to);
      for (std::int64_t i = t.range.begin; i < t.range.end; ++i) {
        data_[static_cast<std::size_t>(t.to)][at(i)] = data_[static_cast<std::size_t>(t.from)][at(i)];
      }
    }
  }

  // Acquire `need` at `place`; checks the plan against the model, performs it,
  // updates the model and checks that every needed element reads current.
  void acquire(int place, const IntervalSet& need) {
    const std::vector<Transfer> plan = dir_.acquire(place, need);
    std::vector<int> arrivals(static_cast<std::size_t>(n_), 0);
    for (const Transfer& t : plan) {
      for (std::int64_t i = t.range.begin; i < t.range.end; ++i) {
        if (t.to == place) ++arrivals[at(i)];
        // The host serves whatever it holds; a device only what the host lacks.
        if (t.from != 0) REQUIRE_FALSE(holds(i, 0));
        if (t.to == 0 && place != 0) REQUIRE(dir_.routing() == Routing::ThroughHost);
      }
    }
    for (std::int64_t i = 0; i < n_; ++i) {
      const bool needed = need.contains(i) && !holds(i, place);
      REQUIRE(arrivals[at(i)] == (needed ? 1 : 0));
    }
    apply(plan);
    present_[static_cast<std::size_t>(place)] = true;
    for (const Range& r : need) {
      for (std::int64_t i = r.begin; i < r.end; ++i) {
        if (holds(i, place)) continue;
        if (place != 0 && dir_.routing() == Routing::ThroughHost && !holds(i, 0)) holders_[at(i)] |= 1u;
        holders_[at(i)] |= 1u << place;
      }
      for (std::int64_t i = r.begin; i < r.end; ++i)
        REQUIRE(data_[static_cast<std::size_t>(place)][at(i)] == current_[at(i)]);
    }
  }

  // A region over rows [r0,r1) split by random proportions into pieces at
  // random places, with one read and one write footprint for the whole region.
  void region() {
    std::int64_t r0 = pick64(0, rows_), r1 = pick64(0, rows_);
    if (r0 > r1) std::swap(r0, r1);
    const int pieces = pick(1, 4);
    std::vector<int> weights(static_cast<std::size_t>(pieces));
    int total = 0;
    for (int& w : weights) total += (w = pick(0, 10));
    if (total == 0) weights[0] = total = 1;
    std::vector<std::int64_t> bounds{r0};
    int cumulative = 0;
    for (int w : weights) {
      cumulative += w;
      bounds.push_back(r0 + (r1 - r0) * cumulative / total);
    }

    ir::AccessFootprint reads, writes;
    const int halo_lo = pick(0, 2), halo_hi = pick(0, 2);
    switch (pick(0, 3)) {
      case 0: break;
      case 1:
        reads = footprint_of(
            {ir::DimFootprint::affine({1, 0, 0}, -halo_lo, halo_hi), ir::DimFootprint::affine({0, 1, 0}, 0, 0)});
        break;
      case 2:
        reads = footprint_of({ir::DimFootprint::data_dependent(), ir::DimFootprint::affine({0, 1, 0}, 0, 0)});
        break;
      default:
        reads = footprint_of(
            {ir::DimFootprint::affine({1, 0, 0}, -halo_lo, halo_hi), ir::DimFootprint::affine({0, 1, 0}, -1, 1)});
    }
    const int write_kind = pick(0, 4);  // none, exact, conditional, column 0, atomic
    if (write_kind == 3) {
      writes = footprint_of({ir::DimFootprint::affine({1, 0, 0}, 0, 0), ir::DimFootprint::affine({0, 0, 0}, 0, 0)});
    } else if (write_kind != 0) {
      writes = footprint_of({ir::DimFootprint::affine({1, 0, 0}, 0, 0), ir::DimFootprint::affine({0, 1, 0}, 0, 0)});
      writes.unconditional = write_kind != 2;
      writes.atomic = write_kind == 4;
    }

    struct Piece {
      int place;
      std::int64_t begin, end;
      canopy::runtime::WritePlan writes;
    };
    std::vector<Piece> split;
    for (int k = 0; k < pieces; ++k) {
      const std::int64_t b = bounds[at(k)], e = bounds[at(k + 1)];
      if (b == e) continue;
      split.push_back(Piece{pick(0, places_ - 1), b, e, writes_of(writes, shape(), shape(), b, e)});
      // The rule under test: only the exact pattern with every column overwrites.
      const bool exact = write_kind == 1 || (write_kind == 3 && cols_ == 1);
      REQUIRE(split.back().writes.overwrites() == (exact || write_kind == 0));
    }
    std::vector<PlacedWrites> placed;
    for (const Piece& p : split) placed.push_back(PlacedWrites{p.place, p.writes.written});
    REQUIRE(conflicting_writes(placed).empty());  // a split writes disjoint rows

    const bool acquire_all_first = pick(0, 1) == 1;
    auto acquire_piece = [&](const Piece& p) {
      IntervalSet need = reads_of(reads, shape(), p.begin, p.end).ranges;
      need.add(p.writes.acquire_first);
      acquire(p.place, need);
    };
    auto write_piece = [&](const Piece& p) {
      if (write_kind == 0) return;
      std::vector<std::int64_t>& mine = data_[static_cast<std::size_t>(p.place)];
      for (std::int64_t row = p.begin; row < p.end; ++row) {
        for (std::int64_t col = 0; col < cols_; ++col) {
          const std::int64_t i = row * cols_ + col;
          if (write_kind == 2 && pick(0, 2) == 0) continue;  // a condition that is false here
          if (write_kind == 3 && col != 0) continue;
          if (write_kind == 4) {
            if (pick(0, 1) == 0) continue;
            mine[at(i)] = mine[at(i)] * 3 + 7;  // from the value there: stale data shows
            current_[at(i)] = current_[at(i)] * 3 + 7;
          } else {
            mine[at(i)] = current_[at(i)] = next_value_++;
          }
        }
      }
      dir_.wrote(p.place, p.writes.written);
      for (const Range& r : p.writes.written) {
        for (std::int64_t i = r.begin; i < r.end; ++i) holders_[at(i)] = 1u << p.place;
      }
    };
    if (acquire_all_first) {
      for (const Piece& p : split) acquire_piece(p);
      for (const Piece& p : split) write_piece(p);
    } else {
      for (const Piece& p : split) {
        acquire_piece(p);
        write_piece(p);
      }
    }
  }

  void host_read() {
    const Range range = pick(0, 3) == 0 ? Range{0, n_} : random_range();
    acquire(0, IntervalSet(range));
  }

  void release(int place) {
    const std::vector<Transfer> flush = dir_.release(place);
    IntervalSet flushed;
    for (const Transfer& t : flush) {
      REQUIRE(t.from == place);
      REQUIRE(t.to == 0);
      flushed.add(t.range);
    }
    IntervalSet only;
    for (std::int64_t i = 0; i < n_; ++i) {
      if (holders_[at(i)] == 1u << place) only.add(Range{i, i + 1});
    }
    REQUIRE(flushed == only);
    apply(flush);
    for (std::int64_t i = 0; i < n_; ++i) {
      holders_[at(i)] = holders_[at(i)] == 1u << place ? 1u : holders_[at(i)] & ~(1u << place);
    }
    present_[static_cast<std::size_t>(place)] = false;
    std::fill(data_[static_cast<std::size_t>(place)].begin(), data_[static_cast<std::size_t>(place)].end(), kGarbage);
  }

  // merge(sum): pieces at random places add into random ranges; the combine
  // must give what adding straight into the current values gives.
  void merge() {
    const int pieces = pick(1, 3);
    for (int k = 0; k < pieces; ++k) {
      const int place = pick(0, places_ - 1);
      const Range range = random_range();
      IntervalSet fresh(range);
      for (std::int64_t i = range.begin; i < range.end; ++i) {
        if ((pending_[at(i)] >> place) & 1u) fresh.subtract(Range{i, i + 1});
      }
      const MergeStart start = dir_.begin_merge(place, range);
      IntervalSet arrivals;
      for (const Transfer& t : start.flush) {
        REQUIRE(t.to == 0);
        for (std::int64_t i = t.range.begin; i < t.range.end; ++i) REQUIRE(holds(i, t.from));
        arrivals.add(t.range);
      }
      IntervalSet host_lacked;
      for (std::int64_t i = range.begin; i < range.end; ++i) {
        if (!holds(i, 0)) host_lacked.add(Range{i, i + 1});
      }
      REQUIRE(arrivals == host_lacked);
      apply(start.flush);
      REQUIRE(start.initialize == (place == 0 ? IntervalSet() : fresh));
      std::vector<std::int64_t>& mine = data_[static_cast<std::size_t>(place)];
      for (const Range& r : start.initialize) std::fill(mine.begin() + r.begin, mine.begin() + r.end, 0);
      for (std::int64_t i = range.begin; i < range.end; ++i) {
        // The host holds the current value plus what host pieces added in place.
        REQUIRE(data_[0][at(i)] == current_[at(i)] + host_merged_[at(i)]);
        holders_[at(i)] = 1u;
        if (place != 0) pending_[at(i)] |= 1u << place;
        merge_touched_[at(i)] = true;
        if (pick(0, 1) == 0) {
          const std::int64_t add = pick(1, 9);
          mine[at(i)] += add;
          pending_add_[at(i)] += add;
          if (place == 0) host_merged_[at(i)] += add;
        }
      }
      present_[static_cast<std::size_t>(place)] = true;
      check_state();
      if (!dir_.merging().empty()) {
        const Range busy = dir_.merging().ranges().front();
        CHECK_THROWS_AS(dir_.acquire(pick(0, places_ - 1), Range{busy.begin, busy.begin + 1}), Error);
      }
    }
    const std::vector<Transfer> combine = dir_.end_merge();
    std::vector<std::uint32_t> combined(static_cast<std::size_t>(n_), 0u);
    for (const Transfer& t : combine) {
      REQUIRE(t.to == 0);
      for (std::int64_t i = t.range.begin; i < t.range.end; ++i) {
        REQUIRE(((combined[at(i)] >> t.from) & 1u) == 0u);
        combined[at(i)] |= 1u << t.from;
        data_[0][at(i)] += data_[static_cast<std::size_t>(t.from)][at(i)];
      }
    }
    REQUIRE(combined == pending_);
    for (std::int64_t i = 0; i < n_; ++i) {
      current_[at(i)] += pending_add_[at(i)];
      pending_add_[at(i)] = 0;
      pending_[at(i)] = 0;
      merge_touched_[at(i)] = false;
    }
    std::fill(host_merged_.begin(), host_merged_.end(), 0);
  }

  // The directory's claims equal the model's, and every current copy holds
  // the current value.
  void check_state() {
    for (int place = 0; place < places_; ++place) {
      CAPTURE(place);
      REQUIRE(dir_.has_copy(place) == present_[static_cast<std::size_t>(place)]);
      IntervalSet valid, merging;
      for (std::int64_t i = 0; i < n_; ++i) {
        if (holds(i, place)) valid.add(Range{i, i + 1});
        if ((pending_[at(i)] >> place) & 1u) merging.add(Range{i, i + 1});
      }
      REQUIRE(dir_.valid(place) == valid);
      REQUIRE(dir_.merging(place) == merging);
      for (std::int64_t i = 0; i < n_; ++i) {
        if (holds(i, place) && !merge_touched_[at(i)]) {
          REQUIRE(data_[static_cast<std::size_t>(place)][at(i)] == current_[at(i)]);
        }
      }
    }
    for (std::int64_t i = 0; i < n_; ++i) REQUIRE(holders_[at(i)] != 0u);
  }

  Shape shape() const { return Shape(rows_, cols_); }

  static ir::AccessFootprint footprint_of(std::vector<ir::DimFootprint> dims) {
    ir::AccessFootprint access;
    access.present = true;
    access.dims = std::move(dims);
    access.sites = 1;
    access.unconditional = true;
    return access;
  }

  std::mt19937& rng_;
  int places_;
  std::int64_t rows_, cols_, n_;
  Coherence dir_;
  std::vector<std::uint32_t> holders_;           // model: bit p when place p holds the current value
  std::vector<std::int64_t> current_;            // model: the current value
  std::vector<bool> present_;                    // model: the place has a copy
  std::vector<std::uint32_t> pending_;           // model: bit p when the element is in p's private merge copy
  std::vector<std::int64_t> pending_add_;        // model: merge contributions not combined yet
  std::vector<bool> merge_touched_;              // in some merge range since the last end_merge
  std::vector<std::int64_t> host_merged_;        // contributions host pieces added into the host copy
  std::vector<std::vector<std::int64_t>> data_;  // the simulated memory of each place
  std::int64_t next_value_ = 1'000'000;
};

TEST_CASE("coherence: the directory matches a reference model under random regions, reads, releases, merges") {
  std::mt19937 rng(7);
  for (int sequence = 0; sequence < 3000; ++sequence) {
    CAPTURE(sequence);
    const int places = std::uniform_int_distribution<int>(2, 4)(rng);
    const std::int64_t rows = std::uniform_int_distribution<int>(1, 24)(rng);
    const std::int64_t cols = std::uniform_int_distribution<int>(1, 4)(rng);
    const Routing routing = std::uniform_int_distribution<int>(0, 1)(rng) == 0 ? Routing::Direct : Routing::ThroughHost;
    Simulation simulation(rng, places, rows, cols, routing);
    const int steps = std::uniform_int_distribution<int>(5, 40)(rng);
    for (int s = 0; s < steps; ++s) simulation.step();
  }
}

}  // namespace
