// The OpenMP ports of backprop, gaussian, lud and nw (their *_openmp.cpp),
// for the workloads of canopy-bench and for rodinia-openmp, the standalone
// programs `canopy-bench rodinia --whole-process` runs. The other ports
// declare themselves in <name>_openmp.hpp or <name>_baselines.hpp.
#pragma once

#include <cstdint>

namespace canopy::bench::rodinia::openmp {

/// The 16 forward sums of the input layer over `rows` input units (bias included).
void backprop_forward(const float* weights, const float* units, std::int64_t rows, float* sums);
/// The input weights' adjustment from the hidden deltas (17, [0] unused).
void backprop_adjust(float* weights, float* previous, const float* delta, const float* units, std::int64_t rows);

/// Forward elimination of a (n x n) and b, multipliers into m.
void gaussian_forward(float* a, float* b, float* m, std::int64_t n);

/// Factors the n x n matrix `a` in place in blocks of `block` (at most 64).
void lud_decompose(float* a, std::int64_t n, std::int64_t block);

/// Needleman-Wunsch scores of (dim + 1)^2 `score` in place, blocks of `block`.
void nw_align(std::int32_t* score, const std::int32_t* reference, std::int64_t dim, std::int64_t block,
              std::int32_t penalty);

}  // namespace canopy::bench::rodinia::openmp
