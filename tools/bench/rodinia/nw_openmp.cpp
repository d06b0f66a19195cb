// The OpenMP baseline of nw (built -O3 -march=native -fopenmp): the schedule
// Canopy's nw uses, written by hand. One `parallel for` per block
// anti-diagonal over its blocks; each block is filled row by row with the
// left and upper-left scores carried in registers.
#include <algorithm>
#include <cstdint>

#include "openmp_ports.hpp"

namespace canopy::bench::rodinia::openmp {

void nw_align(std::int32_t* score, const std::int32_t* reference, std::int64_t dim, std::int64_t block,
              std::int32_t penalty) {
  const std::int64_t side = dim + 1, blocks = dim / block;
  for (std::int64_t d = 0; d < 2 * blocks - 1; ++d) {
    const std::int64_t first = std::max<std::int64_t>(0, d - blocks + 1), last = std::min(d, blocks - 1);
#pragma omp parallel for schedule(static)
    for (std::int64_t bi = first; bi <= last; ++bi) {
      const std::int64_t first_row = bi * block + 1, first_col = (d - bi) * block + 1;
      for (std::int64_t i = 0; i < block; ++i) {
        std::int32_t* row = score + (first_row + i) * side;
        const std::int32_t* above = row - side;
        const std::int32_t* costs = reference + (first_row + i) * side;
        std::int32_t left = row[first_col - 1], upper_left = above[first_col - 1];
        for (std::int64_t j = first_col; j < first_col + block; ++j) {
          const std::int32_t up = above[j];
          const std::int32_t best = std::max(std::max(upper_left + costs[j], up - penalty), left - penalty);
          row[j] = best;
          left = best;
          upper_left = up;
        }
      }
    }
  }
}

}  // namespace canopy::bench::rodinia::openmp
