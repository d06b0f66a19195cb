// Algebraic simplification: rewrites that are exact under the IR's semantics.
//
// Why it exists: traced kernels and the other passes leave behind x + 0,
// x * 1, select(true, a, b), if (false) and loops that never run; removing
// them here keeps the code every backend generates small and readable, and
// lets folding, CSE and LICM see the real computation. Every rule gives the
// same value for every input, so floats are handled with care:
//  - x + 0, x - 0, x * 1, x / 1 disappear for every type, except that on floats
//    only x + (-0.0) and x - (+0.0) do (-0.0 + 0.0 is +0.0, not -0.0);
//  - x * 0 -> 0, x - x -> 0, x ^ x -> 0, x & x -> x, x | x -> x, x == x -> true
//    and friends only on integers and bools (NaN, infinities, -0.0);
//  - literals move to the right of commutative operators (and of comparisons,
//    mirrored), and (x + c1) + c2 style chains of integer literals combine into
//    one; floats are never reassociated;
//  - neg(neg(x)), not(not(x)), casts to the same type, select(true / false, a, b)
//    and select(c, a, a) collapse;
//  - if (true) / if (false) become the branch taken, loops whose literal bounds
//    give no iteration go, and nested blocks are flattened into their parent
//    when that cannot make two declarations of one name meet.
#pragma once

#include "../kernel.hpp"

namespace canopy::ir {

/// The kernel with every exact algebraic identity above applied, bottom-up.
Kernel simplify(const Kernel& kernel);

/// One expression simplified by the same rules.
Expr simplify(const Expr& expr);

}  // namespace canopy::ir
