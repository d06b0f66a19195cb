// Snapshots of locals, as the DSL makes them: reading a Var in a kernel's C++
// code takes its value at that point, as reading a C++ variable would, so a
// Value computed from it keeps that value when the Var is assigned later
// (`t = zr * zr - zi * zi; zi = 2 * zr * zi; zr = t;` must use the old zi in
// t); likewise an element of an InOut array stored to after it was read.
// The tracer declares a snapshot local for each read (`var snap_3 = zi`,
// `var snap_4 = a[i]`), and at the end of tracing this pass puts the local
// itself back wherever the snapshot cannot differ from it (no assignment to
// the local between the snapshot and its last use), so that only the reads
// that need one keep a snapshot and the traced IR of every other kernel is
// what it was without them.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "../stmt.hpp"
#include "../type.hpp"

namespace canopy::ir {

/// `body` with every snapshot among `snapshots` (locals declared as a copy
/// of another local or of an array element, `var s = v`, `var s = a[i]`, and
/// never assigned) replaced by what it copies wherever that gives the same
/// value, and its declaration dropped. A store to an array changes what
/// every array of its element type reads (`element_types[p]`, one entry per
/// parameter): a program may pass one array twice, as `In` and as `InOut`.
Stmt forward_snapshots(const Stmt& body, const std::set<std::string>& snapshots,
                       const std::vector<ScalarType>& element_types);

}  // namespace canopy::ir
