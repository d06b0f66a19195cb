// The OpenMP baseline of backprop (built -O3 -march=native -fopenmp): the
// input layer's forward sums and weight adjustment, as Canopy's backprop does
// them, on Rodinia's layout ((inputs + 1) rows of 17 weights). The forward
// pass keeps 16 running sums per thread, combined in thread order.
#include <omp.h>

#include "openmp_ports.hpp"

#include <cstdint>
#include <vector>

namespace canopy::bench::rodinia::openmp {

namespace {
constexpr int kHidden = 16;
constexpr std::int64_t kRow = kHidden + 1;
}  // namespace

void backprop_forward(const float* weights, const float* units, std::int64_t rows, float* sums) {
  std::vector<float> partial(static_cast<std::size_t>(omp_get_max_threads() * kHidden), 0.0f);
#pragma omp parallel
  {
    float s[kHidden] = {};
#pragma omp for schedule(static)
    for (std::int64_t k = 0; k < rows; ++k) {
      const float* row = weights + k * kRow + 1;
      const float unit = units[k];
      for (int j = 0; j < kHidden; ++j) s[j] += row[j] * unit;
    }
    float* mine = partial.data() + omp_get_thread_num() * kHidden;
    for (int j = 0; j < kHidden; ++j) mine[j] = s[j];
  }
  for (int j = 0; j < kHidden; ++j) sums[j] = 0;
  for (std::size_t t = 0; t < partial.size() / kHidden; ++t)
    for (int j = 0; j < kHidden; ++j) sums[j] += partial[t * kHidden + static_cast<std::size_t>(j)];
}

void backprop_adjust(float* weights, float* previous, const float* delta, const float* units, std::int64_t rows) {
  constexpr double eta = 0.3, momentum = 0.3;
#pragma omp parallel for schedule(static)
  for (std::int64_t k = 0; k < rows; ++k) {
    float* __restrict row = weights + k * kRow;
    float* __restrict old = previous + k * kRow;
    const double unit = units[k];
    for (int j = 1; j <= kHidden; ++j) {
      const float change = static_cast<float>(eta * double(delta[j]) * unit + momentum * double(old[j]));
      row[j] += change;
      old[j] = change;
    }
  }
}

}  // namespace canopy::bench::rodinia::openmp
