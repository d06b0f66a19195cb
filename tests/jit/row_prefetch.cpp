// The CPU compiler's software prefetches: loops that move a row per
// iteration get prefetches of the lines ahead (jit/llvm/internal/row_prefetch.hpp),
// loops that walk along a row do not; a loop over points that streams
// through its arrays gets one prefetch a page ahead per array
// (jit/llvm/internal/page_prefetch.hpp), a point loop with a loop inside it
// does not; CANOPY_PREFETCH=off turns both off, and the results are those of
// plain loops in C++ either way.
#include <doctest/doctest.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <canopy/ir/kernel.hpp>
#include <canopy/jit/cpu_compiler.hpp>

#include "jit_test_support.hpp"
#include "scoped_setting.hpp"

using namespace canopy;
using namespace canopy::ir;
using namespace canopy::jit;
using namespace canopy::jit::testing;

namespace {

Expr num(std::int64_t v) { return make_int(I64, v); }

// The kernel compiled with CANOPY_PREFETCH as given, and its LLVM IR.
struct Compiled {
  CpuEntry entry;
  std::string llvm;
};

Compiled compile(const Kernel& kernel, const char* prefetch) {
  TempDir cache, dumps;
  std::optional<canopy::testing::ScopedSetting> dump(std::in_place, "CANOPY_DUMP", "llvm"),
      dump_dir(std::in_place, "CANOPY_DUMP_DIR", dumps.str().c_str()),
      setting(std::in_place, "CANOPY_PREFETCH", prefetch);
  static std::vector<std::unique_ptr<CpuCompiler>> compilers;  // kept: their entries must outlive the test
  compilers.push_back(std::make_unique<CpuCompiler>(CpuCompiler::Options{cache.str()}));
  Compiled compiled{compilers.back()->compile(kernel).entry, ""};
  dump.reset();
  compiled.llvm = read_all((dumps.path() / (kernel.name + ".llvm")).string());
  const bool built = compiled.entry != nullptr;
  REQUIRE(built);
  return compiled;
}

// Whether the kernel has row prefetches (RowPrefetchPass's lines are named canopy.line).
bool prefetches(const Compiled& compiled) { return compiled.llvm.find("%canopy.line") != std::string::npos; }

// How many page-ahead prefetches the kernel has.
int page_prefetches(const Compiled& compiled) {
  const std::string call = "call void @llvm.prefetch.p0(ptr %canopy.page.ahead";
  int count = 0;
  for (auto at = compiled.llvm.find(call); at != std::string::npos; at = compiled.llvm.find(call, at + 1)) ++count;
  return count;
}

// out(p) = 3 * a(p) + b(p) - a(p + 1): two arrays streamed (a read at two
// points, one stream), one written.
Kernel streamed() {
  const Expr p = make_index(0);
  return make_kernel("prefetch.streamed",
                     {Param::array("out", I64, 1, Access::Out), Param::array("a", I64, 1, Access::In),
                      Param::array("b", I64, 1, Access::In)},
                     1,
                     {make_store(0, {p},
                                 add(add(mul(num(3), make_load(I64, 1, {p})), make_load(I64, 2, {p})),
                                     mul(num(-1), make_load(I64, 1, {add(p, num(1))}))))});
}

// Point p fills columns 8p .. 8p+7 of y row by row, each row from the one
// above: y(i, c) = 3 * (y(i-1, c) % 1000) + x(i, c) + i (the block rows of Rodinia's
// nw, a row apart per iteration).
Kernel block_rows() {
  const Expr p = make_index(0), i = make_var(I64, "i"), j = make_var(I64, "j");
  const Expr column = add(mul(p, num(8)), j);
  return make_kernel(
      "prefetch.block_rows", {Param::array("y", I64, 2, Access::InOut), Param::array("x", I64, 2, Access::In)}, 1,
      {make_for("i", num(1), make_extent(0, 0),
                make_block({make_for(
                    "j", num(0), num(8),
                    make_block({make_store(
                        0, {i, column},
                        add(add(mul(num(3), make_binary(BinaryOp::Rem, make_load(I64, 0, {add(i, num(-1)), column}),
                                                        num(1000))),
                                make_load(I64, 1, {i, column})),
                            i))}))}))});
}

// out(p) = the sum of column p of x when `along_rows` is false (a column
// walk: a row per iteration), of row p when it is true (a walk along a row:
// the hardware's prefetchers follow it).
Kernel sums(bool along_rows) {
  const Expr p = make_index(0), k = make_var(I64, "k");
  return make_kernel(
      along_rows ? "prefetch.row_sums" : "prefetch.column_sums",
      {Param::array("out", I64, 1, Access::Out), Param::array("x", I64, 2, Access::In)}, 1,
      {make_decl("s", num(0)),
       make_for(
           "k", num(0), make_extent(1, along_rows ? 1 : 0),
           make_block({make_assign(
               "s", add(make_var(I64, "s"), make_load(I64, 1, along_rows ? std::vector{p, k} : std::vector{k, p})))})),
       make_store(0, {p}, make_var(I64, "s"))});
}

std::vector<std::int64_t> matrix(std::int64_t rows, std::int64_t columns) {
  std::vector<std::int64_t> x(static_cast<std::size_t>(rows * columns));
  for (std::size_t e = 0; e < x.size(); ++e) x[e] = static_cast<std::int64_t>((e * 7919) % 1009) - 500;
  return x;
}

}  // namespace

TEST_CASE("prefetch: block rows a row apart get prefetches; the results are the plain loop's, prefetched or not") {
  const std::int64_t rows = 300, blocks = 37, columns = blocks * 8 + 5;  // rows of 2,376 bytes
  std::vector<std::int64_t> x = matrix(rows, columns);
  std::vector<std::int64_t> want = matrix(rows, columns);
  for (std::int64_t b = 3; b < blocks; ++b)
    for (std::int64_t i = 1; i < rows; ++i)
      for (std::int64_t c = b * 8; c < b * 8 + 8; ++c)
        want[i * columns + c] = 3 * (want[(i - 1) * columns + c] % 1000) + x[i * columns + c] + i;
  for (const char* prefetch : {"auto", "off"}) {
    CAPTURE(prefetch);
    const Compiled compiled = compile(block_rows(), prefetch);
    CHECK(prefetches(compiled) == (std::string(prefetch) == "auto"));
    std::vector<std::int64_t> y = matrix(rows, columns);
    ArgBlock args(block_rows());
    args.array(0, y.data(), {rows, columns}).array(1, x.data(), {rows, columns});
    compiled.entry(3, blocks, args.data());
    CHECK(y == want);
  }
}

TEST_CASE("prefetch: a column walk is prefetched, a walk along a row is not") {
  const std::int64_t rows = 1000, columns = 70;
  std::vector<std::int64_t> x = matrix(rows, columns);
  const Compiled columns_walk = compile(sums(false), "auto");
  const Compiled rows_walk = compile(sums(true), "auto");
  CHECK(prefetches(columns_walk));
  CHECK_FALSE(prefetches(rows_walk));

  // Runs `compiled` over `points` points (out, then x) and checks each
  // point's output against `want`.
  auto check = [&](const Compiled& compiled, const Kernel& kernel, std::int64_t points, auto want) {
    std::vector<std::int64_t> out(static_cast<std::size_t>(points), -1);
    ArgBlock args(kernel);
    args.array(0, out.data(), {points}).array(1, x.data(), {rows, columns});
    compiled.entry(0, points, args.data());
    for (std::int64_t p = 0; p < points; ++p) {
      CAPTURE(p);
      CHECK(out[p] == want(p));
    }
  };
  check(columns_walk, sums(false), columns, [&](std::int64_t c) {
    std::int64_t s = 0;
    for (std::int64_t i = 0; i < rows; ++i) s += x[i * columns + c];
    return s;
  });
  check(rows_walk, sums(true), rows, [&](std::int64_t r) {
    std::int64_t s = 0;
    for (std::int64_t c = 0; c < columns; ++c) s += x[r * columns + c];
    return s;
  });
}

TEST_CASE(
    "prefetch: a streaming point loop gets one prefetch a page ahead per array read, and the plain loop's results") {
  // 300,000 points: 2.4 MB an array, hundreds of pages; the last prefetches
  // land past the arrays' ends, where a prefetch must not fault.
  const std::int64_t points = 300000, begin = 7, end = points - 5;
  std::vector<std::int64_t> a(static_cast<std::size_t>(points + 1)), b(static_cast<std::size_t>(points));
  for (std::int64_t i = 0; i <= points; ++i) a[static_cast<std::size_t>(i)] = (i * 7919) % 1009 - 500;
  for (std::int64_t i = 0; i < points; ++i) b[static_cast<std::size_t>(i)] = (i * 104729) % 997;
  for (const char* prefetch : {"auto", "off"}) {
    CAPTURE(prefetch);
    const Compiled compiled = compile(streamed(), prefetch);
    CHECK(page_prefetches(compiled) == (std::string(prefetch) == "auto" ? 2 : 0));
    std::vector<std::int64_t> out(static_cast<std::size_t>(points), -1);
    ArgBlock args(streamed());
    args.array(0, out.data(), {points}).array(1, a.data(), {points + 1}).array(2, b.data(), {points});
    compiled.entry(begin, end, args.data());
    for (std::int64_t i = 0; i < points; ++i) {
      const auto at = static_cast<std::size_t>(i);
      const std::int64_t want = i < begin || i >= end ? -1 : 3 * a[at] + b[at] - a[at + 1];
      if (out[at] != want) {
        CAPTURE(i);
        CHECK(out[at] == want);
        break;
      }
    }
  }
}

TEST_CASE("prefetch: a point loop with a loop inside its points gets no page-ahead prefetch") {
  CHECK(page_prefetches(compile(sums(true), "auto")) == 0);
  CHECK(page_prefetches(compile(sums(false), "auto")) == 0);
}
