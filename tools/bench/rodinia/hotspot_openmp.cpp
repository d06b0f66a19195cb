// hotspot's OpenMP baseline: what a careful programmer writes by hand. One
// parallel region for the whole run; each step is a worksharing loop over
// the rows (static schedule, so a thread keeps the same rows in its cache
// from step to step), whose inner loop over the interior columns is a plain
// vectorisable loop; the first and last columns are done apart.
#include <omp.h>

#include <chrono>
#include <utility>

#include "hotspot_baselines.hpp"

namespace canopy::bench::rodinia::hotspot_baseline {

namespace {

struct Step {
  float cap_1, rx_1, ry_1, rz_1, ambient;
  float operator()(float t, float north, float south, float west, float east, float power) const {
    return t +
           cap_1 * (power + (south + north - 2.0f * t) * ry_1 + (east + west - 2.0f * t) * rx_1 + (ambient - t) * rz_1);
  }
};

// One row of the next grid from the rows above, at and below it.
void step_row(const Step& step, const float* __restrict above, const float* __restrict row,
              const float* __restrict below, const float* __restrict power, float* __restrict next, std::int64_t cols) {
  if (cols == 1) {
    next[0] = step(row[0], above[0], below[0], row[0], row[0], power[0]);
    return;
  }
  next[0] = step(row[0], above[0], below[0], row[0], row[1], power[0]);
#pragma omp simd
  for (std::int64_t j = 1; j < cols - 1; ++j)
    next[j] = step(row[j], above[j], below[j], row[j - 1], row[j + 1], power[j]);
  const std::int64_t last = cols - 1;
  next[last] = step(row[last], above[last], below[last], row[last - 1], row[last], power[last]);
}

}  // namespace

double run_openmp(const Problem& problem, std::vector<float>& result) {
  // Timed from the input in host memory: the grids' creation counts.
  const auto start = std::chrono::steady_clock::now();
  const std::int64_t rows = problem.rows, cols = problem.cols;
  const std::size_t cells = static_cast<std::size_t>(rows * cols);
  std::vector<float> grid_a(problem.temperature, problem.temperature + cells), grid_b(cells);
  const Step step{problem.cap_1, problem.rx_1, problem.ry_1, problem.rz_1, problem.ambient};
  const float* power = problem.power;
  const int steps = problem.steps;

#pragma omp parallel
  {
    float* from = grid_a.data();
    float* to = grid_b.data();
    for (int k = 0; k < steps; ++k) {
#pragma omp for schedule(static)
      for (std::int64_t i = 0; i < rows; ++i) {
        const float* row = from + i * cols;
        const float* above = i > 0 ? row - cols : row;
        const float* below = i < rows - 1 ? row + cols : row;
        step_row(step, above, row, below, power + i * cols, to + i * cols, cols);
      }
      // (the loop's barrier: every row of `to` is written before the next step reads it)
      std::swap(from, to);
    }
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  result.swap(steps % 2 ? grid_b : grid_a);
  return seconds;
}

}  // namespace canopy::bench::rodinia::hotspot_baseline
