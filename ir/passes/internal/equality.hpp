// Structural equality and hashing of expressions, for the passes that look for
// the same computation written twice (CSE, LICM, the simplifier's x - x).
// Two expressions are equal when they are the same tree of nodes with the same
// types, operators, names and literal bits; since expressions have no side
// effects, equal expressions evaluated at the same point give the same value.
#pragma once

#include <cstddef>

#include "../../expr.hpp"

namespace canopy::ir::passes_internal {

/// True when `a` and `b` are the same tree. Float literals compare by their
/// bits, so 0.0 and -0.0 differ and a NaN equals the same NaN.
bool equal(const Expr& a, const Expr& b);

/// A hash consistent with `equal`.
std::size_t hash_of(const Expr& e);

/// Functors for unordered containers keyed by expression structure.
struct ExprHash {
  std::size_t operator()(const Expr& e) const { return hash_of(e); }
};
struct ExprEqual {
  bool operator()(const Expr& a, const Expr& b) const { return equal(a, b); }
};

}  // namespace canopy::ir::passes_internal
