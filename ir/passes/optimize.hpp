// The standard optimization pipeline every kernel goes through before a
// backend sees it.
//
// Why it exists: the passes work best in a fixed order (folding feeds the
// simplifier and the other way round; LICM and CSE need folded, simplified
// code; DCE sweeps what they leave), and every caller (the JIT, tests, tools)
// should get the same result, so the order lives in one place:
//   fold, simplify, repeated until the printed kernel stops changing (at most
//   4 rounds); then hoist_loop_invariants, eliminate_common_subexpressions,
//   eliminate_dead_code, and a last fold and simplify.
// The input is verified first (passes assume a well-formed kernel) and so is
// the result (it is cheap), so a pass that breaks a kernel fails here, with
// the verifier's message, instead of in a device compiler.
#pragma once

#include "../kernel.hpp"

namespace canopy::ir {

/// What a kernel's array parameters may be, as far as the optimizer may
/// assume: one array passed as two parameters of one element type
/// (MayAlias, as C++ allows two pointers to one array), or distinct memory
/// in every parameter (Distinct: the caller knows the launch's arrays, as
/// the runtime does). Distinct lets a computation that reads one array be
/// shared across a store to another.
enum class Arrays { MayAlias, Distinct };

/// The kernel after the standard pipeline. Throws canopy::Error with the
/// verifier's message when `kernel` does not verify, and one saying so when the
/// result does not (a bug in a pass).
Kernel optimize(const Kernel& kernel, Arrays arrays = Arrays::MayAlias);

}  // namespace canopy::ir
