// One region split over a CPU leaf and an OpenCL device, or over two OpenCL
// devices, gives what the same region gives on the CPU leaf alone, under
// every policy: triad, a 2-D 5-point stencil, a floating-point dot product
// (within the bound of a float sum in any order), an integer sum and an
// integer maximum (exact), a kernel with a For loop and a gather. The
// statistics show that the pieces really went to both leaves.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "hetero_support.hpp"

using namespace canopy;
using namespace canopy::hetero_tests;

namespace {

constexpr std::int64_t kN = 100000;      // 1-D regions
constexpr std::int64_t kRows = 1000;     // the stencil's rows (the dimension that splits)
constexpr std::int64_t kCols = 96;       // and columns
constexpr std::int64_t kWindow = 8;      // the For loop's trip count
constexpr std::int32_t kKeys = 1 << 20;  // gather indexes are below this

const Kernel<void(Out<double>, In<double>, In<double>, Val<double>)>& triad() {
  static const Kernel kernel("triad",
                             [](Out<double> a, In<double> b, In<double> c, Val<double> s) {
                               Idx i = index(0);
                               a[i] = b[i] + s * c[i];
                             },
                             {"a", "b", "c", "s"});
  return kernel;
}

// A 5-point stencil over the whole grid; the boundary keeps its value. The
// store is unconditional, so a piece overwrites its rows without reading them.
const Kernel<void(Out<float, 2>, In<float, 2>)>& stencil() {
  static const Kernel kernel("stencil",
                             [](Out<float, 2> out, In<float, 2> in) {
                               Idx i = index(0), j = index(1);
                               Var<float> v = in(i, j);
                               If(i > 0 && i < in.extent(0) - 1 && j > 0 && j < in.extent(1) - 1,
                                  [&] { v = 0.25f * (in(i - 1, j) + in(i + 1, j) + in(i, j - 1) + in(i, j + 1)); });
                               out(i, j) = v;
                             },
                             {"out", "in"});
  return kernel;
}

const Kernel<void(In<double>, In<double>, Sum<double>)>& dot() {
  static const Kernel kernel("dot",
                             [](In<double> a, In<double> b, Sum<double> total) {
                               Idx i = index(0);
                               total += a[i] * b[i];
                             },
                             {"a", "b", "total"});
  return kernel;
}

const Kernel<void(In<std::int32_t>, Sum<std::int64_t>, Max<std::int32_t>)>& integer_sum_max() {
  static const Kernel kernel("integer_sum_max",
                             [](In<std::int32_t> keys, Sum<std::int64_t> total, Max<std::int32_t> largest) {
                               Idx i = index(0);
                               total += cast<std::int64_t>(keys[i]);
                               largest.combine(keys[i]);
                             },
                             {"keys", "total", "largest"});
  return kernel;
}

// out[i] = sum over k < 8 of (k+1) * x[i+k]: reads a window of 8 past each point.
const Kernel<void(Out<std::int64_t>, In<std::int32_t>)>& window() {
  static const Kernel kernel("window",
                             [](Out<std::int64_t> out, In<std::int32_t> x) {
                               Idx i = index(0);
                               Var<std::int64_t> acc = 0;
                               For(0, kWindow, [&](Idx k) { acc += (k + 1) * cast<std::int64_t>(x[i + k]); });
                               out[i] = acc;
                             },
                             {"out", "x"});
  return kernel;
}

// out[i] = x[where[i]]: every piece may read any element of x.
const Kernel<void(Out<double>, In<double>, In<std::int32_t>)>& gather() {
  static const Kernel kernel("gather",
                             [](Out<double> out, In<double> x, In<std::int32_t> where) {
                               Idx i = index(0);
                               out[i] = x[where[i]];
                             },
                             {"out", "x", "where"});
  return kernel;
}

struct Arrays {
  Array<double> a, b, c, gathered, x;
  Array<float, 2> grid, smoothed;
  Array<std::int32_t> keys, where, window_in;
  Array<std::int64_t> windowed;
};

// Inputs with no pattern a split could hide behind.
Arrays make_arrays(Runtime& rt) {
  Arrays in;
  in.a = rt.array<double>(kN, at("numa0") | named("a"));
  in.b = rt.array<double>(kN, at("numa0") | named("b"));
  in.c = rt.array<double>(kN, at("numa0") | named("c"));
  in.x = rt.array<double>(kKeys, at("numa0") | named("x"));
  in.gathered = rt.array<double>(kN, at("numa0") | named("gathered"));
  in.grid = rt.array<float, 2>(Shape(kRows, kCols), at("numa0") | named("grid"));
  in.smoothed = rt.array<float, 2>(Shape(kRows, kCols), at("numa0") | named("smoothed"));
  in.keys = rt.array<std::int32_t>(kN, at("numa0") | named("keys"));
  in.where = rt.array<std::int32_t>(kN, at("numa0") | named("where"));
  in.window_in = rt.array<std::int32_t>(kN + kWindow - 1, at("numa0") | named("window_in"));
  in.windowed = rt.array<std::int64_t>(kN, at("numa0") | named("windowed"));
  auto b = in.b.host();
  auto c = in.c.host();
  auto keys = in.keys.host();
  auto where = in.where.host();
  for (std::int64_t i = 0; i < kN; ++i) {
    b[i] = std::sin(0.001 * double(i)) * 3.7;
    c[i] = std::cos(0.0007 * double(i)) + 0.1;
    keys[i] = static_cast<std::int32_t>((i * 2654435761LL) % 1000003) - 500000;
    where[i] = static_cast<std::int32_t>((i * 7919 + 13) % kKeys);
  }
  auto x = in.x.host();
  for (std::int64_t i = 0; i < kKeys; ++i) x[i] = double(i) * 0.5 - 3.25;
  auto window_in = in.window_in.host();
  for (std::int64_t i = 0; i < window_in.size(); ++i) window_in[i] = static_cast<std::int32_t>((i * 37) % 2001) - 1000;
  auto grid = in.grid.host();
  for (std::int64_t i = 0; i < kRows; ++i)
    for (std::int64_t j = 0; j < kCols; ++j) grid(i, j) = std::sin(0.01f * float(i * kCols + j)) * 10.0f;
  return in;
}

struct Results {
  std::vector<double> triad, gathered;
  std::vector<float> smoothed;
  std::vector<std::int64_t> windowed;
  double dot = 0;
  std::int64_t integer_sum = 0;
  std::int32_t integer_max = 0;
};

template <class View>
auto contents(const View& view) {
  return std::vector<std::remove_const_t<std::remove_reference_t<decltype(*view.begin())>>>(view.begin(), view.end());
}

// Runs every kernel with policy number `policy` of every_policy() (whose
// range list depends on the region's rows), at `location` when it is not
// empty (otherwise where the arrays are: numa0, split over its leaves),
// and reads the results back. Outputs start out poisoned, so a piece that
// does not run shows.
Results run_all(Runtime& rt, Arrays& in, std::size_t policy, const std::string& location,
                std::vector<RegionStats>* regions = nullptr) {
  for (auto& v : in.a.host()) v = -1;
  for (auto& v : in.gathered.host()) v = -1;
  for (auto& v : in.smoothed.host()) v = -1;
  for (auto& v : in.windowed.host()) v = -1;
  const std::string on_n = every_policy(kN)[policy], on_rows = every_policy(kRows)[policy];
  Results out;
  auto record = [&] {
    if (regions) regions->push_back(last_region(rt));
  };
  rt.region(triad()).over(kN).policy(on_n).at(location).launch(in.a, in.b, in.c, 0.375);
  record();
  rt.region(stencil()).over(kRows, kCols).policy(on_rows).at(location).launch(in.smoothed, in.grid);
  record();
  rt.region(window()).over(kN).policy(on_n).at(location).launch(in.windowed, in.window_in);
  record();
  rt.region(gather()).over(kN).policy(on_n).at(location).launch(in.gathered, in.x, in.where);
  record();
  out.dot = rt.region(dot()).over(kN).policy(on_n).at(location).reduce(in.a, in.c);
  record();
  std::tie(out.integer_sum, out.integer_max) =
      rt.region(integer_sum_max()).over(kN).policy(on_n).at(location).reduce(in.keys);
  record();
  rt.pause();
  out.triad = contents(in.a.host_read());
  out.gathered = contents(in.gathered.host_read());
  out.smoothed = contents(in.smoothed.host_read());
  out.windowed = contents(in.windowed.host_read());
  return out;
}

// What plain C++ gives for the integer kernels (exact) and the dot product's
// error bound: a sum of n terms in any order is within (n-1) * eps * sum|terms|.
void check_against_plain_cpp(const Results& r, Arrays& in) {
  auto keys = in.keys.host_read();
  std::int64_t sum = 0;
  std::int32_t largest = std::numeric_limits<std::int32_t>::min();
  for (auto k : keys) {
    sum += k;
    largest = std::max(largest, k);
  }
  CHECK(r.integer_sum == sum);
  CHECK(r.integer_max == largest);
  auto window_in = in.window_in.host_read();
  std::int64_t wrong_window = 0;
  for (std::int64_t i = 0; i < kN; ++i) {
    std::int64_t acc = 0;
    for (std::int64_t k = 0; k < kWindow; ++k) acc += (k + 1) * std::int64_t(window_in[i + k]);
    wrong_window += r.windowed[std::size_t(i)] != acc;
  }
  CHECK(wrong_window == 0);
  auto x = in.x.host_read();
  auto where = in.where.host_read();
  std::int64_t wrong_gather = 0;
  for (std::int64_t i = 0; i < kN; ++i) wrong_gather += r.gathered[std::size_t(i)] != x[where[i]];
  CHECK(wrong_gather == 0);
  auto c = in.c.host_read();
  double magnitude = 0, plain = 0;
  for (std::int64_t i = 0; i < kN; ++i) {
    magnitude += std::fabs(r.triad[std::size_t(i)] * c[i]);
    plain += r.triad[std::size_t(i)] * c[i];
  }
  const double bound = double(kN - 1) * std::numeric_limits<double>::epsilon() * magnitude;
  CHECK(std::fabs(r.dot - plain) <= bound);
}

// `got` (split) against `want` (the CPU leaf alone).
void check_same(const Results& got, const Results& want) {
  CHECK(got.triad == want.triad);
  CHECK(got.smoothed == want.smoothed);
  CHECK(got.windowed == want.windowed);
  CHECK(got.gathered == want.gathered);
  CHECK(got.integer_sum == want.integer_sum);
  CHECK(got.integer_max == want.integer_max);
  double magnitude = 0;
  for (std::size_t i = 0; i < want.triad.size(); ++i) magnitude += std::fabs(want.triad[i]);
  // Both are float sums of the same terms in different orders: each is within
  // (n-1) eps sum|a_i c_i| of the exact value, and |c_i| <= 1.1.
  const double bound = 2.0 * double(kN - 1) * std::numeric_limits<double>::epsilon() * magnitude * 1.1;
  CHECK(std::fabs(got.dot - want.dot) <= bound);
}

// The regions split over `first` and `second` (nothing else in the tree),
// under every policy, against the CPU leaf alone on the discovered tree.
void check_split(const std::string& first, const std::string& second) {
  Runtime rt;
  const Hierarchy discovered = rt.hierarchy();
  if (!has_leaves(discovered, {"cpu0", first, second})) return;
  Arrays in = make_arrays(rt);

  const Results want = run_all(rt, in, 0, "cpu0");
  check_against_plain_cpp(want, in);

  use_leaves(rt, discovered, {first, second});
  for (std::size_t policy = 0; policy < every_policy(kN).size(); ++policy) {
    CAPTURE(every_policy(kN)[policy]);
    std::vector<RegionStats> regions;
    const Results got = run_all(rt, in, policy, "", &regions);
    check_same(got, want);
    REQUIRE(regions.size() == 6);
    for (const RegionStats& region : regions) {
      CAPTURE(region.kernel);
      const std::int64_t rows = region.range[0];
      const std::string text = every_policy(rows)[policy];
      CHECK(region.location == "numa0");
      CHECK(region.policy == text);
      if (text == "any") {
        REQUIRE(region.pieces.size() == 1);
        CHECK((region.pieces[0].leaf == first || region.pieces[0].leaf == second));
        CHECK(region.pieces[0].end - region.pieces[0].begin == rows);
      } else {
        CHECK(joined(pieces_of(region)) == joined(expected_pieces(text, rows, first, second)));
      }
    }
  }
}

}  // namespace

TEST_CASE("hetero: regions split over cpu0 and opencl0 give the CPU leaf's results under every policy" *
          doctest::test_suite("opencl")) {
  check_split("cpu0", accelerator(0));
}

TEST_CASE("hetero: regions split over opencl0 and opencl1 give the CPU leaf's results under every policy" *
          doctest::test_suite("opencl")) {
  check_split(accelerator(0), accelerator(1));
}

namespace {

// Slow on purpose: every point runs a loop of `rounds` steps.
const Kernel<void(Out<std::int32_t>, Val<std::int32_t>, Val<std::int32_t>)>& slow_fill() {
  static const Kernel kernel("slow_fill",
                             [](Out<std::int32_t> x, Val<std::int32_t> value, Val<std::int32_t> rounds) {
                               Idx i = index(0);
                               Var<std::int32_t> v = cast<std::int32_t>(i);
                               For(0, rounds, [&](Value<std::int32_t>) { v = (v * 5 + value) & 0xffff; });
                               // v stays below 2^16, so the sum adds 0; the compiler cannot know that
                               // (rounds is not known), so the loop stays.
                               x[i] = value + cast<std::int32_t>(v == rounds + 70000);
                             },
                             {"x", "value", "rounds"});
  return kernel;
}

const Kernel<void(Out<std::int32_t>, In<std::int32_t>)>& copy_int() {
  static const Kernel kernel("copy_int",
                             [](Out<std::int32_t> to, In<std::int32_t> from) {
                               Idx i = index(0);
                               to[i] = from[i];
                             },
                             {"to", "from"});
  return kernel;
}

}  // namespace

TEST_CASE("hetero: a region over an empty range keeps the regions around it in order" * doctest::test_suite("opencl")) {
  // A slow region writes x on opencl1; an empty region that writes x comes
  // next; a region on opencl0 then reads x. It must see the slow region's
  // values: the empty region has no pieces, but it cannot end before the
  // regions it follows, or the reader would not wait for the writer.
  Runtime rt;
  const Hierarchy discovered = rt.hierarchy();
  if (!has_leaves(discovered, {accelerator(0), accelerator(1)})) return;
  use_leaves(rt, discovered, {accelerator(0), accelerator(1)});
  constexpr std::int64_t n = 200000;
  auto x = rt.array<std::int32_t>(n, at("numa0") | named("x"));
  auto y = rt.array<std::int32_t>(n, at("numa0") | named("y"));
  for (int round = 0; round < 3; ++round) {
    CAPTURE(round);
    rt.region(slow_fill()).over(n).at(accelerator(1)).launch(x, 40 + round, 300);
    rt.region(slow_fill()).over(0).launch(x, -1, 1);  // no pieces
    rt.region(copy_int()).over(n).at(accelerator(0)).launch(y, x);
    // The same with the empty region as a reader.
    rt.region(copy_int()).over(0).launch(y, x);
    rt.region(slow_fill()).over(n).at(accelerator(1)).launch(x, 90 + round, 10);
    rt.pause();
    std::int64_t wrong_y = 0, wrong_x = 0;
    for (auto v : y.host_read()) wrong_y += v != 40 + round;
    for (auto v : x.host_read()) wrong_x += v != 90 + round;
    CHECK(wrong_y == 0);
    CHECK(wrong_x == 0);
  }
}

TEST_CASE("hetero: a per_region() array reads zero at the start of each region on every leaf of a split" *
          doctest::test_suite("opencl")) {
  // Until 2026-11-29 the end of a region gave back the host's pages only:
  // the next region's pieces on a device read what the last had left there.
  Runtime rt;
  const Hierarchy discovered = rt.hierarchy();
  const std::vector<std::string> leaves{"cpu0", accelerator(0), accelerator(1)};
  if (!has_leaves(discovered, leaves)) CANOPY_TEST_SKIP(OpenCL, "this node lacks " << joined(leaves));
  use_leaves(rt, discovered, leaves);
  static const Kernel add_and_copy("per_region_add_and_copy",
                                   [](InOut<std::int64_t> scratch, Out<std::int64_t> seen) {
                                     Idx i = index(0);
                                     scratch[i] += i + 7;
                                     seen[i] = scratch[i];
                                   },
                                   {"scratch", "seen"});
  for (std::int64_t n : {1200, 300000}) {
    CAPTURE(n);
    auto scratch = rt.array<std::int64_t>(n, at("numa0") | per_region() | named("scratch"));
    for (int round = 0; round < 3; ++round) {
      CAPTURE(round);
      auto seen = rt.array<std::int64_t>(n, at("numa0") | named("seen"));
      rt.region(add_and_copy).over(n).policy("static").launch(scratch, seen);
      std::int64_t wrong = 0;
      auto values = seen.host_read();
      for (std::int64_t i = 0; i < n; ++i) wrong += values[static_cast<std::size_t>(i)] != i + 7;
      CHECK(wrong == 0);
      std::int64_t left = 0;
      for (auto v : scratch.host_read()) left += v != 0;
      CHECK(left == 0);  // nothing survives a region, on the host either
    }
  }
}

TEST_CASE("hetero: a read-only array whose device copy grows goes back to the host for nothing" *
          doctest::test_suite("opencl")) {
  // percentage:[10,20,30,40] over cpu0 and a device folds: the device runs
  // rows [10%, 30%) and then [60%, 100%), so its copy of `a` grows. The rows
  // it held were the host's too; growing had copied them device -> host ->
  // device (found by a new user: 1.6 MB of an 8 MB array read back).
  static const Kernel total("hetero_grow_total", [](In<double> a, Sum<double> s) { s += a[index(0)]; });
  Runtime rt;
  const Hierarchy discovered = rt.hierarchy();
  if (!has_leaves(discovered, {"cpu0", accelerator(0)}))
    CANOPY_TEST_SKIP(OpenCL, "this node lacks cpu0 or " << accelerator(0));
  use_leaves(rt, discovered, {"cpu0", accelerator(0)});
  constexpr std::int64_t n = 400003;
  auto a = rt.array<double>(n, named("grown"));
  {
    auto view = a.host();
    for (std::int64_t i = 0; i < n; ++i) view[i] = double(i % 7);
  }
  double want = 0;
  for (std::int64_t i = 0; i < n; ++i) want += double(i % 7);
  for (int round = 0; round < 3; ++round)
    CHECK(rt.region(total).over(n).policy("percentage:[10,20,30,40]").reduce(a) == want);
  const Stats stats = rt.stats();
  REQUIRE(stats.recent.size() >= 1);
  CHECK(stats.recent.back().pieces.size() == 4);
  CHECK(stats.transfers.host_to_device > 0);
  CHECK(stats.transfers.device_to_host == 0);
}

TEST_CASE("hetero: one array passed as In and InOut is reversed in place by swaps on every leaf" *
          doctest::test_suite("opencl")) {
  // A Value read from the In side keeps its value across the store through
  // the InOut side, as in C++, in the CPU's code and in OpenCL C.
  static const Kernel swap_ends("hetero_swap_ends", [](In<std::int32_t> in, InOut<std::int32_t> out) {
    Idx i = index(0);
    const Idx last = in.extent(0) - 1;
    const Value<std::int32_t> kept = in[i];
    out[i] = in[last - i];
    out[last - i] = kept;
  });
  Runtime rt;
  const Hierarchy discovered = rt.hierarchy();
  if (!has_leaves(discovered, {"cpu0", accelerator(0)}))
    CANOPY_TEST_SKIP(OpenCL, "this node lacks cpu0 or " << accelerator(0));
  use_leaves(rt, discovered, {"cpu0", accelerator(0)});
  constexpr std::int64_t n = 1001;
  for (const std::string& leaf : {std::string("cpu0"), accelerator(0)}) {
    CAPTURE(leaf);
    auto a = rt.array<std::int32_t>(n, named("a"));
    {
      auto view = a.host();
      for (std::int64_t k = 0; k < n; ++k) view[k] = static_cast<std::int32_t>(k);
    }
    rt.region(swap_ends).over(n / 2).at(leaf).launch(a, a);
    auto view = a.host_read();
    std::int64_t wrong = 0;
    for (std::int64_t k = 0; k < n; ++k) wrong += view[k] != n - 1 - k;
    CHECK(wrong == 0);
  }
}

TEST_CASE("hetero: an element read again after a store through another parameter of one array is the stored one" *
          doctest::test_suite("opencl")) {
  // y[i] = y[i] + 1, then y[i] += before + x[i]: with x and y one array, x[i]
  // is the stored value, as with two pointers to one array in C++ (3 old + 2).
  // The optimizer had shared the two reads of x[i] across the store (3 old +
  // 1, found by a new user). One array passed twice, and two arrays wrapped
  // over one buffer, on every leaf.
  static const Kernel reread("hetero_reread", [](In<double> x, InOut<double> y) {
    Idx i = index(0);
    const Value<double> before = x[i];
    y[i] = y[i] + 1.0;
    y[i] = y[i] + before + x[i];
  });
  Runtime rt;
  const Hierarchy discovered = rt.hierarchy();
  if (!has_leaves(discovered, {"cpu0", accelerator(0)}))
    CANOPY_TEST_SKIP(OpenCL, "this node lacks cpu0 or " << accelerator(0));
  use_leaves(rt, discovered, {"cpu0", accelerator(0)});
  constexpr std::int64_t n = 1003;
  auto expect_three_old_plus_two = [&](const double* values) {
    std::int64_t wrong = 0;
    for (std::int64_t k = 0; k < n; ++k) wrong += values[k] != 3.0 * double(k) + 2.0;
    return wrong;
  };
  for (const std::string& leaf : {std::string("cpu0"), accelerator(0)}) {
    CAPTURE(leaf);
    auto d = rt.array<double>(n, named("d"));
    {
      auto view = d.host();
      for (std::int64_t k = 0; k < n; ++k) view[k] = double(k);
    }
    rt.region(reread).over(n).at(leaf).launch(d, d);
    CHECK(expect_three_old_plus_two(d.host_read().data()) == 0);

    // Wrapped memory passed twice through one handle.
    std::vector<double> buffer(n);
    for (std::int64_t k = 0; k < n; ++k) buffer[static_cast<std::size_t>(k)] = double(k);
    auto w = rt.wrap<double, 1>(buffer.data(), Shape(n));
    rt.region(reread).over(n).at(leaf).launch(w, w);
    rt.pause();
    CHECK(expect_three_old_plus_two(buffer.data()) == 0);
  }
}

TEST_CASE("hetero: two arrays wrapped over one buffer are one memory: regions on each follow the other's" *
          doctest::test_suite("opencl")) {
  // A region on one wrap sets the buffer; a region on the other, on another
  // leaf, sums it. Each array had its own dependences and device copies, and
  // the sum read the values from before the first region (found by a new
  // user). A region passed both, one written, is refused: a device would
  // hold two copies within it.
  static const Kernel increment("hetero_wrap_increment", [](InOut<double> y) {
    Idx i = index(0);
    y[i] = y[i] + 1.0;
  });
  static const Kernel total("hetero_wrap_total", [](In<double> x, Sum<double> s) { s += x[index(0)]; });
  static const Kernel copy("hetero_wrap_copy", [](Out<double> y, In<double> x) { y[index(0)] = x[index(0)]; });
  Runtime rt;
  const Hierarchy discovered = rt.hierarchy();
  if (!has_leaves(discovered, {"cpu0", accelerator(0)}))
    CANOPY_TEST_SKIP(OpenCL, "this node lacks cpu0 or " << accelerator(0));
  use_leaves(rt, discovered, {"cpu0", accelerator(0)});
  constexpr std::int64_t n = 4096;
  std::vector<double> buffer(n, 0.0);
  auto first = rt.wrap<double, 1>(buffer.data(), Shape(n), named("first"));
  auto second = rt.wrap<double, 1>(buffer.data(), Shape(n), named("second"));
  auto part = rt.wrap<double, 1>(buffer.data() + 1000, Shape(100), named("part"));
  const std::string leaves[] = {"cpu0", accelerator(0)};
  double expected_each = 0;
  for (int round = 0; round < 6; ++round) {
    CAPTURE(round);
    const std::string& one = leaves[round % 2];
    const std::string& other = leaves[(round + 1) % 2];
    rt.region(increment).over(n).at(one).launch(round % 3 == 2 ? second : first);
    ++expected_each;
    CHECK(rt.region(total).over(n).at(other).reduce(round % 3 == 2 ? first : second) == expected_each * n);
    CHECK(rt.region(total).over(100).at(one).reduce(part) == expected_each * 100);
  }
  rt.region(increment).over(100).at(accelerator(0)).launch(part);
  CHECK(rt.region(total).over(n).at("cpu0").reduce(first) == expected_each * n + 100);
  CHECK(error_of([&] {
          rt.region(copy).over(n).at("cpu0").launch(first, second);
        }).find("kernel 'hetero_wrap_copy' is passed array 'first' (f64 4096 at ") == 0);
  rt.pause();
  CHECK(std::count(buffer.begin(), buffer.end(), expected_each) == n - 100);
}
