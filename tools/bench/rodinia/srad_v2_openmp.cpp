// srad_v2's OpenMP baseline: what a careful programmer writes by hand. Each
// iteration is three parallel loops: the region of interest's sums (an
// OpenMP reduction in double), the derivatives and coefficients, and the
// update; the image loops go over rows (static schedule) with plain
// vectorisable inner loops over the interior columns and the first and last
// columns done apart.
#include <omp.h>

#include <chrono>

#include "srad_v2_baselines.hpp"

namespace canopy::bench::rodinia::srad_v2_baseline {

namespace {

struct Rows {
  const float* above;  // the image's rows above, at and below row i (clamped at the edges)
  const float* row;
  const float* below;
  float* dn;
  float* ds;
  float* dw;
  float* de;
  float* c;
};

inline float coefficient(float jc, float dn, float ds, float dw, float de, float q0sqr) {
  const float g2 = (dn * dn + ds * ds + dw * dw + de * de) / (jc * jc);
  const float l = (dn + ds + dw + de) / jc;
  const float num = 0.5f * g2 - (1.0f / 16.0f) * (l * l);
  const float den = 1.0f + 0.25f * l;
  const float qsqr = num / (den * den);
  const float ratio = (qsqr - q0sqr) / (q0sqr * (1.0f + q0sqr));
  const float value = 1.0f / (1.0f + ratio);
  return value < 0.0f ? 0.0f : (value > 1.0f ? 1.0f : value);
}

// Column j of one row; west and east are the neighbours' values (the pixel's
// own at the edges).
inline void coefficients_at(const Rows& r, std::int64_t j, float west, float east, float q0sqr) {
  const float jc = r.row[j];
  const float dn = r.above[j] - jc, ds = r.below[j] - jc, dw = west - jc, de = east - jc;
  r.dn[j] = dn;
  r.ds[j] = ds;
  r.dw[j] = dw;
  r.de[j] = de;
  r.c[j] = coefficient(jc, dn, ds, dw, de, q0sqr);
}

void coefficients_row(const Rows& r, std::int64_t cols, float q0sqr) {
  coefficients_at(r, 0, r.row[0], cols > 1 ? r.row[1] : r.row[0], q0sqr);
#pragma omp simd
  for (std::int64_t j = 1; j < cols - 1; ++j) coefficients_at(r, j, r.row[j - 1], r.row[j + 1], q0sqr);
  if (cols > 1) coefficients_at(r, cols - 1, r.row[cols - 2], r.row[cols - 1], q0sqr);
}

}  // namespace

double run_openmp(const Problem& problem, std::vector<float>& result) {
  // Timed from the input in host memory: the arrays' creation counts.
  const auto start = std::chrono::steady_clock::now();
  const std::int64_t rows = problem.rows, cols = problem.cols;
  const std::size_t pixels = static_cast<std::size_t>(rows * cols);
  std::vector<float> image(problem.image, problem.image + pixels);
  std::vector<float> dn(pixels), ds(pixels), dw(pixels), de(pixels), c(pixels);
  float* const J = image.data();
  const std::int64_t r1 = problem.r1, r2 = problem.r2, c1 = problem.c1, c2 = problem.c2;
  const double roi_pixels = double((r2 - r1 + 1) * (c2 - c1 + 1));
  const float lambda = problem.lambda;

  for (int iteration = 0; iteration < problem.iterations; ++iteration) {
    double sum = 0, sum2 = 0;
#pragma omp parallel for reduction(+ : sum, sum2) schedule(static)
    for (std::int64_t i = r1; i <= r2; ++i)
      for (std::int64_t j = c1; j <= c2; ++j) {
        const double pixel = J[i * cols + j];
        sum += pixel;
        sum2 += pixel * pixel;
      }
    const double mean = sum / roi_pixels;
    const float q0sqr = float((sum2 / roi_pixels - mean * mean) / (mean * mean));

#pragma omp parallel for schedule(static)
    for (std::int64_t i = 0; i < rows; ++i) {
      const std::int64_t k = i * cols;
      const Rows r{
          J + (i > 0 ? k - cols : k), J + k, J + (i < rows - 1 ? k + cols : k), &dn[k], &ds[k], &dw[k], &de[k], &c[k]};
      coefficients_row(r, cols, q0sqr);
    }

#pragma omp parallel for schedule(static)
    for (std::int64_t i = 0; i < rows; ++i) {
      const std::int64_t k = i * cols;
      const float* cc = &c[k];
      const float* cs = &c[i < rows - 1 ? k + cols : k];
      const float *n = &dn[k], *s = &ds[k], *w = &dw[k], *e = &de[k];
      float* row = J + k;
#pragma omp simd
      for (std::int64_t j = 0; j < cols - 1; ++j)
        row[j] = row[j] + 0.25f * lambda * (cc[j] * n[j] + cs[j] * s[j] + cc[j] * w[j] + cc[j + 1] * e[j]);
      const std::int64_t j = cols - 1;
      row[j] = row[j] + 0.25f * lambda * (cc[j] * n[j] + cs[j] * s[j] + cc[j] * w[j] + cc[j] * e[j]);
    }
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  result.swap(image);
  return seconds;
}

}  // namespace canopy::bench::rodinia::srad_v2_baseline
