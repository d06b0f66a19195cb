// Combining updates of a merged array (the runtime's merge(op) trait).
//
// Several leaves of one region may write a merged array: a device writes a
// private copy that starts at the operator's identity and is combined into
// the array afterwards, while a CPU leaf updates the array itself. The two
// agree where every access of the kernel to the array combines with the
// operator:
//  - `atomic_add(m[e], x)` under merge(sum);
//  - a store `m[e] = m[e] op x` (or `x op m[e]`) of the element it reads, op
//    being + for sum, min for min and max for max, under any condition;
//  - under min and max, a plain store `m[e] = x` where x never loses to what
//    the element held (a level that only grows under max): the program's
//    promise, which no analysis checks, as with writing disjoint elements.
// Anything else sees or leaves a different value on a device than on a CPU
// leaf: a read of the array other than in such a store (a device reads the
// identity), an atomic add under min or max, a plain store under sum (a
// device adds x to the element, a CPU leaf replaces it). The runtime refuses
// such a launch with the reason this analysis gives.
#pragma once

#include <string>
#include <vector>

#include "../kernel.hpp"

namespace canopy::ir {

/// Empty when every access of `kernel` to array parameter `param` combines
/// with `op` (above), or when the kernel only reads it (no private copy is
/// made then); else what the first other access does, for a message
/// ("reads it other than in a store that combines into the element it read").
std::string non_combining_access(const Kernel& kernel, int param, ReduceOp op);
/// The same for an array that several parameters pass (`params`): an access
/// through any of them counts.
std::string non_combining_access(const Kernel& kernel, const std::vector<int>& params, ReduceOp op);

}  // namespace canopy::ir
