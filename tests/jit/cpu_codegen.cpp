// The CPU JIT's generated code against plain C++, element by element: loops
// over ranges that are not a multiple of the vector width and over
// sub-ranges, reductions, 2-D and 3-D index spaces, control flow, every
// scalar type through memory and through the argument block, and the IR's
// arithmetic edge cases (division by zero, INT_MIN / -1, saturating casts,
// NaN, shift amounts of the bit width and more), and atomic adds from two
// threads.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <thread>
#include <vector>

#include <canopy/ir/error.hpp>
#include <canopy/jit/cpu_compiler.hpp>

#include "jit_test_support.hpp"

using namespace canopy;
using namespace canopy::ir;
using namespace canopy::jit;
using namespace canopy::jit::testing;

namespace {

// One compiler for this file, on its own fresh cache directory.
CpuCompiler& compiler() {
  static TempDir dir;
  static CpuCompiler instance(CpuCompiler::Options{dir.str()});
  return instance;
}

CpuEntry compile(const Kernel& kernel) {
  auto compiled = compiler().compile(kernel);
  const bool has_entry = compiled.entry != nullptr;
  REQUIRE(has_entry);
  return compiled.entry;
}

Expr load1(ScalarType type, int param) { return make_load(type, param, {make_index(0)}); }
Stmt store1(int param, Expr value) { return make_store(param, {make_index(0)}, std::move(value)); }
Expr bin(BinaryOp op, Expr a, Expr b) { return make_binary(op, std::move(a), std::move(b)); }

Kernel triad_kernel() {
  return make_kernel(
      "triad",
      {Param::array("a", F64, 1, Access::Out), Param::array("b", F64, 1, Access::In),
       Param::array("c", F64, 1, Access::In), Param::scalar("s", F64)},
      1, {store1(0, bin(BinaryOp::Add, load1(F64, 1), bin(BinaryOp::Mul, make_param(F64, 3), load1(F64, 2))))});
}

// The IR's integer division and remainder (ir/expr.hpp).
template <class T>
T ir_div(T a, T b) {
  if (b == 0) return 0;
  if (a == std::numeric_limits<T>::min() && b == -1) return a;
  return a / b;
}
template <class T>
T ir_rem(T a, T b) {
  if (b == 0 || (a == std::numeric_limits<T>::min() && b == -1)) return 0;
  return a % b;
}

}  // namespace

TEST_CASE("triad over 1003 elements and over the sub-range [17, 990)") {
  Kernel kernel = triad_kernel();
  CpuEntry entry = compile(kernel);
  const std::int64_t n = 1003;
  std::vector<double> a(n, -1.0), b(n), c(n);
  for (std::int64_t i = 0; i < n; ++i) {
    b[i] = 0.25 * static_cast<double>(i) + 1.0 / 3.0;
    c[i] = std::sin(static_cast<double>(i));
  }
  const double s = 0.4;
  ArgBlock args(kernel);
  args.array(0, a.data(), {n}).array(1, b.data(), {n}).array(2, c.data(), {n}).f64(3, s);

  entry(0, n, args.data());
  for (std::int64_t i = 0; i < n; ++i) REQUIRE(a[i] == b[i] + s * c[i]);

  std::fill(a.begin(), a.end(), -1.0);
  entry(17, 990, args.data());
  for (std::int64_t i = 0; i < n; ++i) {
    if (i >= 17 && i < 990)
      REQUIRE(a[i] == b[i] + s * c[i]);
    else
      REQUIRE(a[i] == -1.0);
  }

  std::fill(a.begin(), a.end(), -1.0);
  entry(5, 5, args.data());  // empty
  entry(9, 3, args.data());  // reversed: empty too
  CHECK(std::count(a.begin(), a.end(), -1.0) == n);
}

TEST_CASE("the argument layout puts arrays, scalars, reductions, then the ranges") {
  Kernel kernel = make_kernel("layout",
                              {Param::array("a", F64, 2, Access::Out), Param::scalar("s", F32),
                               Param::reduction("r", I64, ReduceOp::Sum), Param::array("b", I32, 3, Access::In)},
                              3, {});
  CpuArgLayout layout = cpu_arg_layout(kernel);
  CHECK(layout.first_slot == std::vector<int>{0, 3, 4, 5});
  CHECK(layout.range_slot == 9);
  CHECK(layout.slot_count == 13);
  CHECK(sizeof(ArgSlot) == 8);
}

TEST_CASE("sum reductions: dot product of f64, i32 sum with wrap-around, empty range") {
  Kernel dot = make_kernel("dot",
                           {Param::array("a", F64, 1, Access::In), Param::array("b", F64, 1, Access::In),
                            Param::reduction("s", F64, ReduceOp::Sum)},
                           1, {make_reduce(2, bin(BinaryOp::Mul, load1(F64, 0), load1(F64, 1)))});
  CpuEntry entry = compile(dot);
  const std::int64_t n = 1003;
  std::vector<double> a(n), b(n);
  for (std::int64_t i = 0; i < n; ++i) {
    a[i] = static_cast<double>(i % 17) * 0.5;  // exact products and sums: any order gives one result
    b[i] = static_cast<double>(i % 5) - 2.0;
  }
  double expected = 0.0;
  for (std::int64_t i = 0; i < n; ++i) expected += a[i] * b[i];
  double partial = 12345.0;
  ArgBlock args(dot);
  args.array(0, a.data(), {n}).array(1, b.data(), {n}).partial(2, &partial);
  entry(0, n, args.data());
  CHECK(partial == expected);

  // A general sum is only reassociated, so it is close to the serial one.
  for (std::int64_t i = 0; i < n; ++i) a[i] = std::cos(static_cast<double>(i)), b[i] = 1.0 / (1.0 + i);
  expected = 0.0;
  for (std::int64_t i = 3; i < 1000; ++i) expected += a[i] * b[i];
  entry(3, 1000, args.data());
  CHECK(partial == doctest::Approx(expected).epsilon(1e-12));

  partial = 99.0;
  entry(10, 10, args.data());
  CHECK(partial == 0.0);  // an empty piece stores the identity

  Kernel isum = make_kernel("isum", {Param::array("x", I32, 1, Access::In), Param::reduction("s", I32, ReduceOp::Sum)},
                            1, {make_reduce(1, load1(I32, 0))});
  CpuEntry ientry = compile(isum);
  std::vector<std::int32_t> x(n);
  std::uint32_t wrapped = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    x[i] = static_cast<std::int32_t>(i * 7919 * 104729 + 2000000000);
    wrapped += static_cast<std::uint32_t>(x[i]);
  }
  std::int32_t isum_result = 0;
  ArgBlock iargs(isum);
  iargs.array(0, x.data(), {n}).partial(1, &isum_result);
  ientry(0, n, iargs.data());
  CHECK(isum_result == static_cast<std::int32_t>(wrapped));
}

TEST_CASE("min and max reductions on f64 and i64, NaN ignored, empty range gives the identity") {
  Kernel kernel =
      make_kernel("minmax",
                  {Param::array("x", F64, 1, Access::In), Param::array("k", I64, 1, Access::In),
                   Param::reduction("lo", F64, ReduceOp::Min), Param::reduction("hi", F64, ReduceOp::Max),
                   Param::reduction("klo", I64, ReduceOp::Min)},
                  1, {make_reduce(2, load1(F64, 0)), make_reduce(3, load1(F64, 0)), make_reduce(4, load1(I64, 1))});
  CpuEntry entry = compile(kernel);
  const std::int64_t n = 517;
  std::vector<double> x(n);
  std::vector<std::int64_t> k(n);
  for (std::int64_t i = 0; i < n; ++i) {
    x[i] = std::sin(0.37 * static_cast<double>(i)) * 100.0;
    k[i] = (i * 7919) % 1000 - 500;
  }
  x[100] = std::numeric_limits<double>::quiet_NaN();
  double lo = 0, hi = 0;
  std::int64_t klo = 0;
  ArgBlock args(kernel);
  args.array(0, x.data(), {n}).array(1, k.data(), {n}).partial(2, &lo).partial(3, &hi).partial(4, &klo);
  entry(0, n, args.data());
  double want_lo = INFINITY, want_hi = -INFINITY;
  std::int64_t want_klo = std::numeric_limits<std::int64_t>::max();
  for (std::int64_t i = 0; i < n; ++i) {
    want_lo = std::fmin(want_lo, x[i]);
    want_hi = std::fmax(want_hi, x[i]);
    want_klo = std::min(want_klo, k[i]);
  }
  CHECK(lo == want_lo);
  CHECK(hi == want_hi);
  CHECK(klo == want_klo);

  entry(7, 7, args.data());
  CHECK(lo == INFINITY);
  CHECK(hi == -INFINITY);
  CHECK(klo == std::numeric_limits<std::int64_t>::max());
}

TEST_CASE("2-D kernel over rows [begin, end) and columns [lo1, hi1), and a 3-D one") {
  // out[i][j] = in[i][j] * 2 + i * 1000 + j, with extents read from the array.
  Kernel kernel = make_kernel(
      "grid2", {Param::array("dst", F64, 2, Access::Out), Param::array("src", F64, 2, Access::In)}, 2,
      {make_store(0, {make_index(0), make_index(1)},
                  bin(BinaryOp::Add,
                      bin(BinaryOp::Mul, make_load(F64, 1, {make_index(0), make_index(1)}), make_const(F64, 2.0)),
                      make_cast(F64, bin(BinaryOp::Add, bin(BinaryOp::Mul, make_index(0), make_int(I64, 1000)),
                                         make_index(1)))))});
  CpuEntry entry = compile(kernel);
  const std::int64_t rows = 37, cols = 29;
  std::vector<double> out(rows * cols, -1.0), in(rows * cols);
  for (std::int64_t e = 0; e < rows * cols; ++e) in[e] = 0.5 * static_cast<double>(e);
  ArgBlock args(kernel);
  args.array(0, out.data(), {rows, cols}).array(1, in.data(), {rows, cols}).range(1, 3, 26);
  entry(5, 30, args.data());
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < cols; ++j) {
      const bool inside = i >= 5 && i < 30 && j >= 3 && j < 26;
      const double want = inside ? in[i * cols + j] * 2.0 + static_cast<double>(i * 1000 + j) : -1.0;
      REQUIRE(out[i * cols + j] == want);
    }

  // 3-D: out[i][j][k] = in[i][j][k] + extent(in, 2) * j, i64.
  Kernel cube =
      make_kernel("cube3", {Param::array("dst", I64, 3, Access::Out), Param::array("src", I64, 3, Access::In)}, 3,
                  {make_store(0, {make_index(0), make_index(1), make_index(2)},
                              bin(BinaryOp::Add, make_load(I64, 1, {make_index(0), make_index(1), make_index(2)}),
                                  bin(BinaryOp::Mul, make_extent(1, 2), make_index(1))))});
  CpuEntry cube_entry = compile(cube);
  const std::int64_t n0 = 6, n1 = 7, n2 = 9;
  std::vector<std::int64_t> c_out(n0 * n1 * n2, -1), c_in(n0 * n1 * n2);
  for (std::int64_t e = 0; e < n0 * n1 * n2; ++e) c_in[e] = e * 3;
  ArgBlock cargs(cube);
  cargs.array(0, c_out.data(), {n0, n1, n2}).array(1, c_in.data(), {n0, n1, n2}).range(1, 1, 6).range(2, 2, 9);
  cube_entry(1, 5, cargs.data());
  for (std::int64_t i = 0; i < n0; ++i)
    for (std::int64_t j = 0; j < n1; ++j)
      for (std::int64_t k = 0; k < n2; ++k) {
        const std::int64_t e = (i * n1 + j) * n2 + k;
        const bool inside = i >= 1 && i < 5 && j >= 1 && j < 6 && k >= 2 && k < 9;
        REQUIRE(c_out[e] == (inside ? c_in[e] + n2 * j : -1));
      }
}

TEST_CASE("If/Else, select and a For loop with a local") {
  // if (x > 0) y = sqrt(x) else y = -x;  z = x > 1 ? 1 : 0 via select;
  // acc = 0; for k in 0 .. i % 7 step 2 { acc = acc + k * x }; w = acc
  auto x = load1(F64, 0);
  auto i = make_index(0);
  Kernel kernel = make_kernel(
      "branches",
      {Param::array("x", F64, 1, Access::In), Param::array("y", F64, 1, Access::Out),
       Param::array("z", I32, 1, Access::Out), Param::array("w", F64, 1, Access::Out)},
      1,
      {make_if(make_compare(CompareOp::Gt, x, make_const(F64, 0.0)),
               make_block({store1(1, make_call(MathFn::Sqrt, {x}))}),
               make_block({store1(1, make_unary(UnaryOp::Neg, x))})),
       store1(2, make_select(make_compare(CompareOp::Gt, x, make_const(F64, 1.0)), make_int(I32, 1), make_int(I32, 0))),
       make_decl("acc", make_const(F64, 0.0)),
       make_for("k", make_int(I64, 0), bin(BinaryOp::Rem, i, make_int(I64, 7)), make_int(I64, 2),
                make_block({make_assign("acc", bin(BinaryOp::Add, make_var(F64, "acc"),
                                                   bin(BinaryOp::Mul, make_cast(F64, make_var(I64, "k")), x)))})),
       store1(3, make_var(F64, "acc"))});
  CpuEntry entry = compile(kernel);
  const std::int64_t n = 101;
  std::vector<double> xs(n), y(n), w(n);
  std::vector<std::int32_t> z(n);
  for (std::int64_t e = 0; e < n; ++e) xs[e] = static_cast<double>(e - 50) * 0.125;
  ArgBlock args(kernel);
  args.array(0, xs.data(), {n}).array(1, y.data(), {n}).array(2, z.data(), {n}).array(3, w.data(), {n});
  entry(0, n, args.data());
  for (std::int64_t e = 0; e < n; ++e) {
    const double v = xs[e];
    REQUIRE(y[e] == (v > 0 ? std::sqrt(v) : -v));
    REQUIRE(z[e] == (v > 1 ? 1 : 0));
    double acc = 0.0;
    for (std::int64_t k = 0; k < e % 7; k += 2) acc = acc + static_cast<double>(k) * v;
    REQUIRE(w[e] == acc);
  }
}

TEST_CASE("For loops with a step stop before the end without wrapping, and i32 counters") {
  // count = 0; for k in begin .. end step 3 (i32) { count = count + 1 }; out[i] = count
  Kernel kernel = make_kernel(
      "steps", {Param::array("dst", I32, 1, Access::Out), Param::scalar("begin", I32), Param::scalar("end", I32)}, 1,
      {make_decl("count", make_int(I32, 0)),
       make_for("k", make_param(I32, 1), make_param(I32, 2), make_int(I32, 3),
                make_block({make_assign("count", bin(BinaryOp::Add, make_var(I32, "count"), make_int(I32, 1)))})),
       store1(0, make_var(I32, "count"))});
  CpuEntry entry = compile(kernel);
  auto trips = [&](std::int32_t begin, std::int32_t end) {
    std::int32_t out = -1;
    ArgBlock args(kernel);
    args.array(0, &out, {1}).integer(1, begin).integer(2, end);
    entry(0, 1, args.data());
    return out;
  };
  CHECK(trips(0, 10) == 4);  // 0 3 6 9
  CHECK(trips(0, 9) == 3);
  CHECK(trips(5, 5) == 0);
  CHECK(trips(-7, -1) == 2);
  const std::int32_t max = std::numeric_limits<std::int32_t>::max();
  const std::int32_t min = std::numeric_limits<std::int32_t>::min();
  CHECK(trips(max - 5, max) == 2);  // max-5, max-2; the next step would wrap
  CHECK(trips(min, min + 2) == 1);
}

TEST_CASE("integer division and remainder by zero and INT_MIN / -1") {
  for (ScalarType type : {I32, I64}) {
    CAPTURE(type);
    Kernel kernel = make_kernel(type == I32 ? "divrem32" : "divrem64",
                                {Param::array("a", type, 1, Access::In), Param::array("b", type, 1, Access::In),
                                 Param::array("q", type, 1, Access::Out), Param::array("r", type, 1, Access::Out)},
                                1,
                                {store1(2, bin(BinaryOp::Div, load1(type, 0), load1(type, 1))),
                                 store1(3, bin(BinaryOp::Rem, load1(type, 0), load1(type, 1)))});
    CpuEntry entry = compile(kernel);
    auto run = [&]<class T>(T) {
      const T min = std::numeric_limits<T>::min(), max = std::numeric_limits<T>::max();
      std::vector<T> a = {7, -7, 7, -7, 0, min, min, max, min, 5, 123456, -1};
      std::vector<T> b = {2, 2, -2, -2, 0, -1, 0, -1, 1, 0, 0, min};
      const auto n = static_cast<std::int64_t>(a.size());
      std::vector<T> q(n, 99), r(n, 99);
      ArgBlock args(kernel);
      args.array(0, a.data(), {n}).array(1, b.data(), {n}).array(2, q.data(), {n}).array(3, r.data(), {n});
      entry(0, n, args.data());
      for (std::int64_t e = 0; e < n; ++e) {
        CAPTURE(e);
        CHECK(q[e] == ir_div(a[e], b[e]));
        CHECK(r[e] == ir_rem(a[e], b[e]));
      }
      CHECK(q[5] == min);  // MIN / -1
      CHECK(q[4] == 0);    // 0 / 0
      CHECK(r[5] == 0);
    };
    if (type == I32)
      run(std::int32_t{});
    else
      run(std::int64_t{});
  }
}

TEST_CASE("float to int casts saturate, NaN gives 0; casts to bool compare with zero") {
  Kernel kernel = make_kernel(
      "casts",
      {Param::array("x", F64, 1, Access::In), Param::array("as_i32", I32, 1, Access::Out),
       Param::array("as_i64", I64, 1, Access::Out), Param::array("b", Bool, 1, Access::Out),
       Param::array("f32i64", I64, 1, Access::Out)},
      1,
      {store1(1, make_cast(I32, load1(F64, 0))), store1(2, make_cast(I64, load1(F64, 0))),
       store1(3, make_cast(Bool, load1(F64, 0))), store1(4, make_cast(I64, make_cast(F32, load1(F64, 0))))});
  CpuEntry entry = compile(kernel);
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = INFINITY;
  std::vector<double> x = {2.7, -2.7, 1e20,         -1e20,         nan,    inf, -inf,
                           0.0, -0.0, 2147483647.5, -2147483648.9, 9.0e18, 0.49};
  const auto n = static_cast<std::int64_t>(x.size());
  std::vector<std::int32_t> i32(n);
  std::vector<std::int64_t> i64(n), f32i64(n);
  std::vector<unsigned char> b(n, 7);
  ArgBlock args(kernel);
  args.array(0, x.data(), {n}).array(1, i32.data(), {n}).array(2, i64.data(), {n}).array(3, b.data(), {n});
  args.array(4, f32i64.data(), {n});
  entry(0, n, args.data());
  const std::int32_t i32_max = std::numeric_limits<std::int32_t>::max(),
                     i32_min = std::numeric_limits<std::int32_t>::min();
  const std::int64_t i64_max = std::numeric_limits<std::int64_t>::max(),
                     i64_min = std::numeric_limits<std::int64_t>::min();
  CHECK(i32 ==
        std::vector<std::int32_t>{2, -2, i32_max, i32_min, 0, i32_max, i32_min, 0, 0, i32_max, i32_min, i32_max, 0});
  CHECK(i64 == std::vector<std::int64_t>{2, -2, i64_max, i64_min, 0, i64_max, i64_min, 0, 0, 2147483647, -2147483648,
                                         9000000000000000000, 0});
  CHECK(b == std::vector<unsigned char>{1, 1, 1, 1, 1, 1, 1, 0, 0, 1, 1, 1, 1});
  CHECK(f32i64[0] == 2);
  CHECK(f32i64[4] == 0);
  CHECK(f32i64[11] == static_cast<std::int64_t>(9.0e18f));
}

TEST_CASE("shift amounts are taken modulo the bit width, >> is arithmetic, integers wrap") {
  Kernel kernel = make_kernel("shifts",
                              {Param::array("x", I32, 1, Access::In), Param::array("s", I32, 1, Access::In),
                               Param::array("shl", I32, 1, Access::Out), Param::array("shr", I32, 1, Access::Out),
                               Param::array("wrap", I32, 1, Access::Out), Param::array("x64", I64, 1, Access::InOut)},
                              1,
                              {store1(2, bin(BinaryOp::Shl, load1(I32, 0), load1(I32, 1))),
                               store1(3, bin(BinaryOp::Shr, load1(I32, 0), load1(I32, 1))),
                               store1(4, bin(BinaryOp::Add, bin(BinaryOp::Mul, load1(I32, 0), make_int(I32, 65536)),
                                             make_int(I32, 2147483647))),
                               store1(5, bin(BinaryOp::Shr, load1(I64, 5), make_cast(I64, load1(I32, 1))))});
  CpuEntry entry = compile(kernel);
  std::vector<std::int32_t> x = {1, -8, 12345, -1, 0x40000000, 3, 5};
  std::vector<std::int32_t> s = {33, 35, 32, 31, 1, -1, 64};
  std::vector<std::int64_t> x64 = {-1024, 1, 1 << 20, -5, 7, 1, 1024};
  const auto n = static_cast<std::int64_t>(x.size());
  std::vector<std::int32_t> shl(n), shr(n), wrap(n);
  std::vector<std::int64_t> x64_in = x64;
  ArgBlock args(kernel);
  args.array(0, x.data(), {n}).array(1, s.data(), {n}).array(2, shl.data(), {n}).array(3, shr.data(), {n});
  args.array(4, wrap.data(), {n}).array(5, x64.data(), {n});
  entry(0, n, args.data());
  for (std::int64_t e = 0; e < n; ++e) {
    CAPTURE(e);
    const int amount = s[e] & 31;
    CHECK(shl[e] == static_cast<std::int32_t>(static_cast<std::uint32_t>(x[e]) << amount));
    CHECK(shr[e] == (x[e] >> amount));
    CHECK(wrap[e] == static_cast<std::int32_t>(static_cast<std::uint32_t>(x[e]) * 65536u + 2147483647u));
    CHECK(x64[e] == (x64_in[e] >> (s[e] & 63)));
  }
  CHECK(shl[0] == 2);   // 1 << 33 == 1 << 1
  CHECK(shr[1] == -1);  // -8 >> 35 == -8 >> 3
}

TEST_CASE("every scalar type through memory and through the argument block") {
  // out = in op s for bool (^), i32 (+), i64 (-), f32 (*), f64 (/).
  struct Case {
    ScalarType type;
    BinaryOp op;
  };
  const auto n = std::int64_t{19};
  for (Case c : {Case{Bool, BinaryOp::Xor}, Case{I32, BinaryOp::Add}, Case{I64, BinaryOp::Sub},
                 Case{F32, BinaryOp::Mul}, Case{F64, BinaryOp::Div}}) {
    CAPTURE(c.type);
    Kernel kernel = make_kernel(std::string("types_") + std::string(name_of(c.type)),
                                {Param::array("src", c.type, 1, Access::In),
                                 Param::array("dst", c.type, 1, Access::Out), Param::scalar("s", c.type)},
                                1, {store1(1, bin(c.op, load1(c.type, 0), make_param(c.type, 2)))});
    CpuEntry entry = compile(kernel);
    ArgBlock args(kernel);
    switch (c.type) {
      case Bool: {
        std::vector<unsigned char> in(n), out(n, 9);  // bool elements are one byte
        for (std::int64_t e = 0; e < n; ++e) in[e] = (e % 3 == 0) ? 1 : 0;
        args.array(0, in.data(), {n}).array(1, out.data(), {n}).integer(2, 1);
        entry(0, n, args.data());
        for (std::int64_t e = 0; e < n; ++e) REQUIRE(out[e] == (in[e] ^ 1));
        args.integer(2, 0);
        entry(0, n, args.data());
        for (std::int64_t e = 0; e < n; ++e) REQUIRE(out[e] == in[e]);
        break;
      }
      case I32: {
        std::vector<std::int32_t> in(n), out(n);
        for (std::int64_t e = 0; e < n; ++e) in[e] = static_cast<std::int32_t>(e * 1000 - 7000);
        args.array(0, in.data(), {n}).array(1, out.data(), {n}).integer(2, -123);  // sign-extended
        entry(0, n, args.data());
        for (std::int64_t e = 0; e < n; ++e) REQUIRE(out[e] == in[e] - 123);
        break;
      }
      case I64: {
        std::vector<std::int64_t> in(n), out(n);
        for (std::int64_t e = 0; e < n; ++e) in[e] = e * 3000000000ll;
        args.array(0, in.data(), {n}).array(1, out.data(), {n}).integer(2, 5000000000ll);
        entry(0, n, args.data());
        for (std::int64_t e = 0; e < n; ++e) REQUIRE(out[e] == in[e] - 5000000000ll);
        break;
      }
      case F32: {
        std::vector<float> in(n), out(n);
        for (std::int64_t e = 0; e < n; ++e) in[e] = static_cast<float>(e) / 7.0f;
        args.array(0, in.data(), {n}).array(1, out.data(), {n}).f32(2, 1.1f);
        entry(0, n, args.data());
        for (std::int64_t e = 0; e < n; ++e) REQUIRE(out[e] == in[e] * 1.1f);
        break;
      }
      case F64: {
        std::vector<double> in(n), out(n);
        for (std::int64_t e = 0; e < n; ++e) in[e] = static_cast<double>(e) + 0.1;
        args.array(0, in.data(), {n}).array(1, out.data(), {n}).f64(2, 3.0);
        entry(0, n, args.data());
        for (std::int64_t e = 0; e < n; ++e) REQUIRE(out[e] == in[e] / 3.0);
        break;
      }
    }
  }
}

// Within one ulp of `want` (the C library's result, itself within half an ulp
// of the exact one): the SIMD lowering computes exp with its own vector code
// (jit/llvm/internal/vector_math.hpp), which is within 1 ulp, not the same bits.
template <class T>
bool within_an_ulp(T got, T want) {
  return got == want || got == std::nextafter(want, std::numeric_limits<T>::infinity()) ||
         got == std::nextafter(want, -std::numeric_limits<T>::infinity());
}

TEST_CASE(
    "math functions, float min/max with NaN, fmod and abs match the C library (exp, and float log, sin and cos, within "
    "an ulp)") {
  auto x = load1(F64, 0);
  auto xf = load1(F32, 1);
  auto y = make_const(F64, 1.5);
  std::vector<Stmt> body;
  const std::vector<MathFn> unary = {MathFn::Sqrt, MathFn::Exp,   MathFn::Log, MathFn::Sin,
                                     MathFn::Cos,  MathFn::Floor, MathFn::Abs};
  // out64[u][i] and out32[u][i] for each unary function, then pow, min, max, fmod.
  for (std::size_t u = 0; u < unary.size(); ++u) {
    body.push_back(
        make_store(2, {make_int(I64, static_cast<std::int64_t>(u)), make_index(0)}, make_call(unary[u], {x})));
    body.push_back(
        make_store(3, {make_int(I64, static_cast<std::int64_t>(u)), make_index(0)}, make_call(unary[u], {xf})));
  }
  const auto extra = static_cast<std::int64_t>(unary.size());
  body.push_back(make_store(2, {make_int(I64, extra), make_index(0)}, make_call(MathFn::Pow, {x, y})));
  body.push_back(make_store(2, {make_int(I64, extra + 1), make_index(0)}, bin(BinaryOp::Min, x, make_const(F64, NAN))));
  body.push_back(make_store(2, {make_int(I64, extra + 2), make_index(0)}, bin(BinaryOp::Max, x, make_const(F64, 0.5))));
  body.push_back(
      make_store(2, {make_int(I64, extra + 3), make_index(0)}, bin(BinaryOp::Rem, x, make_const(F64, 0.75))));
  body.push_back(make_store(4, {make_index(0)}, make_call(MathFn::Abs, {load1(I32, 5)})));
  Kernel kernel = make_kernel("mathfns",
                              {Param::array("x", F64, 1, Access::In), Param::array("xf", F32, 1, Access::In),
                               Param::array("out64", F64, 2, Access::Out), Param::array("out32", F32, 2, Access::Out),
                               Param::array("iabs", I32, 1, Access::Out), Param::array("ix", I32, 1, Access::In)},
                              1, std::move(body));
  CpuEntry entry = compile(kernel);
  std::vector<double> xs = {0.3, 1.0, 2.5, 10.0, 1e-3, 0.7071, 3.14159, 100.25, -0.0, 7.5, 42.0};
  const auto n = static_cast<std::int64_t>(xs.size());
  std::vector<float> xfs(n);
  for (std::int64_t e = 0; e < n; ++e) xfs[e] = static_cast<float>(xs[e]) * 1.25f;
  std::vector<double> out64((extra + 4) * n);
  std::vector<float> out32(extra * n);
  std::vector<std::int32_t> ix = {0, -1, 5, -5, std::numeric_limits<std::int32_t>::min(), 7, 8, 9, 10, 11, -12};
  std::vector<std::int32_t> iabs(n);
  ArgBlock args(kernel);
  args.array(0, xs.data(), {n}).array(1, xfs.data(), {n}).array(2, out64.data(), {extra + 4, n});
  args.array(3, out32.data(), {extra, n}).array(4, iabs.data(), {n}).array(5, ix.data(), {n});
  entry(0, n, args.data());
  auto f64_of = [](MathFn fn, double v) {
    switch (fn) {
      case MathFn::Sqrt: return std::sqrt(v);
      case MathFn::Exp: return std::exp(v);
      case MathFn::Log: return std::log(v);
      case MathFn::Sin: return std::sin(v);
      case MathFn::Cos: return std::cos(v);
      case MathFn::Floor: return std::floor(v);
      default: return std::fabs(v);
    }
  };
  auto f32_of = [](MathFn fn, float v) {
    switch (fn) {
      case MathFn::Sqrt: return std::sqrt(v);
      case MathFn::Exp: return std::exp(v);
      case MathFn::Log: return std::log(v);
      case MathFn::Sin: return std::sin(v);
      case MathFn::Cos: return std::cos(v);
      case MathFn::Floor: return std::floor(v);
      default: return std::fabs(v);
    }
  };
  for (std::int64_t e = 0; e < n; ++e) {
    CAPTURE(e);
    for (std::size_t u = 0; u < unary.size(); ++u) {
      CAPTURE(u);
      // Canopy's own vector code (tests/jit/vector_math.cpp bounds it): exp,
      // and log, sin and cos of floats, computed in float lanes.
      const bool vector_code =
          unary[u] == MathFn::Exp || unary[u] == MathFn::Log || unary[u] == MathFn::Sin || unary[u] == MathFn::Cos;
      if (unary[u] == MathFn::Exp)
        CHECK(within_an_ulp(out64[u * n + e], f64_of(unary[u], xs[e])));
      else
        CHECK(out64[u * n + e] == f64_of(unary[u], xs[e]));
      if (vector_code)
        CHECK(within_an_ulp(out32[u * n + e], f32_of(unary[u], xfs[e])));
      else
        CHECK(out32[u * n + e] == f32_of(unary[u], xfs[e]));
    }
    CHECK(out64[extra * n + e] == std::pow(xs[e], 1.5));
    CHECK(out64[(extra + 1) * n + e] == xs[e]);  // min(x, NaN) == x
    CHECK(out64[(extra + 2) * n + e] == std::fmax(xs[e], 0.5));
    CHECK(out64[(extra + 3) * n + e] == std::fmod(xs[e], 0.75));
    const std::int32_t want_abs =
        ix[e] == std::numeric_limits<std::int32_t>::min() ? ix[e] : (ix[e] < 0 ? -ix[e] : ix[e]);
    CHECK(iabs[e] == want_abs);
  }
}

TEST_CASE("comparisons: NaN is unordered; bools compare for equality") {
  auto x_value = load1(F64, 0);
  auto flag_value = load1(Bool, 1);
  Kernel kernel = make_kernel(
      "compares",
      {Param::array("x", F64, 1, Access::In), Param::array("flag", Bool, 1, Access::In),
       Param::array("bits", I32, 1, Access::Out)},
      1, {store1(2, [&] {
        // bit k set when comparison k holds
        auto x = x_value;
        auto flag = flag_value;
        std::vector<Expr> tests = {make_compare(CompareOp::Eq, x, x),
                                   make_compare(CompareOp::Ne, x, x),
                                   make_compare(CompareOp::Lt, x, make_const(F64, 1.0)),
                                   make_compare(CompareOp::Ge, x, make_const(F64, 1.0)),
                                   make_compare(CompareOp::Eq, flag, make_bool(false)),
                                   make_compare(CompareOp::Ne, flag, make_bool(false)),
                                   make_unary(UnaryOp::Not, flag)};
        Expr bits = make_int(I32, 0);
        for (std::size_t k = 0; k < tests.size(); ++k)
          bits = bin(BinaryOp::Or, bits,
                     bin(BinaryOp::Shl, make_cast(I32, tests[k]), make_int(I32, static_cast<std::int64_t>(k))));
        return bits;
      }())});
  CpuEntry entry = compile(kernel);
  std::vector<double> x = {0.5, 1.0, NAN, 2.0};
  std::vector<unsigned char> flag = {1, 0, 1, 0};
  std::vector<std::int32_t> bits(4);
  ArgBlock args(kernel);
  args.array(0, x.data(), {4}).array(1, flag.data(), {4}).array(2, bits.data(), {4});
  entry(0, 4, args.data());
  for (int e = 0; e < 4; ++e) {
    CAPTURE(e);
    const double v = x[e];
    const bool f = flag[e] != 0;
    const int want = (v == v) << 0 | (v != v) << 1 | (v < 1.0) << 2 | (v >= 1.0) << 3 | (f == false) << 4 |
                     (f != false) << 5 | (!f) << 6;
    CHECK(bits[e] == want);
  }
}

TEST_CASE("atomic adds from two threads running halves of the range") {
  // counts[key[i] % 8] += 1 (i64), total[0] += x[i] (f64), ftotal[0] += 1 (f32)
  auto i = make_index(0);
  Kernel kernel =
      make_kernel("histogram",
                  {Param::array("key", I64, 1, Access::In), Param::array("x", F64, 1, Access::In),
                   Param::array("counts", I64, 1, Access::InOut), Param::array("total", F64, 1, Access::InOut),
                   Param::array("ftotal", F32, 1, Access::InOut), Param::array("icount", I32, 1, Access::InOut)},
                  1,
                  {make_atomic_add(2, {bin(BinaryOp::Rem, load1(I64, 0), make_int(I64, 8))}, make_int(I64, 1)),
                   make_atomic_add(3, {make_int(I64, 0)}, load1(F64, 1)),
                   make_atomic_add(4, {make_int(I64, 0)}, make_const(F32, 1.0)),
                   make_atomic_add(5, {make_int(I64, 0)}, make_int(I32, 2))});
  CpuEntry entry = compile(kernel);
  const std::int64_t n = 200001;
  std::vector<std::int64_t> key(n);
  std::vector<double> x(n);
  for (std::int64_t e = 0; e < n; ++e) key[e] = (e * 2654435761ll) % 1000, x[e] = static_cast<double>(e % 10);
  std::vector<std::int64_t> counts(8, 0);
  double total = 0.0;
  float ftotal = 0.0f;
  std::int32_t icount = 0;
  ArgBlock args(kernel);
  args.array(0, key.data(), {n}).array(1, x.data(), {n}).array(2, counts.data(), {8}).array(3, &total, {1});
  args.array(4, &ftotal, {1}).array(5, &icount, {1});
  std::thread first([&] { entry(0, n / 2, args.data()); });
  std::thread second([&] { entry(n / 2, n, args.data()); });
  first.join();
  second.join();
  std::vector<std::int64_t> want(8, 0);
  double want_total = 0.0;
  for (std::int64_t e = 0; e < n; ++e) ++want[key[e] % 8], want_total += x[e];
  CHECK(counts == want);
  CHECK(total == want_total);              // integer-valued: exact in any order
  CHECK(ftotal == static_cast<float>(n));  // 200001 < 2^24: exact
  CHECK(icount == 2 * n);
}

TEST_CASE("a kernel the lowering cannot handle throws canopy::Error naming it") {
  // A For loop whose step is not a positive literal.
  Kernel kernel = make_kernel("badstep", {Param::array("dst", I64, 1, Access::Out)}, 1,
                              {make_for("k", make_int(I64, 0), make_int(I64, 4), make_int(I64, 0),
                                        make_block({store1(0, make_var(I64, "k"))}))});
  try {
    compiler().compile(kernel);
    FAIL("compile accepted a loop with step 0");
  } catch (const canopy::Error& error) {
    CHECK(std::string(error.what()).find("badstep") != std::string::npos);
  }
}
