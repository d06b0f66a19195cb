// optimize: the standard pipeline end to end, on kernels that need every pass.
#include <doctest/doctest.h>
#include <canopy/ir/error.hpp>
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

TEST_CASE("optimize: a deep traced expression, repeated, is hoisted and shared as a whole") {
  // sum = ((((b[j] * (s * 1)) + b[j + 1]) * (s * 2)) + b[j + 2]) ..., stored four times.
  constexpr int depth = 1500;
  constexpr auto F64 = ScalarType::F64;
  constexpr auto I64 = ScalarType::I64;
  Kernel k;
  k.name = "deep";
  k.params = {Param::array("a", F64, 1, Access::Out), Param::array("b", F64, 1, Access::In), Param::scalar("s", F64),
              Param::scalar("n", I64)};
  const auto j = make_var(I64, "j");
  auto chain = [&] {
    Expr e = make_load(F64, 1, {j});
    for (int i = 1; i < depth; ++i)
      e = make_binary(BinaryOp::Add,
                      make_binary(BinaryOp::Mul, e, make_binary(BinaryOp::Mul, make_param(F64, 2), make_const(F64, i))),
                      make_load(F64, 1, {make_binary(BinaryOp::Add, j, make_int(I64, i % 3))}));
    return e;
  };
  std::vector<Stmt> stores;
  for (int r = 0; r < 4; ++r)
    stores.push_back(make_store(0, {make_binary(BinaryOp::Add, j, make_int(I64, r))}, chain()));
  k.body = make_block({make_for("j", make_int(I64, 0), make_param(I64, 3), make_block(stores))});

  const Kernel result = optimize(k, Arrays::Distinct);
  const auto& top = result.body->as<Block>().stmts;
  // (s * 2) .. (s * (depth - 1)) hoisted ((s * 1) simplifies to s), then the loop.
  REQUIRE(top.size() == depth - 1);
  for (std::size_t i = 0; i + 1 < top.size(); ++i) CHECK(top[i]->kind == StmtKind::Decl);
  REQUIRE(top.back()->kind == StmtKind::For);
  const auto& body = top.back()->as<For>().body->as<Block>().stmts;
  // A few shared loads and indices, the chain computed once, then four stores of it.
  REQUIRE(body.size() >= 5);
  CHECK(body.size() <= 10);
  const auto& chain_local = body[body.size() - 5];
  REQUIRE(chain_local->kind == StmtKind::Decl);
  const std::string name = chain_local->as<Decl>().name;
  for (std::size_t r = body.size() - 4; r < body.size(); ++r) {
    REQUIRE(body[r]->kind == StmtKind::Store);
    CHECK(print(body[r]->as<Store>().value, result) == name);
  }
}

TEST_CASE("optimize: a kernel that does not verify is refused with the verifier's message") {
  Kernel k = parse("kernel k(out f64[1] a, val f64 s) dims 1 {\n  a[index(0)] = s\n}\n");
  k.body = make_block({make_store(0, {make_index(0)}, make_var(ScalarType::F64, "nowhere"))});
  std::string message;
  try {
    optimize(k);
  } catch (const canopy::Error& error) {
    message = error.what();
  }
  CHECK(message.find("nowhere") != std::string::npos);
  CHECK(message.find("not declared") != std::string::npos);
}
