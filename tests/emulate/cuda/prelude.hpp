// The CUDA C++ that Canopy generates, given its GPU meaning on the host:
// the emulated NVRTC (nvrtc.cpp) includes this header before the source and
// compiles both with clang++ into a shared object that the emulated driver
// (driver.cpp) runs. What a kernel may use:
//  - threadIdx, blockIdx, blockDim, gridDim, warpSize;
//  - __syncthreads: the threads of a block run as cooperating fibers and
//    wait here for each other (the driver reports a barrier that not every
//    thread of the block reaches);
//  - __shared__: one array per kernel library; the driver runs one block at
//    a time on one thread, so every thread of the running block sees the
//    same array, as threads of a block see their shared memory;
//  - atomics (atomicAdd, atomicSub, atomicExch, atomicMin, atomicMax,
//    atomicCAS) returning the old value;
//  - warp shuffles (__shfl_sync, __shfl_up_sync, __shfl_down_sync,
//    __shfl_xor_sync): the lanes of a warp meet at a warp barrier;
//  - CUDA's min and max overloads, the bit casts (__int_as_float, ...) and
//    the math library of the host.
// Kernels are compiled without contraction of a * b + c (NVRTC's
// --fmad=false), in IEEE arithmetic without flushing denormals.
#pragma once

#include <math.h>
#include <stdint.h>
#include <string.h>

#include <cstddef>
#include <type_traits>
#include <utility>

#include "kernel_abi.hpp"

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))
#define __shared__ static
#define __restrict__ __restrict
#define __CUDACC__ 1
#define __CUDA_ARCH__ CANOPY_EMULATED_CUDA_ARCH

struct uint3 {
  unsigned int x, y, z;
};
struct dim3 {
  unsigned int x, y, z;
};

extern "C" {
uint3 threadIdx, blockIdx;
dim3 blockDim, gridDim;
int canopy_emulated_warp_size = 32;
unsigned long long* canopy_emulated_warp_slots = nullptr;
canopy_emulated::Barrier canopy_emulated_barrier = nullptr;
canopy_emulated::Barrier canopy_emulated_warp_barrier = nullptr;
}

#define warpSize canopy_emulated_warp_size

inline void __syncthreads() { canopy_emulated_barrier(); }
inline void __syncwarp(unsigned = 0xffffffffu) { canopy_emulated_warp_barrier(); }

// ---- bit casts ----------------------------------------------------------------

template <class To, class From>
inline To canopy_emulated_bits(From value) {
  static_assert(sizeof(To) == sizeof(From));
  To result;
  memcpy(&result, &value, sizeof result);
  return result;
}
inline float __int_as_float(int x) { return canopy_emulated_bits<float>(x); }
inline int __float_as_int(float x) { return canopy_emulated_bits<int>(x); }
inline float __uint_as_float(unsigned int x) { return canopy_emulated_bits<float>(x); }
inline unsigned int __float_as_uint(float x) { return canopy_emulated_bits<unsigned int>(x); }
inline double __longlong_as_double(long long x) { return canopy_emulated_bits<double>(x); }
inline long long __double_as_longlong(double x) { return canopy_emulated_bits<long long>(x); }

// ---- CUDA's min and max: overloads per type (float ones are fminf and fmaxf) ----

#define CANOPY_EMULATED_MIN_MAX(T)                 \
  inline T min(T a, T b) { return b < a ? b : a; } \
  inline T max(T a, T b) { return a < b ? b : a; }
CANOPY_EMULATED_MIN_MAX(int)
CANOPY_EMULATED_MIN_MAX(unsigned int)
CANOPY_EMULATED_MIN_MAX(long long)
CANOPY_EMULATED_MIN_MAX(unsigned long long)
#undef CANOPY_EMULATED_MIN_MAX
inline float min(float a, float b) { return fminf(a, b); }
inline float max(float a, float b) { return fmaxf(a, b); }
inline double min(double a, double b) { return fmin(a, b); }
inline double max(double a, double b) { return fmax(a, b); }
inline long long llmin(long long a, long long b) { return min(a, b); }
inline long long llmax(long long a, long long b) { return max(a, b); }
inline unsigned int umin(unsigned int a, unsigned int b) { return min(a, b); }
inline unsigned int umax(unsigned int a, unsigned int b) { return max(a, b); }

// ---- atomics: the old value, as on the GPU ------------------------------------------

template <class T, class F>
inline T canopy_emulated_atomic(T* address, F update) {
  T old = __atomic_load_n(address, __ATOMIC_RELAXED);
  while (!__atomic_compare_exchange_n(address, &old, update(old), false, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
  return old;
}
// Float atomics go through the bits: compare-exchange on the integer of the same size.
template <class T, class F>
inline T canopy_emulated_float_atomic(T* address, F update) {
  using Bits = std::conditional_t<sizeof(T) == 4, unsigned int, unsigned long long>;
  const Bits old = canopy_emulated_atomic(reinterpret_cast<Bits*>(address), [&](Bits bits) {
    return canopy_emulated_bits<Bits>(update(canopy_emulated_bits<T>(bits)));
  });
  return canopy_emulated_bits<T>(old);
}
inline int atomicAdd(int* a, int v) { return __atomic_fetch_add(a, v, __ATOMIC_RELAXED); }
inline unsigned int atomicAdd(unsigned int* a, unsigned int v) { return __atomic_fetch_add(a, v, __ATOMIC_RELAXED); }
inline unsigned long long atomicAdd(unsigned long long* a, unsigned long long v) {
  return __atomic_fetch_add(a, v, __ATOMIC_RELAXED);
}
inline float atomicAdd(float* a, float v) {
  return canopy_emulated_float_atomic(a, [v](float old) { return old + v; });
}
inline double atomicAdd(double* a, double v) {
  return canopy_emulated_float_atomic(a, [v](double old) { return old + v; });
}
inline int atomicSub(int* a, int v) { return __atomic_fetch_sub(a, v, __ATOMIC_RELAXED); }
inline unsigned int atomicSub(unsigned int* a, unsigned int v) { return __atomic_fetch_sub(a, v, __ATOMIC_RELAXED); }
template <class T>
inline T atomicExch(T* a, T v) {
  return __atomic_exchange_n(a, v, __ATOMIC_RELAXED);
}
inline float atomicExch(float* a, float v) {
  return canopy_emulated_float_atomic(a, [v](float) { return v; });
}
template <class T>
inline T atomicMin(T* a, T v) {
  return canopy_emulated_atomic(a, [v](T old) { return v < old ? v : old; });
}
template <class T>
inline T atomicMax(T* a, T v) {
  return canopy_emulated_atomic(a, [v](T old) { return v > old ? v : old; });
}
template <class T>
inline T atomicCAS(T* a, T compare, T v) {
  __atomic_compare_exchange_n(a, &compare, v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
  return compare;  // the old value, whether or not it was swapped
}

// ---- warp shuffles --------------------------------------------------------------------

inline unsigned int canopy_emulated_lane_index() {
  return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}
// Every lane leaves its value in its slot, the warp meets, each reads the
// slot of `source` (its own where `source` is outside the warp), and the
// warp meets again before the slots are reused.
template <class T>
inline T canopy_emulated_shuffle(T value, int source, int width) {
  static_assert(sizeof(T) <= 8, "a warp shuffle moves at most 8 bytes");
  const unsigned int me = canopy_emulated_lane_index();
  const unsigned int warp_first = me - me % static_cast<unsigned int>(warpSize);
  const unsigned int lane = me - warp_first;
  const unsigned int segment = lane - lane % static_cast<unsigned int>(width);
  unsigned long long slot = 0;
  memcpy(&slot, &value, sizeof value);
  canopy_emulated_warp_slots[me] = slot;
  canopy_emulated_warp_barrier();
  T result = value;
  if (source >= 0 && source < width) {
    const unsigned long long theirs =
        canopy_emulated_warp_slots[warp_first + segment + static_cast<unsigned int>(source)];
    memcpy(&result, &theirs, sizeof result);
  }
  canopy_emulated_warp_barrier();
  return result;
}
inline int canopy_emulated_segment_lane(int width) {
  return static_cast<int>(canopy_emulated_lane_index() % static_cast<unsigned int>(warpSize)) % width;
}
template <class T>
inline T __shfl_sync(unsigned, T value, int source, int width = 32) {
  return canopy_emulated_shuffle(value, source % width, width);
}
template <class T>
inline T __shfl_up_sync(unsigned, T value, unsigned delta, int width = 32) {
  const int lane = canopy_emulated_segment_lane(width);
  const int source = lane - static_cast<int>(delta);
  return canopy_emulated_shuffle(value, source < 0 ? lane : source, width);
}
template <class T>
inline T __shfl_down_sync(unsigned, T value, unsigned delta, int width = 32) {
  const int lane = canopy_emulated_segment_lane(width);
  const int source = lane + static_cast<int>(delta);
  return canopy_emulated_shuffle(value, source >= width ? lane : source, width);
}
template <class T>
inline T __shfl_xor_sync(unsigned, T value, int mask, int width = 32) {
  return canopy_emulated_shuffle(value, canopy_emulated_segment_lane(width) ^ mask, width);
}

// ---- the entry points ---------------------------------------------------------------

// Calls `kernel` with its arguments read from kernelParams, as the driver
// reads them by the kernel's parameter types.
template <class... Params, std::size_t... I>
inline void canopy_emulated_call(void (*kernel)(Params...), void** params, std::index_sequence<I...>) {
  kernel(*static_cast<std::remove_cv_t<std::remove_reference_t<Params>>*>(params[I])...);
}
template <class... Params>
inline void canopy_emulated_call(void (*kernel)(Params...), void** params) {
  canopy_emulated_call(kernel, params, std::index_sequence_for<Params...>{});
}
