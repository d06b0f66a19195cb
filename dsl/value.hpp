// Typed symbolic values: what a kernel's C++ code computes with while it is
// traced. `Value<T>` stands for an IR expression of scalar type T (bool,
// int32_t, int64_t, float, double). Arithmetic, comparisons and the math
// functions under their C names build expressions; nothing is computed until
// the kernel runs on a device.
//
// Mixing types is explicit, as in a strongly typed language: two symbolic
// operands must have the same type (use cast<T>(x) to convert), while a C++
// literal adapts to the symbolic operand's type (`x * 2` with x a
// Value<float> multiplies by 2.0f). A floating-point literal next to an
// integer value does not compile.
#pragma once

#include <concepts>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

#include <canopy/ir/expr.hpp>
#include <canopy/ir/type.hpp>

namespace canopy {

template <class T>
class Value;

namespace dsl {

/// Anything that stands for a symbolic value of type X::value_type: Value,
/// Var, scalar parameters, array elements.
template <class X>
concept Symbolic = requires(const X& x) {
  typename X::value_type;
  { x.value() } -> std::same_as<Value<typename X::value_type>>;
};

/// A C++ literal of type L may stand for a value of kernel type T: any number
/// for a float type, an integer for an integer type, a bool for bool.
template <class L, class T>
concept LiteralFor = std::is_arithmetic_v<L> &&
    (std::is_same_v<T, bool> ? std::is_same_v<L, bool>
                             : !std::is_same_v<L, bool> && (std::is_floating_point_v<T> || std::is_integral_v<L>));

/// Throws canopy::Error for an integer literal that an operand of kernel
/// type `type` cannot hold.
[[noreturn]] void fail_literal_range(const std::string& literal, ir::ScalarType type);

/// The expression of a literal of C++ type L as kernel type T. An integer
/// literal T cannot hold is refused: C++ would widen the other operand
/// (`x < 3000000000LL` compares as 64-bit), where the kernel's literal would
/// wrap. An unsigned literal within T's width (a mask such as 0xFFFFFFFFu
/// on i32) keeps its bits, as C++'s conversion does.
template <class T, class L>
ir::Expr literal_expr(L literal) {
  if constexpr (std::is_floating_point_v<T>) {
    return ir::make_const(ir::scalar_type_of<T>(), static_cast<double>(static_cast<T>(literal)));
  } else {
    if constexpr (std::is_integral_v<L> && !std::is_same_v<T, bool>) {
      if constexpr (std::is_signed_v<L>) {
        const long long value = literal;
        if (value < std::numeric_limits<T>::min() || value > std::numeric_limits<T>::max())
          fail_literal_range(std::to_string(value), ir::scalar_type_of<T>());
      } else {
        const unsigned long long value = literal;
        if (value > std::numeric_limits<std::make_unsigned_t<T>>::max())
          fail_literal_range(std::to_string(value), ir::scalar_type_of<T>());
      }
    }
    return ir::make_int(ir::scalar_type_of<T>(), static_cast<std::int64_t>(static_cast<T>(literal)));
  }
}

/// Throws canopy::Error for a Value that was never set (a For counter used
/// outside its loop, a default-constructed Value).
[[noreturn]] void fail_unset_value();

/// How deeply nested (If/For bodies) the statement being traced on this
/// thread is; -1 outside any kernel body.
int current_depth();
/// Throws canopy::Error when a Value made at `depth` is reassigned inside a
/// deeper If/For body: the C++ assignment would happen whatever the kernel's
/// condition, so a Var<T> must be used instead.
void check_reassignment(int depth);

}  // namespace dsl

/// A symbolic value of kernel type T.
template <class T>
class Value {
  static_assert(ir::is_kernel_scalar_v<T>, "kernel values are bool, int32_t, int64_t, float or double");

 public:
  using value_type = T;

  /// An unset value: For(k, ...) binds such a value to its counter.
  Value() : depth_(dsl::current_depth()) {}
  Value(const Value& other) : expr_(other.expr_), depth_(dsl::current_depth()) {}
  /// A literal.
  template <class L>
  requires dsl::LiteralFor<L, T> Value(L literal)
      : expr_(dsl::literal_expr<T>(literal)), depth_(dsl::current_depth()) {}
  /// Any symbolic value of the same type (a Var, an array element, a parameter).
  template <dsl::Symbolic X>
  requires(std::is_same_v<typename X::value_type, T> && !std::is_same_v<X, Value>) Value(const X& x)
      : expr_(x.value().expr()), depth_(dsl::current_depth()) {}
  /// Wraps an IR expression, which must have type T.
  explicit Value(ir::Expr expr) : expr_(std::move(expr)), depth_(dsl::current_depth()) {}

  /// Rebinds this C++ variable to another expression. Inside an If or For
  /// body this is refused for a Value made outside it (use Var<T>).
  Value& operator=(const Value& other) {
    dsl::check_reassignment(depth_);
    expr_ = other.expr_;
    return *this;
  }

  /// This value (every symbolic operand has value(), which the operators use).
  Value value() const { return *this; }
  /// The IR expression; throws canopy::Error when the value is unset.
  const ir::Expr& expr() const {
    if (!expr_) dsl::fail_unset_value();
    return expr_;
  }
  /// False for a default-constructed Value, or a For counter outside its loop.
  bool is_set() const { return expr_ != nullptr; }
  /// Used by For to bind its counter (or unbind it with null after the loop).
  void bind_counter(ir::Expr expr) { expr_ = std::move(expr); }

 protected:
  ir::Expr expr_;
  int depth_ = -1;
};

/// The position of the current point along dimension `dim` (0, 1 or 2) of
/// the kernel's index range. Dimension 0 is the outermost (rows).
using Idx = Value<std::int64_t>;
Idx index(int dim);

namespace dsl {

/// The kernel type two operands share; void when they cannot be combined.
template <class A, class B>
struct common_value {
  using type = void;
};
template <Symbolic A, Symbolic B>
requires std::is_same_v<typename A::value_type, typename B::value_type>
struct common_value<A, B> {
  using type = typename A::value_type;
};
template <Symbolic A, class B>
requires(!Symbolic<B> && LiteralFor<B, typename A::value_type>) struct common_value<A, B> {
  using type = typename A::value_type;
};
template <class A, Symbolic B>
requires(!Symbolic<A> && LiteralFor<A, typename B::value_type>) struct common_value<A, B> {
  using type = typename B::value_type;
};
template <class A, class B>
using common_value_t = typename common_value<A, B>::type;

/// True when `a op b` has a meaning for A and B.
template <class A, class B>
concept Operands = !std::is_void_v<common_value_t<A, B>>;

/// The kernel type of a symbolic operand among three, taken from the first
/// pair that has one (void when none is symbolic or two disagree).
template <class A, class B, class C>
using common_value3_t = std::conditional_t<
    !std::is_void_v<common_value_t<A, B>>, common_value_t<A, B>,
    std::conditional_t<!std::is_void_v<common_value_t<A, C>>, common_value_t<A, C>, common_value_t<B, C>>>;

/// True when a, b and c all have (or, as literals, adapt to) one kernel type.
template <class A, class B, class C, class T = common_value3_t<A, B, C>>
concept Operands3 = !std::is_void_v<T> && Operands<Value<T>, A> && Operands<Value<T>, B> && Operands<Value<T>, C>;

/// The expression of an operand as type T.
template <class T, class X>
ir::Expr expr_of(const X& x) {
  if constexpr (Symbolic<X>)
    return x.value().expr();
  else
    return literal_expr<T>(x);
}

template <class A, class B>
Value<common_value_t<A, B>> binary(ir::BinaryOp op, const A& a, const B& b) {
  using T = common_value_t<A, B>;
  return Value<T>(ir::make_binary(op, expr_of<T>(a), expr_of<T>(b)));
}

template <class A, class B>
Value<bool> compare(ir::CompareOp op, const A& a, const B& b) {
  using T = common_value_t<A, B>;
  return Value<bool>(ir::make_compare(op, expr_of<T>(a), expr_of<T>(b)));
}

template <class T>
concept Numeric = std::is_arithmetic_v<T> && !std::is_same_v<T, bool>;
template <class T>
concept Integer = std::is_same_v<T, std::int32_t> || std::is_same_v<T, std::int64_t>;
template <class T>
concept Bitwise = Integer<T> || std::is_same_v<T, bool>;

}  // namespace dsl

// ---- operators -----------------------------------------------------------

/// The arithmetic (+ - * / %: numbers), bitwise (& | ^: integers and bools)
/// and shift (<< >>: integers) operators on kernel values, either side a
/// symbolic value or a C++ literal of the other's type; they build the
/// kernel's expression, with the IR's semantics (docs/ir-semantics.md:
/// integers wrap, x / 0 == 0, x % 0 == 0, shifts by the amount modulo the
/// width, % on floats is C's fmod).
#define CANOPY_DSL_BINARY(OPERATOR, OP, CONSTRAINT)                                                      \
  template <class A, class B>                                                                            \
  requires dsl::Operands<A, B> && CONSTRAINT<dsl::common_value_t<A, B>> Value<dsl::common_value_t<A, B>> \
  operator OPERATOR(const A& a, const B& b) { return dsl::binary(ir::BinaryOp::OP, a, b); }
CANOPY_DSL_BINARY(+, Add, dsl::Numeric)
CANOPY_DSL_BINARY(-, Sub, dsl::Numeric)
CANOPY_DSL_BINARY(*, Mul, dsl::Numeric)
CANOPY_DSL_BINARY(/, Div, dsl::Numeric)
CANOPY_DSL_BINARY(%, Rem, dsl::Numeric)
CANOPY_DSL_BINARY(&, And, dsl::Bitwise)
CANOPY_DSL_BINARY(|, Or, dsl::Bitwise)
CANOPY_DSL_BINARY(^, Xor, dsl::Bitwise)
CANOPY_DSL_BINARY(<<, Shl, dsl::Integer)
CANOPY_DSL_BINARY(>>, Shr, dsl::Integer)
#undef CANOPY_DSL_BINARY

/// Logical and/or of two bools. Both sides are always evaluated.
template <class A, class B>
requires dsl::Operands<A, B> && std::is_same_v < dsl::common_value_t<A, B>,
bool > Value<bool> operator&&(const A& a, const B& b) { return dsl::binary(ir::BinaryOp::And, a, b); }
template <class A, class B>
requires dsl::Operands<A, B> && std::is_same_v < dsl::common_value_t<A, B>,
bool > Value<bool> operator||(const A& a, const B& b) { return dsl::binary(ir::BinaryOp::Or, a, b); }

/// Comparisons of two kernel values (or one and a literal): a Value<bool>;
/// false when either side is NaN, except != (true).
#define CANOPY_DSL_COMPARE(OPERATOR, OP)   \
  template <class A, class B>              \
  requires dsl::Operands<A, B> Value<bool> \
  operator OPERATOR(const A& a, const B& b) { return dsl::compare(ir::CompareOp::OP, a, b); }
CANOPY_DSL_COMPARE(==, Eq)
CANOPY_DSL_COMPARE(!=, Ne)
CANOPY_DSL_COMPARE(<, Lt)
CANOPY_DSL_COMPARE(<=, Le)
CANOPY_DSL_COMPARE(>, Gt)
CANOPY_DSL_COMPARE(>=, Ge)
#undef CANOPY_DSL_COMPARE

/// Negation (numbers), logical not (bools) and bitwise complement (integers).
template <dsl::Symbolic X>
requires dsl::Numeric<typename X::value_type> Value<typename X::value_type>
operator-(const X& x) { return Value<typename X::value_type>(ir::make_unary(ir::UnaryOp::Neg, x.value().expr())); }
template <dsl::Symbolic X>
requires std::is_same_v<typename X::value_type, bool> Value<bool>
operator!(const X& x) { return Value<bool>(ir::make_unary(ir::UnaryOp::Not, x.value().expr())); }
template <dsl::Symbolic X>
requires dsl::Integer<typename X::value_type> Value<typename X::value_type>
operator~(const X& x) { return Value<typename X::value_type>(ir::make_unary(ir::UnaryOp::Not, x.value().expr())); }

// ---- conversions, selection, math ----------------------------------------

/// x converted to T (float to integer rounds toward zero and saturates).
template <class T, class X>
requires dsl::Symbolic<X> || std::is_arithmetic_v<X> Value<T> cast(const X& x) {
  if constexpr (dsl::Symbolic<X>)
    return Value<T>(ir::make_cast(ir::scalar_type_of<T>(), x.value().expr()));
  else
    return Value<T>(dsl::literal_expr<T>(x));
}

/// cond ? a : b, evaluating both.
template <class C, class A, class B>
requires dsl::Operands<C, bool> && std::is_same_v < dsl::common_value_t<C, bool>,
bool > &&dsl::Operands<A, B> Value<dsl::common_value_t<A, B>> select(const C& cond, const A& a, const B& b) {
  using T = dsl::common_value_t<A, B>;
  return Value<T>(ir::make_select(dsl::expr_of<bool>(cond), dsl::expr_of<T>(a), dsl::expr_of<T>(b)));
}
/// cond ? a : b for two C++ literals of one kernel type (`select(x > 0, 0.5, -0.5)` is a Value<double>).
template <class C, class L>
requires dsl::Operands<C, bool> && std::is_same_v < dsl::common_value_t<C, bool>,
bool > &&ir::is_kernel_scalar_v<L> Value<L> select(const C& cond, L a, L b) {
  return Value<L>(ir::make_select(dsl::expr_of<bool>(cond), dsl::literal_expr<L>(a), dsl::literal_expr<L>(b)));
}

/// sqrt, exp, log, sin, cos, floor and fabs of a float value (within the
/// ulp bounds of docs/ir-semantics.md on every backend), and abs of any
/// number (abs of the smallest integer is itself, as it wraps).
#define CANOPY_DSL_MATH1(NAME, FN, CONSTRAINT)                                                 \
  template <dsl::Symbolic X>                                                                   \
  requires CONSTRAINT<typename X::value_type> Value<typename X::value_type> NAME(const X& x) { \
    return Value<typename X::value_type>(ir::make_call(ir::MathFn::FN, {x.value().expr()}));   \
  }
CANOPY_DSL_MATH1(sqrt, Sqrt, std::floating_point)
CANOPY_DSL_MATH1(exp, Exp, std::floating_point)
CANOPY_DSL_MATH1(log, Log, std::floating_point)
CANOPY_DSL_MATH1(sin, Sin, std::floating_point)
CANOPY_DSL_MATH1(cos, Cos, std::floating_point)
CANOPY_DSL_MATH1(floor, Floor, std::floating_point)
CANOPY_DSL_MATH1(fabs, Abs, std::floating_point)
CANOPY_DSL_MATH1(abs, Abs, dsl::Numeric)
#undef CANOPY_DSL_MATH1

/// x raised to the power y (floats).
template <class A, class B>
requires dsl::Operands<A, B> && std::floating_point<dsl::common_value_t<A, B>> Value<dsl::common_value_t<A, B>> pow(
    const A& x, const B& y) {
  using T = dsl::common_value_t<A, B>;
  return Value<T>(ir::make_call(ir::MathFn::Pow, {dsl::expr_of<T>(x), dsl::expr_of<T>(y)}));
}

/// a * b + c with one rounding (C's fma): the same bits on every backend,
/// and one instruction where the hardware has it. Floats only.
template <class A, class B, class C>
requires dsl::Operands3<A, B, C> && std::floating_point<dsl::common_value3_t<A, B, C>>
    Value<dsl::common_value3_t<A, B, C>> fma(const A& a, const B& b, const C& c) {
  using T = dsl::common_value3_t<A, B, C>;
  return Value<T>(ir::make_call(ir::MathFn::Fma, {dsl::expr_of<T>(a), dsl::expr_of<T>(b), dsl::expr_of<T>(c)}));
}

/// The smaller / larger operand; for floats a NaN operand is ignored (C's fmin / fmax).
template <class A, class B>
requires dsl::Operands<A, B> && dsl::Numeric<dsl::common_value_t<A, B>> Value<dsl::common_value_t<A, B>> min(
    const A& a, const B& b) {
  return dsl::binary(ir::BinaryOp::Min, a, b);
}
template <class A, class B>
requires dsl::Operands<A, B> && dsl::Numeric<dsl::common_value_t<A, B>> Value<dsl::common_value_t<A, B>> max(
    const A& a, const B& b) {
  return dsl::binary(ir::BinaryOp::Max, a, b);
}
template <class A, class B>
requires dsl::Operands<A, B> && std::floating_point<dsl::common_value_t<A, B>> Value<dsl::common_value_t<A, B>> fmin(
    const A& a, const B& b) {
  return dsl::binary(ir::BinaryOp::Min, a, b);
}
template <class A, class B>
requires dsl::Operands<A, B> && std::floating_point<dsl::common_value_t<A, B>> Value<dsl::common_value_t<A, B>> fmax(
    const A& a, const B& b) {
  return dsl::binary(ir::BinaryOp::Max, a, b);
}

}  // namespace canopy
