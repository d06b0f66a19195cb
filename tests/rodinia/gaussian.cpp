// gaussian at a small size: Canopy's forward elimination equals Rodinia's
// Fan1/Fan2 loops written here, within a float tolerance, on cpu0, on opencl0
// and split over both (at numa0, percentage:[50,50]); the solution solves
// Rodinia's -s system. Without an OpenCL device the OpenCL cases say so and
// pass.
//
// Tolerance: both sides subtract the same products in the same order, but
// the compilers may fuse a multiply and a subtraction (the test's C++
// compiler and PoCL do, Canopy's CPU JIT does not), which rounds once
// instead of twice. On the generated, diagonally dominant system every
// element of m, a, b and x stays within 1e-5 of the largest magnitude of its
// array.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "hetero/hetero_support.hpp"
#include "rodinia/gaussian/gaussian.hpp"

using namespace canopy;

namespace {

// Not a multiple of 16: rows start off 64-byte boundaries and every step's
// column loops have a first part before the aligned one.
constexpr std::int64_t kN = 100;

struct Eliminated {
  std::vector<float> a, b, m, x;
};

// Rodinia's ForwardSub as plain loops: Fan1 for every row, then Fan2.
Eliminated eliminate_here(const rodinia::gaussian::System& s) {
  const std::int64_t n = s.n;
  Eliminated e{{s.a.begin(), s.a.end()}, {s.b.begin(), s.b.end()}, std::vector<float>(std::size_t(n * n), 0.0f), {}};
  auto at = [n](std::vector<float>& v, std::int64_t i, std::int64_t j) -> float& { return v[std::size_t(i * n + j)]; };
  for (std::int64_t t = 0; t + 1 < n; ++t) {
    for (std::int64_t i = t + 1; i < n; ++i) at(e.m, i, t) = at(e.a, i, t) / at(e.a, t, t);
    for (std::int64_t i = t + 1; i < n; ++i) {
      for (std::int64_t j = t; j < n; ++j) at(e.a, i, j) -= at(e.m, i, t) * at(e.a, t, j);
      e.b[std::size_t(i)] -= at(e.m, i, t) * e.b[std::size_t(t)];
    }
  }
  e.x = rodinia::gaussian::back_substitute(e.a.data(), e.b.data(), n);
  return e;
}

Eliminated eliminate_on(Runtime& rt, const rodinia::gaussian::System& s, const rodinia::gaussian::Where& where) {
  const std::int64_t n = s.n;
  auto a = rt.array<float, 2>(Shape(n, n), named("a"));
  auto b = rt.array<float>(n, named("b"));
  auto m = rt.array<float, 2>(Shape(n, n), named("m"));
  std::memcpy(a.host().data(), s.a.data(), s.a.size() * sizeof(float));
  std::memcpy(b.host().data(), s.b.data(), s.b.size() * sizeof(float));
  rodinia::gaussian::Eliminator eliminator(n);
  eliminator.launch(rt, a, b, m, where);
  rt.pause();
  Eliminated e;
  const auto av = a.host_read();
  const auto bv = b.host_read();
  const auto mv = m.host_read();
  e.a.assign(av.begin(), av.end());
  e.b.assign(bv.begin(), bv.end());
  e.m.assign(mv.begin(), mv.end());
  e.x = rodinia::gaussian::back_substitute(e.a.data(), e.b.data(), n);
  return e;
}

// The largest |a - b| over the largest |b|.
double relative_difference(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  double worst = 0, scale = 0;
  for (std::size_t k = 0; k < a.size(); ++k) {
    worst = std::max(worst, std::fabs(double(a[k]) - double(b[k])));
    scale = std::max(scale, std::fabs(double(b[k])));
  }
  return worst / scale;
}

void check_close(const Eliminated& got, const Eliminated& expected) {
  CHECK(relative_difference(got.m, expected.m) <= 1e-5);
  CHECK(relative_difference(got.a, expected.a) <= 1e-5);
  CHECK(relative_difference(got.b, expected.b) <= 1e-5);
  CHECK(relative_difference(got.x, expected.x) <= 1e-5);
}

}  // namespace

TEST_CASE("gaussian: Rodinia's elimination on cpu0, opencl0 and split over both") {
  Runtime rt;
  const Hierarchy discovered = rt.hierarchy();
  const rodinia::gaussian::System system = rodinia::gaussian::generated_system(kN);
  const Eliminated expected = eliminate_here(system);
  CHECK(expected.m[std::size_t(kN * (kN - 1))] != 0.0f);  // multipliers below the diagonal
  CHECK(rodinia::gaussian::Eliminator(kN).regions() == kN - 1);

  SUBCASE("cpu0") {
    REQUIRE(hetero_tests::has_leaves(discovered, {"cpu0"}));
    check_close(eliminate_on(rt, system, {"cpu0", "static"}), expected);
  }
  SUBCASE("opencl0") {
    if (!hetero_tests::has_leaves(discovered, {"opencl0"})) return;
    check_close(eliminate_on(rt, system, {"opencl0", "static"}), expected);
    CHECK(hetero_tests::pieces_of(hetero_tests::last_region(rt)) == std::vector<std::string>{"opencl0[0,1)"});
  }
  SUBCASE("split over cpu0 and opencl0") {
    if (!hetero_tests::has_leaves(discovered, {"cpu0", "opencl0"})) return;
    hetero_tests::use_leaves(rt, discovered, {"cpu0", "opencl0"});
    check_close(eliminate_on(rt, system, {"numa0", "percentage:[50,50]"}), expected);
    // Step 97 has two rows below the pivot: one on each leaf.
    bool split = false;
    for (const RegionStats& region : rt.stats().recent)
      split = split || hetero_tests::pieces_of(region) == std::vector<std::string>{"cpu0[0,1)", "opencl0[1,2)"};
    CHECK(split);
  }
}

TEST_CASE("gaussian: the solution of Rodinia's -s system solves it") {
  const std::int64_t n = 64;
  const rodinia::gaussian::System system = rodinia::gaussian::internal_system(n);
  CHECK(system.a[0] == 10.0f);
  CHECK(system.a[1] == doctest::Approx(10 * std::exp(-0.01)).epsilon(1e-6));
  CHECK(std::all_of(system.b.begin(), system.b.end(), [](float v) { return v == 1.0f; }));
  Runtime rt;
  const Eliminated e = eliminate_on(rt, system, {});
  // A x = b within float rounding: the residual relative to |b| = 1.
  double worst = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    double row = 0;
    for (std::int64_t j = 0; j < n; ++j) row += double(system.a[std::size_t(i * n + j)]) * e.x[std::size_t(j)];
    worst = std::max(worst, std::fabs(row - 1.0));
  }
  CHECK(worst < 1e-4);
  // Below the diagonal a is eliminated (zero up to rounding), as Rodinia leaves it.
  for (std::int64_t i = 1; i < n; ++i) CHECK(std::fabs(e.a[std::size_t(i * n + i - 1)]) < 1e-5);
}

TEST_CASE("gaussian: system files in Rodinia's format read back") {
  const std::string path = "gaussian_test_system.txt";
  const rodinia::gaussian::System s = rodinia::gaussian::generated_system(4);
  rodinia::gaussian::write_system(path, s);
  const rodinia::gaussian::System back = rodinia::gaussian::read_system(path);
  CHECK(back.n == 4);
  CHECK(back.a == s.a);
  CHECK(back.b == s.b);
  CHECK(hetero_tests::error_of([] {
          rodinia::gaussian::read_system("no_such_gaussian_input.txt");
        }).find("cannot open input file 'no_such_gaussian_input.txt'") != std::string::npos);
  std::remove(path.c_str());
}
