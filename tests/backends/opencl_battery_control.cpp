// The JIT battery's control-flow kernels (tests/jit/battery_control.cpp) on
// the OpenCL device, compared exactly with the CPU device on the same inputs:
// select on every type, variables with every compound update, If/ElseIf/Else
// chains, nested For loops with steps and data-dependent trip counts, i32
// loop counters, a CSR sparse matrix-vector product, InOut updates, and
// scalar parameters of every type.
#include <doctest/doctest.h>

#include "opencl_support.hpp"

using namespace canopy;
using namespace battery;
using namespace opencl_test;

namespace {

constexpr i64 kPoints = 20011;

}  // namespace

TEST_CASE("opencl battery: select on every type") {
  OPENCL_DEVICE_OR_SKIP(device);
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
  std::vector<HostArg> args{HostArray::filled<double>(kPoints, 0),
                            HostArray::filled<i32>(kPoints, 0),
                            HostArray::filled<bool>(kPoints, 0),
                            HostArray::filled<float>(kPoints, 0),
                            HostArray::filled<i64>(kPoints, 0),
                            HostArray::of<bool>(random.values<bool>(kPoints, 0, 1)),
                            HostArray::of<double>(random.mixed<double>(kPoints)),
                            HostArray::of<double>(random.mixed<double>(kPoints)),
                            HostArray::of<i32>(random.mixed<i32>(kPoints))};
  compare(*device, kernel, args, range_of(kPoints));
}

TEST_CASE("opencl battery: Var with every compound update") {
  OPENCL_DEVICE_OR_SKIP(device);
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
  std::vector<HostArg> args{HostArray::filled<i32>(kPoints, 0),
                            HostArray::filled<double>(kPoints, 0),
                            HostArray::filled<bool>(kPoints, 0),
                            HostArray::of<i32>(a),
                            HostArray::of<i32>(b),
                            HostArray::of<double>(random.mixed<double>(kPoints))};
  compare(*device, kernel, args, range_of(kPoints));
}

TEST_CASE("opencl battery: If / ElseIf / Else chains, nested") {
  OPENCL_DEVICE_OR_SKIP(device);
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
                  If(v == 0.0, [&] { v = 42.0; });
                  y[i] = v;
                },
                {"y", "branch", "x"});
  Random random(1111);
  auto x = random.mixed<double>(kPoints);
  for (std::size_t k = 100; k < x.size(); k += 2) x[k] = random.real(-3, 3);
  std::vector<HostArg> args{HostArray::filled<double>(kPoints, 0), HostArray::filled<i32>(kPoints, -1),
                            HostArray::of<double>(x)};
  auto [cpu, got] = compare(*device, kernel, args, range_of(kPoints));
  const auto branch = values_of<i32>(got.arrays[1]);
  for (std::size_t k = 0; k < x.size(); ++k)
    if (x[k] < -1.0) REQUIRE(branch[k] == 0);
}

TEST_CASE("opencl battery: nested For loops with a step and data-dependent trip counts") {
  OPENCL_DEVICE_OR_SKIP(device);
  Kernel kernel("nested_loops",
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
  Random random(1212);
  const i64 n = 4099;
  std::vector<HostArg> args{HostArray::filled<i64>(n, 0), HostArray::of<i32>(random.values<i32>(n, -20, 20)),
                            HostArray::of<i32>(random.values<i32>(n, -20, 40))};
  compare(*device, kernel, args, range_of(n));
}

TEST_CASE("opencl battery: i32 loop counters, and a counter declared before its loop") {
  OPENCL_DEVICE_OR_SKIP(device);
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
  std::vector<HostArg> args{HostArray::filled<i32>(n, 0), HostArray::filled<i64>(n, 0),
                            HostArray::of<i32>(random.values<i32>(n, -5, 60)), scalar<i32>(-7)};
  compare(*device, kernel, args, range_of(n));
}

TEST_CASE("opencl battery: loops whose end reaches the largest integer stop there") {
  OPENCL_DEVICE_OR_SKIP(device);
  // Steps past the end of the type must not wrap around: the loop runs
  // while the counter is below the end, and the counter never overflows.
  Kernel kernel("loop_to_the_top",
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
  std::vector<i32> start{std::numeric_limits<i32>::max(), std::numeric_limits<i32>::max() - 1, 0, -5, 2147000000,
                         std::numeric_limits<i32>::min()};
  const auto n = static_cast<i64>(start.size());
  std::vector<HostArg> args{HostArray::filled<i32>(n, -1), HostArray::filled<i64>(n, -1), HostArray::of<i32>(start)};
  auto [cpu, got] = compare(*device, kernel, args, range_of(n));
  const auto count32 = values_of<i32>(got.arrays[0]);
  CHECK(count32[0] == 0);  // start == end: no iteration
  CHECK(count32[1] == 1);
  CHECK(count32[2] == 3);  // 0, 1000000007, 2000000014
}

TEST_CASE("opencl battery: a CSR sparse matrix-vector product (trip counts from the data, gathers)") {
  OPENCL_DEVICE_OR_SKIP(device);
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
    std::vector<HostArg> args{HostArray::filled<double>(rows, 0), HostArray::of<i64>(row_start),
                              HostArray::of<i32>(random.values<i32>(nonzeros, 0, columns - 1)),
                              HostArray::of<double>(random.values<double>(nonzeros, -1, 1)),
                              HostArray::of<double>(random.values<double>(columns, -10, 10))};
    compare(*device, kernel, args, range_of(rows), {}, std::to_string(rows) + " rows");
  }
}

TEST_CASE("opencl battery: compound updates of InOut array elements") {
  OPENCL_DEVICE_OR_SKIP(device);
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
    std::vector<HostArg> args{HostArray::of<double>(random.mixed<double>(n)), HostArray::of<i32>(random.mixed<i32>(n)),
                              HostArray::of<float>(random.mixed<float>(n)),
                              HostArray::of<double>(random.mixed<double>(n)), HostArray::of<i32>(random.mixed<i32>(n))};
    compare(*device, kernel, args, range_of(n), {}, "over " + std::to_string(n));
  }
}

TEST_CASE("opencl battery: scalar parameters of every type") {
  OPENCL_DEVICE_OR_SKIP(device);
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
  const auto x = HostArray::of<double>(random.values<double>(n, -100, 100));
  struct Scalars {
    bool flip;
    i32 a;
    i64 b;
    float s;
    double t;
  };
  for (Scalars sc : {Scalars{false, 3, -5, 0.25f, 2.0},
                     Scalars{true, std::numeric_limits<i32>::min(), std::numeric_limits<i64>::max(), -1e30f, -0.125}}) {
    std::vector<HostArg> args{HostArray::filled<double>(n, 0),
                              HostArray::filled<i64>(n, 0),
                              HostArray::filled<float>(n, 0),
                              x,
                              scalar(sc.flip),
                              scalar(sc.a),
                              scalar(sc.b),
                              scalar(sc.s),
                              scalar(sc.t)};
    auto [cpu, got] = compare(*device, kernel, args, range_of(n));
    CHECK(values_of<i64>(got.arrays[1])[2] ==
          static_cast<i64>(static_cast<std::uint64_t>(sc.a) * 2 + static_cast<std::uint64_t>(sc.b)));
  }
}
