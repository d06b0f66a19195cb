#include "expr.hpp"

#include <cmath>
#include <limits>

namespace canopy::ir {

namespace {

// The value a C++ static_cast from double to `type` gives, with the IR's
// rules where C++ has none (saturation, NaN to 0).
std::int64_t to_int(ScalarType type, double value) {
  if (type == ScalarType::Bool) return value != 0.0 ? 1 : 0;
  if (std::isnan(value)) return 0;
  if (type == ScalarType::I32) {
    if (value <= static_cast<double>(std::numeric_limits<std::int32_t>::min()))
      return std::numeric_limits<std::int32_t>::min();
    if (value >= static_cast<double>(std::numeric_limits<std::int32_t>::max()))
      return std::numeric_limits<std::int32_t>::max();
    return static_cast<std::int32_t>(value);
  }
  if (value <= -9223372036854775808.0) return std::numeric_limits<std::int64_t>::min();
  if (value >= 9223372036854775808.0) return std::numeric_limits<std::int64_t>::max();
  return static_cast<std::int64_t>(value);
}

}  // namespace

Expr make_const(ScalarType type, double value) {
  switch (type) {
    case ScalarType::F32: return std::make_shared<Const>(type, 0, static_cast<double>(static_cast<float>(value)));
    case ScalarType::F64: return std::make_shared<Const>(type, 0, value);
    default: return std::make_shared<Const>(type, to_int(type, value), 0.0);
  }
}

Expr make_int(ScalarType type, std::int64_t value) {
  if (is_float(type)) return make_const(type, static_cast<double>(value));
  if (type == ScalarType::Bool) value = value != 0;
  if (type == ScalarType::I32) value = static_cast<std::int32_t>(static_cast<std::uint32_t>(value));
  return std::make_shared<Const>(type, value, 0.0);
}

Expr make_bool(bool value) { return std::make_shared<Const>(ScalarType::Bool, value ? 1 : 0, 0.0); }
Expr make_index(int dim) { return std::make_shared<Index>(dim); }
Expr make_param(ScalarType type, int param) { return std::make_shared<ParamRef>(type, param); }
Expr make_var(ScalarType type, std::string name) { return std::make_shared<VarRef>(type, std::move(name)); }
Expr make_extent(int param, int dim) { return std::make_shared<Extent>(param, dim); }
Expr make_load(ScalarType type, int param, std::vector<Expr> indices) {
  return std::make_shared<Load>(type, param, std::move(indices));
}
Expr make_unary(UnaryOp op, Expr operand) { return std::make_shared<Unary>(op, std::move(operand)); }
Expr make_binary(BinaryOp op, Expr lhs, Expr rhs) {
  return std::make_shared<Binary>(op, std::move(lhs), std::move(rhs));
}
Expr make_compare(CompareOp op, Expr lhs, Expr rhs) {
  return std::make_shared<Compare>(op, std::move(lhs), std::move(rhs));
}
Expr make_cast(ScalarType to, Expr operand) { return std::make_shared<Cast>(to, std::move(operand)); }
Expr make_call(MathFn fn, std::vector<Expr> args) { return std::make_shared<Call>(fn, std::move(args)); }
Expr make_select(Expr cond, Expr if_true, Expr if_false) {
  return std::make_shared<Select>(std::move(cond), std::move(if_true), std::move(if_false));
}

std::string_view name_of(UnaryOp op) { return op == UnaryOp::Neg ? "-" : "!"; }

std::string_view name_of(BinaryOp op) {
  switch (op) {
    case BinaryOp::Add: return "+";
    case BinaryOp::Sub: return "-";
    case BinaryOp::Mul: return "*";
    case BinaryOp::Div: return "/";
    case BinaryOp::Rem: return "%";
    case BinaryOp::Min: return "min";
    case BinaryOp::Max: return "max";
    case BinaryOp::And: return "&";
    case BinaryOp::Or: return "|";
    case BinaryOp::Xor: return "^";
    case BinaryOp::Shl: return "<<";
    case BinaryOp::Shr: return ">>";
  }
  return "?";
}

std::string_view name_of(CompareOp op) {
  switch (op) {
    case CompareOp::Eq: return "==";
    case CompareOp::Ne: return "!=";
    case CompareOp::Lt: return "<";
    case CompareOp::Le: return "<=";
    case CompareOp::Gt: return ">";
    case CompareOp::Ge: return ">=";
  }
  return "?";
}

CompareOp mirrored(CompareOp op) {
  switch (op) {
    case CompareOp::Lt: return CompareOp::Gt;
    case CompareOp::Le: return CompareOp::Ge;
    case CompareOp::Gt: return CompareOp::Lt;
    case CompareOp::Ge: return CompareOp::Le;
    default: return op;
  }
}

CompareOp negated(CompareOp op) {
  switch (op) {
    case CompareOp::Eq: return CompareOp::Ne;
    case CompareOp::Ne: return CompareOp::Eq;
    case CompareOp::Lt: return CompareOp::Ge;
    case CompareOp::Le: return CompareOp::Gt;
    case CompareOp::Gt: return CompareOp::Le;
    case CompareOp::Ge: return CompareOp::Lt;
  }
  return op;
}

std::string_view name_of(MathFn fn) {
  switch (fn) {
    case MathFn::Sqrt: return "sqrt";
    case MathFn::Exp: return "exp";
    case MathFn::Log: return "log";
    case MathFn::Sin: return "sin";
    case MathFn::Cos: return "cos";
    case MathFn::Floor: return "floor";
    case MathFn::Pow: return "pow";
    case MathFn::Abs: return "abs";
    case MathFn::Fma: return "fma";
  }
  return "?";
}

int arity_of(MathFn fn) {
  if (fn == MathFn::Fma) return 3;
  return fn == MathFn::Pow ? 2 : 1;
}

bool is_const_value(const Expr& e, double value) { return is_const(e) && e->as<Const>().as_double() == value; }

}  // namespace canopy::ir
