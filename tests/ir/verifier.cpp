// The verifier: kernels that break a rule are rejected with a message naming
// the kernel, the problem and the offending node in text form; well-formed
// kernels (including the edge cases of scoping) pass.
#include <doctest/doctest.h>
#include <canopy/ir/error.hpp>
#include <canopy/ir/printer.hpp>
#include <canopy/ir/verifier.hpp>

#include <memory>
#include <string>
#include <vector>

using namespace canopy::ir;

namespace {

constexpr auto F64 = ScalarType::F64;
constexpr auto F32 = ScalarType::F32;
constexpr auto I32 = ScalarType::I32;
constexpr auto I64 = ScalarType::I64;
constexpr auto Bool = ScalarType::Bool;

// Parameter numbers of the kernel `with_body` builds.
constexpr int kA = 0;     // out f64[1] a
constexpr int kB = 1;     // in f64[1] b
constexpr int kM = 2;     // inout i32[2] m
constexpr int kS = 3;     // val f64 s
constexpr int kR = 4;     // sum f64 r
constexpr int kBits = 5;  // inout bool[1] bits
constexpr int kN = 6;     // val i32 n

Kernel with_body(std::vector<Stmt> stmts) {
  std::vector<Param> params = {Param::array("a", F64, 1, Access::Out),
                               Param::array("b", F64, 1, Access::In),
                               Param::array("m", I32, 2, Access::InOut),
                               Param::scalar("s", F64),
                               Param::reduction("r", F64, ReduceOp::Sum),
                               Param::array("bits", Bool, 1, Access::InOut),
                               Param::scalar("n", I32)};
  return Kernel{std::string(1, 'k'), std::move(params), 1, make_block(std::move(stmts))};
}

// The message verify(kernel) throws, or "" when the kernel verifies.
std::string verify_error(const Kernel& kernel) {
  try {
    verify(kernel);
  } catch (const canopy::Error& error) {
    return error.what();
  }
  return "";
}

// The message for a kernel whose body only reduces `value` into r.
std::string expr_error(const Expr& value) { return verify_error(with_body({make_reduce(kR, value)})); }

Expr s() { return make_param(F64, kS); }
Expr n() { return make_param(I32, kN); }
Expr i0() { return make_index(0); }
Expr f64(double v) { return make_const(F64, v); }
Expr i32(std::int64_t v) { return make_int(I32, v); }
Expr i64(std::int64_t v) { return make_int(I64, v); }

}  // namespace

TEST_CASE("verifier: well-formed kernels pass") {
  // Every statement kind, locals in nested scopes, a loop variable in its body.
  auto x = make_var(F64, "x");
  auto j = make_var(I64, "j");
  Kernel k = with_body({
      make_decl("x", make_load(F64, kB, {i0()})),
      make_if(make_compare(CompareOp::Gt, x, s()),
              make_block({make_decl("y", f64(2)), make_assign("x", make_var(F64, "y"))}),
              make_block({make_decl("z", f64(3)), make_assign("x", make_var(F64, "z"))})),
      make_for("j", i64(0), make_extent(kM, 1), i64(2),
               make_block({make_store(kM, {i0(), j}, make_cast(I32, x)), make_atomic_add(kM, {j, i0()}, n())})),
      make_store(kA, {i0()}, make_binary(BinaryOp::Add, x, s())),
      make_store(kBits, {i0()}, make_unary(UnaryOp::Not, make_load(Bool, kBits, {i0()}))),
      make_reduce(kR, make_call(MathFn::Pow, {x, f64(2)})),
  });
  CHECK(verify_error(k) == "");
  // An If without else, and bodies that are single statements rather than Blocks.
  k.body = make_block({make_if(make_bool(true), make_decl("t", f64(1))),
                       make_for("u", i32(0), n(), make_reduce(kR, make_cast(F64, make_var(I32, "u"))))});
  CHECK(verify_error(k) == "");
  // The empty kernel.
  CHECK(verify_error(with_body({})) == "");
}

TEST_CASE("verifier: kernel and parameter rules") {
  Kernel k = with_body({});
  k.name = "2fast";
  CHECK(verify_error(k) ==
        "kernel '2fast': the kernel's name is not a valid identifier; use letters, digits, '_' and '.', starting with "
        "a letter or '_'");
  k.name = "for";  // a keyword is a valid name: the text form writes it $for
  CHECK(verify_error(k) == "");
  k = with_body({});
  k.dims = 4;
  CHECK(verify_error(k) == "kernel 'k': dims is 4; a kernel has 1 to 3 index dimensions");
  k.dims = 0;
  CHECK(verify_error(k) == "kernel 'k': dims is 0; a kernel has 1 to 3 index dimensions");
  k = with_body({});
  k.params.push_back(Param::scalar("a", F64));
  CHECK(verify_error(k) == "kernel 'k': two parameters are named 'a'; rename one");
  k = with_body({});
  k.params.push_back(Param::scalar("in", F64));
  CHECK(verify_error(k) == "");
  k = with_body({});
  k.params.push_back(Param::scalar("a b", F64));
  CHECK(verify_error(k) ==
        "kernel 'k': parameter name 'a b' is not a valid identifier; use letters, digits, '_' and '.', starting with a "
        "letter or '_'");
  k = with_body({});
  k.params.push_back(Param::array("big", F64, 4, Access::In));
  CHECK(verify_error(k) == "kernel 'k': array 'big' has rank 4; arrays have 1 to 3 dimensions");
  k = with_body({});
  k.params.push_back(Param::reduction("any", Bool, ReduceOp::Max));
  CHECK(verify_error(k) == "kernel 'k': reduction 'any' is bool; reductions are i32, i64, f32 or f64");
  k = with_body({});
  k.body = nullptr;
  CHECK(verify_error(k) == "kernel 'k': the body is null; give it a Block, even an empty one");
  k.body = make_reduce(kR, s());
  CHECK(verify_error(k) == "kernel 'k': the body is not a Block in `reduce r <- s`");
}

TEST_CASE("verifier: operator and type rules of expressions") {
  CHECK(expr_error(make_binary(BinaryOp::Add, s(), make_cast(F64, i32(1)))) == "");
  CHECK(expr_error(make_binary(BinaryOp::Add, s(), i32(1))) ==
        "kernel 'k': operands of + have different types (f64 and i32); cast one in `(s + 1:i32)`");
  CHECK(expr_error(make_binary(BinaryOp::Shl, s(), s())) ==
        "kernel 'k': << on f64; << needs integer operands in `(s << s)`");
  CHECK(expr_error(make_binary(BinaryOp::And, s(), s())) ==
        "kernel 'k': & on f64; & needs bool or integer operands in `(s & s)`");
  CHECK(expr_error(make_cast(F64, make_binary(BinaryOp::Mul, make_bool(true), make_bool(false)))) ==
        "kernel 'k': * on bool; * needs numeric operands in `(true * false)`");
  CHECK(expr_error(make_cast(F64, make_binary(BinaryOp::Max, make_bool(true), make_bool(false)))) ==
        "kernel 'k': max on bool; max needs numeric operands in `max(true, false)`");
  CHECK(expr_error(make_cast(F64, make_compare(CompareOp::Lt, make_bool(true), make_bool(false)))) ==
        "kernel 'k': < on bool; bools compare only with == and != in `(true < false)`");
  CHECK(expr_error(make_cast(F64, make_compare(CompareOp::Eq, s(), n()))) ==
        "kernel 'k': operands of == have different types (f64 and i32); cast one in `(s == n)`");
  CHECK(expr_error(make_cast(F64, make_unary(UnaryOp::Neg, make_bool(true)))) ==
        "kernel 'k': neg of bool; neg needs a numeric operand in `neg(true)`");
  CHECK(expr_error(make_unary(UnaryOp::Not, s())) ==
        "kernel 'k': not of f64; not needs a bool or integer operand in `not(s)`");
  CHECK(expr_error(make_call(MathFn::Pow, {s()})) == "kernel 'k': pow takes 2 arguments, given 1 in `pow(s)`");
  CHECK(expr_error(make_call(MathFn::Fma, {s(), s()})) == "kernel 'k': fma takes 3 arguments, given 2 in `fma(s, s)`");
  CHECK(expr_error(make_cast(F64, make_call(MathFn::Fma, {n(), n(), n()}))) ==
        "kernel 'k': fma of i32; fma needs f32 or f64 arguments; cast them in `fma(n, n, n)`");
  CHECK(expr_error(make_call(MathFn::Sqrt, {s(), s()})) ==
        "kernel 'k': sqrt takes 1 argument, given 2 in `sqrt(s, s)`");
  CHECK(expr_error(make_cast(F64, make_call(MathFn::Sqrt, {n()}))) ==
        "kernel 'k': sqrt of i32; sqrt needs f32 or f64 arguments; cast them in `sqrt(n)`");
  CHECK(expr_error(make_cast(F64, make_call(MathFn::Abs, {n()}))) == "");
  CHECK(expr_error(make_cast(F64, make_call(MathFn::Abs, {make_bool(true)}))) ==
        "kernel 'k': abs of bool; abs needs a numeric argument in `abs(true)`");
  CHECK(expr_error(make_call(MathFn::Pow, {s(), make_const(F32, 2)})) ==
        "kernel 'k': arguments of pow have different types (f64 and f32); cast one in `pow(s, 2:f32)`");
  CHECK(expr_error(make_select(n(), s(), s())) ==
        "kernel 'k': select condition is i32; it must be bool in `select(n, s, s)`");
  CHECK(expr_error(make_select(make_bool(true), s(), make_const(F32, 1))) ==
        "kernel 'k': select branches have different types (f64 and f32) in `select(true, s, 1:f32)`");
  // The innermost problem is the one reported.
  CHECK(expr_error(make_binary(BinaryOp::Add, make_call(MathFn::Sqrt, {n()}), s())) ==
        "kernel 'k': sqrt of i32; sqrt needs f32 or f64 arguments; cast them in `sqrt(n)`");
  // Literals that no make_* function would build.
  CHECK(expr_error(make_cast(F64, std::make_shared<Const>(Bool, 2, 0.0))) ==
        "kernel 'k': bool literal holds 2; use 0 or 1 in `true`");
  CHECK(expr_error(make_cast(F64, std::make_shared<Const>(I32, std::int64_t{1} << 40, 0.0))) ==
        "kernel 'k': i32 literal holds 1099511627776, outside the range of i32 in `1099511627776:i32`");
}

TEST_CASE("verifier: parameters, arrays, indices and locals in expressions") {
  CHECK(expr_error(make_load(F64, kA, {i0()})) ==
        "kernel 'k': reads array 'a' declared out; declare it inout in `a[index(0)]`");
  CHECK(expr_error(make_cast(F64, make_load(I32, kM, {i0()}))) ==
        "kernel 'k': indexes array 'm' of rank 2 with 1 indices in `m[index(0)]`");
  CHECK(expr_error(make_load(F64, kB, {i32(1)})) ==
        "kernel 'k': an index of array 'b' is i32; indices are i64 in `b[1:i32]`");
  CHECK(expr_error(make_cast(F64, make_load(F32, kB, {i0()}))) ==
        "kernel 'k': loads f32 from array 'b' of f64 in `b[index(0)]`");
  CHECK(expr_error(make_load(F64, kS, {i0()})) == "kernel 'k': 's' is not an array parameter in `s[index(0)]`");
  CHECK(expr_error(make_cast(F64, make_extent(kB, 1))) ==
        "kernel 'k': extent dimension 1 is out of range for array 'b' of rank 1 in `extent(b, 1)`");
  CHECK(expr_error(make_cast(F64, make_extent(kS, 0))) ==
        "kernel 'k': 's' is not an array parameter in `extent(s, 0)`");
  CHECK(expr_error(make_cast(F64, make_param(F32, kS))) == "kernel 'k': scalar 's' is f64 but is read as f32 in `s`");
  CHECK(expr_error(make_param(F64, kB)) == "kernel 'k': uses array 'b' as a value; index it in `b`");
  CHECK(expr_error(make_param(F64, kR)) ==
        "kernel 'k': reads reduction 'r'; a reduction can only be reduced into in `r`");
  CHECK(expr_error(make_param(F64, 9)) ==
        "kernel 'k': refers to parameter 9, but the kernel has 7 parameters in `<param 9>`");
  CHECK(expr_error(make_cast(F64, make_index(1))) ==
        "kernel 'k': index dimension 1 is out of range for a kernel with dims 1 in `index(1)`");
  CHECK(expr_error(make_var(F64, "x")) ==
        "kernel 'k': variable 'x' is not declared here: a Value or Var of another kernel, or of a For or If body that "
        "has ended, is used in this one (values live inside the body that made them) in `x`");
  CHECK(verify_error(with_body({make_decl("x", i32(1)), make_reduce(kR, make_var(F64, "x"))})) ==
        "kernel 'k': variable 'x' is i32 but is read as f64 in `x`");
  // A local is visible to the end of its block only; a loop variable in its body only.
  CHECK(verify_error(with_body(
            {make_if(make_bool(true), make_block({make_decl("t", f64(1))})), make_reduce(kR, make_var(F64, "t"))})) ==
        "kernel 'k': variable 't' is used outside its scope in `t`");
  CHECK(verify_error(
            with_body({make_for("j", i64(0), i64(4), make_block({})), make_store(kA, {make_var(I64, "j")}, s())})) ==
        "kernel 'k': variable 'j' is used outside its scope in `j`");
  CHECK(verify_error(with_body({make_decl("x", make_var(F64, "x"))})) ==
        "kernel 'k': variable 'x' is not declared here: a Value or Var of another kernel, or of a For or If body that "
        "has ended, is used in this one (values live inside the body that made them) in `x`");
}

TEST_CASE("verifier: statement rules") {
  const auto store_a = [](Expr value) { return make_store(kA, {i0()}, std::move(value)); };
  CHECK(verify_error(with_body({make_store(kB, {i0()}, s())})) ==
        "kernel 'k': writes array 'b' declared in; declare it out or inout in `b[index(0)] = s`");
  CHECK(verify_error(with_body({store_a(n())})) == "kernel 'k': stores i32 into array 'a' of f64 in `a[index(0)] = n`");
  CHECK(verify_error(with_body({make_store(kM, {i0(), i0(), i0()}, n())})) ==
        "kernel 'k': indexes array 'm' of rank 2 with 3 indices in `m[index(0), index(0), index(0)] = n`");
  CHECK(verify_error(with_body({make_store(kS, {i0()}, s())})) ==
        "kernel 'k': 's' is not an array parameter in `s[index(0)] = s`");
  CHECK(verify_error(with_body({make_atomic_add(kBits, {i0()}, make_bool(true))})) ==
        "kernel 'k': atomic add on bool array 'bits'; atomic adds need i32, i64, f32 or f64 in `atomic bits[index(0)] "
        "+= true`");
  CHECK(verify_error(with_body({make_atomic_add(kB, {i0()}, s())})) ==
        "kernel 'k': writes array 'b' declared in; declare it out or inout in `atomic b[index(0)] += s`");
  CHECK(verify_error(with_body({make_atomic_add(kM, {i0(), i0()}, s())})) ==
        "kernel 'k': adds f64 to array 'm' of i32 in `atomic m[index(0), index(0)] += s`");
  CHECK(verify_error(with_body({make_reduce(kS, s())})) ==
        "kernel 'k': reduces into 's', which is not a reduction parameter in `reduce s <- s`");
  CHECK(verify_error(with_body({make_reduce(kR, n())})) ==
        "kernel 'k': reduces i32 into reduction 'r' of f64 in `reduce r <- n`");
  // Declarations.
  CHECK(verify_error(with_body({make_decl("x", s()), make_decl("x", s())})) ==
        "kernel 'k': variable 'x' reuses a name declared before; locals and loop variables need unique names in `var "
        "x: f64 = s`");
  CHECK(verify_error(with_body({make_if(make_bool(true), make_block({make_decl("x", s())})), make_decl("x", s())})) ==
        "kernel 'k': variable 'x' reuses a name declared before; locals and loop variables need unique names in `var "
        "x: f64 = s`");
  CHECK(verify_error(with_body({make_decl("s", s())})) ==
        "kernel 'k': variable 's' has the name of a parameter; rename it in `var s: f64 = s`");
  CHECK(verify_error(with_body({make_decl("if", s())})) == "");
  CHECK(verify_error(with_body({std::make_shared<Decl>("x", I32, s())})) ==
        "kernel 'k': variable 'x' is declared i32 but initialised with f64 in `var x: i32 = s`");
  // Assignments.
  CHECK(verify_error(with_body({make_assign("x", s())})) ==
        "kernel 'k': assigns to variable 'x', which is not declared in `x = s`");
  CHECK(verify_error(with_body({make_assign("s", s())})) ==
        "kernel 'k': assigns to parameter 's'; only locals declared with var can be assigned in `s = s`");
  CHECK(verify_error(with_body({make_decl("x", s()), make_assign("x", n())})) ==
        "kernel 'k': assigns i32 to variable 'x' of f64 in `x = n`");
  CHECK(verify_error(with_body({make_for("j", i64(0), i64(4), make_block({make_assign("j", i64(1))}))})) ==
        "kernel 'k': assigns to loop variable 'j'; loop variables are read-only in `j = 1:i64`");
  // If and For.
  CHECK(verify_error(with_body({make_if(n(), make_block({}))})) ==
        "kernel 'k': condition is i32; it must be bool in `if n {`");
  CHECK(verify_error(with_body({make_for("j", f64(0), f64(4), make_block({}))})) ==
        "kernel 'k': loop bounds are f64; they must be i32 or i64 in `for j in 0:f64 .. 4:f64 {`");
  CHECK(verify_error(with_body({make_for("j", i32(0), i64(4), make_block({}))})) ==
        "kernel 'k': loop bounds have different types (i32 and i64) in `for j in 0:i32 .. 4:i64 {`");
  CHECK(verify_error(with_body({make_for("j", i64(0), i64(4), i64(0), make_block({}))})) ==
        "kernel 'k': the step must be a positive i64 literal in `for j in 0:i64 .. 4:i64 step 0:i64 {`");
  CHECK(verify_error(with_body({make_for("j", i64(0), i64(4), i32(1), make_block({}))})) ==
        "kernel 'k': the step must be a positive i64 literal in `for j in 0:i64 .. 4:i64 step 1:i32 {`");
  CHECK(verify_error(with_body({make_for("j", i64(0), i64(4), i0(), make_block({}))})) ==
        "kernel 'k': the step must be a positive i64 literal in `for j in 0:i64 .. 4:i64 step index(0) {`");
  CHECK(verify_error(with_body(
            {make_for("j", i64(0), i64(4), make_block({})), make_for("j", i64(0), i64(4), make_block({}))})) ==
        "kernel 'k': loop variable 'j' reuses a name declared before; locals and loop variables need unique names in "
        "`for j in 0:i64 .. 4:i64 {`");
  CHECK(verify_error(with_body({make_for("a", i64(0), i64(4), make_block({}))})) ==
        "kernel 'k': loop variable 'a' has the name of a parameter; rename it in `for a in 0:i64 .. 4:i64 {`");
  CHECK(verify_error(with_body({make_for("j", i64(0), make_var(I64, "j"), make_block({}))})) ==
        "kernel 'k': variable 'j' is not declared here: a Value or Var of another kernel, or of a For or If body that "
        "has ended, is used in this one (values live inside the body that made them) in `j`");
}

TEST_CASE("verifier: null children are reported, never dereferenced") {
  CHECK(expr_error(make_binary(BinaryOp::Add, s(), Expr{})) == "kernel 'k': null operand in `(s + <null>)`");
  CHECK(expr_error(make_load(F64, kB, {Expr{}})) == "kernel 'k': null index in `b[<null>]`");
  CHECK(expr_error(make_cast(F64, Expr{})) == "kernel 'k': null operand in `f64(<null>)`");
  CHECK(expr_error(std::make_shared<Call>(MathFn::Pow, std::vector<Expr>{s(), Expr{}})) ==
        "kernel 'k': null argument in `pow(s, <null>)`");
  CHECK(verify_error(with_body({make_reduce(kR, Expr{})})) ==
        "kernel 'k': reduces a null value in `reduce r <- <null>`");
  CHECK(verify_error(with_body({make_store(kA, {i0()}, Expr{})})) ==
        "kernel 'k': writes a null value in `a[index(0)] = <null>`");
  CHECK(verify_error(with_body({make_store(kA, {Expr{}}, s())})) == "kernel 'k': null index in `a[<null>] = s`");
  CHECK(verify_error(with_body({make_reduce(kR, s()), Stmt{}})) == "kernel 'k': statement 2 of a block is null");
  CHECK(verify_error(with_body({std::make_shared<Decl>("x", F64, Expr{})})) ==
        "kernel 'k': variable 'x' has a null initial value in `var x: f64 = <null>`");
  CHECK(verify_error(with_body({make_assign("x", Expr{})})) == "kernel 'k': assigns a null value in `x = <null>`");
  CHECK(verify_error(with_body({make_if(Expr{}, make_block({}))})) == "kernel 'k': null condition in `if <null> {`");
  CHECK(verify_error(with_body({make_if(make_bool(true), Stmt{})})) ==
        "kernel 'k': null then-body; use an empty Block in `if true {`");
  CHECK(verify_error(with_body({make_for("j", i64(0), Expr{}, make_block({}))})) ==
        "kernel 'k': loop with a null bound or step in `for j in 0:i64 .. <null> {`");
  CHECK(verify_error(with_body({make_for("j", i64(0), i64(1), Stmt{})})) ==
        "kernel 'k': loop with a null body; use an empty Block in `for j in 0:i64 .. 1:i64 {`");
  CHECK(verify_error(with_body({make_if(make_bool(true), make_block({}), Stmt{})})) == "");
}

TEST_CASE("kernel: messages name a parameter by its given name, or by its default name and position") {
  Kernel kernel;
  kernel.name = "k";
  for (int p = 0; p < 23; ++p) kernel.params.push_back(Param::scalar("p" + std::to_string(p), F64));
  kernel.params[4].name = "scale";
  CHECK(kernel.describe_param(0) == "p0 (unnamed: the 1st)");
  CHECK(kernel.describe_param(1) == "p1 (unnamed: the 2nd)");
  CHECK(kernel.describe_param(2) == "p2 (unnamed: the 3rd)");
  CHECK(kernel.describe_param(3) == "p3 (unnamed: the 4th)");
  CHECK(kernel.describe_param(4) == "'scale'");
  CHECK(kernel.describe_param(10) == "p10 (unnamed: the 11th)");
  CHECK(kernel.describe_param(11) == "p11 (unnamed: the 12th)");
  CHECK(kernel.describe_param(12) == "p12 (unnamed: the 13th)");
  CHECK(kernel.describe_param(20) == "p20 (unnamed: the 21st)");
  CHECK(kernel.describe_param(22) == "p22 (unnamed: the 23rd)");
  // A name that only looks like a default one elsewhere is the user's.
  kernel.params[5].name = "p6";
  CHECK(kernel.describe_param(5) == "'p6'");
}
