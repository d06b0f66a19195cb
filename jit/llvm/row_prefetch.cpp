#include "internal/row_prefetch.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <vector>

#include <llvm/ADT/DepthFirstIterator.h>
#include <llvm/Analysis/LoopInfo.h>
#include <llvm/Analysis/ScalarEvolution.h>
#include <llvm/Analysis/ScalarEvolutionExpressions.h>
#include <llvm/Analysis/ValueTracking.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/Transforms/Utils/ScalarEvolutionExpander.h>

namespace canopy::jit {

namespace {

constexpr std::int64_t kLine = 64;
// How far ahead to prefetch, in bytes of the loop's runs: enough iterations
// to cover a miss to memory at the few cycles each short run takes.
constexpr std::int64_t kAheadBytes = 2048;
constexpr std::int64_t kMinAhead = 2, kMaxAhead = 16;
// Accesses at most this many iterations apart are one stream.
constexpr std::int64_t kMaxRowsApart = 16;
// At most this many accesses looked at, and streams prefetched, per loop.
constexpr int kMaxAccesses = 256;
constexpr std::size_t kMaxStreams = 16;

// One load or store of a loop: its address at the loop's level (an affine
// recurrence of that loop), and the bytes [first, end) around that address
// it touches in one iteration, the runs of the inner loops it is in included.
// The recurrence's step, the bytes it moves per iteration, is a constant or
// an expression invariant in the loop (a row of an array whose extents are
// known only when the kernel runs).
struct Access {
  const llvm::SCEVAddRecExpr* address;
  std::int64_t first, end;
  bool write;

  const llvm::SCEV* stride(llvm::ScalarEvolution& evolution) const { return address->getStepRecurrence(evolution); }
};

// Accesses that move together: `base` and the addresses a whole number of
// iterations apart from it (up to `lead` iterations ahead of it), each
// touching bytes [first, end) of its row, relative to base's column.
struct Stream {
  Access base;
  std::int64_t lead = 0;
};

// The value of `expression` when it is a constant that fits in 48 bits.
std::optional<std::int64_t> constant_bytes(const llvm::SCEV* expression) {
  auto* constant = llvm::dyn_cast<llvm::SCEVConstant>(expression);
  if (!constant || constant->getAPInt().getMinSignedBits() > 48) return std::nullopt;
  return constant->getAPInt().getSExtValue();
}

std::optional<Access> strided_access(llvm::Instruction& instruction, const llvm::Loop& loop,
                                     llvm::ScalarEvolution& evolution, const llvm::DataLayout& layout) {
  llvm::Value* pointer = nullptr;
  llvm::Type* type = nullptr;
  bool write = false;
  if (auto* load = llvm::dyn_cast<llvm::LoadInst>(&instruction); load && load->isSimple()) {
    pointer = load->getPointerOperand();
    type = load->getType();
  } else if (auto* store = llvm::dyn_cast<llvm::StoreInst>(&instruction); store && store->isSimple()) {
    pointer = store->getPointerOperand();
    type = store->getValueOperand()->getType();
    write = true;
  } else {
    return std::nullopt;
  }
  if (!pointer->getType()->isPointerTy() || !evolution.isSCEVable(pointer->getType())) return std::nullopt;
  // The kernel's own buffers on the stack (the SIMD lowering's row blocks) stay in the cache.
  if (llvm::isa<llvm::AllocaInst>(llvm::getUnderlyingObject(pointer))) return std::nullopt;
  const llvm::SCEV* address = evolution.getSCEV(pointer);
  std::int64_t first = 0, end = static_cast<std::int64_t>(layout.getTypeStoreSize(type).getKnownMinSize());
  // Out through the loops inside `loop` that move the access: each adds its
  // run to the bytes touched per iteration of `loop`.
  while (auto* inner = llvm::dyn_cast<llvm::SCEVAddRecExpr>(address)) {
    const llvm::Loop* walk = inner->getLoop();
    if (walk == &loop) break;
    if (!loop.contains(walk) || !inner->isAffine()) return std::nullopt;
    auto* step = llvm::dyn_cast<llvm::SCEVConstant>(inner->getStepRecurrence(evolution));
    const unsigned trips = evolution.getSmallConstantTripCount(walk);
    if (!step || trips == 0 || std::abs(step->getAPInt().getSExtValue()) > RowPrefetchPass::kMaxRunBytes)
      return std::nullopt;
    const std::int64_t span = step->getAPInt().getSExtValue() * static_cast<std::int64_t>(trips - 1);
    (span < 0 ? first : end) += span;
    if (end - first > RowPrefetchPass::kMaxRunBytes) return std::nullopt;
    address = inner->getStart();
  }
  auto* outer = llvm::dyn_cast<llvm::SCEVAddRecExpr>(address);
  if (!outer || outer->getLoop() != &loop || !outer->isAffine()) return std::nullopt;
  const llvm::SCEV* stride = outer->getStepRecurrence(evolution);
  if (!evolution.isLoopInvariant(stride, &loop)) return std::nullopt;
  // A stride known only at run time is taken to be a row's: it is made of
  // an array's extents.
  if (auto bytes = constant_bytes(stride);
      bytes ? std::abs(*bytes) < RowPrefetchPass::kMinStrideBytes : llvm::isa<llvm::SCEVConstant>(stride))
    return std::nullopt;
  return Access{outer, first, end, write};
}

// How many iterations apart `access` is from `stream`'s base, and the bytes
// between their columns: any bytes apart in one iteration (so that a long
// run is seen whole, and found dense), else at most kMaxRowsApart iterations
// and kMaxRunBytes bytes apart.
std::optional<std::pair<std::int64_t, std::int64_t>> apart(const Stream& stream, const Access& access,
                                                           llvm::ScalarEvolution& evolution) {
  const llvm::SCEV* stride = stream.base.stride(evolution);
  if (stride != access.stride(evolution)) return std::nullopt;
  const llvm::SCEV* bytes = evolution.getMinusSCEV(access.address, stream.base.address);
  if (llvm::isa<llvm::SCEVCouldNotCompute>(bytes)) return std::nullopt;
  if (auto step = constant_bytes(stride)) {
    const auto total = constant_bytes(bytes);
    if (!total) return std::nullopt;
    const std::int64_t rows = *total / *step, column = *total - rows * *step;
    if (rows != 0 && (std::abs(rows) > kMaxRowsApart || std::abs(column) > RowPrefetchPass::kMaxRunBytes))
      return std::nullopt;
    return std::pair{rows, column};
  }
  // A stride known at run time: the rows apart are those that leave a constant.
  if (auto column = constant_bytes(bytes)) return std::pair{std::int64_t{0}, *column};
  for (std::int64_t rows = 1; rows <= kMaxRowsApart; ++rows)
    for (std::int64_t sign : {1, -1}) {
      const llvm::SCEV* rest = evolution.getMinusSCEV(
          bytes, evolution.getMulExpr(evolution.getConstant(stride->getType(), sign * rows), stride));
      if (auto column = constant_bytes(rest); column && std::abs(*column) <= RowPrefetchPass::kMaxRunBytes)
        return std::pair{sign * rows, *column};
    }
  return std::nullopt;
}

// Adds `access` to the stream it moves with, or starts one.
void add_to_streams(std::vector<Stream>& streams, const Access& access, llvm::ScalarEvolution& evolution) {
  for (auto& stream : streams)
    if (auto distance = apart(stream, access, evolution)) {
      const auto [rows, column] = *distance;
      stream.lead = std::max(stream.lead, rows);
      stream.base.first = std::min(stream.base.first, column + access.first);
      stream.base.end = std::max(stream.base.end, column + access.end);
      stream.base.write = stream.base.write || access.write;
      return;
    }
  if (streams.size() < kMaxStreams) streams.push_back(Stream{access});
}

bool prefetch_loop(llvm::Loop& loop, llvm::ScalarEvolution& evolution) {
  // The expansion of an address needs one way into the loop and one latch;
  // the entry need not be a preheader, nor the exits dedicated (unrolling
  // with a remainder leaves neither).
  if (!loop.getLoopPredecessor() || !loop.getLoopLatch()) return false;
  llvm::BasicBlock* header = loop.getHeader();
  const llvm::DataLayout& layout = header->getModule()->getDataLayout();
  std::vector<Stream> streams;
  // Bounded, so that compile time stays small in loops with many accesses.
  int accesses = 0;
  for (llvm::BasicBlock* block : loop.blocks())
    for (llvm::Instruction& instruction : *block)
      if (auto access = strided_access(instruction, loop, evolution, layout); access && accesses++ < kMaxAccesses)
        add_to_streams(streams, *access, evolution);
  if (streams.empty()) return false;

  llvm::Instruction* at = &*header->getFirstInsertionPt();
  llvm::SCEVExpander expander(evolution, layout, "canopy.prefetch");
  llvm::IRBuilder<> builder(at);
  auto* i8 = builder.getInt8Ty();
  bool changed = false;
  // Far enough ahead that the loop's runs in between cover a miss.
  std::int64_t bytes_per_iteration = 0;
  for (const Stream& stream : streams) bytes_per_iteration += stream.base.end - stream.base.first;
  const std::int64_t ahead =
      std::clamp((kAheadBytes + bytes_per_iteration - 1) / std::max(bytes_per_iteration, kLine), kMinAhead, kMaxAhead);
  for (const Stream& stream : streams) {
    const Access& base = stream.base;
    const std::int64_t run = base.end - base.first;
    if (run > 2 * RowPrefetchPass::kMaxRunBytes) continue;
    // A walk whose runs leave less than kMinStrideBytes between them is
    // dense (an unrolled walk along a row): the hardware follows it.
    if (auto step = constant_bytes(base.stride(evolution));
        step && std::abs(*step) < run + RowPrefetchPass::kMinStrideBytes)
      continue;
    // The stream's leading access, `ahead` iterations later.
    const llvm::SCEV* stride = base.stride(evolution);
    const llvm::SCEV* target = evolution.getAddExpr(
        base.address, evolution.getMulExpr(evolution.getConstant(stride->getType(), stream.lead + ahead), stride));
    if (!expander.isSafeToExpandAt(target, at)) continue;
    llvm::Value* row = expander.expandCodeFor(target, base.address->getType(), at);
    builder.SetInsertPoint(at);
    auto* prefetch = llvm::Intrinsic::getDeclaration(header->getModule(), llvm::Intrinsic::prefetch, {row->getType()});
    // A line per 64 bytes of the run from its first byte, and its last byte
    // where the run is not whole lines (it may start mid-line; a run of up to
    // 8 bytes, one element, is in one line).
    std::vector<std::int64_t> bytes;
    for (std::int64_t byte = 0; byte < run; byte += kLine) bytes.push_back(byte);
    if (run > 8 && run % kLine != 0) bytes.push_back(run - 1);
    for (std::int64_t byte : bytes) {
      llvm::Value* line = builder.CreateConstGEP1_64(i8, row, base.first + byte, "canopy.line");
      builder.CreateCall(prefetch,
                         {line, builder.getInt32(base.write ? 1 : 0), builder.getInt32(3), builder.getInt32(1)});
    }
    changed = true;
  }
  return changed;
}

}  // namespace

llvm::PreservedAnalyses RowPrefetchPass::run(llvm::Function& function, llvm::FunctionAnalysisManager& analyses) {
  auto& loops = analyses.getResult<llvm::LoopAnalysis>(function);
  auto& evolution = analyses.getResult<llvm::ScalarEvolutionAnalysis>(function);
  bool changed = false;
  for (llvm::Loop* top : loops)
    for (llvm::Loop* loop : llvm::depth_first(top)) changed = prefetch_loop(*loop, evolution) || changed;
  return changed ? llvm::PreservedAnalyses::none() : llvm::PreservedAnalyses::all();
}

}  // namespace canopy::jit
