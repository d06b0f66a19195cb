// A launch whose range takes an access that every point performs outside
// its array is refused before it runs, in the default mode (no
// CANOPY_CHECK): the error names the kernel, the array, the positions and the
// extent, and no array changes; an offset from a scalar parameter or an
// extent is taken at its launch's value. Accesses that may be guarded (under
// an If) and gathers are left to CANOPY_CHECK=bounds.
#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

#include "engine_trees.hpp"

using namespace canopy;
using namespace canopy::engine_tests;

namespace {

const Kernel<void(Out<double>, In<double>)>& shift_left() {
  static const Kernel kernel("lb_shift_left", [](Out<double> o, In<double> x) { o[index(0)] = x[index(0) + 1]; },
                             {"o", "x"});
  return kernel;
}

const Kernel<void(Out<double>, In<double>)>& shift_right() {
  static const Kernel kernel("lb_shift_right", [](Out<double> o, In<double> x) { o[index(0)] = x[index(0) - 1]; },
                             {"o", "x"});
  return kernel;
}

// o[99 - i]: positions fall as i grows.
const Kernel<void(Out<double>)>& reversed() {
  static const Kernel kernel("lb_reversed", [](Out<double> o) { o[99 - index(0)] = 1.0; }, {"o"});
  return kernel;
}

const Kernel<void(Out<double, 2>, In<double, 2>)>& shift_columns() {
  static const Kernel kernel("lb_shift_columns",
                             [](Out<double, 2> o, In<double, 2> x) {
                               Idx i = index(0), j = index(1);
                               o(i, j) = x(i, j + 1);
                             },
                             {"o", "x"});
  return kernel;
}

// The same read as shift_left, guarded: every point that reads is in bounds.
const Kernel<void(Out<double>, In<double>)>& guarded() {
  static const Kernel kernel("lb_guarded",
                             [](Out<double> o, In<double> x) {
                               Idx i = index(0);
                               If(i + 1 < x.extent(0), [&] { o[i] = x[i + 1]; });
                             },
                             {"o", "x"});
  return kernel;
}

const Kernel<void(Out<double>, In<double>, In<std::int64_t>)>& gather() {
  static const Kernel kernel("lb_gather",
                             [](Out<double> o, In<double> x, In<std::int64_t> at) { o[index(0)] = x[at[index(0)]]; },
                             {"o", "x", "at"});
  return kernel;
}

std::vector<double> values_of(const Array<double>& a) {
  auto view = a.host_read();
  return std::vector<double>(view.begin(), view.end());
}

}  // namespace

TEST_CASE("launch bounds: a range longer than the arrays is refused, naming the array, and no array changes") {
  Runtime rt;
  use_tree(rt, one_leaf_tree());
  constexpr std::int64_t n = 1000;
  auto o = rt.array<double>(n, named("o"));
  auto x = rt.array<double>(n, named("x"));
  {
    auto ov = o.host(), xv = x.host();
    for (std::int64_t i = 0; i < n; ++i) {
      ov[i] = -double(i);
      xv[i] = double(i) * 0.5;
    }
  }
  const auto o_before = values_of(o), x_before = values_of(x);
  CHECK(error_of([&] { rt.region(shift_left()).over(n + 10).launch(o, x); }) ==
        "kernel 'lb_shift_left' writes parameter 'o', array 'o' (f64 1000 at node), at positions 0 to 1009 over the "
        "region's range 1010, but the array's extent is 1000; launch the region over a range the array holds, make "
        "the array larger, or guard the access with If");
  // One point too many reaches only x.
  CHECK(error_of([&] { rt.region(shift_left()).over(n).launch(o, x); }) ==
        "kernel 'lb_shift_left' reads parameter 'x', array 'x' (f64 1000 at node), at positions 1 to 1000 over the "
        "region's range 1000, but the array's extent is 1000; launch the region over a range the array holds, make "
        "the array larger, or guard the access with If");
  rt.pause();
  CHECK(values_of(o) == o_before);
  CHECK(values_of(x) == x_before);
  // The runtime goes on: the largest range the arrays hold runs.
  rt.region(shift_left()).over(n - 1).launch(o, x);
  const auto after = values_of(o);
  CHECK(after[0] == 0.5);
  CHECK(after[998] == 499.5);
  CHECK(after[999] == -999.0);
}

TEST_CASE("launch bounds: a kernel without parameter names and arrays without names are named by position") {
  Runtime rt;
  use_tree(rt, one_leaf_tree());
  Kernel unnamed("lb_unnamed", [](Out<double> o, In<double> x) {
    Idx i = index(0);
    o[i] = x[i + 1];
  });
  auto o = rt.array<double>(10), x = rt.array<double>(10);
  const std::string message = error_of([&] { rt.region(unnamed).over(10).launch(o, x); });
  CHECK(message.rfind("kernel 'lb_unnamed' reads parameter p1 (unnamed: the 2nd), unnamed array #", 0) == 0);
  CHECK(message.find(" (f64 10 at node), at positions 1 to 10 over the region's range 10") != std::string::npos);
  rt.pause();
}

TEST_CASE("launch bounds: positions below zero and falling positions are refused") {
  Runtime rt;
  use_tree(rt, one_leaf_tree());
  auto o = rt.array<double>(100, named("o"));
  auto x = rt.array<double>(100, named("x"));
  CHECK(error_of([&] { rt.region(shift_right()).over(100).launch(o, x); }) ==
        "kernel 'lb_shift_right' reads parameter 'x', array 'x' (f64 100 at node), at positions -1 to 98 over the "
        "region's range 100, but the array's extent is 100; launch the region over a range the array holds, make "
        "the array larger, or guard the access with If");
  CHECK(error_of([&] { rt.region(reversed()).over(101).launch(o); }) ==
        "kernel 'lb_reversed' writes parameter 'o', array 'o' (f64 100 at node), at positions -1 to 99 over the "
        "region's range 101, but the array's extent is 100; launch the region over a range the array holds, make "
        "the array larger, or guard the access with If");
  rt.region(reversed()).over(100).launch(o);
  for (double v : values_of(o)) CHECK(v == 1.0);
}

TEST_CASE("launch bounds: a 2-D access names its dimension, also split over two leaves") {
  Runtime rt;
  use_tree(rt, two_leaf_tree());
  auto o = rt.array<double, 2>(Shape(64, 5), named("o"));
  auto x = rt.array<double, 2>(Shape(64, 5), named("x"));
  CHECK(error_of([&] { rt.region(shift_columns()).over(64, 5).at("numa0").launch(o, x); }) ==
        "kernel 'lb_shift_columns' reads parameter 'x', array 'x' (f64 64x5 at node), at positions 1 to 5 along "
        "dimension 1 over the region's range 64x5, but the array's extent along dimension 1 is 5; launch the region "
        "over a range the array holds, make the array larger, or guard the access with If");
  rt.region(shift_columns()).over(64, 4).at("numa0").launch(o, x);
  rt.pause();
}

TEST_CASE("launch bounds: guarded accesses, gathers and empty ranges are not refused") {
  Runtime rt;
  use_tree(rt, one_leaf_tree());
  constexpr std::int64_t n = 50;
  auto o = rt.array<double>(n);
  auto x = rt.array<double>(n);
  auto at = rt.array<std::int64_t>(n);
  {
    auto xv = x.host();
    auto av = at.host();
    for (std::int64_t i = 0; i < n; ++i) {
      xv[i] = double(i);
      av[i] = (i * 7) % n;
    }
  }
  rt.region(guarded()).over(n).launch(o, x);
  rt.region(shift_left()).over(0).launch(o, x);
  auto ov = values_of(o);
  CHECK(ov[0] == 1.0);
  CHECK(ov[48] == 49.0);
  CHECK(ov[49] == 0.0);
  rt.region(gather()).over(n).launch(o, x, at);
  ov = values_of(o);
  CHECK(ov[3] == 21.0);
}

TEST_CASE("launch bounds: an offset from a scalar parameter is checked at the launch's value") {
  // o[i + k] with a k that takes the last points past o: before, an offset
  // from a parameter was never checked, and the launch wrote past the array.
  static const Kernel offset("lb_offset",
                             [](Out<double> o, In<double> x, Val<std::int64_t> k) {
                               Idx i = index(0);
                               o[i + k] = x[i];
                             },
                             {"o", "x", "k"});
  Runtime rt;
  use_tree(rt, one_leaf_tree());
  constexpr std::int64_t n = 40;
  auto o = rt.array<double>(n, named("o"));
  auto x = rt.array<double>(n, named("x"));
  {
    auto xv = x.host();
    for (std::int64_t i = 0; i < n; ++i) xv[i] = double(i) + 0.5;
  }
  CHECK(error_of([&] { rt.region(offset).over(n - 2).launch(o, x, std::int64_t{3}); }) ==
        "kernel 'lb_offset' writes parameter 'o', array 'o' (f64 40 at node), at positions 3 to 40 over the region's "
        "range 38, but the array's extent is 40; launch the region over a range the array holds, make the array "
        "larger, or guard the access with If");
  CHECK(values_of(o) == std::vector<double>(n, 0.0));
  rt.region(offset).over(n - 3).launch(o, x, std::int64_t{3});
  const auto ov = values_of(o);
  for (std::int64_t i = 0; i < n; ++i) CHECK(ov[std::size_t(i)] == (i < 3 ? 0.0 : double(i - 3) + 0.5));
}

TEST_CASE("launch bounds: an access in a loop that every point runs is checked at both ends of its counter") {
  // Found by a new user's program: every point wrote b[j] for j in 0..200
  // into an array of 100, and the program crashed later. The loop's counter
  // surely takes 0 and 199, so the launch is refused.
  static const Kernel loop("lb_loop",
                           [](Out<double> a, Out<double> b) {
                             Idx i = index(0);
                             For(0, 200, [&](Idx j) { b[j] = 7.0; });
                             a[i] = 1.0;
                           },
                           {"a", "b"});
  static const Kernel window("lb_window",
                             [](Out<double> o, In<double> x) {
                               Idx i = index(0);
                               Var<double> sum = 0.0;
                               For(-2, 3, [&](Idx k) { sum = sum + x[i + k]; });
                               o[i] = sum;
                             },
                             {"o", "x"});
  Runtime rt;
  use_tree(rt, one_leaf_tree());
  auto a = rt.array<double>(100, named("a"));
  auto b = rt.array<double>(100, named("b"));
  CHECK(error_of([&] { rt.region(loop).over(100).launch(a, b); }) ==
        "kernel 'lb_loop' writes parameter 'b', array 'b' (f64 100 at node), at positions 0 to 199 over the region's "
        "range 100, but the array's extent is 100; launch the region over a range the array holds, make the array "
        "larger, or guard the access with If");
  CHECK(values_of(b) == std::vector<double>(100, 0.0));
  // x[i + k] for k in -2..2 reaches 2 below the first point and 2 past the last.
  CHECK(error_of([&] { rt.region(window).over(100).launch(a, b); }) ==
        "kernel 'lb_window' reads parameter 'x', array 'b' (f64 100 at node), at positions -2 to 101 over the region's "
        "range 100, but the array's extent is 100; launch the region over a range the array holds, make the array "
        "larger, or guard the access with If");
}
