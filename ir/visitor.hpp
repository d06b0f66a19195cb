// Visitor: walks an IR tree read-only. A pass overrides only the node kinds it
// cares about; every other node recurses into its children by default.
// Call `walk` to enter a tree (it dispatches on the node's kind); from an
// override, call `walk` on the children you still want visited, or the base
// class's `visit` to recurse as the default would.
#pragma once

#include "kernel.hpp"

namespace canopy::ir {

class Visitor {
 public:
  virtual ~Visitor() = default;

  void walk(const Expr& expr);
  void walk(const Stmt& stmt);  ///< a null statement is skipped

 protected:
  virtual void visit(const Const&) {}
  virtual void visit(const Index&) {}
  virtual void visit(const ParamRef&) {}
  virtual void visit(const VarRef&) {}
  virtual void visit(const Extent&) {}
  virtual void visit(const Load& node);
  virtual void visit(const Unary& node);
  virtual void visit(const Binary& node);
  virtual void visit(const Compare& node);
  virtual void visit(const Cast& node);
  virtual void visit(const Call& node);
  virtual void visit(const Select& node);

  virtual void visit(const Block& node);
  virtual void visit(const Decl& node);
  virtual void visit(const Assign& node);
  virtual void visit(const Store& node);
  virtual void visit(const AtomicAdd& node);
  virtual void visit(const Reduce& node);
  virtual void visit(const If& node);
  virtual void visit(const For& node);
};

/// True when the kernel's body has a For loop: a point may then do any amount of work.
bool has_loops(const Kernel& kernel);

}  // namespace canopy::ir
