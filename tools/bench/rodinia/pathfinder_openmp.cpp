// pathfinder's OpenMP baseline: what a careful programmer writes by hand. One
// parallel region for the whole run; each row is a worksharing loop over the
// columns (static schedule) with a plain vectorisable body, the first and
// last columns done apart.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <utility>

#include "pathfinder_baselines.hpp"

namespace canopy::bench::rodinia::pathfinder_baseline {

double run_openmp(const Problem& problem, std::vector<std::int32_t>& result) {
  const std::int64_t rows = problem.rows, cols = problem.cols;
  // Timed from before the cost rows are made, as Canopy's run is: its rows
  // are first touched by its first region, these by their zero-fill.
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::int32_t> cost_a(problem.walls, problem.walls + cols), cost_b(static_cast<std::size_t>(cols));
  const std::int32_t* walls = problem.walls;

#pragma omp parallel
  {
    std::int32_t* cost = cost_a.data();
    std::int32_t* next = cost_b.data();
    for (std::int64_t t = 1; t < rows; ++t) {
      const std::int32_t* wall = walls + t * cols;
#pragma omp for simd schedule(static) nowait
      for (std::int64_t n = 1; n < cols - 1; ++n)
        next[n] = wall[n] + std::min(cost[n], std::min(cost[n - 1], cost[n + 1]));
#pragma omp single nowait
      {
        next[0] = wall[0] + (cols > 1 ? std::min(cost[0], cost[1]) : cost[0]);
        if (cols > 1) next[cols - 1] = wall[cols - 1] + std::min(cost[cols - 1], cost[cols - 2]);
      }
#pragma omp barrier  // the row is complete before the next one reads it
      std::swap(cost, next);
    }
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  result.swap(rows % 2 ? cost_a : cost_b);
  return seconds;
}

}  // namespace canopy::bench::rodinia::pathfinder_baseline
