// The battery's table (battery.hpp): every kernel with its arguments and
// ranges, grouped as the battery always was (operators; conversions and
// math; control flow; reductions and atomics; shapes). Inputs start with the
// edge values of their types; lengths and shapes include empty ones, ones
// shorter than a vector, odd ones, and ones large enough that several
// threads or work-groups share them. Ranges that do not start at 0 are
// pieces, as the runtime hands them to a device.
#include "battery/battery.hpp"

#include <doctest/doctest.h>

#include <array>
#include <limits>
#include <map>

#include <canopy/canopy.hpp>

namespace battery {

namespace {

using canopy::backends::value_of;

// Large enough that a CPU device splits the range over its threads.
constexpr i64 kPoints = 20011;

const std::vector<std::pair<i64, i64>> shapes_2d{{0, 0},  {0, 5},    {5, 0},    {1, 1},     {3, 17},
                                                 {17, 3}, {1, 1003}, {1003, 1}, {123, 257}, {301, 300}};
const std::vector<std::array<i64, 3>> shapes_3d{{0, 3, 3}, {3, 0, 3},  {3, 3, 0},   {1, 1, 1},   {3, 5, 7},
                                                {7, 5, 3}, {17, 1, 9}, {1, 1, 100}, {33, 34, 35}};

/// The table being built, with each kernel's optimized IR made once.
class CaseList {
 public:
  /// The group the cases added next belong to.
  void group(std::string name) { group_ = std::move(name); }

  void add(const canopy::KernelBase& kernel, std::vector<HostArg> args, Range range,
           std::function<void(const Results&)> closed_form = {}) {
    auto& ir = kernels_[kernel.name()];
    if (!ir) ir = optimized(kernel);
    std::string over;
    for (int d = 0; d < range.dims; ++d)
      over +=
          (d ? "x" : "") + std::string("[") + std::to_string(range.begin[d]) + "," + std::to_string(range.end[d]) + ")";
    cases_.push_back({group_, kernel.name() + " over " + over, ir, std::move(args), range, std::move(closed_form)});
  }
  std::vector<Case> take() { return std::move(cases_); }

 private:
  std::string group_;
  std::map<std::string, std::shared_ptr<const canopy::ir::Kernel>> kernels_;
  std::vector<Case> cases_;
};

/// `count` arrays of `n` zeroed elements of T.
template <class T>
std::vector<HostArg> zeroed(int count, i64 n) {
  return std::vector<HostArg>(static_cast<std::size_t>(count), HostArray::filled<T>(n, T{}));
}

/// A 2-D or 3-D array of T holding `values`.
template <class T, class V>
HostArray shaped(const std::vector<V>& values, std::array<i64, 3> extents, int rank) {
  return HostArray::of<T>(values, extents, rank);
}

// ---- operators on every type they apply to ----------------------------------

template <class T>
void add_arithmetic(CaseList& list) {
  using namespace canopy;
  Kernel kernel("arithmetic_" + type_name<T>(),
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
  Random random(101 + sizeof(T) + std::is_floating_point_v<T>);
  auto [a, b] = operand_pairs<T>(random, kPoints);
  auto args = zeroed<T>(8, kPoints);
  args.push_back(HostArray::of<T>(a));
  args.push_back(HostArray::of<T>(b));
  // The edge cases the IR defines, spelled out: x / 0 == 0, x % 0 == 0,
  // MIN / -1 == MIN and MIN % -1 == 0.
  list.add(kernel, args, range_of(kPoints), [a = a, b = b](const Results& got) {
    if constexpr (std::is_integral_v<T>) {
      const auto quotient = values_of<T>(got.arrays[3]), remainder = values_of<T>(got.arrays[4]);
      i64 wrong = 0;
      for (std::size_t k = 0; k < a.size(); ++k) {
        if (b[k] == 0) wrong += quotient[k] != 0 || remainder[k] != 0;
        if (a[k] == std::numeric_limits<T>::min() && b[k] == -1)
          wrong += quotient[k] != std::numeric_limits<T>::min() || remainder[k] != 0;
      }
      CHECK_MESSAGE(wrong == 0, "x / 0, x % 0, MIN / -1 or MIN % -1 wrong at ", wrong, " points");
    }
  });
}

template <class T>
void add_comparison(CaseList& list) {
  using namespace canopy;
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
  auto args = zeroed<bool>(6, kPoints);
  args.push_back(HostArray::of<T>(a));
  args.push_back(HostArray::of<T>(b));
  // NaN compares unequal to everything, itself included.
  list.add(kernel, args, range_of(kPoints), [a = a](const Results& got) {
    const auto eq = values_of<bool>(got.arrays[0]), ne = values_of<bool>(got.arrays[1]);
    i64 wrong = 0;
    if constexpr (std::is_floating_point_v<T>)
      for (std::size_t k = 0; k < a.size(); ++k) wrong += std::isnan(a[k]) && (ne[k] != 1 || eq[k] != 0);
    CHECK_MESSAGE(wrong == 0, "a comparison with NaN is wrong at ", wrong, " points");
  });
}

template <class T>
void add_bitwise(CaseList& list) {
  using namespace canopy;
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
  auto args = zeroed<T>(6, kPoints);
  for (const auto* input : {&a, &b, &amount}) args.push_back(HostArray::of<T>(*input));
  // A shift by the width is a shift by 0.
  list.add(kernel, args, range_of(kPoints), [a = a](const Results& got) {
    CHECK(values_of<T>(got.arrays[3])[130 + 8 * sizeof(T)] == a[130 + 8 * sizeof(T)]);
  });
}

void add_operators(CaseList& list) {
  using namespace canopy;
  add_arithmetic<i32>(list);
  add_arithmetic<i64>(list);
  add_arithmetic<float>(list);
  add_arithmetic<double>(list);
  add_comparison<i32>(list);
  add_comparison<i64>(list);
  add_comparison<float>(list);
  add_comparison<double>(list);
  add_bitwise<i32>(list);
  add_bitwise<i64>(list);

  Kernel bool_ops("bool_ops",
                  [](Out<bool> both, Out<bool> either, Out<bool> differ, Out<bool> negated, Out<bool> all,
                     Out<bool> any, Out<bool> eq, Out<bool> ne, In<bool> a, In<bool> b) {
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
  auto args = zeroed<bool>(8, kPoints);
  args.push_back(HostArray::of<bool>(a));
  args.push_back(HostArray::of<bool>(b));
  list.add(bool_ops, args, range_of(kPoints), [a = a, b = b](const Results& got) {
    const auto differ = values_of<bool>(got.arrays[2]);
    i64 wrong = 0;
    for (std::size_t k = 0; k < a.size(); ++k) wrong += differ[k] != ((a[k] != 0) != (b[k] != 0) ? 1 : 0);
    CHECK(wrong == 0);
  });

  Kernel literals("literals",
                  [](Out<float> f, Out<i32> n, Out<double> d, Out<i64> l, In<float> x, In<i32> m) {
                    Idx i = index(0);
                    f[i] = x[i] * 2 + 0.1 - 3 / x[i];
                    n[i] = m[i] * 3 + 1 - 100 / (m[i] | 1) + 7 % (m[i] & 15);
                    d[i] = 1.5 + cast<double>(x[i]) * 1e-3;
                    l[i] = i * 3 - 2;
                  },
                  {"f", "n", "d", "l", "x", "m"});
  Random more(505);
  list.add(literals,
           {HostArray::filled<float>(kPoints, 0), HostArray::filled<i32>(kPoints, 0),
            HostArray::filled<double>(kPoints, 0), HostArray::filled<i64>(kPoints, 0),
            HostArray::of<float>(more.mixed<float>(kPoints)), HostArray::of<i32>(more.mixed<i32>(kPoints))},
           range_of(kPoints),
           [](const Results& got) { CHECK(values_of<i64>(got.arrays[3])[kPoints - 1] == (kPoints - 1) * 3 - 2); });
}

// ---- conversions and math functions -----------------------------------------

template <class F>
std::vector<F> near_integer_limits() {
  const double two31 = 2147483648.0, two63 = 9223372036854775808.0;
  std::vector<double> candidates{two31, -two31, two31 - 1, two31 - 0.5, -two31 - 1, -two31 + 0.5, two63, -two63,
                                 1e300, -1e300, 0.999999,  -0.999999,   1.5,        -1.5,         1e-310};
  for (double limit : {two31, -two31, two63, -two63}) {
    candidates.push_back(std::nextafter(limit, 0.0));
    candidates.push_back(std::nextafter(limit, limit * 2));
  }
  std::vector<F> values;
  for (double c : candidates)
    if (std::fabs(c) <= static_cast<double>(std::numeric_limits<F>::max())) values.push_back(static_cast<F>(c));
  values.push_back(-std::numeric_limits<F>::quiet_NaN());
  return values;
}

template <class F>
void add_casts(CaseList& list) {
  using namespace canopy;
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
    for (std::size_t k = 300; k < 1500; ++k) x[k] = static_cast<F>(random.real(-1.2e19, 1.2e19));
    for (std::size_t k = 1500; k < 3000; ++k) x[k] = static_cast<F>(random.real(-3e9, 3e9));
  }
  list.add(
      kernel,
      {HostArray::filled<bool>(kPoints, false), HostArray::filled<i32>(kPoints, 0), HostArray::filled<i64>(kPoints, 0),
       HostArray::filled<float>(kPoints, 0), HostArray::filled<double>(kPoints, 0), HostArray::of<F>(x)},
      range_of(kPoints), [x = x](const Results& got) {
        // Floats to integers: NaN gives 0 (and true), far values saturate, the rest truncate.
        if constexpr (std::is_floating_point_v<F>) {
          const auto bools = values_of<bool>(got.arrays[0]);
          const auto i32s = values_of<i32>(got.arrays[1]);
          const auto i64s = values_of<i64>(got.arrays[2]);
          i64 wrong = 0;
          for (std::size_t k = 0; k < x.size(); ++k) {
            if (std::isnan(x[k])) wrong += i32s[k] != 0 || i64s[k] != 0 || bools[k] != 1;
            if (x[k] >= F(3e9)) wrong += i32s[k] != std::numeric_limits<i32>::max();
            if (x[k] <= F(-3e9)) wrong += i32s[k] != std::numeric_limits<i32>::min();
            if (x[k] >= F(1e19)) wrong += i64s[k] != std::numeric_limits<i64>::max();
            if (x[k] <= F(-1e19)) wrong += i64s[k] != std::numeric_limits<i64>::min();
            if (x[k] == F(-2.5)) wrong += i32s[k] != -2;
            if (x[k] == F(-0.5)) wrong += i64s[k] != 0;
          }
          CHECK_MESSAGE(wrong == 0, "a cast from a NaN, a far or a negative fraction is wrong at ", wrong, " points");
        }
      });
}

template <class T>
void add_math(CaseList& list) {
  using namespace canopy;
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
    base[k] = static_cast<T>(k % 3 == 0 ? random.real(-10, 10) : random.real(0, 30));
    exponent[k] = static_cast<T>(k % 3 == 0 ? static_cast<double>(random.integer(-12, 12)) : random.real(-15, 15));
  }
  const auto& edges = Random::edge_values<T>();
  for (std::size_t k = 0; k < edges.size() * edges.size(); ++k) {
    base[k] = edges[k / edges.size()];
    exponent[k] = edges[k % edges.size()];  // (-inf)^(-2^63) among them: +0 (glibc's powl says inf)
  }
  auto args = zeroed<T>(10, kPoints);
  for (const auto* input : {&x, &y, &base, &exponent}) args.push_back(HostArray::of<T>(*input));
  // fabs clears the sign bit, of -0 and -NaN too.
  list.add(kernel, args, range_of(kPoints), [](const Results& got) {
    i64 negative = 0;
    for (T v : values_of<T>(got.arrays[7])) negative += std::signbit(v);
    CHECK(negative == 0);
  });
}

// fma rounds once on every backend. Half the points subtract the rounded
// product, so the exact result is the product's rounding error: a backend
// that rounds the product first gets 0 there.
template <class T>
void add_fma(CaseList& list) {
  using namespace canopy;
  Kernel kernel(
      "fma_" + type_name<T>(),
      [](Out<T> fused, In<T> a, In<T> b, In<T> c) { fused[index(0)] = fma(a[index(0)], b[index(0)], c[index(0)]); },
      {"fused", "a", "b", "c"});
  Random random(919 + sizeof(T));
  auto a = random.mixed<T>(kPoints);
  auto b = random.mixed<T>(kPoints);
  auto c = random.mixed<T>(kPoints);
  for (std::size_t k = 200; k < a.size(); ++k) {
    a[k] = static_cast<T>(random.real(-100, 100));
    b[k] = static_cast<T>(random.real(-100, 100));
    c[k] = k % 2 ? -(a[k] * b[k]) : static_cast<T>(random.real(-1e4, 1e4));
  }
  std::vector<HostArg> args = zeroed<T>(1, kPoints);
  for (const auto* input : {&a, &b, &c}) args.push_back(HostArray::of<T>(*input));
  list.add(kernel, args, range_of(kPoints), [a = a, b = b, c = c](const Results& got) {
    const auto fused = values_of<T>(got.arrays[0]);
    i64 wrong = 0, rounding_errors = 0;
    for (std::size_t k = 0; k < a.size(); ++k) {
      const T expected = std::fma(a[k], b[k], c[k]);  // the C library's, computed here
      wrong += !(fused[k] == expected || (std::isnan(fused[k]) && std::isnan(expected)));
      rounding_errors += k >= 200 && k % 2 && expected != 0;  // where a rounded product gives 0
    }
    CHECK_MESSAGE(wrong == 0, "fma differs from the C library's at ", wrong, " points");
    CHECK(rounding_errors > 5000);
  });
}

void add_conversions_and_math(CaseList& list) {
  using namespace canopy;
  add_casts<bool>(list);
  add_casts<i32>(list);
  add_casts<i64>(list);
  add_casts<float>(list);
  add_casts<double>(list);
  add_math<float>(list);
  add_math<double>(list);
  add_fma<float>(list);
  add_fma<double>(list);
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
  list.add(kernel,
           {HostArray::filled<i32>(kPoints, 0), HostArray::filled<i64>(kPoints, 0), HostArray::filled<i32>(kPoints, 0),
            HostArray::filled<i64>(kPoints, 0), HostArray::of<i32>(random.mixed<i32>(kPoints)),
            HostArray::of<i64>(random.mixed<i64>(kPoints))},
           range_of(kPoints), [](const Results& got) {
             // Edge value 6 is MIN, at element 3 * 6: abs(MIN) wraps to MIN.
             CHECK(values_of<i32>(got.arrays[0])[3 * 6] == std::numeric_limits<i32>::min());
           });
}

// ---- control flow, loops and scalar parameters ------------------------------

void add_control_flow(CaseList& list) {
  using namespace canopy;
  Random random(909);

  Kernel select_all("select_all",
                    [](Out<double> f, Out<i32> n, Out<bool> b, Out<float> g, Out<i64> l, In<bool> c, In<double> x,
                       In<double> y, In<i32> m) {
                      Idx i = index(0);
                      f[i] = select(c[i], x[i], y[i]);
                      n[i] = select(x[i] < y[i], m[i], -m[i]);
                      b[i] = select(c[i], x[i] > 0.0, m[i] > 0);
                      g[i] = select(!c[i], cast<float>(x[i]), 1.5f);
                      l[i] = select(m[i] > 0, i, cast<i64>(m[i]));
                    },
                    {"f", "n", "b", "g", "l", "c", "x", "y", "m"});
  list.add(select_all,
           {HostArray::filled<double>(kPoints, 0), HostArray::filled<i32>(kPoints, 0),
            HostArray::filled<bool>(kPoints, false), HostArray::filled<float>(kPoints, 0),
            HostArray::filled<i64>(kPoints, 0), HostArray::of<bool>(random.values<bool>(kPoints, 0, 1)),
            HostArray::of<double>(random.mixed<double>(kPoints)), HostArray::of<double>(random.mixed<double>(kPoints)),
            HostArray::of<i32>(random.mixed<i32>(kPoints))},
           range_of(kPoints));

  Kernel var_updates("var_updates",
                     [](Out<i32> n, Out<double> d, Out<bool> flags, In<i32> a, In<i32> b, In<double> x) {
                       Idx i = index(0);
                       Var<i32> v("v", a[i]);
                       v += b[i];
                       v *= 3;
                       v -= a[i];
                       v /= b[i];
                       v %= 1000;
                       v &= 0x0FFF0FFF;
                       v |= 0x100;
                       v ^= a[i];
                       n[i] = v;
                       Var<double> w = x[i];
                       w += 1.5;
                       w *= x[i];
                       w -= 2;
                       w /= 3;
                       w %= 7.5;
                       d[i] = w;
                       Var<bool> flag("flag", a[i] > b[i]);
                       flag |= x[i] > 0.0;
                       flag &= v != 0;
                       flag ^= b[i] < 0;
                       flags[i] = flag;
                     },
                     {"n", "d", "flags", "a", "b", "x"});
  auto [a, b] = operand_pairs<i32>(random, kPoints);
  list.add(var_updates,
           {HostArray::filled<i32>(kPoints, 0), HostArray::filled<double>(kPoints, 0),
            HostArray::filled<bool>(kPoints, false), HostArray::of<i32>(a), HostArray::of<i32>(b),
            HostArray::of<double>(random.mixed<double>(kPoints))},
           range_of(kPoints));

  Kernel piecewise("piecewise",
                   [](Out<double> y, Out<i32> branch, In<double> x) {
                     Idx i = index(0);
                     Var<double> v("v", 0.0);
                     If(x[i] < -1.0,
                        [&] {
                          v = -1.0;
                          branch[i] = 0;
                        })
                         .ElseIf(x[i] < 0.0,
                                 [&] {
                                   v = x[i] * x[i];
                                   branch[i] = 1;
                                 })
                         .ElseIf(x[i] < 1.0,
                                 [&] {
                                   v = sqrt(x[i]);
                                   branch[i] = 2;
                                 })
                         .Else([&] {
                           If(x[i] > 100.0, [&] { v = 100.0; }).Else([&] { v = x[i]; });
                           branch[i] = 3;
                         });
                     If(v == 0.0, [&] { v = 42.0; });
                     y[i] = v;
                   },
                   {"y", "branch", "x"});
  auto x = random.mixed<double>(kPoints);
  for (std::size_t k = 100; k < x.size(); k += 2) x[k] = random.real(-3, 3);
  list.add(piecewise,
           {HostArray::filled<double>(kPoints, 0), HostArray::filled<i32>(kPoints, -1), HostArray::of<double>(x)},
           range_of(kPoints), [x = x](const Results& got) {
             const auto branch = values_of<i32>(got.arrays[1]);
             i64 wrong = 0;
             for (std::size_t k = 0; k < x.size(); ++k) wrong += x[k] < -1.0 && branch[k] != 0;
             CHECK(wrong == 0);
           });

  Kernel nested_loops("nested_loops",
                      [](Out<i64> out, In<i32> lo, In<i32> hi) {
                        Idx i = index(0);
                        Var<i64> acc("acc", 0);
                        For(cast<i64>(lo[i]), cast<i64>(hi[i]), 3, [&](Idx j) {
                          For(0, j % 5, [&](Idx k) { acc += j * 10 + k; });
                          acc ^= j;
                        });
                        out[i] = acc;
                      },
                      {"out", "lo", "hi"});
  list.add(nested_loops,
           {HostArray::filled<i64>(1003, 0), HostArray::of<i32>(random.values<i32>(1003, -20, 20)),
            HostArray::of<i32>(random.values<i32>(1003, -20, 40))},
           range_of(1003));

  Kernel counted_i32("counted_i32",
                     [](Out<i32> out, Out<i64> tail, In<i32> count, Val<i32> bias) {
                       Idx i = index(0);
                       Var<i32> acc("acc", bias);
                       For(0, count[i], [&](Value<i32> k) { acc += k * k - bias; });
                       out[i] = acc;
                       Var<i64> t("t", 0);
                       Idx k;
                       For(k, i % 17, 17, [&] { t += k; });
                       tail[i] = t;
                     },
                     {"out", "tail", "count", "bias"});
  list.add(counted_i32,
           {HostArray::filled<i32>(1003, 0), HostArray::filled<i64>(1003, 0),
            HostArray::of<i32>(random.values<i32>(1003, -5, 60)), scalar<i32>(-7)},
           range_of(1003));

  // Steps past the end of the type must not wrap around: the loop runs
  // while the counter is below the end, and the counter never overflows.
  Kernel loop_to_the_top("loop_to_the_top",
                         [](Out<i32> count32, Out<i64> count64, In<i32> start) {
                           Idx i = index(0);
                           Var<i32> n32("n32", 0);
                           For(start[i], std::numeric_limits<i32>::max(), 1000000007, [&](Value<i32>) { n32 += 1; });
                           count32[i] = n32;
                           Var<i64> n64("n64", 0);
                           For(cast<i64>(start[i]) * 4294967296, std::numeric_limits<i64>::max(), 1000000000000000007,
                               [&](Idx) { n64 += 1; });
                           count64[i] = n64;
                         },
                         {"count32", "count64", "start"});
  const std::vector<i32> start{std::numeric_limits<i32>::max(), std::numeric_limits<i32>::max() - 1, 0, -5, 2147000000,
                               std::numeric_limits<i32>::min()};
  const auto starts = static_cast<i64>(start.size());
  list.add(loop_to_the_top,
           {HostArray::filled<i32>(starts, -1), HostArray::filled<i64>(starts, -1), HostArray::of<i32>(start)},
           range_of(starts), [](const Results& got) {
             const auto count32 = values_of<i32>(got.arrays[0]);
             CHECK(count32[0] == 0);  // start == end: no iteration
             CHECK(count32[1] == 1);
             CHECK(count32[2] == 3);  // 0, 1000000007, 2000000014
           });

  Kernel spmv("spmv_csr",
              [](Out<double> y, In<i64> row_start, In<i32> column, In<double> value, In<double> xs) {
                Idx r = index(0);
                Var<double> acc("acc", 0.0);
                For(row_start[r], row_start[r + 1], [&](Idx k) { acc += value[k] * xs[column[k]]; });
                y[r] = acc;
              },
              {"y", "row_start", "column", "value", "x"});
  for (i64 rows : {i64{0}, i64{1}, i64{17}, i64{1003}, i64{5003}}) {
    const i64 columns = 777;
    std::vector<i64> row_start{0};
    for (i64 r = 0; r < rows; ++r) row_start.push_back(row_start.back() + random.integer(0, 30));
    const i64 nonzeros = std::max<i64>(row_start.back(), 1);
    list.add(spmv,
             {HostArray::filled<double>(rows, 0), HostArray::of<i64>(row_start),
              HostArray::of<i32>(random.values<i32>(nonzeros, 0, columns - 1)),
              HostArray::of<double>(random.values<double>(nonzeros, -1, 1)),
              HostArray::of<double>(random.values<double>(columns, -10, 10))},
             range_of(rows));
  }

  Kernel inout_updates("inout_updates",
                       [](InOut<double> y, InOut<i32> c, InOut<float> g, In<double> xs, In<i32> m) {
                         Idx i = index(0);
                         y[i] += xs[i];
                         y[i] *= 0.5;
                         y[i] -= 1;
                         y[i] /= xs[i];
                         c[i] += m[i];
                         c[i] *= 3;
                         c[i] -= 7;
                         c[i] /= m[i];
                         g[i] = g[i] * g[i];
                         g[i] += g[i];
                       },
                       {"y", "c", "g", "x", "m"});
  for (i64 n : lengths) {
    list.add(inout_updates,
             {HostArray::of<double>(random.mixed<double>(n)), HostArray::of<i32>(random.mixed<i32>(n)),
              HostArray::of<float>(random.mixed<float>(n)), HostArray::of<double>(random.mixed<double>(n)),
              HostArray::of<i32>(random.mixed<i32>(n))},
             range_of(n));
  }

  Kernel scalars("scalars",
                 [](Out<double> d, Out<i64> l, Out<float> f, In<double> xs, Val<bool> flip, Val<i32> sa, Val<i64> sb,
                    Val<float> s, Val<double> t) {
                   Idx i = index(0);
                   d[i] = select(flip, -xs[i], xs[i]) * t + cast<double>(s);
                   l[i] = cast<i64>(sa) * i + sb;
                   f[i] = s * cast<float>(sa);
                 },
                 {"d", "l", "f", "x", "flip", "a", "b", "s", "t"});
  const auto values = random.values<double>(1003, -100, 100);
  struct Scalars {
    bool flip;
    i32 a;
    i64 b;
    float s;
    double t;
  };
  for (Scalars sc : {Scalars{false, 3, -5, 0.25f, 2.0},
                     Scalars{true, std::numeric_limits<i32>::min(), std::numeric_limits<i64>::max(), -1e30f, -0.125}})
    list.add(scalars,
             {HostArray::filled<double>(1003, 0), HostArray::filled<i64>(1003, 0), HostArray::filled<float>(1003, 0),
              HostArray::of<double>(values), scalar(sc.flip), scalar(sc.a), scalar(sc.b), scalar(sc.s), scalar(sc.t)},
             range_of(1003), [sc](const Results& got) {
               // a * i + b at i = 2, wrapping.
               CHECK(values_of<i64>(got.arrays[1])[2] ==
                     static_cast<i64>(static_cast<std::uint64_t>(sc.a) * 2 + static_cast<std::uint64_t>(sc.b)));
             });
}

// ---- reductions and atomic adds ---------------------------------------------

template <class T>
void add_reductions(CaseList& list) {
  using namespace canopy;
  Kernel kernel("reduce_" + type_name<T>(),
                [](In<T> x, Sum<T> total, Min<T> lowest, Max<T> highest) {
                  Idx i = index(0);
                  total += x[i];
                  lowest.combine(x[i]);
                  highest.combine(x[i]);
                },
                {"x", "total", "lowest", "highest"});
  Random random(1717 + sizeof(T) + std::is_floating_point_v<T>);
  for (i64 n : lengths) {
    std::vector<T> x = std::is_integral_v<T> ? random.mixed<T>(n) : random.values<T>(n, -1000, 1000);
    if constexpr (std::is_floating_point_v<T>)
      for (std::size_t k = 0; k < x.size(); k += 11) x[k] *= static_cast<T>(1e-4);
    // Over nothing: the identities (the largest value for min, the lowest for max).
    list.add(kernel, {HostArray::of<T>(x), ReductionArg{}, ReductionArg{}, ReductionArg{}}, range_of(n),
             [n](const Results& got) {
               if (n > 0) return;
               CHECK(value_of<T>(got.reductions.at(0)) == T(0));
               if constexpr (std::is_floating_point_v<T>) {
                 CHECK(value_of<T>(got.reductions.at(1)) == std::numeric_limits<T>::infinity());
                 CHECK(value_of<T>(got.reductions.at(2)) == -std::numeric_limits<T>::infinity());
               } else {
                 CHECK(value_of<T>(got.reductions.at(1)) == std::numeric_limits<T>::max());
                 CHECK(value_of<T>(got.reductions.at(2)) == std::numeric_limits<T>::min());
               }
             });
  }
  // A piece that starts past 0.
  auto x = random.values<T>(1003, -100, 100);
  list.add(kernel, {HostArray::of<T>(x), ReductionArg{}, ReductionArg{}, ReductionArg{}}, range_of({5}, {998}));

  // Float sums of integers small enough are exact in any order.
  if constexpr (std::is_floating_point_v<T>) {
    const double limit = std::is_same_v<T, float> ? 100 : 1e6;
    for (i64 n : lengths) {
      std::vector<T> whole(static_cast<std::size_t>(n));
      for (auto& v : whole) v = static_cast<T>(random.integer(static_cast<i64>(-limit), static_cast<i64>(limit)));
      double exact = 0;
      for (T v : whole) exact += v;
      list.add(kernel, {HostArray::of<T>(whole), ReductionArg{}, ReductionArg{}, ReductionArg{}}, range_of(n),
               [exact](const Results& got) { CHECK(value_of<T>(got.reductions.at(0)) == static_cast<T>(exact)); });
    }
  }
}

template <class T>
void add_nan_reductions(CaseList& list) {
  using namespace canopy;
  Kernel kernel("minmax_nan_" + type_name<T>(),
                [](In<T> x, Min<T> lowest, Max<T> highest) {
                  Idx i = index(0);
                  lowest.combine(x[i]);
                  highest.combine(x[i]);
                },
                {"x", "lowest", "highest"});
  Random random(1919 + sizeof(T));
  for (i64 n : lengths) {
    auto x = random.mixed<T>(n);
    for (std::size_t k = 5; k < x.size(); k += 13) x[k] = std::numeric_limits<T>::quiet_NaN();
    list.add(kernel, {HostArray::of<T>(x), ReductionArg{}, ReductionArg{}}, range_of(n));
  }
  // Only NaN: the identities.
  list.add(kernel,
           {HostArray::of<T>(std::vector<T>(3, std::numeric_limits<T>::quiet_NaN())), ReductionArg{}, ReductionArg{}},
           range_of(3), [](const Results& got) {
             CHECK(value_of<T>(got.reductions.at(0)) == std::numeric_limits<T>::infinity());
             CHECK(value_of<T>(got.reductions.at(1)) == -std::numeric_limits<T>::infinity());
           });
}

void add_reductions_and_atomics(CaseList& list) {
  using namespace canopy;
  add_reductions<i32>(list);
  add_reductions<i64>(list);
  add_reductions<float>(list);
  add_reductions<double>(list);
  add_nan_reductions<float>(list);
  add_nan_reductions<double>(list);
  Random random(2020);

  Kernel stats(
      "conditional_stats",
      [](In<double> x, Val<double> threshold, Sum<i64> count, Sum<double> above, Max<i32> last, Min<float> smallest) {
        Idx i = index(0);
        If(x[i] > threshold, [&] {
          count += 1;
          above += x[i];
          last.combine(cast<i32>(i));
        });
        smallest.combine(cast<float>(x[i]));
      },
      {"x", "threshold", "count", "above", "last", "smallest"});
  for (i64 n : lengths) {
    auto x = random.values<double>(n, -50, 50);
    list.add(stats,
             {HostArray::of<double>(x), scalar(20.5), ReductionArg{}, ReductionArg{}, ReductionArg{}, ReductionArg{}},
             range_of(n));
  }

  Kernel dot("dot",
             [](In<float> a, In<float> b, Sum<float> narrow, Sum<double> wide) {
               Idx i = index(0);
               narrow += a[i] * b[i];
               wide += cast<double>(a[i]) * cast<double>(b[i]);
             },
             {"a", "b", "narrow", "wide"});
  for (i64 n : lengths) {
    auto a = random.values<float>(n, -2, 2), b = random.values<float>(n, -2, 2);
    list.add(dot, {HostArray::of<float>(a), HostArray::of<float>(b), ReductionArg{}, ReductionArg{}}, range_of(n));
  }

  Kernel reduce_2d("reduce_2d",
                   [](In<double, 2> m, Sum<double> total, Max<double> peak, Min<i64> first_negative_row) {
                     Idx i = index(0), j = index(1);
                     total += m(i, j);
                     peak.combine(m(i, j));
                     If(m(i, j) < 0.0, [&] { first_negative_row.combine(i); });
                   },
                   {"m", "total", "peak", "first_negative_row"});
  for (auto [rows, cols] : {std::pair<i64, i64>{0, 4}, {4, 0}, {1, 1}, {3, 17}, {1003, 3}, {257, 129}}) {
    // Integers, few of them negative: every order of summing them is exact.
    std::vector<double> m(static_cast<std::size_t>(rows * cols));
    for (auto& v : m) v = static_cast<double>(random.integer(0, 1000)) * (random.integer(0, 20) == 0 ? -1 : 1);
    const auto array = shaped<double>(m, {rows, cols, 1}, 2);
    list.add(reduce_2d, {array, ReductionArg{}, ReductionArg{}, ReductionArg{}}, range_of({0, 0}, {rows, cols}));
    if (rows > 2 && cols > 2)
      list.add(reduce_2d, {array, ReductionArg{}, ReductionArg{}, ReductionArg{}},
               range_of({1, 2}, {rows - 1, cols - 1}));
  }
  {
    std::vector<double> m(257 * 129);
    for (auto& v : m) v = static_cast<double>(random.integer(-1000, 1000));
    list.add(reduce_2d, {shaped<double>(m, {257, 129, 1}, 2), ReductionArg{}, ReductionArg{}, ReductionArg{}},
             range_of({3, 5}, {250, 100}));
  }

  Kernel reduce_3d("reduce_3d",
                   [](In<i32, 3> v, Sum<i64> total, Max<i64> far) {
                     Idx i = index(0), j = index(1), k = index(2);
                     total += cast<i64>(v(i, j, k)) * (i + 2 * j + 3 * k);
                     far.combine(i * 10000 + j * 100 + k);
                   },
                   {"v", "total", "far"});
  const i64 n0 = 9, n1 = 13, n2 = 21;
  const auto cube = shaped<i32>(random.values<i32>(n0 * n1 * n2, -1000, 1000), {n0, n1, n2}, 3);
  for (auto range : {range_of({0, 0, 0}, {n0, n1, n2}), range_of({2, 3, 4}, {7, 11, 20}),
                     range_of({8, 0, 20}, {9, n1, 21}), range_of({3, 3, 3}, {3, 9, 9})})
    list.add(reduce_3d, {cube, ReductionArg{}, ReductionArg{}}, range, [range](const Results& got) {
      // The last point is the farthest.
      if (!range.empty())
        CHECK(got.reductions.at(1).int_value ==
              (range.end[0] - 1) * 10000 + (range.end[1] - 1) * 100 + (range.end[2] - 1));
    });

  Kernel histogram("histogram",
                   [](InOut<i32> h32, InOut<i64> h64, InOut<float> hf, InOut<double> hd, InOut<double> hx, In<i32> bin,
                      In<i32> weight, In<double> x) {
                     Idx i = index(0);
                     atomic_add(h32[bin[i]], weight[i]);
                     atomic_add(h64[bin[i]], cast<i64>(weight[i]) * 1000000000);
                     atomic_add(hf[bin[i]], cast<float>(weight[i]));
                     atomic_add(hd[bin[i]], cast<double>(weight[i]) * 0.5);
                     atomic_add(hx[bin[i]], x[i]);
                   },
                   {"h32", "h64", "hf", "hd", "hx", "bin", "weight", "x"});
  const i64 bins = 7;
  std::vector<i32> start(bins);
  for (i64 b = 0; b < bins; ++b) start[static_cast<std::size_t>(b)] = static_cast<i32>(1000 + b);
  for (i64 n : lengths) {
    // Multiples of 2^-10 below 1: every order of adding them is exact.
    std::vector<double> x(static_cast<std::size_t>(n));
    for (auto& v : x) v = static_cast<double>(random.integer(-1024, 1024)) / 1024;
    list.add(histogram,
             {HostArray::of<i32>(start), HostArray::of<i64>(start), HostArray::of<float>(start),
              HostArray::of<double>(start), HostArray::of<double>(start),
              HostArray::of<i32>(random.values<i32>(n, 0, bins - 1)),
              HostArray::of<i32>(random.values<i32>(n, -100, 100)), HostArray::of<double>(x)},
             range_of(n));
  }

  Kernel histogram_2d("histogram_2d",
                      [](InOut<i64, 2> h, In<i32> a, In<i32> b) {
                        Idx i = index(0);
                        atomic_add(h(a[i], b[i]), 1);
                        atomic_add(h(0, 0), i);
                      },
                      {"h", "a", "b"});
  list.add(histogram_2d,
           {HostArray::filled<i64>(5 * 9, 0, {5, 9, 1}, 2), HostArray::of<i32>(random.values<i32>(100003, 0, 4)),
            HostArray::of<i32>(random.values<i32>(100003, 0, 8))},
           range_of(100003), [](const Results& got) {
             // One count per point, and 0 + 1 + ... + (n - 1) into h(0, 0).
             const i64 n = 100003;
             i64 total = 0;
             for (i64 count : values_of<i64>(got.arrays[0])) total += count;
             CHECK(total == n + n * (n - 1) / 2);
           });

  Kernel column_sums("column_sums",
                     [](InOut<double> sums, In<double, 2> m) {
                       Idx i = index(0), j = index(1);
                       atomic_add(sums[j], m(i, j));
                     },
                     {"sums", "m"});
  for (auto [rows, cols] : {std::pair<i64, i64>{0, 3}, {1, 1}, {1003, 7}, {3, 1003}, {20011, 5}}) {
    std::vector<double> m(static_cast<std::size_t>(rows * cols));
    for (auto& v : m) v = static_cast<double>(random.integer(-50, 50));
    list.add(column_sums, {HostArray::filled<double>(cols, 0), shaped<double>(m, {rows, cols, 1}, 2)},
             range_of({0, 0}, {rows, cols}));
  }
}

// ---- 1-D, 2-D and 3-D index spaces, access patterns and pieces --------------

void add_shapes(CaseList& list) {
  using namespace canopy;
  Random random(3131);

  Kernel triad("triad",
               [](Out<double> a, In<double> b, In<double> c, Val<double> s) {
                 Idx i = index(0);
                 a[i] = b[i] + s * c[i];
               },
               {"a", "b", "c", "s"});
  for (i64 n : lengths)
    list.add(triad,
             {HostArray::filled<double>(n, 0), HostArray::of<double>(random.values<double>(n, -1e3, 1e3)),
              HostArray::of<double>(random.values<double>(n, -1e3, 1e3)), scalar(0.4)},
             range_of(n));
  list.add(triad,
           {HostArray::filled<double>(1003, -1), HostArray::of<double>(random.values<double>(1003, -1e3, 1e3)),
            HostArray::of<double>(random.values<double>(1003, -1e3, 1e3)), scalar(0.4)},
           range_of({100}, {900}));

  Kernel saxpy("saxpy",
               [](InOut<float> y, In<float> x, Val<float> a) {
                 Idx i = index(0);
                 y[i] = a * x[i] + y[i];
               },
               {"y", "x", "a"});
  Kernel index_math("index_math",
                    [](Out<i64> squares, Out<i32> mixed) {
                      Idx i = index(0);
                      squares[i] = i * i - 3;
                      mixed[i] = (cast<i32>(i) ^ 0x55) * 7 - cast<i32>(i >> 2);
                    },
                    {"squares", "mixed"});
  for (i64 n : lengths) {
    list.add(saxpy,
             {HostArray::of<float>(random.values<float>(n, -10, 10)),
              HostArray::of<float>(random.values<float>(n, -10, 10)), scalar(-1.75f)},
             range_of(n));
    list.add(index_math, {HostArray::filled<i64>(n, 0), HostArray::filled<i32>(n, 0)}, range_of(n));
  }

  Kernel gather("gather",
                [](Out<double> out, Out<i64> out64, In<double> table, In<i64> table64, In<i32> idx, In<i64> idx64) {
                  Idx i = index(0);
                  out[i] = table[idx[i]] + table[idx64[i]];
                  out64[i] = table64[idx[idx[i] % 17]];
                },
                {"out", "out64", "table", "table64", "idx", "idx64"});
  const i64 table_size = 4099;
  const auto table = random.values<double>(table_size, -1, 1);
  const auto table64 = random.mixed<i64>(table_size);
  for (i64 n : lengths)
    list.add(gather,
             {HostArray::filled<double>(n, 0), HostArray::filled<i64>(n, 0), HostArray::of<double>(table),
              HostArray::of<i64>(table64),
              // idx[idx[i] % 17] reads one of the first 17 whatever n is.
              HostArray::of<i32>(random.values<i32>(std::max<i64>(n, 17), 0, table_size - 1)),
              HostArray::of<i64>(random.values<i64>(n, 0, table_size - 1))},
             range_of(n));

  Kernel strided("strided",
                 [](Out<float> out, In<float> a, Val<i64> stride, Val<i64> offset) {
                   Idx i = index(0);
                   out[i] = a[i * stride + offset];
                 },
                 {"out", "a", "stride", "offset"});
  for (i64 n : lengths)
    for (auto [stride, offset] : {std::pair<i64, i64>{2, 1}, {3, 0}, {7, 5}}) {
      list.add(
          strided,
          {HostArray::filled<float>(n, 0), HostArray::of<float>(random.values<float>(n * stride + offset + 1, -5, 5)),
           scalar(stride), scalar(offset)},
          range_of(n));
    }
  Kernel reversed("reversed",
                  [](Out<i32> out, Out<i32> scattered, In<i32> a) {
                    Idx i = index(0);
                    Idx last = a.extent(0) - 1;
                    out[i] = a[last - i];
                    scattered[last - i] = a[i] * 2;
                  },
                  {"out", "scattered", "a"});
  for (i64 n : lengths)
    list.add(reversed,
             {HostArray::filled<i32>(n, 0), HostArray::filled<i32>(n, 0), HostArray::of<i32>(random.mixed<i32>(n))},
             range_of(n));

  Kernel stencil_1d("stencil_1d",
                    [](Out<double> out, In<double> u) {
                      Idx i = index(0);
                      If(i == 0 || i == u.extent(0) - 1, [&] { out[i] = u[i]; }).Else([&] {
                        out[i] = 0.25 * u[i - 1] + 0.5 * u[i] + 0.25 * u[i + 1];
                      });
                    },
                    {"out", "u"});
  for (i64 n : lengths)
    list.add(stencil_1d, {HostArray::filled<double>(n, 0), HostArray::of<double>(random.values<double>(n, -1, 1))},
             range_of(n));
  list.add(stencil_1d, {HostArray::filled<double>(1003, 7), HostArray::of<double>(random.values<double>(1003, -1, 1))},
           range_of({1}, {1002}));

  Kernel transpose("transpose",
                   [](Out<i64, 2> t, In<i64, 2> m) {
                     Idx i = index(0), j = index(1);
                     t(j, i) = m(i, j);
                   },
                   {"t", "m"});
  Kernel stencil_2d("stencil_2d",
                    [](Out<float, 2> out, In<float, 2> u) {
                      Idx i = index(0), j = index(1);
                      Idx rows = u.extent(0), cols = u.extent(1);
                      If(i > 0 && i < rows - 1 && j > 0 && j < cols - 1, [&] {
                        out(i, j) = u(i, j) * 4 - u(i - 1, j) - u(i + 1, j) - u(i, j - 1) - u(i, j + 1);
                      }).Else([&] { out(i, j) = u(i, j); });
                    },
                    {"out", "u"});
  for (auto [rows, cols] : shapes_2d) {
    list.add(transpose,
             {HostArray::filled<i64>(rows * cols, 0, {cols, rows, 1}, 2),
              shaped<i64>(random.mixed<i64>(rows * cols), {rows, cols, 1}, 2)},
             range_of({0, 0}, {rows, cols}));
    list.add(stencil_2d,
             {HostArray::filled<float>(rows * cols, 0, {rows, cols, 1}, 2),
              shaped<float>(random.values<float>(rows * cols, -1, 1), {rows, cols, 1}, 2)},
             range_of({0, 0}, {rows, cols}));
  }
  list.add(stencil_2d,
           {HostArray::filled<float>(123 * 257, 5, {123, 257, 1}, 2),
            shaped<float>(random.values<float>(123 * 257, -1, 1), {123, 257, 1}, 2)},
           range_of({1, 1}, {122, 256}));

  Kernel iota("iota_3d",
              [](Out<i64, 3> out) {
                Idx i = index(0), j = index(1), k = index(2);
                out(i, j, k) = (i * 1000 + j) * 1000 + k;
              },
              {"out"});
  Kernel permute("permute_3d",
                 [](Out<double, 3> out, In<double, 3> in) {
                   Idx i = index(0), j = index(1), k = index(2);
                   out(i, j, k) = in(k, i, j);
                 },
                 {"out", "src"});
  Kernel stencil_3d("stencil_3d",
                    [](Out<double, 3> out, In<double, 3> u) {
                      Idx i = index(0), j = index(1), k = index(2);
                      Value<bool> inside =
                          i > 0 && j > 0 && k > 0 && i < u.extent(0) - 1 && j < u.extent(1) - 1 && k < u.extent(2) - 1;
                      If(inside, [&] {
                        out(i, j, k) = u(i - 1, j, k) + u(i + 1, j, k) + u(i, j - 1, k) + u(i, j + 1, k) +
                                       u(i, j, k - 1) + u(i, j, k + 1) - 6.0 * u(i, j, k);
                      }).Else([&] { out(i, j, k) = 0.0; });
                    },
                    {"out", "u"});
  for (const auto& e : shapes_3d) {
    const i64 points = e[0] * e[1] * e[2];
    const auto whole = range_of({0, 0, 0}, {e[0], e[1], e[2]});
    list.add(iota, {HostArray::filled<i64>(points, 0, e, 3)}, whole, [e = e, points](const Results& got) {
      if (points > 0) CHECK(values_of<i64>(got.arrays[0]).back() == ((e[0] - 1) * 1000 + e[1] - 1) * 1000 + e[2] - 1);
    });
    list.add(permute,
             {HostArray::filled<double>(points, 0, e, 3),
              shaped<double>(random.values<double>(points, -1, 1), {e[2], e[0], e[1]}, 3)},
             whole);
    list.add(stencil_3d,
             {HostArray::filled<double>(points, 0, e, 3), shaped<double>(random.values<double>(points, -1, 1), e, 3)},
             whole);
  }
  list.add(stencil_3d,
           {HostArray::filled<double>(33 * 34 * 35, 9, {33, 34, 35}, 3),
            shaped<double>(random.values<double>(33 * 34 * 35, -1, 1), {33, 34, 35}, 3)},
           range_of({1, 2, 3}, {32, 30, 34}));

  Kernel affine("affine",
                [](Out<double> y, In<double> x, Val<double> a, Val<double> b) {
                  Idx i = index(0);
                  y[i] = a * x[i] + b;
                },
                {"y", "x", "a", "b"});
  list.add(affine,
           {HostArray::filled<double>(1003, 0), HostArray::of<double>(random.values<double>(1003, -4, 4)), scalar(2.0),
            scalar(1.0)},
           range_of(1003));
  // One array passed twice, as Out and In (in place).
  for (i64 n : lengths) {
    auto x = random.values<double>(n, -4, 4);
    list.add(affine, {HostArray::of<double>(x), SameArrayAs{0}, scalar(4.0), scalar(0.5)}, range_of(n),
             [x](const Results& got) {
               const auto y = values_of<double>(got.arrays[0]);
               i64 wrong = 0;
               for (std::size_t k = 0; k < x.size(); ++k) wrong += y[k] != 4.0 * x[k] + 0.5;
               CHECK(wrong == 0);
             });
  }

  // Pieces of a 1-D range run only their points (a device's global offset):
  // the points outside keep the -7 they started with.
  const i64 n = 100003;
  const auto b = HostArray::of<double>(random.values<double>(n, -1e3, 1e3));
  const auto c = HostArray::of<double>(random.values<double>(n, -1e3, 1e3));
  for (auto [begin, end] : {std::pair<i64, i64>{0, n},
                            {1, n},
                            {0, n - 1},
                            {1023, 1025},
                            {1024, 2048},
                            {5, 6},
                            {4097, 99999},
                            {n - 1, n},
                            {50000, 50000},
                            {77, 3}})
    list.add(triad, {HostArray::filled<double>(n, -7.0), b, c, scalar(0.4)}, range_of({begin}, {end}));

  // Pieces of 2-D and 3-D ranges.
  const i64 rows = 301, cols = 300;
  const auto u = shaped<float>(random.values<float>(rows * cols, -1, 1), {rows, cols, 1}, 2);
  for (const Range& range :
       {range_of({1, 1}, {rows - 1, cols - 1}), range_of({150, 0}, {rows, cols}), range_of({0, 64}, {rows, 129}),
        range_of({17, 3}, {18, 297}), range_of({100, 100}, {100, 200})})
    list.add(stencil_2d, {HostArray::filled<float>(rows * cols, 9.0f, {rows, cols, 1}, 2), u}, range);
  const std::array<i64, 3> extents{33, 34, 35};
  for (const Range& range : {range_of({1, 2, 3}, {32, 33, 34}), range_of({0, 0, 17}, {33, 34, 35}),
                             range_of({16, 0, 0}, {17, 34, 35}), range_of({5, 5, 5}, {6, 6, 6})})
    list.add(iota, {HostArray::filled<i64>(extents[0] * extents[1] * extents[2], -1, extents, 3)}, range);
}

}  // namespace

const std::vector<std::string>& groups() {
  static const std::vector<std::string> names{"operators", "math", "control", "reductions", "shapes"};
  return names;
}

const std::vector<Case>& cases() {
  static const std::vector<Case> table = [] {
    CaseList list;
    list.group("operators");
    add_operators(list);
    list.group("math");
    add_conversions_and_math(list);
    list.group("control");
    add_control_flow(list);
    list.group("reductions");
    add_reductions_and_atomics(list);
    list.group("shapes");
    add_shapes(list);
    return list.take();
  }();
  return table;
}

std::vector<std::shared_ptr<const canopy::ir::Kernel>> kernels() {
  std::vector<std::shared_ptr<const canopy::ir::Kernel>> distinct;
  for (const Case& c : cases())
    if (std::find(distinct.begin(), distinct.end(), c.kernel) == distinct.end()) distinct.push_back(c.kernel);
  return distinct;
}

}  // namespace battery
