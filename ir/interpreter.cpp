// The reference interpreter (interpreter.hpp): docs/ir-semantics.md written
// as a tree walk. The first half computes single values (integers that wrap,
// conversions, and floats with the tolerance model: how far a conforming
// backend may be from the value computed here, and when a decision rounding
// could change makes a value `unsure`); the second half walks a kernel point
// by point with those values. It shares no code with the passes or the code
// generators on purpose: it is what they are checked against.
//
// Compiled with -ffp-contract=off (ir/CMakeLists.txt): a * b + c must round
// twice here, as the semantics say, whatever the host's FMA.
#include "interpreter.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "error.hpp"
#include "printer.hpp"
#include "verifier.hpp"

namespace canopy::ir {

namespace {

// ---- the float formats -----------------------------------------------------

int mantissa_digits(ScalarType type) { return type == ScalarType::F32 ? 24 : 53; }

double largest_finite(ScalarType type) {
  return type == ScalarType::F32 ? std::numeric_limits<float>::max() : std::numeric_limits<double>::max();
}

double smallest_normal(ScalarType type) {
  return type == ScalarType::F32 ? std::numeric_limits<float>::min() : std::numeric_limits<double>::min();
}

double smallest_denormal(ScalarType type) {
  return type == ScalarType::F32 ? std::numeric_limits<float>::denorm_min() : std::numeric_limits<double>::denorm_min();
}

// u of the semantics: 2^-24 for f32, 2^-53 for f64.
double unit_roundoff(ScalarType type) { return std::ldexp(1.0, -mantissa_digits(type)); }

// `x` rounded once, to nearest even, to the float type.
double round_to(ScalarType type, long double x) {
  if (type == ScalarType::F32) return static_cast<double>(static_cast<float>(x));
  return static_cast<double>(x);
}

// `operation` on a and b computed in the float type itself (f32 in float, f64
// in double): the one IEEE rounding every backend does.
template <class Operation>
double computed_in(ScalarType type, Operation operation, double a, double b) {
  if (type == ScalarType::F32) return static_cast<double>(operation(static_cast<float>(a), static_cast<float>(b)));
  return static_cast<double>(operation(a, b));
}

// ---- values ----------------------------------------------------------------

RefValue unsure_value(ScalarType type) {
  RefValue value;
  value.type = type;
  value.unsure = true;
  return value;
}

RefValue exact_float(ScalarType type, double value) {
  RefValue result;
  result.type = type;
  result.f = value;
  return result;
}

RefValue integer(ScalarType type, std::int64_t value) {
  RefValue result;
  result.type = type;
  result.i = value;
  return result;
}

// False for a bool other than 0 or 1, an i32 outside its range, an f32 that
// is not a float.
bool is_value_of_its_type(const RefValue& value) {
  switch (value.type) {
    case ScalarType::Bool: return value.i == 0 || value.i == 1;
    case ScalarType::I32: return value.i == static_cast<std::int32_t>(value.i);
    case ScalarType::F32: return std::isnan(value.f) || static_cast<double>(static_cast<float>(value.f)) == value.f;
    case ScalarType::I64:
    case ScalarType::F64: return true;
  }
  return false;
}

// A float result `value` that conforming backends give within `tolerance`;
// unsure when a backend within it could overflow.
RefValue float_within(ScalarType type, double value, double tolerance) {
  if (tolerance > 0 && !std::isfinite(value)) return unsure_value(type);
  if (std::isfinite(value) && std::fabs(value) + tolerance > largest_finite(type)) return unsure_value(type);
  RefValue result = exact_float(type, value);
  result.tolerance = tolerance;
  return result;
}

// The interval a conforming backend's value of `x` lies in.
long double lower(const RefValue& x) { return static_cast<long double>(x.f) - x.tolerance; }
long double upper(const RefValue& x) { return static_cast<long double>(x.f) + x.tolerance; }
bool inexact(const RefValue& x) { return x.tolerance > 0; }

// ---- integers: two's complement, wrapping ------------------------------------

int bit_width(ScalarType type) { return type == ScalarType::I32 ? 32 : 64; }

// `bits` modulo 2^width, as the type's value (i32 values live sign-extended).
std::int64_t wrapped(ScalarType type, std::uint64_t bits) {
  if (type == ScalarType::I32) return static_cast<std::int32_t>(static_cast<std::uint32_t>(bits));
  return static_cast<std::int64_t>(bits);
}

std::int64_t integer_binary(BinaryOp op, ScalarType type, std::int64_t a, std::int64_t b) {
  const auto ua = static_cast<std::uint64_t>(a);
  const auto ub = static_cast<std::uint64_t>(b);
  const auto shift = static_cast<int>(ub & static_cast<std::uint64_t>(bit_width(type) - 1));
  switch (op) {
    case BinaryOp::Add: return wrapped(type, ua + ub);
    case BinaryOp::Sub: return wrapped(type, ua - ub);
    case BinaryOp::Mul: return wrapped(type, ua * ub);
    case BinaryOp::Div:
      if (b == 0) return 0;
      if (b == -1) return wrapped(type, 0 - ua);  // INT_MIN / -1 wraps to INT_MIN
      return a / b;                               // truncates toward zero
    case BinaryOp::Rem:
      if (b == 0 || b == -1) return 0;
      return a % b;  // the sign of the dividend
    case BinaryOp::Min: return std::min(a, b);
    case BinaryOp::Max: return std::max(a, b);
    case BinaryOp::And: return a & b;
    case BinaryOp::Or: return a | b;
    case BinaryOp::Xor: return a ^ b;
    case BinaryOp::Shl: return wrapped(type, ua << shift);
    case BinaryOp::Shr: return a >> shift;  // arithmetic; a sign-extended i32 shifts as the i32 would
  }
  return 0;
}

// The IR's float-to-integer conversion: toward zero, saturating, NaN to 0.
std::int64_t truncated_saturated(ScalarType to, long double x) {
  if (std::isnan(x)) return 0;
  const long double lowest = -std::ldexp(1.0L, bit_width(to) - 1);  // a power of two: exact
  if (x <= lowest) return static_cast<std::int64_t>(lowest);
  if (x >= -lowest)
    return to == ScalarType::I32 ? std::numeric_limits<std::int32_t>::max() : std::numeric_limits<std::int64_t>::max();
  return static_cast<std::int64_t>(x);
}

// ---- floats: the tolerance model ---------------------------------------------
//
// An operation's inputs are intervals [x - tx, x + tx]. With exact inputs an
// operation that rounds correctly on every backend is exact; one with ulps of
// freedom (f32 division and sqrt, exp, log, sin, cos, pow) gets those ulps.
// With inexact inputs the result's tolerance is how far the exact operation
// moves over the box of its inputs, plus the ulps, plus one ulp for a backend
// rounding to the other side. Poles, domain edges and overflow within the box
// make the result unsure.

using ExactFunction = long double (*)(long double, long double);

// How the tolerance model sees one float operation (unary ones ignore their
// second argument).
struct FloatOp {
  ExactFunction exact;  // the mathematical result, computed in long double
  double ulps;          // how far from it a conforming backend may round (0: correctly rounded)
  bool monotone;        // its extremes over a box lie at the corners; else 1-Lipschitz (sin, cos)
};

// The result of an operation with ulps of freedom on exact operands.
RefValue from_exact_operands(ScalarType type, double value, long double exact, double ulps, bool operands_finite) {
  // Correctly rounded, a domain error (NaN everywhere), or IEEE's rules for
  // infinities and NaN operands: every backend gives these same bits.
  if (ulps == 0 || std::isnan(value) || !operands_finite) return exact_float(type, value);
  const long double largest = largest_finite(type);
  if (std::fabs(exact) > largest) {
    // A pole, or an overflow far enough past the largest float that a result
    // within the ulps overflows too; nearer, a backend may stay finite.
    if (std::fabs(exact) > largest * (1 + std::ldexp(1.0L, -10))) return exact_float(type, value);
    return unsure_value(type);
  }
  return float_within(type, value, ulps * ulp_of(type, value));
}

// The largest distance of op.exact over the corners of the box of a and b
// from its value at the centre; infinity when a corner is not finite (an
// overflow, or a corner outside the function's domain).
long double corner_spread(ExactFunction exact, const RefValue& a, const RefValue& b) {
  const long double infinity = std::numeric_limits<long double>::infinity();
  const long double centre = exact(a.f, b.f);
  if (!std::isfinite(centre)) return infinity;
  long double spread = 0;
  for (const long double x : {lower(a), upper(a)}) {
    for (const long double y : {lower(b), upper(b)}) {
      const long double corner = exact(x, y);
      if (!std::isfinite(corner)) return infinity;
      spread = std::max(spread, std::fabs(corner - centre));
    }
  }
  return spread;
}

// `value` (what this reference computes) of operation `op` on a and b.
RefValue float_operation(ScalarType type, double value, const FloatOp& op, const RefValue& a, const RefValue& b) {
  if (!inexact(a) && !inexact(b))
    return from_exact_operands(type, value, op.exact(a.f, b.f), op.ulps, std::isfinite(a.f) && std::isfinite(b.f));
  if (!std::isfinite(value)) return unsure_value(type);
  const long double spread = op.monotone ? corner_spread(op.exact, a, b) : a.tolerance;
  if (!std::isfinite(spread)) return unsure_value(type);
  const double reach = std::fabs(value) + static_cast<double>(spread);
  return float_within(type, value, static_cast<double>(spread) + (op.ulps + 1) * ulp_of(type, reach));
}

RefValue float_arithmetic(BinaryOp op, const RefValue& a, const RefValue& b) {
  const ScalarType type = a.type;
  switch (op) {
    case BinaryOp::Add:
      return float_operation(type, computed_in(type, std::plus<>{}, a.f, b.f),
                             {[](long double x, long double y) { return x + y; }, 0, true}, a, b);
    case BinaryOp::Sub:
      return float_operation(type, computed_in(type, std::minus<>{}, a.f, b.f),
                             {[](long double x, long double y) { return x - y; }, 0, true}, a, b);
    case BinaryOp::Mul:
      return float_operation(type, computed_in(type, std::multiplies<>{}, a.f, b.f),
                             {[](long double x, long double y) { return x * y; }, 0, true}, a, b);
    default: break;
  }
  // Division: monotone in each operand unless the denominator's interval holds its pole.
  if ((inexact(a) || inexact(b)) && lower(b) <= 0 && upper(b) >= 0) return unsure_value(type);
  return float_operation(type, computed_in(type, std::divides<>{}, a.f, b.f),
                         {[](long double x, long double y) { return x / y; }, division_ulps_allowed(type), true}, a, b);
}

// fmod: exact on every backend; with inexact operands the quotient's integer
// part must not change over the box (else the result jumps by a whole b).
RefValue float_remainder(const RefValue& a, const RefValue& b) {
  const ScalarType type = a.type;
  const double value = std::fmod(a.f, b.f);  // exact, so computing it in double is computing it in float
  if (!inexact(a) && !inexact(b)) return exact_float(type, value);
  if (!std::isfinite(a.f) || !std::isfinite(b.f) || !std::isfinite(value)) return unsure_value(type);
  if (lower(b) <= 0 && upper(b) >= 0) return unsure_value(type);
  const long double quotient = std::trunc(static_cast<long double>(a.f) / b.f);
  for (const long double x : {lower(a), upper(a)})
    for (const long double y : {lower(b), upper(b)})
      if (std::trunc(x / y) != quotient) return unsure_value(type);
  const double spread = a.tolerance + std::fabs(static_cast<double>(quotient)) * b.tolerance;
  return float_within(type, value, spread + ulp_of(type, std::fabs(value) + spread));
}

// fmin/fmax: a NaN operand is ignored; the result moves no more than the
// operand that moves most. min(-0, +0) may be either zero: a tolerance of the
// smallest denormal says so (and makes a division by it unsure).
RefValue float_min_max(BinaryOp op, const RefValue& a, const RefValue& b) {
  if (std::isnan(a.f)) return b;
  if (std::isnan(b.f)) return a;
  const double value = op == BinaryOp::Min ? std::fmin(a.f, b.f) : std::fmax(a.f, b.f);
  double tolerance = std::max(a.tolerance, b.tolerance);
  if (a.f == 0 && b.f == 0 && std::signbit(a.f) != std::signbit(b.f))
    tolerance = std::max(tolerance, smallest_denormal(a.type));
  return float_within(a.type, value, tolerance);
}

// floor is exact on every backend; an interval that holds a step is unsure.
RefValue float_floor(const RefValue& x) {
  const double value = std::floor(x.f);
  if (inexact(x) && std::floor(lower(x)) != std::floor(upper(x))) return unsure_value(x.type);
  return exact_float(x.type, value);
}

// pow by C's Annex F. An infinite base is handled here: glibc's powl gives
// inf for (-inf)^(-2^63), where the answer is +0 (-2^63 is an even integer).
long double annex_f_pow(long double x, long double y) {
  if (std::isinf(x) && !std::isnan(y) && y != 0) {
    const bool odd_integer = std::fmod(std::fabs(y), 2.0L) == 1.0L;
    const long double magnitude = y < 0 ? 0.0L : std::numeric_limits<long double>::infinity();
    return x < 0 && odd_integer ? -magnitude : magnitude;
  }
  return std::pow(x, y);
}

// The math functions with ulps of freedom, as the tolerance model sees them.
FloatOp float_op_of(MathFn fn, ScalarType type) {
  // std::sqrt and friends on long double arguments are sqrtl, expl, ...
  switch (fn) {
    case MathFn::Sqrt: return {[](long double x, long double) { return std::sqrt(x); }, ulps_allowed(fn, type), true};
    case MathFn::Exp: return {[](long double x, long double) { return std::exp(x); }, ulps_allowed(fn, type), true};
    case MathFn::Log: return {[](long double x, long double) { return std::log(x); }, ulps_allowed(fn, type), true};
    case MathFn::Sin: return {[](long double x, long double) { return std::sin(x); }, ulps_allowed(fn, type), false};
    case MathFn::Cos: return {[](long double x, long double) { return std::cos(x); }, ulps_allowed(fn, type), false};
    case MathFn::Pow:
      // For x > 0, pow(x, y) = exp(y * log x) is monotone in y * log x, which
      // is bilinear in (y, log x): extremes at the corners.
      return {[](long double x, long double y) { return annex_f_pow(x, y); }, ulps_allowed(fn, type), true};
    default: break;
  }
  return {[](long double x, long double) { return x; }, 0, true};
}

// The square root in the type of `x`, correctly rounded (IEEE's sqrt).
struct {
  template <class Float>
  Float operator()(Float x, Float) const {
    return std::sqrt(x);
  }
} constexpr square_root;

// sqrt, exp, log, sin, cos and pow of floats. `y` is pow's exponent (an
// exact zero for the others).
RefValue float_math(MathFn fn, const RefValue& x, const RefValue& y) {
  const ScalarType type = x.type;
  const FloatOp op = float_op_of(fn, type);
  // pow of a base whose interval reaches zero or below changes sign or jumps.
  if (fn == MathFn::Pow && (inexact(x) || inexact(y)) && lower(x) <= 0) return unsure_value(type);
  // sqrt is correctly rounded in its own type (sqrtf, sqrt); the others are
  // the long double result rounded once.
  const double value =
      fn == MathFn::Sqrt ? computed_in(type, square_root, x.f, 0.0) : round_to(type, op.exact(x.f, y.f));
  return float_operation(type, value, op, x, y);
}

// fma(a, b, c): rounded once on every backend, so exact on exact operands.
// Over a box, a * b is bilinear (its extremes are at the corners of a and b)
// and c adds its own tolerance.
RefValue float_fused_multiply_add(const RefValue& a, const RefValue& b, const RefValue& c) {
  const ScalarType type = a.type;
  const double value =
      type == ScalarType::F32
          ? static_cast<double>(std::fma(static_cast<float>(a.f), static_cast<float>(b.f), static_cast<float>(c.f)))
          : std::fma(a.f, b.f, c.f);
  if (!inexact(a) && !inexact(b) && !inexact(c)) return exact_float(type, value);
  if (!std::isfinite(value)) return unsure_value(type);
  const auto product = [](long double x, long double y) { return x * y; };
  const long double spread = corner_spread(product, a, b) + c.tolerance;
  if (!std::isfinite(spread)) return unsure_value(type);
  const double reach = std::fabs(value) + static_cast<double>(spread);
  return float_within(type, value, static_cast<double>(spread) + ulp_of(type, reach));
}

template <class Number>
bool compare_exactly(CompareOp op, Number a, Number b) {
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

RefValue decided(bool always, bool never) {
  if (always) return RefValue::boolean(true);
  if (never) return RefValue::boolean(false);
  return unsure_value(ScalarType::Bool);
}

// A comparison of inexact floats is decided only when it holds, or fails, for
// every pair of values in the operands' intervals.
RefValue compare_floats(CompareOp op, const RefValue& a, const RefValue& b) {
  if ((!inexact(a) && !inexact(b)) || std::isnan(a.f) || std::isnan(b.f))
    return RefValue::boolean(compare_exactly(op, a.f, b.f));
  const long double a_lo = lower(a), a_hi = upper(a), b_lo = lower(b), b_hi = upper(b);
  const bool apart = a_hi < b_lo || b_hi < a_lo;
  switch (op) {
    case CompareOp::Eq: return decided(false, apart);
    case CompareOp::Ne: return decided(apart, false);
    case CompareOp::Lt: return decided(a_hi < b_lo, a_lo >= b_hi);
    case CompareOp::Le: return decided(a_hi <= b_lo, a_lo > b_hi);
    case CompareOp::Gt: return decided(a_lo > b_hi, a_hi <= b_lo);
    case CompareOp::Ge: return decided(a_lo >= b_hi, a_hi < b_lo);
  }
  return unsure_value(ScalarType::Bool);
}

// ---- operators on values of any type -------------------------------------------

RefValue apply_unary(UnaryOp op, const RefValue& x) {
  if (x.unsure) return unsure_value(x.type);
  if (op == UnaryOp::Not) return integer(x.type, x.type == ScalarType::Bool ? !x.i : ~x.i);
  if (is_int(x.type)) return integer(x.type, wrapped(x.type, 0 - static_cast<std::uint64_t>(x.i)));
  RefValue negated = x;  // no rounding: the interval just flips
  negated.f = -x.f;
  return negated;
}

RefValue apply_binary(BinaryOp op, const RefValue& a, const RefValue& b) {
  if (a.unsure || b.unsure) return unsure_value(a.type);
  // bool has only &, | and ^, which on 0 and 1 are the logical operators.
  if (!is_float(a.type)) return integer(a.type, integer_binary(op, a.type, a.i, b.i));
  switch (op) {
    case BinaryOp::Rem: return float_remainder(a, b);
    case BinaryOp::Min:
    case BinaryOp::Max: return float_min_max(op, a, b);
    default: return float_arithmetic(op, a, b);
  }
}

RefValue apply_compare(CompareOp op, const RefValue& a, const RefValue& b) {
  if (a.unsure || b.unsure) return unsure_value(ScalarType::Bool);
  if (is_float(a.type)) return compare_floats(op, a, b);
  return RefValue::boolean(compare_exactly(op, a.i, b.i));  // bool and integers
}

RefValue float_to_bool(const RefValue& x) {
  if (inexact(x) && lower(x) <= 0 && upper(x) >= 0) return unsure_value(ScalarType::Bool);
  return RefValue::boolean(x.f != 0);  // NaN converts to true
}

RefValue float_to_integer(ScalarType to, const RefValue& x) {
  const std::int64_t value = truncated_saturated(to, x.f);
  if (inexact(x) && (truncated_saturated(to, lower(x)) != value || truncated_saturated(to, upper(x)) != value))
    return unsure_value(to);
  return integer(to, value);
}

// f64 to f32: one correct rounding (an overflow gives infinity everywhere).
RefValue narrowed_to_f32(const RefValue& x) {
  const double value = static_cast<float>(x.f);
  if (!inexact(x)) return exact_float(ScalarType::F32, value);
  if (!std::isfinite(value)) return unsure_value(ScalarType::F32);
  return float_within(ScalarType::F32, value, x.tolerance + ulp_of(ScalarType::F32, std::fabs(value) + x.tolerance));
}

RefValue apply_cast(ScalarType to, const RefValue& x) {
  if (x.unsure) return unsure_value(to);
  const ScalarType from = x.type;
  if (from == to) return x;
  if (to == ScalarType::Bool) return is_float(from) ? float_to_bool(x) : RefValue::boolean(x.i != 0);
  if (is_int(to))
    return is_float(from) ? float_to_integer(to, x) : integer(to, wrapped(to, static_cast<std::uint64_t>(x.i)));
  if (!is_float(from)) {
    // Integer to float: rounded to nearest even (a single conversion instruction does that).
    const double value =
        to == ScalarType::F32 ? static_cast<double>(static_cast<float>(x.i)) : static_cast<double>(x.i);
    return exact_float(to, value);
  }
  if (to == ScalarType::F64) {
    RefValue widened = x;  // every float is a double: nothing changes
    widened.type = to;
    return widened;
  }
  return narrowed_to_f32(x);
}

RefValue apply_abs(const RefValue& x) {
  if (is_int(x.type)) return integer(x.type, x.i < 0 ? wrapped(x.type, 0 - static_cast<std::uint64_t>(x.i)) : x.i);
  RefValue magnitude = x;  // fabs is exact, and no farther from the centre than x
  magnitude.f = std::fabs(x.f);
  return magnitude;
}

RefValue apply_call(MathFn fn, const std::vector<RefValue>& args) {
  const ScalarType type = args[0].type;
  for (const RefValue& arg : args)
    if (arg.unsure) return unsure_value(type);
  switch (fn) {
    case MathFn::Abs: return apply_abs(args[0]);
    case MathFn::Floor: return float_floor(args[0]);
    case MathFn::Pow: return float_math(fn, args[0], args[1]);
    case MathFn::Fma: return float_fused_multiply_add(args[0], args[1], args[2]);
    default: return float_math(fn, args[0], exact_float(type, 0));
  }
}

// ---- sums in an order a backend chooses ------------------------------------------

// A float Sum reduction's contributions, or the atomic adds into one element
// during one run, onto a start value (the identity 0, or the element before
// its first add). A backend may add them in any order and grouping: each
// partial sum is within u * S of the exact one, so the result is within
// N * u * S of the exact sum, S the sum of the magnitudes.
class FloatSum {
 public:
  explicit FloatSum(RefValue start)
      : start_(start), total_(start.f), tolerance_(start.tolerance), unsure_(start.unsure) {
    if (std::isfinite(start.f)) finite_magnitude_ = std::fabs(static_cast<long double>(start.f));
  }

  void add(const RefValue& term) {
    if (count_ == 0) first_term_ = term;
    ++count_;
    unsure_ = unsure_ || term.unsure;
    total_ += term.f;
    tolerance_ += term.tolerance;
    if (std::isfinite(term.f)) finite_magnitude_ += std::fabs(static_cast<long double>(term.f));
  }

  RefValue result() const {
    const ScalarType type = start_.type;
    if (unsure_) return unsure_value(type);
    if (count_ == 0) return start_;
    if (count_ == 1) return apply_binary(BinaryOp::Add, start_, first_term_);  // one addition: no order to choose
    const long double roundoff =
        count_ * static_cast<long double>(unit_roundoff(type)) * (finite_magnitude_ + tolerance_);
    // Some order's partial sum could overflow.
    if (finite_magnitude_ + tolerance_ + roundoff > largest_finite(type)) return unsure_value(type);
    const double value = round_to(type, total_);
    if (!std::isfinite(total_)) return exact_float(type, value);  // infinities and NaN decide it in any order
    const double spread = tolerance_ + static_cast<double>(roundoff);
    return float_within(type, value, spread + ulp_of(type, std::fabs(value) + spread));
  }

 private:
  RefValue start_;
  RefValue first_term_;
  std::int64_t count_ = 0;
  long double total_ = 0;             // start + every term
  long double finite_magnitude_ = 0;  // |start| + every |term|, of the finite ones
  double tolerance_ = 0;              // start's and every term's
  bool unsure_ = false;
};

// ---- the walk --------------------------------------------------------------------

// Whether a point goes on after a statement, or stops because a decision that
// rounding could change steered its control flow or the index of a write.
enum class Flow { Next, Abandoned };

// Every array parameter that a Store or AtomicAdd in `s` writes.
void collect_written_arrays(const Stmt& s, std::set<int>& written) {
  if (!s) return;
  switch (s->kind) {
    case StmtKind::Block:
      for (const Stmt& child : s->as<Block>().stmts) collect_written_arrays(child, written);
      return;
    case StmtKind::Store: written.insert(s->as<Store>().param); return;
    case StmtKind::AtomicAdd: written.insert(s->as<AtomicAdd>().param); return;
    case StmtKind::If:
      collect_written_arrays(s->as<If>().then_body, written);
      collect_written_arrays(s->as<If>().else_body, written);
      return;
    case StmtKind::For: collect_written_arrays(s->as<For>().body, written); return;
    default: return;
  }
}

// A reduction parameter's running result.
struct Reduction {
  int param;
  RefValue running;             // Min, Max and integer Sum
  std::optional<FloatSum> sum;  // float Sum
};

RefValue identity_value(ReduceOp op, ScalarType type) {
  const bool largest = op == ReduceOp::Min;
  if (op == ReduceOp::Sum) return is_float(type) ? exact_float(type, 0) : integer(type, 0);
  if (is_float(type))
    return exact_float(type,
                       largest ? std::numeric_limits<double>::infinity() : -std::numeric_limits<double>::infinity());
  if (type == ScalarType::I32)
    return integer(type, largest ? std::numeric_limits<std::int32_t>::max() : std::numeric_limits<std::int32_t>::min());
  return integer(type, largest ? std::numeric_limits<std::int64_t>::max() : std::numeric_limits<std::int64_t>::min());
}

// "a, b, c" (written out: fmt::join trips a false GCC 12 warning at -O3).
template <class Item>
std::string joined(const std::vector<Item>& items) {
  std::string text;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i > 0) text += ", ";
    text += fmt::format("{}", items[i]);
  }
  return text;
}

class Interpreter {
 public:
  Interpreter(const Kernel& kernel, const std::vector<std::int64_t>& range, std::vector<RefArgument>& args)
      : kernel_(kernel), range_(range), args_(args) {}

  RefOutcome run() {
    verify(kernel_);
    check_range();
    check_arguments();
    start_reductions();
    for_each_point([&] { run_point(); });
    return finish();
  }

 private:
  // ---- arguments

  [[noreturn]] void fail(const std::string& problem) const {
    throw Error(fmt::format("kernel '{}': {}", kernel_.name, problem));
  }

  void check_range() const {
    if (range_.size() != static_cast<std::size_t>(kernel_.dims))
      fail(fmt::format("the kernel has dims {} but the range has {} extents; give one extent per dimension",
                       kernel_.dims, range_.size()));
    for (std::int64_t extent : range_)
      if (extent < 0) fail(fmt::format("the range [{}] has a negative extent", joined(range_)));
  }

  void check_arguments() const {
    if (args_.size() != kernel_.params.size())
      fail(fmt::format("the kernel has {} parameters but {} arguments were given; pass one per parameter",
                       kernel_.params.size(), args_.size()));
    for (std::size_t p = 0; p < args_.size(); ++p) check_argument(kernel_.params[p], args_[p]);
  }

  void check_argument(const Param& param, const RefArgument& arg) const {
    switch (param.kind) {
      case ParamKind::Array: return check_array(param, arg);
      case ParamKind::Scalar:
        if (!std::holds_alternative<RefValue>(arg))
          fail(fmt::format("scalar '{}' needs a RefValue of {}", param.name, name_of(param.type)));
        return check_value(std::get<RefValue>(arg), param.type, fmt::format("scalar '{}'", param.name));
      case ParamKind::Reduction:
        if (!std::holds_alternative<RefReduction>(arg))
          fail(fmt::format("reduction '{}' needs RefReduction{{}}; its result comes back in RefOutcome", param.name));
        return;
    }
  }

  void check_array(const Param& param, const RefArgument& arg) const {
    if (!std::holds_alternative<RefArray*>(arg) || !std::get<RefArray*>(arg))
      fail(fmt::format("array '{}' needs a RefArray* (not null)", param.name));
    const RefArray& array = *std::get<RefArray*>(arg);
    if (array.type != param.type)
      fail(fmt::format("array '{}' is {} but its RefArray holds {}", param.name, name_of(param.type),
                       name_of(array.type)));
    if (array.extents.size() != static_cast<std::size_t>(param.rank))
      fail(fmt::format("array '{}' has rank {} but its RefArray has {} extents", param.name, param.rank,
                       array.extents.size()));
    for (std::int64_t extent : array.extents)
      if (extent < 0) fail(fmt::format("array '{}' has a negative extent in [{}]", param.name, joined(array.extents)));
    if (static_cast<std::int64_t>(array.elements.size()) != array.size())
      fail(fmt::format("array '{}' has extents [{}] ({} elements) but its RefArray holds {} elements", param.name,
                       joined(array.extents), array.size(), array.elements.size()));
    for (std::size_t e = 0; e < array.elements.size(); ++e)
      check_value(array.elements[e], param.type, fmt::format("element {} of array '{}'", e, param.name));
  }

  // A value a backend could hold: of `type`, and within the type's range.
  void check_value(const RefValue& value, ScalarType type, const std::string& what) const {
    if (value.type != type) fail(fmt::format("{} is {} but must be {}", what, name_of(value.type), name_of(type)));
    if (!is_value_of_its_type(value))
      fail(fmt::format("{} holds {}, which is not a {} value", what, describe(value), name_of(type)));
  }

  RefArray& array(int param) { return *std::get<RefArray*>(args_[static_cast<std::size_t>(param)]); }

  // ---- points, in row-major order

  template <class Body>
  void for_each_point(Body body) {
    for (std::int64_t extent : range_)
      if (extent == 0) return;
    point_.fill(0);
    do body();
    while (advance_point());
  }

  // The next point, the last dimension fastest; false after the last one.
  bool advance_point() {
    for (int dim = kernel_.dims - 1; dim >= 0; --dim) {
      const auto d = static_cast<std::size_t>(dim);
      if (++point_[d] < range_[d]) return true;
      point_[d] = 0;
    }
    return false;
  }

  void run_point() {
    locals_.clear();  // each point starts with fresh locals
    if (exec(kernel_.body) == Flow::Abandoned) ++unsure_points_;
  }

  // ---- reductions and the end of the run

  void start_reductions() {
    for (std::size_t p = 0; p < kernel_.params.size(); ++p) {
      const Param& param = kernel_.params[p];
      if (!param.is_reduction()) continue;
      Reduction reduction{static_cast<int>(p), identity_value(param.reduce, param.type), std::nullopt};
      if (param.reduce == ReduceOp::Sum && is_float(param.type)) reduction.sum.emplace(reduction.running);
      reductions_.push_back(std::move(reduction));
    }
  }

  void reduce(int param, const RefValue& value) {
    for (Reduction& reduction : reductions_) {
      if (reduction.param != param) continue;
      const ReduceOp op = kernel_.params[static_cast<std::size_t>(param)].reduce;
      if (reduction.sum) {
        reduction.sum->add(value);
      } else {
        const BinaryOp combine = op == ReduceOp::Sum   ? BinaryOp::Add
                                 : op == ReduceOp::Min ? BinaryOp::Min
                                                       : BinaryOp::Max;
        reduction.running = apply_binary(combine, reduction.running, value);
      }
    }
  }

  RefOutcome finish() {
    RefOutcome outcome;
    outcome.unsure_points = unsure_points_;
    for (const Reduction& reduction : reductions_)
      outcome.reductions.push_back(reduction.sum ? reduction.sum->result() : reduction.running);
    if (unsure_points_ == 0) return outcome;
    // A point stopped at a decision rounding could change: what its other
    // path writes is unknown, so nothing the kernel writes can be checked.
    std::set<int> written;
    collect_written_arrays(kernel_.body, written);
    for (int param : written)
      for (RefValue& element : array(param).elements) element = unsure_value(element.type);
    for (RefValue& result : outcome.reductions) result = unsure_value(result.type);
    return outcome;
  }

  // ---- statements

  // `s` in its own scope: the locals it declares end with it.
  Flow exec_scoped(const Stmt& s) {
    const std::size_t depth = locals_.size();
    const Flow flow = exec(s);
    locals_.resize(depth);
    return flow;
  }

  Flow exec(const Stmt& s) {
    switch (s->kind) {
      case StmtKind::Block: return exec_block(s->as<Block>());
      case StmtKind::Decl: locals_.emplace_back(s->as<Decl>().name, eval(s->as<Decl>().init)); return Flow::Next;
      case StmtKind::Assign: {
        RefValue value = eval(s->as<Assign>().value);
        local(s->as<Assign>().name) = value;
        return Flow::Next;
      }
      case StmtKind::Store: return exec_store(s);
      case StmtKind::AtomicAdd: return exec_atomic_add(s);
      case StmtKind::Reduce: reduce(s->as<Reduce>().param, eval(s->as<Reduce>().value)); return Flow::Next;
      case StmtKind::If: return exec_if(s->as<If>());
      case StmtKind::For: return exec_for(s->as<For>());
    }
    return Flow::Next;
  }

  Flow exec_block(const Block& block) {
    const std::size_t depth = locals_.size();
    Flow flow = Flow::Next;
    for (const Stmt& s : block.stmts)
      if ((flow = exec(s)) == Flow::Abandoned) break;
    locals_.resize(depth);
    return flow;
  }

  Flow exec_if(const If& node) {
    const RefValue cond = eval(node.cond);
    if (cond.unsure) return Flow::Abandoned;
    if (cond.i) return exec_scoped(node.then_body);
    if (node.else_body) return exec_scoped(node.else_body);
    return Flow::Next;
  }

  // var takes begin, begin + step, ... while below end (both evaluated once),
  // and stops where the next value would overflow the type.
  Flow exec_for(const For& loop) {
    const RefValue begin = eval(loop.begin);
    const RefValue end = eval(loop.end);
    if (begin.unsure || end.unsure) return Flow::Abandoned;
    const ScalarType type = begin.type;
    const std::int64_t step = loop.step->as<Const>().int_value;  // a positive literal (verified)
    const std::int64_t last =
        type == ScalarType::I32 ? std::numeric_limits<std::int32_t>::max() : std::numeric_limits<std::int64_t>::max();
    for (std::int64_t v = begin.i; v < end.i; v += step) {
      locals_.emplace_back(loop.var, integer(type, v));
      const Flow flow = exec_scoped(loop.body);
      locals_.pop_back();
      if (flow == Flow::Abandoned) return flow;
      if (v > last - step) break;
    }
    return Flow::Next;
  }

  Flow exec_store(const Stmt& s) {
    const auto& node = s->as<Store>();
    const std::vector<RefValue> indices = eval_all(node.indices);
    const RefValue value = eval(node.value);
    const std::optional<std::int64_t> element = element_at(node.param, indices, s);
    if (!element) return Flow::Abandoned;
    atomic_sums_.erase({node.param, *element});  // a store ends the adds before it
    array(node.param).elements[static_cast<std::size_t>(*element)] = value;
    return Flow::Next;
  }

  Flow exec_atomic_add(const Stmt& s) {
    const auto& node = s->as<AtomicAdd>();
    const std::vector<RefValue> indices = eval_all(node.indices);
    const RefValue value = eval(node.value);
    const std::optional<std::int64_t> element = element_at(node.param, indices, s);
    if (!element) return Flow::Abandoned;
    RefValue& target = array(node.param).elements[static_cast<std::size_t>(*element)];
    if (!is_float(target.type)) {
      target = apply_binary(BinaryOp::Add, target, value);  // wraps
      return Flow::Next;
    }
    // Float adds into one element may land in any order: the element is the
    // sum of everything added this run, with the tolerance of any order.
    FloatSum& sum = atomic_sums_.try_emplace({node.param, *element}, target).first->second;
    sum.add(value);
    target = sum.result();
    return Flow::Next;
  }

  // ---- elements

  // The access `at` (a Load, Store or AtomicAdd) in text form, for messages.
  std::string text_of(const Expr& at) const { return print(at, kernel_); }
  std::string text_of(const Stmt& at) const {
    const std::string text = print(at, kernel_, 0);
    return text.substr(0, text.find('\n'));
  }

  // The position among `param`'s elements of the element at `indices`, or
  // nothing when an unsure index leaves it open. An index outside its extent
  // is an error (`at` is the access, for the message).
  template <class Node>
  std::optional<std::int64_t> element_at(int param, const std::vector<RefValue>& indices, const Node& at) {
    const RefArray& target = array(param);
    bool any_unsure = false;
    std::int64_t position = 0;
    for (std::size_t dim = 0; dim < indices.size(); ++dim) {
      if (indices[dim].unsure) {
        any_unsure = true;
        continue;
      }
      const std::int64_t index = indices[dim].i, extent = target.extents[dim];
      if (index < 0 || index >= extent) fail_out_of_bounds(param, indices, dim, text_of(at));
      position = position * extent + index;
    }
    if (any_unsure) return std::nullopt;
    return position;
  }

  [[noreturn]] void fail_out_of_bounds(int param, const std::vector<RefValue>& indices, std::size_t dim,
                                       const std::string& at) {
    std::vector<std::string> shown;
    for (const RefValue& index : indices) shown.push_back(describe(index));
    const std::vector<std::int64_t> point(point_.begin(), point_.begin() + kernel_.dims);
    fail(fmt::format(
        "index {} of dimension {} is outside array '{}' of extents [{}] (element [{}], at point ({})) in `{}`; "
        "keep every index within [0, extent)",
        indices[dim].i, dim, kernel_.params[static_cast<std::size_t>(param)].name, joined(array(param).extents),
        joined(shown), joined(point), at));
  }

  // ---- expressions

  RefValue& local(const std::string& name) {
    for (auto it = locals_.rbegin(); it != locals_.rend(); ++it)
      if (it->first == name) return it->second;
    fail(fmt::format("variable '{}' is read before it is declared", name));  // the verifier rules this out
  }

  std::vector<RefValue> eval_all(const std::vector<Expr>& exprs) {
    std::vector<RefValue> values;
    for (const Expr& e : exprs) values.push_back(eval(e));
    return values;
  }

  RefValue eval(const Expr& e) {
    switch (e->kind) {
      case ExprKind::Const: return literal(e->as<Const>());
      case ExprKind::Index: return RefValue::i64(point_[static_cast<std::size_t>(e->as<Index>().dim)]);
      case ExprKind::Param: return std::get<RefValue>(args_[static_cast<std::size_t>(e->as<ParamRef>().param)]);
      case ExprKind::Var: return local(e->as<VarRef>().name);
      case ExprKind::Extent: {
        const auto& node = e->as<Extent>();
        return RefValue::i64(array(node.param).extents[static_cast<std::size_t>(node.dim)]);
      }
      case ExprKind::Load: return load(e);
      case ExprKind::Unary: return apply_unary(e->as<Unary>().op, eval(e->as<Unary>().operand));
      case ExprKind::Binary: return binary(e->as<Binary>());
      case ExprKind::Compare: {
        const auto& node = e->as<Compare>();
        const RefValue lhs = eval(node.lhs);
        return apply_compare(node.op, lhs, eval(node.rhs));
      }
      case ExprKind::Cast: return apply_cast(e->type, eval(e->as<Cast>().operand));
      case ExprKind::Call: return apply_call(e->as<Call>().fn, eval_all(e->as<Call>().args));
      case ExprKind::Select: return select(e->as<Select>());
    }
    return unsure_value(e->type);
  }

  static RefValue literal(const Const& node) {
    return is_float(node.type) ? exact_float(node.type, node.float_value) : integer(node.type, node.int_value);
  }

  RefValue binary(const Binary& node) {
    const RefValue lhs = eval(node.lhs);
    return apply_binary(node.op, lhs, eval(node.rhs));
  }

  // Both sides are evaluated (a fault on either is a fault).
  RefValue select(const Select& node) {
    const RefValue cond = eval(node.cond);
    const RefValue if_true = eval(node.if_true);
    const RefValue if_false = eval(node.if_false);
    if (cond.unsure) return unsure_value(node.type);
    return cond.i ? if_true : if_false;
  }

  RefValue load(const Expr& e) {
    const auto& node = e->as<Load>();
    const std::optional<std::int64_t> element = element_at(node.param, eval_all(node.indices), e);
    if (!element) return unsure_value(node.type);
    return array(node.param).elements[static_cast<std::size_t>(*element)];
  }

  const Kernel& kernel_;
  const std::vector<std::int64_t>& range_;
  std::vector<RefArgument>& args_;
  std::array<std::int64_t, 3> point_{};
  std::vector<std::pair<std::string, RefValue>> locals_;  // innermost last
  std::vector<Reduction> reductions_;
  std::map<std::pair<int, std::int64_t>, FloatSum> atomic_sums_;  // (array, element): this run's float adds
  std::int64_t unsure_points_ = 0;
};

}  // namespace

// ---- the public API ------------------------------------------------------------

RefValue RefValue::boolean(bool value) { return integer(ScalarType::Bool, value ? 1 : 0); }
RefValue RefValue::i32(std::int32_t value) { return integer(ScalarType::I32, value); }
RefValue RefValue::i64(std::int64_t value) { return integer(ScalarType::I64, value); }
RefValue RefValue::f32(float value) { return exact_float(ScalarType::F32, value); }
RefValue RefValue::f64(double value) { return exact_float(ScalarType::F64, value); }

RefValue RefValue::of(ScalarType type, double value) {
  switch (type) {
    case ScalarType::Bool: return boolean(value != 0);
    case ScalarType::I32:
    case ScalarType::I64: return integer(type, truncated_saturated(type, value));
    case ScalarType::F32: return f32(static_cast<float>(value));
    case ScalarType::F64: return f64(value);
  }
  return f64(value);
}

double RefValue::as_double() const { return is_float(type) ? f : static_cast<double>(i); }

std::string describe(const RefValue& value) {
  if (value.unsure) return "unsure";
  switch (value.type) {
    case ScalarType::Bool: return value.i ? "true" : "false";
    case ScalarType::I32:
    case ScalarType::I64: return fmt::format("{}", value.i);
    case ScalarType::F32:
    case ScalarType::F64: break;
  }
  const std::string number =
      value.type == ScalarType::F32 ? fmt::format("{}", static_cast<float>(value.f)) : fmt::format("{}", value.f);
  if (value.tolerance == 0) return number;
  return fmt::format("{} (+-{:.2g})", number, value.tolerance);
}

RefArray RefArray::zeros(ScalarType type, std::vector<std::int64_t> extents) {
  RefArray array;
  array.type = type;
  array.extents = std::move(extents);
  array.elements.assign(static_cast<std::size_t>(std::max<std::int64_t>(array.size(), 0)), RefValue::of(type, 0));
  return array;
}

std::int64_t RefArray::size() const {
  std::int64_t count = 1;
  for (std::int64_t extent : extents) count *= extent;
  return count;
}

RefOutcome interpret(const Kernel& kernel, const std::vector<std::int64_t>& range, std::vector<RefArgument>& args) {
  return Interpreter(kernel, range, args).run();
}

double ulps_allowed(MathFn fn, ScalarType type) {
  if (!is_float(type)) return 0;
  switch (fn) {
    case MathFn::Sqrt: return type == ScalarType::F32 ? 3 : 0;
    case MathFn::Exp:
    case MathFn::Log: return 3;
    case MathFn::Sin:
    case MathFn::Cos: return 4;
    case MathFn::Pow: return 16;
    case MathFn::Floor:
    case MathFn::Abs:
    case MathFn::Fma: return 0;
  }
  return 0;
}

double division_ulps_allowed(ScalarType type) { return type == ScalarType::F32 ? 3 : 0; }

double ulp_of(ScalarType type, double x) {
  if (!is_float(type)) return 0;
  if (!std::isfinite(x)) return std::numeric_limits<double>::infinity();
  const double magnitude = std::fabs(x);
  if (magnitude < smallest_normal(type)) return smallest_denormal(type);
  int exponent = 0;
  std::frexp(magnitude, &exponent);  // magnitude = m * 2^exponent, m in [0.5, 1)
  return std::ldexp(1.0, exponent - mantissa_digits(type));
}

bool conforms(const RefValue& expected, const RefValue& got) {
  if (expected.unsure) return true;
  if (got.type != expected.type) return false;
  if (!is_float(expected.type)) return got.i == expected.i;
  if (std::isnan(expected.f)) return std::isnan(got.f);
  if (std::isinf(expected.f)) return got.f == expected.f;
  if (!std::isfinite(got.f)) return false;
  const long double distance = std::fabs(static_cast<long double>(got.f) - expected.f);
  return distance <= static_cast<long double>(expected.tolerance) + smallest_normal(expected.type);
}

}  // namespace canopy::ir
