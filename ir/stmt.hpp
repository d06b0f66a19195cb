// Statements of the kernel IR. Like expressions they are immutable trees
// shared by pointer. A kernel body is a Block run once per point of the index
// range.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "expr.hpp"

namespace canopy::ir {

enum class StmtKind : std::uint8_t {
  Block,      ///< statements in order
  Decl,       ///< a new local variable with its initial value
  Assign,     ///< a new value for a local variable
  Store,      ///< array[indices] = value
  AtomicAdd,  ///< array[indices] += value, atomically with respect to other points
  Reduce,     ///< contribute a value to a reduction parameter
  If,         ///< if (cond) then_body else else_body
  For,        ///< counted loop: for var in begin .. end step step
};

struct StmtNode;
/// A shared, immutable statement tree.
using Stmt = std::shared_ptr<const StmtNode>;

struct StmtNode {
  const StmtKind kind;
  virtual ~StmtNode() = default;

  template <class T>
  const T& as() const { return static_cast<const T&>(*this); }

 protected:
  explicit StmtNode(StmtKind k) : kind(k) {}
};

struct Block final : StmtNode {
  std::vector<Stmt> stmts;
  explicit Block(std::vector<Stmt> s) : StmtNode(StmtKind::Block), stmts(std::move(s)) {}
};

/// `var name: type = init`. Names are unique in a kernel (no shadowing); the
/// variable is visible from here to the end of the enclosing block.
struct Decl final : StmtNode {
  std::string name;
  ScalarType type;
  Expr init;
  Decl(std::string n, ScalarType t, Expr i) : StmtNode(StmtKind::Decl), name(std::move(n)), type(t), init(std::move(i)) {}
};

/// `name = value` for a declared local (never a loop counter).
struct Assign final : StmtNode {
  std::string name;
  Expr value;
  Assign(std::string n, Expr v) : StmtNode(StmtKind::Assign), name(std::move(n)), value(std::move(v)) {}
};

/// `array[indices] = value` for an out or inout array parameter.
struct Store final : StmtNode {
  int param;
  std::vector<Expr> indices;
  Expr value;
  Store(int p, std::vector<Expr> idx, Expr v)
      : StmtNode(StmtKind::Store), param(p), indices(std::move(idx)), value(std::move(v)) {}
};

/// `atomic array[indices] += value` for an out or inout array of i32, i64, f32 or f64.
struct AtomicAdd final : StmtNode {
  int param;
  std::vector<Expr> indices;
  Expr value;
  AtomicAdd(int p, std::vector<Expr> idx, Expr v)
      : StmtNode(StmtKind::AtomicAdd), param(p), indices(std::move(idx)), value(std::move(v)) {}
};

/// `reduce acc(value)`: combine `value` into reduction parameter `param` with its operator.
struct Reduce final : StmtNode {
  int param;
  Expr value;
  Reduce(int p, Expr v) : StmtNode(StmtKind::Reduce), param(p), value(std::move(v)) {}
};

/// `if (cond) { then_body } else { else_body }`; else_body may be null.
struct If final : StmtNode {
  Expr cond;
  Stmt then_body;
  Stmt else_body;
  If(Expr c, Stmt t, Stmt e) : StmtNode(StmtKind::If), cond(std::move(c)), then_body(std::move(t)), else_body(std::move(e)) {}
};

/// `for var in begin .. end step step { body }`: var takes begin, begin+step, ...
/// while below end. begin and end have one integer type, which is var's type;
/// step is a positive literal of that type. var is read-only in the body.
struct For final : StmtNode {
  std::string var;
  Expr begin, end, step;
  Stmt body;
  For(std::string v, Expr b, Expr e, Expr s, Stmt body_)
      : StmtNode(StmtKind::For), var(std::move(v)), begin(std::move(b)), end(std::move(e)), step(std::move(s)),
        body(std::move(body_)) {}
};

Stmt make_block(std::vector<Stmt> stmts);
Stmt make_decl(std::string name, Expr init);  ///< the type is init's type
Stmt make_assign(std::string name, Expr value);
Stmt make_store(int param, std::vector<Expr> indices, Expr value);
Stmt make_atomic_add(int param, std::vector<Expr> indices, Expr value);
Stmt make_reduce(int param, Expr value);
Stmt make_if(Expr cond, Stmt then_body, Stmt else_body = nullptr);
/// A loop with step 1 of begin's type.
Stmt make_for(std::string var, Expr begin, Expr end, Stmt body);
Stmt make_for(std::string var, Expr begin, Expr end, Expr step, Stmt body);

}  // namespace canopy::ir
