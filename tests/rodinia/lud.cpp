// lud at a small size: Canopy's factors equal a serial elimination written
// here, within a float tolerance, on cpu0, on opencl0 and split over both (at
// numa0, percentage:[50,50]); Rodinia's -s matrix passes Rodinia's own check.
// Without an OpenCL device the OpenCL cases say so and pass.
//
// Tolerance: the blocked factorization subtracts the same products in the
// same order as the serial loop, but the compilers on either side may fuse a
// multiply and a subtraction (the test's C++ compiler and PoCL do, Canopy's
// CPU JIT does not), which rounds once instead of twice. On the generated,
// diagonally dominant matrix (no growth) that leaves every factor within
// 1e-5 of the largest factor's magnitude.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "hetero/hetero_support.hpp"
#include "rodinia/lud/lud.hpp"

using namespace canopy;

namespace {

// Six blocks of 16 and a last one of 4: the smaller last block has kernels of its own.
constexpr std::int64_t kN = 100;

std::vector<float> factor_here(std::vector<float> a, std::int64_t n) {
  for (std::int64_t k = 0; k < n; ++k)
    for (std::int64_t i = k + 1; i < n; ++i) {
      const float l = a[std::size_t(i * n + k)] / a[std::size_t(k * n + k)];
      a[std::size_t(i * n + k)] = l;
      for (std::int64_t j = k + 1; j < n; ++j) a[std::size_t(i * n + j)] -= l * a[std::size_t(k * n + j)];
    }
  return a;
}

std::vector<float> factor_on(Runtime& rt, const std::vector<float>& input, std::int64_t n,
                             const rodinia::lud::Where& where) {
  auto matrix = rt.array<float, 2>(Shape(n, n), named("matrix"));
  std::memcpy(matrix.host().data(), input.data(), input.size() * sizeof(float));
  rodinia::lud::Decomposer decomposer(n, 16);
  auto panel = decomposer.make_panel(rt);
  decomposer.launch(rt, matrix, panel, where);
  rt.pause();
  const auto view = matrix.host_read();
  return std::vector<float>(view.begin(), view.end());
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

// The regions of kernel `prefix`* among the runtime's recent ones whose pieces ran on two leaves.
int split_regions(const Runtime& rt, const std::string& prefix) {
  int count = 0;
  for (const RegionStats& region : rt.stats().recent)
    if (region.kernel.rfind(prefix, 0) == 0 && region.pieces.size() == 2) ++count;
  return count;
}

}  // namespace

TEST_CASE("lud: a serial elimination's factors on cpu0, opencl0 and split over both") {
  Runtime rt;
  const Hierarchy discovered = rt.hierarchy();
  const rodinia::Vector<float> generated = rodinia::lud::generated_matrix(kN);
  const std::vector<float> input(generated.begin(), generated.end());
  const std::vector<float> expected = factor_here(input, kN);
  // The factors are not trivial: L below the diagonal is small but not zero.
  CHECK(std::fabs(expected[std::size_t(kN * kN - 2)]) > 1e-4);
  CHECK(rodinia::lud::Decomposer(kN, 16).regions() == 13);

  SUBCASE("cpu0") {
    REQUIRE(hetero_tests::has_leaves(discovered, {"cpu0"}));
    const auto factors = factor_on(rt, input, kN, {"cpu0", "static"});
    CHECK(relative_difference(factors, expected) <= 1e-5);
    CHECK(hetero_tests::last_region(rt).kernel == "lud_top_4");
  }
  SUBCASE("opencl0") {
    if (!hetero_tests::has_leaves(discovered, {"opencl0"})) return;
    const auto factors = factor_on(rt, input, kN, {"opencl0", "static"});
    CHECK(relative_difference(factors, expected) <= 1e-5);
    CHECK(hetero_tests::pieces_of(hetero_tests::last_region(rt)) == std::vector<std::string>{"opencl0[0,1)"});
  }
  SUBCASE("split over cpu0 and opencl0") {
    if (!hetero_tests::has_leaves(discovered, {"cpu0", "opencl0"})) return;
    hetero_tests::use_leaves(rt, discovered, {"cpu0", "opencl0"});
    const auto factors = factor_on(rt, input, kN, {"numa0", "percentage:[50,50]"});
    CHECK(relative_difference(factors, expected) <= 1e-5);
    // Every rows region but the last two (one row, then none) ran on both leaves.
    CHECK(split_regions(rt, "lud_rows") == 6);
  }
}

TEST_CASE("lud: Rodinia's -s matrix factors so that L * U rebuilds it") {
  const std::int64_t n = 48;
  const rodinia::Vector<float> internal = rodinia::lud::internal_matrix(n);
  const std::vector<float> input(internal.begin(), internal.end());
  CHECK(input[0] == 10.0f);
  CHECK(input[std::size_t(n - 1)] == doctest::Approx(10 * std::exp(-0.001 * double(n - 1))).epsilon(1e-6));
  CHECK(input[std::size_t(n)] == input[1]);  // symmetric, constant along diagonals
  Runtime rt;
  const auto factors = factor_on(rt, input, n, {});
  std::string report;
  CHECK(rodinia::lud::verify(input, factors.data(), n, report) == 0);
  CHECK(report.empty());
  // A wrong factor is found and reported as Rodinia reports it.
  auto broken = factors;
  broken[std::size_t(5 * n + 7)] += 0.5f;
  CHECK(rodinia::lud::verify(input, broken.data(), n, report, 1) > 0);
  CHECK(report.rfind("dismatch at (5, 7): (o)", 0) == 0);
  // A NaN differs from everything (the comparison was one a NaN passed).
  broken = factors;
  broken[std::size_t(3 * n + 3)] = std::nanf("");
  CHECK(rodinia::lud::verify(input, broken.data(), n, report, 1) > 0);
}

TEST_CASE("rodinia common: a NaN difference is the worst, and an output that cannot be opened fails") {
  CHECK(rodinia::worse(0.5, 0.25) == 0.5);
  CHECK(rodinia::worse(0.25, 0.5) == 0.5);
  CHECK(std::isnan(rodinia::worse(0.5, std::nan(""))));
  CHECK(std::isnan(rodinia::worse(std::nan(""), 0.5)));
  rodinia::TextOut missing("/nonexistent-folder-of-canopy/out.txt");
  missing.integer(7);
  CHECK_FALSE(missing.good());
  CHECK_FALSE(missing.close());
}

TEST_CASE("lud: matrix files in Rodinia's format read back") {
  const std::string path = "lud_test_matrix.dat";
  const rodinia::Vector<float> m = rodinia::lud::generated_matrix(5);
  rodinia::lud::write_matrix(path, m, 5);
  std::int64_t n = 0;
  CHECK(rodinia::lud::read_matrix(path, n) == m);
  CHECK(n == 5);
  CHECK(hetero_tests::error_of([] {
          std::int64_t size = 0;
          rodinia::lud::read_matrix("no_such_lud_input.dat", size);
        }).find("cannot open input file 'no_such_lud_input.dat'") != std::string::npos);
  std::remove(path.c_str());
}
