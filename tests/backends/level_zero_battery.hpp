// The JIT battery (tests/jit/battery_*.cpp) as a list of cases for the SPIR-V
// path: every kernel of the battery (the same names and bodies), each with
// inputs from the battery's generators (edge values first), an index range
// (whole ranges of several lengths and shapes, and pieces that do not start
// at 0) and how closely a device must match the CPU device on it. The
// SPIR-V tests validate every kernel of the list with spirv-val and run every
// case through the SPIR-V kernel ABI on an OpenCL device, against the CPU.
//
// Sizes are smaller than the battery's own (a few thousand points for the
// operator kernels, up to 100003 for reductions and atomics) so that the
// whole list builds and runs on PoCL in reasonable time.
#pragma once

#include <array>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backends/opencl_support.hpp"

namespace level_zero_test {

using battery::i32;
using battery::i64;
using opencl_test::HostArg;
using opencl_test::HostArray;
using opencl_test::Tolerance;

/// One run of one battery kernel.
struct BatteryCase {
  std::string what;                                  ///< "<kernel> over <range>"
  std::shared_ptr<const canopy::ir::Kernel> kernel;  ///< after the IR's optimization pipeline
  std::vector<HostArg> args;
  canopy::backends::Range range;
  Tolerance tolerance;
};

namespace detail {

constexpr i64 kPoints = 4099;
/// OpenCL's bound for exp, log, sin, cos (4 ulp) plus the C library's 1.
constexpr std::uint64_t kTranscendentalUlp = 5;
/// OpenCL's bound for pow (16 ulp) plus the C library's 1.
constexpr std::uint64_t kPowUlp = 17;

/// The cases being built, with the kernels' optimized IR made once each.
class CaseList {
 public:
  template <class K>
  void add(const K& kernel, std::vector<HostArg> args, canopy::backends::Range range, Tolerance tolerance = {}) {
    auto& ir = kernels_[kernel.name()];
    if (!ir) ir = opencl_test::optimized(kernel);
    std::string over;
    for (int d = 0; d < range.dims; ++d)
      over +=
          (d ? "x" : "") + std::string("[") + std::to_string(range.begin[d]) + "," + std::to_string(range.end[d]) + ")";
    cases_.push_back({kernel.name() + " over " + over, ir, std::move(args), range, std::move(tolerance)});
  }
  std::vector<BatteryCase> take() { return std::move(cases_); }

 private:
  std::map<std::string, std::shared_ptr<const canopy::ir::Kernel>> kernels_;
  std::vector<BatteryCase> cases_;
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

/// How far two sums of `values` in F, each in some order, may be apart.
template <class F, class V>
double sum_difference_bound(const std::vector<V>& values) {
  return static_cast<double>(2 * battery::summation_bound<F>(values));
}

// ---- operators (battery_ops.cpp) -------------------------------------------

template <class T>
void add_arithmetic(CaseList& list) {
  using namespace canopy;
  Kernel kernel("arithmetic_" + battery::type_name<T>(),
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
  battery::Random random(101 + sizeof(T) + std::is_floating_point_v<T>);
  auto [a, b] = battery::operand_pairs<T>(random, kPoints);
  auto args = zeroed<T>(8, kPoints);
  args.push_back(HostArray::of<T>(a));
  args.push_back(HostArray::of<T>(b));
  list.add(kernel, args, opencl_test::range_of(kPoints));
}

template <class T>
void add_comparison(CaseList& list) {
  using namespace canopy;
  Kernel kernel(
      "compare_" + battery::type_name<T>(),
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
  battery::Random random(202 + sizeof(T) + std::is_floating_point_v<T>);
  auto [a, b] = battery::operand_pairs<T>(random, kPoints);
  for (std::size_t k = 400; k < a.size(); k += 7) b[k] = a[k];
  auto args = zeroed<bool>(6, kPoints);
  args.push_back(HostArray::of<T>(a));
  args.push_back(HostArray::of<T>(b));
  list.add(kernel, args, opencl_test::range_of(kPoints));
}

template <class T>
void add_bitwise(CaseList& list) {
  using namespace canopy;
  Kernel kernel("bitwise_" + battery::type_name<T>(),
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
  battery::Random random(303 + sizeof(T));
  auto [a, b] = battery::operand_pairs<T>(random, kPoints);
  std::vector<T> amount(a.size());
  for (std::size_t k = 0; k < amount.size(); ++k)
    amount[k] = k < 261 ? static_cast<T>(static_cast<i64>(k) - 130) : static_cast<T>(random.integer(-70, 70));
  auto args = zeroed<T>(6, kPoints);
  for (const auto* input : {&a, &b, &amount}) args.push_back(HostArray::of<T>(*input));
  list.add(kernel, args, opencl_test::range_of(kPoints));
}

inline void add_operators(CaseList& list) {
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
  battery::Random random(404);
  auto [a, b] = battery::operand_pairs<bool>(random, kPoints);
  auto args = zeroed<bool>(8, kPoints);
  args.push_back(HostArray::of<bool>(a));
  args.push_back(HostArray::of<bool>(b));
  list.add(bool_ops, args, opencl_test::range_of(kPoints));

  Kernel literals("literals",
                  [](Out<float> f, Out<i32> n, Out<double> d, Out<i64> l, In<float> x, In<i32> m) {
                    Idx i = index(0);
                    f[i] = x[i] * 2 + 0.1 - 3 / x[i];
                    n[i] = m[i] * 3 + 1 - 100 / (m[i] | 1) + 7 % (m[i] & 15);
                    d[i] = 1.5 + cast<double>(x[i]) * 1e-3;
                    l[i] = i * 3 - 2;
                  },
                  {"f", "n", "d", "l", "x", "m"});
  battery::Random more(505);
  list.add(literals,
           {HostArray::filled<float>(kPoints, 0), HostArray::filled<i32>(kPoints, 0),
            HostArray::filled<double>(kPoints, 0), HostArray::filled<i64>(kPoints, 0),
            HostArray::of<float>(more.mixed<float>(kPoints)), HostArray::of<i32>(more.mixed<i32>(kPoints))},
           opencl_test::range_of(kPoints));
}

// ---- conversions and math (battery_math.cpp) ---------------------------------

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
      "cast_from_" + battery::type_name<F>(),
      [](Out<bool> to_bool, Out<i32> to_i32, Out<i64> to_i64, Out<float> to_f32, Out<double> to_f64, In<F> x) {
        Idx i = index(0);
        to_bool[i] = cast<bool>(x[i]);
        to_i32[i] = cast<i32>(x[i]);
        to_i64[i] = cast<i64>(x[i]);
        to_f32[i] = cast<float>(x[i]);
        to_f64[i] = cast<double>(x[i]);
      },
      {"to_bool", "to_i32", "to_i64", "to_f32", "to_f64", "x"});
  battery::Random random(606 + sizeof(F) + std::is_floating_point_v<F>);
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
      opencl_test::range_of(kPoints));
}

template <class T>
void add_math(CaseList& list) {
  using namespace canopy;
  Kernel kernel(
      "math_" + battery::type_name<T>(),
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
  battery::Random random(707 + sizeof(T));
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
  const auto& edges = battery::Random::edge_values<T>();
  for (std::size_t k = 0; k < edges.size() * edges.size(); ++k) {
    base[k] = edges[k / edges.size()];
    exponent[k] = edges[k % edges.size()];
  }
  auto args = zeroed<T>(10, kPoints);
  for (const auto* input : {&x, &y, &base, &exponent}) args.push_back(HostArray::of<T>(*input));
  Tolerance tolerance;
  for (int transcendental : {1, 2, 3, 4}) tolerance.ulp.emplace_back(transcendental, kTranscendentalUlp);
  tolerance.ulp.emplace_back(5, kPowUlp);
  list.add(kernel, args, opencl_test::range_of(kPoints), tolerance);
}

inline void add_conversions_and_math(CaseList& list) {
  using namespace canopy;
  add_casts<bool>(list);
  add_casts<i32>(list);
  add_casts<i64>(list);
  add_casts<float>(list);
  add_casts<double>(list);
  add_math<float>(list);
  add_math<double>(list);
  Kernel kernel("int_abs_min_max",
                [](Out<i32> abs32, Out<i64> abs64, Out<i32> clamp32, Out<i64> clamp64, In<i32> x, In<i64> y) {
                  Idx i = index(0);
                  abs32[i] = abs(x[i]);
                  abs64[i] = abs(y[i]);
                  clamp32[i] = min(max(x[i], -1000), 1000);
                  clamp64[i] = max(-5, min(y[i], cast<i64>(x[i])));
                },
                {"abs32", "abs64", "clamp32", "clamp64", "x", "y"});
  battery::Random random(808);
  list.add(kernel,
           {HostArray::filled<i32>(kPoints, 0), HostArray::filled<i64>(kPoints, 0), HostArray::filled<i32>(kPoints, 0),
            HostArray::filled<i64>(kPoints, 0), HostArray::of<i32>(random.mixed<i32>(kPoints)),
            HostArray::of<i64>(random.mixed<i64>(kPoints))},
           opencl_test::range_of(kPoints));
}

// ---- control flow (battery_control.cpp) ---------------------------------------

inline void add_control_flow(CaseList& list) {
  using namespace canopy;
  using opencl_test::range_of;
  using opencl_test::scalar;
  battery::Random random(909);

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
  auto [a, b] = battery::operand_pairs<i32>(random, kPoints);
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
           {HostArray::filled<double>(kPoints, 0), HostArray::filled<i32>(kPoints, 0), HostArray::of<double>(x)},
           range_of(kPoints));

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

  Kernel spmv("spmv_csr",
              [](Out<double> y, In<i64> row_start, In<i32> column, In<double> value, In<double> xs) {
                Idx r = index(0);
                Var<double> acc("acc", 0.0);
                For(row_start[r], row_start[r + 1], [&](Idx k) { acc += value[k] * xs[column[k]]; });
                y[r] = acc;
              },
              {"y", "row_start", "column", "value", "x"});
  for (i64 rows : {i64{1}, i64{1003}}) {
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
  for (i64 n : {i64{17}, i64{1003}}) {
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
  list.add(scalars,
           {HostArray::filled<double>(1003, 0), HostArray::filled<i64>(1003, 0), HostArray::filled<float>(1003, 0),
            HostArray::of<double>(values), scalar(false), scalar<i32>(3), scalar<i64>(-5), scalar(0.25f), scalar(2.0)},
           range_of(1003));
  list.add(scalars,
           {HostArray::filled<double>(1003, 0), HostArray::filled<i64>(1003, 0), HostArray::filled<float>(1003, 0),
            HostArray::of<double>(values), scalar(true), scalar(std::numeric_limits<i32>::min()),
            scalar(std::numeric_limits<i64>::max()), scalar(-1e30f), scalar(-0.125)},
           range_of(1003));
}

// ---- reductions and atomics (battery_reduce.cpp) ------------------------------

template <class T>
void add_reductions(CaseList& list) {
  using namespace canopy;
  using opencl_test::range_of;
  Kernel kernel("reduce_" + battery::type_name<T>(),
                [](In<T> x, Sum<T> total, Min<T> lowest, Max<T> highest) {
                  Idx i = index(0);
                  total += x[i];
                  lowest.combine(x[i]);
                  highest.combine(x[i]);
                },
                {"x", "total", "lowest", "highest"});
  battery::Random random(1717 + sizeof(T) + std::is_floating_point_v<T>);
  for (i64 n : {i64{0}, i64{1}, i64{17}, i64{1003}, i64{100003}}) {
    std::vector<T> x = std::is_integral_v<T> ? random.mixed<T>(n) : random.values<T>(n, -1000, 1000);
    Tolerance tolerance;
    if constexpr (std::is_floating_point_v<T>) tolerance.reduction.emplace_back(0, sum_difference_bound<T>(x));
    list.add(kernel,
             {HostArray::of<T>(x), canopy::backends::ReductionArg{}, canopy::backends::ReductionArg{},
              canopy::backends::ReductionArg{}},
             range_of(n), tolerance);
  }
  // A piece that starts past 0.
  auto x = random.values<T>(1003, -100, 100);
  Tolerance tolerance;
  if constexpr (std::is_floating_point_v<T>) tolerance.reduction.emplace_back(0, sum_difference_bound<T>(x));
  list.add(kernel,
           {HostArray::of<T>(x), canopy::backends::ReductionArg{}, canopy::backends::ReductionArg{},
            canopy::backends::ReductionArg{}},
           opencl_test::range_of({5}, {998}), tolerance);
}

template <class T>
void add_nan_reductions(CaseList& list) {
  using namespace canopy;
  Kernel kernel("minmax_nan_" + battery::type_name<T>(),
                [](In<T> x, Min<T> lowest, Max<T> highest) {
                  Idx i = index(0);
                  lowest.combine(x[i]);
                  highest.combine(x[i]);
                },
                {"x", "lowest", "highest"});
  battery::Random random(1919 + sizeof(T));
  auto x = random.mixed<T>(4099);
  for (std::size_t k = 5; k < x.size(); k += 13) x[k] = std::numeric_limits<T>::quiet_NaN();
  list.add(kernel, {HostArray::of<T>(x), canopy::backends::ReductionArg{}, canopy::backends::ReductionArg{}},
           opencl_test::range_of(4099));
  list.add(kernel,
           {HostArray::of<T>(std::vector<T>(3, std::numeric_limits<T>::quiet_NaN())), canopy::backends::ReductionArg{},
            canopy::backends::ReductionArg{}},
           opencl_test::range_of(3));
}

inline void add_reductions_and_atomics(CaseList& list) {
  using namespace canopy;
  using canopy::backends::ReductionArg;
  using opencl_test::range_of;
  add_reductions<i32>(list);
  add_reductions<i64>(list);
  add_reductions<float>(list);
  add_reductions<double>(list);
  add_nan_reductions<float>(list);
  add_nan_reductions<double>(list);
  battery::Random random(2020);

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
  for (i64 n : {i64{0}, i64{17}, i64{4099}}) {
    auto x = random.values<double>(n, -50, 50);
    Tolerance tolerance;
    tolerance.reduction.emplace_back(1, sum_difference_bound<double>(x));
    list.add(stats,
             {HostArray::of<double>(x), opencl_test::scalar(20.5), ReductionArg{}, ReductionArg{}, ReductionArg{},
              ReductionArg{}},
             range_of(n), tolerance);
  }

  Kernel dot("dot",
             [](In<float> a, In<float> b, Sum<float> narrow, Sum<double> wide) {
               Idx i = index(0);
               narrow += a[i] * b[i];
               wide += cast<double>(a[i]) * cast<double>(b[i]);
             },
             {"a", "b", "narrow", "wide"});
  for (i64 n : {i64{1003}, i64{100003}}) {
    auto a = random.values<float>(n, -2, 2), b = random.values<float>(n, -2, 2);
    std::vector<float> products(a.size());
    std::vector<double> wide(a.size());
    for (std::size_t k = 0; k < a.size(); ++k) {
      products[k] = a[k] * b[k];
      wide[k] = static_cast<double>(a[k]) * static_cast<double>(b[k]);
    }
    Tolerance tolerance;
    tolerance.reduction.emplace_back(0, sum_difference_bound<float>(products));
    tolerance.reduction.emplace_back(1, sum_difference_bound<double>(wide));
    list.add(dot, {HostArray::of<float>(a), HostArray::of<float>(b), ReductionArg{}, ReductionArg{}}, range_of(n),
             tolerance);
  }

  Kernel reduce_2d("reduce_2d",
                   [](In<double, 2> m, Sum<double> total, Max<double> peak, Min<i64> first_negative_row) {
                     Idx i = index(0), j = index(1);
                     total += m(i, j);
                     peak.combine(m(i, j));
                     If(m(i, j) < 0.0, [&] { first_negative_row.combine(i); });
                   },
                   {"m", "total", "peak", "first_negative_row"});
  for (auto [rows, cols] : {std::pair<i64, i64>{0, 4}, {3, 17}, {257, 129}}) {
    std::vector<double> m(static_cast<std::size_t>(rows * cols));
    // Integers: every order of summing them is exact.
    for (auto& v : m) v = static_cast<double>(random.integer(-1000, 1000));
    list.add(reduce_2d, {shaped<double>(m, {rows, cols, 1}, 2), ReductionArg{}, ReductionArg{}, ReductionArg{}},
             range_of({0, 0}, {rows, cols}));
  }
  {
    std::vector<double> m(257 * 129);
    for (auto& v : m) v = static_cast<double>(random.integer(-1000, 1000));
    list.add(reduce_2d, {shaped<double>(m, {257, 129, 1}, 2), ReductionArg{}, ReductionArg{}, ReductionArg{}},
             range_of({3, 5}, {250, 100}));
  }

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
  for (i64 n : {i64{0}, i64{1003}, i64{100003}}) {
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
           range_of(100003));

  Kernel column_sums("column_sums",
                     [](InOut<double> sums, In<double, 2> m) {
                       Idx i = index(0), j = index(1);
                       atomic_add(sums[j], m(i, j));
                     },
                     {"sums", "m"});
  for (auto [rows, cols] : {std::pair<i64, i64>{0, 3}, {1003, 7}, {3, 1003}}) {
    std::vector<double> m(static_cast<std::size_t>(rows * cols));
    for (auto& v : m) v = static_cast<double>(random.integer(-50, 50));
    list.add(column_sums, {HostArray::filled<double>(cols, 0), shaped<double>(m, {rows, cols, 1}, 2)},
             range_of({0, 0}, {rows, cols}));
  }
}

// ---- shapes (battery_shapes.cpp) -------------------------------------------

inline void add_shapes(CaseList& list) {
  using namespace canopy;
  using opencl_test::range_of;
  using opencl_test::scalar;
  battery::Random random(3131);

  Kernel triad("triad",
               [](Out<double> a, In<double> b, In<double> c, Val<double> s) {
                 Idx i = index(0);
                 a[i] = b[i] + s * c[i];
               },
               {"a", "b", "c", "s"});
  for (i64 n : {i64{0}, i64{1}, i64{17}, i64{1003}, i64{100003}})
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
  for (i64 n : {i64{17}, i64{4099}}) {
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
  for (i64 n : {i64{17}, i64{1003}})
    list.add(gather,
             {HostArray::filled<double>(n, 0), HostArray::filled<i64>(n, 0), HostArray::of<double>(table),
              HostArray::of<i64>(table64), HostArray::of<i32>(random.values<i32>(n, 0, table_size - 1)),
              HostArray::of<i64>(random.values<i64>(n, 0, table_size - 1))},
             range_of(n));

  Kernel strided("strided",
                 [](Out<float> out, In<float> a, Val<i64> stride, Val<i64> offset) {
                   Idx i = index(0);
                   out[i] = a[i * stride + offset];
                 },
                 {"out", "a", "stride", "offset"});
  for (auto [stride, offset] : {std::pair<i64, i64>{3, 0}, {7, 5}}) {
    const i64 n = 1003;
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
  list.add(
      reversed,
      {HostArray::filled<i32>(1003, 0), HostArray::filled<i32>(1003, 0), HostArray::of<i32>(random.mixed<i32>(1003))},
      range_of(1003));

  Kernel stencil_1d("stencil_1d",
                    [](Out<double> out, In<double> u) {
                      Idx i = index(0);
                      If(i == 0 || i == u.extent(0) - 1, [&] { out[i] = u[i]; }).Else([&] {
                        out[i] = 0.25 * u[i - 1] + 0.5 * u[i] + 0.25 * u[i + 1];
                      });
                    },
                    {"out", "u"});
  for (i64 n : {i64{1}, i64{3}, i64{1003}})
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
  for (auto [rows, cols] : {std::pair<i64, i64>{0, 5}, {1, 1}, {3, 17}, {17, 3}, {123, 257}}) {
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
  for (const auto& e : {std::array<i64, 3>{3, 0, 3}, {1, 1, 1}, {3, 5, 7}, {1, 1, 100}, {33, 34, 35}}) {
    const i64 points = e[0] * e[1] * e[2];
    const auto whole = range_of({0, 0, 0}, {e[0], e[1], e[2]});
    list.add(iota, {HostArray::filled<i64>(points, 0, e, 3)}, whole);
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
  // One array passed twice (in place).
  list.add(affine,
           {HostArray::of<double>(random.values<double>(1003, -4, 4)), opencl_test::SameArrayAs{0}, scalar(4.0),
            scalar(0.0)},
           range_of(1003));
}

}  // namespace detail

/// Every case, built once per process.
inline const std::vector<BatteryCase>& battery_cases() {
  static const std::vector<BatteryCase> cases = [] {
    detail::CaseList list;
    detail::add_operators(list);
    detail::add_conversions_and_math(list);
    detail::add_control_flow(list);
    detail::add_reductions_and_atomics(list);
    detail::add_shapes(list);
    return list.take();
  }();
  return cases;
}

/// The distinct kernels of battery_cases(), in order of first appearance.
inline std::vector<std::shared_ptr<const canopy::ir::Kernel>> battery_kernels() {
  std::vector<std::shared_ptr<const canopy::ir::Kernel>> kernels;
  for (const auto& c : battery_cases())
    if (kernels.empty() || std::find(kernels.begin(), kernels.end(), c.kernel) == kernels.end())
      kernels.push_back(c.kernel);
  return kernels;
}

}  // namespace level_zero_test
