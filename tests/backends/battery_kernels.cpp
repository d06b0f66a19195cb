// The kernels of the JIT battery, written as tests/jit/battery_*.cpp write
// them (see battery_kernels.hpp).
#include "battery_kernels.hpp"

#include <canopy/canopy.hpp>
#include <canopy/ir/passes/optimize.hpp>

#include "jit/battery_support.hpp"

using namespace canopy;
using battery::i32;
using battery::i64;
using battery::type_name;

namespace battery_kernels {

namespace {

void add(std::vector<NamedKernel>& list, const KernelBase& kernel) {
  list.push_back({kernel.name(), std::make_shared<const ir::Kernel>(ir::optimize(kernel.ir()))});
}

// ---- battery_ops.cpp ----------------------------------------------------------

template <class T>
void add_arithmetic(std::vector<NamedKernel>& list) {
  add(list, Kernel("arithmetic_" + type_name<T>(),
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
                   {"plus", "minus", "times", "quotient", "remainder", "smaller", "larger", "negated", "a", "b"}));
}

template <class T>
void add_comparison(std::vector<NamedKernel>& list) {
  add(list,
      Kernel("compare_" + type_name<T>(),
             [](Out<bool> eq, Out<bool> ne, Out<bool> lt, Out<bool> le, Out<bool> gt, Out<bool> ge, In<T> a, In<T> b) {
               Idx i = index(0);
               eq[i] = a[i] == b[i];
               ne[i] = a[i] != b[i];
               lt[i] = a[i] < b[i];
               le[i] = a[i] <= b[i];
               gt[i] = a[i] > b[i];
               ge[i] = a[i] >= b[i];
             },
             {"eq", "ne", "lt", "le", "gt", "ge", "a", "b"}));
}

template <class T>
void add_bitwise(std::vector<NamedKernel>& list) {
  add(list, Kernel("bitwise_" + type_name<T>(),
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
                   {"both", "either", "differ", "left", "right", "flipped", "a", "b", "amount"}));
}

void add_ops(std::vector<NamedKernel>& list) {
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
  add(list, Kernel("bool_ops",
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
                   {"both", "either", "differ", "negated", "all", "any", "eq", "ne", "a", "b"}));
  add(list, Kernel("literals",
                   [](Out<float> f, Out<i32> n, Out<double> d, Out<i64> l, In<float> x, In<i32> m) {
                     Idx i = index(0);
                     f[i] = x[i] * 2 + 0.1 - 3 / x[i];
                     n[i] = m[i] * 3 + 1 - 100 / (m[i] | 1) + 7 % (m[i] & 15);
                     d[i] = 1.5 + cast<double>(x[i]) * 1e-3;
                     l[i] = i * 3 - 2;
                   },
                   {"f", "n", "d", "l", "x", "m"}));
}

// ---- battery_math.cpp ---------------------------------------------------------

template <class F>
void add_cast(std::vector<NamedKernel>& list) {
  add(list,
      Kernel("cast_from_" + type_name<F>(),
             [](Out<bool> to_bool, Out<i32> to_i32, Out<i64> to_i64, Out<float> to_f32, Out<double> to_f64, In<F> x) {
               Idx i = index(0);
               to_bool[i] = cast<bool>(x[i]);
               to_i32[i] = cast<i32>(x[i]);
               to_i64[i] = cast<i64>(x[i]);
               to_f32[i] = cast<float>(x[i]);
               to_f64[i] = cast<double>(x[i]);
             },
             {"to_bool", "to_i32", "to_i64", "to_f32", "to_f64", "x"}));
}

template <class T>
void add_math(std::vector<NamedKernel>& list) {
  add(list, Kernel("math_" + type_name<T>(),
                   [](Out<T> root, Out<T> exponential, Out<T> logarithm, Out<T> sine, Out<T> cosine, Out<T> power,
                      Out<T> floored, Out<T> magnitude, Out<T> lower, Out<T> upper, In<T> x, In<T> y, In<T> base,
                      In<T> exponent) {
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
                   {"root", "exponential", "logarithm", "sine", "cosine", "power", "floored", "magnitude", "lower",
                    "upper", "x", "y", "base", "exponent"}));
}

void add_math_kernels(std::vector<NamedKernel>& list) {
  add_cast<bool>(list);
  add_cast<i32>(list);
  add_cast<i64>(list);
  add_cast<float>(list);
  add_cast<double>(list);
  add_math<float>(list);
  add_math<double>(list);
  add(list, Kernel("int_abs_min_max",
                   [](Out<i32> abs32, Out<i64> abs64, Out<i32> clamp32, Out<i64> clamp64, In<i32> x, In<i64> y) {
                     Idx i = index(0);
                     abs32[i] = abs(x[i]);
                     abs64[i] = abs(y[i]);
                     clamp32[i] = min(max(x[i], -1000), 1000);
                     clamp64[i] = max(-5, min(y[i], cast<i64>(x[i])));
                   },
                   {"abs32", "abs64", "clamp32", "clamp64", "x", "y"}));
}

// ---- battery_control.cpp ------------------------------------------------------

void add_control(std::vector<NamedKernel>& list) {
  add(list, Kernel("select_all",
                   [](Out<double> f, Out<i32> n, Out<bool> b, Out<float> g, Out<i64> l, In<bool> c, In<double> x,
                      In<double> y, In<i32> m) {
                     Idx i = index(0);
                     f[i] = select(c[i], x[i], y[i]);
                     n[i] = select(x[i] < y[i], m[i], -m[i]);
                     b[i] = select(c[i], x[i] > 0.0, m[i] > 0);
                     g[i] = select(!c[i], cast<float>(x[i]), 1.5f);
                     l[i] = select(m[i] > 0, i, cast<i64>(m[i]));
                   },
                   {"f", "n", "b", "g", "l", "c", "x", "y", "m"}));
  add(list, Kernel("var_updates",
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
                   {"n", "d", "flags", "a", "b", "x"}));
  add(list, Kernel("piecewise",
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
                   {"y", "branch", "x"}));
  add(list, Kernel("nested_loops",
                   [](Out<i64> out, In<i32> lo, In<i32> hi) {
                     Idx i = index(0);
                     Var<i64> acc("acc", 0);
                     For(cast<i64>(lo[i]), cast<i64>(hi[i]), 3, [&](Idx j) {
                       For(0, j % 5, [&](Idx k) { acc += j * 10 + k; });
                       acc ^= j;
                     });
                     out[i] = acc;
                   },
                   {"out", "lo", "hi"}));
  add(list, Kernel("counted_i32",
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
                   {"out", "tail", "count", "bias"}));
  add(list, Kernel("spmv_csr",
                   [](Out<double> y, In<i64> row_start, In<i32> column, In<double> value, In<double> x) {
                     Idx r = index(0);
                     Var<double> acc("acc", 0.0);
                     For(row_start[r], row_start[r + 1], [&](Idx k) { acc += value[k] * x[column[k]]; });
                     y[r] = acc;
                   },
                   {"y", "row_start", "column", "value", "x"}));
  add(list, Kernel("inout_updates",
                   [](InOut<double> y, InOut<i32> c, InOut<float> g, In<double> x, In<i32> m) {
                     Idx i = index(0);
                     y[i] += x[i];
                     y[i] *= 0.5;
                     y[i] -= 1;
                     y[i] /= x[i];
                     c[i] += m[i];
                     c[i] *= 3;
                     c[i] -= 7;
                     c[i] /= m[i];
                     g[i] = g[i] * g[i];
                     g[i] += g[i];
                   },
                   {"y", "c", "g", "x", "m"}));
  add(list, Kernel("scalars",
                   [](Out<double> d, Out<i64> l, Out<float> f, In<double> x, Val<bool> flip, Val<i32> a, Val<i64> b,
                      Val<float> s, Val<double> t) {
                     Idx i = index(0);
                     d[i] = select(flip, -x[i], x[i]) * t + cast<double>(s);
                     l[i] = cast<i64>(a) * i + b;
                     f[i] = s * cast<float>(a);
                   },
                   {"d", "l", "f", "x", "flip", "a", "b", "s", "t"}));
}

// ---- battery_reduce.cpp -------------------------------------------------------

template <class T>
void add_reduce(std::vector<NamedKernel>& list) {
  add(list, Kernel("reduce_" + type_name<T>(),
                   [](In<T> x, Sum<T> total, Min<T> lowest, Max<T> highest) {
                     Idx i = index(0);
                     total += x[i];
                     lowest.combine(x[i]);
                     highest.combine(x[i]);
                   },
                   {"x", "total", "lowest", "highest"}));
}

template <class T>
void add_minmax_nan(std::vector<NamedKernel>& list) {
  add(list, Kernel("minmax_nan_" + type_name<T>(),
                   [](In<T> x, Min<T> lowest, Max<T> highest) {
                     Idx i = index(0);
                     lowest.combine(x[i]);
                     highest.combine(x[i]);
                   },
                   {"x", "lowest", "highest"}));
}

void add_reductions(std::vector<NamedKernel>& list) {
  add_reduce<i32>(list);
  add_reduce<i64>(list);
  add_reduce<float>(list);
  add_reduce<double>(list);
  add_minmax_nan<float>(list);
  add_minmax_nan<double>(list);
  add(list, Kernel("conditional_stats",
                   [](In<double> x, Val<double> threshold, Sum<i64> count, Sum<double> above, Max<i32> last,
                      Min<float> smallest) {
                     Idx i = index(0);
                     If(x[i] > threshold, [&] {
                       count += 1;
                       above += x[i];
                       last.combine(cast<i32>(i));
                     });
                     smallest.combine(cast<float>(x[i]));
                   },
                   {"x", "threshold", "count", "above", "last", "smallest"}));
  add(list, Kernel("dot",
                   [](In<float> a, In<float> b, Sum<float> narrow, Sum<double> wide) {
                     Idx i = index(0);
                     narrow += a[i] * b[i];
                     wide += cast<double>(a[i]) * cast<double>(b[i]);
                   },
                   {"a", "b", "narrow", "wide"}));
  add(list, Kernel("reduce_2d",
                   [](In<double, 2> m, Sum<double> total, Max<double> peak, Min<i64> first_negative_row) {
                     Idx i = index(0), j = index(1);
                     total += m(i, j);
                     peak.combine(m(i, j));
                     If(m(i, j) < 0.0, [&] { first_negative_row.combine(i); });
                   },
                   {"m", "total", "peak", "first_negative_row"}));
  add(list, Kernel("histogram",
                   [](InOut<i32> h32, InOut<i64> h64, InOut<float> hf, InOut<double> hd, InOut<double> hx, In<i32> bin,
                      In<i32> weight, In<double> x) {
                     Idx i = index(0);
                     atomic_add(h32[bin[i]], weight[i]);
                     atomic_add(h64[bin[i]], cast<i64>(weight[i]) * 1000000000);
                     atomic_add(hf[bin[i]], cast<float>(weight[i]));
                     atomic_add(hd[bin[i]], cast<double>(weight[i]) * 0.5);
                     atomic_add(hx[bin[i]], x[i]);
                   },
                   {"h32", "h64", "hf", "hd", "hx", "bin", "weight", "x"}));
  add(list, Kernel("histogram_2d",
                   [](InOut<i64, 2> h, In<i32> a, In<i32> b) {
                     Idx i = index(0);
                     atomic_add(h(a[i], b[i]), 1);
                     atomic_add(h(0, 0), i);
                   },
                   {"h", "a", "b"}));
  add(list, Kernel("column_sums",
                   [](InOut<double> sums, In<double, 2> m) {
                     Idx i = index(0), j = index(1);
                     atomic_add(sums[j], m(i, j));
                   },
                   {"sums", "m"}));
}

// ---- battery_shapes.cpp -------------------------------------------------------

void add_shapes(std::vector<NamedKernel>& list) {
  add(list, Kernel("triad",
                   [](Out<double> a, In<double> b, In<double> c, Val<double> s) {
                     Idx i = index(0);
                     a[i] = b[i] + s * c[i];
                   },
                   {"a", "b", "c", "s"}));
  add(list, Kernel("saxpy",
                   [](InOut<float> y, In<float> x, Val<float> a) {
                     Idx i = index(0);
                     y[i] = a * x[i] + y[i];
                   },
                   {"y", "x", "a"}));
  add(list, Kernel("index_math",
                   [](Out<i64> squares, Out<i32> mixed) {
                     Idx i = index(0);
                     squares[i] = i * i - 3;
                     mixed[i] = (cast<i32>(i) ^ 0x55) * 7 - cast<i32>(i >> 2);
                   },
                   {"squares", "mixed"}));
  add(list, Kernel("gather",
                   [](Out<double> out, Out<i64> out64, In<double> table, In<i64> table64, In<i32> idx, In<i64> idx64) {
                     Idx i = index(0);
                     out[i] = table[idx[i]] + table[idx64[i]];
                     out64[i] = table64[idx[idx[i] % 17]];
                   },
                   {"out", "out64", "table", "table64", "idx", "idx64"}));
  add(list, Kernel("strided",
                   [](Out<float> out, In<float> a, Val<i64> stride, Val<i64> offset) {
                     Idx i = index(0);
                     out[i] = a[i * stride + offset];
                   },
                   {"out", "a", "stride", "offset"}));
  add(list, Kernel("reversed",
                   [](Out<i32> out, Out<i32> scattered, In<i32> a) {
                     Idx i = index(0);
                     Idx last = a.extent(0) - 1;
                     out[i] = a[last - i];
                     scattered[last - i] = a[i] * 2;
                   },
                   {"out", "scattered", "a"}));
  add(list, Kernel("stencil_1d",
                   [](Out<double> out, In<double> u) {
                     Idx i = index(0);
                     If(i == 0 || i == u.extent(0) - 1, [&] { out[i] = u[i]; }).Else([&] {
                       out[i] = 0.25 * u[i - 1] + 0.5 * u[i] + 0.25 * u[i + 1];
                     });
                   },
                   {"out", "u"}));
  add(list, Kernel("transpose",
                   [](Out<i64, 2> t, In<i64, 2> m) {
                     Idx i = index(0), j = index(1);
                     t(j, i) = m(i, j);
                   },
                   {"t", "m"}));
  add(list, Kernel("stencil_2d",
                   [](Out<float, 2> out, In<float, 2> u) {
                     Idx i = index(0), j = index(1);
                     Idx rows = u.extent(0), cols = u.extent(1);
                     If(i > 0 && i < rows - 1 && j > 0 && j < cols - 1, [&] {
                       out(i, j) = u(i, j) * 4 - u(i - 1, j) - u(i + 1, j) - u(i, j - 1) - u(i, j + 1);
                     }).Else([&] { out(i, j) = u(i, j); });
                   },
                   {"out", "u"}));
  add(list, Kernel("iota_3d",
                   [](Out<i64, 3> out) {
                     Idx i = index(0), j = index(1), k = index(2);
                     out(i, j, k) = (i * 1000 + j) * 1000 + k;
                   },
                   {"out"}));
  add(list, Kernel("permute_3d",
                   [](Out<double, 3> out, In<double, 3> in) {
                     Idx i = index(0), j = index(1), k = index(2);
                     out(i, j, k) = in(k, i, j);
                   },
                   {"out", "src"}));
  add(list, Kernel("stencil_3d",
                   [](Out<double, 3> out, In<double, 3> u) {
                     Idx i = index(0), j = index(1), k = index(2);
                     Value<bool> inside =
                         i > 0 && j > 0 && k > 0 && i < u.extent(0) - 1 && j < u.extent(1) - 1 && k < u.extent(2) - 1;
                     If(inside, [&] {
                       out(i, j, k) = u(i - 1, j, k) + u(i + 1, j, k) + u(i, j - 1, k) + u(i, j + 1, k) +
                                      u(i, j, k - 1) + u(i, j, k + 1) - 6.0 * u(i, j, k);
                     }).Else([&] { out(i, j, k) = 0.0; });
                   },
                   {"out", "u"}));
  add(list, Kernel("affine",
                   [](Out<double> y, In<double> x, Val<double> a, Val<double> b) {
                     Idx i = index(0);
                     y[i] = a * x[i] + b;
                   },
                   {"y", "x", "a", "b"}));
}

}  // namespace

const std::vector<NamedKernel>& all() {
  static const std::vector<NamedKernel> kernels = [] {
    std::vector<NamedKernel> list;
    add_ops(list);
    add_math_kernels(list);
    add_control(list);
    add_reductions(list);
    add_shapes(list);
    return list;
  }();
  return kernels;
}

}  // namespace battery_kernels
