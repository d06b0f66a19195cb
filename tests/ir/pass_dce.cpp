// eliminate_dead_code: locals whose value never reaches an effect go with
// every assignment to them; empty ifs, loops and blocks go too.
#include <doctest/doctest.h>
#include <canopy/ir/parser.hpp>
#include <canopy/ir/passes/dce.hpp>
#include <canopy/ir/printer.hpp>
#include <canopy/ir/verifier.hpp>

#include <string>

using namespace canopy::ir;

namespace {

std::string after_dce(const std::string& text) {
  const Kernel result = eliminate_dead_code(parse(text));
  verify(result);
  return print(result);
}

}  // namespace

TEST_CASE("dce: unread locals go, including those read only by unread locals") {
  CHECK(after_dce("kernel k(out f64[1] a, val f64 s) dims 1 {\n"
                  "  var t: f64 = (s * 2:f64)\n"
                  "  var u: f64 = (t + 1:f64)\n"
                  "  var w: f64 = (s + 3:f64)\n"
                  "  a[index(0)] = w\n"
                  "}\n") ==
        "kernel k(out f64[1] a, val f64 s) dims 1 {\n"
        "  var w: f64 = (s + 3:f64)\n"
        "  a[index(0)] = w\n"
        "}\n");
}

TEST_CASE("dce: a local read only by its own assignments goes with them") {
  CHECK(after_dce("kernel k(out f64[1] a, val f64 s, val i64 n) dims 1 {\n"
                  "  var acc: f64 = 0:f64\n"
                  "  var count: i64 = 0:i64\n"
                  "  var p: f64 = s\n"
                  "  var q: f64 = s\n"
                  "  for j in 0:i64 .. n {\n"
                  "    acc = (acc + s)\n"
                  "    count = (count + 1:i64)\n"
                  "    p = q\n"
                  "    q = (p * 2:f64)\n"
                  "  }\n"
                  "  a[index(0)] = acc\n"
                  "}\n") ==
        "kernel k(out f64[1] a, val f64 s, val i64 n) dims 1 {\n"
        "  var acc: f64 = 0:f64\n"
        "  for j in 0:i64 .. n {\n"
        "    acc = (acc + s)\n"
        "  }\n"
        "  a[index(0)] = acc\n"
        "}\n");
}

TEST_CASE("dce: locals read by conditions, loop bounds, stores, atomics and reductions stay") {
  const std::string text =
      "kernel k(inout f64[1] a, val f64 s, val i64 n, sum f64 total) dims 1 {\n"
      "  var lim: i64 = (n * 2:i64)\n"
      "  var flag: bool = (s > 0:f64)\n"
      "  var at: i64 = (index(0) + 1:i64)\n"
      "  var r: f64 = (s * 2:f64)\n"
      "  var d: f64 = sqrt(s)\n"
      "  if flag {\n"
      "    a[at] = s\n"
      "  }\n"
      "  for j in 0:i64 .. lim {\n"
      "    atomic a[j] += d\n"
      "  }\n"
      "  reduce total <- r\n"
      "}\n";
  CHECK(after_dce(text) == text);
}

TEST_CASE("dce: empty ifs, loops and else branches go, and what only they read") {
  CHECK(after_dce("kernel k(out f64[1] a, val f64 s, val i64 n) dims 1 {\n"
                  "  var dead: f64 = (s * s)\n"
                  "  var cond: bool = (s > 1:f64)\n"
                  "  if (s > 0:f64) {\n"
                  "    var inner: f64 = (dead + 1:f64)\n"
                  "  } else {\n"
                  "  }\n"
                  "  if cond {\n"
                  "    var z: f64 = s\n"
                  "  }\n"
                  "  if (s < 0:f64) {\n"
                  "    a[index(0)] = s\n"
                  "  } else {\n"
                  "    var other: f64 = s\n"
                  "  }\n"
                  "  for j in 0:i64 .. n {\n"
                  "    var tmp: f64 = f64(j)\n"
                  "  }\n"
                  "  for j2 in 0:i64 .. n {\n"
                  "    for j3 in 0:i64 .. n {\n"
                  "    }\n"
                  "  }\n"
                  "}\n") ==
        "kernel k(out f64[1] a, val f64 s, val i64 n) dims 1 {\n"
        "  if (s < 0:f64) {\n"
        "    a[index(0)] = s\n"
        "  }\n"
        "}\n");
}

TEST_CASE("dce: an if with only an else branch keeps it") {
  const std::string text =
      "kernel k(out f64[1] a, val f64 s) dims 1 {\n"
      "  if (s < 0:f64) {\n"
      "  } else {\n"
      "    a[index(0)] = s\n"
      "  }\n"
      "}\n";
  CHECK(after_dce(text) == text);
}

TEST_CASE("dce: a kernel with nothing dead is returned unchanged") {
  const Kernel k = parse(
      "kernel k(out f64[1] a, in f64[1] b, val f64 s) dims 1 {\n"
      "  var x: f64 = (b[index(0)] * s)\n"
      "  a[index(0)] = x\n"
      "}\n");
  CHECK(eliminate_dead_code(k).body == k.body);
}
