// eliminate_common_subexpressions: repeated computations share one local
// within a straight-line run, and nothing is shared where its value could
// differ (after a store or an assign) or where it would leave a conditional body.
#include <doctest/doctest.h>
#include <canopy/ir/parser.hpp>
#include <canopy/ir/passes/cse.hpp>
#include <canopy/ir/printer.hpp>
#include <canopy/ir/verifier.hpp>

#include <string>

using namespace canopy::ir;

namespace {

// The runtime's common case: the launch passes distinct memory in every
// array parameter.
std::string after_cse(const std::string& text, Arrays arrays = Arrays::Distinct) {
  const Kernel result = eliminate_common_subexpressions(parse(text), arrays);
  verify(result);
  return print(result);
}

}  // namespace

TEST_CASE("cse: a repeated expression is computed once") {
  CHECK(after_cse("kernel k(out f64[1] a, in f64[1] b, val f64 s) dims 1 {\n"
                  "  a[index(0)] = ((b[index(0)] * s) + (b[index(0)] * s))\n"
                  "}\n") ==
        "kernel k(out f64[1] a, in f64[1] b, val f64 s) dims 1 {\n"
        "  var cse0: f64 = (b[index(0)] * s)\n"
        "  a[index(0)] = (cse0 + cse0)\n"
        "}\n");
}

TEST_CASE("cse: the largest repeated expression is shared, and its parts that repeat elsewhere") {
  CHECK(after_cse("kernel k(out f64[1] a, out f64[1] c, in f64[1] b, val f64 s) dims 1 {\n"
                  "  var x: f64 = ((b[index(0)] * s) + 1:f64)\n"
                  "  a[index(0)] = (((b[index(0)] * s) + 1:f64) * x)\n"
                  "  c[index(0)] = sqrt((b[index(0)] * s))\n"
                  "}\n") ==
        "kernel k(out f64[1] a, out f64[1] c, in f64[1] b, val f64 s) dims 1 {\n"
        "  var cse0: f64 = (b[index(0)] * s)\n"
        "  var x: f64 = (cse0 + 1:f64)\n"
        "  a[index(0)] = (x * x)\n"
        "  c[index(0)] = sqrt(cse0)\n"
        "}\n");
}

TEST_CASE("cse: a load is not shared across a store to its array") {
  const std::string text =
      "kernel k(inout f64[1] a, out f64[1] c, val f64 s) dims 1 {\n"
      "  var x: f64 = (a[index(0)] + s)\n"
      "  a[index(0)] = (x * 2:f64)\n"
      "  var y: f64 = (a[index(0)] + s)\n"
      "  c[index(0)] = (x + y)\n"
      "}\n";
  CHECK(after_cse(text) == text);
}

TEST_CASE("cse: a load is not shared across an atomic add to its array") {
  const std::string text =
      "kernel k(inout f64[1] a, out f64[1] c, val f64 s) dims 1 {\n"
      "  var x: f64 = (a[index(0)] * s)\n"
      "  atomic a[index(0)] += 1:f64\n"
      "  c[index(0)] = ((a[index(0)] * s) + x)\n"
      "}\n";
  CHECK(after_cse(text) == text);
}

TEST_CASE("cse: where arrays may alias, a store ends the sharing of what reads any array of its type") {
  // b may be a passed again (In and InOut): b[i] is read again after the
  // store to a. The s * s and the i32 array's load stay shared.
  CHECK(after_cse("kernel k(inout f64[1] a, in f64[1] b, in i32[1] c, val f64 s) dims 1 {\n"
                  "  var x: f64 = ((b[index(0)] + (s * s)) + f64(c[index(0)]))\n"
                  "  a[index(0)] = x\n"
                  "  a[index(0)] = (((b[index(0)] + (s * s)) + f64(c[index(0)])) + x)\n"
                  "}\n",
                  Arrays::MayAlias) ==
        "kernel k(inout f64[1] a, in f64[1] b, in i32[1] c, val f64 s) dims 1 {\n"
        "  var cse0: f64 = (s * s)\n"
        "  var cse1: f64 = f64(c[index(0)])\n"
        "  var x: f64 = ((b[index(0)] + cse0) + cse1)\n"
        "  a[index(0)] = x\n"
        "  a[index(0)] = (((b[index(0)] + cse0) + cse1) + x)\n"
        "}\n");
}

TEST_CASE("cse: a store ends only the sharing of what reads its array") {
  CHECK(after_cse("kernel k(inout f64[1] a, in f64[1] b, val f64 s) dims 1 {\n"
                  "  var x: f64 = ((a[index(0)] + (s * s)) + b[index(0)])\n"
                  "  a[index(0)] = x\n"
                  "  var y: f64 = ((a[index(0)] + (s * s)) + b[index(0)])\n"
                  "  a[index(0)] = (y + b[index(0)])\n"
                  "}\n") ==
        "kernel k(inout f64[1] a, in f64[1] b, val f64 s) dims 1 {\n"
        "  var cse0: f64 = (s * s)\n"
        "  var cse1: f64 = b[index(0)]\n"
        "  var x: f64 = ((a[index(0)] + cse0) + cse1)\n"
        "  a[index(0)] = x\n"
        "  var y: f64 = ((a[index(0)] + cse0) + cse1)\n"
        "  a[index(0)] = (y + cse1)\n"
        "}\n");
}

TEST_CASE("cse: an expression reading a local is not shared across an assign to it") {
  const std::string text =
      "kernel k(out f64[1] a, val f64 s) dims 1 {\n"
      "  var t: f64 = s\n"
      "  var x: f64 = (t * t)\n"
      "  t = (t + 1:f64)\n"
      "  var y: f64 = (t * t)\n"
      "  a[index(0)] = (x + y)\n"
      "}\n";
  CHECK(after_cse(text) == text);
}

TEST_CASE("cse: a computation in an if body stays in that body") {
  CHECK(after_cse("kernel k(out f64[1] a, in f64[1] b, val f64 s) dims 1 {\n"
                  "  var x: f64 = (b[index(0)] * s)\n"
                  "  if (s > 0:f64) {\n"
                  "    a[index(0)] = (b[index(0)] * s)\n"
                  "  } else {\n"
                  "    a[index(0)] = ((b[index(0)] * s) + (b[index(0)] * s))\n"
                  "  }\n"
                  "  a[index(0)] = x\n"
                  "}\n") ==
        "kernel k(out f64[1] a, in f64[1] b, val f64 s) dims 1 {\n"
        "  var x: f64 = (b[index(0)] * s)\n"
        "  if (s > 0:f64) {\n"
        "    a[index(0)] = (b[index(0)] * s)\n"
        "  } else {\n"
        "    var cse0: f64 = (b[index(0)] * s)\n"
        "    a[index(0)] = (cse0 + cse0)\n"
        "  }\n"
        "  a[index(0)] = x\n"
        "}\n");
}

TEST_CASE("cse: the same expression in both branches is not hoisted above the if") {
  const std::string text =
      "kernel k(out f64[1] a, val f64 s, val bool b) dims 1 {\n"
      "  if b {\n"
      "    a[index(0)] = sqrt(s)\n"
      "  } else {\n"
      "    a[index(0)] = (sqrt(s) + 1:f64)\n"
      "  }\n"
      "}\n";
  CHECK(after_cse(text) == text);
}

TEST_CASE("cse: an expression in a loop body is not shared with the code around the loop") {
  const std::string text =
      "kernel k(out f64[1] a, val f64 s, val i64 n) dims 1 {\n"
      "  var x: f64 = (s * s)\n"
      "  for j in 0:i64 .. n {\n"
      "    a[j] = (s * s)\n"
      "  }\n"
      "  a[index(0)] = (x + (s * s))\n"
      "}\n";
  CHECK(after_cse(text) == text);
}

TEST_CASE("cse: an if condition belongs to the run before it") {
  CHECK(after_cse("kernel k(out f64[1] a, val f64 s) dims 1 {\n"
                  "  var x: f64 = (s * s)\n"
                  "  if ((s * s) > 1:f64) {\n"
                  "    a[index(0)] = x\n"
                  "  }\n"
                  "}\n") ==
        "kernel k(out f64[1] a, val f64 s) dims 1 {\n"
        "  var x: f64 = (s * s)\n"
        "  if (x > 1:f64) {\n"
        "    a[index(0)] = x\n"
        "  }\n"
        "}\n");
}

TEST_CASE("cse: new names avoid the kernel's names") {
  CHECK(after_cse("kernel k(out f64[1] a, val f64 cse1) dims 1 {\n"
                  "  var cse0: f64 = (cse1 + cse1)\n"
                  "  a[index(0)] = ((cse1 * cse1) + ((cse1 * cse1) + cse0))\n"
                  "}\n") ==
        "kernel k(out f64[1] a, val f64 cse1) dims 1 {\n"
        "  var cse0: f64 = (cse1 + cse1)\n"
        "  var cse2: f64 = (cse1 * cse1)\n"
        "  a[index(0)] = (cse2 + (cse2 + cse0))\n"
        "}\n");
}

TEST_CASE("cse: literals, indices, parameters, locals and extents are never given a local") {
  const std::string text =
      "kernel k(out f64[1] a, val f64 s) dims 1 {\n"
      "  var x: f64 = (s + 1:f64)\n"
      "  a[index(0)] = (((s + x) * (s + 1:f64)) + f64(extent(a, 0)))\n"
      "  a[index(0)] = ((x * s) + f64(extent(a, 0)))\n"
      "}\n";
  CHECK(after_cse(text) ==
        "kernel k(out f64[1] a, val f64 s) dims 1 {\n"
        "  var x: f64 = (s + 1:f64)\n"
        "  var cse0: f64 = f64(extent(a, 0))\n"
        "  a[index(0)] = (((s + x) * x) + cse0)\n"
        "  a[index(0)] = ((x * s) + cse0)\n"
        "}\n");
}

TEST_CASE("cse: a local that is assigned later does not stand for its initial value") {
  CHECK(after_cse("kernel k(out f64[1] a, val f64 s) dims 1 {\n"
                  "  var x: f64 = (s * s)\n"
                  "  x = (x + 1:f64)\n"
                  "  a[index(0)] = ((s * s) + x)\n"
                  "}\n") ==
        "kernel k(out f64[1] a, val f64 s) dims 1 {\n"
        "  var cse0: f64 = (s * s)\n"
        "  var x: f64 = cse0\n"
        "  x = (x + 1:f64)\n"
        "  a[index(0)] = (cse0 + x)\n"
        "}\n");
}

TEST_CASE("cse: a kernel without repetition is returned unchanged") {
  const Kernel k = parse(
      "kernel k(out f64[1] a, in f64[1] b, val f64 s) dims 1 {\n"
      "  a[index(0)] = (b[index(0)] + (s * 2:f64))\n"
      "}\n");
  CHECK(eliminate_common_subexpressions(k).body == k.body);
}
