// The reference interpreter (ir/interpreter.hpp): every rule of
// docs/ir-semantics.md on hand-computed values, the tolerance it carries
// through float operations, the decisions it marks unsure (and the points they
// steer), reductions and atomic adds in any order, the order of points, and
// the errors it raises for out-of-bounds accesses and mismatched arguments.
// Expected values come from first principles (IEEE arithmetic in C++, powers
// of two written out), never from the interpreter's own helpers.
#include <doctest/doctest.h>
#include <canopy/ir/error.hpp>
#include <canopy/ir/interpreter.hpp>
#include <canopy/ir/parser.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <numbers>
#include <string>
#include <vector>

using namespace canopy::ir;

namespace {

constexpr auto F64 = ScalarType::F64;
constexpr auto F32 = ScalarType::F32;
constexpr auto I32 = ScalarType::I32;
constexpr auto I64 = ScalarType::I64;

constexpr std::int32_t kInt32Min = std::numeric_limits<std::int32_t>::min();
constexpr std::int32_t kInt32Max = std::numeric_limits<std::int32_t>::max();
constexpr std::int64_t kInt64Min = std::numeric_limits<std::int64_t>::min();
constexpr std::int64_t kInt64Max = std::numeric_limits<std::int64_t>::max();
const double kInf = std::numeric_limits<double>::infinity();

double two_to(int exponent) { return std::ldexp(1.0, exponent); }

// What the interpreter gives `expr` (text form, of IR type `type`): the value
// one point stores into an out array.
RefValue value_of(const std::string& type, const std::string& expr) {
  const Kernel kernel = parse("kernel k(out " + type + "[1] o) dims 1 {\n  o[0:i64] = " + expr + "\n}\n");
  RefArray out = RefArray::zeros(*scalar_type_named(type), {1});
  std::vector<RefArgument> args{&out};
  interpret(kernel, {1}, args);
  return out.elements[0];
}

// The message interpret() throws, or "" when it runs.
std::string error_of(const Kernel& kernel, const std::vector<std::int64_t>& range, std::vector<RefArgument> args) {
  try {
    interpret(kernel, range, args);
  } catch (const canopy::Error& error) {
    return error.what();
  }
  return "";
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

RefArray f32_array(std::vector<float> values) {
  RefArray array = RefArray::zeros(F32, {static_cast<std::int64_t>(values.size())});
  for (std::size_t i = 0; i < values.size(); ++i) array.elements[i] = RefValue::f32(values[i]);
  return array;
}

RefArray f64_array(std::vector<double> values) {
  RefArray array = RefArray::zeros(F64, {static_cast<std::int64_t>(values.size())});
  for (std::size_t i = 0; i < values.size(); ++i) array.elements[i] = RefValue::f64(values[i]);
  return array;
}

RefArray i32_array(std::vector<std::int32_t> values) {
  RefArray array = RefArray::zeros(I32, {static_cast<std::int64_t>(values.size())});
  for (std::size_t i = 0; i < values.size(); ++i) array.elements[i] = RefValue::i32(values[i]);
  return array;
}

// A value with the given tolerance (what a device computed, in conforms()).
RefValue f64_within(double value, double tolerance) {
  RefValue result = RefValue::f64(value);
  result.tolerance = tolerance;
  return result;
}

}  // namespace

// ---- integers ---------------------------------------------------------------------

TEST_CASE("interpreter: integer arithmetic wraps in the type's width") {
  CHECK(value_of("i32", "(2147483647:i32 + 1:i32)").i == kInt32Min);
  CHECK(value_of("i32", "(-2147483648:i32 - 1:i32)").i == kInt32Max);
  CHECK(value_of("i32", "(65536:i32 * 65536:i32)").i == 0);
  CHECK(value_of("i32", "(65537:i32 * 65537:i32)").i == 131073);  // 2^32 + 2 * 2^16 + 1, low 32 bits
  CHECK(value_of("i64", "(9223372036854775807:i64 + 1:i64)").i == kInt64Min);
  CHECK(value_of("i64", "(4294967296:i64 * 4294967296:i64)").i == 0);
  CHECK(value_of("i32", "neg(-2147483648:i32)").i == kInt32Min);
  CHECK(value_of("i64", "neg(-9223372036854775808:i64)").i == kInt64Min);
  CHECK(value_of("i32", "abs(-2147483648:i32)").i == kInt32Min);
  CHECK(value_of("i32", "abs(-5:i32)").i == 5);
  CHECK(value_of("i32", "min(-3:i32, 2:i32)").i == -3);
  CHECK(value_of("i64", "max(-3:i64, 2:i64)").i == 2);
}

TEST_CASE("interpreter: integer division and remainder never trap") {
  CHECK(value_of("i32", "(-2147483648:i32 / -1:i32)").i == kInt32Min);
  CHECK(value_of("i32", "(-2147483648:i32 % -1:i32)").i == 0);
  CHECK(value_of("i64", "(-9223372036854775808:i64 / -1:i64)").i == kInt64Min);
  CHECK(value_of("i64", "(-9223372036854775808:i64 % -1:i64)").i == 0);
  CHECK(value_of("i32", "(7:i32 / 0:i32)").i == 0);
  CHECK(value_of("i32", "(7:i32 % 0:i32)").i == 0);
  CHECK(value_of("i64", "(-7:i64 / 0:i64)").i == 0);
  CHECK(value_of("i64", "(-7:i64 % 0:i64)").i == 0);
  // Truncation toward zero; the remainder has the dividend's sign.
  CHECK(value_of("i32", "(-7:i32 / 2:i32)").i == -3);
  CHECK(value_of("i32", "(-7:i32 % 2:i32)").i == -1);
  CHECK(value_of("i32", "(7:i32 % -2:i32)").i == 1);
  CHECK(value_of("i32", "(9:i32 / -1:i32)").i == -9);
}

TEST_CASE("interpreter: shift amounts are taken modulo the width, >> is arithmetic") {
  CHECK(value_of("i32", "(1:i32 << 33:i32)").i == 2);
  CHECK(value_of("i32", "(1:i32 << 32:i32)").i == 1);
  CHECK(value_of("i32", "(1:i32 << -1:i32)").i == kInt32Min);  // -1 mod 32 == 31
  CHECK(value_of("i32", "(3:i32 << 31:i32)").i == kInt32Min);
  CHECK(value_of("i32", "(-16:i32 >> 2:i32)").i == -4);
  CHECK(value_of("i32", "(-1:i32 >> 40:i32)").i == -1);
  CHECK(value_of("i32", "(256:i32 >> 36:i32)").i == 16);
  CHECK(value_of("i64", "(1:i64 << 64:i64)").i == 1);
  CHECK(value_of("i64", "(1:i64 << 63:i64)").i == kInt64Min);
  CHECK(value_of("i64", "(-9223372036854775808:i64 >> 63:i64)").i == -1);
}

TEST_CASE("interpreter: bool is logical, integers bitwise") {
  CHECK(value_of("i32", "(12:i32 & 10:i32)").i == 8);
  CHECK(value_of("i32", "(12:i32 | 10:i32)").i == 14);
  CHECK(value_of("i32", "(12:i32 ^ 10:i32)").i == 6);
  CHECK(value_of("i32", "not(5:i32)").i == -6);
  CHECK(value_of("i64", "not(0:i64)").i == -1);
  CHECK(value_of("bool", "not(true)").i == 0);
  CHECK(value_of("bool", "(true ^ true)").i == 0);
  CHECK(value_of("bool", "(true & false)").i == 0);
  CHECK(value_of("bool", "(true | false)").i == 1);
  CHECK(value_of("bool", "(true == false)").i == 0);
  CHECK(value_of("bool", "(true != false)").i == 1);
  CHECK(value_of("bool", "(-1:i64 < 0:i64)").i == 1);
  CHECK(value_of("bool", "(-9223372036854775808:i64 < 9223372036854775807:i64)").i == 1);
  CHECK(value_of("bool", "(9223372036854775807:i64 == 9223372036854775806:i64)").i == 0);  // not via doubles
}

// ---- conversions ------------------------------------------------------------------

TEST_CASE("interpreter: integer and bool conversions") {
  CHECK(value_of("i32", "i32(4294967297:i64)").i == 1);
  CHECK(value_of("i32", "i32(2147483648:i64)").i == kInt32Min);
  CHECK(value_of("i64", "i64(-1:i32)").i == -1);
  CHECK(value_of("i32", "i32(true)").i == 1);
  CHECK(value_of("f64", "f64(true)").f == 1.0);
  CHECK(value_of("f32", "f32(false)").f == 0.0);
  CHECK(value_of("bool", "bool(0:i32)").i == 0);
  CHECK(value_of("bool", "bool(-5:i64)").i == 1);
  CHECK(value_of("bool", "bool(4294967296:i64)").i == 1);  // x != 0, not the low bits
}

TEST_CASE("interpreter: float to integer truncates, saturates, and takes NaN to 0") {
  CHECK(value_of("i32", "i32(3.9:f64)").i == 3);
  CHECK(value_of("i32", "i32(-3.9:f64)").i == -3);
  CHECK(value_of("i32", "i32(1e+10:f64)").i == kInt32Max);
  CHECK(value_of("i32", "i32(-1e+10:f64)").i == kInt32Min);
  CHECK(value_of("i32", "i32(nan:f64)").i == 0);
  CHECK(value_of("i32", "i32(inf:f64)").i == kInt32Max);
  CHECK(value_of("i32", "i32(-inf:f32)").i == kInt32Min);
  CHECK(value_of("i32", "i32(2147483520:f32)").i == 2147483520);  // the largest float below 2^31
  CHECK(value_of("i32", "i32(2147483648:f32)").i == kInt32Max);
  CHECK(value_of("i32", "i32(-2147483648:f32)").i == kInt32Min);
  CHECK(value_of("i64", "i64(1e+19:f64)").i == kInt64Max);
  CHECK(value_of("i64", "i64(-1e+19:f64)").i == kInt64Min);
  CHECK(value_of("i64", "i64(9.2e+18:f64)").i == 9200000000000000000);
  CHECK(value_of("i64", "i64(nan:f32)").i == 0);
}

TEST_CASE("interpreter: conversions to float round to nearest even, to bool compare with zero") {
  // 2^24 + 1 is a tie between 2^24 and 2^24 + 2: even is 2^24; 2^24 + 3 goes up.
  CHECK(value_of("f32", "f32(16777217:i64)").f == 16777216.0);
  CHECK(value_of("f32", "f32(16777219:i32)").f == 16777220.0);
  CHECK(value_of("f64", "f64(9007199254740993:i64)").f == 9007199254740992.0);
  CHECK(value_of("f64", "f64(9223372036854775807:i64)").f == two_to(63));
  CHECK(value_of("f32", "f32(0.1:f64)").f == static_cast<double>(0.1f));
  CHECK(value_of("f32", "f32(0.1:f64)").tolerance == 0);
  CHECK(value_of("f32", "f32(1e+39:f64)").f == kInf);  // beyond f32: infinity, on every backend
  CHECK_FALSE(value_of("f32", "f32(1e+39:f64)").unsure);
  CHECK(value_of("f32", "f32(1e-46:f64)").f == 0.0);  // below half the smallest denormal
  CHECK(value_of("f64", "f64(0.1:f32)").f == static_cast<double>(0.1f));
  CHECK(value_of("bool", "bool(nan:f64)").i == 1);
  CHECK(value_of("bool", "bool(-0:f64)").i == 0);
  CHECK(value_of("bool", "bool(0.5:f32)").i == 1);
  CHECK(value_of("bool", "bool(-inf:f64)").i == 1);
}

// ---- floats -------------------------------------------------------------------------

TEST_CASE("interpreter: min and max ignore NaN; signed zeros") {
  CHECK(value_of("f64", "min(nan:f64, 1:f64)").f == 1.0);
  CHECK(value_of("f64", "max(1:f64, nan:f64)").f == 1.0);
  CHECK(value_of("f32", "min(-2:f32, nan:f32)").f == -2.0);
  CHECK(std::isnan(value_of("f64", "min(nan:f64, nan:f64)").f));
  CHECK(value_of("f64", "min(-inf:f64, 3:f64)").f == -kInf);
  // min(-0, +0) may be either zero: the tolerance says so.
  const RefValue zero = value_of("f64", "min(-0:f64, 0:f64)");
  CHECK(zero.f == 0.0);
  CHECK(zero.tolerance == std::numeric_limits<double>::denorm_min());
  CHECK(value_of("f32", "max(0:f32, -0:f32)").tolerance == std::numeric_limits<float>::denorm_min());
  // ... so dividing by it is a decision rounding could change.
  CHECK(value_of("f64", "(1:f64 / min(-0:f64, 0:f64))").unsure);
  CHECK(value_of("f64", "(1:f64 / -0:f64)").f == -kInf);
  CHECK(value_of("f64", "(1:f64 / -0:f64)").tolerance == 0);
  CHECK_FALSE(std::signbit(value_of("f64", "(-0:f64 + 0:f64)").f));
  CHECK(std::signbit(value_of("f64", "(-0:f64 * 5:f64)").f));
}

TEST_CASE("interpreter: % on floats is fmod, exact") {
  CHECK(value_of("f64", "(5.5:f64 % 2:f64)").f == 1.5);
  CHECK(value_of("f64", "(-5.5:f64 % 2:f64)").f == -1.5);
  CHECK(value_of("f32", "(5.5:f32 % -2:f32)").f == 1.5);
  CHECK(value_of("f64", "(1:f64 % inf:f64)").f == 1.0);
  CHECK(std::isnan(value_of("f64", "(1:f64 % 0:f64)").f));
  CHECK(std::isnan(value_of("f64", "(inf:f64 % 1:f64)").f));
  CHECK(value_of("f64", "(1e+300:f64 % 3:f64)").tolerance == 0);
  CHECK(value_of("f64", "(0.3:f64 % 0.1:f64)").f == 0.3 - 2 * 0.1);  // fmod is exact: 0.3 - 2 * 0.1 exactly here
}

TEST_CASE("interpreter: IEEE infinities and NaN, comparisons with NaN") {
  CHECK(value_of("f64", "(1:f64 / 0:f64)").f == kInf);
  CHECK(value_of("f32", "(-1:f32 / 0:f32)").f == -kInf);
  CHECK_FALSE(value_of("f32", "(-1:f32 / 0:f32)").unsure);
  CHECK(std::isnan(value_of("f64", "(0:f64 / 0:f64)").f));
  CHECK(std::isnan(value_of("f64", "(inf:f64 - inf:f64)").f));
  CHECK(value_of("bool", "(nan:f64 == nan:f64)").i == 0);
  CHECK(value_of("bool", "(nan:f64 != nan:f64)").i == 1);
  CHECK(value_of("bool", "(nan:f32 < 1:f32)").i == 0);
  CHECK(value_of("bool", "(nan:f32 >= 1:f32)").i == 0);
  CHECK(value_of("bool", "(-0:f64 == 0:f64)").i == 1);
}

TEST_CASE("interpreter: f32 is computed in float, and never contracted into a fused multiply-add") {
  // In float, 2^24 + 1 rounds back to 2^24 each time; in double it would reach 2^24 + 2.
  CHECK(value_of("f32", "((16777216:f32 + 1:f32) + 1:f32)").f == 16777216.0);
  const float tenth = 0.1f, three = 3.0f;
  CHECK(value_of("f32", "(0.1:f32 * 3:f32)").f == static_cast<double>(tenth * three));
  // (1 + 2^-30) * (1 - 2^-30) = 1 - 2^-60 rounds to 1; a fused multiply-add would give -2^-60.
  const Kernel kernel = parse(
      "kernel unfused(out f64[1] o, val f64 a, val f64 b) dims 1 {\n"
      "  o[0:i64] = ((a * b) + -1:f64)\n"
      "}\n");
  RefArray out = RefArray::zeros(F64, {1});
  std::vector<RefArgument> args{&out, RefValue::f64(1 + two_to(-30)), RefValue::f64(1 - two_to(-30))};
  interpret(kernel, {1}, args);
  CHECK(out.elements[0].f == 0.0);
  CHECK(out.elements[0].tolerance == 0);
}

TEST_CASE("interpreter: math functions are the long double result rounded, within their ulps") {
  // f64: ulps of 2^-52 in [1, 2), 2^-51 in [2, 4), 2^-53 in [0.5, 1).
  CHECK(value_of("f64", "sqrt(2:f64)").f == std::numbers::sqrt2);
  CHECK(value_of("f64", "sqrt(2:f64)").tolerance == 0);  // correctly rounded on f64
  CHECK(value_of("f64", "exp(1:f64)").f == std::numbers::e);
  CHECK(value_of("f64", "exp(1:f64)").tolerance == 3 * two_to(-51));
  CHECK(value_of("f64", "log(10:f64)").f == std::numbers::ln10);
  CHECK(value_of("f64", "log(10:f64)").tolerance == 3 * two_to(-51));
  CHECK(value_of("f64", "sin(1:f64)").f == 0.8414709848078965);
  CHECK(value_of("f64", "sin(1:f64)").tolerance == 4 * two_to(-53));
  CHECK(value_of("f64", "cos(1:f64)").f == 0.5403023058681398);
  CHECK(value_of("f64", "cos(1:f64)").tolerance == 4 * two_to(-53));
  CHECK(value_of("f64", "pow(2:f64, 0.5:f64)").f == std::numbers::sqrt2);
  CHECK(value_of("f64", "pow(2:f64, 0.5:f64)").tolerance == 16 * two_to(-52));
  // f32: ulps of 2^-23 in [1, 2), 2^-22 in [2, 4), 2^-24 in [0.5, 1).
  CHECK(value_of("f32", "sqrt(2:f32)").f == static_cast<double>(std::numbers::sqrt2_v<float>));
  CHECK(value_of("f32", "sqrt(2:f32)").tolerance == 3 * two_to(-23));
  CHECK(value_of("f32", "exp(1:f32)").f == static_cast<double>(std::numbers::e_v<float>));
  CHECK(value_of("f32", "exp(1:f32)").tolerance == 3 * two_to(-22));
  CHECK(value_of("f32", "log(0.5:f32)").f == static_cast<double>(-std::numbers::ln2_v<float>));
  CHECK(value_of("f32", "log(0.5:f32)").tolerance == 3 * two_to(-24));
  CHECK(value_of("f32", "sin(0.5:f32)").f == static_cast<double>(0.47942555f));
  CHECK(value_of("f32", "cos(0.5:f32)").tolerance == 4 * two_to(-24));
  CHECK(value_of("f32", "pow(2:f32, 10:f32)").f == 1024.0);
  CHECK(value_of("f32", "pow(2:f32, 10:f32)").tolerance == 16 * two_to(10 - 23));
  // fma rounds once, on every backend: (1 + 2^-30)^2 - (1 + 2^-29) is
  // exactly 2^-60, where the product rounded first leaves 0 (f32: with 2^-12
  // and 2^-11, 2^-24).
  const std::string a64 = "1.000000000931322574615478515625:f64", c64 = "-1.00000000186264514923095703125:f64";
  CHECK(value_of("f64", "fma(" + a64 + ", " + a64 + ", " + c64 + ")").f == two_to(-60));
  CHECK(value_of("f64", "fma(" + a64 + ", " + a64 + ", " + c64 + ")").tolerance == 0);
  CHECK(value_of("f64", "((" + a64 + " * " + a64 + ") + " + c64 + ")").f == 0.0);
  CHECK(value_of("f32", "fma(1.000244140625:f32, 1.000244140625:f32, -1.00048828125:f32)").f == two_to(-24));
  CHECK(value_of("f32", "((1.000244140625:f32 * 1.000244140625:f32) + -1.00048828125:f32)").f == 0.0);
  // With an inexact operand: e within 3 ulps (2^-51 each) doubled is within
  // 6 * 2^-51, and 2e + 1 (in [4, 8)) adds a rounding of 2^-50.
  CHECK(value_of("f64", "fma(exp(1:f64), 2:f64, 1:f64)").f == 2 * std::numbers::e + 1);
  CHECK(value_of("f64", "fma(exp(1:f64), 2:f64, 1:f64)").tolerance == 6 * two_to(-51) + two_to(-50));
  CHECK(value_of("f64", "fma(2:f64, 3:f64, exp(1:f64))").tolerance ==
        3 * two_to(-51) + two_to(-49));  // 6 + e in [8, 16)
  // floor and abs are exact.
  CHECK(value_of("f64", "floor(-2.5:f64)").f == -3.0);
  CHECK(value_of("f32", "floor(2.5:f32)").f == 2.0);
  CHECK(std::signbit(value_of("f64", "floor(-0:f64)").f));
  CHECK(value_of("f64", "abs(-2.5:f64)").f == 2.5);
  CHECK_FALSE(std::signbit(value_of("f32", "abs(-0:f32)").f));
}

TEST_CASE("interpreter: math functions at their domain edges and overflow") {
  CHECK(std::isnan(value_of("f64", "sqrt(-1:f64)").f));
  CHECK_FALSE(value_of("f32", "sqrt(-1:f32)").unsure);
  CHECK(std::isnan(value_of("f32", "log(-1:f32)").f));
  CHECK(value_of("f64", "log(0:f64)").f == -kInf);
  CHECK(value_of("f64", "log(-0:f64)").f == -kInf);
  CHECK_FALSE(value_of("f64", "log(0:f64)").unsure);
  CHECK(value_of("f64", "pow(0:f64, -1:f64)").f == kInf);
  CHECK(std::isnan(value_of("f64", "pow(-2:f64, 0.5:f64)").f));
  CHECK(value_of("f64", "pow(-2:f64, 3:f64)").f == -8.0);
  CHECK(value_of("f64", "exp(-inf:f64)").f == 0.0);
  CHECK(value_of("f64", "exp(-inf:f64)").tolerance == 0);
  CHECK(value_of("f64", "exp(inf:f64)").f == kInf);
  CHECK(std::isnan(value_of("f64", "sin(inf:f64)").f));
  // ln(largest double) = 709.782712893384: exp(710) overflows everywhere,
  // exp(709.7828) is 1.00009 times the largest double (a backend within its
  // ulps may stay finite), exp(709.78) is finite.
  CHECK(value_of("f64", "exp(710:f64)").f == kInf);
  CHECK_FALSE(value_of("f64", "exp(710:f64)").unsure);
  CHECK(value_of("f64", "exp(709.7828:f64)").unsure);
  CHECK(std::isfinite(value_of("f64", "exp(709.78:f64)").f));
  CHECK_FALSE(value_of("f64", "exp(709.78:f64)").unsure);
  CHECK(value_of("f32", "exp(89:f32)").f == kInf);  // ln(largest float) = 88.72
  // f32 division within its 3 ulps of the largest float could overflow.
  CHECK(value_of("f32", "(3.4028235e+38:f32 / 1:f32)").unsure);
  // ... but a correctly rounded multiplication overflows the same everywhere.
  CHECK(value_of("f32", "(3.4028235e+38:f32 * 2:f32)").f == kInf);
  CHECK_FALSE(value_of("f32", "(3.4028235e+38:f32 * 2:f32)").unsure);
}

// ---- the tolerance model ------------------------------------------------------------

TEST_CASE("interpreter: tolerances carry through float operations") {
  // f32 division may be 3 ulps off; 1/3 is in [0.25, 0.5), where an ulp is 2^-25.
  const RefValue third = value_of("f32", "(1:f32 / 3:f32)");
  CHECK(third.f == static_cast<double>(1.0f / 3.0f));
  CHECK(third.tolerance == 3 * two_to(-25));
  // Times 3: the interval [x - t, x + t] moves by 3t = 9 * 2^-25, plus one ulp
  // of the result (1, ulp 2^-23 = 4 * 2^-25) for rounding to the other side.
  const RefValue one = value_of("f32", "((1:f32 / 3:f32) * 3:f32)");
  CHECK(one.f == 1.0);
  CHECK(one.tolerance == 13 * two_to(-25));
  // Plus 1: t, plus an ulp in [1, 2).
  CHECK(value_of("f32", "((1:f32 / 3:f32) + 1:f32)").tolerance == 7 * two_to(-25));
  // neg and abs do not round: the tolerance stays.
  CHECK(value_of("f32", "neg((1:f32 / 3:f32))").tolerance == 3 * two_to(-25));
  CHECK(value_of("f32", "abs(neg((1:f32 / 3:f32)))").f == static_cast<double>(1.0f / 3.0f));
  // f64 to f32 adds the f32 ulp (e in [2, 4): 2^-22) to exp's 3 f64 ulps.
  CHECK(value_of("f32", "f32(exp(1:f64))").tolerance == 3 * two_to(-51) + two_to(-22));
  // fmod by an exact 1 with quotient 0 keeps x's tolerance, plus an ulp.
  CHECK(value_of("f32", "((1:f32 / 3:f32) % 1:f32)").tolerance == 4 * two_to(-25));
  // Comparisons that hold over the whole interval are sure.
  CHECK(value_of("bool", "((1:f32 / 3:f32) < 0.5:f32)").i == 1);
  CHECK(value_of("bool", "((1:f32 / 3:f32) == 0.5:f32)").i == 0);
  CHECK(value_of("bool", "((1:f32 / 3:f32) != 0.5:f32)").i == 1);
  CHECK_FALSE(value_of("bool", "((1:f32 / 3:f32) > 0.3:f32)").unsure);
  CHECK(value_of("i32", "i32((1:f32 / 3:f32))").i == 0);
  CHECK(value_of("f32", "floor((1:f32 / 3:f32))").tolerance == 0);
  CHECK(value_of("bool", "bool((1:f32 / 3:f32))").i == 1);
}

TEST_CASE("interpreter: decisions that rounding could change are unsure") {
  // Two equal values, each 3 ulps loose: == could go either way.
  CHECK(value_of("bool", "((1:f32 / 3:f32) == (1:f32 / 3:f32))").unsure);
  CHECK(value_of("bool", "((1:f32 / 3:f32) < 0.33333334:f32)").unsure);
  // 1 +- 13 * 2^-25 straddles the step of floor and of a conversion to an integer.
  CHECK(value_of("i32", "i32(((1:f32 / 3:f32) * 3:f32))").unsure);
  CHECK(value_of("f32", "floor(((1:f32 / 3:f32) * 3:f32))").unsure);
  CHECK(value_of("f32", "(((1:f32 / 3:f32) * 3:f32) % 1:f32)").unsure);
  // 0 +- a few ulps: converting to bool, dividing by it.
  CHECK(value_of("bool", "bool(((1:f32 / 3:f32) - 0.33333334:f32))").unsure);
  CHECK(value_of("f32", "(1:f32 / ((1:f32 / 3:f32) - 0.33333334:f32))").unsure);
  CHECK(value_of("f32", "sqrt(((1:f32 / 3:f32) - 0.33333334:f32))").unsure);
  CHECK(value_of("f32", "log(((1:f32 / 3:f32) - 0.33333334:f32))").unsure);
  // Whatever depends on an unsure value is unsure; select on an unsure condition too.
  CHECK(value_of("i32", "(i32(((1:f32 / 3:f32) * 3:f32)) + 1:i32)").unsure);
  CHECK(value_of("f64", "select(((1:f32 / 3:f32) == 0.33333334:f32), 1:f64, 2:f64)").unsure);
  CHECK(value_of("f64", "select(((1:f32 / 3:f32) < 0.5:f32), 1:f64, 2:f64)").f == 1.0);
}

TEST_CASE("interpreter: an unsure decision steering an If makes every written array and reduction unsure") {
  const Kernel kernel = parse(
      "kernel steer(out i32[1] o, out f32[1] p, in f32[1] a, sum i32 total) dims 1 {\n"
      "  p[index(0)] = a[index(0)]\n"
      "  reduce total <- 1:i32\n"
      "  if (index(0) >= 2:i64) {\n"
      "    if ((1:f32 / 3:f32) == (1:f32 / 3:f32)) {\n"
      "      o[index(0)] = 1:i32\n"
      "    }\n"
      "  }\n"
      "}\n");
  RefArray o = RefArray::zeros(I32, {4});
  RefArray p = RefArray::zeros(F32, {4});
  RefArray a = f32_array({1, 2, 3, 4});
  std::vector<RefArgument> args{&o, &p, &a, RefReduction{}};
  const RefOutcome outcome = interpret(kernel, {4}, args);
  CHECK(outcome.unsure_points == 2);  // points 2 and 3
  for (const RefValue& element : o.elements) CHECK(element.unsure);
  for (const RefValue& element : p.elements) CHECK(element.unsure);
  for (const RefValue& element : a.elements) CHECK_FALSE(element.unsure);  // only read
  REQUIRE(outcome.reductions.size() == 1);
  CHECK(outcome.reductions[0].unsure);
}

TEST_CASE("interpreter: an unsure index makes a load unsure and steers a store") {
  const std::string unsure_index = "i64(((1:f32 / 3:f32) * 3:f32))";
  const Kernel gather =
      parse("kernel gather(out f32[1] o, in f32[1] a) dims 1 {\n  o[index(0)] = a[" + unsure_index + "]\n}\n");
  RefArray o = RefArray::zeros(F32, {2});
  RefArray a = f32_array({1, 2});
  std::vector<RefArgument> args{&o, &a};
  CHECK(interpret(gather, {2}, args).unsure_points == 0);
  CHECK(o.elements[0].unsure);
  CHECK(o.elements[1].unsure);

  const Kernel scatter = parse(
      "kernel scatter(out f32[1] o, out f32[1] q, in f32[1] a) dims 1 {\n  q[index(0)] = "
      "a[index(0)]\n  o[" +
      unsure_index + "] = a[index(0)]\n}\n");
  RefArray fresh = RefArray::zeros(F32, {2});
  RefArray q = RefArray::zeros(F32, {2});
  std::vector<RefArgument> scatter_args{&fresh, &q, &a};
  CHECK(interpret(scatter, {2}, scatter_args).unsure_points == 2);
  CHECK(fresh.elements[0].unsure);
  CHECK(q.elements[1].unsure);
}

// ---- control flow and the order of points --------------------------------------------

TEST_CASE("interpreter: if, else if, else") {
  const Kernel kernel = parse(
      "kernel classify(out i32[1] o) dims 1 {\n"
      "  if (index(0) < 2:i64) {\n"
      "    o[index(0)] = 10:i32\n"
      "  } else {\n"
      "    if (index(0) < 4:i64) {\n"
      "      o[index(0)] = 20:i32\n"
      "    } else {\n"
      "      o[index(0)] = 30:i32\n"
      "    }\n"
      "  }\n"
      "}\n");
  RefArray o = RefArray::zeros(I32, {6});
  std::vector<RefArgument> args{&o};
  interpret(kernel, {6}, args);
  const std::vector<std::int64_t> expected{10, 10, 20, 20, 30, 30};
  for (std::size_t i = 0; i < expected.size(); ++i) CHECK(o.elements[i].i == expected[i]);
}

TEST_CASE("interpreter: for loops with a data-dependent trip count, a step, and no overflow") {
  const Kernel triangle = parse(
      "kernel triangle(out i64[1] o, in i32[1] n) dims 1 {\n"
      "  var s: i64 = 0:i64\n"
      "  for j in 0:i32 .. n[index(0)] {\n"
      "    s = (s + i64(j))\n"
      "  }\n"
      "  o[index(0)] = s\n"
      "}\n");
  RefArray o = RefArray::zeros(I64, {4});
  RefArray n = i32_array({0, 3, -2, 5});
  std::vector<RefArgument> args{&o, &n};
  interpret(triangle, {4}, args);
  CHECK(o.elements[0].i == 0);
  CHECK(o.elements[1].i == 0 + 1 + 2);
  CHECK(o.elements[2].i == 0);
  CHECK(o.elements[3].i == 0 + 1 + 2 + 3 + 4);

  const Kernel steps = parse(
      "kernel steps(out i32[1] o) dims 1 {\n"
      "  var count: i32 = 0:i32\n"
      "  for v in 0:i32 .. 10:i32 step 3:i32 {\n"
      "    count = (count + 1:i32)\n"
      "  }\n"
      "  o[0:i64] = count\n"
      "  var near: i32 = 0:i32\n"
      "  for w in 2147483640:i32 .. 2147483647:i32 step 5:i32 {\n"
      "    near = (near + 1:i32)\n"
      "  }\n"
      "  o[1:i64] = near\n"
      "  var wide: i32 = 0:i32\n"
      "  for y in 9223372036854775800:i64 .. 9223372036854775807:i64 step 5:i64 {\n"
      "    wide = (wide + 1:i32)\n"
      "  }\n"
      "  o[3:i64] = wide\n"
      "  var m: i32 = 3:i32\n"
      "  var trips: i32 = 0:i32\n"
      "  for x in 0:i32 .. m {\n"
      "    m = (m + 1:i32)\n"
      "    trips = (trips + 1:i32)\n"
      "  }\n"
      "  o[2:i64] = trips\n"
      "}\n");
  RefArray counts = RefArray::zeros(I32, {4});
  std::vector<RefArgument> step_args{&counts};
  interpret(steps, {1}, step_args);
  CHECK(counts.elements[0].i == 4);  // 0, 3, 6, 9
  CHECK(counts.elements[1].i == 2);  // 2147483640, 2147483645; the next would wrap
  CHECK(counts.elements[2].i == 3);  // the end is read once, at loop entry
  CHECK(counts.elements[3].i == 2);  // the same at the top of i64
}

TEST_CASE("interpreter: points run in row-major order over 2-D and 3-D ranges") {
  // Every point bumps one counter and records it: the order the points ran in.
  const Kernel order = parse(
      "kernel order(inout i32[1] c, out i32[2] o) dims 2 {\n"
      "  c[0:i64] = (c[0:i64] + 1:i32)\n"
      "  o[index(0), index(1)] = c[0:i64]\n"
      "}\n");
  RefArray c = RefArray::zeros(I32, {1});
  RefArray o = RefArray::zeros(I32, {2, 3});
  std::vector<RefArgument> args{&c, &o};
  interpret(order, {2, 3}, args);
  for (std::int64_t k = 0; k < 6; ++k) CHECK(o.elements[static_cast<std::size_t>(k)].i == k + 1);

  const Kernel cube = parse(
      "kernel cube(out i64[3] o, out i64[1] last) dims 3 {\n"
      "  var code: i64 = (((index(0) * 100:i64) + (index(1) * 10:i64)) + index(2))\n"
      "  o[index(0), index(1), index(2)] = code\n"
      "  last[0:i64] = (code + (1000:i64 * extent(o, 2)))\n"
      "}\n");
  RefArray grid = RefArray::zeros(I64, {2, 3, 4});
  RefArray last = RefArray::zeros(I64, {1});
  std::vector<RefArgument> cube_args{&grid, &last};
  interpret(cube, {2, 3, 4}, cube_args);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k)
        CHECK(grid.elements[static_cast<std::size_t>((i * 3 + j) * 4 + k)].i == i * 100 + j * 10 + k);
  CHECK(last.elements[0].i == 4123);  // the last point is (1, 2, 3)

  // A zero extent means no points.
  RefArray untouched = RefArray::zeros(I64, {2, 3, 4});
  std::vector<RefArgument> empty_args{&untouched, &last};
  CHECK(interpret(cube, {2, 0, 4}, empty_args).unsure_points == 0);
  CHECK(last.elements[0].i == 4123);
}

TEST_CASE("interpreter: select picks a side but evaluates both; scalars are read") {
  const Kernel kernel = parse(
      "kernel pick(out f64[1] o, in f64[1] a, val f64 s) dims 1 {\n"
      "  o[index(0)] = select((index(0) < 2:i64), a[index(0)], s)\n"
      "}\n");
  RefArray o = RefArray::zeros(F64, {3});
  RefArray a = f64_array({1.5, 2.5});
  std::vector<RefArgument> args{&o, &a, RefValue::f64(-4)};
  interpret(kernel, {2}, args);
  CHECK(o.elements[0].f == 1.5);
  CHECK(o.elements[1].f == 2.5);
  // At point 2 the load a[2] is out of bounds though select would not pick it.
  CHECK(contains(error_of(kernel, {3}, args), "array 'a'"));
}

// ---- reductions and atomic adds --------------------------------------------------------

TEST_CASE("interpreter: a float sum reduction is the exact sum rounded, within N * u * S") {
  const Kernel kernel = parse(
      "kernel total(in f64[1] a, in i32[1] b, sum f64 s, sum i32 count, min f32 low, max f64 high) dims 1 {\n"
      "  reduce s <- a[index(0)]\n"
      "  reduce count <- b[index(0)]\n"
      "  reduce low <- f32(a[index(0)])\n"
      "  reduce high <- a[index(0)]\n"
      "}\n");
  // 1 + 3e-16 is nearest 1 + 2^-52; adding left to right in double gives 1.
  RefArray a = f64_array({1, 1e-16, 1e-16, 1e-16});
  RefArray b = i32_array({1 << 30, 1 << 30, 1 << 30, 1 << 30});
  std::vector<RefArgument> args{&a, &b, RefReduction{}, RefReduction{}, RefReduction{}, RefReduction{}};
  const RefOutcome outcome = interpret(kernel, {4}, args);
  REQUIRE(outcome.reductions.size() == 4);
  const RefValue sum = outcome.reductions[0];
  CHECK(sum.f == 1 + two_to(-52));
  // N * u * S with N = 4, u = 2^-53, S = 1 + 3e-16, plus an ulp of the result (2^-52).
  CHECK(sum.tolerance == doctest::Approx(4 * two_to(-53) * (1 + 3e-16) + two_to(-52)).epsilon(1e-12));
  CHECK(conforms(sum, RefValue::f64(1.0)));
  CHECK_FALSE(conforms(sum, RefValue::f64(1 + 8 * two_to(-52))));
  CHECK(outcome.reductions[1].i == 0);  // 4 * 2^30 wraps to 0
  CHECK(outcome.reductions[2].f == static_cast<double>(1e-16f));
  CHECK(outcome.reductions[3].f == 1.0);
  CHECK(outcome.reductions[3].tolerance == 0);
}

TEST_CASE("interpreter: min and max reductions ignore NaN; with no points they are the identity") {
  const Kernel kernel = parse(
      "kernel extremes(in f32[1] a, min f32 low, max f32 high, min i64 least, max i32 most, sum f64 s) dims 1 {\n"
      "  reduce low <- a[index(0)]\n"
      "  reduce high <- a[index(0)]\n"
      "  reduce least <- i64(a[index(0)])\n"
      "  reduce most <- i32(a[index(0)])\n"
      "  reduce s <- f64(a[index(0)])\n"
      "}\n");
  RefArray a = f32_array({3, std::nanf(""), -2, 5});
  std::vector<RefArgument> args{&a, RefReduction{}, RefReduction{}, RefReduction{}, RefReduction{}, RefReduction{}};
  const RefOutcome outcome = interpret(kernel, {4}, args);
  CHECK(outcome.reductions[0].f == -2.0);
  CHECK(outcome.reductions[1].f == 5.0);
  CHECK(outcome.reductions[2].i == -2);
  CHECK(outcome.reductions[3].i == 5);
  CHECK(std::isnan(outcome.reductions[4].f));  // a NaN in a sum is NaN in any order

  const RefOutcome empty = interpret(kernel, {0}, args);
  CHECK(empty.reductions[0].f == kInf);
  CHECK(empty.reductions[1].f == -kInf);
  CHECK(empty.reductions[2].i == kInt64Max);
  CHECK(empty.reductions[3].i == kInt32Min);
  CHECK(empty.reductions[4].f == 0.0);

  // min over -0 and +0 may be either zero.
  RefArray zeros = f32_array({-0.0f, 0.0f});
  std::vector<RefArgument> zero_args{&zeros,         RefReduction{}, RefReduction{},
                                     RefReduction{}, RefReduction{}, RefReduction{}};
  const RefOutcome signed_zeros = interpret(kernel, {2}, zero_args);
  CHECK(signed_zeros.reductions[0].f == 0.0);
  CHECK(signed_zeros.reductions[0].tolerance == std::numeric_limits<float>::denorm_min());
}

TEST_CASE("interpreter: an atomic histogram with colliding indices") {
  const Kernel kernel = parse(
      "kernel histogram(in i32[1] keys, inout i32[1] bins, inout f64[1] weights) dims 1 {\n"
      "  atomic bins[i64(keys[index(0)])] += 1:i32\n"
      "  atomic weights[i64(keys[index(0)])] += 0.1:f64\n"
      "}\n");
  RefArray keys = i32_array({0, 1, 1, 3, 1, 0, 3, 2});
  RefArray bins = i32_array({0, 0, 0, 2147483647});
  RefArray weights = f64_array({0, 0, 5, 1});
  std::vector<RefArgument> args{&keys, &bins, &weights};
  interpret(kernel, {8}, args);
  CHECK(bins.elements[0].i == 2);
  CHECK(bins.elements[1].i == 3);
  CHECK(bins.elements[2].i == 1);
  CHECK(bins.elements[3].i == kInt32Min + 1);  // 2147483647 + 2 wraps
  const long double tenth = 0.1;               // the double 0.1, exactly
  // Each element is its start plus every add, exact in long double, rounded once.
  CHECK(weights.elements[0].f == static_cast<double>(2 * tenth));
  CHECK(weights.elements[1].f == static_cast<double>(3 * tenth));
  CHECK(weights.elements[3].f == static_cast<double>(1 + 2 * tenth));
  // One add is one rounding, the same on every backend.
  CHECK(weights.elements[2].f == 5 + 0.1);
  CHECK(weights.elements[2].tolerance == 0);
  // Three adds onto 0: N * u * S = 3 * 2^-53 * 0.3 plus an ulp of 0.3 (2^-54).
  CHECK(weights.elements[1].tolerance == doctest::Approx(3 * two_to(-53) * 0.3 + two_to(-54)).epsilon(1e-9));
  // The sums in any order conform: (0.1 + 0.1) + 0.1 and 1.1 + 0.1 + ... in double.
  CHECK(conforms(weights.elements[1], RefValue::f64((0.1 + 0.1) + 0.1)));
  CHECK(conforms(weights.elements[3], RefValue::f64((1 + 0.1) + 0.1)));
  CHECK(conforms(weights.elements[3], RefValue::f64(1 + (0.1 + 0.1))));
  CHECK_FALSE(conforms(weights.elements[3], RefValue::f64(1.2 + 8 * two_to(-52))));
}

// ---- errors ------------------------------------------------------------------------------

TEST_CASE("interpreter: an access out of bounds throws, naming the kernel, the array, the index and the extent") {
  const Kernel gather = parse(
      "kernel gather(out f64[1] o, in f64[1] a) dims 1 {\n"
      "  o[index(0)] = a[(index(0) + 4:i64)]\n"
      "}\n");
  RefArray o = RefArray::zeros(F64, {8});
  RefArray a = RefArray::zeros(F64, {7});
  const std::string message = error_of(gather, {8}, {&o, &a});
  CHECK(contains(message, "kernel 'gather'"));
  CHECK(contains(message, "array 'a'"));
  CHECK(contains(message, "index 7"));
  CHECK(contains(message, "extents [7]"));
  CHECK(contains(message, "at point (3)"));

  const Kernel shift = parse(
      "kernel shift(out i32[2] o) dims 2 {\n"
      "  o[index(0), (index(1) - 1:i64)] = 1:i32\n"
      "}\n");
  RefArray grid = RefArray::zeros(I32, {2, 3});
  const std::string store_message = error_of(shift, {2, 3}, {&grid});
  CHECK(contains(store_message, "index -1 of dimension 1"));
  CHECK(contains(store_message, "array 'o' of extents [2, 3]"));
}

TEST_CASE("interpreter: arguments that do not match the parameters throw") {
  const Kernel kernel = parse(
      "kernel k(out f64[1] o, val i32 n, sum f64 total) dims 1 {\n"
      "  o[index(0)] = f64(n)\n"
      "  reduce total <- 1:f64\n"
      "}\n");
  RefArray o = RefArray::zeros(F64, {2});
  const RefValue n = RefValue::i32(3);
  CHECK(contains(error_of(kernel, {2}, {&o, n}), "3 parameters but 2 arguments"));
  CHECK(contains(error_of(kernel, {2}, {n, n, RefReduction{}}), "array 'o' needs a RefArray*"));
  CHECK(contains(error_of(kernel, {2}, {static_cast<RefArray*>(nullptr), n, RefReduction{}}), "not null"));
  RefArray wrong_type = RefArray::zeros(F32, {2});
  CHECK(
      contains(error_of(kernel, {2}, {&wrong_type, n, RefReduction{}}), "array 'o' is f64 but its RefArray holds f32"));
  RefArray wrong_rank = RefArray::zeros(F64, {2, 1});
  CHECK(contains(error_of(kernel, {2}, {&wrong_rank, n, RefReduction{}}), "rank 1 but its RefArray has 2 extents"));
  RefArray short_array = RefArray::zeros(F64, {2});
  short_array.extents = {3};
  CHECK(contains(error_of(kernel, {2}, {&short_array, n, RefReduction{}}), "holds 2 elements"));
  RefArray negative = RefArray::zeros(F64, {2});
  negative.extents = {-2};
  CHECK(contains(error_of(kernel, {2}, {&negative, n, RefReduction{}}), "negative extent"));
  CHECK(contains(error_of(kernel, {2}, {&o, RefValue::f64(3), RefReduction{}}), "scalar 'n' is f64 but must be i32"));
  RefValue not_a_float = RefValue::f32(1);
  not_a_float.f = 0.1;  // not a float
  RefArray f32s = RefArray::zeros(F32, {1});
  f32s.elements[0] = not_a_float;
  const Kernel reads_f32 = parse("kernel r(inout f32[1] a) dims 1 {\n  a[0:i64] = a[0:i64]\n}\n");
  CHECK(contains(error_of(reads_f32, {1}, {&f32s}), "element 0 of array 'a'"));
  CHECK(contains(error_of(kernel, {2}, {&o, n, n}), "reduction 'total' needs RefReduction{}"));
  CHECK(contains(error_of(kernel, {2}, {&o, RefReduction{}, RefReduction{}}), "scalar 'n' needs a RefValue"));
  CHECK(contains(error_of(kernel, {2, 2}, {&o, n, RefReduction{}}), "dims 1 but the range has 2 extents"));
  CHECK(contains(error_of(kernel, {-1}, {&o, n, RefReduction{}}), "negative extent"));
  CHECK(error_of(kernel, {2}, {&o, n, RefReduction{}}).empty());
  CHECK(o.elements[1].f == 3.0);
}

// ---- the public helpers --------------------------------------------------------------

TEST_CASE("interpreter: conforms() accepts what the semantics allow") {
  RefValue unsure = RefValue::f64(1);
  unsure.unsure = true;
  CHECK(conforms(unsure, RefValue::f64(std::nan(""))));
  CHECK(conforms(RefValue::i32(5), RefValue::i32(5)));
  CHECK_FALSE(conforms(RefValue::i32(5), RefValue::i32(6)));
  CHECK_FALSE(conforms(RefValue::i32(5), RefValue::i64(5)));
  CHECK(conforms(RefValue::boolean(true), RefValue::boolean(true)));
  CHECK_FALSE(conforms(RefValue::boolean(true), RefValue::boolean(false)));
  CHECK(conforms(RefValue::f64(std::nan("")), RefValue::f64(-std::nan(""))));
  CHECK_FALSE(conforms(RefValue::f64(std::nan("")), RefValue::f64(0)));
  CHECK(conforms(RefValue::f64(kInf), RefValue::f64(kInf)));
  CHECK_FALSE(conforms(RefValue::f64(kInf), RefValue::f64(-kInf)));
  CHECK_FALSE(conforms(RefValue::f64(kInf), RefValue::f64(std::numeric_limits<double>::max())));
  CHECK(conforms(f64_within(1, two_to(-40)), RefValue::f64(1 + two_to(-40))));
  CHECK(conforms(f64_within(1, two_to(-40)), RefValue::f64(1 - two_to(-40))));
  CHECK_FALSE(conforms(f64_within(1, two_to(-40)), RefValue::f64(1 + two_to(-39))));
  CHECK_FALSE(conforms(f64_within(1, 1e300), RefValue::f64(kInf)));
  CHECK_FALSE(conforms(f64_within(1, 1), RefValue::f64(std::nan(""))));
  CHECK_FALSE(conforms(RefValue::f64(1), RefValue::f64(1 + two_to(-52))));
  // A device may flush a denormal result to zero.
  CHECK(conforms(RefValue::f64(1e-310), RefValue::f64(0)));
  CHECK(conforms(RefValue::f64(1e-310), RefValue::f64(-0.0)));
  CHECK(conforms(RefValue::f32(1e-40f), RefValue::f32(0)));
  CHECK_FALSE(conforms(RefValue::f64(1e-300), RefValue::f64(0)));
}

TEST_CASE("interpreter: ulps, values and their descriptions") {
  CHECK(ulp_of(F64, 1.0) == two_to(-52));
  CHECK(ulp_of(F64, -1.5) == two_to(-52));
  CHECK(ulp_of(F64, 0.75) == two_to(-53));
  CHECK(ulp_of(F32, 1.0) == two_to(-23));
  CHECK(ulp_of(F32, 3.0) == two_to(-22));
  CHECK(ulp_of(F32, 1e30) == two_to(99 - 23));  // 2^99 <= 1e30 < 2^100
  CHECK(ulp_of(F64, 0.0) == std::numeric_limits<double>::denorm_min());
  CHECK(ulp_of(F32, 1e-40) == std::numeric_limits<float>::denorm_min());
  CHECK(ulp_of(F64, kInf) == kInf);
  CHECK(ulps_allowed(MathFn::Sqrt, F32) == 3);
  CHECK(ulps_allowed(MathFn::Sqrt, F64) == 0);
  CHECK(ulps_allowed(MathFn::Exp, F64) == 3);
  CHECK(ulps_allowed(MathFn::Log, F32) == 3);
  CHECK(ulps_allowed(MathFn::Sin, F32) == 4);
  CHECK(ulps_allowed(MathFn::Cos, F64) == 4);
  CHECK(ulps_allowed(MathFn::Pow, F64) == 16);
  CHECK(ulps_allowed(MathFn::Fma, F32) == 0);
  CHECK(ulps_allowed(MathFn::Floor, F32) == 0);
  CHECK(division_ulps_allowed(F32) == 3);
  CHECK(division_ulps_allowed(F64) == 0);

  CHECK(RefValue::of(I32, 3e9).i == kInt32Max);
  CHECK(RefValue::of(I32, -2.7).i == -2);
  CHECK(RefValue::of(ScalarType::Bool, 0.5).i == 1);
  CHECK(RefValue::of(F32, 0.1).f == static_cast<double>(0.1f));
  CHECK(RefValue::i64(-7).as_double() == -7.0);
  const RefArray zeros = RefArray::zeros(F32, {2, 3});
  CHECK(zeros.size() == 6);
  CHECK(zeros.elements.size() == 6);
  CHECK(zeros.elements[5].type == F32);

  CHECK(describe(RefValue::i32(3)) == "3");
  CHECK(describe(RefValue::boolean(true)) == "true");
  CHECK(describe(RefValue::f64(-1.5)) == "-1.5");
  CHECK(describe(RefValue::f32(0.1f)) == "0.1");
  CHECK(describe(f64_within(-1.5, two_to(-52))) == "-1.5 (+-2.2e-16)");
  CHECK(describe(value_of("f64", "(1:f64 / min(-0:f64, 0:f64))")) == "unsure");
}
