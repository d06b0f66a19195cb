// Rodinia's lavaMD as a careful programmer writes it with OpenMP: the home
// boxes in a parallel loop; for each particle, the sums over every particle
// of the box's list kept in locals and stored once.
#include "lavaMD_openmp.hpp"

#include <cmath>

namespace canopy::bench::rodinia::openmp {

void lavamd(const double* positions, const double* charges, const std::int32_t* neighbours, const std::int32_t* counts,
            std::int64_t boxes, int particles, int list, double a2, double* forces) {
#pragma omp parallel for schedule(static)
  for (std::int64_t home = 0; home < boxes; ++home) {
    for (int i = 0; i < particles; ++i) {
      const double* a = positions + (home * particles + i) * 4;
      double v = 0, fx = 0, fy = 0, fz = 0;
      for (int k = 0; k < counts[home]; ++k) {
        const std::int64_t box = neighbours[home * list + k];
        const double* b = positions + box * particles * 4;
        const double* q = charges + box * particles;
        for (int j = 0; j < particles; ++j) {
          const double r2 = a[0] + b[4 * j] - (a[1] * b[4 * j + 1] + a[2] * b[4 * j + 2] + a[3] * b[4 * j + 3]);
          const double vij = std::exp(-(a2 * r2));
          const double fs = 2.0 * vij;
          v += q[j] * vij;
          fx += q[j] * (fs * (a[1] - b[4 * j + 1]));
          fy += q[j] * (fs * (a[2] - b[4 * j + 2]));
          fz += q[j] * (fs * (a[3] - b[4 * j + 3]));
        }
      }
      double* out = forces + (home * particles + i) * 4;
      out[0] = v;
      out[1] = fx;
      out[2] = fy;
      out[3] = fz;
    }
  }
}

}  // namespace canopy::bench::rodinia::openmp
