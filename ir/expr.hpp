// Expressions of the kernel IR: immutable trees shared by pointer. Every node
// knows its scalar type. Nodes are built with the `make_*` functions below and
// never changed afterwards; passes build new trees (see mutator.hpp), reusing
// every subtree they did not touch.
//
// Semantics every backend implements the same way:
//  - integers are signed and wrap on overflow;
//  - integer x / 0 and x % 0 are 0, and INT_MIN / -1 is INT_MIN (never a trap);
//  - shift amounts are taken modulo the bit width; >> is arithmetic;
//  - min and max on floats ignore a NaN operand (C's fmin/fmax);
//  - float to integer casts round toward zero and saturate, NaN gives 0;
//    casts to bool compare with zero; bool casts to 0 or 1;
//  - % on floats is C's fmod.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "type.hpp"

namespace canopy::ir {

enum class ExprKind : std::uint8_t {
  Const,    ///< a literal
  Index,    ///< the index of the current point in one dimension of the range
  Param,    ///< the value of a scalar parameter
  Var,      ///< the current value of a local variable
  Extent,   ///< the run-time extent of one dimension of an array parameter
  Load,     ///< an element of an array parameter
  Unary,    ///< -x, !x
  Binary,   ///< arithmetic, min/max, bitwise and logical operators
  Compare,  ///< ==, !=, <, <=, >, >= (result bool)
  Cast,     ///< conversion to another scalar type
  Call,     ///< a math function
  Select,   ///< cond ? a : b, both sides evaluated
};

struct ExprNode;
/// A shared, immutable expression tree.
using Expr = std::shared_ptr<const ExprNode>;

/// Base of every expression node.
struct ExprNode {
  const ExprKind kind;
  const ScalarType type;
  virtual ~ExprNode() = default;

  /// The node as its concrete class; the caller has checked `kind`.
  template <class T>
  const T& as() const {
    return static_cast<const T&>(*this);
  }

 protected:
  ExprNode(ExprKind k, ScalarType t) : kind(k), type(t) {}
};

/// A literal. Integers and bools keep their value in `int_value`, floats in
/// `float_value` (an f32 literal holds a double that is exactly a float).
struct Const final : ExprNode {
  std::int64_t int_value = 0;
  double float_value = 0.0;
  Const(ScalarType t, std::int64_t i, double f) : ExprNode(ExprKind::Const, t), int_value(i), float_value(f) {}
  /// The value as a double whatever the type (exact for bool, i32, f32, f64).
  double as_double() const { return is_float(type) ? float_value : static_cast<double>(int_value); }
};

/// index(dim): position of the current point along dimension `dim` (i64).
struct Index final : ExprNode {
  int dim;
  explicit Index(int d) : ExprNode(ExprKind::Index, ScalarType::I64), dim(d) {}
};

/// The value of scalar parameter number `param`.
struct ParamRef final : ExprNode {
  int param;
  ParamRef(ScalarType t, int p) : ExprNode(ExprKind::Param, t), param(p) {}
};

/// The current value of the local variable (or loop counter) `name`.
struct VarRef final : ExprNode {
  std::string name;
  VarRef(ScalarType t, std::string n) : ExprNode(ExprKind::Var, t), name(std::move(n)) {}
};

/// extent(array, dim): number of elements of array parameter `param` along `dim` (i64).
struct Extent final : ExprNode {
  int param;
  int dim;
  Extent(int p, int d) : ExprNode(ExprKind::Extent, ScalarType::I64), param(p), dim(d) {}
};

/// array[indices...]: one element of array parameter `param` (row-major, last index fastest).
struct Load final : ExprNode {
  int param;
  std::vector<Expr> indices;
  Load(ScalarType t, int p, std::vector<Expr> idx) : ExprNode(ExprKind::Load, t), param(p), indices(std::move(idx)) {}
};

enum class UnaryOp : std::uint8_t {
  Neg,  ///< arithmetic negation (numeric types)
  Not,  ///< logical not on bool, bitwise complement on integers
};

struct Unary final : ExprNode {
  UnaryOp op;
  Expr operand;
  Unary(UnaryOp o, Expr x) : ExprNode(ExprKind::Unary, x->type), op(o), operand(std::move(x)) {}
};

// One line per group of operands.
// clang-format off
enum class BinaryOp : std::uint8_t {
  Add, Sub, Mul, Div, Rem,  ///< numeric types
  Min, Max,                 ///< numeric types
  And, Or, Xor,             ///< bool (logical) or integers (bitwise)
  Shl, Shr,                 ///< integers
};
// clang-format on

/// lhs op rhs; both operands have the same type, which is the result type.
struct Binary final : ExprNode {
  BinaryOp op;
  Expr lhs, rhs;
  Binary(BinaryOp o, Expr a, Expr b)
      : ExprNode(ExprKind::Binary, a->type), op(o), lhs(std::move(a)), rhs(std::move(b)) {}
};

enum class CompareOp : std::uint8_t { Eq, Ne, Lt, Le, Gt, Ge };

/// lhs op rhs on operands of one type; the result is bool.
struct Compare final : ExprNode {
  CompareOp op;
  Expr lhs, rhs;
  Compare(CompareOp o, Expr a, Expr b)
      : ExprNode(ExprKind::Compare, ScalarType::Bool), op(o), lhs(std::move(a)), rhs(std::move(b)) {}
};

/// The operand converted to `type`.
struct Cast final : ExprNode {
  Expr operand;
  Cast(ScalarType to, Expr x) : ExprNode(ExprKind::Cast, to), operand(std::move(x)) {}
};

// One line per group of operands.
// clang-format off
enum class MathFn : std::uint8_t {
  Sqrt, Exp, Log, Sin, Cos, Floor,  ///< one float argument
  Pow,                              ///< two float arguments
  Abs,                              ///< one numeric argument
  Fma,                              ///< three float arguments: a * b + c rounded once
};
// clang-format on

/// fn(args...): the result has the type of the arguments.
struct Call final : ExprNode {
  MathFn fn;
  std::vector<Expr> args;
  Call(MathFn f, std::vector<Expr> a) : ExprNode(ExprKind::Call, a.at(0)->type), fn(f), args(std::move(a)) {}
};

/// cond ? if_true : if_false. Both sides are evaluated; neither may fault.
struct Select final : ExprNode {
  Expr cond, if_true, if_false;
  Select(Expr c, Expr t, Expr f)
      : ExprNode(ExprKind::Select, t->type), cond(std::move(c)), if_true(std::move(t)), if_false(std::move(f)) {}
};

// ---- construction -------------------------------------------------------

Expr make_const(ScalarType type, double value);      ///< any type; value converted as a C++ cast would
Expr make_int(ScalarType type, std::int64_t value);  ///< bool, i32 or i64
Expr make_bool(bool value);
Expr make_index(int dim);
Expr make_param(ScalarType type, int param);
Expr make_var(ScalarType type, std::string name);
Expr make_extent(int param, int dim);
Expr make_load(ScalarType type, int param, std::vector<Expr> indices);
Expr make_unary(UnaryOp op, Expr operand);
Expr make_binary(BinaryOp op, Expr lhs, Expr rhs);
Expr make_compare(CompareOp op, Expr lhs, Expr rhs);
Expr make_cast(ScalarType to, Expr operand);
Expr make_call(MathFn fn, std::vector<Expr> args);
Expr make_select(Expr cond, Expr if_true, Expr if_false);

// ---- names in the text form ---------------------------------------------

std::string_view name_of(UnaryOp op);    ///< "-", "!"
std::string_view name_of(BinaryOp op);   ///< "+", "-", ..., "min", "max", "<<", ">>"
std::string_view name_of(CompareOp op);  ///< "==", "!=", "<", "<=", ">", ">="
std::string_view name_of(MathFn fn);     ///< "sqrt", "exp", ... (C names; Abs is "abs")
int arity_of(MathFn fn);                 ///< number of arguments

/// The comparison with its operands swapped: a < b is b > a (== and != stay).
CompareOp mirrored(CompareOp op);
/// The comparison's opposite where every pair of values is ordered (not
/// floats, whose NaN compares false both ways): !(a < b) is a >= b.
CompareOp negated(CompareOp op);

/// True when the node is a literal of any type.
inline bool is_const(const Expr& e) { return e && e->kind == ExprKind::Const; }
/// True when `e` is a literal whose value equals `value`.
bool is_const_value(const Expr& e, double value);

}  // namespace canopy::ir
