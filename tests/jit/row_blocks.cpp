// The SIMD lowering's row blocks (jit/llvm/internal/simd_lowering.hpp): a
// point that walks its own row of a read-only array reads it through a
// transposed copy of its lanes' rows. Checked against plain loops in C++:
// whole groups of lanes (copied by tiles) and the last, partial one; rows of several
// dimensions; rows too long for the block (the loads gather instead); and an
// array passed twice, once to be written, which must be read from memory.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "simd_lanes.hpp"

using namespace canopy;
using namespace canopy::ir;
using namespace canopy::jit;
using namespace canopy::jit::testing;

namespace {

// out[i] = sum over j, k of w[j][k] * m[i][j][k] + m[i][0][k] (a 3-D array:
// each point's row is a 2-D block).
Kernel weighted_rows() {
  const Expr i = make_index(0), j = make_var(I64, "j"), k = make_var(I64, "k");
  return make_kernel(
      "rows.weighted",
      {Param::array("out", F64, 1, Access::Out), Param::array("m", F64, 3, Access::In),
       Param::array("w", F64, 2, Access::In)},
      1,
      {make_decl("acc", make_const(F64, 0.0)),
       make_for("j", make_int(I64, 0), make_extent(1, 1),
                make_block({make_for(
                    "k", make_int(I64, 0), make_extent(1, 2),
                    make_block({make_assign("acc", add(make_var(F64, "acc"),
                                                       add(mul(make_load(F64, 2, {j, k}), make_load(F64, 1, {i, j, k})),
                                                           make_load(F64, 1, {i, make_int(I64, 0), k}))))}))})),
       make_store(0, {i}, make_var(F64, "acc"))});
}

std::vector<double> run_weighted(const char* lanes, std::int64_t n, std::int64_t rows, std::int64_t columns) {
  const Kernel kernel = weighted_rows();
  const CpuEntry entry = compile_with_lanes(kernel, lanes);
  std::vector<double> m(static_cast<std::size_t>(n * rows * columns)), w(static_cast<std::size_t>(rows * columns));
  for (std::size_t e = 0; e < m.size(); ++e) m[e] = static_cast<double>((e * 37) % 101) * 0.25 - 3.0;
  for (std::size_t e = 0; e < w.size(); ++e) w[e] = static_cast<double>((e * 13) % 7) - 2.5;
  std::vector<double> out(static_cast<std::size_t>(n), -1.0);
  ArgBlock args(kernel);
  args.array(0, out.data(), {n}).array(1, m.data(), {n, rows, columns}).array(2, w.data(), {rows, columns});
  entry(0, n, args.data());
  for (std::int64_t p = 0; p < n; ++p) {
    double acc = 0.0;
    for (std::int64_t j = 0; j < rows; ++j)
      for (std::int64_t k = 0; k < columns; ++k)
        acc = acc + (w[j * columns + k] * m[(p * rows + j) * columns + k] + m[p * rows * columns + k]);
    CAPTURE(p);
    REQUIRE(out[p] == acc);
  }
  return out;
}

}  // namespace

TEST_CASE("row blocks: each point's row read through the block equals the plain loop's, partial groups included") {
  for (const char* lanes : {"8", "16", "4"}) {
    CAPTURE(lanes);
    run_weighted(lanes, 1000 + 3, 3, 5);  // 15 doubles a row: fits
    run_weighted(lanes, 7, 2, 4);         // fewer points than lanes
  }
}

TEST_CASE("row blocks: whole groups are copied by tiles transposed in registers; the columns past them one by one") {
  // A tile is a register of doubles (8 with AVX-512, 4 with AVX2), at most
  // the lanes: rows of 34 leave a partial tile, rows of 32 none, rows of 3
  // no whole tile; 32 lanes are several tiles of lanes.
  for (const char* lanes : {"4", "8", "16", "32"}) {
    CAPTURE(lanes);
    run_weighted(lanes, 640 + 5, 2, 17);
    run_weighted(lanes, 640, 1, 32);
    run_weighted(lanes, 640 + 1, 1, 3);
  }
}

TEST_CASE("row blocks: rows too long for the block are gathered instead, with the same results") {
  // 1,500 doubles a row at 16 lanes is 192 KB, past the 16 KB block.
  run_weighted("16", 40, 3, 500);
}

TEST_CASE("row blocks: an array also passed to be written is read from memory, after the point's own writes") {
  // for k in 0 .. n-1: dst[i][k+1] = src[i][k] + 1, with dst and src one array:
  // each step reads what the step before wrote, so a row becomes x, x+1, x+2...
  const Expr i = make_index(0), k = make_var(I64, "k");
  const Kernel kernel = make_kernel(
      "rows.aliased", {Param::array("dst", F64, 2, Access::InOut), Param::array("src", F64, 2, Access::In)}, 1,
      {make_for("k", make_int(I64, 0), make_binary(BinaryOp::Sub, make_extent(1, 1), make_int(I64, 1)),
                make_block({make_store(0, {i, add(k, make_int(I64, 1))},
                                       add(make_load(F64, 1, {i, k}), make_const(F64, 1.0)))}))});
  const CpuEntry entry = compile_with_lanes(kernel, "8");
  const std::int64_t n = 21, columns = 6;
  std::vector<double> data(static_cast<std::size_t>(n * columns));
  for (std::size_t e = 0; e < data.size(); ++e) data[e] = static_cast<double>((e * 7) % 11);
  const std::vector<double> before = data;
  ArgBlock args(kernel);
  args.array(0, data.data(), {n, columns}).array(1, data.data(), {n, columns});
  entry(0, n, args.data());
  for (std::int64_t p = 0; p < n; ++p)
    for (std::int64_t c = 0; c < columns; ++c) {
      CAPTURE(p);
      CAPTURE(c);
      REQUIRE(data[p * columns + c] == before[p * columns] + static_cast<double>(c));
    }
}

TEST_CASE("row blocks: a row walked by a loop whose bounds differ between lanes is gathered, with the same results") {
  // out[i] = sum over k < i % 5 of m[i][k]: each lane's loop has its own trip
  // count, so the loads are not the same column in every lane.
  const Expr i = make_index(0), k = make_var(I64, "k");
  const Kernel kernel =
      make_kernel("rows.ragged", {Param::array("out", F64, 1, Access::Out), Param::array("m", F64, 2, Access::In)}, 1,
                  {make_decl("acc", make_const(F64, 0.0)),
                   make_for("k", make_int(I64, 0), make_binary(BinaryOp::Rem, i, make_int(I64, 5)),
                            make_block({make_assign("acc", add(make_var(F64, "acc"), make_load(F64, 1, {i, k})))})),
                   make_store(0, {i}, make_var(F64, "acc"))});
  const CpuEntry entry = compile_with_lanes(kernel, "8");
  const std::int64_t n = 37, columns = 6;
  std::vector<double> m(static_cast<std::size_t>(n * columns)), out(static_cast<std::size_t>(n), -1.0);
  for (std::size_t e = 0; e < m.size(); ++e) m[e] = static_cast<double>((e * 5) % 17);
  ArgBlock args(kernel);
  args.array(0, out.data(), {n}).array(1, m.data(), {n, columns});
  entry(0, n, args.data());
  for (std::int64_t p = 0; p < n; ++p) {
    double acc = 0.0;
    for (std::int64_t c = 0; c < p % 5; ++c) acc = acc + m[p * columns + c];
    CAPTURE(p);
    REQUIRE(out[p] == acc);
  }
}
