// Fusion: one kernel that does, at each point, what a chain of kernels over
// the same range does one after the other.
//
// Why it exists: a chain of element-wise regions (init, then triad, then dot)
// makes one pass over memory per region. When every array access of every
// kernel in the chain is at the point's own index, running the kernels'
// bodies one after the other at each point gives the same result as running
// the kernels one after the other over the whole range, in one pass. The
// runtime's recorder (runtime/internal/recorder.hpp) decides which regions
// form a chain; this pass builds the kernel.
//
// The fused kernel's parameters are "slots": each distinct array, scalar or
// reduction of the chain once. Parts refer to them by position. Two more
// rewrites make the single pass cheaper than the chain:
//  - an intermediate slot (an array the chain writes first, unconditionally,
//    and that nothing outside the chain will read) becomes a local variable:
//    it is never allocated nor written to memory;
//  - a load, in a later part, of an array an earlier part stored at the same
//    point by a statement every point runs, takes the stored value instead of
//    reading memory.
//  - a part that reduces nothing and whose every written array is stored on
//    every path by a later part, with nothing reading it in between, is left
//    out: nothing could see what it wrote.
// Locals of part i are renamed "p<i>_<name>", so that parts never share one.
#pragma once

#include <string>
#include <vector>

#include "../analysis/footprint.hpp"
#include "../kernel.hpp"

namespace canopy::ir {

/// One parameter of the fused kernel. Its access (in, out, inout) is
/// recomputed from what the fused body does with it.
struct FusedSlot {
  Param param;
  /// An intermediate: kept in a local, absent from the fused kernel's
  /// parameters. Arrays only; every part must access it at its own point
  /// and the first part touching it must store it on every path.
  bool local = false;
};

/// One kernel of the chain and, for each of its parameters, the slot it is.
struct FusedPart {
  const Kernel* kernel = nullptr;
  std::vector<int> slots;
};

/// The fused kernel, called `name`, of the parts in order. Its parameters
/// are the slots that are not local, in slot order. Throws canopy::Error
/// when the parts disagree on dims or on a slot's type, or when a local slot
/// is read for its extent.
Kernel fuse_kernels(std::string name, const std::vector<FusedSlot>& slots, const std::vector<FusedPart>& parts);

/// True when every load and store of every array of `kernel` is at the
/// point's own index (array rank == dims, index d in dimension d, offset 0)
/// and the kernel has no atomic add: the condition for taking part in a chain.
bool accesses_only_own_point(const Kernel& kernel, const Footprint& footprint);

/// True when `kernel` reads the extent of parameter `param` anywhere.
bool reads_extent_of(const Kernel& kernel, int param);

}  // namespace canopy::ir
