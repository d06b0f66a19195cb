// The OpenMP side of `canopy-bench overhead` (built -O3 -march=native -fopenmp).
#include "baselines.hpp"

namespace canopy::bench::openmp {

void empty_parallel_for(std::int64_t n) {
  // The body is empty, as the Canopy kernel's is: the compiler drops the loop
  // and what is left is the cost of the parallel region itself.
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < n; ++i) {
  }
}

}  // namespace canopy::bench::openmp
