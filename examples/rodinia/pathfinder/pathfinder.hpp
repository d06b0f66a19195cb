// Rodinia's pathfinder in Canopy: dynamic programming over a grid of walls.
// The cost of reaching column n of row t+1 is the wall there plus the
// cheapest of the three cells above it (n-1, n, n+1 of row t; two at the
// edges). One region per row advances the whole row; the two cost rows take
// turns and stay on the runtime, and each wall row is an array of its own,
// so that a region split over devices reads, and moves, only the columns of
// its piece (plus one column each way of the row above).
//
// Shared by the `pathfinder` example program and `canopy-bench rodinia`; the
// command line and the input (Rodinia seeds the C library's rand() with 9)
// are Rodinia 3.1's.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include <canopy/canopy.hpp>

#include "rodinia/common/rodinia.hpp"

namespace rodinia::pathfinder {

/// The walls, row-major: `rows` rows of `cols` columns, each 0..9.
struct Walls {
  std::int64_t rows = 0, cols = 0;
  Vector<std::int32_t> values;

  const std::int32_t* row(std::int64_t t) const { return values.data() + t * cols; }
};

/// Rodinia's input: wall (t, n) is rand() % 10 with rand() seeded with 9,
/// row after row; on the same C library these are the very walls of
/// Rodinia's pathfinder.
inline Walls generate(std::int64_t cols, std::int64_t rows) {
  Walls walls{rows, cols, Vector<std::int32_t>(static_cast<std::size_t>(rows * cols))};
  std::srand(9);
  for (auto& wall : walls.values) wall = std::rand() % 10;
  return walls;
}

/// The cheapest cost of every column of the last row, in plain C++ (one
/// thread): what the tests and the example's --check compare with.
inline std::vector<std::int32_t> search_serially(const Walls& walls) {
  const std::int64_t cols = walls.cols;
  std::vector<std::int32_t> cost(walls.row(0), walls.row(0) + cols), next(static_cast<std::size_t>(cols));
  for (std::int64_t t = 1; t < walls.rows; ++t) {
    for (std::int64_t n = 0; n < cols; ++n) {
      std::int32_t best = cost[std::size_t(n)];
      if (n > 0) best = std::min(best, cost[std::size_t(n - 1)]);
      if (n < cols - 1) best = std::min(best, cost[std::size_t(n + 1)]);
      next[std::size_t(n)] = walls.row(t)[n] + best;
    }
    cost.swap(next);
  }
  return cost;
}

/// One row: next[n] = wall[n] + the least of cost[n-1], cost[n], cost[n+1]
/// (those that exist). The neighbours are loaded under a condition, which
/// the CPU's vectoriser turns into masked loads of consecutive elements.
using StepKernel = canopy::Kernel<void(canopy::Out<std::int32_t>, canopy::In<std::int32_t>, canopy::In<std::int32_t>)>;

inline const StepKernel& step_kernel() {
  using namespace canopy;
  static const StepKernel kernel("pathfinder_step",
                                 [](Out<std::int32_t> next, In<std::int32_t> cost, In<std::int32_t> wall) {
                                   Idx n = index(0);
                                   const Idx cols = cost.extent(0);
                                   Var<std::int32_t> best = cost[n];
                                   If(n > 0, [&] { best = min(best, cost[n - 1]); });
                                   If(n < cols - 1, [&] { best = min(best, cost[n + 1]); });
                                   next[n] = wall[n] + best;
                                 },
                                 {"next", "cost", "wall"});
  return kernel;
}

/// Prints `count` values on one line of standard output, each followed by a
/// space, as Rodinia's pathfinder prints its rows.
inline void print_row(const std::int32_t* values, std::int64_t count) {
  std::fflush(stdout);  // what printf buffered goes first
  rodinia::TextOut out(stdout);
  for (std::int64_t n = 0; n < count; ++n) out.integer(values[n]).put(' ');
  out.put('\n');
}

/// A search on a runtime: the wall rows and the two cost rows live there
/// from construction to destruction.
class Search {
 public:
  /// Makes every wall row an array over `walls`' own memory (rt.wrap, read
  /// only: the process holds the walls once, so `walls` must outlive the
  /// search) and the two cost rows on `rt`, the first filled with the first
  /// row of walls. Regions run at `location` (empty: where the arrays are)
  /// split by `policy`.
  Search(canopy::Runtime& rt, const Walls& walls, std::string location = "", std::string policy = "static")
      : rt_(rt), cols_(walls.cols), location_(std::move(location)), policy_(std::move(policy)) {
    if (walls.rows < 1 || walls.cols < 1) throw canopy::Error("pathfinder: the walls need at least one row and column");
    for (std::int64_t t = 1; t < walls.rows; ++t)
      walls_.push_back(rt.wrap(const_cast<std::int32_t*>(walls.row(t)), canopy::Shape(cols_),
                               canopy::named("pathfinder_wall_" + std::to_string(t)) | canopy::read_only()));
    for (auto& cost : costs_) cost = rt.array<std::int32_t>(cols_, canopy::named("pathfinder_cost"));
    auto first = costs_[0].host();
    std::copy(walls.row(0), walls.row(0) + cols_, first.begin());
  }

  /// Runs every row and waits for them.
  void run() {
    for (const auto& wall : walls_) {
      rt_.region(step_kernel())
          .over(cols_)
          .at(location_)
          .policy(policy_)
          .launch(costs_[1 - current_], costs_[current_], wall);
      current_ = 1 - current_;
    }
    rt_.pause();
  }

  /// The cheapest cost of reaching each column of the last row.
  std::vector<std::int32_t> result() const {
    auto view = result_view();
    return std::vector<std::int32_t>(view.begin(), view.end());
  }
  /// The same in the cost row's own host memory, without a copy where it is
  /// there already; valid until the next run().
  canopy::HostView<const std::int32_t, 1> result_view() const { return costs_[current_].host_read(); }

 private:
  canopy::Runtime& rt_;
  std::int64_t cols_;
  std::string location_, policy_;
  std::vector<canopy::Array<std::int32_t>> walls_;
  canopy::Array<std::int32_t> costs_[2];
  int current_ = 0;
};

}  // namespace rodinia::pathfinder
