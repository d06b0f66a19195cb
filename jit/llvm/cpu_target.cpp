#include "internal/cpu_target.hpp"

#include <algorithm>
#include <memory>

#include <llvm/ADT/SmallVector.h>
#include <llvm/Analysis/TargetLibraryInfo.h>
#include <llvm/Analysis/ValueTracking.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/IntrinsicsX86.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/Linker/Linker.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/Host.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Transforms/Utils/Cloning.h>

#include <canopy/ir/dump.hpp>
#include <canopy/ir/error.hpp>
#include <canopy/ir/settings.hpp>
#include <canopy/ir/visitor.hpp>

#include <canopy/jit/cpu_abi.hpp>
#include "internal/llvm_lowering.hpp"
#include "internal/page_prefetch.hpp"
#include "internal/row_prefetch.hpp"
#include "internal/simd_lowering.hpp"

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

// How much of LLVM's optimizer a kernel gets.
enum class Pipeline {
  Full,   ///< O3: scalar code, which LLVM's vectorizers may still improve
  Lanes,  ///< O2 without the vectorizers: SIMD across points with loops in the body
  Light,  ///< SIMD across points, a straight-line body
};

// The light pipeline: the lowering's code for a body without loops is a
// vector loop over the points with the body inside, already in SSA form, so
// what O2 adds to it (the inliner's function simplification, loop rotation,
// unrolling, idiom recognition) finds almost nothing and costs 1.5 to 11 ms a
// kernel, up to a third of its compile. What is kept gives code O2 would
// give, but for the order of a few instructions: clean-up (SROA, EarlyCSE,
// InstCombine, SimplifyCFG), reassociation (a neighbour's index, row * cols
// + j + 1, shares its sum with the point's own), hoisting of what no point
// changes (LICM), the deletion of a loop whose points do nothing left (a
// kernel that only reads, an empty one that times launches) and redundancy
// elimination (GVN). Vector math functions
// (internal helpers, jit/llvm/vector_math.cpp) are inlined first, as O2's
// inliner inlines them (branchy's exp, sin and log: the same machine code, in
// 5 ms of optimization instead of 16).
constexpr const char* kLightPipeline =
    "always-inline,function(sroa,early-cse<memssa>,instcombine,simplifycfg,reassociate,loop-mssa(licm),"
    "loop(loop-deletion),gvn,instcombine,simplifycfg)";

const char* name_of(Pipeline pipeline) {
  switch (pipeline) {
    case Pipeline::Full: return "O3";
    case Pipeline::Lanes: return "O2 without vectorizers";
    case Pipeline::Light: return "light";
  }
  return "?";
}

Pipeline pipeline_for(const ir::Kernel& kernel, bool lanes_are_points) {
  if (!lanes_are_points) return Pipeline::Full;
  return ir::has_loops(kernel) ? Pipeline::Lanes : Pipeline::Light;
}

// The software prefetches, last in every pipeline: a row's lines ahead,
// then a page ahead in the loops over points.
void add_prefetch_passes(llvm::ModulePassManager& pipeline) {
  pipeline.addPass(llvm::createModuleToFunctionPassAdaptor(RowPrefetchPass()));
  pipeline.addPass(llvm::createModuleToFunctionPassAdaptor(PageAheadPrefetchPass()));
}

void optimize(llvm::Module& module, llvm::TargetMachine& machine, Pipeline pipeline) {
  llvm::LoopAnalysisManager loops;
  llvm::FunctionAnalysisManager functions;
  llvm::CGSCCAnalysisManager call_graph;
  llvm::ModuleAnalysisManager modules;
  llvm::PipelineTuningOptions tuning;
  // Code with one point per lane is vector code already: LLVM's vectorizers
  // would find nothing to do in it and only cost compile time.
  tuning.LoopVectorization = pipeline == Pipeline::Full;
  tuning.SLPVectorization = pipeline == Pipeline::Full;
  // LLVM's unroller runs only on the loops the lowerings mark for it
  // (unrolls_fully): small loops of a known trip count. Its heuristics
  // unrolled whole loop nests at a cost of compile time (Rodinia lud's
  // lud_top_16: 370 ms; gaussian_step, nw and backprop twice what they
  // take without) for no speed measurable in canopy-bench rodinia or kernels.
  tuning.LoopUnrolling = false;
  llvm::PassBuilder passes(&machine, tuning);
  // The host's C library: registered first so that it wins over the default.
  llvm::TargetLibraryInfoImpl library_info(machine.getTargetTriple());
  functions.registerPass([&] { return llvm::TargetLibraryAnalysis(library_info); });
  passes.registerModuleAnalyses(modules);
  passes.registerCGSCCAnalyses(call_graph);
  passes.registerFunctionAnalyses(functions);
  passes.registerLoopAnalyses(loops);
  passes.crossRegisterProxies(loops, functions, call_graph, modules);
  const bool prefetch = settings().prefetch != "off";
  if (pipeline == Pipeline::Light) {
    for (auto& f : module)
      if (!f.isDeclaration() && f.hasInternalLinkage()) f.addFnAttr(llvm::Attribute::AlwaysInline);
    llvm::ModulePassManager light;
    if (auto error = passes.parsePassPipeline(light, kLightPipeline))
      throw Error("Canopy's light LLVM pipeline does not parse: " + llvm::toString(std::move(error)));
    if (prefetch) add_prefetch_passes(light);
    light.run(module, modules);
    return;
  }
  // Last, so that it sees the loops as unrolling and vectorizing left them.
  if (prefetch)
    passes.registerOptimizerLastEPCallback(
        [](llvm::ModulePassManager& pipeline, llvm::OptimizationLevel) { add_prefetch_passes(pipeline); });
  passes
      .buildPerModuleDefaultPipeline(pipeline == Pipeline::Full ? llvm::OptimizationLevel::O3
                                                                : llvm::OptimizationLevel::O2)
      .run(module, modules);
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

// Turns the vector stores of `function` into the arrays at `slots` of its
// argument block into aligned non-temporal stores, and fences them before
// every return so the caller's completion signal orders after them. True when
// it changed something.
bool mark_streaming_stores(llvm::Function& function, const std::vector<int>& slots) {
  const auto& layout = function.getParent()->getDataLayout();
  llvm::Argument* args = function.getArg(2);
  auto& context = function.getContext();
  auto* flag = llvm::MDNode::get(
      context, {llvm::ConstantAsMetadata::get(llvm::ConstantInt::get(llvm::Type::getInt32Ty(context), 1))});
  bool marked = false;
  for (auto& block : function) {
    for (auto& instruction : block) {
      auto* store = llvm::dyn_cast<llvm::StoreInst>(&instruction);
      if (!store || !store->getValueOperand()->getType()->isVectorTy()) continue;
      const auto bytes = layout.getTypeStoreSize(store->getValueOperand()->getType()).getFixedSize();
      if (bytes < 16 || (bytes & (bytes - 1)) != 0) continue;
      // The array's base pointer is loaded from its slot of the argument block.
      auto* base = llvm::dyn_cast<llvm::LoadInst>(llvm::getUnderlyingObject(store->getPointerOperand(), 0));
      if (!base) continue;
      llvm::APInt offset(64, 0);
      if (base->getPointerOperand()->stripAndAccumulateConstantOffsets(layout, offset, true) != args) continue;
      const auto slot = offset.getSExtValue() / 8;
      if (std::find(slots.begin(), slots.end(), slot) == slots.end()) continue;
      // Wider than a cache line (SIMD across points with two or more
      // registers): code generation splits it into stores of one line each.
      store->setAlignment(llvm::Align(std::min<std::uint64_t>(bytes, 64)));
      store->setMetadata(llvm::LLVMContext::MD_nontemporal, flag);
      marked = true;
    }
  }
  if (!marked) return false;
  auto* sfence = llvm::Intrinsic::getDeclaration(function.getParent(), llvm::Intrinsic::x86_sse_sfence);
  for (auto& block : function)
    if (auto* ret = llvm::dyn_cast<llvm::ReturnInst>(block.getTerminator()))
      llvm::CallInst::Create(sfence, {}, "", ret);
  return true;
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

bool HostTarget::has(const char* feature) const {
  return ("," + features_ + ",").find(std::string(",+") + feature + ",") != std::string::npos;
}

bool HostTarget::is_x86() const {
  return triple_.rfind("x86_64", 0) == 0 || triple_.rfind("i686", 0) == 0 || triple_.rfind("i386", 0) == 0;
}

int HostTarget::vector_bits() const {
  if (has("avx512f")) return 512;
  if (has("avx")) return 256;
  return 128;
}

bool HostTarget::converts_int64_lanes() const { return !is_x86() || has("avx512dq"); }

bool HostTarget::fuses_multiply_add() const { return !is_x86() || has("fma"); }

const HostTarget& HostTarget::get() {
  // Never destroyed: a compile still running in a background thread at exit
  // gives its machine back to the pool.
  static const HostTarget* const host = new HostTarget;
  return *host;
}

std::unique_ptr<llvm::TargetMachine> HostTarget::create_target_machine() const {
  auto machine = host_machine_builder().createTargetMachine();
  if (!machine)
    throw Error("LLVM cannot target this CPU (" + description_ + "): " + llvm::toString(machine.takeError()));
  return std::move(*machine);
}

HostTarget::Lease::Lease(const HostTarget& host) : host_(host) {
  {
    std::lock_guard lock(host.pool_mutex_);
    if (!host.pool_.empty()) {
      machine_ = std::move(host.pool_.back());
      host.pool_.pop_back();
    }
  }
  if (!machine_) machine_ = host.create_target_machine();
}

HostTarget::Lease::~Lease() {
  std::lock_guard lock(host_.pool_mutex_);
  host_.pool_.push_back(std::move(machine_));
}

namespace {

// `kernel` as a function `symbol` in a module of its own in `context`,
// optimized for the host and with its dumps written: what emit() turns into
// machine code.
std::unique_ptr<llvm::Module> lower_for_host(llvm::LLVMContext& context, llvm::TargetMachine* machine,
                                             const ir::Kernel& kernel, const std::string& symbol,
                                             const std::vector<int>& streaming_stores,
                                             const std::vector<int>& plain_adds) {
  auto owned = std::make_unique<llvm::Module>(symbol, context);
  llvm::Module& module = *owned;
  module.setTargetTriple(machine->getTargetTriple().str());
  module.setDataLayout(machine->createDataLayout());

  SimdPlan plan = simd_plan(kernel, HostTarget::get().vector_bits());
  llvm::Function* function = nullptr;
  if (plan.lanes > 0) {
    SimdLowering lowering(module, kernel, plan.lanes);
    lowering.set_plain_adds(plain_adds);
    lowering.set_int64_lanes_native(HostTarget::get().converts_int64_lanes());
    lowering.set_fused_multiply_add(HostTarget::get().fuses_multiply_add());
    lowering.set_vector_bits(HostTarget::get().vector_bits());
    function = lowering.lower(symbol);
    // In auto mode a kernel whose inner loop would gather goes back to the scalar loop.
    if (std::string refusal = lowering.refusal(); !refusal.empty() && settings().simd != "on") {
      function->eraseFromParent();
      function = nullptr;
      plan = {0, refusal};
    }
  }
  if (!function) {
    LlvmLowering lowering(module, kernel);
    lowering.set_plain_adds(plain_adds);
    lowering.set_interleave(2);
    if (points_run_backward(kernel)) {
      lowering.set_points_backward(true);
      plan.reason += "; the points run from the last to the first, so that the memory they touch ascends";
    }
    function = lowering.lower(symbol);
  }
  function->addFnAttr("target-cpu", machine->getTargetCPU());
  function->addFnAttr("target-features", machine->getTargetFeatureString());

  const Pipeline pipeline = pipeline_for(kernel, plan.lanes > 0);
  optimize(module, *machine, pipeline);

  std::string dump_name = kernel.name;
  if (!plain_adds.empty()) dump_name += ".private";
  if (!streaming_stores.empty() && machine->getTargetTriple().getArch() == llvm::Triple::x86_64) {
    const auto layout = cpu_arg_layout(kernel);
    std::vector<int> slots;
    for (int p : streaming_stores) slots.push_back(layout.first_slot.at(static_cast<std::size_t>(p)));
    mark_streaming_stores(*module.getFunction(symbol), slots);
    dump_name += ".streaming";
  }
  if (dump_enabled("llvm"))
    dump("llvm", dump_name,
         "; canopy: " + plan.reason + "; LLVM pipeline: " + name_of(pipeline) + "\n" + module_text(module));
  // Beside the kernel's IR dump (<kernel>.ir, written before any device
  // compiles): which CPU lowering it got, since that is decided here.
  if (dump_enabled("ir")) dump("ir", dump_name + ".cpu", "// " + kernel.name + " on the CPU: " + plan.reason + "\n");
  if (dump_enabled("asm")) {
    // Code generation changes the module, so the assembly comes from a copy.
    auto copy = llvm::CloneModule(module);
    dump("asm", dump_name, emit(*copy, *machine, llvm::CGFT_AssemblyFile));
  }
  return owned;
}

}  // namespace

std::string compile_for_host(const std::vector<HostKernel>& kernels) {
  if (kernels.empty()) throw Error("compile_for_host: no kernels");
  llvm::LLVMContext context;
  context.setOpaquePointers(true);
  const HostTarget::Lease lease(HostTarget::get());
  llvm::TargetMachine* machine = &lease.machine();
  std::unique_ptr<llvm::Module> module;
  for (const HostKernel& k : kernels) {
    auto lowered = lower_for_host(context, machine, *k.kernel, k.symbol, k.streaming_stores, k.plain_adds);
    if (!module)
      module = std::move(lowered);
    else if (llvm::Linker::linkModules(*module, std::move(lowered)))
      throw Error("LLVM cannot put kernel '" + k.kernel->name + "' in one module with the others compiled with it");
  }
  return emit(*module, *machine, llvm::CGFT_ObjectFile);
}

}  // namespace canopy::jit
