// The plain OpenMP baseline of Rodinia's lavaMD (lavaMD_openmp.cpp, built
// -O3 -march=native -fopenmp): a parallel loop over the home boxes.
#pragma once

#include <cstdint>

namespace canopy::bench::rodinia::openmp {

/// Every particle's v, x, y, z (forces: [boxes][particles][4]) from the
/// particles of its box's list (neighbours: [boxes][list], the box itself
/// first, `counts` entries used), with positions [boxes][particles][4]
/// (v, x, y, z), charges [boxes][particles] and a2 = 2 alpha^2.
void lavamd(const double* positions, const double* charges, const std::int32_t* neighbours, const std::int32_t* counts,
            std::int64_t boxes, int particles, int list, double a2, double* forces);

}  // namespace canopy::bench::rodinia::openmp
