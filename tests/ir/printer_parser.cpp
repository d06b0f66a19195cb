// The IR's text form: exact printed text of kernels built with make_*, round
// trips through parse for every node kind, op, type and literal edge case,
// and the parser's error messages with their line and column.
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <canopy/ir/error.hpp>
#include <canopy/ir/parser.hpp>
#include <canopy/ir/printer.hpp>
#include <canopy/ir/verifier.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <sstream>
#include <string>

using namespace canopy::ir;

namespace {

constexpr auto F64 = ScalarType::F64;
constexpr auto F32 = ScalarType::F32;
constexpr auto I32 = ScalarType::I32;
constexpr auto I64 = ScalarType::I64;
constexpr auto Bool = ScalarType::Bool;

// The message parse(text) throws, or "" when it parses.
std::string parse_error(const std::string& text) {
  try {
    parse(text, "k.ir");
  } catch (const canopy::Error& error) {
    return error.what();
  }
  return "";
}

// Checks that `text` is in canonical form: it parses, prints back to itself,
// and the reparsed tree prints identically too.
void check_round_trip(const std::string& text) {
  Kernel parsed = parse(text);
  const std::string printed = print(parsed);
  CHECK(printed == text);
  CHECK(print(parse(printed)) == printed);
}

Kernel triad() {
  Kernel k;
  k.name = "triad";
  k.params = {Param::array("a", F64, 1, Access::Out), Param::array("b", F64, 1, Access::In),
              Param::array("c", F64, 1, Access::In), Param::scalar("s", F64)};
  k.dims = 1;
  auto i = make_index(0);
  k.body =
      make_block({make_store(0, {i},
                             make_binary(BinaryOp::Add, make_load(F64, 1, {i}),
                                         make_binary(BinaryOp::Mul, make_param(F64, 3), make_load(F64, 2, {i}))))});
  return k;
}

}  // namespace

TEST_CASE("printer: triad built with make_* prints the documented text") {
  const Kernel k = triad();
  const std::string expected =
      "kernel triad(out f64[1] a, in f64[1] b, in f64[1] c, val f64 s) dims 1 {\n"
      "  a[index(0)] = (b[index(0)] + (s * c[index(0)]))\n"
      "}\n";
  CHECK(print(k) == expected);
  CHECK(fmt::format("{}", k) == expected);
  std::ostringstream stream;
  stream << k;
  CHECK(stream.str() == expected);
  CHECK(print(parse(expected)) == expected);
}

TEST_CASE("parser: every statement kind round-trips") {
  check_round_trip(
      "kernel every_stmt(inout f64[2] grid, in i32[1] ids, out i64[3] cube, inout f32[1] hist, val i32 n, val bool "
      "flag, sum f64 total, min i64 lowest, max f32 highest) dims 2 {\n"
      "  var x: f64 = grid[index(0), index(1)]\n"
      "  var count: i32 = 0:i32\n"
      "  x = (x * 2:f64)\n"
      "  if flag {\n"
      "    count = (count + 1:i32)\n"
      "  } else {\n"
      "    if (count < n) {\n"
      "      count = (count - 1:i32)\n"
      "    }\n"
      "  }\n"
      "  if (x > 0:f64) {\n"
      "  }\n"
      "  if true {\n"
      "  } else {\n"
      "  }\n"
      "  for j in 0:i32 .. n {\n"
      "    var y: i32 = (j + ids[i64(j)])\n"
      "    for k in 0:i64 .. extent(cube, 2) step 2:i64 {\n"
      "      cube[index(0), index(1), k] = i64(y)\n"
      "    }\n"
      "  }\n"
      "  for e in 0:i64 .. 10:i64 {\n"
      "  }\n"
      "  grid[index(0), index(1)] = x\n"
      "  atomic hist[i64(count)] += 1:f32\n"
      "  reduce total <- x\n"
      "  reduce lowest <- index(1)\n"
      "  reduce highest <- f32(x)\n"
      "}\n");
}
