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
// nor a local declared or assigned anywhere in the body, and contains no
// integer / or % (those may sit under a condition that guards them). A load
// moves too when every iteration makes it (it is in a statement at the top
// of the body, not under an if, in a select's arm or after a logical and/or)
// and the loop writes no array of its element type (arrays of different
// element types are never the same memory); what moved out then runs under
// `if (begin < end)`, as the first iteration would have, so that a loop that
// runs zero times reads nothing, in bounds or not. Only the largest such
// subexpressions move, and never a lone literal, local, parameter, index or
// extent. A Decl at the top of the body whose initial value qualifies, whose
// local is never assigned in the loop and whose name is bound nowhere else in
// the kernel moves out whole, so what reads it can move too. Inner loops are treated first, so an invariant
// climbs out of every loop it does not depend on.
#pragma once

#include "../kernel.hpp"

namespace canopy::ir {

/// The kernel with loop-invariant computations moved in front of their loops.
Kernel hoist_loop_invariants(const Kernel& kernel);

}  // namespace canopy::ir
