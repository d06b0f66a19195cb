// Dead-code elimination: removes what cannot change a kernel's results.
//
// Why it exists: the other passes leave debris (a local whose every use was
// folded away, CSE or LICM temporaries that simplification made redundant,
// an `if` whose branches both emptied), and user code may declare locals it
// never reads. Expressions have no side effects, so a local matters
// only if its value can reach a Store, an AtomicAdd, a Reduce, an If
// condition or a loop bound; Decls and Assigns of every other local go. Then
// an If with no statement in either branch, a For with an empty body (counted
// loops always end) and empty blocks go too, repeated until nothing changes.
#pragma once

#include "../kernel.hpp"

namespace canopy::ir {

/// The kernel without dead locals, empty ifs, empty loops and empty blocks.
Kernel eliminate_dead_code(const Kernel& kernel);

}  // namespace canopy::ir
