// A 2-D 5-point stencil iterated 100 times over a 50/50 split moves only the
// halo: after the first iteration's copy-in, exactly one row each way across
// the boundary per iteration. The byte counts are worked out by hand below
// and compared exactly with rt.stats() (the totals and the two arrays' own
// counters), on cpu0 + opencl0 and on opencl0 + opencl1; the grid matches
// the same 100 iterations on the CPU leaf alone.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "hetero_support.hpp"

using namespace canopy;
using namespace canopy::hetero_tests;

namespace {

constexpr std::int64_t kRows = 256;        // R: the dimension the regions split
constexpr std::int64_t kCols = 128;        // C
constexpr std::int64_t kHalf = kRows / 2;  // H: static puts rows [0,H) on the first leaf, [H,R) on the second
constexpr std::int64_t kRow = kCols * std::int64_t(sizeof(double));  // bytes in one row
constexpr int kIterations = 100;

void fill(const Array<double, 2>& grid) {
  auto g = grid.host();
  for (std::int64_t i = 0; i < kRows; ++i)
    for (std::int64_t j = 0; j < kCols; ++j) g(i, j) = std::cos(0.37 * double(i)) * std::sin(0.11 * double(j)) * 100.0;
}

// 100 iterations: iteration k (from 1) reads one array and writes the other,
// odd k reading `a`, even k reading `b`; the result is in `a`.
std::vector<double> iterate(Runtime& rt, const Array<double, 2>& a, const Array<double, 2>& b,
                            const std::string& location) {
  for (int k = 1; k <= kIterations; ++k) {
    if (k % 2)
      rt.region(halo_stencil()).over(kRows, kCols).at(location).launch(b, a);
    else
      rt.region(halo_stencil()).over(kRows, kCols).at(location).launch(a, b);
  }
  rt.pause();
  auto view = a.host_read();
  return std::vector<double>(view.begin(), view.end());
}

// The same 100 iterations on the CPU leaf alone.
std::vector<double> on_cpu_alone(Runtime& rt) {
  auto a = rt.array<double, 2>(Shape(kRows, kCols), at("numa0") | named("cpu_a"));
  auto b = rt.array<double, 2>(Shape(kRows, kCols), at("numa0") | named("cpu_b"));
  fill(a);
  return iterate(rt, a, b, "cpu0");
}

struct Expected {
  Moved first;          ///< iteration 1 (the copy-in)
  Moved each;           ///< every later iteration
  Moved grid, scratch;  ///< the arrays' totals after 100 iterations (before reading the result back)
  /// The array's own counters also count what the host views found current:
  /// fill()'s grid.host() found all R rows on the host (R rows avoided).
  Moved read_back;  ///< a.host_read() at the end
};

// Runs the iterations split over `first` and `second`, pausing after each to
// read its bytes, and checks them against `expected`.
void check_halo_traffic(const std::string& first, const std::string& second, const Expected& expected) {
  Runtime rt;
  const Hierarchy discovered = rt.hierarchy();
  if (!has_leaves(discovered, {"cpu0", first, second})) return;
  const std::vector<double> want = on_cpu_alone(rt);

  use_leaves(rt, discovered, {first, second});
  auto grid = rt.array<double, 2>(Shape(kRows, kCols), at("numa0") | named("grid"));
  auto scratch = rt.array<double, 2>(Shape(kRows, kCols), at("numa0") | named("scratch"));
  fill(grid);
  const Moved start = moved(rt);
  for (int k = 1; k <= kIterations; ++k) {
    CAPTURE(k);
    const Moved before = moved(rt);
    if (k % 2)
      rt.region(halo_stencil()).over(kRows, kCols).launch(scratch, grid);
    else
      rt.region(halo_stencil()).over(kRows, kCols).launch(grid, scratch);
    rt.pause();
    CHECK(moved(rt) - before == (k == 1 ? expected.first : expected.each));
    CHECK(joined(pieces_of(last_region(rt))) == joined(expected_pieces("static", kRows, first, second)));
  }
  const Moved total = moved(rt) - start;
  CHECK(total == expected.grid + expected.scratch);
  const Moved filled{0, 0, 0, kRows * kRow};
  CHECK(moved(rt, "grid") == expected.grid + filled);
  CHECK(moved(rt, "scratch") == expected.scratch);

  const Moved before_read = moved(rt);
  auto result = grid.host_read();
  CHECK(moved(rt) - before_read == expected.read_back);
  CHECK(std::vector<double>(result.begin(), result.end()) == want);
}

}  // namespace

TEST_CASE("hetero: a stencil iterated over cpu0 and opencl0 moves one halo row each way per iteration" *
          doctest::test_suite("opencl")) {
  // cpu0 runs rows [0,H) in host memory, opencl0 rows [H,R) in its own.
  // Iteration 1 (scratch = S(grid)): cpu0 reads grid rows [0,H+1), current on
  // the host (H+1 rows avoided); opencl0 reads grid rows [H-1,R), none of
  // them on the device: R-H+1 rows host -> device. Neither copies scratch in
  // (its rows are overwritten).
  // Iteration k >= 2 reads what k-1 wrote: cpu0 needs row H, which only
  // opencl0 holds (1 row device -> host, H rows avoided); opencl0 needs row
  // H-1, which only the host holds (1 row host -> device, R-H rows avoided).
  Expected e;
  e.first = {(kRows - kHalf + 1) * kRow, 0, 0, (kHalf + 1) * kRow};
  e.each = {kRow, kRow, 0, kRows * kRow};
  // grid is read by iterations 1, 3, ..., 99 (the copy-in and 49 halos),
  // scratch by iterations 2, 4, ..., 100 (50 halos).
  e.grid = {e.first.host_to_device + 49 * kRow, 49 * kRow, 0, e.first.avoided + 49 * kRows * kRow};
  e.scratch = {50 * kRow, 50 * kRow, 0, 50 * kRows * kRow};
  // Iteration 100 wrote grid: opencl0's rows [H,R) come back, cpu0's rows
  // [0,H) were current on the host already.
  e.read_back = {0, (kRows - kHalf) * kRow, 0, kHalf * kRow};
  check_halo_traffic("cpu0", accelerator(0), e);
}

TEST_CASE("hetero: a stencil iterated over opencl0 and opencl1 moves one halo row each way per iteration" *
          doctest::test_suite("opencl")) {
  // opencl0 runs rows [0,H), opencl1 rows [H,R), each in its own memory;
  // device-only data goes to the other device through the host (2 copies).
  // Iteration 1: opencl0 copies grid rows [0,H+1) in, opencl1 rows [H-1,R):
  // R+2 rows host -> device, nothing avoided.
  // Iteration k >= 2: opencl0 needs row H, which only opencl1 holds (device ->
  // host -> device), and opencl1 row H-1, which only opencl0 holds: 2 rows
  // each way; H + (R-H) rows were already there.
  Expected e;
  e.first = {(kRows + 2) * kRow, 0, 0, 0};
  e.each = {2 * kRow, 2 * kRow, 0, kRows * kRow};
  e.grid = {e.first.host_to_device + 49 * 2 * kRow, 49 * 2 * kRow, 0, 49 * kRows * kRow};
  e.scratch = {50 * 2 * kRow, 50 * 2 * kRow, 0, 50 * kRows * kRow};
  // Iteration 100 wrote all of grid on the devices: every row comes back.
  e.read_back = {0, kRows * kRow, 0, 0};
  check_halo_traffic(accelerator(0), accelerator(1), e);
}
