// Software prefetches for loops that stride through memory a row at a time.
//
// A loop that takes a short run of elements from each row of a matrix (the
// block rows of Rodinia's nw, a column walk down a matrix) moves its
// accesses by a whole row per iteration. The hardware's prefetchers follow
// runs inside a page; a stride of a row jumps pages, so each iteration starts
// with a cache miss that its few cycles of work cannot hide (nw spent half its
// time on the first load of each block row). This pass finds such accesses
// with ScalarEvolution and prefetches the lines the loop will touch a few
// iterations ahead, from the loop's header.
#pragma once

#include <llvm/IR/PassManager.h>

namespace canopy::jit {

/// For every loop of a function, the loads and stores whose address moves by
/// a row per iteration get one prefetch per cache line they will touch a few
/// iterations later. A row: at least kMinStrideBytes more than the bytes the
/// access touches per iteration, or a stride known only at run time (made of
/// an array's extents). Those bytes must be few and known: at most
/// kMaxRunBytes, the runs of inner loops with constant trip counts included.
/// How far ahead: about 2 KiB of the loop's runs, from 2 to 16 iterations.
/// Accesses a whole number of iterations apart (the row above and the row
/// itself) are one stream, prefetched once; buffers on the stack are left
/// alone. A prefetch never faults and never changes a result.
class RowPrefetchPass : public llvm::PassInfoMixin<RowPrefetchPass> {
 public:
  static constexpr long kMinStrideBytes = 512;
  static constexpr long kMaxRunBytes = 1024;

  llvm::PreservedAnalyses run(llvm::Function& function, llvm::FunctionAnalysisManager& analyses);
};

}  // namespace canopy::jit
