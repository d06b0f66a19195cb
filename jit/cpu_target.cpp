#include "internal/cpu_target.hpp"

#include <llvm/ADT/SmallVector.h>
#include <llvm/Analysis/TargetLibraryInfo.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/Host.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Transforms/Utils/Cloning.h>

#include <canopy/ir/dump.hpp>
#include <canopy/ir/error.hpp>

#include "internal/llvm_lowering.hpp"

namespace canopy::jit {

namespace {

llvm::orc::JITTargetMachineBuilder host_machine_builder() {
  auto builder = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!builder) throw Error("Canopy cannot generate code for this CPU: " + llvm::toString(builder.takeError()));
  // detectHost() fills in the host's features but leaves the CPU generic;
  // naming it gives the host's scheduling model and tuning (vector widths).
  builder->setCPU(llvm::sys::getHostCPUName().str());
  builder->setCodeGenOptLevel(llvm::CodeGenOpt::Aggressive);
  builder->setRelocationModel(llvm::Reloc::PIC_);
  builder->setCodeModel(llvm::CodeModel::Small);
  return std::move(*builder);
}

void optimize(llvm::Module& module, llvm::TargetMachine& machine) {
  llvm::LoopAnalysisManager loops;
  llvm::FunctionAnalysisManager functions;
  llvm::CGSCCAnalysisManager call_graph;
  llvm::ModuleAnalysisManager modules;
  llvm::PipelineTuningOptions tuning;
  tuning.LoopVectorization = true;
  tuning.SLPVectorization = true;
  tuning.LoopUnrolling = true;
  llvm::PassBuilder passes(&machine, tuning);
  // The host's C library: registered first so that it wins over the default.
  llvm::TargetLibraryInfoImpl library_info(machine.getTargetTriple());
  functions.registerPass([&] { return llvm::TargetLibraryAnalysis(library_info); });
  passes.registerModuleAnalyses(modules);
  passes.registerCGSCCAnalyses(call_graph);
  passes.registerFunctionAnalyses(functions);
  passes.registerLoopAnalyses(loops);
  passes.crossRegisterProxies(loops, functions, call_graph, modules);
  passes.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3).run(module, modules);
}

std::string emit(llvm::Module& module, llvm::TargetMachine& machine, llvm::CodeGenFileType kind) {
  llvm::SmallVector<char, 0> buffer;
  llvm::raw_svector_ostream out(buffer);
  llvm::legacy::PassManager passes;
  passes.add(new llvm::TargetLibraryInfoWrapperPass(machine.getTargetTriple()));
  if (machine.addPassesToEmitFile(passes, out, nullptr, kind))
    throw Error("LLVM cannot emit machine code for this CPU (" + HostTarget::get().description() + ")");
  passes.run(module);
  return std::string(buffer.data(), buffer.size());
}

std::string module_text(const llvm::Module& module) {
  std::string text;
  llvm::raw_string_ostream out(text);
  module.print(out, nullptr);
  return out.str();
}

}  // namespace

HostTarget::HostTarget() {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  llvm::InitializeNativeTargetAsmParser();
  auto builder = host_machine_builder();
  triple_ = builder.getTargetTriple().str();
  cpu_ = builder.getCPU();
  features_ = builder.getFeatures().getString();
  description_ = triple_ + ";" + cpu_ + ";" + features_;
}

const HostTarget& HostTarget::get() {
  static const HostTarget host;
  return host;
}

std::unique_ptr<llvm::TargetMachine> HostTarget::create_target_machine() const {
  auto machine = host_machine_builder().createTargetMachine();
  if (!machine)
    throw Error("LLVM cannot target this CPU (" + description_ + "): " + llvm::toString(machine.takeError()));
  return std::move(*machine);
}

std::string compile_for_host(const ir::Kernel& kernel, const std::string& symbol) {
  llvm::LLVMContext context;
  context.setOpaquePointers(true);
  auto machine = HostTarget::get().create_target_machine();
  llvm::Module module(symbol, context);
  module.setTargetTriple(machine->getTargetTriple().str());
  module.setDataLayout(machine->createDataLayout());

  LlvmLowering lowering(module, kernel);
  llvm::Function* function = lowering.lower(symbol);
  function->addFnAttr("target-cpu", machine->getTargetCPU());
  function->addFnAttr("target-features", machine->getTargetFeatureString());

  optimize(module, *machine);
  if (dump_enabled("llvm")) dump("llvm", kernel.name, module_text(module));
  if (dump_enabled("asm")) {
    // Code generation changes the module, so the assembly comes from a copy.
    auto copy = llvm::CloneModule(module);
    dump("asm", kernel.name, emit(*copy, *machine, llvm::CGFT_AssemblyFile));
  }
  return emit(module, *machine, llvm::CGFT_ObjectFile);
}

}  // namespace canopy::jit
