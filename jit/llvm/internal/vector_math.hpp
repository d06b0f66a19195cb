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

/// e^x in every lane of `x`, a vector of float or double. Within 1 ulp of the
/// exact result (measured: 0.97 ulp for double, 0.51 for float; the C
/// library's scalar exp is within 0.51 for both), 0 and infinity where the
/// exact result under- or overflows, denormal results below the smallest
/// normal number, NaN for NaN. The IR allows 3 ulp.
///
/// How: x = k ln2 + r with |r| <= ln2/2 (Cody and Waite's two-part ln2, so
/// that k ln2's high part is exact), e^r - 1 by its Taylor polynomial in
/// Horner form (degree 13 for double, degree 7 in double for float, whose
/// result is then rounded once), and the scaling by 2^k in two halves so
/// that results near overflow or in the denormal range are rounded once.
llvm::Value* emit_vector_exp(llvm::IRBuilder<>& builder, llvm::Value* x);

/// log x in every lane of `x`, a vector of float (computed in double: the
/// result is rounded once, within 0.51 ulp measured). log(+-0) = -infinity,
/// log(+infinity) = +infinity, NaN below 0 and for NaN. The IR allows 3 ulp.
///
/// How: x = 2^e m with m in [sqrt(1/2), sqrt(2)), log m = 2 atanh(s) with
/// s = (m - 1)/(m + 1), |s| <= 0.1716, by its series to s^11.
llvm::Value* emit_vector_log(llvm::IRBuilder<>& builder, llvm::Value* x);

/// sin x and cos x in every lane of `x`, a vector of float, for the lanes
/// where |x| < 2^19; in the others (larger, infinite or NaN) the result is
/// meaningless, and vector_trig_unreduced() says which those are, so that the
/// caller takes them from the C library. Within 0.51 ulp measured (computed
/// in double, rounded once); sin(-0) = -0. The IR allows 4 ulp.
///
/// How: x = k pi/2 + r with |r| <= pi/4 (pi/2 in three parts, the first two
/// of 33 bits, so that k times each is exact: Cody and Waite's reduction),
/// then the Taylor polynomials of sin r (to r^11) and cos r (to r^12), picked
/// and signed by k mod 4.
llvm::Value* emit_vector_sin(llvm::IRBuilder<>& builder, llvm::Value* x);
llvm::Value* emit_vector_cos(llvm::IRBuilder<>& builder, llvm::Value* x);

/// The lanes of `x` (float) that emit_vector_sin and emit_vector_cos do not
/// reduce: |x| >= 2^19, infinities and NaN. A vector of i1.
llvm::Value* vector_trig_unreduced(llvm::IRBuilder<>& builder, llvm::Value* x);

}  // namespace canopy::jit
