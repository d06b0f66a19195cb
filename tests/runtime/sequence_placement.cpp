// Sequence placement's pricing (runtime/internal/sequence_placement.hpp),
// on placements written out by hand: the bytes a split must receive from
// other memories, counted row by row here with a loop of its own, and the
// choice between a region's own split and the one its inputs were left in.
// The runtime's use of it, with real copies, is tests/hetero/adaptive.cpp.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <canopy/runtime/internal/sequence_placement.hpp>
#include <canopy/runtime/policy.hpp>

namespace canopy::runtime {
namespace {

constexpr int kDevice = 1;  // a device memory's place; the host's is 0

std::shared_ptr<const RowPlacement> placed(const std::string& kernel, std::int64_t rows,
                                           std::vector<RowPlacement::Rows> pieces) {
  return placement_of(kernel, std::hash<std::string>{}(kernel), rows, pieces);
}

/// Bytes moved, row by row: each row a leaf runs whose placed piece is in
/// another memory costs `bytes_per_row`.
double moved_row_by_row(const RowPlacement& placed, double bytes_per_row, const std::vector<int>& places,
                        const std::vector<std::int64_t>& bounds) {
  double bytes = 0;
  for (std::size_t leaf = 0; leaf < places.size(); ++leaf)
    for (std::int64_t row = bounds[leaf]; row < bounds[leaf + 1]; ++row)
      for (const auto& piece : placed.pieces)
        if (row >= piece.begin && row < piece.end && piece.place != places[leaf]) bytes += bytes_per_row;
  return bytes;
}

/// A region over `rows` rows of cpu0 (host) and opencl0 (a device).
SplitQuestion question(std::vector<double> own, std::vector<double> row_seconds, double seconds_per_byte,
                       std::int64_t rows, std::vector<std::string> leaves = {"cpu0", "opencl0"}) {
  SplitQuestion q;
  q.places = leaves.size() == 1 ? std::vector<int>{0} : std::vector<int>{0, kDevice};
  q.leaves = std::move(leaves);
  q.own_shares = std::move(own);
  q.row_seconds = std::move(row_seconds);
  q.link_price = [seconds_per_byte](int) { return seconds_per_byte; };
  q.rows = rows;
  return q;
}

/// The bytes the leaves receive: copy_seconds at one second per byte over
/// every link (these placements move nothing between two devices).
double bytes_to_move(const std::vector<PlacedInput>& inputs, const std::vector<int>& places,
                     const std::vector<std::int64_t>& bounds) {
  double total = 0;
  for (double s : copy_seconds(inputs, places, bounds, [](int) { return 1.0; })) total += s;
  return total;
}

}  // namespace

TEST_CASE("sequence placement: the bytes a split receives are the rows placed in other memories") {
  const auto left = placed("ahead", 1000, {{"cpu0", 0, 0, 750}, {"opencl0", kDevice, 750, 1000}});
  const std::vector<PlacedInput> inputs{{left, 8.0}, {left, 4.0}};
  const std::vector<int> places{0, kDevice};
  for (const std::vector<std::int64_t>& bounds :
       std::vector<std::vector<std::int64_t>>{{0, 600, 1000}, {0, 750, 1000}, {0, 900, 1000}, {0, 0, 1000}}) {
    CAPTURE(bounds[1]);
    const double want = moved_row_by_row(*left, 8.0, places, bounds) + moved_row_by_row(*left, 4.0, places, bounds);
    CHECK(bytes_to_move(inputs, places, bounds) == want);
  }
  CHECK(bytes_to_move(inputs, places, {0, 750, 1000}) == 0);
  CHECK(bytes_to_move(inputs, places, {0, 600, 1000}) == 150 * 12);
  // Two CPU leaves share the host's memory: nothing moves between them.
  const auto on_cpus = placed("k", 100, {{"cpu0", 0, 0, 30}, {"cpu1", 0, 30, 100}});
  CHECK(bytes_to_move({{on_cpus, 8.0}}, {0, 0}, {0, 70, 100}) == 0);
  // The whole range on one leaf (the any policy's question).
  CHECK(bytes_to_move(inputs, {kDevice}, {0, 1000}) == 750 * 12);
}

TEST_CASE("sequence placement: a byte crosses the links of the memories it leaves and enters") {
  // cpu0 in the host's memory; gpu0 behind a slow link, ocl0 behind a fast one.
  constexpr int kGpu = 1, kOcl = 2;
  const LinkPrice price = [](int place) { return place == kGpu ? 1e-8 : place == kOcl ? 1e-10 : 1e3; };
  const auto left = placed("k", 300, {{"cpu0", 0, 0, 100}, {"gpu0", kGpu, 100, 200}, {"ocl0", kOcl, 200, 300}});
  const std::vector<PlacedInput> inputs{{left, 8.0}};
  const std::vector<int> places{0, kGpu, kOcl};
  // Each leaf takes 10 rows more at its start: cpu0 none, gpu0 10 from the host, ocl0 10 from gpu0.
  const auto seconds = copy_seconds(inputs, places, {0, 90, 190, 300}, price);
  REQUIRE(seconds.size() == 3);
  CHECK(seconds[0] == 0.0);
  CHECK(seconds[1] == doctest::Approx(10 * 8.0 * 1e-8));
  CHECK(seconds[2] == doctest::Approx(10 * 8.0 * (1e-8 + 1e-10)));
  // Rows back to the host cross the sender's link.
  const auto back = copy_seconds(inputs, places, {0, 110, 210, 300}, price);
  CHECK(back[0] == doctest::Approx(10 * 8.0 * 1e-8));
  CHECK(back[1] == doctest::Approx(10 * 8.0 * (1e-10 + 1e-8)));
  CHECK(back[2] == 0.0);
}

TEST_CASE("sequence placement: the inputs' split is taken only where it is predicted faster, copies included") {
  const std::int64_t rows = 1 << 20;
  const std::int64_t cut = rows * 3 / 4;
  const auto left = placed("ahead", rows, {{"cpu0", 0, 0, cut}, {"opencl0", kDevice, cut, rows}});
  const std::vector<PlacedInput> inputs{{left, 8.0}};
  const std::vector<double> own{0.6, 0.4};
  const std::vector<double> row_seconds{1e-10, 1.5e-10};  // own split balanced: 0.6 x 1 = 0.4 x 1.5

  // Copies at 10 GB/s: moving 15% of the rows costs more than the imbalance.
  const auto followed = follow_inputs(inputs, question(own, row_seconds, 1e-10, rows));
  REQUIRE(followed);
  CHECK(followed->follows == "ahead");
  CHECK(share_boundaries(followed->shares, rows) == std::vector<std::int64_t>{0, cut, rows});
  // The own split's slowest leaf is the device: its rows, after the rows it
  // must first receive from the host (a leaf's copies delay that leaf alone).
  const std::int64_t own_cut = share_boundaries(own, rows)[1];
  CHECK(followed->own_seconds ==
        doctest::Approx(double(rows - own_cut) * 1.5e-10 + double(cut - own_cut) * 8.0 * 1e-10));
  CHECK(followed->follow_seconds == doctest::Approx(double(cut) * 1e-10));

  // Free copies: the balanced split wins.
  CHECK_FALSE(follow_inputs(inputs, question(own, row_seconds, 0.0, rows)));
  // A leaf far slower on this kernel: its own split wins despite the copies.
  CHECK_FALSE(follow_inputs(inputs, question({0.99, 0.01}, {1e-10, 1e-8}, 1e-10, rows)));
  // Nothing to choose: the own split is the inputs'.
  CHECK_FALSE(follow_inputs(inputs, question({double(cut), double(rows - cut)}, row_seconds, 1e-10, rows)));
  // A leaf without a rate keeps the own split; so do leaves the inputs were not left on.
  CHECK_FALSE(follow_inputs(inputs, question(own, {1e-10, std::nan("")}, 1e-10, rows)));
  CHECK_FALSE(follow_inputs(inputs, question(own, row_seconds, 1e-10, rows, {"cpu0", "opencl1"})));
  // Pieces out of the leaves' tree order cannot be made by the adaptive split.
  const auto swapped = placed("swapped", rows, {{"opencl0", kDevice, 0, cut}, {"cpu0", 0, cut, rows}});
  CHECK_FALSE(follow_inputs({{swapped, 8.0}}, question(own, row_seconds, 1e-10, rows)));
  // always (CANOPY_SEQUENCE_PLACEMENT=always): follows even where copies are free...
  auto unpriced = question(own, row_seconds, 0.0, rows);
  unpriced.always = true;
  const auto forced = follow_inputs(inputs, unpriced);
  REQUIRE(forced);
  CHECK(share_boundaries(forced->shares, rows) == std::vector<std::int64_t>{0, cut, rows});
  // ...but never where nothing differs, or on leaves the inputs were not left on.
  auto same = question({double(cut), double(rows - cut)}, row_seconds, 0.0, rows);
  same.always = true;
  CHECK_FALSE(follow_inputs(inputs, same));
  auto foreign = question(own, row_seconds, 0.0, rows, {"cpu0", "opencl1"});
  foreign.always = true;
  CHECK_FALSE(follow_inputs(inputs, foreign));
  // No inputs placed, one leaf: nothing to follow.
  CHECK_FALSE(follow_inputs({}, question(own, row_seconds, 1e-10, rows)));
  CHECK_FALSE(follow_inputs(inputs, question({1.0}, {1e-10}, 1e-10, rows, {"cpu0"})));
}

TEST_CASE("sequence placement: of inputs left by different regions, the one holding the most bytes is the candidate") {
  const std::int64_t rows = 1000;
  const auto small = placed("small", rows, {{"cpu0", 0, 0, 500}, {"opencl0", kDevice, 500, rows}});
  const auto large = placed("large", rows, {{"cpu0", 0, 0, 800}, {"opencl0", kDevice, 800, rows}});
  // Leaves equally fast, copies dear: following is worth it.
  const auto followed = follow_inputs({{small, 4.0}, {large, 8.0}}, question({0.6, 0.4}, {1e-9, 1e-9}, 1e-8, rows));
  REQUIRE(followed);
  CHECK(followed->follows == "large");
  // Equal bytes: the first parameter's (following either would win here).
  const auto first = placed("first", rows, {{"cpu0", 0, 0, 700}, {"opencl0", kDevice, 700, rows}});
  const auto second = placed("second", rows, {{"cpu0", 0, 0, 710}, {"opencl0", kDevice, 710, rows}});
  const auto taken = follow_inputs({{first, 8.0}, {second, 8.0}}, question({0.4, 0.6}, {1e-9, 1e-9}, 1e-8, rows));
  REQUIRE(taken);
  CHECK(taken->follows == "first");
}

TEST_CASE("sequence placement: of two kernels over the same arrays, the one that loses less by it follows") {
  // ahead's own split gives cpu0 3/4 of the rows (device 3x slower for it);
  // behind's 3/5 (device 1.5x slower). behind following ahead costs it
  // 0.75 - 0.6 of the rows' time on cpu0; ahead following behind would cost
  // it 0.4 x 3 - 0.75: more. So behind follows, and ahead keeps its own
  // split even where its inputs were left in behind's.
  const std::int64_t rows = 1000;
  const std::uint64_t ahead = 11, behind = 22;
  auto history = [&](std::uint64_t kernel) {
    if (kernel == ahead) return std::vector<double>{1e-9, 3e-9};
    if (kernel == behind) return std::vector<double>{1e-9, 1.5e-9};
    return std::vector<double>{};
  };
  const auto left_by_ahead = placement_of("ahead", ahead, rows, {{"cpu0", 0, 0, 750}, {"opencl0", kDevice, 750, rows}});
  const auto left_by_behind =
      placement_of("behind", behind, rows, {{"cpu0", 0, 0, 600}, {"opencl0", kDevice, 600, rows}});
  SplitQuestion b = question({0.6, 0.4}, history(behind), 1e-8, rows);
  b.leader_row_seconds = history;
  const auto followed = follow_inputs({{left_by_ahead, 8.0}}, b);
  REQUIRE(followed);
  CHECK(followed->leader == ahead);
  SplitQuestion a = question({0.75, 0.25}, history(ahead), 1e-8, rows);
  CHECK(follow_inputs({{left_by_behind, 8.0}}, a));  // alone, the copies would decide it...
  a.leader_row_seconds = history;
  CHECK_FALSE(follow_inputs({{left_by_behind, 8.0}}, a));  // ...but behind loses less by following
  // A leader the history does not know: the region decides alone.
  a.leader_row_seconds = [](std::uint64_t) { return std::vector<double>{}; };
  CHECK(follow_inputs({{left_by_behind, 8.0}}, a));
}

TEST_CASE("share_boundaries: row counts give exactly those rows; fractions round cumulatively") {
  CHECK(share_boundaries({750, 0, 250}, 1000) == std::vector<std::int64_t>{0, 750, 750, 1000});
  CHECK(share_boundaries({1, 1, 1}, 10) == std::vector<std::int64_t>{0, 3, 7, 10});
  CHECK(share_boundaries({0.5}, 7) == std::vector<std::int64_t>{0, 7});
}

}  // namespace canopy::runtime
