// The OpenMP baseline of lud (built -O3 -march=native -fopenmp): the blocked
// schedule Canopy's lud uses, written by hand. Per block column k0: the
// diagonal block and the U rows right of it are eliminated on one thread and
// copied into a panel; then a `parallel for` over the rows below computes
// each row's L values and updates the rest of the row from the panel, the
// block's worth of L values held in registers (the block size is a template
// argument so the compiler unrolls over it).
#include <algorithm>
#include <cstdint>
#include <vector>

#include "openmp_ports.hpp"

namespace canopy::bench::rodinia::openmp {

namespace {

// The panel's rows are padded by 16 floats, as in Canopy's lud: rows n floats
// apart (a multiple of 4 KiB) would all fall in the same sets of the L1 cache.
std::int64_t panel_stride(std::int64_t n) { return n + 16; }

void eliminate_top(float* a, float* panel, std::int64_t n, std::int64_t k0, std::int64_t b) {
  const std::int64_t stride = panel_stride(n);
  for (std::int64_t p = 0; p < b; ++p) {
    const std::int64_t pivot = k0 + p;
    const float* __restrict pivot_row = a + pivot * n;
    for (std::int64_t i = p + 1; i < b; ++i) {
      float* __restrict row = a + (k0 + i) * n;
      const float l = row[pivot] / pivot_row[pivot];
      row[pivot] = l;
      for (std::int64_t c = pivot + 1; c < n; ++c) row[c] = row[c] - l * pivot_row[c];
    }
  }
  for (std::int64_t p = 0; p < b; ++p)
    std::copy(a + (k0 + p) * n + k0 + b, a + (k0 + p) * n + n, panel + p * stride + k0 + b);
}

template <int B>
void update_row(float* __restrict row, const float* __restrict diagonal, const float* __restrict panel, std::int64_t n,
                std::int64_t k0, std::int64_t b) {
  const std::int64_t stride = panel_stride(n);
  float l[B > 0 ? B : 64];
  const std::int64_t width = B > 0 ? B : b;
  for (std::int64_t p = 0; p < width; ++p) {
    float v = row[k0 + p];
    for (std::int64_t q = 0; q < p; ++q) v = v - l[q] * diagonal[q * n + p];
    l[p] = v / diagonal[p * n + p];
    row[k0 + p] = l[p];
  }
  for (std::int64_t c = k0 + width; c < n; ++c) {
    float v = row[c];
#pragma GCC unroll 64
    for (std::int64_t p = 0; p < width; ++p) v = v - l[p] * panel[p * stride + c];
    row[c] = v;
  }
}

template <int B>
void update_rows(float* a, const float* panel, std::int64_t n, std::int64_t k0, std::int64_t b) {
  const float* diagonal = a + k0 * n + k0;
#pragma omp parallel for schedule(static)
  for (std::int64_t r = k0 + b; r < n; ++r) update_row<B>(a + r * n, diagonal, panel, n, k0, b);
}

}  // namespace

void lud_decompose(float* a, std::int64_t n, std::int64_t block) {
  std::vector<float> panel(static_cast<std::size_t>(block * panel_stride(n)));
  for (std::int64_t k0 = 0; k0 < n; k0 += block) {
    const std::int64_t b = std::min(block, n - k0);
    eliminate_top(a, panel.data(), n, k0, b);
    if (k0 + b >= n) continue;
    if (b == 16)
      update_rows<16>(a, panel.data(), n, k0, b);
    else if (b == 32)
      update_rows<32>(a, panel.data(), n, k0, b);
    else
      update_rows<0>(a, panel.data(), n, k0, b);
  }
}

}  // namespace canopy::bench::rodinia::openmp
