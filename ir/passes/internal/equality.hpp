// Structural equality and hashing of expressions, for the passes that look for
// the same computation written twice (CSE, LICM, the simplifier's x - x).
// Two expressions are equal when they are the same tree of nodes with the same
// types, operators, names and literal bits; since expressions have no side
// effects, equal expressions evaluated at the same point give the same value.
#pragma once

#include <cstddef>
#include <unordered_map>
#include <utility>

#include "../../expr.hpp"

namespace canopy::ir::passes_internal {

/// True for the kinds with no operands (literal, index, parameter, local,
/// extent): reading one costs nothing, so no pass gives one a local of its own.
bool is_leaf(const Expr& e);

/// True when `a` and `b` are the same tree. Float literals compare by their
/// bits, so 0.0 and -0.0 differ and a NaN equals the same NaN.
bool equal(const Expr& a, const Expr& b);

/// A hash consistent with `equal`.
std::size_t hash_of(const Expr& e);

/// hash_of, remembered per node: a pass that hashes every subtree of a deep
/// expression then pays for each node once, not once per enclosing node. The
/// cache holds on to the nodes it has seen, so no other node can take the
/// address of one it remembers.
class HashCache {
 public:
  std::size_t hash(const Expr& e);

 private:
  std::unordered_map<const ExprNode*, std::pair<Expr, std::size_t>> memo_;
};

/// Functors for unordered containers keyed by expression structure; the hash
/// goes through the pass's HashCache.
struct ExprHash {
  HashCache* cache;
  std::size_t operator()(const Expr& e) const { return cache->hash(e); }
};
struct ExprEqual {
  bool operator()(const Expr& a, const Expr& b) const { return equal(a, b); }
};

/// An unordered map keyed by expression structure.
template <class Value>
using ExprMap = std::unordered_map<Expr, Value, ExprHash, ExprEqual>;

/// An empty ExprMap hashing through `cache`.
template <class Value>
ExprMap<Value> make_expr_map(HashCache& cache) {
  return ExprMap<Value>(16, ExprHash{&cache}, ExprEqual{});
}

}  // namespace canopy::ir::passes_internal
