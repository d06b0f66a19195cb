// Elementary functions on whole vectors, written in LLVM IR, for the CPU's
// SIMD across points (simd_lowering.hpp). Without them a vector of lanes
// calling `exp` becomes one call to the C library per lane, each as costly
// as a whole vector of arithmetic, and a point loop whose work is mostly exp
// (Rodinia lavaMD) gains nothing from lanes.
//
// Each function is emitted once per module and vector type, as an internal
// function that LLVM may inline. Accuracy is part of the contract: the IR's
// semantics (docs/ir-semantics.md) bound each math function in ulps, and
// these stay well inside those bounds (tests/jit/vector_math.cpp measures
// them against long double over the whole range, special values included).
#pragma once

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>

namespace canopy::jit {

/// e^x in every lane of `x`, a vector of float or double, computed in lanes
/// of its own type. Within 1 ulp of the exact result for double (measured:
/// 0.97 ulp), 1.5 for float (1.06 measured over every float; the C library's
/// scalar exp is within 0.51 for both), 0 and infinity where the exact result
/// under- or overflows, denormal results below the smallest normal number,
/// NaN for NaN. The IR allows 3 ulp.
///
/// How: x = k ln2 + r with |r| <= ln2/2 (Cody and Waite's two-part ln2, so
/// that k ln2's high part is exact), e^r - 1 by its Taylor polynomial in
/// Horner form (degree 13 for double, 7 for float), and the scaling by 2^k in
/// two halves so that results near overflow or in the denormal range are
/// rounded once more at most.
llvm::Value* emit_vector_exp(llvm::IRBuilder<>& builder, llvm::Value* x);

/// log x in every lane of `x`, a vector of float, computed in float lanes:
/// within 1 ulp (0.85 measured over every float). log(+-0) = -infinity,
/// log(+infinity) = +infinity, NaN below 0 and for NaN. The IR allows 3 ulp.
///
/// How: denormals scaled into the normal numbers, x = 2^e m with m in
/// [sqrt(1/2), sqrt(2)), and with f = m - 1 (exact) and s = f/(2 + f),
/// log m = f - (f^2/2 - s (f^2/2 + R)), R the series of 2 atanh(s) - 2s to
/// s^8 (|s| <= 0.1716): f carries the result and the roundings of s and R
/// reach it shrunk; e ln2 in two parts.
llvm::Value* emit_vector_log(llvm::IRBuilder<>& builder, llvm::Value* x);

/// sin x and cos x in every lane of `x`, a vector of float, for the lanes
/// where |x| < 2^19; in the others (larger, infinite or NaN) the result is
/// meaningless, and vector_trig_unreduced() says which those are, so that the
/// caller takes them from the C library. With `fused_multiply_add` (the CPU
/// has one: the float reduction needs it) and every lane below 2^12, in
/// float lanes: within 1.5 ulp (1.49 measured over every float below 2^12);
/// otherwise in double lanes (within 0.51 ulp, rounded once), only for the
/// lanes past 2^12 where the CPU has one. sin(-0) = -0. The IR allows 4 ulp.
///
/// How: x = k pi/2 + r with |r| <= pi/4 (pi/2 in three parts: Cody and
/// Waite's reduction, with fused multiply-adds), then the Taylor polynomials
/// of sin r (to r^9 in float, r^11 in double) and cos r (to r^10, r^12),
/// picked and signed by k mod 4.
llvm::Value* emit_vector_sin(llvm::IRBuilder<>& builder, llvm::Value* x, bool fused_multiply_add);
llvm::Value* emit_vector_cos(llvm::IRBuilder<>& builder, llvm::Value* x, bool fused_multiply_add);

/// The lanes of `x` (float) that emit_vector_sin and emit_vector_cos do not
/// reduce: |x| >= 2^19, infinities and NaN. A vector of i1.
llvm::Value* vector_trig_unreduced(llvm::IRBuilder<>& builder, llvm::Value* x);

}  // namespace canopy::jit
