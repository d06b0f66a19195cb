// optimize: the standard pipeline end to end, on kernels that need every pass.
#include <doctest/doctest.h>
#include <canopy/ir/parser.hpp>
#include <canopy/ir/passes/optimize.hpp>
#include <canopy/ir/printer.hpp>
#include <canopy/ir/verifier.hpp>

#include <string>

using namespace canopy::ir;

namespace {

std::string optimized(const std::string& text) { return print(optimize(parse(text))); }

}  // namespace

TEST_CASE("optimize: folding, simplification, LICM, CSE and DCE together") {
  const std::string result = optimized(
      "kernel k(out f64[1] a, in f64[1] b, val f64 s, val i64 n) dims 1 {\n"
      "  var unused: f64 = (s * 7:f64)\n"
      "  var scale: f64 = (s * (2:f64 * 0.5:f64))\n"
      "  if (1:i32 > 2:i32) {\n"
      "    a[index(0)] = 0:f64\n"
      "  }\n"
      "  for j in 0:i64 .. n {\n"
      "    a[(j + 0:i64)] = ((b[j] * (scale + 1:f64)) + ((scale + 1:f64) * 2:f64))\n"
      "  }\n"
      "  for e in 3:i64 .. (1:i64 + 2:i64) {\n"
      "    a[e] = s\n"
      "  }\n"
      "}\n");
  CHECK(result ==
        "kernel k(out f64[1] a, in f64[1] b, val f64 s, val i64 n) dims 1 {\n"
        "  var scale: f64 = s\n"
        "  var licm0: f64 = (scale + 1:f64)\n"
        "  var licm1: f64 = (licm0 * 2:f64)\n"
        "  for j in 0:i64 .. n {\n"
        "    a[j] = ((b[j] * licm0) + licm1)\n"
        "  }\n"
        "}\n");
  CHECK(optimized(result) == result);  // a second run finds nothing more
}

TEST_CASE("optimize: a triad is already optimal") {
  const std::string text =
      "kernel triad(out f64[1] a, in f64[1] b, in f64[1] c, val f64 s) dims 1 {\n"
      "  a[index(0)] = (b[index(0)] + (s * c[index(0)]))\n"
      "}\n";
  CHECK(optimized(text) == text);
}

TEST_CASE("optimize: what must not move or be shared stays where it is") {
  const std::string text =
      "kernel k(inout f64[1] a, val f64 s, val i64 n, val i64 d) dims 1 {\n"
      "  var x: f64 = (a[index(0)] * s)\n"
      "  a[index(0)] = (x + 1:f64)\n"
      "  var y: f64 = (a[index(0)] * s)\n"
      "  for j in 0:i64 .. n {\n"
      "    if (j != d) {\n"
      "      a[j] = (f64((n / d)) + a[0:i64])\n"
      "    }\n"
      "  }\n"
      "  a[index(0)] = (x + y)\n"
      "}\n";
  CHECK(optimized(text) == text);
}

TEST_CASE("optimize: floats keep their exact semantics through the pipeline") {
  CHECK(optimized("kernel k(out f32[1] a, val f32 s) dims 1 {\n"
                  "  var z: f32 = ((s + 0:f32) - (s - s))\n"
                  "  a[index(0)] = ((z * 1:f32) + ((16777216:f32 + 1:f32) + 1:f32))\n"
                  "}\n") ==
        "kernel k(out f32[1] a, val f32 s) dims 1 {\n"
        "  var z: f32 = ((s + 0:f32) - (s - s))\n"
        "  a[index(0)] = (z + 16777216:f32)\n"
        "}\n");
}

TEST_CASE("optimize: integer code folds and simplifies to a fixed point") {
  CHECK(optimized("kernel k(out i32[1] a, val i32 n) dims 1 {\n"
                  "  var t: i32 = (((n + 1:i32) + 2:i32) - 3:i32)\n"
                  "  var dead: i32 = (t / 0:i32)\n"
                  "  if ((t - t) == 0:i32) {\n"
                  "    a[index(0)] = ((t * 1:i32) + (2147483647:i32 + 1:i32))\n"
                  "  }\n"
                  "}\n") ==
        "kernel k(out i32[1] a, val i32 n) dims 1 {\n"
        "  var t: i32 = n\n"
        "  a[index(0)] = (t + -2147483648:i32)\n"
        "}\n");
}
