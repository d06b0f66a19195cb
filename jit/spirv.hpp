// SPIR-V from kernel IR, for devices that take SPIR-V (Level Zero, and any
// OpenCL 2.1+ driver): the optimized IR is lowered to LLVM IR for
// spir64-unknown-unknown (internal/spir_lowering.hpp: the host lowering with
// the device's entry, index space, address spaces and built-ins) and
// translated in-process by LLVMSPIRVLib into a SPIR-V 1.0-1.2 module for the
// OpenCL environment (Kernel, Addresses, Int64 capabilities; Float64 and
// Int8 where the kernel needs them). FP contraction is off, so a * b + c is
// never fused (as on the CPU and in Canopy's OpenCL C).
//
// Where Canopy was built without LLVMSPIRVLib, spirv_available() is false
// and spirv_of throws canopy::Error saying so.
//
// CANOPY_DUMP=spirv writes each kernel's module to <kernel>.spirv and the
// LLVM IR given to the translator beside it, <kernel>.spirv.ll.
//
// The SPIR-V kernel ABI (what a host sets before launching `entry`):
//  1. for each IR parameter, in order:
//     - array of rank r: a CrossWorkgroup (global) pointer to the buffer
//       (bool elements are one byte), then its r extents as 64-bit
//       integers, outermost first, then the element the buffer starts at
//       (`first`, 64-bit: a device copy may hold a window of the array);
//       element (i,j,k) of extents (n0,n1,n2) is ((i*n1)+j)*n2+k, at
//       [((i*n1)+j)*n2+k - first] in the buffer;
//     - scalar: its value; bool as a 32-bit integer holding 0 or 1, i32 and
//       i64 as 32- and 64-bit integers, f32 and f64 as floats and doubles;
//     - reduction: a global pointer to the partial results, where
//       work-group g writes its value at [g] (one element of the
//       reduction's type; bool as one byte), then a Workgroup (local)
//       pointer to scratch memory of one element per work-item, which the
//       host sizes (Level Zero: zeKernelSetArgumentValue with a size and no
//       value; OpenCL: clSetKernelArg with a size and NULL);
//  2. then the piece, for each index dimension d in order: begin_d, end_d
//     (64-bit integers, 0 <= begin_d). No global offset is used.
//  Kernels without reductions run one point per work-item: the device's
//  dimension 0 (the fastest, get_global_id(0), group size X) is the LAST
//  index, so index(d) = begin_d + get_global_id(dims - 1 - d); work-items
//  past end_d in any dimension do nothing, so the host rounds each
//  dimension's work-items up to whole work-groups.
//  Kernels with reductions are launched in one dimension with a
//  power-of-two work-group size; work-item w of W in all walks the piece's
//  points w, w + W, ... (row-major, the last index fastest), folding them
//  into one private value per reduction; each work-group then combines its
//  work-items' values in a tree in the scratch memory and writes one
//  partial result. The host combines the partials in group order.
#pragma once

#include <cstdint>
#include <string>

#include <canopy/ir/kernel.hpp>

namespace canopy::jit {

/// A kernel as SPIR-V.
struct SpirvKernel {
  /// The SPIR-V module: its 32-bit words in the host's byte order (as
  /// zeModuleCreate and clCreateProgramWithIL take them).
  std::string binary;
  /// The name of the kernel's entry point in the module.
  std::string entry;
  /// The module's SPIR-V version word (0x00010000 is 1.0).
  std::uint32_t version = 0;
  /// The LLVM IR (text) given to the translator, when SpirvOptions asked for it.
  std::string llvm_ir;
};

/// Choices about the generated module.
struct SpirvOptions {
  /// Keep the LLVM IR text in SpirvKernel::llvm_ir.
  bool keep_llvm_ir = false;
};

/// True when this build of Canopy can translate to SPIR-V (LLVMSPIRVLib was
/// found when it was built).
bool spirv_available();
/// Why spirv_available() is false ("no SPIR-V: LLVMSPIRVLib not found ..."),
/// or an empty string.
std::string spirv_unavailable_reason();

/// The entry point name a kernel gets: its IR name where that is a plain
/// identifier that cannot be mistaken for a built-in's mangled name, else
/// the name with other characters replaced by '_' and "k_" in front.
std::string spirv_entry_name(const ir::Kernel& kernel);

/// SPIR-V for `kernel`, which should already be optimized (the IR passes);
/// it is lowered as it is. Throws canopy::Error when the kernel does not
/// verify, when the translator rejects the module (a Canopy bug; the message
/// carries the translator's reason), or when SPIR-V is not available.
/// Thread-safe (translations run one at a time).
SpirvKernel spirv_of(const ir::Kernel& kernel, const SpirvOptions& options = {});

}  // namespace canopy::jit
