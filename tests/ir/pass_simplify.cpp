// simplify: exact algebraic identities on expressions and statements, and the
// float cases it must leave alone.
#include <doctest/doctest.h>
#include <canopy/ir/parser.hpp>
#include <canopy/ir/passes/simplify.hpp>
#include <canopy/ir/printer.hpp>
#include <canopy/ir/verifier.hpp>

#include <string>

using namespace canopy::ir;

namespace {

// Simplifies `expr` (of IR type `type`) as the initial value of a local and
// returns the result in text form. Scalars: s, t (f64), n, m (i32), q (i64), b, c (bool).
std::string simplified(const std::string& type, const std::string& expr) {
  const std::string text =
      "kernel k(val f64 s, val f64 t, val i32 n, val i32 m, val i64 q, val bool b, val bool c) dims 1 {\n"
      "  var v: " +
      type + " = " + expr +
      "\n"
      "}\n";
  const Kernel result = simplify(parse(text));
  verify(result);
  const std::string printed = print(result);
  const std::string prefix = "  var v: " + type + " = ";
  const auto start = printed.find(prefix);
  REQUIRE(start != std::string::npos);
  const auto begin = start + prefix.size();
  return printed.substr(begin, printed.find('\n', begin) - begin);
}

std::string simplified_kernel(const std::string& text) {
  const Kernel result = simplify(parse(text));
  verify(result);
  return print(result);
}

}  // namespace

TEST_CASE("simplify: identities that hold for every type") {
  CHECK(simplified("i32", "(n + 0:i32)") == "n");
  CHECK(simplified("i32", "(n - 0:i32)") == "n");
  CHECK(simplified("i32", "(n * 1:i32)") == "n");
  CHECK(simplified("i32", "(n / 1:i32)") == "n");
  CHECK(simplified("f64", "(s * 1:f64)") == "s");
  CHECK(simplified("f64", "(s / 1:f64)") == "s");
  CHECK(simplified("f64", "(s - 0:f64)") == "s");
  CHECK(simplified("f64", "(s + -0:f64)") == "s");
  CHECK(simplified("f64", "(1:f64 * s)") == "s");
  CHECK(simplified("f64", "min(s, s)") == "s");
}

TEST_CASE("simplify: float identities that do not hold are left alone") {
  CHECK(simplified("f64", "(s + 0:f64)") == "(s + 0:f64)");  // -0.0 + 0.0 is +0.0
  CHECK(simplified("f64", "(s - -0:f64)") == "(s - -0:f64)");
  CHECK(simplified("f64", "(s * 0:f64)") == "(s * 0:f64)");  // NaN, inf, -0.0
  CHECK(simplified("f64", "(s - s)") == "(s - s)");
  CHECK(simplified("bool", "(s == s)") == "(s == s)");  // false for NaN
  CHECK(simplified("bool", "(s < s)") == "(s < s)");
  CHECK(simplified("f64", "((s + 1:f64) + 2:f64)") == "((s + 1:f64) + 2:f64)");  // no reassociation
  CHECK(simplified("f64", "min(0:f64, s)") == "min(0:f64, s)");                  // fmin(+0, -0) order
}

TEST_CASE("simplify: integer and bool identities") {
  CHECK(simplified("i32", "(n * 0:i32)") == "0:i32");
  CHECK(simplified("i32", "(0:i32 * n)") == "0:i32");
  CHECK(simplified("i32", "(n - n)") == "0:i32");
  CHECK(simplified("i32", "(n ^ n)") == "0:i32");
  CHECK(simplified("i32", "(n & n)") == "n");
  CHECK(simplified("i32", "(n | n)") == "n");
  CHECK(simplified("i32", "(n / 0:i32)") == "0:i32");  // the IR's x / 0
  CHECK(simplified("i32", "(n % 1:i32)") == "0:i32");
  CHECK(simplified("i32", "(n & -1:i32)") == "n");
  CHECK(simplified("i32", "(n << 32:i32)") == "n");  // counts are modulo the width
  CHECK(simplified("i64", "(q >> 0:i64)") == "q");
  CHECK(simplified("bool", "(b & true)") == "b");
  CHECK(simplified("bool", "(false & b)") == "false");
  CHECK(simplified("bool", "(b | true)") == "true");
  CHECK(simplified("bool", "(b ^ b)") == "false");
  CHECK(simplified("bool", "(n == n)") == "true");
  CHECK(simplified("bool", "(n <= n)") == "true");
  CHECK(simplified("bool", "(q != q)") == "false");
  CHECK(simplified("bool", "(q > q)") == "false");
  CHECK(simplified("i32", "(n - m)") == "(n - m)");
  CHECK(simplified("i32", "(n / n)") == "(n / n)");  // 0 / 0 is 0, not 1
}

TEST_CASE("simplify: literals move right; integer literal chains combine") {
  CHECK(simplified("i32", "(2:i32 + n)") == "(n + 2:i32)");
  CHECK(simplified("f64", "(2:f64 * s)") == "(s * 2:f64)");
  CHECK(simplified("i32", "min(3:i32, n)") == "min(n, 3:i32)");
  CHECK(simplified("bool", "(1:i32 < n)") == "(n > 1:i32)");
  CHECK(simplified("i32", "(2:i32 - n)") == "(2:i32 - n)");
  CHECK(simplified("i32", "((n + 1:i32) + 2:i32)") == "(n + 3:i32)");
  CHECK(simplified("i32", "((n - 1:i32) + 1:i32)") == "n");
  CHECK(simplified("i32", "((n + 5:i32) - 2:i32)") == "(n + 3:i32)");
  CHECK(simplified("i32", "((n - 5:i32) - 2:i32)") == "(n - 7:i32)");
  CHECK(simplified("i32", "(3:i32 + (n + 2147483647:i32))") == "(n + -2147483646:i32)");  // wraps, still exact
  CHECK(simplified("i64", "(((q + 1:i64) + 1:i64) + 1:i64)") == "(q + 3:i64)");
}

TEST_CASE("simplify: unary, cast and select") {
  CHECK(simplified("f64", "neg(neg(s))") == "s");
  CHECK(simplified("i32", "neg(neg(n))") == "n");
  CHECK(simplified("bool", "not(not(b))") == "b");
  CHECK(simplified("i32", "not(not(n))") == "n");
  CHECK(simplified("bool", "not((n < m))") == "(n >= m)");
  CHECK(simplified("bool", "not((s < t))") == "not((s < t))");  // NaN: !(s < t) is not s >= t
  CHECK(simplified("f64", "f64(s)") == "s");
  CHECK(simplified("f64", "select(true, s, t)") == "s");
  CHECK(simplified("f64", "select(false, s, t)") == "t");
  CHECK(simplified("f64", "select(b, (s * 2:f64), (s * 2:f64))") == "(s * 2:f64)");
  CHECK(simplified("f64", "select(b, s, t)") == "select(b, s, t)");
  CHECK(simplified("f64", "select((n == n), s, t)") == "s");
  CHECK(simplified("f64", "(s * (2:f64 - 1:f64))") == "s");  // literal operations fold on the way
}

TEST_CASE("simplify: if with a literal condition becomes the branch taken") {
  CHECK(simplified_kernel("kernel k(out f64[1] a, val f64 s) dims 1 {\n"
                          "  if true {\n"
                          "    var x: f64 = (s * 2:f64)\n"
                          "    a[index(0)] = x\n"
                          "  } else {\n"
                          "    a[index(0)] = 0:f64\n"
                          "  }\n"
                          "  if (1:i32 > 2:i32) {\n"
                          "    a[index(0)] = 1:f64\n"
                          "  }\n"
                          "  if not(true) {\n"
                          "    a[index(0)] = 2:f64\n"
                          "  } else {\n"
                          "    a[index(0)] = 3:f64\n"
                          "  }\n"
                          "}\n") ==
        "kernel k(out f64[1] a, val f64 s) dims 1 {\n"
        "  var x: f64 = (s * 2:f64)\n"
        "  a[index(0)] = x\n"
        "  a[index(0)] = 3:f64\n"
        "}\n");
}

TEST_CASE("simplify: loops that never run go, others stay; an empty else goes") {
  CHECK(simplified_kernel("kernel k(out f64[1] a, val f64 s, val i64 n) dims 1 {\n"
                          "  for j in 5:i64 .. 5:i64 {\n"
                          "    a[j] = s\n"
                          "  }\n"
                          "  for j2 in 9:i32 .. 3:i32 {\n"
                          "    a[index(0)] = s\n"
                          "  }\n"
                          "  for j3 in 0:i64 .. 1:i64 {\n"
                          "    a[(j3 + 0:i64)] = s\n"
                          "  }\n"
                          "  for j4 in 7:i64 .. n {\n"
                          "    a[j4] = s\n"
                          "  }\n"
                          "  if (s > 0:f64) {\n"
                          "    a[index(0)] = s\n"
                          "  } else {\n"
                          "  }\n"
                          "}\n") ==
        "kernel k(out f64[1] a, val f64 s, val i64 n) dims 1 {\n"
        "  for j3 in 0:i64 .. 1:i64 {\n"
        "    a[j3] = s\n"
        "  }\n"
        "  for j4 in 7:i64 .. n {\n"
        "    a[j4] = s\n"
        "  }\n"
        "  if (s > 0:f64) {\n"
        "    a[index(0)] = s\n"
        "  }\n"
        "}\n");
}

TEST_CASE("simplify: nested blocks are flattened, empty ones dropped") {
  Kernel k = parse("kernel k(out f64[1] a, val f64 s) dims 1 {\n}\n");
  auto store = make_store(0, {make_index(0)}, make_param(ScalarType::F64, 1));
  k.body = make_block({make_block({}), make_block({make_block({store}), make_block({})}), store});
  const Kernel result = simplify(k);
  REQUIRE(result.body->kind == StmtKind::Block);
  const auto& stmts = result.body->as<Block>().stmts;
  REQUIRE(stmts.size() == 2);
  CHECK(stmts[0]->kind == StmtKind::Store);
  CHECK(stmts[1]->kind == StmtKind::Store);
}

TEST_CASE("simplify: an already simple kernel is returned unchanged") {
  const Kernel k = parse(
      "kernel k(out f64[1] a, in f64[1] b, val f64 s) dims 1 {\n"
      "  a[index(0)] = (b[index(0)] + (s * 2:f64))\n"
      "}\n");
  CHECK(simplify(k).body == k.body);
}
