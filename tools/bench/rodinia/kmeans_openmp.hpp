// The plain OpenMP baseline of Rodinia's kmeans (kmeans_openmp.cpp, built -O3
// -march=native -fopenmp): the same rounds as examples/rodinia/kmeans, with
// per-thread partial sums combined by the calling thread, as Rodinia does.
#pragma once

#include <cstdint>
#include <vector>

namespace canopy::bench::rodinia::openmp {

/// Clusters `count` points of `features` floats (row-major `values`) into
/// `clusters` groups from the first `clusters` points, until no more than
/// `threshold` points change cluster (or Rodinia's 500 rounds). Fills
/// `centres` ([clusters][features]) and `membership`; returns the rounds run.
int kmeans(const float* values, std::int64_t count, std::int64_t features, int clusters, float threshold,
           std::vector<float>& centres, std::vector<std::int32_t>& membership);

}  // namespace canopy::bench::rodinia::openmp
