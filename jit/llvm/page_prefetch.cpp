#include "internal/page_prefetch.hpp"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include <llvm/ADT/DepthFirstIterator.h>
#include <llvm/Analysis/LoopInfo.h>
#include <llvm/Analysis/ScalarEvolution.h>
#include <llvm/Analysis/ScalarEvolutionExpressions.h>
#include <llvm/Analysis/ValueTracking.h>
#include <llvm/IR/Dominators.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/Transforms/Utils/BasicBlockUtils.h>

namespace canopy::jit {

namespace {

// At most this many accesses looked at, and streams prefetched, per loop.
constexpr int kMaxAccesses = 256;
constexpr std::size_t kMaxStreams = 16;
// A loop is prefetched when its streams move at least this many bytes per
// instruction of its body (an LLVM instruction, before code generation).
constexpr std::int64_t kBytesPerInstruction = 2;

// An array a loop walks forward through: its address an affine recurrence
// of the loop with a constant step of 1 to kMaxStepBytes bytes. Where the
// loop reads it, `load` is the load to prefetch before: one that every
// iteration makes (`every`), where there is one.
struct Stream {
  const llvm::SCEVAddRecExpr* address;
  std::int64_t step;
  llvm::LoadInst* load = nullptr;
  bool every = false;
};

bool is_point_loop(const llvm::Loop& loop) {
  llvm::MDNode* id = loop.getLoopID();
  if (!id) return false;
  for (unsigned i = 1; i < id->getNumOperands(); ++i) {
    auto* property = llvm::dyn_cast<llvm::MDNode>(id->getOperand(i));
    if (!property || property->getNumOperands() == 0) continue;
    auto* name = llvm::dyn_cast<llvm::MDString>(property->getOperand(0));
    if (name && name->getString() == kPointLoopProperty) return true;
  }
  return false;
}

// `instruction` as a stream when it is a plain load or store that walks
// forward through an array with `loop`.
std::optional<Stream> dense_access(llvm::Instruction& instruction, const llvm::Loop& loop,
                                   llvm::ScalarEvolution& evolution) {
  auto* load = llvm::dyn_cast<llvm::LoadInst>(&instruction);
  auto* store = llvm::dyn_cast<llvm::StoreInst>(&instruction);
  llvm::Value* pointer = nullptr;
  if (load && load->isSimple())
    pointer = load->getPointerOperand();
  else if (store && store->isSimple())
    pointer = store->getPointerOperand();
  else
    return std::nullopt;
  if (!pointer->getType()->isPointerTy() || !evolution.isSCEVable(pointer->getType())) return std::nullopt;
  // The kernel's own buffers on the stack stay in the cache.
  if (llvm::isa<llvm::AllocaInst>(llvm::getUnderlyingObject(pointer))) return std::nullopt;
  auto* address = llvm::dyn_cast<llvm::SCEVAddRecExpr>(evolution.getSCEV(pointer));
  if (!address || address->getLoop() != &loop || !address->isAffine()) return std::nullopt;
  auto* step = llvm::dyn_cast<llvm::SCEVConstant>(address->getStepRecurrence(evolution));
  if (!step || step->getAPInt().getMinSignedBits() > 32) return std::nullopt;
  const std::int64_t bytes = step->getAPInt().getSExtValue();
  if (bytes <= 0 || bytes > PageAheadPrefetchPass::kMaxStepBytes) return std::nullopt;
  return Stream{address, bytes, load, false};
}

// Adds `access` (made on every iteration when `every`) to the stream of its
// array (the same base pointer and step: the rows above and below a point
// in a stencil move with it), or starts one.
void add_to_streams(std::vector<Stream>& streams, Stream access, bool every, llvm::ScalarEvolution& evolution) {
  access.every = access.load && every;
  const llvm::SCEV* base = evolution.getPointerBase(access.address);
  for (Stream& stream : streams) {
    if (stream.step != access.step || evolution.getPointerBase(stream.address) != base) continue;
    if (access.load && (!stream.load || (access.every && !stream.every))) {
      stream.load = access.load;
      stream.every = access.every;
    }
    return;
  }
  if (streams.size() < kMaxStreams) streams.push_back(access);
}

// The streams of a point loop, found before any loop is changed.
struct Plan {
  llvm::Loop* loop;
  std::vector<Stream> streams;
};

// Before each stream's first load: when its address enters a new page, a
// prefetch kAheadBytes further on. Built from the load's own address, so
// that the loop keeps no register of its own for it (an induction variable
// expanded for it made the branchy kernel of `canopy-bench kernels` spill
// vectors and run 9% slower).
void prefetch_pages(const Plan& plan) {
  for (const Stream& stream : plan.streams) {
    // Stores are left alone: a prefetch ahead of plain or streaming stores
    // gained nothing, or lost up to 4%, in the harness.
    llvm::LoadInst* load = stream.load;
    if (!load) continue;
    llvm::IRBuilder<> builder(load);
    llvm::Value* address = load->getPointerOperand();
    llvm::Value* offset = builder.CreateAnd(builder.CreatePtrToInt(address, builder.getInt64Ty()),
                                            PageAheadPrefetchPass::kPageBytes - 1, "canopy.page.offset");
    llvm::Value* enters =
        builder.CreateICmpULT(offset, builder.getInt64(static_cast<std::uint64_t>(stream.step)), "canopy.page.enters");
    llvm::Instruction* then = llvm::SplitBlockAndInsertIfThen(enters, load, false);
    builder.SetInsertPoint(then);
    llvm::Value* ahead = builder.CreateConstGEP1_64(builder.getInt8Ty(), address, PageAheadPrefetchPass::kAheadBytes,
                                                    "canopy.page.ahead");
    auto* prefetch = llvm::Intrinsic::getDeclaration(load->getModule(), llvm::Intrinsic::prefetch, {ahead->getType()});
    // A read, into the second-level cache (locality 2), of data.
    builder.CreateCall(prefetch, {ahead, builder.getInt32(0), builder.getInt32(2), builder.getInt32(1)});
  }
}

}  // namespace

llvm::PreservedAnalyses PageAheadPrefetchPass::run(llvm::Function& function, llvm::FunctionAnalysisManager& analyses) {
  auto& loops = analyses.getResult<llvm::LoopAnalysis>(function);
  auto& evolution = analyses.getResult<llvm::ScalarEvolutionAnalysis>(function);
  auto& dominators = analyses.getResult<llvm::DominatorTreeAnalysis>(function);
  std::vector<Plan> plans;
  for (llvm::Loop* top : loops)
    for (llvm::Loop* loop : llvm::depth_first(top)) {
      if (!is_point_loop(*loop) || !loop->getLoopPredecessor() || !loop->getLoopLatch()) continue;
      Plan plan{loop, {}};
      int accesses = 0;
      for (llvm::BasicBlock* block : loop->blocks()) {
        const bool every = dominators.dominates(block, loop->getLoopLatch());
        for (llvm::Instruction& instruction : *block)
          if (auto access = dense_access(instruction, *loop, evolution); access && accesses++ < kMaxAccesses)
            add_to_streams(plan.streams, *access, every, evolution);
      }
      // Work enough per byte streamed, read or written, hides the walks: a
      // loop bound by its arithmetic gains nothing, and its extra branches
      // cost (the branchy kernel of `canopy-bench kernels`, 224 instructions
      // per 256 bytes streamed: 5 to 8% slower). A loop inside the points (a
      // kernel's own loop) is work the count below does not see.
      std::int64_t instructions = 0, bytes = 0;
      for (llvm::BasicBlock* block : loop->blocks()) instructions += static_cast<std::int64_t>(block->size());
      for (const Stream& stream : plan.streams) bytes += stream.step;
      const bool reads = std::any_of(plan.streams.begin(), plan.streams.end(), [](const Stream& s) { return s.load; });
      if (!reads || !loop->getSubLoops().empty() || instructions * kBytesPerInstruction > bytes) continue;
      plans.push_back(std::move(plan));
    }
  for (const Plan& plan : plans) prefetch_pages(plan);
  return plans.empty() ? llvm::PreservedAnalyses::all() : llvm::PreservedAnalyses::none();
}

}  // namespace canopy::jit
