// The JIT battery's operator kernels (tests/jit/battery_ops.cpp) on the
// OpenCL device, each compared element by element with the CPU device on the
// same inputs: every arithmetic, bitwise, logical and comparison operator on
// every type it applies to, starting with every pair of the type's edge
// values (x / 0, MIN / -1, shifts past the width, NaN, infinities, -0).
// All of it must match exactly.
#include <doctest/doctest.h>

#include "opencl_support.hpp"

using namespace canopy;
using namespace battery;
using namespace opencl_test;

namespace {

constexpr i64 kPoints = 20011;

template <class T>
auto arithmetic_kernel() {
  return Kernel("arithmetic_" + type_name<T>(),
                [](Out<T> plus, Out<T> minus, Out<T> times, Out<T> quotient, Out<T> remainder, Out<T> smaller,
                   Out<T> larger, Out<T> negated, In<T> a, In<T> b) {
                  Idx i = index(0);
                  plus[i] = a[i] + b[i];
                  minus[i] = a[i] - b[i];
                  times[i] = a[i] * b[i];
                  quotient[i] = a[i] / b[i];
                  remainder[i] = a[i] % b[i];
                  smaller[i] = min(a[i], b[i]);
                  larger[i] = max(a[i], b[i]);
                  negated[i] = -a[i];
                },
                {"plus", "minus", "times", "quotient", "remainder", "smaller", "larger", "negated", "a", "b"});
}

// `count` output arrays of T, zeroed.
template <class T>
std::vector<HostArg> outputs(int count) {
  return std::vector<HostArg>(static_cast<std::size_t>(count), HostArray::filled<T>(kPoints, T{}));
}

}  // namespace

TEST_CASE_TEMPLATE("opencl battery: + - * / % min max and negation", T, i32, i64, float, double) {
  OPENCL_DEVICE_OR_SKIP(device);
  Random random(101 + sizeof(T) + std::is_floating_point_v<T>);
  auto [a, b] = operand_pairs<T>(random, kPoints);
  auto args = outputs<T>(8);
  args.push_back(HostArray::of<T>(a));
  args.push_back(HostArray::of<T>(b));
  auto [cpu, got] = compare(*device, arithmetic_kernel<T>(), args, range_of(kPoints));
  // The edge cases the IR defines, on the OpenCL results themselves.
  if constexpr (std::is_integral_v<T>) {
    const auto quotient = values_of<T>(got.arrays[3]), remainder = values_of<T>(got.arrays[4]);
    for (std::size_t k = 0; k < a.size(); ++k) {
      if (b[k] == 0) REQUIRE((quotient[k] == 0 && remainder[k] == 0));
      if (a[k] == std::numeric_limits<T>::min() && b[k] == -1)
        REQUIRE((quotient[k] == std::numeric_limits<T>::min() && remainder[k] == 0));
    }
  }
}

TEST_CASE_TEMPLATE("opencl battery: == != < <= > >=", T, i32, i64, float, double) {
  OPENCL_DEVICE_OR_SKIP(device);
  Kernel kernel(
      "compare_" + type_name<T>(),
      [](Out<bool> eq, Out<bool> ne, Out<bool> lt, Out<bool> le, Out<bool> gt, Out<bool> ge, In<T> a, In<T> b) {
        Idx i = index(0);
        eq[i] = a[i] == b[i];
        ne[i] = a[i] != b[i];
        lt[i] = a[i] < b[i];
        le[i] = a[i] <= b[i];
        gt[i] = a[i] > b[i];
        ge[i] = a[i] >= b[i];
      },
      {"eq", "ne", "lt", "le", "gt", "ge", "a", "b"});
  Random random(202 + sizeof(T) + std::is_floating_point_v<T>);
  auto [a, b] = operand_pairs<T>(random, kPoints);
  for (std::size_t k = 400; k < a.size(); k += 7) b[k] = a[k];
  auto args = outputs<bool>(6);
  args.push_back(HostArray::of<T>(a));
  args.push_back(HostArray::of<T>(b));
  auto [cpu, got] = compare(*device, kernel, args, range_of(kPoints));
  // NaN compares unequal to everything, itself included.
  const auto ne = values_of<bool>(got.arrays[1]);
  if constexpr (std::is_floating_point_v<T>)
    for (std::size_t k = 0; k < a.size(); ++k)
      if (std::isnan(a[k])) REQUIRE(ne[k] == 1);
}

TEST_CASE_TEMPLATE("opencl battery: & | ^ << >> ~ on integers, shift amounts modulo the width", T, i32, i64) {
  OPENCL_DEVICE_OR_SKIP(device);
  Kernel kernel("bitwise_" + type_name<T>(),
                [](Out<T> both, Out<T> either, Out<T> differ, Out<T> left, Out<T> right, Out<T> flipped, In<T> a,
                   In<T> b, In<T> amount) {
                  Idx i = index(0);
                  both[i] = a[i] & b[i];
                  either[i] = a[i] | b[i];
                  differ[i] = a[i] ^ b[i];
                  left[i] = a[i] << amount[i];
                  right[i] = a[i] >> amount[i];
                  flipped[i] = ~a[i];
                },
                {"both", "either", "differ", "left", "right", "flipped", "a", "b", "amount"});
  Random random(303 + sizeof(T));
  auto [a, b] = operand_pairs<T>(random, kPoints);
  std::vector<T> amount(a.size());
  for (std::size_t k = 0; k < amount.size(); ++k)
    amount[k] = k < 261 ? static_cast<T>(static_cast<i64>(k) - 130) : static_cast<T>(random.integer(-70, 70));
  auto args = outputs<T>(6);
  args.push_back(HostArray::of<T>(a));
  args.push_back(HostArray::of<T>(b));
  args.push_back(HostArray::of<T>(amount));
  auto [cpu, got] = compare(*device, kernel, args, range_of(kPoints));
  // A shift by the width is a shift by 0.
  CHECK(values_of<T>(got.arrays[3])[130 + 8 * sizeof(T)] == a[130 + 8 * sizeof(T)]);
}

TEST_CASE("opencl battery: bool operators & | ^ ! && || == !=") {
  OPENCL_DEVICE_OR_SKIP(device);
  Kernel kernel("bool_ops",
                [](Out<bool> both, Out<bool> either, Out<bool> differ, Out<bool> negated, Out<bool> all, Out<bool> any,
                   Out<bool> eq, Out<bool> ne, In<bool> a, In<bool> b) {
                  Idx i = index(0);
                  both[i] = a[i] & b[i];
                  either[i] = a[i] | b[i];
                  differ[i] = a[i] ^ b[i];
                  negated[i] = !a[i];
                  all[i] = a[i] && b[i];
                  any[i] = a[i] || b[i];
                  eq[i] = a[i] == b[i];
                  ne[i] = a[i] != b[i];
                },
                {"both", "either", "differ", "negated", "all", "any", "eq", "ne", "a", "b"});
  Random random(404);
  auto [a, b] = operand_pairs<bool>(random, kPoints);
  auto args = outputs<bool>(8);
  args.push_back(HostArray::of<bool>(a));
  args.push_back(HostArray::of<bool>(b));
  auto [cpu, got] = compare(*device, kernel, args, range_of(kPoints));
  const auto differ = values_of<bool>(got.arrays[2]);
  for (std::size_t k = 0; k < a.size(); ++k) REQUIRE(differ[k] == ((a[k] != 0) != (b[k] != 0) ? 1 : 0));
}

TEST_CASE("opencl battery: literals in expressions take the other operand's type") {
  OPENCL_DEVICE_OR_SKIP(device);
  Kernel kernel("literals",
                [](Out<float> f, Out<i32> n, Out<double> d, Out<i64> l, In<float> x, In<i32> m) {
                  Idx i = index(0);
                  f[i] = x[i] * 2 + 0.1 - 3 / x[i];
                  n[i] = m[i] * 3 + 1 - 100 / (m[i] | 1) + 7 % (m[i] & 15);
                  d[i] = 1.5 + cast<double>(x[i]) * 1e-3;
                  l[i] = i * 3 - 2;
                },
                {"f", "n", "d", "l", "x", "m"});
  Random random(505);
  auto x = random.mixed<float>(kPoints);
  auto m = random.mixed<i32>(kPoints);
  std::vector<HostArg> args{HostArray::filled<float>(kPoints, 0),
                            HostArray::filled<i32>(kPoints, 0),
                            HostArray::filled<double>(kPoints, 0),
                            HostArray::filled<i64>(kPoints, 0),
                            HostArray::of<float>(x),
                            HostArray::of<i32>(m)};
  auto [cpu, got] = compare(*device, kernel, args, range_of(kPoints));
  CHECK(values_of<i64>(got.arrays[3])[kPoints - 1] == (kPoints - 1) * 3 - 2);
}
