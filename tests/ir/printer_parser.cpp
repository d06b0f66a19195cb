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

TEST_CASE("printer: a kernel built with make_* from every node kind prints the expected text") {
  Kernel k;
  k.name = "every_node";
  k.params = {Param::array("x", F64, 1, Access::In),
              Param::array("m", I32, 2, Access::InOut),
              Param::array("v", F32, 3, Access::Out),
              Param::scalar("n", I64),
              Param::scalar("on", Bool),
              Param::reduction("peak", I32, ReduceOp::Max),
              Param::reduction("low", F32, ReduceOp::Min),
              Param::reduction("total", F64, ReduceOp::Sum)};
  k.dims = 3;
  auto i = make_index(0);
  auto j = make_index(1);
  auto xi = make_load(F64, 0, {i});
  auto mij = make_load(I32, 1, {i, j});
  auto a = make_var(F64, "a");
  auto t = make_var(I64, "t");
  auto q = make_var(I32, "q");
  k.body = make_block({
      make_decl("a", make_call(MathFn::Sqrt, {make_call(MathFn::Abs, {xi})})),
      make_assign("a", make_call(MathFn::Pow, {a, make_const(F64, 0.5)})),
      make_decl("b", make_select(make_compare(CompareOp::Le, a, make_const(F64, 1.0)), make_unary(UnaryOp::Neg, a),
                                 make_binary(BinaryOp::Max, a, make_call(MathFn::Floor, {a})))),
      make_decl("flags", make_binary(BinaryOp::Xor, make_param(Bool, 4),
                                     make_unary(UnaryOp::Not, make_compare(CompareOp::Ne, j, make_extent(0, 0))))),
      make_if(make_var(Bool, "flags"),
              make_block({make_store(1, {i, j}, make_binary(BinaryOp::Shl, mij, make_int(I32, 2)))}),
              make_block({make_if(make_compare(CompareOp::Gt, make_param(I64, 3), i),
                                  make_block({make_atomic_add(1, {i, j}, make_int(I32, -1))}))})),
      make_for("t", make_int(I64, 0), make_extent(2, 2),
               make_block({make_store(2, {i, j, t}, make_cast(F32, make_binary(BinaryOp::Rem, make_var(F64, "b"), a))),
                           make_reduce(6, make_call(MathFn::Exp, {make_cast(F32, make_cast(I32, t))}))})),
      make_for("q", make_int(I32, 10), make_int(I32, 0), make_int(I32, 3), make_block({})),
      make_reduce(5, make_binary(BinaryOp::Min, mij, make_int(I32, 7))),
      make_reduce(
          7, make_binary(BinaryOp::Div, make_call(MathFn::Log, {make_call(MathFn::Sin, {make_call(MathFn::Cos, {a})})}),
                         make_binary(BinaryOp::Sub, make_const(F64, 3.25), make_cast(F64, make_index(2))))),
  });
  const std::string expected =
      "kernel every_node(in f64[1] x, inout i32[2] m, out f32[3] v, val i64 n, val bool on, max i32 peak, "
      "min f32 low, sum f64 total) dims 3 {\n"
      "  var a: f64 = sqrt(abs(x[index(0)]))\n"
      "  a = pow(a, 0.5:f64)\n"
      "  var b: f64 = select((a <= 1:f64), neg(a), max(a, floor(a)))\n"
      "  var flags: bool = (on ^ not((index(1) != extent(x, 0))))\n"
      "  if flags {\n"
      "    m[index(0), index(1)] = (m[index(0), index(1)] << 2:i32)\n"
      "  } else {\n"
      "    if (n > index(0)) {\n"
      "      atomic m[index(0), index(1)] += -1:i32\n"
      "    }\n"
      "  }\n"
      "  for t in 0:i64 .. extent(v, 2) {\n"
      "    v[index(0), index(1), t] = f32((b % a))\n"
      "    reduce low <- exp(f32(i32(t)))\n"
      "  }\n"
      "  for q in 10:i32 .. 0:i32 step 3:i32 {\n"
      "  }\n"
      "  reduce peak <- min(m[index(0), index(1)], 7:i32)\n"
      "  reduce total <- (log(sin(cos(a))) / (3.25:f64 - f64(index(2))))\n"
      "}\n";
  CHECK_NOTHROW(verify(k));
  CHECK(print(k) == expected);
  const Kernel parsed = parse(expected);
  CHECK(print(parsed) == expected);
  CHECK(parsed.dims == 3);
  CHECK(parsed.params.size() == 8);
  CHECK(parsed.params[6].reduce == ReduceOp::Min);
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

TEST_CASE("parser: every operator on every type it allows round-trips") {
  // Binary operators: arithmetic and min/max on all numeric types, bitwise on
  // bool and integers, shifts on integers.
  std::string body;
  int counter = 0;
  auto line = [&](std::string_view type, std::string_view expr) {
    body += fmt::format("  var v{}: {} = {}\n", counter++, type, expr);
  };
  for (std::string_view type : {"i32", "i64", "f32", "f64"}) {
    for (std::string_view op : {"+", "-", "*", "/", "%"}) line(type, fmt::format("(s_{0} {1} s_{0})", type, op));
    line(type, fmt::format("min(s_{0}, 1:{0})", type));
    line(type, fmt::format("max(2:{0}, s_{0})", type));
    line(type, fmt::format("neg(s_{0})", type));
    line(type, fmt::format("abs(s_{0})", type));
    for (std::string_view cmp : {"==", "!=", "<", "<=", ">", ">="})
      line("bool", fmt::format("(s_{0} {1} s_{0})", type, cmp));
    for (std::string_view to : {"bool", "i32", "i64", "f32", "f64"}) line(to, fmt::format("{}(s_{})", to, type));
    line(type, fmt::format("select(s_bool, s_{0}, s_{0})", type));
  }
  for (std::string_view type : {"bool", "i32", "i64"}) {
    for (std::string_view op : {"&", "|", "^"}) line(type, fmt::format("(s_{0} {1} s_{0})", type, op));
    line(type, fmt::format("not(s_{})", type));
  }
  for (std::string_view type : {"i32", "i64"})
    for (std::string_view op : {"<<", ">>"}) line(type, fmt::format("(s_{0} {1} s_{0})", type, op));
  for (std::string_view type : {"f32", "f64"}) {
    for (std::string_view fn : {"sqrt", "exp", "log", "sin", "cos", "floor"})
      line(type, fmt::format("{}(s_{})", fn, type));
    line(type, fmt::format("pow(s_{0}, s_{0})", type));
    line(type, fmt::format("fma(s_{0}, s_{0}, s_{0})", type));
  }
  line("bool", "(s_bool == s_bool)");
  line("bool", "(s_bool != true)");
  line("i64", "(((index(0) + index(1)) + index(2)) * extent(a, 0))");
  line("i64", "(extent(a, 1) - extent(a, 2))");
  line("f64", "a[index(0), index(1), (extent(a, 2) - 1:i64)]");
  check_round_trip(
      "kernel ops(in f64[3] a, val bool s_bool, val i32 s_i32, val i64 s_i64, val f32 s_f32, val f64 s_f64) dims 3 "
      "{\n" +
      body + "}\n");
  CHECK(counter > 100);
}

TEST_CASE("printer: literal edge cases print exactly and parse back to the same bits") {
  struct Case {
    Expr literal;
    std::string text;
  };
  const double inf = std::numeric_limits<double>::infinity();
  const Case cases[] = {
      {make_bool(true), "true"},
      {make_bool(false), "false"},
      {make_int(I32, 5), "5:i32"},
      {make_int(I64, -7), "-7:i64"},
      {make_int(I32, std::numeric_limits<std::int32_t>::min()), "-2147483648:i32"},
      {make_int(I32, std::numeric_limits<std::int32_t>::max()), "2147483647:i32"},
      {make_int(I64, std::numeric_limits<std::int64_t>::min()), "-9223372036854775808:i64"},
      {make_int(I64, std::numeric_limits<std::int64_t>::max()), "9223372036854775807:i64"},
      {make_const(F64, 0.4), "0.4:f64"},
      {make_const(F32, 1.0), "1:f32"},
      {make_const(F64, -0.0), "-0:f64"},
      {make_const(F32, -0.0), "-0:f32"},
      {make_const(F64, inf), "inf:f64"},
      {make_const(F32, -inf), "-inf:f32"},
      {make_const(F64, std::nan("")), "nan:f64"},
      {make_const(F32, std::nan("")), "nan:f32"},
      {make_const(F64, -std::nan("")), "-nan:f64"},
      {make_const(F64, 1e300), "1e+300:f64"},
      {make_const(F64, 1e-310), "1e-310:f64"},
      {make_const(F64, std::numeric_limits<double>::denorm_min()), "5e-324:f64"},
      {make_const(F64, std::numeric_limits<double>::max()), "1.7976931348623157e+308:f64"},
      {make_const(F32, 0.1f), "0.1:f32"},
      {make_const(F32, 0.1), "0.1:f32"},
      {make_const(F64, static_cast<double>(0.1f)), "0.10000000149011612:f64"},
      {make_const(F32, std::numeric_limits<float>::max()), "3.4028235e+38:f32"},
      {make_const(F32, std::numeric_limits<float>::denorm_min()), "1e-45:f32"},
      {make_const(F64, 123456789012.0), "123456789012:f64"},
  };
  Kernel k;
  k.name = "literals";
  k.params = {Param::reduction("acc", F64, ReduceOp::Sum)};
  std::vector<Stmt> stmts;
  for (std::size_t n = 0; n < std::size(cases); ++n) {
    const Case& c = cases[n];
    CAPTURE(c.text);
    CHECK(print(c.literal, k) == c.text);
    stmts.push_back(make_decl(fmt::format("v{}", n), c.literal));
  }
  k.body = make_block(std::move(stmts));
  REQUIRE_NOTHROW(verify(k));
  const std::string text = print(k);
  const Kernel parsed = parse(text);
  CHECK(print(parsed) == text);
  const auto& parsed_stmts = parsed.body->as<Block>().stmts;
  REQUIRE(parsed_stmts.size() == std::size(cases));
  for (std::size_t n = 0; n < std::size(cases); ++n) {
    const auto& original = cases[n].literal->as<Const>();
    const Expr& init = parsed_stmts[n]->as<Decl>().init;
    CAPTURE(cases[n].text);
    REQUIRE(init->kind == ExprKind::Const);
    const auto& read = init->as<Const>();
    CHECK(read.type == original.type);
    CHECK(read.int_value == original.int_value);
    if (std::isnan(original.float_value)) {
      CHECK(std::isnan(read.float_value));
      CHECK(std::signbit(read.float_value) == std::signbit(original.float_value));
    } else {
      CHECK(read.float_value == original.float_value);
      CHECK(std::signbit(read.float_value) == std::signbit(original.float_value));
    }
  }
}

TEST_CASE("printer: nesting, else holding one if, flattened blocks, loop steps") {
  Kernel k;
  k.name = "shape";
  k.params = {Param::array("a", I64, 1, Access::InOut)};
  auto i = make_index(0);
  auto cond = make_compare(CompareOp::Lt, i, make_int(I64, 4));
  // The else holds an If directly (no Block): printed nested all the same.
  auto inner_if = make_if(cond, make_store(0, {i}, make_int(I64, 1)));
  k.body = make_block({
      make_if(cond, make_block({}), inner_if),
      make_block({make_decl("nested", make_int(I64, 3)), make_block({})}),
      make_for("u", make_int(I64, 0), make_int(I64, 8), make_int(I64, 1), make_store(0, {make_var(I64, "u")}, i)),
      make_for("w", make_int(I64, 0), make_int(I64, 8), make_int(I64, 4), make_block({})),
  });
  const std::string expected =
      "kernel shape(inout i64[1] a) dims 1 {\n"
      "  if (index(0) < 4:i64) {\n"
      "  } else {\n"
      "    if (index(0) < 4:i64) {\n"
      "      a[index(0)] = 1:i64\n"
      "    }\n"
      "  }\n"
      "  var nested: i64 = 3:i64\n"
      "  for u in 0:i64 .. 8:i64 {\n"
      "    a[u] = index(0)\n"
      "  }\n"
      "  for w in 0:i64 .. 8:i64 step 4:i64 {\n"
      "  }\n"
      "}\n";
  REQUIRE_NOTHROW(verify(k));
  CHECK(print(k) == expected);
  const Kernel parsed = parse(expected);
  CHECK(print(parsed) == expected);
  // The parsed else is a Block holding the If.
  const auto& top = parsed.body->as<Block>().stmts;
  REQUIRE(top.size() == 4);
  const auto& else_body = top[0]->as<If>().else_body;
  REQUIRE(else_body->kind == StmtKind::Block);
  REQUIRE(else_body->as<Block>().stmts.size() == 1);
  CHECK(else_body->as<Block>().stmts[0]->kind == StmtKind::If);
  // A step written as 1 is the default step: the same text either way.
  CHECK(print(parse("kernel s(inout i64[1] a) dims 1 {\n  for u in 0:i64 .. 8:i64 step 1:i64 {\n  }\n}\n")) ==
        "kernel s(inout i64[1] a) dims 1 {\n  for u in 0:i64 .. 8:i64 {\n  }\n}\n");
  // A statement printed alone, at an indent.
  CHECK(print(top[2], parsed, 2) == "    for u in 0:i64 .. 8:i64 {\n      a[u] = index(0)\n    }\n");
  CHECK(print(make_block({}), parsed, 1).empty());
}

TEST_CASE("parser: blank lines, comments and free spacing give the canonical text") {
  const std::string messy =
      "# a kernel with comments\n"
      "\n"
      "kernel  triad ( out f64[1] a,in f64 [ 1 ] b , in f64[1] c, val f64 s )  dims 1{ # header\n"
      "\n"
      "\ta[index(0)]=(b[index(0)]+(s*c[index(0)]))   # the work\n"
      "  # a comment line\n"
      "}\n"
      "# trailing comment";
  CHECK(print(parse(messy)) == print(triad()));
  CHECK(print(parse("kernel e() dims 2 {}")) == "kernel e() dims 2 {\n}\n");
}

TEST_CASE("parser: names with dots and underscores, names that look like literals") {
  check_round_trip(
      "kernel my.kernel_2(in f64[1] _x.y, sum f64 $inf) dims 1 {\n"
      "  var $nan: f64 = _x.y[index(0)]\n"
      "  var t.0: f64 = ($nan * -inf:f64)\n"
      "  reduce $inf <- (t.0 + inf:f64)\n"
      "}\n");
  // Written without the $, inf and nan not followed by ':' still read as names.
  CHECK(print(parse("kernel k(sum f64 inf) dims 1 {\n  reduce inf <- 1:f64\n}\n")) ==
        "kernel k(sum f64 $inf) dims 1 {\n  reduce $inf <- 1:f64\n}\n");
}

TEST_CASE("keywords name kernels, parameters and locals when written with $") {
  const std::string text =
      "kernel $step(inout f64[1] $in, val f64 $sum, max f64 $max) dims 1 {\n"
      "  var $if: f64 = ($in[index(0)] * $sum)\n"
      "  for $for in 0:i64 .. 3:i64 {\n"
      "    $if = ($if + f64($for))\n"
      "  }\n"
      "  $in[index(0)] = $if\n"
      "  reduce $max <- $if\n"
      "}\n";
  check_round_trip(text);
  Kernel k = parse(text);
  CHECK(k.name == "step");
  CHECK(k.params[0].name == "in");
  CHECK(k.params[1].name == "sum");
  // Without the $, a keyword where a name belongs is an error.
  CHECK(parse_error("kernel step() dims 1 {\n}\n") == "k.ir:1:8: expected kernel name, found 'step'");
}

TEST_CASE("printer: malformed trees print placeholders instead of crashing") {
  Kernel k;
  k.name = "bad";
  k.params = {Param::scalar("s", F64)};
  CHECK(print(Expr{}, k) == "<null>");
  CHECK(print(make_param(F64, 9), k) == "<param 9>");
  CHECK(print(make_binary(BinaryOp::Add, make_param(F64, 0), make_load(F64, -1, {Expr{}})), k) ==
        "(s + <param -1>[<null>])");
  CHECK(print(Stmt{}, k, 1) == "  <null>\n");
  CHECK(print(make_if(make_bool(true), Stmt{}), k) == "if true {\n  <null>\n}\n");
  CHECK(print(k) == "kernel bad(val f64 s) dims 1 {\n}\n");
}

TEST_CASE("parser: malformed text gives the position and the token at fault") {
  // Header problems.
  CHECK(parse_error("") == "k.ir:1:1: expected 'kernel', found end of input");
  CHECK(parse_error("kernal k() dims 1 {}") == "k.ir:1:1: expected 'kernel', found 'kernal'");
  CHECK(parse_error("kernel for() dims 1 {}") == "k.ir:1:8: expected kernel name, found 'for'");
  CHECK(parse_error("kernel k(in f64 a) dims 1 {}") == "k.ir:1:17: expected '[', found 'a'");
  CHECK(parse_error("kernel k(in f65[1] a) dims 1 {}") == "k.ir:1:13: expected element type, found 'f65'");
  CHECK(parse_error("kernel k(ref f64[1] a) dims 1 {}") ==
        "k.ir:1:10: expected parameter (in, out, inout, val, sum, min or max), found 'ref'");
  CHECK(parse_error("kernel k(val f64 s) dims x {}") == "k.ir:1:26: expected number of dimensions, found 'x'");
  CHECK(parse_error("kernel k() dims 1 {\n}\n}") == "k.ir:3:1: expected end of input, found '}'");
  // Statements, with the line and column of the offending token.
  const std::string head = "kernel k(inout f64[1] a, val f64 s, sum f64 r) dims 1 {\n";
  CHECK(parse_error(head + "  a[index(0)] = s\n  s = 1:f64\n}\n") ==
        "k.ir:3:3: cannot assign to parameter 's'; only locals declared with var can be assigned");
  CHECK(parse_error(head + "  a[index(0)] = (s + q)\n}\n") == "k.ir:2:22: unknown name 'q'");
  CHECK(parse_error(head + "  a[index(0)] = (s s)\n}\n") == "k.ir:2:20: expected operator, found 's'");
  CHECK(parse_error(head + "  a[index(0)] = (s + 1:f64\n}\n") == "k.ir:3:1: expected ')', found '}'");
  CHECK(parse_error(head + "  a[index(0)] = s +\n}\n") == "k.ir:2:19: expected statement, found '+'");
  CHECK(parse_error(head + "  a[index(0)] = 1.5:i32\n}\n") ==
        "k.ir:2:17: expected integer literal for i32, found '1.5'");
  CHECK(parse_error(head + "  a[index(0)] = 1:bool\n}\n") ==
        "k.ir:2:19: expected literal type (i32, i64, f32 or f64), found 'bool'");
  CHECK(parse_error(head + "  a[index(0)] = 1\n}\n") == "k.ir:3:1: expected ':', found '}'");
  CHECK(parse_error(head + "  var x: i32 = 2147483648:i32\n}\n") ==
        "k.ir:2:16: integer literal '2147483648' is out of range for i32");
  CHECK(parse_error(head + "  var x: i64 = 9223372036854775808:i64\n}\n") ==
        "k.ir:2:16: integer literal '9223372036854775808' is out of range for i64");
  CHECK(parse_error(head + "  var x: f32 = 1e39:f32\n}\n") ==
        "k.ir:2:16: float literal '1e39' is out of range for f32");
  CHECK(parse_error(head + "  var x: f64 = a\n}\n") == "k.ir:3:1: expected '[' after array 'a', found '}'");
  CHECK(parse_error(head + "  var x: f64 = r\n}\n") ==
        "k.ir:2:16: reduction 'r' cannot be read; only `reduce` can use it");
  CHECK(parse_error(head + "  reduce s <- 1:f64\n}\n") == "k.ir:2:10: 's' is not a reduction parameter");
  CHECK(parse_error(head + "  s[index(0)] = 1:f64\n}\n") == "k.ir:2:3: 's' is not an array parameter");
  CHECK(parse_error(head + "  for i in 0:i64 .. 4:i64 {\n    i = 1:i64\n  }\n}\n") ==
        "k.ir:3:5: cannot assign to loop variable 'i'; loop variables are read-only");
  CHECK(parse_error(head + "  if true {\n    var t: f64 = s\n  }\n  a[index(0)] = t\n}\n") ==
        "k.ir:5:17: unknown name 't'");
  CHECK(parse_error(head + "  a[index(0)] = s @\n}\n") == "k.ir:2:19: expected statement, found '@'");
  CHECK(parse_error(head + "  a[index(0)] = \x01\n}\n") == "k.ir:2:17: expected expression, found '\\x01'");
  CHECK(parse_error(head + "  if true {\n") == "k.ir:3:1: expected statement, found end of input");
  CHECK(parse_error(head + "  a[index(-1)] = s\n}\n") == "k.ir:2:11: expected dimension number, found '-1'");
  CHECK(parse_error(head + "  if true {\n  } else if false {\n  }\n}\n") == "k.ir:3:10: expected '{', found 'if'");
  CHECK(parse_error(head + "  var x: f64 = (x + 1:f64)\n}\n") == "k.ir:2:17: unknown name 'x'");
  CHECK(parse_error(head + "  var x: f64 = f64(extent(q, 0))\n}\n") == "k.ir:2:27: unknown name 'q'");
  CHECK(parse_error(head + "  var x: f64 = pow(s, s s)\n}\n") == "k.ir:2:25: expected ')', found 's'");
  // Text that parses but does not verify: the verifier's message after the source name.
  CHECK(parse_error(head + "  a[index(0)] = 1:i32\n}\n") ==
        "k.ir: kernel 'k': stores i32 into array 'a' of f64 in `a[index(0)] = 1:i32`");
  CHECK(parse_error("kernel k(in f64[1] a) dims 1 {\n  a[index(0)] = 1:f64\n}\n") ==
        "k.ir: kernel 'k': writes array 'a' declared in; declare it out or inout in `a[index(0)] = 1:f64`");
}

TEST_CASE("parser: nesting is bounded") {
  const std::string head = "kernel k(out i64[1] a) dims 1 {\n  a[index(0)] = ";
  auto nested_sum = [&](int depth) {
    std::string text = head;
    for (int n = 0; n < depth; ++n) text += "(1:i64 + ";
    text += "1:i64";
    text += std::string(static_cast<std::size_t>(depth), ')');
    return text + "\n}\n";
  };
  // The body's block is one level, each parenthesis one more, and the literal
  // inside the innermost one the last. Up to the limit the text parses and
  // prints back to itself; past it, the error points at the first token too deep.
  const std::string deep = nested_sum(kMaxParseDepth - 2);
  CHECK(print(parse(deep)) == deep);
  CHECK(parse_error(nested_sum(kMaxParseDepth + 10)) ==
        fmt::format("k.ir:2:{}: text nests deeper than {} levels; split the expression with `var` locals",
                    18 + 9 * (kMaxParseDepth - 2), kMaxParseDepth));
  // Far deeper than the stack could take without the bound.
  CHECK(parse_error(head + std::string(1000000, '(')).find("text nests deeper than") != std::string::npos);
  CHECK(parse_error(head + std::string(1000000, '[')).find("expected expression, found '['") != std::string::npos);
  std::string blocks = "kernel k() dims 1 {\n";
  for (int n = 0; n < 100000; ++n) blocks += "if true {\n";
  CHECK(parse_error(blocks).find("text nests deeper than") != std::string::npos);
}

TEST_CASE("parser: truncated and mutated text never crashes") {
  const std::string text =
      "kernel every_stmt(inout f64[2] grid, in i32[1] ids, val i32 n, sum f64 total) dims 2 {\n"
      "  var x: f64 = select((grid[index(0), index(1)] >= -0.5:f64), 1e+300:f64, -inf:f64)\n"
      "  for j in 0:i32 .. n step 2:i32 {\n"
      "    if (j != ids[i64(j)]) {\n"
      "      x = max(pow(x, 2:f64), neg(f64(extent(grid, 1))))\n"
      "    } else {\n"
      "      atomic grid[index(0), index(1)] += x\n"
      "    }\n"
      "  }\n"
      "  reduce total <- x\n"
      "}\n";
  REQUIRE(print(parse(text)) == text);
  int parsed = 0;
  int rejected = 0;
  auto attempt = [&](const std::string& input) {
    try {
      const Kernel k = parse(input);
      // Whatever parses must print canonically and parse again.
      CHECK(print(parse(print(k))) == print(k));
      ++parsed;
    } catch (const canopy::Error&) {
      ++rejected;
    }
  };
  for (std::size_t n = 0; n < text.size(); ++n) attempt(text.substr(0, n));
  const std::string replacements[] = {"", " ", "(", ")", "[", "]", "{", "}", ",", "-", "x", "0", ":", "#", "\n", ".."};
  for (std::size_t n = 0; n < text.size(); ++n)
    for (const auto& r : replacements) attempt(text.substr(0, n) + r + text.substr(n + 1));
  CHECK(rejected > 0);
  CHECK(parsed > 0);
  CHECK(parsed + rejected == static_cast<int>(text.size() * (1 + std::size(replacements))));
}
