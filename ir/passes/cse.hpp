// Common-subexpression elimination: within each straight-line run of
// statements, a computation written more than once is computed once into a new
// local `cseN` and read from there.
//
// Why it exists: traced kernels repeat themselves (`a[i] * s` in three
// statements, index arithmetic in every subscript), and doing this here rather
// than leaving it to each backend's compiler means every device gets the same
// sharing, and the OpenCL C / CUDA C we generate stays readable.
//
// What it will not do, so that every value stays what it was:
//  - share a load of an array across a Store or AtomicAdd to that array, or,
//    unless the caller promises the kernel's arrays are distinct memory
//    (Arrays::Distinct), to any array of its element type (one array may be
//    passed as two parameters); nor an expression reading a local across an
//    Assign to that local (such a statement ends the range in which the
//    expression may be shared);
//  - move anything out of an If or For body into the enclosing block (a
//    conditional computation stays conditional; each body is treated on its
//    own). An If's condition belongs to the run that ends with the If; a For
//    ends a run and its bounds are left alone.
// Literals, indices, parameters, locals and extents are never worth a local.
// When the first occurrence is the whole initial value of a `var x = e` whose
// x is never assigned, x itself serves as the shared local. New names avoid
// every name the kernel already uses.
#pragma once

#include "../kernel.hpp"
#include "optimize.hpp"

namespace canopy::ir {

/// The kernel with repeated subexpressions shared through new locals.
Kernel eliminate_common_subexpressions(const Kernel& kernel, Arrays arrays = Arrays::MayAlias);

}  // namespace canopy::ir
