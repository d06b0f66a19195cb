// The LLVM half of jit/spirv.hpp: the kernel lowered for spir64, checked by
// LLVM's verifier and translated by LLVMSPIRVLib, in libcanopy_llvm.
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/PassManager.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Transforms/Utils/Mem2Reg.h>

// Set by jit/llvm/CMakeLists.txt: 1 where LLVMSPIRVLib was found.
#ifndef CANOPY_HAVE_LLVMSPIRVLIB
#define CANOPY_HAVE_LLVMSPIRVLIB 0
#endif
#if CANOPY_HAVE_LLVMSPIRVLIB
#include <LLVMSPIRVLib/LLVMSPIRVLib.h>
#endif

#include <canopy/ir/dump.hpp>
#include <canopy/ir/error.hpp>

#include "internal/spir_lowering.hpp"

namespace canopy::jit {

namespace {

std::string module_text(const llvm::Module& module) {
  std::string text;
  llvm::raw_string_ostream out(text);
  module.print(out, nullptr);
  return out.str();
}

// The locals and accumulators the lowering keeps in stack slots, as SSA
// values: the IR a reader (and a driver's compiler) sees is the plain one.
void promote_locals(llvm::Module& module) {
  llvm::FunctionAnalysisManager analyses;
  llvm::PassBuilder passes;
  passes.registerFunctionAnalyses(analyses);
  llvm::FunctionPassManager pipeline;
  pipeline.addPass(llvm::PromotePass());
  for (auto& function : module)
    if (!function.isDeclaration()) pipeline.run(function, analyses);
}

// OpenCL C 1.2 as the source language, SPIR 1.2 (what consumers of SPIR
// and the translator read to learn the environment).
void add_module_metadata(llvm::Module& module) {
  auto& context = module.getContext();
  auto* i32 = llvm::Type::getInt32Ty(context);
  auto version = [&](int major, int minor) {
    return llvm::MDNode::get(context, {llvm::ConstantAsMetadata::get(llvm::ConstantInt::get(i32, major)),
                                       llvm::ConstantAsMetadata::get(llvm::ConstantInt::get(i32, minor))});
  };
  module.getOrInsertNamedMetadata("opencl.ocl.version")->addOperand(version(1, 2));
  module.getOrInsertNamedMetadata("opencl.spir.version")->addOperand(version(1, 2));
}

#if CANOPY_HAVE_LLVMSPIRVLIB
std::string translate(llvm::Module& module, const std::string& kernel_name) {
  // The translator keeps state in globals (its options, error tables): one
  // translation at a time.
  static std::mutex mutex;
  std::lock_guard lock(mutex);
  SPIRV::TranslatorOpts options(SPIRV::VersionNumber::SPIRV_1_2);
  options.setFPContractMode(SPIRV::FPContractMode::Off);
  options.setDesiredBIsRepresentation(SPIRV::BIsRepresentation::OpenCL12);
  std::ostringstream out;
  std::string problem;
  if (!llvm::writeSpirv(&module, options, out, problem))
    throw Error("cannot translate kernel '" + kernel_name + "' to SPIR-V: LLVMSPIRVLib says: " + problem +
                " (this is a Canopy bug: please report it with the IR, which CANOPY_DUMP=ir,spirv writes)");
  return out.str();
}
#endif

}  // namespace

SpirvKernel lower_to_spirv(const ir::Kernel& kernel, const SpirvOptions& options) {
  SpirvKernel result;
  result.entry = spirv_entry_name(kernel);

  llvm::LLVMContext context;
  context.setOpaquePointers(false);  // LLVMSPIRVLib 15 translates typed pointers
  llvm::Module module(kernel.name, context);
  module.setTargetTriple(kSpir64Triple);
  module.setDataLayout(kSpir64DataLayout);
  SpirLowering lowering(module, kernel);
  lowering.lower(result.entry);
  add_module_metadata(module);
  legalize_for_spirv(module);
  promote_locals(module);
  std::string problems;
  llvm::raw_string_ostream problem_stream(problems);
  if (llvm::verifyModule(module, &problem_stream))
    throw Error("cannot compile kernel '" + kernel.name + "' to SPIR-V: LLVM rejected the lowered module: " +
                problem_stream.str() + " (this is a Canopy bug: please report it with the kernel's IR)");

  const bool dumping = dump_enabled("spirv");
  if (options.keep_llvm_ir || dumping) result.llvm_ir = module_text(module);
#if CANOPY_HAVE_LLVMSPIRVLIB
  result.binary = translate(module, kernel.name);
#endif
  if (result.binary.size() >= 8 && result.binary.size() % 4 == 0)
    std::memcpy(&result.version, result.binary.data() + 4, sizeof result.version);
  if (dumping) {
    if (const std::string path = dump("spirv", kernel.name, result.binary); !path.empty()) {
      std::ofstream text(path + ".ll", std::ios::binary);
      text << result.llvm_ir;
    }
    if (!options.keep_llvm_ir) result.llvm_ir.clear();
  }
  return result;
}

}  // namespace canopy::jit
