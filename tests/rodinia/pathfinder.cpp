// pathfinder at a small size: Canopy's costs equal a serial search written
// here, exactly, on cpu0, on opencl0 and split over both (at numa0,
// percentage:[50,50]); split, each row moves one cost each way across the
// boundary and each wall row once, only the columns of opencl0's piece.
// Without an OpenCL device the OpenCL cases say so and pass.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "hetero/hetero_support.hpp"
#include "rodinia/pathfinder/pathfinder.hpp"

using namespace canopy;

namespace {

// Columns not a multiple of any vector width; enough rows for costs to spread.
constexpr std::int64_t kCols = 997, kRows = 31;

std::vector<std::int32_t> search_here(const rodinia::pathfinder::Walls& walls) {
  std::vector<std::int32_t> cost(walls.values.begin(), walls.values.begin() + walls.cols);
  for (std::int64_t t = 1; t < walls.rows; ++t) {
    std::vector<std::int32_t> next(cost.size());
    for (std::int64_t n = 0; n < walls.cols; ++n) {
      std::int32_t best = cost[std::size_t(n)];
      if (n > 0 && cost[std::size_t(n - 1)] < best) best = cost[std::size_t(n - 1)];
      if (n + 1 < walls.cols && cost[std::size_t(n + 1)] < best) best = cost[std::size_t(n + 1)];
      next[std::size_t(n)] = walls.values[std::size_t(t * walls.cols + n)] + best;
    }
    cost = next;
  }
  return cost;
}

}  // namespace

TEST_CASE("pathfinder: a serial search's costs on cpu0, opencl0 and split over both") {
  Runtime rt;
  const Hierarchy discovered = rt.hierarchy();
  const rodinia::pathfinder::Walls walls = rodinia::pathfinder::generate(kCols, kRows);
  REQUIRE(walls.values.size() == std::size_t(kCols * kRows));
  CHECK(*std::max_element(walls.values.begin(), walls.values.end()) == 9);
  CHECK(*std::min_element(walls.values.begin(), walls.values.end()) == 0);
  const std::vector<std::int32_t> expected = search_here(walls);
  // The cheapest path takes some walls, not all nines or all zeros.
  CHECK(*std::min_element(expected.begin(), expected.end()) > 0);
  CHECK(*std::max_element(expected.begin(), expected.end()) < 9 * kRows);

  SUBCASE("cpu0") {
    REQUIRE(hetero_tests::has_leaves(discovered, {"cpu0"}));
    rodinia::pathfinder::Search search(rt, walls, "cpu0");
    search.run();
    CHECK(search.result() == expected);
  }
  SUBCASE("opencl0") {
    if (!hetero_tests::has_leaves(discovered, {"opencl0"})) return;
    rodinia::pathfinder::Search search(rt, walls, "opencl0");
    search.run();
    CHECK(search.result() == expected);
    CHECK(hetero_tests::pieces_of(hetero_tests::last_region(rt)) ==
          std::vector<std::string>{"opencl0[0," + std::to_string(kCols) + ")"});
  }
  SUBCASE("split over cpu0 and opencl0") {
    if (!hetero_tests::has_leaves(discovered, {"cpu0", "opencl0"})) return;
    hetero_tests::use_leaves(rt, discovered, {"cpu0", "opencl0"});
    rodinia::pathfinder::Search search(rt, walls, "numa0", "percentage:[50,50]");
    const auto before = hetero_tests::moved(rt);
    search.run();
    CHECK(search.result() == expected);
    const auto moved = hetero_tests::moved(rt) - before;
    const std::int64_t half = (kCols * 50 + 50) / 100, own = kCols - half;
    CHECK(hetero_tests::pieces_of(hetero_tests::last_region(rt)) ==
          std::vector<std::string>{"cpu0[0," + std::to_string(half) + ")",
                                   "opencl0[" + std::to_string(half) + "," + std::to_string(kCols) + ")"});
    // To opencl0: its columns of every wall row, its columns of the first
    // cost row plus one, then one cost per row from cpu0; back: one cost per
    // row to cpu0 and opencl0's columns of the result.
    const std::int64_t element = sizeof(std::int32_t);
    MESSAGE("split search moved " << moved);
    CHECK(moved.host_to_device == ((kRows - 1) * own + own + 1 + (kRows - 2)) * element);
    CHECK(moved.device_to_host == ((kRows - 2) + own) * element);
  }
}
