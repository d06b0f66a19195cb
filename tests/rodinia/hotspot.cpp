// hotspot at a small size: Canopy's simulation equals a serial simulation
// written here, on cpu0, on opencl0 and split over both (at numa0,
// percentage:[50,50]); split, each step moves about one halo row each way,
// not the grids. Without an OpenCL device the OpenCL cases say so and pass.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "hetero/hetero_support.hpp"
#include "rodinia/hotspot/hotspot.hpp"

using namespace canopy;

namespace {

// Not square and not a multiple of any vector width, so the vector loops'
// remainders and the grid's four edges and corners are all exercised.
constexpr std::int64_t kRows = 45, kCols = 37;
constexpr int kSteps = 30;

// Rodinia's chip changes by about an ulp of a float per step at this size
// (its time step is tiny), which would let a wrong kernel pass: the tests
// take a chip whose time step is a thousand times longer, so that 30 steps
// move temperatures by kelvins. The explicit scheme stays stable while
// cap_1 * (2 rx_1 + 2 ry_1 + rz_1) < 1 (here 0.81).
constexpr rodinia::hotspot::Coefficients kFastChip{0.2f, 1.0f, 1.0f, 0.05f};

// Tolerance: the serial run and Canopy evaluate the same float expression in
// the same order; only a device that fuses a multiply and an add could round
// differently, by an ulp or so (3e-5 K at 330 K) per step, and each step
// averages such differences rather than growing them.
constexpr double kToleranceKelvin = 1e-3;

std::vector<float> simulate_serially(const rodinia::hotspot::Chip& chip, int steps) {
  const auto c = kFastChip;
  const std::int64_t rows = chip.rows, cols = chip.cols;
  std::vector<float> t = chip.temperature, next(t.size());
  for (int k = 0; k < steps; ++k) {
    for (std::int64_t i = 0; i < rows; ++i)
      for (std::int64_t j = 0; j < cols; ++j) {
        const float here = t[std::size_t(i * cols + j)];
        const float north = i > 0 ? t[std::size_t((i - 1) * cols + j)] : here;
        const float south = i < rows - 1 ? t[std::size_t((i + 1) * cols + j)] : here;
        const float west = j > 0 ? t[std::size_t(i * cols + j - 1)] : here;
        const float east = j < cols - 1 ? t[std::size_t(i * cols + j + 1)] : here;
        const float power = chip.power[std::size_t(i * cols + j)];
        next[std::size_t(i * cols + j)] =
            here + c.cap_1 * (power + (south + north - 2.0f * here) * c.ry_1 + (east + west - 2.0f * here) * c.rx_1 +
                              (rodinia::hotspot::kAmbient - here) * c.rz_1);
      }
    t.swap(next);
  }
  return t;
}

double largest_difference(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  double largest = 0;
  for (std::size_t k = 0; k < a.size(); ++k) largest = std::max(largest, double(std::fabs(a[k] - b[k])));
  return largest;
}

}  // namespace

TEST_CASE("hotspot: a serial simulation's result on cpu0, opencl0 and split over both") {
  Runtime rt;
  const Hierarchy discovered = rt.hierarchy();
  const rodinia::hotspot::Chip chip = rodinia::hotspot::generate(kRows, kCols);
  const std::vector<float> expected = simulate_serially(chip, kSteps);
  // The chip really heats and cools: the result is far from the input.
  CHECK(largest_difference(expected, chip.temperature) > 1.0);

  SUBCASE("cpu0") {
    REQUIRE(hetero_tests::has_leaves(discovered, {"cpu0"}));
    rodinia::hotspot::Simulation simulation(rt, chip, kFastChip, "cpu0", "static");
    simulation.run(kSteps);
    CHECK(largest_difference(simulation.temperature(), expected) <= kToleranceKelvin);
    CHECK(hetero_tests::pieces_of(hetero_tests::last_region(rt)) ==
          std::vector<std::string>{"cpu0[0," + std::to_string(kRows) + ")"});
  }
  SUBCASE("opencl0") {
    if (!hetero_tests::has_leaves(discovered, {"opencl0"})) return;
    rodinia::hotspot::Simulation simulation(rt, chip, kFastChip, "opencl0", "static");
    simulation.run(kSteps);
    CHECK(largest_difference(simulation.temperature(), expected) <= kToleranceKelvin);
    CHECK(hetero_tests::pieces_of(hetero_tests::last_region(rt)) ==
          std::vector<std::string>{"opencl0[0," + std::to_string(kRows) + ")"});
  }
  SUBCASE("split over cpu0 and opencl0") {
    if (!hetero_tests::has_leaves(discovered, {"cpu0", "opencl0"})) return;
    hetero_tests::use_leaves(rt, discovered, {"cpu0", "opencl0"});
    rodinia::hotspot::Simulation simulation(rt, chip, kFastChip, "numa0", "percentage:[50,50]");
    const std::int64_t before = hetero_tests::moved(rt).host_to_device + hetero_tests::moved(rt).device_to_host;
    simulation.run(kSteps);
    const std::int64_t moved = hetero_tests::moved(rt).host_to_device + hetero_tests::moved(rt).device_to_host - before;
    CHECK(largest_difference(simulation.temperature(), expected) <= kToleranceKelvin);
    const std::int64_t half = (kRows * 50 + 50) / 100;
    CHECK(hetero_tests::pieces_of(hetero_tests::last_region(rt)) ==
          std::vector<std::string>{"cpu0[0," + std::to_string(half) + ")",
                                   "opencl0[" + std::to_string(half) + "," + std::to_string(kRows) + ")"});
    // opencl0 first takes its half of the grid (plus one halo row) and of
    // the power; then each step moves one row each way across the boundary;
    // reading the result brings opencl0's half back. Whole grids moving
    // every step would be about kSteps * kRows rows.
    const std::int64_t row = kCols * std::int64_t(sizeof(float)), own = kRows - half;
    MESSAGE("bytes moved by " << kSteps << " split steps: " << moved << " (" << moved / row << " rows)");
    CHECK(moved <= (3 * own + 1 + 2 * kSteps) * row);
  }
}
