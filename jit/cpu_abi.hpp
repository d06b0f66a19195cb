// The calling convention of every CPU kernel Canopy compiles: one plain C
// function signature and one argument block, so that the thread pool and the
// CPU backend can run any kernel without knowing what it does (the idea of
// Dr.Jit's `(start, end, thread, args)` kernels).
//
// The host fills an ArgSlot block as cpu_arg_layout() says and calls the entry
// once per piece of the range, from as many threads as it likes.
#pragma once

#include <cstdint>
#include <vector>

#include <canopy/ir/kernel.hpp>

namespace canopy::jit {

/// One 8-byte slot of a kernel's argument block. Which member a slot holds is
/// fixed by the kernel's parameters (see CpuArgLayout).
union ArgSlot {
  void* pointer;         ///< an array's element 0, or a reduction's partial-result target
  std::int64_t integer;  ///< an extent, a range bound, or a bool/i32/i64 scalar (sign-extended)
  double f64;            ///< an f64 scalar
  float f32;             ///< an f32 scalar (in the slot's first four bytes)
};
static_assert(sizeof(ArgSlot) == 8, "ArgSlot must be exactly 8 bytes: the generated code indexes the block by 8");

/// The one entry signature of every CPU kernel. It runs the kernel body for
/// every point whose index(0) is in [begin, end) and, for kernels of two or
/// three dimensions, whose index(d) is in [lo_d, hi_d) as read from `args` at
/// CpuArgLayout::range_slot. Index 0 is the outermost loop. An empty range is
/// allowed; reductions then store their identity.
using CpuEntry = void (*)(std::int64_t begin, std::int64_t end, const ArgSlot* args);

/// Where each parameter of a kernel lives in its argument block.
///
/// Parameters take slots in order:
///  - an array of rank r takes 1 + r slots: `pointer` to element 0, then its r
///    extents as `integer` (arrays are row-major, last index fastest: element
///    (i,j,k) of extents (n0,n1,n2) is at ((i*n1)+j)*n2+k; bool elements are one
///    byte holding 0 or 1);
///  - a scalar takes 1 slot: bool, i32 and i64 in `integer` (sign-extended), f32
///    in `f32`, f64 in `f64`;
///  - a reduction takes 1 slot: `pointer` to one value of the reduction's type,
///    where the entry STORES (overwrites) its partial result over the points it
///    ran (the identity of the operator when it ran none); the caller combines
///    the partial results of the pieces.
/// Then, at range_slot, two `integer` slots lo_d, hi_d for each dimension d = 1
/// .. dims-1 (none for a one-dimensional kernel).
struct CpuArgLayout {
  std::vector<int> first_slot;  ///< per parameter, the index of its first slot
  int range_slot = 0;           ///< index of lo_1 (equals slot_count for 1-D kernels)
  int slot_count = 0;           ///< the number of slots in the whole block
};

/// The argument-block layout of `kernel` (depends only on its parameters and dims).
CpuArgLayout cpu_arg_layout(const ir::Kernel& kernel);

}  // namespace canopy::jit
