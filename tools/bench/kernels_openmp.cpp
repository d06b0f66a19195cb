// The OpenMP baselines of canopy-bench kernels (built -O3 -march=native
// -fopenmp -fno-math-errno): the loops a careful programmer writes by hand
// for the same five kernels, one point per iteration of a parallel loop.
#include <cmath>
#include <limits>

#include "baselines.hpp"

namespace canopy::bench::openmp {

void nbody(const float* x, const float* y, const float* z, const float* m, float eps2, std::int64_t n, float* ax,
           float* ay, float* az) {
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < n; ++i) {
    float fx = 0, fy = 0, fz = 0;
    const float xi = x[i], yi = y[i], zi = z[i];
    for (std::int64_t j = 0; j < n; ++j) {
      const float dx = x[j] - xi, dy = y[j] - yi, dz = z[j] - zi;
      const float r2 = dx * dx + dy * dy + dz * dz + eps2;
      const float inv = 1.0f / std::sqrt(r2);
      const float s = m[j] * inv * inv * inv;
      fx += dx * s;
      fy += dy * s;
      fz += dz * s;
    }
    ax[i] = fx;
    ay[i] = fy;
    az[i] = fz;
  }
}

void matmul(const double* a, const double* b, std::int64_t n, double* c) {
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (std::int64_t k = 0; k < n; ++k) acc += a[i * n + k] * b[k * n + j];
      c[i * n + j] = acc;
    }
}

void nearest(const float* points, const float* centres, std::int64_t n, std::int64_t features, std::int64_t clusters,
             std::int32_t* member) {
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < n; ++i) {
    float best = std::numeric_limits<float>::max();
    std::int32_t index = 0;
    for (std::int64_t c = 0; c < clusters; ++c) {
      float d = 0;
      for (std::int64_t f = 0; f < features; ++f) {
        const float diff = points[i * features + f] - centres[c * features + f];
        d += diff * diff;
      }
      if (d < best) {
        best = d;
        index = static_cast<std::int32_t>(c);
      }
    }
    member[i] = index;
  }
}

void mandelbrot(std::int64_t rows, std::int64_t cols, float x0, float y0, float step, std::int32_t iterations,
                std::int32_t* count) {
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < cols; ++j) {
      const float cx = x0 + static_cast<float>(j) * step, cy = y0 + static_cast<float>(i) * step;
      float zr = 0, zi = 0;
      std::int32_t k = 0;
      while (k < iterations && zr * zr + zi * zi <= 4.0f) {
        const float t = zr * zr - zi * zi + cx;
        zi = 2.0f * zr * zi + cy;
        zr = t;
        ++k;
      }
      count[i * cols + j] = k;
    }
}

void branchy(const float* x, std::int64_t n, float* y) {
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    if (v < -1.0f)
      y[i] = std::exp(v);
    else if (v < 1.0f)
      y[i] = v * v * 0.5f + std::sin(v);
    else
      y[i] = std::sqrt(v) * std::log(v);
  }
}

}  // namespace canopy::bench::openmp
