// Loop-invariant code motion: computations inside a For loop whose value is
// the same in every iteration are computed once, into new locals `licmN`
// declared just before the loop.
//
// Why it exists: kernels written with the DSL compute things like `s * 2.0`
// or `i * n` inside inner loops because that is where the user needed them;
// hoisting here, where we know exactly what an expression reads, does not
// depend on every device compiler proving the same thing on its own.
//
// A subexpression of the body moves when it reads neither the loop counter,
// nor a local declared or assigned anywhere in the body, nor an array (a load
// moved out would run even when the loop runs zero times, and might then read
// out of bounds), and contains no integer / or % (those may sit under a
// condition that guards them); only the largest such subexpressions move, and
// never a lone literal, local, parameter, index or extent. A Decl at the top of
// the body whose initial value qualifies, whose local is never assigned in the
// loop and whose name is bound nowhere else in the kernel moves out whole, so
// what reads it can move too. Inner loops are treated first, so an invariant
// climbs out of every loop it does not depend on.
#pragma once

#include "../kernel.hpp"

namespace canopy::ir {

/// The kernel with loop-invariant computations moved in front of their loops.
Kernel hoist_loop_invariants(const Kernel& kernel);

}  // namespace canopy::ir
