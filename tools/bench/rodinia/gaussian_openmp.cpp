// The OpenMP baseline of gaussian (built -O3 -march=native -fopenmp): Rodinia's
// Fan1 and Fan2 for one step fused per row, as Canopy's gaussian does, one
// `parallel for` over the rows below the pivot per step.
#include <cstdint>

#include "openmp_ports.hpp"

namespace canopy::bench::rodinia::openmp {

void gaussian_forward(float* a, float* b, float* m, std::int64_t n) {
  for (std::int64_t t = 0; t + 1 < n; ++t) {
    const float* __restrict pivot_row = a + t * n;
#pragma omp parallel for schedule(static)
    for (std::int64_t r = t + 1; r < n; ++r) {
      float* __restrict row = a + r * n;
      const float multiplier = row[t] / pivot_row[t];
      m[r * n + t] = multiplier;
      for (std::int64_t c = t; c < n; ++c) row[c] = row[c] - multiplier * pivot_row[c];
      b[r] = b[r] - multiplier * b[t];
    }
  }
}

}  // namespace canopy::bench::rodinia::openmp
