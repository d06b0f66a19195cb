// The SIMD lowering's Ifs on the lanes' own index (a stencil's edges):
// where the first and the last lane of a vector decide alike, the side they
// take runs without masks; where they part, each lane goes its own way; and
// where the lanes' values wrap within a vector, the shortcut is not taken.
// Checked against plain loops in C++ at several widths, over ranges that
// start and end inside a vector.
#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
#include <vector>

#include "simd_lanes.hpp"

using namespace canopy;
using namespace canopy::ir;
using namespace canopy::jit;
using namespace canopy::jit::testing;

TEST_CASE("If on the lanes' own index: a three-point stencil's edges at every width and offset") {
  // y[i] = x[i] + (i > 0 ? x[i-1] : 0) + (n - 1 > i ? x[i+1] : 100); z[i] = i >= t ? 1 : 2
  const Expr i = make_index(0);
  const Expr n = make_extent(1, 0);
  const Kernel kernel = make_kernel(
      "edges.stencil",
      {Param::array("y", I64, 1, Access::Out), Param::array("x", I64, 1, Access::In),
       Param::array("z", I32, 1, Access::Out), Param::scalar("t", I64)},
      1,
      {make_decl("v", make_load(I64, 1, {i})),
       make_if(
           make_compare(CompareOp::Gt, i, make_int(I64, 0)),
           make_block({make_assign(
               "v", add(make_var(I64, "v"), make_load(I64, 1, {make_binary(BinaryOp::Sub, i, make_int(I64, 1))})))})),
       make_if(make_compare(CompareOp::Gt, make_binary(BinaryOp::Sub, n, make_int(I64, 1)), i),
               make_block({make_assign("v", add(make_var(I64, "v"), make_load(I64, 1, {add(i, make_int(I64, 1))})))}),
               make_block({make_assign("v", add(make_var(I64, "v"), make_int(I64, 100)))})),
       make_store(0, {i}, make_var(I64, "v")),
       make_if(make_compare(CompareOp::Ge, i, make_param(I64, 3)), make_block({make_store(2, {i}, make_int(I32, 1))}),
               make_block({make_store(2, {i}, make_int(I32, 2))}))});
  const std::int64_t count = 203;
  std::vector<std::int64_t> x(count);
  for (std::int64_t e = 0; e < count; ++e) x[e] = (e * 7919) % 1000;
  for (const char* lanes : {"8", "16", "5", "64"}) {
    const CpuEntry entry = compile_with_lanes(kernel, lanes);
    for (auto [begin, end, t] : {std::tuple{0, 203, 40}, {1, 202, 0}, {3, 200, 199}, {0, 7, 3}, {190, 203, 500}}) {
      CAPTURE(lanes);
      CAPTURE(begin);
      CAPTURE(end);
      std::vector<std::int64_t> y(count, -1);
      std::vector<std::int32_t> z(count, -1);
      ArgBlock args(kernel);
      args.array(0, y.data(), {count}).array(1, x.data(), {count}).array(2, z.data(), {count}).integer(3, t);
      entry(begin, end, args.data());
      for (std::int64_t e = 0; e < count; ++e) {
        CAPTURE(e);
        if (e < begin || e >= end) {
          REQUIRE(y[e] == -1);
          REQUIRE(z[e] == -1);
          continue;
        }
        const std::int64_t want = x[e] + (e > 0 ? x[e - 1] : 0) + (count - 1 > e ? x[e + 1] : 100);
        REQUIRE(y[e] == want);
        REQUIRE(z[e] == (e >= t ? 1 : 2));
      }
    }
  }
}

TEST_CASE("If on the lanes' own index: lanes whose values wrap within a vector each decide for themselves") {
  // out[i] = (i * s < 0) ? 1 : 0, with s = 2^62: i * s wraps, and lanes
  // 0 1 2 3 4 5 ... decide no no yes yes no no ..., so with 5 or 9 lanes the
  // first and the last lane agree while lanes between do not.
  const Expr i = make_index(0);
  const Kernel kernel = make_kernel(
      "edges.wrapping", {Param::array("out", I32, 1, Access::Out), Param::scalar("s", I64)}, 1,
      {make_store(0, {i}, make_int(I32, 0)),
       make_if(make_compare(CompareOp::Lt, make_binary(BinaryOp::Mul, i, make_param(I64, 1)), make_int(I64, 0)),
               make_block({make_store(0, {i}, make_int(I32, 1))}))});
  const std::int64_t count = 40;
  const std::int64_t s = std::int64_t{1} << 62;
  for (const char* lanes : {"5", "9", "16"}) {
    CAPTURE(lanes);
    const CpuEntry entry = compile_with_lanes(kernel, lanes);
    std::vector<std::int32_t> out(count, -1);
    ArgBlock args(kernel);
    args.array(0, out.data(), {count}).integer(1, s);
    entry(0, count, args.data());
    for (std::int64_t e = 0; e < count; ++e) {
      CAPTURE(e);
      // The IR's integers wrap: the product modulo 2^64, read as signed.
      const auto product = static_cast<std::int64_t>(static_cast<std::uint64_t>(e) * static_cast<std::uint64_t>(s));
      REQUIRE(out[e] == (product < 0 ? 1 : 0));
    }
  }
}
