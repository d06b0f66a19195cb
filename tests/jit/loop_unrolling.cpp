// Which loops of a kernel LLVM unrolls on the CPU: a small loop of a known
// trip count completely, and no other (unrolls_fully in
// jit/llvm/internal/llvm_lowering.hpp). Checked on the loops' block names in
// the LLVM IR dump (the lowerings name a loop over `k` "k.loop"), and the
// values against plain loops in C++.
#include <doctest/doctest.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include <canopy/canopy.hpp>
#include <canopy/ir/printer.hpp>
#include <canopy/jit/cpu_compiler.hpp>

#include "jit_test_support.hpp"
#include "scoped_setting.hpp"

using namespace canopy;
using canopy::jit::testing::read_all;
using canopy::jit::testing::TempDir;

namespace {

// The LLVM IR the CPU compiler makes for `kernel` (`simd`: CANOPY_SIMD).
std::string llvm_of(const ir::Kernel& kernel, const char* simd) {
  TempDir cache, dumps;
  {
    canopy::testing::ScopedSetting dump("CANOPY_DUMP", "llvm"), dump_dir("CANOPY_DUMP_DIR", dumps.str().c_str()),
        lanes("CANOPY_SIMD", simd);
    jit::CpuCompiler compiler(jit::CpuCompiler::Options{cache.str()});
    const bool built = compiler.compile(kernel).entry != nullptr;
    REQUIRE(built);
  }
  return read_all(dumps.path() / (kernel.name + ".llvm"));
}

// How many blocks of the loop over `var` the IR has (its header "var.loop"
// and copies of it a pass made: "var.loop.us", "var.loop12", ...).
int loop_blocks(const std::string& llvm, const std::string& var) {
  const std::regex label("(^|\n)" + var + "\\.loop[.a-z0-9]*:");
  return static_cast<int>(std::distance(std::sregex_iterator(llvm.begin(), llvm.end(), label), std::sregex_iterator()));
}

}  // namespace

TEST_CASE("a small loop of a known trip count is unrolled; a longer one and a loop nest are not") {
  // out[i] = sum over k < 4 of a[4i + k] * (k + 1), then the same over 20
  // terms of b; grid[i] adds, for 16 rows r, a row's n terms.
  Kernel<void(Out<double>, Out<double>, Out<double>, In<double>, In<double>, Val<std::int64_t>)> sums(
      "unroll_sums",
      [](Out<double> out, Out<double> longer, Out<double> grid, In<double> a, In<double> b, Val<std::int64_t> n) {
        Idx i = index(0);
        Var<double> small = 0.0;
        For(0, 4, [&](Idx k) { small += a[i * 4 + k] * cast<double>(k + 1); });
        out[i] = small;
        Var<double> many = 0.0;
        For(0, 20, [&](Idx k) { many += b[i * 20 + k]; });
        longer[i] = many;
        Var<double> nest = 0.0;
        For(0, 16, [&](Idx r) { For(0, n, [&](Idx c) { nest += a[(r * n + c) % (a.extent(0))] * cast<double>(i); }); });
        grid[i] = nest;
      });
  const ir::Kernel& kernel = sums.ir();
  // The loops' variables as the DSL named them, in order.
  std::vector<std::string> vars;
  const std::regex header("for ([a-z0-9_]+) in");
  const std::string text = ir::print(kernel);
  for (auto it = std::sregex_iterator(text.begin(), text.end(), header); it != std::sregex_iterator(); ++it)
    vars.push_back((*it)[1]);
  REQUIRE(vars.size() == 4);
  for (const char* simd : {"on", "off"}) {
    CAPTURE(simd);
    const std::string llvm = llvm_of(kernel, simd);
    CHECK(loop_blocks(llvm, vars[0]) == 0);  // 4 trips: unrolled
    CHECK(loop_blocks(llvm, vars[1]) >= 1);  // 20 trips: a loop
    CHECK(loop_blocks(llvm, vars[2]) >= 1);  // 16 rows around a loop: a loop
    CHECK(loop_blocks(llvm, vars[3]) >= 1);
    CHECK(loop_blocks(llvm, vars[3]) <= 4);  // not copied once per row
  }

  Runtime rt;
  const std::int64_t points = 37, n = 5;
  auto out = rt.array<double>(points), longer = rt.array<double>(points), grid = rt.array<double>(points);
  auto a = rt.array<double>(points * 4), b = rt.array<double>(points * 20);
  {
    auto ha = a.host();
    auto hb = b.host();
    for (std::int64_t k = 0; k < points * 4; ++k) ha[k] = double(k % 11) - 3.5;
    for (std::int64_t k = 0; k < points * 20; ++k) hb[k] = double(k % 7) * 0.25;
  }
  rt.region(sums).over(points).launch(out, longer, grid, a, b, n);
  auto ho = out.host_read();
  auto hl = longer.host_read();
  auto hg = grid.host_read();
  for (std::int64_t i = 0; i < points; ++i) {
    double small = 0, many = 0, nest = 0;
    for (std::int64_t k = 0; k < 4; ++k) small += (double((4 * i + k) % 11) - 3.5) * double(k + 1);
    for (std::int64_t k = 0; k < 20; ++k) many += double((20 * i + k) % 7) * 0.25;
    for (std::int64_t r = 0; r < 16; ++r)
      for (std::int64_t c = 0; c < n; ++c) nest += (double(((r * n + c) % (points * 4)) % 11) - 3.5) * double(i);
    CHECK(ho[i] == doctest::Approx(small).epsilon(1e-12));
    CHECK(hl[i] == doctest::Approx(many).epsilon(1e-12));
    CHECK(hg[i] == doctest::Approx(nest).epsilon(1e-12));
  }
}

TEST_CASE("a small nest of loops of known trip counts is unrolled whole; a large one is not") {
  // Game of Life's neighbour count, wrapped with %: unrolled, LLVM shares
  // the rows' and columns' remainders (a new user's 512 x 640 board ran at
  // 3.4x the time of an OpenMP loop with the nest kept, 1.0x unrolled). This
  // small kernel LLVM unrolls on its own too, so its checks below guard the
  // other side: a 16 x 16 nest of the same body stays a loop, and the values.
  Kernel<void(Out<std::int32_t, 2>, Out<std::int32_t, 2>, In<std::int32_t, 2>)> count(
      "unroll_neighbours", [](Out<std::int32_t, 2> near, Out<std::int32_t, 2> wide, In<std::int32_t, 2> cells) {
        Idx i = index(0), j = index(1);
        const Idx rows = cells.extent(0), cols = cells.extent(1);
        Var<std::int32_t> n = 0;
        For(-1, 2, [&](Idx di) {
          For(-1, 2, [&](Idx dj) {
            If(di != 0 || dj != 0, [&] { n += cells((i + di + rows) % rows, (j + dj + cols) % cols); });
          });
        });
        near(i, j) = n;
        Var<std::int32_t> w = 0;
        For(0, 16, [&](Idx di) { For(0, 16, [&](Idx dj) { w += cells((i + di) % rows, (j + dj) % cols); }); });
        wide(i, j) = w;
      });
  std::vector<std::string> vars;
  const std::regex header("for ([a-z0-9_]+) in");
  const std::string text = ir::print(count.ir());
  for (auto it = std::sregex_iterator(text.begin(), text.end(), header); it != std::sregex_iterator(); ++it)
    vars.push_back((*it)[1]);
  REQUIRE(vars.size() == 4);
  for (const char* simd : {"on", "off"}) {
    CAPTURE(simd);
    const std::string llvm = llvm_of(count.ir(), simd);
    CHECK(loop_blocks(llvm, vars[0]) == 0);  // 3 x 3: unrolled whole
    CHECK(loop_blocks(llvm, vars[1]) == 0);
    CHECK(loop_blocks(llvm, vars[2]) >= 1);  // 16 x 16: the outer loop stays
  }

  Runtime rt;
  const std::int64_t rows = 13, cols = 19;
  auto near = rt.array<std::int32_t, 2>(Shape(rows, cols)), wide = rt.array<std::int32_t, 2>(Shape(rows, cols));
  auto cells = rt.array<std::int32_t, 2>(Shape(rows, cols));
  {
    auto view = cells.host();
    auto* h = view.data();
    for (std::int64_t k = 0; k < rows * cols; ++k) h[k] = static_cast<std::int32_t>((k * 7) % 5 == 0);
  }
  rt.region(count).over(rows, cols).launch(near, wide, cells);
  auto near_view = near.host_read(), wide_view = wide.host_read(), cells_view = cells.host_read();
  const auto *hn = near_view.data(), *hw = wide_view.data(), *h = cells_view.data();
  std::int64_t wrong = 0;
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < cols; ++j) {
      std::int32_t n = 0, w = 0;
      for (std::int64_t di = -1; di <= 1; ++di)
        for (std::int64_t dj = -1; dj <= 1; ++dj)
          if (di != 0 || dj != 0) n += h[((i + di + rows) % rows) * cols + (j + dj + cols) % cols];
      for (std::int64_t di = 0; di < 16; ++di)
        for (std::int64_t dj = 0; dj < 16; ++dj) w += h[((i + di) % rows) * cols + (j + dj) % cols];
      wrong += hn[i * cols + j] != n;
      wrong += hw[i * cols + j] != w;
    }
  CHECK(wrong == 0);
}
