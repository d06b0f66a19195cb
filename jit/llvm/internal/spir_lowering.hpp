// SpirLowering: kernel IR to LLVM IR for spir64-unknown-unknown, the input of
// the SPIR-V translator (jit/spirv.hpp). It is the host lowering
// (llvm_lowering.hpp) with the hooks that differ on a device that runs one
// work-item per point:
//  - the entry is a `spir_kernel` taking its arguments directly, arrays as
//    `addrspace(1)` (global) pointers, in the order of the SPIR-V kernel ABI
//    (spirv.hpp), each with OpenCL's kernel_arg_* metadata;
//  - the index space comes from get_global_id (one point per work-item) or,
//    in kernels with reductions, from a loop over the piece in steps of
//    get_global_size, followed by a tree over the work-group in `addrspace(3)`
//    (local) scratch memory between barriers;
//  - math functions are calls to OpenCL's built-in functions by their
//    Itanium-mangled names (_Z4sqrtd, _Z3expf, ...), which the translator
//    turns into OpenCL.std extended instructions;
//  - atomic adds are `atomicrmw add` on integers and a compare-and-swap loop
//    on the bits of floats (SPIR-V has no float atomic add without an
//    extension).
//
// The module uses typed pointers: LLVMSPIRVLib 15 translates those (its
// opaque pointer support came later). After lowering, legalize_for_spirv
// rewrites the few LLVM intrinsics the base lowering emits (smin, smax, abs,
// minnum, maxnum, fptosi.sat) into what every SPIR-V consumer understands:
// OpenCL built-in calls or plain compares and selects with the same meaning,
// and orders the blocks as SPIR-V requires.
#pragma once

#include <string>
#include <vector>

#include <llvm/IR/Module.h>

#include <canopy/ir/kernel.hpp>
#include <canopy/jit/spirv.hpp>

#include "llvm_lowering.hpp"

namespace canopy::jit {

/// The data layout clang uses for spir64.
inline constexpr const char* kSpir64DataLayout =
    "e-i64:64-v16:16-v24:32-v32:32-v48:64-v96:128-v192:256-v256:256-v512:512-v1024:1024-n8:16:32:64";
inline constexpr const char* kSpir64Triple = "spir64-unknown-unknown";

class SpirLowering final : public LlvmLowering {
 public:
  /// Lowers into `module`, whose context uses typed pointers and whose
  /// triple and data layout are spir64's.
  SpirLowering(llvm::Module& module, const ir::Kernel& kernel);

 protected:
  llvm::Function* declare_entry(const std::string& symbol) override;
  void load_params() override;
  void emit_index_space(const std::function<void()>& body) override;
  unsigned array_address_space() const override { return 1; }
  llvm::Value* emit_math(ir::MathFn fn, ir::ScalarType type, const std::vector<llvm::Value*>& args) override;
  void finish_reductions() override;
  void emit_atomic_add(llvm::Value* address, llvm::Value* value, ir::ScalarType type) override;

 private:
  /// A call to the OpenCL built-in `mangled_name` returning `result`.
  llvm::Value* call_builtin(const std::string& mangled_name, llvm::Type* result, const std::vector<llvm::Value*>& args,
                            bool convergent = false);
  /// get_global_id(dim) and friends: the work-item function `name`
  /// ("get_global_id") for dimension `dim`, as i64.
  llvm::Value* work_item(const std::string& name, int dim);
  void emit_points(const std::function<void()>& body);
  void emit_strided_walk(const std::function<void()>& body);
  void attach_argument_metadata();

  bool has_reductions_ = false;
  /// Per parameter: the reduction's work-group scratch memory (null for others).
  std::vector<llvm::Value*> scratch_;
  /// begin and end of each index dimension of the piece.
  std::vector<llvm::Value*> begin_, end_;
};

/// Rewrites, in every function of `module`, the LLVM intrinsics that
/// LlvmLowering emits and SPIR-V consumers may not take (llvm.smin, smax,
/// abs, minnum, maxnum, fptosi.sat) into OpenCL built-in calls or compares
/// and selects with the IR's semantics, and puts each function's blocks in
/// reverse post-order (SPIR-V wants every block after its dominators).
void legalize_for_spirv(llvm::Module& module);

/// spirv_of's work (jit/spirv.hpp) once the kernel is verified and SPIR-V is
/// known to be available: lowering, LLVM's verifier, the translation and the
/// dumps.
SpirvKernel lower_to_spirv(const ir::Kernel& kernel, const SpirvOptions& options);

}  // namespace canopy::jit
