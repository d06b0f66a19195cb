// The DSL's tracing, checked on the IR text it produces: each kernel below is
// written with the DSL and its printed IR (ir::print) compared with the exact
// text expected, so a change in what a DSL call emits shows as a diff here.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>

#include <canopy/dsl/dsl.hpp>
#include <canopy/ir/printer.hpp>

using namespace canopy;

namespace {

std::string text(const KernelBase& kernel) { return ir::print(kernel.ir()); }

}  // namespace

TEST_CASE("dsl: triad with parameter names") {
  Kernel triad("triad",
               [](Out<double> a, In<double> b, In<double> c, Val<double> s) {
                 Idx i = index(0);
                 a[i] = b[i] + s * c[i];
               },
               {"a", "b", "c", "s"});
  CHECK(text(triad) ==
        "kernel triad(out f64[1] a, in f64[1] b, in f64[1] c, val f64 s) dims 1 {\n"
        "  a[index(0)] = (b[index(0)] + (s * c[index(0)]))\n"
        "}\n");
  CHECK(triad.name() == "triad");
  CHECK(triad.ir().dims == 1);
}

TEST_CASE("dsl: parameters are p0, p1, ... without names, in the lambda's order") {
  Kernel k("kinds", [](InOut<std::int32_t, 2> m, Val<bool> on, Sum<float> total, Min<std::int64_t> low,
                       Max<double> high, In<bool, 3> mask) {
    Idx i = index(0);
    If(on, [&] { m(i, 0) = 1; });
    (void)total;
    (void)low;
    (void)high;
    (void)mask;
  });
  CHECK(text(k) ==
        "kernel kinds(inout i32[2] p0, val bool p1, sum f32 p2, min i64 p3, max f64 p4, in bool[3] p5) dims 1 {\n"
        "  if p1 {\n"
        "    p0[index(0), 0:i64] = 1:i32\n"
        "  }\n"
        "}\n");
}

TEST_CASE("dsl: IR keywords may name kernels, parameters and locals; the text writes them $word") {
  Kernel k("max",
           [](In<double> in, Sum<double> sum) {
             Var<double> e("exp", in[index(0)]);
             Var<double> n("inf", 0.0);
             sum += e + n;
           },
           {"in", "sum"});
  CHECK(text(k) ==
        "kernel $max(in f64[1] $in, sum f64 $sum) dims 1 {\n"
        "  var $exp: f64 = $in[index(0)]\n"
        "  var $inf: f64 = 0:f64\n"
        "  reduce $sum <- ($exp + $inf)\n"
        "}\n");
}

TEST_CASE("dsl: a 2-D stencil with If/Else and extent()") {
  Kernel stencil("stencil",
                 [](Out<float, 2> dst, In<float, 2> src) {
                   Idx i = index(0), j = index(1);
                   If(i > 0 && i < src.extent(0) - 1 && j > 0 && j < src.extent(1) - 1, [&] {
                     dst(i, j) = 0.25f * (src(i - 1, j) + src(i + 1, j) + src(i, j - 1) + src(i, j + 1));
                   }).Else([&] { dst(i, j) = src(i, j); });
                 },
                 {"dst", "src"});
  CHECK(text(stencil) ==
        "kernel stencil(out f32[2] dst, in f32[2] src) dims 2 {\n"
        "  if ((((index(0) > 0:i64) & (index(0) < (extent(src, 0) - 1:i64))) & (index(1) > 0:i64)) & "
        "(index(1) < (extent(src, 1) - 1:i64))) {\n"
        "    dst[index(0), index(1)] = (0.25:f32 * (((src[(index(0) - 1:i64), index(1)] + src[(index(0) + 1:i64), "
        "index(1)]) + src[index(0), (index(1) - 1:i64)]) + src[index(0), (index(1) + 1:i64)]))\n"
        "  } else {\n"
        "    dst[index(0), index(1)] = src[index(0), index(1)]\n"
        "  }\n"
        "}\n");
  CHECK(stencil.ir().dims == 2);
}

TEST_CASE("dsl: ElseIf chains nest in the else branch") {
  Kernel classify("classify",
                  [](Out<std::int32_t> cls, In<double> x) {
                    Idx i = index(0);
                    If(x[i] < 0.0, [&] { cls[i] = -1; })
                        .ElseIf(x[i] < 1.0, [&] { cls[i] = 1; })
                        .ElseIf(x[i] < 2.0, [&] { cls[i] = 2; })
                        .Else([&] { cls[i] = 3; });
                  },
                  {"cls", "x"});
  CHECK(text(classify) ==
        "kernel classify(out i32[1] cls, in f64[1] x) dims 1 {\n"
        "  if (x[index(0)] < 0:f64) {\n"
        "    cls[index(0)] = -1:i32\n"
        "  } else {\n"
        "    if (x[index(0)] < 1:f64) {\n"
        "      cls[index(0)] = 1:i32\n"
        "    } else {\n"
        "      if (x[index(0)] < 2:f64) {\n"
        "        cls[index(0)] = 2:i32\n"
        "      } else {\n"
        "        cls[index(0)] = 3:i32\n"
        "      }\n"
        "    }\n"
        "  }\n"
        "}\n");

  // An ElseIf without a final Else, followed by more statements.
  Kernel partial("partial",
                 [](InOut<float> y, Val<float> t) {
                   Idx i = index(0);
                   If(y[i] > t, [&] { y[i] = t; }).ElseIf(y[i] < -t, [&] { y[i] = -t; });
                   y[i] *= 2;
                 },
                 {"y", "t"});
  CHECK(text(partial) ==
        "kernel partial(inout f32[1] y, val f32 t) dims 1 {\n"
        "  if (y[index(0)] > t) {\n"
        "    y[index(0)] = t\n"
        "  } else {\n"
        "    if (y[index(0)] < neg(t)) {\n"
        "      y[index(0)] = neg(t)\n"
        "    }\n"
        "  }\n"
        "  y[index(0)] = (y[index(0)] * 2:f32)\n"
        "}\n");
}

TEST_CASE("dsl: For with a counter argument, with a declared counter, and with a step") {
  Kernel rows("rows",
              [](Out<double> total, In<double, 2> m, Val<std::int64_t> n) {
                Idx i = index(0);
                Var<double> acc("acc", 0.0);
                For(0, n, [&](Idx k) { acc += m(i, k); });
                Idx k;
                For(k, 1, m.extent(1), [&] { acc -= m(i, k); });
                For(0, 10, 3, [&](Idx s) { acc *= cast<double>(s); });
                total[i] = acc;
              },
              {"total", "m", "n"});
  CHECK(text(rows) ==
        "kernel rows(out f64[1] total, in f64[2] m, val i64 n) dims 1 {\n"
        "  var acc: f64 = 0:f64\n"
        "  for k in 0:i64 .. n {\n"
        "    acc = (acc + m[index(0), k])\n"
        "  }\n"
        "  for k1 in 1:i64 .. extent(m, 1) {\n"
        "    acc = (acc - m[index(0), k1])\n"
        "  }\n"
        "  for k2 in 0:i64 .. 10:i64 step 3:i64 {\n"
        "    acc = (acc * f64(k2))\n"
        "  }\n"
        "  total[index(0)] = acc\n"
        "}\n");
}

TEST_CASE("dsl: For over i32 bounds counts in i32; mixed bounds widen to i64; loops nest") {
  Kernel k("loops",
           [](Out<std::int32_t> dst, Val<std::int32_t> n, Val<std::int64_t> m) {
             Idx i = index(0);
             Var<std::int32_t> c = 0;
             For(0, n, [&](Value<std::int32_t> a) { For(a, m, 2, [&](Idx b) { c += cast<std::int32_t>(b) * a; }); });
             Value<std::int32_t> j;
             For(j, n, 100, [&] { c ^= j; });
             dst[i] = c;
           },
           {"dst", "n", "m"});
  CHECK(text(k) ==
        "kernel loops(out i32[1] dst, val i32 n, val i64 m) dims 1 {\n"
        "  var v0: i32 = 0:i32\n"
        "  for k in 0:i32 .. n {\n"
        "    for k1 in i64(k) .. m step 2:i64 {\n"
        "      v0 = (v0 + (i32(k1) * k))\n"
        "    }\n"
        "  }\n"
        "  for k2 in n .. 100:i32 {\n"
        "    v0 = (v0 ^ k2)\n"
        "  }\n"
        "  dst[index(0)] = v0\n"
        "}\n");
}

TEST_CASE("dsl: Var with every compound assignment, named and copied Vars") {
  Kernel k("vars",
           [](Out<double> dst, Out<std::int32_t> bits, In<double> x, In<std::int32_t> n) {
             Idx i = index(0);
             Var<double> a = x[i];
             a += 1.0;
             a -= x[i];
             a *= 2;
             a /= 3.0;
             a %= 5.0;
             Var<double> b = a;  // a new local holding a's current value
             b = a * b;
             Var<std::int32_t> m("mask", n[i]);
             m += 1;
             m -= 2;
             m *= 3;
             m /= 4;
             m %= 5;
             m &= 6;
             m |= 7;
             m ^= n[i];
             Var<std::int32_t> m2("mask", 0);  // the name is taken: numbered
             m2 = m;
             Var<bool> flag;
             flag |= m2 > 3;
             flag &= true;
             flag ^= flag;
             dst[i] = select(flag, a, b);
             bits[i] = m2;
           },
           {"dst", "bits", "x", "n"});
  CHECK(text(k) ==
        "kernel vars(out f64[1] dst, out i32[1] bits, in f64[1] x, in i32[1] n) dims 1 {\n"
        "  var v0: f64 = x[index(0)]\n"
        "  v0 = (v0 + 1:f64)\n"
        "  v0 = (v0 - x[index(0)])\n"
        "  v0 = (v0 * 2:f64)\n"
        "  v0 = (v0 / 3:f64)\n"
        "  v0 = (v0 % 5:f64)\n"
        "  var v1: f64 = v0\n"
        "  v1 = (v0 * v1)\n"
        "  var mask: i32 = n[index(0)]\n"
        "  mask = (mask + 1:i32)\n"
        "  mask = (mask - 2:i32)\n"
        "  mask = (mask * 3:i32)\n"
        "  mask = (mask / 4:i32)\n"
        "  mask = (mask % 5:i32)\n"
        "  mask = (mask & 6:i32)\n"
        "  mask = (mask | 7:i32)\n"
        "  mask = (mask ^ n[index(0)])\n"
        "  var mask1: i32 = 0:i32\n"
        "  mask1 = mask\n"
        "  var v2: bool = false\n"
        "  v2 = (v2 | (mask1 > 3:i32))\n"
        "  v2 = (v2 & true)\n"
        "  v2 = (v2 ^ v2)\n"
        "  dst[index(0)] = select(v2, v0, v1)\n"
        "  bits[index(0)] = mask1\n"
        "}\n");
}

TEST_CASE("dsl: array element compound assignment on InOut arrays") {
  Kernel k("update",
           [](InOut<float> y, InOut<std::int64_t, 2> c, In<float> x) {
             Idx i = index(0);
             y[i] += x[i];
             y[i] -= 1;
             y[i] *= x[i + 1];
             y[i] /= 2.5;
             c(i, i) += 7;
             c(0, i) = c(i, 0);
           },
           {"y", "c", "x"});
  CHECK(text(k) ==
        "kernel update(inout f32[1] y, inout i64[2] c, in f32[1] x) dims 1 {\n"
        "  y[index(0)] = (y[index(0)] + x[index(0)])\n"
        "  y[index(0)] = (y[index(0)] - 1:f32)\n"
        "  y[index(0)] = (y[index(0)] * x[(index(0) + 1:i64)])\n"
        "  y[index(0)] = (y[index(0)] / 2.5:f32)\n"
        "  c[index(0), index(0)] = (c[index(0), index(0)] + 7:i64)\n"
        "  c[0:i64, index(0)] = c[index(0), 0:i64]\n"
        "}\n");
}

TEST_CASE("dsl: atomic_add and reductions") {
  Kernel k("stats",
           [](Out<std::int32_t> hist, In<double> x, Sum<double> total, Sum<std::int64_t> count, Min<double> low,
              Max<std::int32_t> high) {
             Idx i = index(0);
             Value<std::int32_t> bin = cast<std::int32_t>(x[i] * 10.0);
             atomic_add(hist[bin], 1);
             total += x[i];
             total.combine(1.5);
             count += 1;
             low.combine(x[i]);
             high.combine(bin);
           },
           {"hist", "x", "total", "count", "low", "high"});
  CHECK(text(k) ==
        "kernel stats(out i32[1] hist, in f64[1] x, sum f64 total, sum i64 count, min f64 low, max i32 high) dims 1 "
        "{\n"
        "  atomic hist[i64(i32((x[index(0)] * 10:f64)))] += 1:i32\n"
        "  reduce total <- x[index(0)]\n"
        "  reduce total <- 1.5:f64\n"
        "  reduce count <- 1:i64\n"
        "  reduce low <- x[index(0)]\n"
        "  reduce high <- i32((x[index(0)] * 10:f64))\n"
        "}\n");
}

TEST_CASE("dsl: cast, select, unary operators, comparisons and bitwise operators") {
  Kernel k("ops",
           [](Out<double> dst, Out<std::int64_t> bits, Out<bool> flags, In<float> f, In<std::int32_t> n) {
             Idx i = index(0);
             Value<float> x = f[i];
             Value<std::int32_t> m = n[i];
             dst[i] = cast<double>(x) + cast<double>(m) + cast<double>(3);
             bits[i] = ((cast<std::int64_t>(m) << 3) >> cast<std::int64_t>(~m)) | ((i & 7) ^ i);
             Value<bool> b = x == x && x != 1.0f;
             flags[i] = !b || (x < 1 && x <= 2) || ((m > 3) & (m >= -4)) || cast<bool>(m);
             dst[i] = select(x > 0, cast<double>(-x), 0.5);
           },
           {"dst", "bits", "flags", "f", "n"});
  CHECK(text(k) ==
        "kernel ops(out f64[1] dst, out i64[1] bits, out bool[1] flags, in f32[1] f, in i32[1] n) dims 1 {\n"
        "  dst[index(0)] = ((f64(f[index(0)]) + f64(n[index(0)])) + 3:f64)\n"
        "  bits[index(0)] = (((i64(n[index(0)]) << 3:i64) >> i64(not(n[index(0)]))) | ((index(0) & 7:i64) ^ "
        "index(0)))\n"
        "  flags[index(0)] = (((not(((f[index(0)] == f[index(0)]) & (f[index(0)] != 1:f32))) | ((f[index(0)] < "
        "1:f32) & (f[index(0)] <= 2:f32))) | ((n[index(0)] > 3:i32) & (n[index(0)] >= -4:i32))) | "
        "bool(n[index(0)]))\n"
        "  dst[index(0)] = select((f[index(0)] > 0:f32), f64(neg(f[index(0)])), 0.5:f64)\n"
        "}\n");
}

TEST_CASE("dsl: select between two literals takes their type") {
  Kernel k("pick",
           [](Out<double> dst, Out<float> half, Out<std::int32_t> sign, In<float> f) {
             Idx i = index(0);
             dst[i] = select(f[i] > 0, 0.5, -0.5);
             half[i] = f[i] * select(f[i] > 1, 0.5f, 2.0f);
             sign[i] = select(f[i] < 0, -1, 1);
           },
           {"dst", "half", "sign", "f"});
  CHECK(text(k) ==
        "kernel pick(out f64[1] dst, out f32[1] half, out i32[1] sign, in f32[1] f) dims 1 {\n"
        "  dst[index(0)] = select((f[index(0)] > 0:f32), 0.5:f64, -0.5:f64)\n"
        "  half[index(0)] = (f[index(0)] * select((f[index(0)] > 1:f32), 0.5:f32, 2:f32))\n"
        "  sign[index(0)] = select((f[index(0)] < 0:f32), -1:i32, 1:i32)\n"
        "}\n");
}

TEST_CASE("dsl: math functions under their C names") {
  Kernel k("math",
           [](Out<double> dst, Out<float> outf, Out<std::int32_t> outi, In<double> x, In<float> y, In<std::int32_t> n) {
             Idx i = index(0);
             dst[i] = sqrt(x[i]) + exp(x[i]) + log(x[i]) + pow(x[i], 2.0) + sin(x[i]) + cos(x[i]) + fabs(x[i]) +
                      floor(x[i]) + fmin(x[i], 1.0) + fmax(0.0, x[i]) + abs(x[i]);
             outf[i] = pow(2, y[i]) + min(y[i], 3) + max(y[i], y[i + 1]) + abs(y[i]);
             outi[i] = abs(n[i]) + min(n[i], 0) + max(-1, n[i]);
           },
           {"dst", "outf", "outi", "x", "y", "n"});
  CHECK(text(k) ==
        "kernel math(out f64[1] dst, out f32[1] outf, out i32[1] outi, in f64[1] x, in f32[1] y, in i32[1] n) dims "
        "1 {\n"
        "  dst[index(0)] = ((((((((((sqrt(x[index(0)]) + exp(x[index(0)])) + log(x[index(0)])) + pow(x[index(0)], "
        "2:f64)) + sin(x[index(0)])) + cos(x[index(0)])) + abs(x[index(0)])) + floor(x[index(0)])) + "
        "min(x[index(0)], 1:f64)) + max(0:f64, x[index(0)])) + abs(x[index(0)]))\n"
        "  outf[index(0)] = (((pow(2:f32, y[index(0)]) + min(y[index(0)], 3:f32)) + max(y[index(0)], "
        "y[(index(0) + 1:i64)])) + abs(y[index(0)]))\n"
        "  outi[index(0)] = ((abs(n[index(0)]) + min(n[index(0)], 0:i32)) + max(-1:i32, n[index(0)]))\n"
        "}\n");
}

TEST_CASE("dsl: fma takes its type from whichever operand is symbolic") {
  Kernel k("fused",
           [](Out<float> dst, In<float> x) {
             Idx i = index(0);
             dst[i] = fma(x[i], 2, 1.5) + fma(0.5, x[i], x[i]) + fma(2, 3, x[i]);
           },
           {"dst", "x"});
  CHECK(text(k) ==
        "kernel fused(out f32[1] dst, in f32[1] x) dims 1 {\n"
        "  dst[index(0)] = ((fma(x[index(0)], 2:f32, 1.5:f32) + fma(0.5:f32, x[index(0)], x[index(0)])) + fma(2:f32, "
        "3:f32, x[index(0)]))\n"
        "}\n");
}

TEST_CASE("dsl: C++ literals adapt to the symbolic operand's type") {
  Kernel k("literals",
           [](Out<float> f, Out<double> d, Out<std::int32_t> n, Out<std::int64_t> l, In<float> x) {
             Idx i = index(0);
             f[i] = x[i] * 2;
             f[i] = 0.1 + x[i];
             d[i] = cast<double>(x[i]) / 3;
             n[i] = cast<std::int32_t>(x[i]) - 7LL;
             l[i] = i * 2 + std::int32_t{5};
             f[i] = 4;
           },
           {"f", "d", "n", "l", "x"});
  CHECK(text(k) ==
        "kernel literals(out f32[1] f, out f64[1] d, out i32[1] n, out i64[1] l, in f32[1] x) dims 1 {\n"
        "  f[index(0)] = (x[index(0)] * 2:f32)\n"
        "  f[index(0)] = (0.1:f32 + x[index(0)])\n"
        "  d[index(0)] = (f64(x[index(0)]) / 3:f64)\n"
        "  n[index(0)] = (i32(x[index(0)]) - 7:i32)\n"
        "  l[index(0)] = ((index(0) * 2:i64) + 5:i64)\n"
        "  f[index(0)] = 4:f32\n"
        "}\n");
}

TEST_CASE("dsl: int32 indices are widened to i64; literal indices are i64") {
  Kernel k("gather",
           [](Out<double> dst, In<double> a, In<std::int32_t> idx, In<double, 2> m) {
             Idx i = index(0);
             Value<std::int32_t> j = idx[i];
             dst[i] = a[j] + a[3] + m(j, i) + m(j + 1, 0);
           },
           {"dst", "a", "idx", "m"});
  CHECK(text(k) ==
        "kernel gather(out f64[1] dst, in f64[1] a, in i32[1] idx, in f64[2] m) dims 1 {\n"
        "  dst[index(0)] = (((a[i64(idx[index(0)])] + a[3:i64]) + m[i64(idx[index(0)]), index(0)]) + "
        "m[i64((idx[index(0)] + 1:i32)), 0:i64])\n"
        "}\n");
}

TEST_CASE("dsl: a 3-D index range and 3-D arrays") {
  Kernel k("cube",
           [](Out<float, 3> dst, In<float, 3> src) {
             Idx i = index(0), j = index(1), l = index(2);
             dst(i, j, l) = src(l, j, i) + cast<float>(src.extent(2));
           },
           {"dst", "src"});
  CHECK(text(k) ==
        "kernel cube(out f32[3] dst, in f32[3] src) dims 3 {\n"
        "  dst[index(0), index(1), index(2)] = (src[index(2), index(1), index(0)] + f32(extent(src, 2)))\n"
        "}\n");
  CHECK(k.ir().dims == 3);

  // The number of dimensions is the highest index(d) used, plus one.
  Kernel only_z("only_z", [](Out<float, 3> dst) { dst(0, 0, index(2)) = 1; }, {"dst"});
  CHECK(only_z.ir().dims == 3);
  Kernel no_index("no_index", [](Out<float> dst) { dst[0] = 1; }, {"dst"});
  CHECK(text(no_index) ==
        "kernel no_index(out f32[1] dst) dims 1 {\n"
        "  dst[0:i64] = 1:f32\n"
        "}\n");
}

TEST_CASE("dsl: Values are C++ names for expressions; only Var makes a local") {
  Kernel k("values",
           [](Out<double> dst, In<double> x) {
             Idx i = index(0);
             Value<double> a = x[i] * x[i];
             Value<double> b = a + a;  // a's expression appears twice, no local
             a = b - 1.0;              // rebinding at the same depth is plain C++
             If(a > 0.0, [&] {
               Value<double> c = a * 2;  // made inside the body: may be rebound there
               c = c + 1;
               dst[i] = c;
             });
           },
           {"dst", "x"});
  CHECK(text(k) ==
        "kernel values(out f64[1] dst, in f64[1] x) dims 1 {\n"
        "  if ((((x[index(0)] * x[index(0)]) + (x[index(0)] * x[index(0)])) - 1:f64) > 0:f64) {\n"
        "    dst[index(0)] = (((((x[index(0)] * x[index(0)]) + (x[index(0)] * x[index(0)])) - 1:f64) * 2:f64) + "
        "1:f64)\n"
        "  }\n"
        "}\n");
}
