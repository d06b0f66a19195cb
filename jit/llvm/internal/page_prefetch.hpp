// Software prefetches a page ahead of loops that stream through memory.
//
// A loop over a kernel's points reads and writes its arrays element after
// element. The hardware's prefetchers follow such a stream inside a 4 KiB
// page, but each new page first needs its address translation: a walk of
// the page tables, which under a hypervisor walks the host's tables too.
// On the 2-vCPU VM of 2026-11 two threads reading two arrays of 256 MiB in
// small pages stopped near 40 GB/s, against 55-58 GB/s in huge pages. One
// prefetch per stream and page, 128 KiB ahead, starts the walk long before
// the loop gets there: 1.15 to 1.25 times the bandwidth in small pages, the
// same in huge pages (a `/tmp` harness of AVX-512 loops; a prefetch of every
// line, 1 to 16 KiB ahead, was slower than none).
#pragma once

#include <llvm/IR/PassManager.h>

namespace canopy::jit {

/// The loop-id property (an MDString in the loop's `llvm.loop` node) that
/// marks a loop over the points of a kernel's innermost range dimension.
inline constexpr const char* kPointLoopProperty = "canopy.points";

/// In every loop marked with kPointLoopProperty, the loads and stores whose
/// address moves forward by at most kMaxStepBytes per iteration are grouped
/// into streams, one per array and step. A loop with no loop inside it and
/// little work per byte its streams move (kBytesPerInstruction in the
/// source) gets, before the first load of each stream it reads (one that
/// every iteration makes, where there is one), when that load's address
/// enters a new page, a prefetch into the second-level cache kAheadBytes
/// further on: a compare and a branch per stream read and iteration. Streams
/// only written are left alone (a prefetch ahead of plain or streaming
/// stores gained nothing, or lost up to 4%), and so are buffers on the
/// stack. A prefetch never faults and never changes a result.
class PageAheadPrefetchPass : public llvm::PassInfoMixin<PageAheadPrefetchPass> {
 public:
  static constexpr long kPageBytes = 4096;
  static constexpr long kAheadBytes = 128 * 1024;
  static constexpr long kMaxStepBytes = 1024;

  llvm::PreservedAnalyses run(llvm::Function& function, llvm::FunctionAnalysisManager& analyses);
};

}  // namespace canopy::jit
