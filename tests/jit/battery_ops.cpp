// Battery, operators: every arithmetic, bitwise, logical and comparison
// operator on every type it applies to, JIT-compiled through the runtime and
// compared element by element with plain C++ implementing the IR's semantics
// (ir/expr.hpp): wrapping integers, x / 0 == 0, x % 0 == 0, MIN / -1 == MIN,
// shift amounts modulo the width, fmin / fmax ignoring NaN, fmod for float %.
// Operands start with every pair of the type's edge values.
#include <doctest/doctest.h>

#include "battery_support.hpp"

using namespace canopy;
using namespace battery;

namespace {

// Large enough that the CPU device splits the range over its threads.
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

template <class T>
auto comparison_kernel() {
  return Kernel(
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
}

template <class T>
auto bitwise_kernel() {
  return Kernel("bitwise_" + type_name<T>(),
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
}

// Runs `kernel` over kPoints points with `arrays` as its arguments.
template <class K, class... Arrays>
void run(const K& kernel, const Arrays&... arrays) {
  shared_runtime().region(kernel).over(kPoints).launch(arrays...);
}

}  // namespace

TEST_CASE_TEMPLATE("battery: + - * / % min max and negation", T, i32, i64, float, double) {
  auto kernel = arithmetic_kernel<T>();
  Random random(101 + sizeof(T) + std::is_floating_point_v<T>);
  auto [a, b] = operand_pairs<T>(random, kPoints);
  std::vector<Array<T>> out;
  for (int k = 0; k < 8; ++k) out.push_back(shared_runtime().array<T>(kPoints));
  run(kernel, out[0], out[1], out[2], out[3], out[4], out[5], out[6], out[7], upload<T>(a), upload<T>(b));

  auto expect = [&](int which, const char* what, auto op) {
    std::vector<T> want(a.size());
    for (std::size_t k = 0; k < a.size(); ++k) want[k] = op(a[k], b[k]);
    check_elements(out[static_cast<std::size_t>(which)], want, type_name<T>() + " " + what);
  };
  if constexpr (std::is_floating_point_v<T>) {
    expect(0, "+", [](T x, T y) { return x + y; });
    expect(1, "-", [](T x, T y) { return x - y; });
    expect(2, "*", [](T x, T y) { return x * y; });
    expect(3, "/", [](T x, T y) { return x / y; });
    expect(4, "% (fmod)", [](T x, T y) { return std::fmod(x, y); });
    expect(5, "min (fmin)", [](T x, T y) { return std::fmin(x, y); });
    expect(6, "max (fmax)", [](T x, T y) { return std::fmax(x, y); });
    expect(7, "neg", [](T x, T) { return -x; });
  } else {
    expect(0, "+", [](T x, T y) { return wrap_add(x, y); });
    expect(1, "-", [](T x, T y) { return wrap_sub(x, y); });
    expect(2, "*", [](T x, T y) { return wrap_mul(x, y); });
    expect(3, "/", [](T x, T y) { return ir_div(x, y); });
    expect(4, "%", [](T x, T y) { return ir_rem(x, y); });
    expect(5, "min", [](T x, T y) { return std::min(x, y); });
    expect(6, "max", [](T x, T y) { return std::max(x, y); });
    expect(7, "neg", [](T x, T) { return wrap_neg(x); });
  }
  // The edge cases the IR defines, spelled out once.
  if constexpr (std::is_integral_v<T>) {
    const auto quotient = out[3].host(), remainder = out[4].host();
    for (std::size_t k = 0; k < a.size(); ++k) {
      if (b[k] == 0) {
        REQUIRE(quotient[static_cast<i64>(k)] == 0);
        REQUIRE(remainder[static_cast<i64>(k)] == 0);
      }
      if (a[k] == std::numeric_limits<T>::min() && b[k] == -1) {
        REQUIRE(quotient[static_cast<i64>(k)] == std::numeric_limits<T>::min());
        REQUIRE(remainder[static_cast<i64>(k)] == 0);
      }
    }
  }
}

TEST_CASE_TEMPLATE("battery: == != < <= > >=", T, i32, i64, float, double) {
  auto kernel = comparison_kernel<T>();
  Random random(202 + sizeof(T) + std::is_floating_point_v<T>);
  auto [a, b] = operand_pairs<T>(random, kPoints);
  // Equal operands are rare at random: make every seventh pair equal.
  for (std::size_t k = 400; k < a.size(); k += 7) b[k] = a[k];
  std::vector<Array<bool>> out;
  for (int k = 0; k < 6; ++k) out.push_back(shared_runtime().array<bool>(kPoints));
  run(kernel, out[0], out[1], out[2], out[3], out[4], out[5], upload<T>(a), upload<T>(b));

  auto expect = [&](int which, const char* what, auto op) {
    std::vector<std::uint8_t> want(a.size());
    for (std::size_t k = 0; k < a.size(); ++k) want[k] = op(a[k], b[k]);
    check_elements(out[static_cast<std::size_t>(which)], want, type_name<T>() + " " + what);
  };
  // C++'s operators: on NaN every comparison is false except !=.
  expect(0, "==", [](T x, T y) { return x == y; });
  expect(1, "!=", [](T x, T y) { return x != y; });
  expect(2, "<", [](T x, T y) { return x < y; });
  expect(3, "<=", [](T x, T y) { return x <= y; });
  expect(4, ">", [](T x, T y) { return x > y; });
  expect(5, ">=", [](T x, T y) { return x >= y; });
}

TEST_CASE_TEMPLATE("battery: & | ^ << >> ~ on integers, shift amounts modulo the width", T, i32, i64) {
  auto kernel = bitwise_kernel<T>();
  Random random(303 + sizeof(T));
  auto [a, b] = operand_pairs<T>(random, kPoints);
  // Shift amounts: every amount in [-130, 130] (negative and past the width),
  // then random ones.
  std::vector<T> amount(a.size());
  for (std::size_t k = 0; k < amount.size(); ++k)
    amount[k] = k < 261 ? static_cast<T>(static_cast<i64>(k) - 130) : static_cast<T>(random.integer(-70, 70));
  std::vector<Array<T>> out;
  for (int k = 0; k < 6; ++k) out.push_back(shared_runtime().array<T>(kPoints));
  run(kernel, out[0], out[1], out[2], out[3], out[4], out[5], upload<T>(a), upload<T>(b), upload<T>(amount));

  auto expect = [&](int which, const char* what, auto op) {
    std::vector<T> want(a.size());
    for (std::size_t k = 0; k < a.size(); ++k) want[k] = op(a[k], b[k], amount[k]);
    check_elements(out[static_cast<std::size_t>(which)], want, type_name<T>() + " " + what);
  };
  expect(0, "&", [](T x, T y, T) { return static_cast<T>(x & y); });
  expect(1, "|", [](T x, T y, T) { return static_cast<T>(x | y); });
  expect(2, "^", [](T x, T y, T) { return static_cast<T>(x ^ y); });
  expect(3, "<<", [](T x, T, T s) { return ir_shl(x, s); });
  expect(4, ">>", [](T x, T, T s) { return ir_shr(x, s); });
  expect(5, "~", [](T x, T, T) { return static_cast<T>(~x); });
  // A shift by the width is a shift by 0; -1 >> anything is -1.
  const auto left = out[3].host();
  CHECK(left[130 + 8 * static_cast<i64>(sizeof(T))] == a[130 + 8 * sizeof(T)]);
}

TEST_CASE("battery: bool operators & | ^ ! && || == !=") {
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
  std::vector<Array<bool>> out;
  for (int k = 0; k < 8; ++k) out.push_back(shared_runtime().array<bool>(kPoints));
  run(kernel, out[0], out[1], out[2], out[3], out[4], out[5], out[6], out[7], upload<bool>(a), upload<bool>(b));

  auto expect = [&](int which, const char* what, auto op) {
    std::vector<std::uint8_t> want(a.size());
    for (std::size_t k = 0; k < a.size(); ++k) want[k] = op(a[k] != 0, b[k] != 0);
    check_elements(out[static_cast<std::size_t>(which)], want, std::string("bool ") + what);
  };
  expect(0, "&", [](bool x, bool y) { return x && y; });
  expect(1, "|", [](bool x, bool y) { return x || y; });
  expect(2, "^", [](bool x, bool y) { return x != y; });
  expect(3, "!", [](bool x, bool) { return !x; });
  expect(4, "&&", [](bool x, bool y) { return x && y; });
  expect(5, "||", [](bool x, bool y) { return x || y; });
  expect(6, "==", [](bool x, bool y) { return x == y; });
  expect(7, "!=", [](bool x, bool y) { return x != y; });
}

TEST_CASE("battery: C++ literals in expressions take the other operand's type") {
  Kernel kernel("literals",
                [](Out<float> f, Out<i32> n, Out<double> d, Out<i64> l, In<float> x, In<i32> m) {
                  Idx i = index(0);
                  f[i] = x[i] * 2 + 0.1 - 3 / x[i];  // 2.0f, 0.1f and 3.0f
                  n[i] = m[i] * 3 + 1 - 100 / (m[i] | 1) + 7 % (m[i] & 15);
                  d[i] = 1.5 + cast<double>(x[i]) * 1e-3;
                  l[i] = i * 3 - 2;
                },
                {"f", "n", "d", "l", "x", "m"});
  Random random(505);
  auto x = random.mixed<float>(kPoints);
  auto m = random.mixed<i32>(kPoints);
  auto f = shared_runtime().array<float>(kPoints);
  auto d = shared_runtime().array<double>(kPoints);
  auto n = shared_runtime().array<i32>(kPoints);
  auto l = shared_runtime().array<i64>(kPoints);
  run(kernel, f, n, d, l, upload<float>(x), upload<i32>(m));

  std::vector<float> want_f(x.size());
  std::vector<i32> want_n(x.size());
  std::vector<double> want_d(x.size());
  std::vector<i64> want_l(x.size());
  for (std::size_t k = 0; k < x.size(); ++k) {
    const float product = x[k] * 2.0f;
    const float shifted = product + 0.1f;
    want_f[k] = shifted - 3.0f / x[k];
    want_n[k] =
        wrap_add(wrap_sub(wrap_add(wrap_mul(m[k], 3), 1), ir_div<i32>(100, m[k] | 1)), ir_rem<i32>(7, m[k] & 15));
    want_d[k] = 1.5 + static_cast<double>(x[k]) * 1e-3;
    want_l[k] = static_cast<i64>(k) * 3 - 2;
  }
  check_elements(f, want_f, "f32 with literals");
  check_elements(n, want_n, "i32 with literals");
  check_elements(d, want_d, "f64 with literals");
  check_elements(l, want_l, "index with literals");
}
