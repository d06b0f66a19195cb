// The CPU's scalar point loop runs its points from the last to the first
// when they touch memory in descending order (points_run_backward in
// jit/llvm/internal/llvm_lowering.hpp): a row r = rows-1-index(0), as
// Rodinia's gaussian and lud write theirs. Which order a kernel got is read
// from the LLVM IR dump's first line and from a store every point makes to
// one element (the last point run wins: a race between points, which these
// single-threaded calls of the entry make deterministic); the values are
// checked against plain loops in C++.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include <canopy/canopy.hpp>
#include <canopy/jit/cpu_compiler.hpp>

#include "jit_test_support.hpp"
#include "scoped_setting.hpp"

using namespace canopy;
using canopy::jit::CpuEntry;
using canopy::jit::testing::ArgBlock;
using canopy::jit::testing::read_all;
using canopy::jit::testing::TempDir;

namespace {

constexpr std::int64_t kRows = 40, kCols = 24;
constexpr std::int64_t kFar = (std::int64_t{1} << 62) + 5;  // a first index whose double does not fit
constexpr const char* kBackward = "the points run from the last to the first";

struct Compiled {
  CpuEntry entry = nullptr;
  std::string note;  ///< the LLVM dump's first line: which lowering and why
};

// `kernel` compiled for the CPU's scalar point loop (CANOPY_SIMD=off), and
// its dump's note.
Compiled compile(const ir::Kernel& kernel) {
  static TempDir cache;
  TempDir dumps;
  Compiled result;
  {
    canopy::testing::ScopedSetting dump("CANOPY_DUMP", "llvm"), dump_dir("CANOPY_DUMP_DIR", dumps.str().c_str()),
        lanes("CANOPY_SIMD", "off");
    static jit::CpuCompiler compiler(jit::CpuCompiler::Options{cache.str()});
    result.entry = compiler.compile(kernel).entry;
    const bool built = result.entry != nullptr;
    REQUIRE(built);
  }
  const std::string llvm = read_all(dumps.path() / (kernel.name + ".llvm"));
  result.note = llvm.substr(0, llvm.find('\n'));
  return result;
}

float start_value(std::int64_t r, std::int64_t c) { return float(r * kCols + c) * 0.5f - 7.0f; }
float weight(std::int64_t c) { return 1.0f + float(c % 5) * 0.25f; }

// a(row, c) = a(row, c) * w[c] + row for c in [t, kCols): the update of
// rows `rows` (each once) over a fresh matrix, in plain C++.
std::vector<float> updated(const std::vector<std::int64_t>& rows, std::int64_t t) {
  std::vector<float> a(kRows * kCols);
  for (std::int64_t r = 0; r < kRows; ++r)
    for (std::int64_t c = 0; c < kCols; ++c) a[r * kCols + c] = start_value(r, c);
  for (std::int64_t r : rows)
    for (std::int64_t c = t; c < kCols; ++c) a[r * kCols + c] = a[r * kCols + c] * weight(c) + float(r);
  return a;
}

using RowKernel = Kernel<void(InOut<float, 2>, In<float>, Out<std::int64_t>, Val<std::int64_t>)>;

// One point per row, row = kRows-1-index(0) (`descending`) or index(0): the
// row's update from column t on; every point also writes its index to last[0].
RowKernel row_kernel(bool descending) {
  return RowKernel(descending ? "backward_rows" : "forward_rows",
                   [=](InOut<float, 2> a, In<float> w, Out<std::int64_t> last, Val<std::int64_t> t) {
                     Idx row = descending ? (kRows - 1) - index(0) : index(0);
                     For(t, kCols, [&](Idx c) { a(row, c) = a(row, c) * w[c] + cast<float>(row); });
                     last[0] = index(0);
                   });
}

}  // namespace

TEST_CASE("rows that descend as the index grows run from the last point to the first, with the same values") {
  std::vector<float> w(kCols);
  for (std::int64_t c = 0; c < kCols; ++c) w[c] = weight(c);
  for (const bool descending : {true, false}) {
    CAPTURE(descending);
    const RowKernel kernel = row_kernel(descending);
    const Compiled compiled = compile(kernel.ir());
    CAPTURE(compiled.note);
    CHECK((compiled.note.find(kBackward) != std::string::npos) == descending);
    // Whole ranges, parts of them (as the pool's chunks are), one point, none.
    for (auto [begin, end, t] : {std::tuple<std::int64_t, std::int64_t, std::int64_t>{0, kRows, 0},
                                 {3, 29, 5},
                                 {17, 18, 23},
                                 {kRows - 7, kRows, 2},
                                 {12, 12, 0},
                                 {9, 4, 0}}) {
      CAPTURE(begin);
      CAPTURE(end);
      std::vector<float> a = updated({}, 0);
      std::int64_t last = -1;
      ArgBlock args(kernel.ir());
      args.array(0, a.data(), {kRows, kCols}).array(1, w.data(), {kCols}).array(2, &last, {1}).integer(3, t);
      compiled.entry(begin, end, args.data());
      std::vector<std::int64_t> rows;
      for (std::int64_t i = begin; i < end; ++i) rows.push_back(descending ? kRows - 1 - i : i);
      CHECK(a == updated(rows, t));
      if (begin >= end)
        CHECK(last == -1);
      else
        CHECK(last == (descending ? begin : end - 1));  // the point run last
    }
  }
}

TEST_CASE("the innermost index of two decides, and a kernel that reads or writes any way ascending runs forward") {
  SUBCASE("two dimensions: columns that descend as index(1) grows") {
    constexpr std::int64_t rows = 6, cols = 11;
    Kernel<void(Out<float, 2>, In<float, 2>, Out<std::int64_t>)> flip(
        "backward_columns", [](Out<float, 2> out, In<float, 2> in, Out<std::int64_t> last) {
          Idx i = index(0), j = index(1);
          out(i, (cols - 1) - j) = in(i, (cols - 1) - j) * 2.0f + cast<float>(j);
          last[0] = i * 1000 + j;
        });
    const Compiled compiled = compile(flip.ir());
    CAPTURE(compiled.note);
    CHECK(compiled.note.find(kBackward) != std::string::npos);
    std::vector<float> in(rows * cols), out(rows * cols, -1.0f);
    for (std::int64_t k = 0; k < rows * cols; ++k) in[k] = float(k % 13) - 4.0f;
    std::int64_t last = -1;
    ArgBlock args(flip.ir());
    args.array(0, out.data(), {rows, cols}).array(1, in.data(), {rows, cols}).array(2, &last, {1}).range(1, 2, 9);
    compiled.entry(1, 5, args.data());
    for (std::int64_t i = 0; i < rows; ++i)
      for (std::int64_t c = 0; c < cols; ++c) {
        const std::int64_t j = cols - 1 - c;  // the point that writes column c
        const bool written = i >= 1 && i < 5 && j >= 2 && j < 9;
        CHECK(out[i * cols + c] == (written ? in[i * cols + c] * 2.0f + float(j) : -1.0f));
      }
    CHECK(last == 4 * 1000 + 2);  // the last row's first column
  }
  SUBCASE("a range whose first and last index add up past int64's limit") {
    // Points B .. B+3 write elements 2, 1, 0: B + (B + 3) wraps around.
    Kernel<void(Out<std::int64_t>, Out<std::int64_t>)> high("backward_high",
                                                            [](Out<std::int64_t> out, Out<std::int64_t> last) {
                                                              out[(kFar + 2) - index(0)] = index(0) - kFar;
                                                              last[0] = index(0) - kFar;
                                                            });
    const Compiled compiled = compile(high.ir());
    CHECK(compiled.note.find(kBackward) != std::string::npos);
    std::vector<std::int64_t> out(3, -1);
    std::int64_t last = -1;
    ArgBlock args(high.ir());
    args.array(0, out.data(), {3}).array(1, &last, {1});
    compiled.entry(kFar, kFar + 3, args.data());
    CHECK(out == std::vector<std::int64_t>{2, 1, 0});
    CHECK(last == 0);
  }
  SUBCASE("a row copied in reverse: one array ascends, so the points run forward") {
    Kernel<void(Out<float>, In<float>)> reverse(
        "reverse_copy", [](Out<float> out, In<float> in) { out[index(0)] = in[(kRows - 1) - index(0)]; });
    CHECK(compile(reverse.ir()).note.find(kBackward) == std::string::npos);
  }
  SUBCASE("a sum over descending rows keeps its order") {
    Kernel<void(In<double>, Sum<double>)> sum(
        "backward_sum", [](In<double> in, Sum<double> total) { total += in[(kRows - 1) - index(0)]; });
    CHECK(compile(sum.ir()).note.find(kBackward) == std::string::npos);
  }
  SUBCASE("atomic adds to descending rows keep their order") {
    Kernel<void(Out<float>)> add("backward_atomic",
                                 [](Out<float> out) { atomic_add(out[(kRows - 1) - index(0)], 1.0f); });
    CHECK(compile(add.ir()).note.find(kBackward) == std::string::npos);
  }
}
