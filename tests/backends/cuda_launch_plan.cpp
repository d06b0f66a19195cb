// How the CUDA backend covers a piece with launches, checked without a GPU
// by running the plan on the host: every thread of every block of every
// launch computes its point the way the generated kernels do (begin +
// blockIdx * blockDim + threadIdx, device x the last index); threads of the
// unchecked entry must all fall inside the piece, threads of the checked
// entry past an end do nothing, and every point of the piece is run exactly
// once, for pieces of 1-3 dimensions that start anywhere, with extents that
// are and are not multiples of the block, and with grid limits small enough
// that launches must be split.
#include <doctest/doctest.h>

#include <map>
#include <vector>

#include "cuda_support.hpp"

using namespace canopy;
using backends::Range;
using backends::cuda::PointLaunch;

namespace {

Range range_of(std::initializer_list<std::int64_t> begin, std::initializer_list<std::int64_t> end) {
  Range range;
  range.dims = static_cast<int>(begin.size());
  std::copy(begin.begin(), begin.end(), range.begin.begin());
  std::copy(end.begin(), end.end(), range.end.begin());
  return range;
}

// Runs `launches` as the device would and checks what they cover.
void check_coverage(const Range& range, const std::array<int, 3>& block, const std::vector<PointLaunch>& launches,
                    const std::array<std::int64_t, 3>& max_grid) {
  const int dims = range.dims;
  std::vector<int> visits(static_cast<std::size_t>(range.points()), 0);
  // Threads of the unchecked entry past an end, and threads of either before a begin.
  int misplaced = 0, over_grid = 0;
  for (const PointLaunch& launch : launches) {
    for (int e = 0; e < 3; ++e) over_grid += launch.grid[e] > max_grid[e] || launch.grid[e] < 1;
    for (int e = dims; e < 3; ++e) over_grid += launch.grid[e] != 1;
    for (std::int64_t bz = 0; bz < launch.grid[2]; ++bz)
      for (std::int64_t by = 0; by < launch.grid[1]; ++by)
        for (std::int64_t bx = 0; bx < launch.grid[0]; ++bx)
          for (int tz = 0; tz < block[2]; ++tz)
            for (int ty = 0; ty < block[1]; ++ty)
              for (int tx = 0; tx < block[0]; ++tx) {
                const std::array<std::int64_t, 3> device_id{bx * block[0] + tx, by * block[1] + ty, bz * block[2] + tz};
                std::array<std::int64_t, 3> point{0, 0, 0};
                bool past_end = false;
                for (int d = 0; d < dims; ++d) {
                  point[d] = launch.begin[d] + device_id[dims - 1 - d];
                  past_end = past_end || point[d] >= range.end[d];
                }
                if (past_end) {
                  misplaced += !launch.edges;
                  continue;
                }
                std::int64_t flat = 0;
                bool before_begin = false;
                for (int d = 0; d < dims; ++d) {
                  before_begin = before_begin || point[d] < range.begin[d];
                  flat = flat * (range.end[d] - range.begin[d]) + (point[d] - range.begin[d]);
                }
                if (before_begin)
                  ++misplaced;
                else
                  ++visits[static_cast<std::size_t>(flat)];
              }
  }
  CHECK(misplaced == 0);
  CHECK(over_grid == 0);
  std::map<int, int> histogram;
  for (int v : visits) ++histogram[v];
  CHECK(histogram == std::map<int, int>{{1, static_cast<int>(visits.size())}});
}

}  // namespace

TEST_CASE("cuda launch plan: block shapes") {
  const std::array<int, 3> fermi_and_later{1024, 1024, 64};
  // 1-D: the whole budget whatever the range (the edge launch takes the rest).
  CHECK(backends::cuda::point_block(range_of({0}, {3}), 256, fermi_and_later) == std::array<int, 3>{256, 1, 1});
  CHECK(backends::cuda::point_block(range_of({5}, {100000}), 256, fermi_and_later) == std::array<int, 3>{256, 1, 1});
  // A kernel that allows fewer threads gets fewer (a power of two).
  CHECK(backends::cuda::point_block(range_of({0}, {1000}), 200, fermi_and_later) == std::array<int, 3>{128, 1, 1});
  // 2-D: at most 64 along x (the last index), powers of two no larger than the range.
  CHECK(backends::cuda::point_block(range_of({0, 0}, {1000, 1000}), 256, fermi_and_later) ==
        std::array<int, 3>{64, 4, 1});
  CHECK(backends::cuda::point_block(range_of({0, 0}, {100, 3}), 256, fermi_and_later) == std::array<int, 3>{2, 64, 1});
  CHECK(backends::cuda::point_block(range_of({0, 0, 0}, {7, 5, 33}), 256, fermi_and_later) ==
        std::array<int, 3>{32, 4, 2});
  // The device's limit per dimension holds.
  CHECK(backends::cuda::point_block(range_of({0, 0, 0}, {100, 100, 100}), 1024, {1024, 1024, 4})[2] <= 4);
}

TEST_CASE("cuda launch plan: every point once, whole blocks unchecked, within the grid limits") {
  const std::array<std::int64_t, 3> big_grid{2147483647, 65535, 65535};
  struct Case {
    Range range;
    std::array<std::int64_t, 3> max_grid;
  };
  const std::vector<Case> cases{
      {range_of({0}, {1}), big_grid},
      {range_of({0}, {256}), big_grid},
      {range_of({0}, {1000}), big_grid},
      {range_of({17}, {4099}), big_grid},
      {range_of({1000}, {1003}), big_grid},
      {range_of({0}, {5000}), {3, 1, 1}},  // 19 whole blocks in grids of 3
      {range_of({0, 0}, {1, 1}), big_grid},
      {range_of({0, 0}, {3, 17}), big_grid},
      {range_of({2, 5}, {301, 300}), big_grid},
      {range_of({0, 0}, {1003, 1}), big_grid},
      {range_of({0, 0}, {123, 257}), {2, 3, 1}},
      {range_of({1, 2, 3}, {9, 12, 40}), big_grid},
      {range_of({0, 0, 0}, {33, 34, 35}), big_grid},
      {range_of({0, 0, 0}, {17, 1, 9}), {1, 1, 1}},
      {range_of({4, 0, 7}, {20, 30, 80}), {2, 2, 3}},
  };
  for (const auto& test : cases) {
    const Range& range = test.range;
    for (int budget : {256, 64, 1}) {
      const auto block = backends::cuda::point_block(range, budget, {1024, 1024, 64});
      const auto launches = backends::cuda::plan_point_launches(range, block, test.max_grid);
      INFO("range of ", range.dims, " dimensions from ", range.begin[0], ",", range.begin[1], ",", range.begin[2],
           " to ", range.end[0], ",", range.end[1], ",", range.end[2], "; block ", block[0], "x", block[1], "x",
           block[2], "; ", launches.size(), " launches");
      check_coverage(range, block, launches, test.max_grid);
    }
  }
}

TEST_CASE("cuda launch plan: a 1-D piece is one unchecked launch and at most one checked block") {
  const std::array<int, 3> block{256, 1, 1};
  const auto exact = backends::cuda::plan_point_launches(range_of({512}, {512 + 4 * 256}), block, {1 << 30, 1, 1});
  REQUIRE(exact.size() == 1);
  CHECK_FALSE(exact[0].edges);
  CHECK(exact[0].begin[0] == 512);
  CHECK(exact[0].grid[0] == 4);
  const auto ragged = backends::cuda::plan_point_launches(range_of({10}, {10 + 1000}), block, {1 << 30, 1, 1});
  REQUIRE(ragged.size() == 2);
  CHECK_FALSE(ragged[0].edges);
  CHECK(ragged[0].grid[0] == 3);
  CHECK(ragged[1].edges);
  CHECK(ragged[1].begin[0] == 10 + 768);
  CHECK(ragged[1].grid[0] == 1);
  // Shorter than a block: only the checked entry runs.
  const auto short_piece = backends::cuda::plan_point_launches(range_of({0}, {3}), block, {1 << 30, 1, 1});
  REQUIRE(short_piece.size() == 1);
  CHECK(short_piece[0].edges);
}
