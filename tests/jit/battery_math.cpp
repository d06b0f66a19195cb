// Battery, conversions and math functions: casts between every pair of the
// five types (float to integer rounding toward zero and saturating, NaN to 0,
// anything to bool comparing with zero), and every math function on f32 and
// f64, compared with plain C++. sqrt, floor, fabs/abs, fmin and fmax must be
// exact; exp, log, sin, cos and pow may differ from the C library by at most
// kTranscendentalUlp units in the last place.
#include <doctest/doctest.h>

#include "battery_support.hpp"

using namespace canopy;
using namespace battery;

namespace {

constexpr i64 kPoints = 20011;

/// The error allowed for exp, log, sin, cos and pow against <cmath>, in ulp,
/// for f32 and f64 alike. (The CPU JIT calls the C library through LLVM's
/// intrinsics, so 0 is expected there; other backends' math libraries are
/// allowed a little.)
constexpr std::uint64_t kTranscendentalUlp = 2;

template <class F>
auto cast_kernel() {
  return Kernel(
      "cast_from_" + type_name<F>(),
      [](Out<bool> to_bool, Out<i32> to_i32, Out<i64> to_i64, Out<float> to_f32, Out<double> to_f64, In<F> x) {
        Idx i = index(0);
        to_bool[i] = cast<bool>(x[i]);
        to_i32[i] = cast<i32>(x[i]);
        to_i64[i] = cast<i64>(x[i]);
        to_f32[i] = cast<float>(x[i]);
        to_f64[i] = cast<double>(x[i]);
      },
      {"to_bool", "to_i32", "to_i64", "to_f32", "to_f64", "x"});
}

// Floats at and around the limits of i32 and i64, where saturation starts.
template <class F>
std::vector<F> near_integer_limits() {
  const double two31 = 2147483648.0, two63 = 9223372036854775808.0;
  std::vector<double> candidates{two31,
                                 -two31,
                                 two31 - 1,
                                 two31 - 0.5,
                                 two31 + 1,
                                 -two31 - 1,
                                 -two31 - 0.5,
                                 -two31 + 0.5,
                                 std::nextafter(two31, 0.0),
                                 std::nextafter(-two31, 0.0),
                                 std::nextafter(-two31, -1e300),
                                 two63,
                                 -two63,
                                 std::nextafter(two63, 0.0),
                                 std::nextafter(-two63, 0.0),
                                 std::nextafter(-two63, -1e300),
                                 std::nextafter(two63, 1e300),
                                 1e300,
                                 -1e300,
                                 0.999999,
                                 -0.999999,
                                 1.5,
                                 -1.5,
                                 1e-310};
  std::vector<F> values;
  for (double c : candidates)
    if (std::fabs(c) <= static_cast<double>(std::numeric_limits<F>::max())) values.push_back(static_cast<F>(c));
  values.push_back(static_cast<F>(std::nextafter(static_cast<F>(two31), F(0))));
  values.push_back(-std::numeric_limits<F>::quiet_NaN());
  return values;
}

template <class T>
auto math_kernel() {
  return Kernel(
      "math_" + type_name<T>(),
      [](Out<T> root, Out<T> exponential, Out<T> logarithm, Out<T> sine, Out<T> cosine, Out<T> power, Out<T> floored,
         Out<T> magnitude, Out<T> lower, Out<T> upper, In<T> x, In<T> y, In<T> base, In<T> exponent) {
        Idx i = index(0);
        root[i] = sqrt(x[i]);
        exponential[i] = exp(x[i]);
        logarithm[i] = log(x[i]);
        sine[i] = sin(x[i]);
        cosine[i] = cos(x[i]);
        power[i] = pow(base[i], exponent[i]);
        floored[i] = floor(x[i]);
        magnitude[i] = fabs(x[i]);
        lower[i] = fmin(x[i], y[i]);
        upper[i] = fmax(x[i], y[i]);
      },
      {"root", "exponential", "logarithm", "sine", "cosine", "power", "floored", "magnitude", "lower", "upper", "x",
       "y", "base", "exponent"});
}

}  // namespace

TEST_CASE_TEMPLATE("battery: casts from every type to every type", F, bool, i32, i64, float, double) {
  auto kernel = cast_kernel<F>();
  Random random(606 + sizeof(F) + std::is_floating_point_v<F>);
  auto x = random.mixed<F>(kPoints);
  if constexpr (std::is_floating_point_v<F>) {
    auto limits = near_integer_limits<F>();
    for (std::size_t k = 0; k < limits.size(); ++k) x[200 + k] = limits[k];
    // Values spread over the whole range of both integer types.
    for (std::size_t k = 300; k < 3000; ++k) x[k] = static_cast<F>(random.real(-1.2e19, 1.2e19));
    for (std::size_t k = 3000; k < 6000; ++k) x[k] = static_cast<F>(random.real(-3e9, 3e9));
  }
  auto to_bool = shared_runtime().array<bool>(kPoints);
  auto to_i32 = shared_runtime().array<i32>(kPoints);
  auto to_i64 = shared_runtime().array<i64>(kPoints);
  auto to_f32 = shared_runtime().array<float>(kPoints);
  auto to_f64 = shared_runtime().array<double>(kPoints);
  shared_runtime().region(kernel).over(kPoints).launch(to_bool, to_i32, to_i64, to_f32, to_f64, upload<F>(x));

  std::vector<std::uint8_t> want_bool(x.size());
  std::vector<i32> want_i32(x.size());
  std::vector<i64> want_i64(x.size());
  std::vector<float> want_f32(x.size());
  std::vector<double> want_f64(x.size());
  for (std::size_t k = 0; k < x.size(); ++k) {
    const F v = static_cast<F>(x[k]);
    want_bool[k] = ir_cast<bool>(v);
    want_i32[k] = ir_cast<i32>(v);
    want_i64[k] = ir_cast<i64>(v);
    want_f32[k] = ir_cast<float>(v);
    want_f64[k] = ir_cast<double>(v);
  }
  const std::string from = type_name<F>() + " to ";
  check_elements(to_bool, want_bool, from + "bool");
  check_elements(to_i32, want_i32, from + "i32");
  check_elements(to_i64, want_i64, from + "i64");
  check_elements(to_f32, want_f32, from + "f32");
  check_elements(to_f64, want_f64, from + "f64");

  // The rules of ir/expr.hpp, spelled out on a few inputs.
  if constexpr (std::is_floating_point_v<F>) {
    const auto i32s = to_i32.host();
    const auto i64s = to_i64.host();
    const auto bools = to_bool.host();
    for (std::size_t k = 0; k < x.size(); ++k) {
      const F v = x[k];
      if (std::isnan(v)) {
        REQUIRE(i32s[static_cast<i64>(k)] == 0);
        REQUIRE(i64s[static_cast<i64>(k)] == 0);
        REQUIRE(bools[static_cast<i64>(k)]);
      }
      if (v >= F(3e9)) REQUIRE(i32s[static_cast<i64>(k)] == std::numeric_limits<i32>::max());
      if (v <= F(-3e9)) REQUIRE(i32s[static_cast<i64>(k)] == std::numeric_limits<i32>::min());
      if (v >= F(1e19)) REQUIRE(i64s[static_cast<i64>(k)] == std::numeric_limits<i64>::max());
      if (v <= F(-1e19)) REQUIRE(i64s[static_cast<i64>(k)] == std::numeric_limits<i64>::min());
      if (v == F(-2.5)) REQUIRE(i32s[static_cast<i64>(k)] == -2);
      if (v == F(-0.5)) REQUIRE(i64s[static_cast<i64>(k)] == 0);
    }
  }
}

TEST_CASE_TEMPLATE("battery: sqrt exp log sin cos pow floor fabs fmin fmax", T, float, double) {
  auto kernel = math_kernel<T>();
  Random random(707 + sizeof(T));
  // x: edge values, then moderate ranges where every function has a finite,
  // interesting result (and negative inputs where sqrt and log give NaN).
  auto x = random.mixed<T>(kPoints);
  auto y = random.mixed<T>(kPoints);
  for (std::size_t k = 100; k < x.size(); ++k) {
    switch (k % 5) {
      case 0: x[k] = static_cast<T>(random.real(-80, 80)); break;
      case 1: x[k] = static_cast<T>(random.real(0, 4)); break;
      case 2: x[k] = static_cast<T>(random.real(-1000, 1000)); break;
      case 3: x[k] = static_cast<T>(random.real(1e-6, 1e6)); break;
      default: break;  // keep the mixed value
    }
  }
  // pow: positive bases with any exponent, negative bases with integer exponents.
  std::vector<T> base(x.size()), exponent(x.size());
  for (std::size_t k = 0; k < base.size(); ++k) {
    if (k % 3 == 0) {
      base[k] = static_cast<T>(random.real(-10, 10));
      exponent[k] = static_cast<T>(random.integer(-12, 12));
    } else {
      base[k] = static_cast<T>(random.real(0, 30));
      exponent[k] = static_cast<T>(random.real(-15, 15));
    }
  }
  const auto& edges = Random::edge_values<T>();
  for (std::size_t k = 0; k < edges.size() * edges.size(); ++k) {
    base[k] = edges[k / edges.size()];
    exponent[k] = edges[k % edges.size()];
  }
  std::vector<Array<T>> out;
  for (int k = 0; k < 10; ++k) out.push_back(shared_runtime().array<T>(kPoints));
  shared_runtime().region(kernel).over(kPoints).launch(out[0], out[1], out[2], out[3], out[4], out[5], out[6], out[7],
                                                       out[8], out[9], upload<T>(x), upload<T>(y), upload<T>(base),
                                                       upload<T>(exponent));

  auto want = [&](auto f) {
    std::vector<T> w(x.size());
    for (std::size_t k = 0; k < x.size(); ++k) w[k] = f(k);
    return w;
  };
  const std::string type = type_name<T>() + " ";
  check_elements(out[0], want([&](std::size_t k) { return std::sqrt(x[k]); }), type + "sqrt");
  check_ulp(out[1], want([&](std::size_t k) { return std::exp(x[k]); }), kTranscendentalUlp, type + "exp");
  check_ulp(out[2], want([&](std::size_t k) { return std::log(x[k]); }), kTranscendentalUlp, type + "log");
  check_ulp(out[3], want([&](std::size_t k) { return std::sin(x[k]); }), kTranscendentalUlp, type + "sin");
  check_ulp(out[4], want([&](std::size_t k) { return std::cos(x[k]); }), kTranscendentalUlp, type + "cos");
  check_ulp(out[5], want([&](std::size_t k) { return std::pow(base[k], exponent[k]); }), kTranscendentalUlp,
            type + "pow");
  check_elements(out[6], want([&](std::size_t k) { return std::floor(x[k]); }), type + "floor");
  check_elements(out[7], want([&](std::size_t k) { return std::fabs(x[k]); }), type + "fabs");
  check_elements(out[8], want([&](std::size_t k) { return std::fmin(x[k], y[k]); }), type + "fmin");
  check_elements(out[9], want([&](std::size_t k) { return std::fmax(x[k], y[k]); }), type + "fmax");

  // fabs clears the sign of -0 and of -inf; fmin/fmax ignore one NaN operand.
  const auto magnitude = out[7].host();
  for (i64 k = 0; k < magnitude.size(); ++k) REQUIRE_FALSE(std::signbit(magnitude[k]));
}

TEST_CASE("battery: abs, min and max on integers (abs(MIN) wraps to MIN)") {
  Kernel kernel("int_abs_min_max",
                [](Out<i32> abs32, Out<i64> abs64, Out<i32> clamp32, Out<i64> clamp64, In<i32> x, In<i64> y) {
                  Idx i = index(0);
                  abs32[i] = abs(x[i]);
                  abs64[i] = abs(y[i]);
                  clamp32[i] = min(max(x[i], -1000), 1000);
                  clamp64[i] = max(-5, min(y[i], cast<i64>(x[i])));
                },
                {"abs32", "abs64", "clamp32", "clamp64", "x", "y"});
  Random random(808);
  auto x = random.mixed<i32>(kPoints);
  auto y = random.mixed<i64>(kPoints);
  auto abs32 = shared_runtime().array<i32>(kPoints), clamp32 = shared_runtime().array<i32>(kPoints);
  auto abs64 = shared_runtime().array<i64>(kPoints), clamp64 = shared_runtime().array<i64>(kPoints);
  shared_runtime().region(kernel).over(kPoints).launch(abs32, abs64, clamp32, clamp64, upload<i32>(x), upload<i64>(y));

  std::vector<i32> want_abs32(x.size()), want_clamp32(x.size());
  std::vector<i64> want_abs64(x.size()), want_clamp64(x.size());
  for (std::size_t k = 0; k < x.size(); ++k) {
    want_abs32[k] = ir_abs(x[k]);
    want_abs64[k] = ir_abs(y[k]);
    want_clamp32[k] = std::min(std::max(x[k], -1000), 1000);
    want_clamp64[k] = std::max<i64>(-5, std::min<i64>(y[k], x[k]));
  }
  check_elements(abs32, want_abs32, "i32 abs");
  check_elements(abs64, want_abs64, "i64 abs");
  check_elements(clamp32, want_clamp32, "i32 min/max");
  check_elements(clamp64, want_clamp64, "i64 min/max");
  CHECK(abs32.host()[3 * 6] == std::numeric_limits<i32>::min());  // edge value 6 is MIN
}
