// hoist_loop_invariants: what a loop computes the same way in every iteration
// moves in front of it (a load only when every iteration makes it and the loop
// cannot change it, under a guard that the loop runs); integer division and
// anything depending on the loop counter or on locals the loop changes stay
// inside.
#include <doctest/doctest.h>
#include <canopy/ir/parser.hpp>
#include <canopy/ir/passes/licm.hpp>
#include <canopy/ir/printer.hpp>
#include <canopy/ir/verifier.hpp>

#include <string>

using namespace canopy::ir;

namespace {

std::string after_licm(const std::string& text) {
  const Kernel result = hoist_loop_invariants(parse(text));
  verify(result);
  return print(result);
}

}  // namespace

TEST_CASE("licm: an invariant subexpression moves in front of the loop") {
  CHECK(after_licm("kernel k(out f64[1] a, in f64[1] b, val f64 s, val i64 n) dims 1 {\n"
                   "  for j in 0:i64 .. n {\n"
                   "    a[j] = (b[j] * (s * 2:f64))\n"
                   "  }\n"
                   "}\n") ==
        "kernel k(out f64[1] a, in f64[1] b, val f64 s, val i64 n) dims 1 {\n"
        "  var licm0: f64 = (s * 2:f64)\n"
        "  for j in 0:i64 .. n {\n"
        "    a[j] = (b[j] * licm0)\n"
        "  }\n"
        "}\n");
}

TEST_CASE("licm: a load stays in a loop that writes an array of its element type (it may be the same memory)") {
  const std::string text =
      "kernel k(out f64[1] a, in f64[1] b, val f64 s, val i64 n) dims 1 {\n"
      "  for j in 0:i64 .. n {\n"
      "    a[j] = (b[index(0)] * s)\n"
      "  }\n"
      "}\n";
  CHECK(after_licm(text) == text);
}

TEST_CASE("licm: a load every iteration makes moves out, under a guard that the loop runs at all") {
  // m is i64, the loop writes only f64: m[index(0)] and m[i] cannot change in
  // the inner loop. Read before it only when it runs: with n = 0 no index of
  // m is read, in bounds or not. b[...] stays (the loop writes f64).
  CHECK(after_licm("kernel k(out f64[1] a, in i64[1] m, in f64[1] b, val i64 n) dims 1 {\n"
                   "  for i in 0:i64 .. n {\n"
                   "    for j in 0:i64 .. n {\n"
                   "      a[j] = (b[m[index(0)]] + f64(m[i]))\n"
                   "    }\n"
                   "  }\n"
                   "}\n") ==
        "kernel k(out f64[1] a, in i64[1] m, in f64[1] b, val i64 n) dims 1 {\n"
        "  var licm2: bool = (0:i64 < n)\n"
        "  for i in 0:i64 .. n {\n"
        "    if licm2 {\n"
        "      var licm0: i64 = m[index(0)]\n"
        "      var licm1: f64 = f64(m[i])\n"
        "      for j in 0:i64 .. n {\n"
        "        a[j] = (b[licm0] + licm1)\n"
        "      }\n"
        "    }\n"
        "  }\n"
        "}\n");
}

TEST_CASE("licm: a load only some iterations make stays: under an if, in a select's arm, after a logical and") {
  CHECK(after_licm("kernel k(out f64[1] a, in i64[1] m, in f64[1] b, val i64 n) dims 1 {\n"
                   "  for j in 0:i64 .. n {\n"
                   "    if (b[j] > 0:f64) {\n"
                   "      a[j] = f64(m[index(0)])\n"
                   "    }\n"
                   "    a[j] = select((j > 0:i64), f64(m[(index(0) + 2:i64)]), 0:f64)\n"
                   "    if ((j > 1:i64) & (m[(index(0) + 3:i64)] > 0:i64)) {\n"
                   "      a[j] = 1:f64\n"
                   "    }\n"
                   "  }\n"
                   "}\n") ==
        "kernel k(out f64[1] a, in i64[1] m, in f64[1] b, val i64 n) dims 1 {\n"
        "  var licm0: i64 = (index(0) + 2:i64)\n"
        "  var licm1: i64 = (index(0) + 3:i64)\n"
        "  for j in 0:i64 .. n {\n"
        "    if (b[j] > 0:f64) {\n"
        "      a[j] = f64(m[index(0)])\n"
        "    }\n"
        "    a[j] = select((j > 0:i64), f64(m[licm0]), 0:f64)\n"
        "    if ((j > 1:i64) & (m[licm1] > 0:i64)) {\n"
        "      a[j] = 1:f64\n"
        "    }\n"
        "  }\n"
        "}\n");
}

TEST_CASE("licm: integer division stays in the loop, under its guard") {
  CHECK(after_licm("kernel k(out f64[1] a, val f64 s, val i64 n, val i64 d) dims 1 {\n"
                   "  for j in 0:i64 .. n {\n"
                   "    if (d != 0:i64) {\n"
                   "      a[j] = (f64((n / d)) + f64((n % d)))\n"
                   "    }\n"
                   "    a[j] = (s / 3:f64)\n"
                   "  }\n"
                   "}\n") ==
        "kernel k(out f64[1] a, val f64 s, val i64 n, val i64 d) dims 1 {\n"
        "  var licm0: bool = (d != 0:i64)\n"
        "  var licm1: f64 = (s / 3:f64)\n"
        "  for j in 0:i64 .. n {\n"
        "    if licm0 {\n"
        "      a[j] = (f64((n / d)) + f64((n % d)))\n"
        "    }\n"
        "    a[j] = licm1\n"
        "  }\n"
        "}\n");
}

TEST_CASE("licm: expressions reading the counter or a local the loop assigns stay") {
  CHECK(after_licm("kernel k(out f64[1] a, val f64 s, val i64 n) dims 1 {\n"
                   "  var acc: f64 = 0:f64\n"
                   "  for j in 0:i64 .. n {\n"
                   "    acc = ((acc * s) + (s * s))\n"
                   "    a[j] = (f64(j) * acc)\n"
                   "  }\n"
                   "  a[index(0)] = acc\n"
                   "}\n") ==
        "kernel k(out f64[1] a, val f64 s, val i64 n) dims 1 {\n"
        "  var acc: f64 = 0:f64\n"
        "  var licm0: f64 = (s * s)\n"
        "  for j in 0:i64 .. n {\n"
        "    acc = ((acc * s) + licm0)\n"
        "    a[j] = (f64(j) * acc)\n"
        "  }\n"
        "  a[index(0)] = acc\n"
        "}\n");
}

TEST_CASE("licm: a declaration with an invariant value moves out whole, unless the loop assigns it") {
  CHECK(after_licm("kernel k(out f64[1] a, val f64 s, val i64 n) dims 1 {\n"
                   "  for j in 0:i64 .. n {\n"
                   "    var t: f64 = (s * 3:f64)\n"
                   "    var u: f64 = (t + s)\n"
                   "    var v: f64 = (t + f64(j))\n"
                   "    var w: f64 = (s * 2:f64)\n"
                   "    w = (w + v)\n"
                   "    a[j] = (u + w)\n"
                   "  }\n"
                   "}\n") ==
        "kernel k(out f64[1] a, val f64 s, val i64 n) dims 1 {\n"
        "  var t: f64 = (s * 3:f64)\n"
        "  var u: f64 = (t + s)\n"
        "  var licm0: f64 = (s * 2:f64)\n"
        "  for j in 0:i64 .. n {\n"
        "    var v: f64 = (t + f64(j))\n"
        "    var w: f64 = licm0\n"
        "    w = (w + v)\n"
        "    a[j] = (u + w)\n"
        "  }\n"
        "}\n");
}

TEST_CASE("licm: invariants climb out of every loop they do not depend on, inner loops first") {
  CHECK(after_licm("kernel k(out f64[1] a, val f64 s, val i64 n) dims 1 {\n"
                   "  for i in 0:i64 .. n {\n"
                   "    for j in 0:i64 .. n {\n"
                   "      a[((i * n) + j)] = (s * s)\n"
                   "    }\n"
                   "  }\n"
                   "}\n") ==
        "kernel k(out f64[1] a, val f64 s, val i64 n) dims 1 {\n"
        "  var licm1: f64 = (s * s)\n"
        "  for i in 0:i64 .. n {\n"
        "    var licm0: i64 = (i * n)\n"
        "    for j in 0:i64 .. n {\n"
        "      a[(licm0 + j)] = licm1\n"
        "    }\n"
        "  }\n"
        "}\n");
}

TEST_CASE("licm: one local per distinct expression, inside a nested if too") {
  CHECK(after_licm("kernel k(out f64[1] a, val f64 s, val i64 n) dims 2 {\n"
                   "  for j in 0:i64 .. n {\n"
                   "    if (j > index(1)) {\n"
                   "      a[j] = sqrt(s)\n"
                   "    } else {\n"
                   "      a[j] = (sqrt(s) + f64(index(1)))\n"
                   "    }\n"
                   "  }\n"
                   "}\n") ==
        "kernel k(out f64[1] a, val f64 s, val i64 n) dims 2 {\n"
        "  var licm0: f64 = sqrt(s)\n"
        "  var licm1: f64 = (sqrt(s) + f64(index(1)))\n"  // CSE, next in the pipeline, shares sqrt(s)
        "  for j in 0:i64 .. n {\n"
        "    if (j > index(1)) {\n"
        "      a[j] = licm0\n"
        "    } else {\n"
        "      a[j] = licm1\n"
        "    }\n"
        "  }\n"
        "}\n");
}

TEST_CASE("licm: a loop with nothing invariant is returned unchanged") {
  const Kernel k = parse(
      "kernel k(out f64[1] a, in f64[1] b, val f64 s, val i64 n) dims 1 {\n"
      "  for j in 0:i64 .. n {\n"
      "    a[j] = (b[j] * s)\n"
      "  }\n"
      "}\n");
  CHECK(hoist_loop_invariants(k).body == k.body);
}
