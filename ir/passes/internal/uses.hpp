// What an expression reads and what a statement writes, and fresh local names:
// the facts the passes need to know whether moving or sharing a computation
// keeps its value (CSE, LICM) and whether a local is ever needed (DCE).
#pragma once

#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "../../kernel.hpp"

namespace canopy::ir::passes_internal {

/// Everything the value of an expression depends on.
struct ExprReads {
  std::set<std::string> locals;   ///< locals and loop counters it reads
  std::set<int> arrays;           ///< array parameters it loads from
  bool integer_division = false;  ///< it contains an integer / or %
};
ExprReads reads_of(const Expr& expr);
/// What every expression of a statement (with its children) reads.
ExprReads reads_of(const Stmt& stmt);

/// The operands of an expression, in order: a load's indices, a call's
/// arguments, a select's condition and arms; none for a leaf.
std::vector<const Expr*> operands_of(const Expr& expr);
/// The expressions a statement evaluates itself, not those of the statements
/// inside it: a Decl's or Assign's value, a store's or atomic add's indices
/// and value, a Reduce's value, an If's condition, a loop's bounds.
std::vector<Expr> expressions_of(const Stmt& stmt);

/// reads_of, remembered per node and built from the children's answers, for a
/// pass that asks about every subtree of deep expressions. Only the locals in
/// `tracked` are recorded (a pass names the ones it cares about, e.g. those
/// ever assigned, so the sets stay small in long chains of distinct locals).
/// Like HashCache it holds on to the nodes it has seen; references it returns
/// stay valid while it lives.
class ReadsCache {
 public:
  explicit ReadsCache(std::set<std::string> tracked) : tracked_(std::move(tracked)) {}
  const ExprReads& reads(const Expr& expr);

 private:
  /// Adds the reads of an operand to those of the expression that uses it.
  static void merge_child(ExprReads& into, const ExprReads& child);
  std::set<std::string> tracked_;
  std::unordered_map<const ExprNode*, std::pair<Expr, ExprReads>> memo_;
};

/// Everything a statement (with its children) may change or introduce.
struct StmtWrites {
  std::set<std::string> assigned;  ///< targets of Assign
  std::set<std::string> declared;  ///< names of Decls and loop counters
  std::set<int> arrays;            ///< array parameters it stores to or atomically adds to
};
StmtWrites writes_of(const Stmt& stmt);

/// How many Decls and loops bind each name anywhere in the kernel. A name
/// bound once can move to an enclosing block without clashing with another.
std::map<std::string, int> binding_counts(const Kernel& kernel);

/// Hands out names `<prefix>0`, `<prefix>1`, ... that no parameter, local or
/// loop counter of the kernel uses (and that it has not handed out before).
class FreshNames {
 public:
  FreshNames(const Kernel& kernel, std::string prefix);
  std::string next();

 private:
  std::set<std::string> taken_;
  std::string prefix_;
  int counter_ = 0;
};

}  // namespace canopy::ir::passes_internal
