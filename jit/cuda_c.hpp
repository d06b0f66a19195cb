// CUDA C++ from kernel IR: the CUDA dialect of the shared C printer
// (c_source.hpp, which documents the kernel ABI and how the IR's semantics
// are kept), for NVRTC. What is CUDA's own here:
//  - kernels are `extern "C" __global__ void` (their names are not mangled,
//    so the host finds them by the IR's name), helpers are `__device__`;
//  - C++'s type names: 64-bit integers are `long long` (literals `5LL`),
//    bool elements in memory `unsigned char`; arrays are plain pointers
//    (`const` when the kernel only reads them, never __restrict__: one array
//    may be passed as two arguments);
//  - CUDA has no global work offset: the piece's begins are kernel arguments
//    and index(d) is begin + blockIdx * blockDim + threadIdx;
//  - reductions keep their scratch in `__shared__` arrays of
//    kCudaReductionBlock elements declared in the kernel;
//  - f32 math calls the `f` functions (sqrtf, expf, ...); min and max of
//    floats are fmin and fmax (CUDA's float overloads keep f32);
//  - float to integer casts and integer abs call helper functions printed
//    before the kernel (f64_to_i32, abs_i64, ...) that saturate and wrap in
//    plain code, independent of how PTX's cvt saturates;
//  - atomic adds are atomicAdd on int, float and double (double needs
//    compute capability 6.0) and on `unsigned long long` for i64 (the same
//    two's complement bits);
//  - NVRTC does not define INFINITY and NAN: the preamble does.
//
// The host side of the ABI, beyond c_source.hpp's list:
//  - an array argument is a CUdeviceptr (64-bit) to element 0, its extents
//    are `long long`; a scalar is passed by value (bool as a 32-bit int);
//  - a reduction parameter passes only <name>_partials (the scratch is
//    shared memory), one element per block;
//  - the range always passes each begin before its end (i_begin, i_end,
//    j_begin, ...), for point kernels too; the launching code never runs a
//    piece with a negative begin;
//  - point kernels: device dimension 0 (x) is the LAST index; each thread is
//    one point; `entry` runs whole blocks inside the piece, `edge_entry`
//    checks the ends. A launch may cover part of the piece: its begins are
//    where its first block starts, its ends the piece's ends;
//  - reduction kernels: a one-dimensional grid of blocks whose size is a
//    power of two no larger than kCudaReductionBlock; block b writes its
//    partial at <name>_partials[b] and the host combines them in block order;
//  - compile with NVRTC's --fmad=false (no a * b + c fused into an fma, as
//    Canopy's CPU code), and with its defaults -prec-div=true,
//    -prec-sqrt=true and -ftz=false (cuda_compile_options).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "c_source.hpp"

namespace canopy::jit {

/// The most threads a block of a reduction kernel may have: the size of the
/// kernel's __shared__ scratch arrays (a power of two).
inline constexpr int kCudaReductionBlock = 256;

class CudaCPrinter final : public CSourcePrinter {
 public:
  using CSourcePrinter::CSourcePrinter;

  /// True for words of CUDA C++ a name in the source may not be: C++
  /// keywords, CUDA's qualifiers, built-in variables, vector types and
  /// device functions, and the printer's own helpers.
  static bool is_cuda_word(std::string_view word);

 protected:
  std::string dialect_name() const override { return "CUDA C++"; }
  std::string preamble(const CSourceFeatures& features) const override;
  std::string kernel_qualifier() const override { return "extern \"C\" __global__ void"; }
  std::string helper_qualifier() const override { return "__device__"; }
  std::string type_name(ir::ScalarType type) const override;
  std::string unsigned_type_name(ir::ScalarType type) const override;
  std::string storage_type_name(ir::ScalarType type) const override;
  std::string global_pointer(ir::ScalarType type, bool read_only) const override;
  std::string scratch_parameter(ir::ScalarType type, const std::string& name) const override { return ""; }
  std::string scratch_declaration(ir::ScalarType type, const std::string& name) const override;
  bool begin_in_global_offset() const override { return false; }
  bool coordinates_non_negative() const override { return true; }
  std::string global_id(int dim) const override;
  std::string global_size() const override { return "(long long)gridDim.x * blockDim.x"; }
  std::string local_id() const override { return "(int)threadIdx.x"; }
  std::string local_size() const override { return "(int)blockDim.x"; }
  std::string group_id() const override { return "blockIdx.x"; }
  std::string barrier() const override { return "__syncthreads();"; }
  std::string long_suffix() const override { return "LL"; }
  std::string math_function(ir::MathFn fn, ir::ScalarType type) const override;
  std::string float_to_int(const std::string& operand, ir::ScalarType from, ir::ScalarType to) override;
  std::string atomic_add(const std::string& address, const std::string& value, ir::ScalarType type) override;
  std::string dialect_helper(const std::string& name) const override;
  bool is_reserved(std::string_view word) const override;

 private:
  /// Asks for a helper from a const hook (the base's need_helper is not const).
  void need(const std::string& name) const;
};

/// CUDA C++ source for `kernel`, which should already be optimized (the IR
/// passes); it is printed as it is. Throws canopy::Error when the kernel
/// does not verify.
CSource cuda_c_source(const ir::Kernel& kernel, const CSourceOptions& options = {});

/// The NVRTC options Canopy compiles its CUDA C++ with, for `architecture`
/// ("sm_90" for a cubin, "compute_80" for PTX): the target, --fmad=false and
/// IEEE division, square root and denormals spelled out.
std::vector<std::string> cuda_compile_options(const std::string& architecture);

}  // namespace canopy::jit
