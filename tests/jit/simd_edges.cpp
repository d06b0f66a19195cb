// The SIMD lowering's Ifs on the lanes' own index (a stencil's edges):
// where the first and the last lane of a vector decide alike, the side they
// take runs without masks; where they part, each lane goes its own way; and
// where the lanes' values wrap within a vector, the shortcut is not taken.
// Checked against plain loops in C++ at several widths, over ranges that
// start and end inside a vector. And stores under a mask: at the point's own
// element, a whole vector's store keeps the other lanes' elements, and where
// the range passes the array, nothing past it is touched.
#include <doctest/doctest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <tuple>
#include <utility>
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
  for (const char* lanes : {"8", "16", "4", "64"}) {
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
  // 0 1 2 3 4 5 ... decide no no yes yes no no ..., so over points from 1,
  // each vector of 4, 8 or 16 lanes has its first and last lane agree while
  // lanes between do not.
  const Expr i = make_index(0);
  const Kernel kernel = make_kernel(
      "edges.wrapping", {Param::array("out", I32, 1, Access::Out), Param::scalar("s", I64)}, 1,
      {make_store(0, {i}, make_int(I32, 0)),
       make_if(make_compare(CompareOp::Lt, make_binary(BinaryOp::Mul, i, make_param(I64, 1)), make_int(I64, 0)),
               make_block({make_store(0, {i}, make_int(I32, 1))}))});
  const std::int64_t count = 40;
  const std::int64_t s = std::int64_t{1} << 62;
  for (const char* lanes : {"2", "4", "16"}) {
    CAPTURE(lanes);
    const CpuEntry entry = compile_with_lanes(kernel, lanes);
    std::vector<std::int32_t> out(count, -1);
    ArgBlock args(kernel);
    args.array(0, out.data(), {count}).integer(1, s);
    entry(1, count, args.data());
    CHECK(out[0] == -1);  // outside the range
    for (std::int64_t e = 1; e < count; ++e) {
      CAPTURE(e);
      // The IR's integers wrap: the product modulo 2^64, read as signed.
      const auto product = static_cast<std::int64_t>(static_cast<std::uint64_t>(e) * static_cast<std::uint64_t>(s));
      REQUIRE(out[e] == (product < 0 ? 1 : 0));
    }
  }
}

TEST_CASE("If and select on bounds of the lanes' own index: the interior's vectors and the edges' agree") {
  // out[i] = (i >= a) + 10 (i + 2 < b) + 100 (b - 1 >= i - 3) + 1000 (c > i) + 10000 (i > a and i <= b),
  // clamped[i] = x[i > 0 ? i - 1 : i]: every kind of bound, the index on either side, with offsets, in
  // a logical and and in a select, with bounds anywhere from the range's ends to int64's.
  const Expr i = make_index(0);
  const Expr a = make_param(I64, 3), b = make_param(I64, 4), c = make_param(I64, 5);
  auto when = [&](Expr cond, std::int64_t weight) {
    return make_if(std::move(cond), make_block({make_assign("v", add(make_var(I64, "v"), make_int(I64, weight)))}));
  };
  auto minus = [](Expr x, std::int64_t k) { return make_binary(BinaryOp::Sub, std::move(x), make_int(I64, k)); };
  const Kernel kernel = make_kernel(
      "edges.bounds",
      {Param::array("out", I64, 1, Access::Out), Param::array("clamped", I64, 1, Access::Out),
       Param::array("x", I64, 1, Access::In), Param::scalar("a", I64), Param::scalar("b", I64),
       Param::scalar("c", I64)},
      1,
      {make_decl("v", make_int(I64, 0)), when(make_compare(CompareOp::Ge, i, a), 1),
       when(make_compare(CompareOp::Lt, add(i, make_int(I64, 2)), b), 10),
       when(make_compare(CompareOp::Ge, minus(b, 1), minus(i, 3)), 100), when(make_compare(CompareOp::Gt, c, i), 1000),
       when(make_binary(BinaryOp::And, make_compare(CompareOp::Gt, i, a), make_compare(CompareOp::Le, i, b)), 10000),
       make_store(0, {i}, make_var(I64, "v")),
       make_store(1, {i},
                  make_load(I64, 2, {make_select(make_compare(CompareOp::Gt, i, make_int(I64, 0)), minus(i, 1), i)}))});
  const std::int64_t count = 203;
  std::vector<std::int64_t> x(count);
  for (std::int64_t e = 0; e < count; ++e) x[e] = (e * 7919) % 1000;
  constexpr std::int64_t lowest = std::numeric_limits<std::int64_t>::min();
  constexpr std::int64_t highest = std::numeric_limits<std::int64_t>::max();
  const std::vector<std::tuple<std::int64_t, std::int64_t, std::int64_t>> bounds = {{0, count, count},
                                                                                    {5, 100, 50},
                                                                                    {lowest, highest, lowest},
                                                                                    {highest, lowest, highest},
                                                                                    {-5, 3, 1000},
                                                                                    {40, 41, 42},
                                                                                    {150, 20, 7},
                                                                                    {0, 0, 0}};
  for (const char* lanes : {"4", "8", "16", "32"}) {
    const CpuEntry entry = compile_with_lanes(kernel, lanes);
    for (auto [begin, end] : {std::pair{0, 203}, {1, 202}, {13, 160}, {0, 5}, {190, 203}}) {
      for (auto [av, bv, cv] : bounds) {
        CAPTURE(lanes);
        CAPTURE(begin);
        CAPTURE(end);
        CAPTURE(av);
        CAPTURE(bv);
        CAPTURE(cv);
        std::vector<std::int64_t> out(count, -1), clamped(count, -1);
        ArgBlock args(kernel);
        args.array(0, out.data(), {count}).array(1, clamped.data(), {count}).array(2, x.data(), {count});
        args.integer(3, av).integer(4, bv).integer(5, cv);
        entry(begin, end, args.data());
        // b - 1 wraps as the IR's integers do.
        const auto b_less = static_cast<std::int64_t>(static_cast<std::uint64_t>(bv) - 1);
        for (std::int64_t e = 0; e < count; ++e) {
          CAPTURE(e);
          if (e < begin || e >= end) {
            REQUIRE(out[e] == -1);
            REQUIRE(clamped[e] == -1);
            continue;
          }
          const std::int64_t want = (e >= av ? 1 : 0) + (e + 2 < bv ? 10 : 0) + (b_less >= e - 3 ? 100 : 0) +
                                    (cv > e ? 1000 : 0) + (e > av && e <= bv ? 10000 : 0);
          REQUIRE(out[e] == want);
          REQUIRE(clamped[e] == x[e > 0 ? e - 1 : e]);
        }
      }
    }
  }
}

TEST_CASE("sums and maxima reduced under edge tests count every point once, edges and interior alike") {
  // total += x[i] + (i > 0 ? x[i-1] : 0) + (i + 1 < n ? x[i+1] : 0); top = max(top, i < t ? x[i] : -1)
  const Expr i = make_index(0);
  const Expr n = make_extent(0, 0);
  const Kernel kernel = make_kernel(
      "edges.sums",
      {Param::array("x", I64, 1, Access::In), Param::reduction("total", I64, ReduceOp::Sum),
       Param::reduction("top", I64, ReduceOp::Max), Param::scalar("t", I64)},
      1,
      {make_decl("v", make_load(I64, 0, {i})),
       make_if(
           make_compare(CompareOp::Gt, i, make_int(I64, 0)),
           make_block({make_assign(
               "v", add(make_var(I64, "v"), make_load(I64, 0, {make_binary(BinaryOp::Sub, i, make_int(I64, 1))})))})),
       make_if(make_compare(CompareOp::Lt, add(i, make_int(I64, 1)), n),
               make_block({make_assign("v", add(make_var(I64, "v"), make_load(I64, 0, {add(i, make_int(I64, 1))})))})),
       make_reduce(1, make_var(I64, "v")),
       make_reduce(2, make_select(make_compare(CompareOp::Lt, i, make_param(I64, 3)), make_load(I64, 0, {i}),
                                  make_int(I64, -1)))});
  const std::int64_t count = 301;
  std::vector<std::int64_t> x(count);
  for (std::int64_t e = 0; e < count; ++e) x[e] = (e * 7919) % 1000 - 300;
  for (const char* lanes : {"4", "16"}) {
    const CpuEntry entry = compile_with_lanes(kernel, lanes);
    for (auto [begin, end, t] : {std::tuple{0, 301, 150}, {5, 290, 0}, {17, 18, 400}, {0, 301, 301}}) {
      CAPTURE(lanes);
      CAPTURE(begin);
      CAPTURE(end);
      CAPTURE(t);
      std::int64_t total = 0, top = std::numeric_limits<std::int64_t>::min();
      ArgBlock args(kernel);
      args.array(0, x.data(), {count}).partial(1, &total).partial(2, &top).integer(3, t);
      entry(begin, end, args.data());
      std::int64_t want_total = 0, want_top = std::numeric_limits<std::int64_t>::min();
      for (std::int64_t e = begin; e < end; ++e) {
        want_total += x[e] + (e > 0 ? x[e - 1] : 0) + (e + 1 < count ? x[e + 1] : 0);
        want_top = std::max(want_top, e < t ? x[e] : std::int64_t{-1});
      }
      CHECK(total == want_total);
      CHECK(top == want_top);
    }
  }
}

TEST_CASE("a stencil's interior runs apart from its edges, in two dimensions too") {
  // out(r, j) = in(r, j) + (j > 0 ? in(r, j - 1) : 0) + (j < cols - 1 ? in(r, j + 1) : 0) + (j >= r ? 1000 : 0):
  // the last bound moves with the row.
  const Expr r = make_index(0), j = make_index(1);
  const Expr cols = make_extent(1, 1);
  const Kernel kernel = make_kernel(
      "edges.rows", {Param::array("out", I64, 2, Access::Out), Param::array("in", I64, 2, Access::In)}, 2,
      {make_decl("v", make_load(I64, 1, {r, j})),
       make_if(make_compare(CompareOp::Gt, j, make_int(I64, 0)),
               make_block(
                   {make_assign("v", add(make_var(I64, "v"),
                                         make_load(I64, 1, {r, make_binary(BinaryOp::Sub, j, make_int(I64, 1))})))})),
       make_if(
           make_compare(CompareOp::Lt, j, make_binary(BinaryOp::Sub, cols, make_int(I64, 1))),
           make_block({make_assign("v", add(make_var(I64, "v"), make_load(I64, 1, {r, add(j, make_int(I64, 1))})))})),
       make_if(make_compare(CompareOp::Ge, j, r),
               make_block({make_assign("v", add(make_var(I64, "v"), make_int(I64, 1000)))})),
       make_store(0, {r, j}, make_var(I64, "v"))});
  const std::int64_t rows = 37, width = 101;
  std::vector<std::int64_t> in(rows * width);
  for (std::int64_t e = 0; e < rows * width; ++e) in[e] = (e * 31) % 97;
  for (const char* lanes : {"8", "16"}) {
    CAPTURE(lanes);
    const CpuEntry entry = compile_with_lanes(kernel, lanes);
    std::vector<std::int64_t> out(rows * width, -1);
    ArgBlock args(kernel);
    args.array(0, out.data(), {rows, width}).array(1, in.data(), {rows, width});
    args.range(1, 3, width - 2);  // columns 3 .. width - 3
    entry(2, rows, args.data());
    for (std::int64_t row = 0; row < rows; ++row)
      for (std::int64_t col = 0; col < width; ++col) {
        CAPTURE(row);
        CAPTURE(col);
        const std::int64_t got = out[row * width + col];
        if (row < 2 || col < 3 || col >= width - 2) {
          REQUIRE(got == -1);
          continue;
        }
        const std::int64_t* line = &in[row * width];
        const std::int64_t want =
            line[col] + (col > 0 ? line[col - 1] : 0) + (col < width - 1 ? line[col + 1] : 0) + (col >= row ? 1000 : 0);
        REQUIRE(got == want);
      }
  }
}

namespace {

// `count` int64 elements that end where an inaccessible page begins: a store
// or load past them faults.
class BeforeGuardPage {
 public:
  explicit BeforeGuardPage(std::int64_t count) {
    const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    const std::size_t bytes = static_cast<std::size_t>(count) * sizeof(std::int64_t);
    size_ = (bytes + page - 1) / page * page + page;
    memory_ = mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(memory_ != MAP_FAILED);
    char* guard = static_cast<char*>(memory_) + size_ - page;
    REQUIRE(mprotect(guard, page, PROT_NONE) == 0);
    data_ = reinterpret_cast<std::int64_t*>(guard) - count;
  }
  ~BeforeGuardPage() { munmap(memory_, size_); }
  BeforeGuardPage(const BeforeGuardPage&) = delete;
  BeforeGuardPage& operator=(const BeforeGuardPage&) = delete;
  std::int64_t* data() const { return data_; }

 private:
  void* memory_ = nullptr;
  std::size_t size_ = 0;
  std::int64_t* data_ = nullptr;
};

}  // namespace

TEST_CASE("a store under a mask at the point's own element keeps the other lanes' elements") {
  // y[i] = 2 x[i] where x[i] % 3 == 0, nothing where it is 1, -x[i] where it
  // is 2: each vector stores under masks, and the lanes a branch leaves out
  // keep what y held.
  const Expr i = make_index(0);
  const Expr x = make_load(I64, 1, {i});
  const Expr rem = make_binary(BinaryOp::Rem, x, make_int(I64, 3));
  const Kernel kernel = make_kernel(
      "masked.own_point", {Param::array("y", I64, 1, Access::InOut), Param::array("x", I64, 1, Access::In)}, 1,
      {make_if(
          make_compare(CompareOp::Eq, rem, make_int(I64, 0)),
          make_block({make_store(0, {i}, make_binary(BinaryOp::Mul, x, make_int(I64, 2)))}),
          make_block({make_if(make_compare(CompareOp::Eq, rem, make_int(I64, 2)),
                              make_block({make_store(0, {i}, make_binary(BinaryOp::Sub, make_int(I64, 0), x))}))}))});
  const std::int64_t count = 203;
  std::vector<std::int64_t> xs(count);
  for (std::int64_t e = 0; e < count; ++e) xs[e] = (e * 7919) % 1000;
  for (const char* lanes : {"8", "4", "32"}) {
    const CpuEntry entry = compile_with_lanes(kernel, lanes);
    for (auto [begin, end] : {std::pair{0, 203}, {3, 200}, {0, 7}}) {
      CAPTURE(lanes);
      CAPTURE(begin);
      std::vector<std::int64_t> y(count);
      for (std::int64_t e = 0; e < count; ++e) y[e] = 100000 + e;
      ArgBlock args(kernel);
      args.array(0, y.data(), {count}).array(1, xs.data(), {count});
      entry(begin, end, args.data());
      for (std::int64_t e = 0; e < count; ++e) {
        CAPTURE(e);
        const std::int64_t old = 100000 + e;
        const bool inside = e >= begin && e < end;
        REQUIRE(y[e] == (!inside || xs[e] % 3 == 1 ? old : xs[e] % 3 == 0 ? 2 * xs[e] : -xs[e]));
      }
    }
  }
}

TEST_CASE("a store under a mask never touches elements past the array where the range passes it") {
  // The range is longer than y, and the store is guarded by y's extent: the
  // vectors that straddle the end store under a mask, not whole, so nothing
  // past y is read or written (y ends where an inaccessible page begins).
  const Expr i = make_index(0);
  const Kernel one_d =
      make_kernel("masked.guarded", {Param::array("y", I64, 1, Access::Out)}, 1,
                  {make_if(make_compare(CompareOp::Lt, i, make_extent(0, 0)), make_block({make_store(0, {i}, i)}))});
  // The same in two dimensions, where passing the last extent would reach
  // the next row's elements (another point's) and, in the last row, the page.
  const Expr j = make_index(1);
  const Kernel two_d = make_kernel(
      "masked.guarded_rows", {Param::array("y", I64, 2, Access::Out)}, 2,
      {make_if(make_compare(CompareOp::Lt, j, make_extent(0, 1)),
               make_block({make_store(0, {i, j}, add(make_binary(BinaryOp::Mul, i, make_int(I64, 1000)), j))}))});
  for (const char* lanes : {"8", "4"}) {
    CAPTURE(lanes);
    const std::int64_t count = 45;
    BeforeGuardPage y(count);
    ArgBlock args(one_d);
    args.array(0, y.data(), {count});
    compile_with_lanes(one_d, lanes)(0, count + 13, args.data());
    for (std::int64_t e = 0; e < count; ++e) REQUIRE(y.data()[e] == e);

    const std::int64_t rows = 4, cols = 21;
    BeforeGuardPage grid(rows * cols);
    ArgBlock grid_args(two_d);
    grid_args.array(0, grid.data(), {rows, cols}).range(1, 0, cols + 6);
    const CpuEntry entry = compile_with_lanes(two_d, lanes);
    entry(0, rows, grid_args.data());
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t c = 0; c < cols; ++c) REQUIRE(grid.data()[r * cols + c] == r * 1000 + c);
  }
}

TEST_CASE("indices clamped to a bound load whole vectors inside it and gather where a vector meets it") {
  // v = 3 x[min(i+1, n-1)] + 5 x[max(i-1, 0)] + 7 x[min(max(i+k, 0), n-1)] + x[max(min(i-2, n-1), t)],
  // plus 11 x[min(i+2, n-1)] at every third point (under a mask);
  // y[i] = v; z[min(i, t)] = i (the last point stores last); h[min(i, 9)] += 1.
  // x ends where an inaccessible page begins: a whole vector's load at the
  // bound would fault.
  const Expr i = make_index(0);
  const Expr n = make_extent(1, 0);
  const Expr one = make_int(I64, 1);
  auto minimum = [](Expr a, Expr b) { return make_binary(BinaryOp::Min, std::move(a), std::move(b)); };
  auto maximum = [](Expr a, Expr b) { return make_binary(BinaryOp::Max, std::move(a), std::move(b)); };
  auto times = [](std::int64_t c, Expr e) { return make_binary(BinaryOp::Mul, make_int(I64, c), std::move(e)); };
  auto x_at = [](Expr index) { return make_load(I64, 1, {std::move(index)}); };
  const Expr last = make_binary(BinaryOp::Sub, n, one);
  const Expr k = make_param(I64, 4), t = make_param(I64, 5);
  const Expr v = add(add(add(times(3, x_at(minimum(add(i, one), last))),
                             times(5, x_at(maximum(make_binary(BinaryOp::Sub, i, one), make_int(I64, 0))))),
                         times(7, x_at(minimum(maximum(add(i, k), make_int(I64, 0)), last)))),
                     x_at(maximum(minimum(make_binary(BinaryOp::Sub, i, make_int(I64, 2)), last), t)));
  const Kernel kernel = make_kernel(
      "clamped.loads",
      {Param::array("y", I64, 1, Access::Out), Param::array("x", I64, 1, Access::In),
       Param::array("z", I64, 1, Access::InOut), Param::array("h", I64, 1, Access::InOut), Param::scalar("k", I64),
       Param::scalar("t", I64)},
      1,
      {make_decl("v", v),
       make_if(make_compare(CompareOp::Eq, make_binary(BinaryOp::Rem, i, make_int(I64, 3)), make_int(I64, 0)),
               make_block({make_assign(
                   "v", add(make_var(I64, "v"), times(11, x_at(minimum(add(i, make_int(I64, 2)), last)))))})),
       make_store(0, {i}, make_var(I64, "v")), make_store(2, {minimum(i, t)}, i),
       make_atomic_add(3, {minimum(i, make_int(I64, 9))}, make_int(I64, 1))});
  const std::int64_t count = 203;
  BeforeGuardPage x(count);
  for (std::int64_t e = 0; e < count; ++e) x.data()[e] = (e * 7919) % 1000;
  const auto* xs = x.data();
  auto clamp = [](std::int64_t e, std::int64_t lo, std::int64_t hi) { return std::min(std::max(e, lo), hi); };
  for (const char* lanes : {"8", "16", "4", "64"}) {
    const CpuEntry entry = compile_with_lanes(kernel, lanes);
    for (auto [begin, end, k_value, t_value] :
         {std::tuple{0, 203, 5, 100}, {1, 202, -3, 0}, {3, 200, 400, 202}, {0, 7, -400, 3}, {190, 203, 0, 150}}) {
      CAPTURE(lanes);
      CAPTURE(begin);
      CAPTURE(end);
      std::vector<std::int64_t> y(count, -1), z(count, -1), h(10, 0);
      ArgBlock args(kernel);
      args.array(0, y.data(), {count})
          .array(1, x.data(), {count})
          .array(2, z.data(), {count})
          .array(3, h.data(), {10})
          .integer(4, k_value)
          .integer(5, t_value);
      entry(begin, end, args.data());
      std::vector<std::int64_t> want_z(count, -1), want_h(10, 0);
      for (std::int64_t e = 0; e < count; ++e) {
        CAPTURE(e);
        if (e < begin || e >= end) {
          REQUIRE(y[e] == -1);
          continue;
        }
        std::int64_t want = 3 * xs[std::min(e + 1, count - 1)] + 5 * xs[std::max<std::int64_t>(e - 1, 0)] +
                            7 * xs[clamp(e + k_value, 0, count - 1)] +
                            xs[std::max(std::min(e - 2, count - 1), std::int64_t{t_value})];
        if (e % 3 == 0) want += 11 * xs[std::min(e + 2, count - 1)];
        REQUIRE(y[e] == want);
        want_z[static_cast<std::size_t>(std::min<std::int64_t>(e, t_value))] = e;
        ++want_h[static_cast<std::size_t>(std::min<std::int64_t>(e, 9))];
      }
      CHECK(z == want_z);
      CHECK(h == want_h);
    }
  }
}
