// Plain C++ baselines that canopy-bench runs beside Canopy in the same
// process, on arrays of the same size: what a careful programmer writes by
// hand with OpenMP (compiled -O3 -march=native -fopenmp).
#pragma once

#include <cstdint>

namespace canopy::bench::openmp {

/// BabelStream's kernels, OpenMP `parallel for` (static schedule) over n elements.
template <class T>
void init(T* a, T* b, T* c, T va, T vb, T vc, std::int64_t n);
template <class T>
void copy(T* c, const T* a, std::int64_t n);
template <class T>
void mul(T* b, const T* c, T scalar, std::int64_t n);
template <class T>
void add(T* c, const T* a, const T* b, std::int64_t n);
template <class T>
void triad(T* a, const T* b, const T* c, T scalar, std::int64_t n);
template <class T>
T dot(const T* a, const T* b, std::int64_t n);

/// The number of threads an OpenMP parallel region uses.
int threads();

}  // namespace canopy::bench::openmp

namespace canopy::bench::openmp {

/// An OpenMP `parallel for` over n iterations whose body does nothing.
void empty_parallel_for(std::int64_t n);

}  // namespace canopy::bench::openmp

namespace canopy::bench::openmp {

// canopy-bench kernels (kernels_openmp.cpp): one point per parallel iteration.
void nbody(const float* x, const float* y, const float* z, const float* m, float eps2, std::int64_t n, float* ax,
           float* ay, float* az);
void matmul(const double* a, const double* b, std::int64_t n, double* c);
void nearest(const float* points, const float* centres, std::int64_t n, std::int64_t features, std::int64_t clusters,
             std::int32_t* member);
void mandelbrot(std::int64_t rows, std::int64_t cols, float x0, float y0, float step, std::int32_t iterations,
                std::int32_t* count);
void branchy(const float* x, std::int64_t n, float* y);

}  // namespace canopy::bench::openmp
