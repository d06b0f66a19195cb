// Constant folding: replaces every unary, binary, comparison, cast, math call
// and select whose operands are literals by the literal it evaluates to.
//
// Why it exists: the DSL traces user code, so kernels are full of arithmetic on
// values known when the kernel is built (sizes, coefficients, `2 * 0.5`), and
// the simplifier and the other passes only see through literals. Folding here,
// once, also means every backend receives the same values: the fold follows the
// IR's run-time semantics exactly (ir/expr.hpp: wrapping integers, x / 0 == 0,
// INT_MIN / -1 == INT_MIN, shift counts modulo the width, arithmetic >>, fmin /
// fmax ignoring NaN, saturating float-to-int casts with NaN -> 0, f32 arithmetic
// rounded to f32 at every step, % on floats as fmod), never C++'s undefined or
// host-specific behaviour. sqrt, floor and abs are exact; exp, log, sin, cos and
// pow are evaluated with the host's C math library in the operand's precision,
// which is what the CPU backend calls at run time (device libraries may differ
// from it by the last bit, as they may from each other).
// A select with a literal condition becomes the chosen side. min / max of a
// +0.0 and a -0.0 is left alone: which zero comes back is not specified.
#pragma once

#include "../kernel.hpp"

namespace canopy::ir {

/// `expr` with every operation on literals evaluated, bottom-up.
Expr fold(const Expr& expr);

/// The kernel with every expression folded (statements are not restructured;
/// the simplifier removes branches and loops that folding made trivial).
Kernel fold_constants(const Kernel& kernel);

}  // namespace canopy::ir
