// The JIT battery's conversions and math functions (tests/jit/battery_math.cpp)
// on the OpenCL device, compared with the CPU device on the same inputs.
// Casts between every pair of types must match exactly (float to integer
// saturating toward zero, NaN to 0), and so must sqrt, floor, fabs, fmin,
// fmax and integer abs/min/max. exp, log, sin, cos and pow come from the
// device's math library: OpenCL 1.2 allows them 3 (exp, log), 4 (sin, cos)
// and 16 (pow) ulp, and the CPU's C library is itself within 1 ulp, so they
// must match within kTranscendentalUlp / kPowUlp.
#include <doctest/doctest.h>

#include "opencl_support.hpp"

using namespace canopy;
using namespace battery;
using namespace opencl_test;

namespace {

constexpr i64 kPoints = 20011;

/// The bound for exp, log, sin and cos against the CPU, in ulp (OpenCL's
/// largest allowed error, 4 ulp for sin and cos, plus the C library's 1).
constexpr std::uint64_t kTranscendentalUlp = 5;
/// The bound for pow (OpenCL allows 16 ulp, plus the C library's 1).
constexpr std::uint64_t kPowUlp = 17;

// Floats at and around the limits of i32 and i64, where saturation starts.
template <class F>
std::vector<F> near_integer_limits() {
  const double two31 = 2147483648.0, two63 = 9223372036854775808.0;
  std::vector<double> candidates{two31,        -two31,       two31 - 1, two31 - 0.5, two31 + 1, -two31 - 1,
                                 -two31 - 0.5, -two31 + 0.5, two63,     -two63,      1e300,     -1e300,
                                 0.999999,     -0.999999,    1.5,       -1.5,        1e-310};
  for (double limit : {two31, -two31, two63, -two63}) {
    candidates.push_back(std::nextafter(limit, 0.0));
    candidates.push_back(std::nextafter(limit, limit * 2));
  }
  std::vector<F> values;
  for (double c : candidates)
    if (std::fabs(c) <= static_cast<double>(std::numeric_limits<F>::max())) values.push_back(static_cast<F>(c));
  values.push_back(static_cast<F>(std::nextafter(static_cast<F>(two31), F(0))));
  values.push_back(-std::numeric_limits<F>::quiet_NaN());
  return values;
}

}  // namespace

TEST_CASE_TEMPLATE("opencl battery: casts from every type to every type", F, bool, i32, i64, float, double) {
  OPENCL_DEVICE_OR_SKIP(device);
  Kernel kernel(
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
  Random random(606 + sizeof(F) + std::is_floating_point_v<F>);
  auto x = random.mixed<F>(kPoints);
  if constexpr (std::is_floating_point_v<F>) {
    auto limits = near_integer_limits<F>();
    for (std::size_t k = 0; k < limits.size(); ++k) x[200 + k] = limits[k];
    for (std::size_t k = 300; k < 3000; ++k) x[k] = static_cast<F>(random.real(-1.2e19, 1.2e19));
    for (std::size_t k = 3000; k < 6000; ++k) x[k] = static_cast<F>(random.real(-3e9, 3e9));
  }
  std::vector<HostArg> args{HostArray::filled<bool>(kPoints, false), HostArray::filled<i32>(kPoints, 0),
                            HostArray::filled<i64>(kPoints, 0),      HostArray::filled<float>(kPoints, 0),
                            HostArray::filled<double>(kPoints, 0),   HostArray::of<F>(x)};
  auto [cpu, got] = compare(*device, kernel, args, range_of(kPoints));
  // The rules of ir/expr.hpp on the OpenCL results themselves.
  if constexpr (std::is_floating_point_v<F>) {
    const auto i32s = values_of<i32>(got.arrays[1]);
    const auto i64s = values_of<i64>(got.arrays[2]);
    const auto bools = values_of<bool>(got.arrays[0]);
    for (std::size_t k = 0; k < x.size(); ++k) {
      if (std::isnan(x[k])) REQUIRE((i32s[k] == 0 && i64s[k] == 0 && bools[k] == 1));
      if (x[k] >= F(3e9)) REQUIRE(i32s[k] == std::numeric_limits<i32>::max());
      if (x[k] <= F(-3e9)) REQUIRE(i32s[k] == std::numeric_limits<i32>::min());
      if (x[k] >= F(1e19)) REQUIRE(i64s[k] == std::numeric_limits<i64>::max());
      if (x[k] <= F(-1e19)) REQUIRE(i64s[k] == std::numeric_limits<i64>::min());
      if (x[k] == F(-2.5)) REQUIRE(i32s[k] == -2);
    }
  }
}

TEST_CASE_TEMPLATE("opencl battery: sqrt exp log sin cos pow floor fabs fmin fmax", T, float, double) {
  OPENCL_DEVICE_OR_SKIP(device);
  Kernel kernel(
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
  Random random(707 + sizeof(T));
  auto x = random.mixed<T>(kPoints);
  auto y = random.mixed<T>(kPoints);
  for (std::size_t k = 100; k < x.size(); ++k) {
    switch (k % 5) {
      case 0: x[k] = static_cast<T>(random.real(-80, 80)); break;
      case 1: x[k] = static_cast<T>(random.real(0, 4)); break;
      case 2: x[k] = static_cast<T>(random.real(-1000, 1000)); break;
      case 3: x[k] = static_cast<T>(random.real(1e-6, 1e6)); break;
      default: break;
    }
  }
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
  std::vector<HostArg> args(10, HostArray::filled<T>(kPoints, T{}));
  for (const auto* input : {&x, &y, &base, &exponent}) args.push_back(HostArray::of<T>(*input));
  Tolerance tolerance;
  for (int transcendental : {1, 2, 3, 4}) tolerance.ulp.emplace_back(transcendental, kTranscendentalUlp);
  tolerance.ulp.emplace_back(5, kPowUlp);
  auto [cpu, got] = compare(*device, kernel, args, range_of(kPoints), tolerance);
  CHECK(cpu.arrays.size() == got.arrays.size());
}

TEST_CASE("opencl battery: abs, min and max on integers (abs(MIN) wraps to MIN)") {
  OPENCL_DEVICE_OR_SKIP(device);
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
  std::vector<HostArg> args{HostArray::filled<i32>(kPoints, 0),
                            HostArray::filled<i64>(kPoints, 0),
                            HostArray::filled<i32>(kPoints, 0),
                            HostArray::filled<i64>(kPoints, 0),
                            HostArray::of<i32>(x),
                            HostArray::of<i64>(y)};
  auto [cpu, got] = compare(*device, kernel, args, range_of(kPoints));
  CHECK(values_of<i32>(got.arrays[0])[3 * 6] == std::numeric_limits<i32>::min());  // edge value 6 is MIN
}
