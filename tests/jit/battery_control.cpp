// Battery, control flow and locals: select, Var with every compound update,
// If/ElseIf/Else chains (nested), For loops of both counter types and both
// forms, with steps, nested, and with trip counts read from the data (a CSR
// sparse matrix-vector product), compound updates of InOut array elements, and
// scalar parameters of every type, compared with the same logic in plain C++.
#include <doctest/doctest.h>

#include "battery_support.hpp"

using namespace canopy;
using namespace battery;

namespace {

constexpr i64 kPoints = 20011;

}  // namespace

TEST_CASE("battery: select on every type") {
  Kernel kernel("select_all",
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
  Random random(909);
  auto c = random.values<bool>(kPoints, 0, 1);
  auto x = random.mixed<double>(kPoints), y = random.mixed<double>(kPoints);
  auto m = random.mixed<i32>(kPoints);
  auto f = shared_runtime().array<double>(kPoints);
  auto n = shared_runtime().array<i32>(kPoints);
  auto b = shared_runtime().array<bool>(kPoints);
  auto g = shared_runtime().array<float>(kPoints);
  auto l = shared_runtime().array<i64>(kPoints);
  shared_runtime().region(kernel).over(kPoints).launch(f, n, b, g, l, upload<bool>(c), upload<double>(x),
                                                       upload<double>(y), upload<i32>(m));

  std::vector<double> want_f(x.size());
  std::vector<i32> want_n(x.size());
  std::vector<std::uint8_t> want_b(x.size());
  std::vector<float> want_g(x.size());
  std::vector<i64> want_l(x.size());
  for (std::size_t k = 0; k < x.size(); ++k) {
    want_f[k] = c[k] ? x[k] : y[k];
    want_n[k] = x[k] < y[k] ? m[k] : wrap_neg(m[k]);
    want_b[k] = c[k] ? x[k] > 0.0 : m[k] > 0;
    want_g[k] = !c[k] ? static_cast<float>(x[k]) : 1.5f;
    want_l[k] = m[k] > 0 ? static_cast<i64>(k) : m[k];
  }
  check_elements(f, want_f, "select f64");
  check_elements(n, want_n, "select i32");
  check_elements(b, want_b, "select bool");
  check_elements(g, want_g, "select f32");
  check_elements(l, want_l, "select i64");
}

TEST_CASE("battery: Var with every compound update") {
  Kernel kernel("var_updates",
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
  Random random(1010);
  auto [a, b] = operand_pairs<i32>(random, kPoints);
  auto x = random.mixed<double>(kPoints);
  auto n = shared_runtime().array<i32>(kPoints);
  auto d = shared_runtime().array<double>(kPoints);
  auto flags = shared_runtime().array<bool>(kPoints);
  shared_runtime().region(kernel).over(kPoints).launch(n, d, flags, upload<i32>(a), upload<i32>(b), upload<double>(x));

  std::vector<i32> want_n(x.size());
  std::vector<double> want_d(x.size());
  std::vector<std::uint8_t> want_flags(x.size());
  for (std::size_t k = 0; k < x.size(); ++k) {
    i32 v = a[k];
    v = wrap_add(v, b[k]);
    v = wrap_mul(v, 3);
    v = wrap_sub(v, a[k]);
    v = ir_div(v, b[k]);
    v = ir_rem(v, 1000);
    v &= 0x0FFF0FFF;
    v |= 0x100;
    v ^= a[k];
    want_n[k] = v;
    double w = x[k];
    w += 1.5;
    w *= x[k];
    w -= 2;
    w /= 3;
    w = std::fmod(w, 7.5);
    want_d[k] = w;
    bool flag = a[k] > b[k];
    flag = flag || x[k] > 0.0;
    flag = flag && v != 0;
    flag = flag != (b[k] < 0);
    want_flags[k] = flag;
  }
  check_elements(n, want_n, "Var<i32> updates");
  check_elements(d, want_d, "Var<f64> updates");
  check_elements(flags, want_flags, "Var<bool> updates");
}

TEST_CASE("battery: If / ElseIf / Else chains, nested") {
  Kernel kernel("piecewise",
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
                  If(v == 0.0, [&] { v = 42.0; });  // no Else
                  y[i] = v;
                },
                {"y", "branch", "x"});
  Random random(1111);
  auto x = random.mixed<double>(kPoints);
  for (std::size_t k = 100; k < x.size(); k += 2) x[k] = random.real(-3, 3);
  auto y = shared_runtime().array<double>(kPoints);
  auto branch = shared_runtime().array<i32>(kPoints);
  shared_runtime().region(kernel).over(kPoints).launch(y, branch, upload<double>(x));

  std::vector<double> want_y(x.size());
  std::vector<i32> want_branch(x.size());
  for (std::size_t k = 0; k < x.size(); ++k) {
    double v = 0;
    const double t = x[k];
    if (t < -1.0) {
      v = -1.0;
      want_branch[k] = 0;
    } else if (t < 0.0) {
      v = t * t;
      want_branch[k] = 1;
    } else if (t < 1.0) {
      v = std::sqrt(t);
      want_branch[k] = 2;
    } else {
      v = t > 100.0 ? 100.0 : t;  // NaN lands here, and stays NaN
      want_branch[k] = 3;
    }
    if (v == 0.0) v = 42.0;
    want_y[k] = v;
  }
  check_elements(y, want_y, "piecewise value");
  check_elements(branch, want_branch, "piecewise branch");
}

TEST_CASE("battery: nested For loops with a step and data-dependent trip counts") {
  Kernel kernel("nested_loops",
                [](Out<i64> out, In<i32> lo, In<i32> hi) {
                  Idx i = index(0);
                  Var<i64> acc("acc", 0);
                  For(cast<i64>(lo[i]), cast<i64>(hi[i]), 3, [&](Idx j) {
                    For(0, j % 5, [&](Idx k) { acc += j * 10 + k; });  // the inner count depends on j
                    acc ^= j;
                  });
                  out[i] = acc;
                },
                {"out", "lo", "hi"});
  Random random(1212);
  const i64 n = 4099;
  auto lo = random.values<i32>(n, -20, 20), hi = random.values<i32>(n, -20, 40);
  auto out = shared_runtime().array<i64>(n);
  shared_runtime().region(kernel).over(n).launch(out, upload<i32>(lo), upload<i32>(hi));

  std::vector<i64> want(static_cast<std::size_t>(n));
  for (std::size_t p = 0; p < want.size(); ++p) {
    i64 acc = 0;
    for (i64 j = lo[p]; j < hi[p]; j += 3) {
      for (i64 k = 0; k < j % 5; ++k) acc += j * 10 + k;
      acc ^= j;
    }
    want[p] = acc;
  }
  check_elements(out, want, "nested loops");
}

TEST_CASE("battery: i32 loop counters, and a counter declared before its loop") {
  Kernel kernel("counted_i32",
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
  Random random(1313);
  const i64 n = 4099;
  auto count = random.values<i32>(n, -5, 60);
  auto out = shared_runtime().array<i32>(n);
  auto tail = shared_runtime().array<i64>(n);
  const i32 bias = -7;
  shared_runtime().region(kernel).over(n).launch(out, tail, upload<i32>(count), bias);

  std::vector<i32> want(static_cast<std::size_t>(n));
  std::vector<i64> want_tail(static_cast<std::size_t>(n));
  for (std::size_t p = 0; p < want.size(); ++p) {
    i32 acc = bias;
    for (i32 k = 0; k < count[p]; ++k) acc = wrap_add(acc, wrap_sub(wrap_mul(k, k), bias));
    want[p] = acc;
    i64 t = 0;
    for (i64 k = static_cast<i64>(p) % 17; k < 17; ++k) t += k;
    want_tail[p] = t;
  }
  check_elements(out, want, "i32 loop");
  check_elements(tail, want_tail, "declared counter");
}

TEST_CASE("battery: a CSR sparse matrix-vector product (trip counts from the data, gathers)") {
  Kernel kernel("spmv_csr",
                [](Out<double> y, In<i64> row_start, In<i32> column, In<double> value, In<double> x) {
                  Idx r = index(0);
                  Var<double> acc("acc", 0.0);
                  For(row_start[r], row_start[r + 1], [&](Idx k) { acc += value[k] * x[column[k]]; });
                  y[r] = acc;
                },
                {"y", "row_start", "column", "value", "x"});
  Random random(1414);
  for (i64 rows : {i64{0}, i64{1}, i64{17}, i64{5003}}) {
    const i64 columns = 777;
    std::vector<i64> row_start{0};
    for (i64 r = 0; r < rows; ++r) row_start.push_back(row_start.back() + random.integer(0, 30));
    const i64 nonzeros = row_start.back();
    auto column = random.values<i32>(nonzeros, 0, columns - 1);
    auto value = random.values<double>(nonzeros, -1, 1);
    auto x = random.values<double>(columns, -10, 10);
    auto y = shared_runtime().array<double>(rows);
    shared_runtime().region(kernel).over(rows).launch(y, upload<i64>(row_start), upload<i32>(column),
                                                      upload<double>(value), upload<double>(x));

    std::vector<double> want(static_cast<std::size_t>(rows));
    for (i64 r = 0; r < rows; ++r) {
      double acc = 0;
      for (i64 k = row_start[static_cast<std::size_t>(r)]; k < row_start[static_cast<std::size_t>(r) + 1]; ++k)
        acc += value[static_cast<std::size_t>(k)] * x[static_cast<std::size_t>(column[static_cast<std::size_t>(k)])];
      want[static_cast<std::size_t>(r)] = acc;
    }
    check_elements(y, want, "spmv over " + std::to_string(rows) + " rows");
  }
}

TEST_CASE("battery: compound updates of InOut array elements") {
  Kernel kernel("inout_updates",
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
                {"y", "c", "g", "x", "m"});
  Random random(1515);
  for (i64 n : lengths) {
    auto y0 = random.mixed<double>(n), x = random.mixed<double>(n);
    auto c0 = random.mixed<i32>(n), m = random.mixed<i32>(n);
    auto g0 = random.mixed<float>(n);
    auto y = upload<double>(y0);
    auto c = upload<i32>(c0);
    auto g = upload<float>(g0);
    shared_runtime().region(kernel).over(n).launch(y, c, g, upload<double>(x), upload<i32>(m));

    std::vector<double> want_y(y0.size());
    std::vector<i32> want_c(y0.size());
    std::vector<float> want_g(y0.size());
    for (std::size_t k = 0; k < y0.size(); ++k) {
      double v = y0[k] + x[k];
      v *= 0.5;
      v -= 1;
      want_y[k] = v / x[k];
      want_c[k] = ir_div(wrap_sub(wrap_mul(wrap_add(c0[k], m[k]), 3), 7), m[k]);
      const float squared = g0[k] * g0[k];
      want_g[k] = squared + squared;
    }
    const std::string over = " over " + std::to_string(n);
    check_elements(y, want_y, "InOut f64" + over);
    check_elements(c, want_c, "InOut i32" + over);
    check_elements(g, want_g, "InOut f32" + over);
  }
}

TEST_CASE("battery: scalar parameters of every type") {
  Kernel kernel("scalars",
                [](Out<double> d, Out<i64> l, Out<float> f, In<double> x, Val<bool> flip, Val<i32> a, Val<i64> b,
                   Val<float> s, Val<double> t) {
                  Idx i = index(0);
                  d[i] = select(flip, -x[i], x[i]) * t + cast<double>(s);
                  l[i] = cast<i64>(a) * i + b;
                  f[i] = s * cast<float>(a);
                },
                {"d", "l", "f", "x", "flip", "a", "b", "s", "t"});
  Random random(1616);
  const i64 n = 1003;
  auto x = random.values<double>(n, -100, 100);
  auto ax = upload<double>(x);
  struct Scalars {
    bool flip;
    i32 a;
    i64 b;
    float s;
    double t;
  };
  for (Scalars sc : {Scalars{false, 3, -5, 0.25f, 2.0},
                     Scalars{true, std::numeric_limits<i32>::min(), std::numeric_limits<i64>::max(), -1e30f, -0.125}}) {
    auto d = shared_runtime().array<double>(n);
    auto l = shared_runtime().array<i64>(n);
    auto f = shared_runtime().array<float>(n);
    shared_runtime().region(kernel).over(n).launch(d, l, f, ax, sc.flip, sc.a, sc.b, sc.s, sc.t);
    std::vector<double> want_d(x.size());
    std::vector<i64> want_l(x.size());
    std::vector<float> want_f(x.size());
    for (std::size_t k = 0; k < x.size(); ++k) {
      want_d[k] = (sc.flip ? -x[k] : x[k]) * sc.t + static_cast<double>(sc.s);
      want_l[k] = wrap_add(wrap_mul(static_cast<i64>(sc.a), static_cast<i64>(k)), sc.b);
      want_f[k] = sc.s * static_cast<float>(sc.a);
    }
    check_elements(d, want_d, "bool/f32/f64 scalars");
    check_elements(l, want_l, "i32/i64 scalars");
    check_elements(f, want_f, "f32 scalar");
  }
}
