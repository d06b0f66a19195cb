// OpenCL C 1.2 from kernel IR: the OpenCL dialect of the shared C printer
// (c_source.hpp, which documents the kernel ABI and how the IR's semantics
// are kept). What is OpenCL's own here:
//  - `__kernel void`, `__global` arrays (`const` when the kernel only reads
//    them), reductions' scratch as a `__local` argument, get_global_id;
//  - the piece's first point comes in the global work offset;
//  - `#pragma OPENCL FP_CONTRACT OFF`, so that a * b + c is never fused into
//    an fma (Canopy's CPU code does not fuse either: results match exactly);
//    `cl_khr_fp64` is enabled only when the kernel uses f64;
//  - float to integer casts with convert_<int|long>_sat_rtz (saturating,
//    toward zero, NaN gives 0), integer abs through OpenCL's unsigned abs;
//  - atomic adds: atomic_add on int (core since OpenCL 1.1), atom_add on long
//    (cl_khr_int64_base_atomics), and on float and double a compare-and-swap
//    loop on the value's bits (atomic_cmpxchg on int, atom_cmpxchg on long).
//    A kernel with 64-bit atomics needs cl_khr_int64_base_atomics: the
//    OpenCL backend refuses it on a device without the extension, naming it.
#pragma once

#include <string_view>

#include "c_source.hpp"

namespace canopy::jit {

class OpenCLCPrinter final : public CSourcePrinter {
 public:
  using CSourcePrinter::CSourcePrinter;

  /// True for OpenCL C's keywords, types (vector types included), built-in
  /// functions and predefined macros, beside C's.
  static bool is_opencl_word(std::string_view word);

 protected:
  std::string dialect_name() const override { return "OpenCL C 1.2"; }
  std::string preamble(const CSourceFeatures& features) const override;
  std::string kernel_qualifier() const override { return "__kernel void"; }
  std::string global_pointer(ir::ScalarType type, bool read_only) const override;
  std::string scratch_parameter(ir::ScalarType type, const std::string& name) const override;
  bool begin_in_global_offset() const override { return true; }
  bool coordinates_non_negative() const override { return true; }
  std::string global_id(int dim) const override;
  std::string global_size() const override { return "get_global_size(0)"; }
  std::string local_id() const override { return "get_local_id(0)"; }
  std::string local_size() const override { return "get_local_size(0)"; }
  std::string group_id() const override { return "get_group_id(0)"; }
  std::string barrier() const override { return "barrier(CLK_LOCAL_MEM_FENCE);"; }
  std::string float_to_int(const std::string& operand, ir::ScalarType from, ir::ScalarType to) override;
  std::string atomic_add(const std::string& address, const std::string& value, ir::ScalarType type) override;
  std::string dialect_helper(const std::string& name) const override;
  bool is_reserved(std::string_view word) const override;
  std::string vector_type(ir::ScalarType type, int width) const override;
  std::string vector_load(const std::string& pointer, const std::string& index, int width) const override;
  /// A streaming store calls the helper stream_store_<vector type>: clang's
  /// __builtin_nontemporal_store (PoCL and other clang-based compilers), a
  /// plain store elsewhere.
  std::string vector_store(const std::string& pointer, const std::string& index, const std::string& value,
                           ir::ScalarType type, int width, bool streaming) override;
};

/// OpenCL C 1.2 source for `kernel`, which should already be optimized (the
/// IR passes); it is printed as it is. Throws canopy::Error when the kernel
/// does not verify.
CSource opencl_c_source(const ir::Kernel& kernel, const CSourceOptions& options = {});

}  // namespace canopy::jit
