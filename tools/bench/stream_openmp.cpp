// The OpenMP baseline of BabelStream's kernels (built -O3 -march=native -fopenmp).
#include <omp.h>

#include "baselines.hpp"

namespace canopy::bench::openmp {

template <class T>
void init(T* a, T* b, T* c, T va, T vb, T vc, std::int64_t n) {
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < n; ++i) {
    a[i] = va;
    b[i] = vb;
    c[i] = vc;
  }
}

template <class T>
void copy(T* c, const T* a, std::int64_t n) {
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < n; ++i) c[i] = a[i];
}

template <class T>
void mul(T* b, const T* c, T scalar, std::int64_t n) {
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < n; ++i) b[i] = scalar * c[i];
}

template <class T>
void add(T* c, const T* a, const T* b, std::int64_t n) {
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < n; ++i) c[i] = a[i] + b[i];
}

template <class T>
void triad(T* a, const T* b, const T* c, T scalar, std::int64_t n) {
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < n; ++i) a[i] = b[i] + scalar * c[i];
}

template <class T>
T dot(const T* a, const T* b, std::int64_t n) {
  T sum = 0;
#pragma omp parallel for schedule(static) reduction(+ : sum)
  for (std::int64_t i = 0; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

int threads() { return omp_get_max_threads(); }

#define CANOPY_BASELINE_TYPES(T)                                   \
  template void init<T>(T*, T*, T*, T, T, T, std::int64_t);        \
  template void copy<T>(T*, const T*, std::int64_t);               \
  template void mul<T>(T*, const T*, T, std::int64_t);             \
  template void add<T>(T*, const T*, const T*, std::int64_t);      \
  template void triad<T>(T*, const T*, const T*, T, std::int64_t); \
  template T dot<T>(const T*, const T*, std::int64_t);
CANOPY_BASELINE_TYPES(float)
CANOPY_BASELINE_TYPES(double)
#undef CANOPY_BASELINE_TYPES

}  // namespace canopy::bench::openmp
