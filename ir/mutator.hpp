// Mutator: rewrites an IR tree. A pass overrides only the node kinds it
// rewrites; the defaults rebuild a node from its mutated children and return
// the very same node (pointer-equal) when no child changed, so untouched
// subtrees are shared between the old and the new tree.
//
// A statement override may return null to delete the statement: a Block drops
// it, an If or For body becomes an empty Block.
//
// mutate() is virtual too: it sees every node before its kind's visit, so a
// pass that treats every kind alike (replacing a shared or loop-invariant
// subexpression wherever it occurs) overrides it once and calls
// Mutator::mutate to go on into the node. Such a class adds
// `using Mutator::mutate;` to keep the other overloads visible.
#pragma once

#include "kernel.hpp"

namespace canopy::ir {

class Mutator {
 public:
  virtual ~Mutator() = default;

  virtual Expr mutate(const Expr& expr);
  virtual Stmt mutate(const Stmt& stmt);  ///< a null statement stays null

  /// The kernel with its body mutated (parameters and dims unchanged).
  Kernel mutate(const Kernel& kernel);

 protected:
  virtual Expr visit(const Const&, const Expr& self) { return self; }
  virtual Expr visit(const Index&, const Expr& self) { return self; }
  virtual Expr visit(const ParamRef&, const Expr& self) { return self; }
  virtual Expr visit(const VarRef&, const Expr& self) { return self; }
  virtual Expr visit(const Extent&, const Expr& self) { return self; }
  virtual Expr visit(const Load& node, const Expr& self);
  virtual Expr visit(const Unary& node, const Expr& self);
  virtual Expr visit(const Binary& node, const Expr& self);
  virtual Expr visit(const Compare& node, const Expr& self);
  virtual Expr visit(const Cast& node, const Expr& self);
  virtual Expr visit(const Call& node, const Expr& self);
  virtual Expr visit(const Select& node, const Expr& self);

  virtual Stmt visit(const Block& node, const Stmt& self);
  virtual Stmt visit(const Decl& node, const Stmt& self);
  virtual Stmt visit(const Assign& node, const Stmt& self);
  virtual Stmt visit(const Store& node, const Stmt& self);
  virtual Stmt visit(const AtomicAdd& node, const Stmt& self);
  virtual Stmt visit(const Reduce& node, const Stmt& self);
  virtual Stmt visit(const If& node, const Stmt& self);
  virtual Stmt visit(const For& node, const Stmt& self);

  /// Mutates each expression; sets `changed` when any differs from the input.
  std::vector<Expr> mutate_all(const std::vector<Expr>& exprs, bool& changed);
  /// A body that is never null: a deleted body becomes an empty Block.
  Stmt mutate_body(const Stmt& body);
};

}  // namespace canopy::ir
