#include "fold.hpp"

#include <math.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <type_traits>

#include "../mutator.hpp"

namespace canopy::ir {

namespace {

// ---- integers: computed in the operand's width, wrapping -------------------

template <class Int>
Int wrap(std::make_unsigned_t<Int> bits) {
  return static_cast<Int>(bits);  // modular since C++20
}

template <class Int>
std::optional<Int> evaluate_int(BinaryOp op, Int a, Int b) {
  using Bits = std::make_unsigned_t<Int>;
  constexpr Bits width_mask = sizeof(Int) * 8 - 1;
  const Bits ua = static_cast<Bits>(a), ub = static_cast<Bits>(b);
  switch (op) {
    case BinaryOp::Add: return wrap<Int>(ua + ub);
    case BinaryOp::Sub: return wrap<Int>(ua - ub);
    case BinaryOp::Mul: return wrap<Int>(ua * ub);
    case BinaryOp::Div:
      if (b == 0) return Int{0};
      if (b == -1) return wrap<Int>(Bits{0} - ua);  // INT_MIN / -1 wraps to INT_MIN
      return static_cast<Int>(a / b);
    case BinaryOp::Rem:
      if (b == 0 || b == -1) return Int{0};
      return static_cast<Int>(a % b);
    case BinaryOp::Min: return a < b ? a : b;
    case BinaryOp::Max: return a > b ? a : b;
    case BinaryOp::And: return wrap<Int>(ua & ub);
    case BinaryOp::Or: return wrap<Int>(ua | ub);
    case BinaryOp::Xor: return wrap<Int>(ua ^ ub);
    case BinaryOp::Shl: return wrap<Int>(static_cast<Bits>(ua << (ub & width_mask)));
    case BinaryOp::Shr: return static_cast<Int>(a >> (ub & width_mask));  // arithmetic since C++20
  }
  return std::nullopt;
}

// The IR's float-to-integer conversion: toward zero, saturating, NaN -> 0.
template <class Int>
Int saturate_to(double value) {
  if (std::isnan(value)) return 0;
  // Both limits are powers of two, so these doubles are exact.
  const double lowest = static_cast<double>(std::numeric_limits<Int>::min());
  const double past_highest = -lowest;
  if (value <= lowest) return std::numeric_limits<Int>::min();
  if (value >= past_highest) return std::numeric_limits<Int>::max();
  return static_cast<Int>(value);
}

// ---- floats: computed in the operand's precision ---------------------------

bool zeros_of_both_signs(double a, double b) { return a == 0.0 && b == 0.0 && std::signbit(a) != std::signbit(b); }

template <class Float>
std::optional<Float> evaluate_float(BinaryOp op, Float a, Float b) {
  switch (op) {
    case BinaryOp::Add: return a + b;
    case BinaryOp::Sub: return a - b;
    case BinaryOp::Mul: return a * b;
    case BinaryOp::Div: return a / b;
    case BinaryOp::Rem: return std::fmod(a, b);
    case BinaryOp::Min:
      if (zeros_of_both_signs(a, b)) return std::nullopt;
      return std::fmin(a, b);
    case BinaryOp::Max:
      if (zeros_of_both_signs(a, b)) return std::nullopt;
      return std::fmax(a, b);
    default: return std::nullopt;  // bitwise operators do not apply to floats
  }
}

std::optional<double> evaluate_call_f64(MathFn fn, double a, double b, double c) {
  switch (fn) {
    case MathFn::Sqrt: return std::sqrt(a);
    case MathFn::Exp: return std::exp(a);
    case MathFn::Log: return std::log(a);
    case MathFn::Sin: return std::sin(a);
    case MathFn::Cos: return std::cos(a);
    case MathFn::Floor: return std::floor(a);
    case MathFn::Pow: return std::pow(a, b);
    case MathFn::Abs: return std::fabs(a);
    case MathFn::Fma: return std::fma(a, b, c);
  }
  return std::nullopt;
}

// The C library's single-precision functions, as a CPU kernel on f32 calls them.
std::optional<float> evaluate_call_f32(MathFn fn, float a, float b, float c) {
  switch (fn) {
    case MathFn::Sqrt: return ::sqrtf(a);
    case MathFn::Exp: return ::expf(a);
    case MathFn::Log: return ::logf(a);
    case MathFn::Sin: return ::sinf(a);
    case MathFn::Cos: return ::cosf(a);
    case MathFn::Floor: return ::floorf(a);
    case MathFn::Pow: return ::powf(a, b);
    case MathFn::Abs: return ::fabsf(a);
    case MathFn::Fma: return ::fmaf(a, b, c);
  }
  return std::nullopt;
}

// ---- literals ---------------------------------------------------------------

std::int64_t int_of(const Expr& e) { return e->as<Const>().int_value; }
double float_of(const Expr& e) { return e->as<Const>().float_value; }
bool all_const(const std::vector<Expr>& exprs) {
  for (const auto& e : exprs)
    if (!is_const(e)) return false;
  return true;
}

Expr f32_literal(float value) { return make_const(ScalarType::F32, static_cast<double>(value)); }

// ---- one node of each kind, operands already literals ----------------------

Expr evaluate_unary(UnaryOp op, const Expr& x) {
  const auto type = x->type;
  if (op == UnaryOp::Not) {
    if (type == ScalarType::Bool) return make_bool(int_of(x) == 0);
    if (is_int(type)) return make_int(type, ~int_of(x));  // make_int wraps i32
    return nullptr;
  }
  switch (type) {
    case ScalarType::I32:
      return make_int(type, *evaluate_int<std::int32_t>(BinaryOp::Sub, 0, static_cast<std::int32_t>(int_of(x))));
    case ScalarType::I64: return make_int(type, *evaluate_int<std::int64_t>(BinaryOp::Sub, 0, int_of(x)));
    case ScalarType::F32: return f32_literal(-static_cast<float>(float_of(x)));
    case ScalarType::F64: return make_const(type, -float_of(x));
    case ScalarType::Bool: return nullptr;
  }
  return nullptr;
}

Expr evaluate_binary(BinaryOp op, const Expr& a, const Expr& b) {
  const auto type = a->type;
  switch (type) {
    case ScalarType::Bool: {
      const bool x = int_of(a) != 0, y = int_of(b) != 0;
      if (op == BinaryOp::And) return make_bool(x && y);
      if (op == BinaryOp::Or) return make_bool(x || y);
      if (op == BinaryOp::Xor) return make_bool(x != y);
      return nullptr;
    }
    case ScalarType::I32: {
      auto r =
          evaluate_int<std::int32_t>(op, static_cast<std::int32_t>(int_of(a)), static_cast<std::int32_t>(int_of(b)));
      return r ? make_int(type, *r) : nullptr;
    }
    case ScalarType::I64: {
      auto r = evaluate_int<std::int64_t>(op, int_of(a), int_of(b));
      return r ? make_int(type, *r) : nullptr;
    }
    case ScalarType::F32: {
      auto r = evaluate_float<float>(op, static_cast<float>(float_of(a)), static_cast<float>(float_of(b)));
      return r ? f32_literal(*r) : nullptr;
    }
    case ScalarType::F64: {
      auto r = evaluate_float<double>(op, float_of(a), float_of(b));
      return r ? make_const(type, *r) : nullptr;
    }
  }
  return nullptr;
}

template <class T>
bool compare_values(CompareOp op, T a, T b) {
  switch (op) {
    case CompareOp::Eq: return a == b;
    case CompareOp::Ne: return a != b;
    case CompareOp::Lt: return a < b;
    case CompareOp::Le: return a <= b;
    case CompareOp::Gt: return a > b;
    case CompareOp::Ge: return a >= b;
  }
  return false;
}

Expr evaluate_compare(CompareOp op, const Expr& a, const Expr& b) {
  // f32 literals hold exactly their float value, so comparing the doubles is
  // comparing the floats (NaN included).
  if (is_float(a->type)) return make_bool(compare_values(op, float_of(a), float_of(b)));
  return make_bool(compare_values(op, int_of(a), int_of(b)));
}

Expr evaluate_cast(ScalarType to, const Expr& x) {
  const auto from = x->type;
  if (from == to) return x;
  if (to == ScalarType::Bool) return make_bool(is_float(from) ? float_of(x) != 0.0 : int_of(x) != 0);
  if (!is_float(from)) {  // bool or integer source: int_value is the exact value
    const std::int64_t value = int_of(x);
    switch (to) {
      case ScalarType::I32:
      case ScalarType::I64: return make_int(to, value);                     // wraps to 32 bits
      case ScalarType::F32: return f32_literal(static_cast<float>(value));  // one rounding, not two
      case ScalarType::F64: return make_const(to, static_cast<double>(value));
      case ScalarType::Bool: break;
    }
    return nullptr;
  }
  const double value = float_of(x);
  switch (to) {
    case ScalarType::I32: return make_int(to, saturate_to<std::int32_t>(value));
    case ScalarType::I64: return make_int(to, saturate_to<std::int64_t>(value));
    case ScalarType::F32: return f32_literal(static_cast<float>(value));
    case ScalarType::F64: return make_const(to, value);
    case ScalarType::Bool: break;
  }
  return nullptr;
}

Expr evaluate_call(MathFn fn, const std::vector<Expr>& args) {
  const auto type = args.at(0)->type;
  if (static_cast<int>(args.size()) != arity_of(fn)) return nullptr;
  if (fn == MathFn::Abs && is_int(type)) {
    const std::int64_t v = int_of(args[0]);
    if (v >= 0) return args[0];
    return type == ScalarType::I32
               ? make_int(type, *evaluate_int<std::int32_t>(BinaryOp::Sub, 0, static_cast<std::int32_t>(v)))
               : make_int(type, *evaluate_int<std::int64_t>(BinaryOp::Sub, 0, v));
  }
  const double second = args.size() > 1 ? float_of(args[1]) : 0.0;
  const double third = args.size() > 2 ? float_of(args[2]) : 0.0;
  if (type == ScalarType::F64) {
    auto r = evaluate_call_f64(fn, float_of(args[0]), second, third);
    return r ? make_const(type, *r) : nullptr;
  }
  if (type == ScalarType::F32) {
    auto r = evaluate_call_f32(fn, static_cast<float>(float_of(args[0])), static_cast<float>(second),
                               static_cast<float>(third));
    return r ? f32_literal(*r) : nullptr;
  }
  return nullptr;
}

// Rebuilds each node from folded children, then evaluates it when every
// operand it reads is a literal.
class ConstantFolder final : public Mutator {
 protected:
  Expr visit(const Unary& node, const Expr& self) override {
    auto e = Mutator::visit(node, self);
    const auto& u = e->as<Unary>();
    return or_else(is_const(u.operand) ? evaluate_unary(u.op, u.operand) : nullptr, e);
  }
  Expr visit(const Binary& node, const Expr& self) override {
    auto e = Mutator::visit(node, self);
    const auto& b = e->as<Binary>();
    const bool literal = is_const(b.lhs) && is_const(b.rhs) && b.lhs->type == b.rhs->type;
    return or_else(literal ? evaluate_binary(b.op, b.lhs, b.rhs) : nullptr, e);
  }
  Expr visit(const Compare& node, const Expr& self) override {
    auto e = Mutator::visit(node, self);
    const auto& c = e->as<Compare>();
    const bool literal = is_const(c.lhs) && is_const(c.rhs) && c.lhs->type == c.rhs->type;
    return or_else(literal ? evaluate_compare(c.op, c.lhs, c.rhs) : nullptr, e);
  }
  Expr visit(const Cast& node, const Expr& self) override {
    auto e = Mutator::visit(node, self);
    const auto& c = e->as<Cast>();
    return or_else(is_const(c.operand) ? evaluate_cast(c.type, c.operand) : nullptr, e);
  }
  Expr visit(const Call& node, const Expr& self) override {
    auto e = Mutator::visit(node, self);
    const auto& c = e->as<Call>();
    return or_else(all_const(c.args) ? evaluate_call(c.fn, c.args) : nullptr, e);
  }
  Expr visit(const Select& node, const Expr& self) override {
    auto e = Mutator::visit(node, self);
    const auto& s = e->as<Select>();
    if (!is_const(s.cond)) return e;
    return int_of(s.cond) != 0 ? s.if_true : s.if_false;
  }

 private:
  static Expr or_else(Expr folded, const Expr& unchanged) { return folded ? folded : unchanged; }
};

}  // namespace

Expr fold(const Expr& expr) { return ConstantFolder().mutate(expr); }

Kernel fold_constants(const Kernel& kernel) { return ConstantFolder().mutate(kernel); }

}  // namespace canopy::ir
