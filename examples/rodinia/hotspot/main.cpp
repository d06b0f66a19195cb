// hotspot: Rodinia's thermal simulation on Canopy. Reads the command line and
// the files of Rodinia 3.1's OpenMP version and writes its output file:
//
//   hotspot <grid_rows> <grid_cols> <sim_time> <no. of threads> <temp_file> <power_file> <output_file>
//
// <no. of threads> is read and ignored: Canopy runs on the leaves of its
// location tree. Options (anywhere on the line):
//   --generate     write a generated chip (fixed seed) to <temp_file> and <power_file> first
//   --check        compare the result with a serial simulation and say "Validation: ok"
//   --policy P     how each step is split over the leaves (default static)
//   --at LOCATION  where the steps run (default: where the grids are, the root)
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <canopy/canopy.hpp>

#include "rodinia/hotspot/hotspot.hpp"

namespace {

constexpr const char* kUsage =
    "hotspot <grid_rows> <grid_cols> <sim_time> <no. of threads> <temp_file> <power_file> <output_file>\n"
    "       [--generate] [--check] [--policy P] [--at LOCATION]";

// The same steps, one cell at a time, in plain C++.
std::vector<float> simulate_serially(const rodinia::hotspot::Chip& chip, int steps) {
  const auto c = rodinia::hotspot::Coefficients::of(chip.rows, chip.cols);
  const std::int64_t rows = chip.rows, cols = chip.cols;
  std::vector<float> t = chip.temperature, next(t.size());
  for (int k = 0; k < steps; ++k) {
    for (std::int64_t i = 0; i < rows; ++i)
      for (std::int64_t j = 0; j < cols; ++j) {
        auto at = [&](std::int64_t r, std::int64_t q) { return t[std::size_t(r * cols + q)]; };
        next[std::size_t(i * cols + j)] = rodinia::hotspot::next_temperature(
            at(i, j), at(i > 0 ? i - 1 : i, j), at(i < rows - 1 ? i + 1 : i, j), at(i, j > 0 ? j - 1 : j),
            at(i, j < cols - 1 ? j + 1 : j), chip.power[std::size_t(i * cols + j)], c);
      }
    t.swap(next);
  }
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<const char*> positional;
  bool generate = false, check = false;
  std::string policy = "static", location;
  for (int a = 1; a < argc; ++a) {
    if (!std::strcmp(argv[a], "--generate"))
      generate = true;
    else if (!std::strcmp(argv[a], "--check"))
      check = true;
    else if (!std::strcmp(argv[a], "--policy") && a + 1 < argc)
      policy = argv[++a];
    else if (!std::strcmp(argv[a], "--at") && a + 1 < argc)
      location = argv[++a];
    else if (argv[a][0] == '-' && argv[a][1] == '-')
      rodinia::usage_error("hotspot", std::string("unknown option ") + argv[a], kUsage);
    else
      positional.push_back(argv[a]);
  }
  if (positional.size() != 7) rodinia::usage_error("hotspot", "expected 7 arguments", kUsage);
  const auto rows = rodinia::parse_integer("hotspot", "<grid_rows>", positional[0], kUsage);
  const auto cols = rodinia::parse_integer("hotspot", "<grid_cols>", positional[1], kUsage);
  const auto steps = rodinia::parse_integer("hotspot", "<sim_time>", positional[2], kUsage);
  rodinia::parse_integer("hotspot", "<no. of threads>", positional[3], kUsage);
  const std::string temp_file = positional[4], power_file = positional[5], output_file = positional[6];

  try {
    rodinia::hotspot::Chip chip;
    if (generate) {
      chip = rodinia::hotspot::generate(rows, cols);
      rodinia::hotspot::write_values(temp_file, chip.temperature);
      rodinia::hotspot::write_values(power_file, chip.power);
      std::printf("Wrote a generated %lldx%lld chip to %s and %s\n", rows, cols, temp_file.c_str(), power_file.c_str());
    }
    // Read back what was written, so a generated run computes on exactly what the files hold.
    chip = {rows, cols, rodinia::hotspot::read_values(temp_file, rows * cols),
            rodinia::hotspot::read_values(power_file, rows * cols)};

    canopy::Runtime rt;
    rodinia::hotspot::Simulation simulation(rt, chip, location, policy);
    std::printf("Start computing the transient temperature\n");
    const auto start = std::chrono::steady_clock::now();
    simulation.run(static_cast<int>(steps));
    const std::vector<float> result = simulation.temperature();
    const double seconds = rodinia::seconds_since(start);
    std::printf("Ending simulation\n");
    std::printf("Total time: %.3f seconds\n", seconds);
    rodinia::hotspot::write_output(output_file, result);

    if (check) {
      // Tolerance: float arithmetic in a different order (vector units, fused
      // multiply-adds on other devices) differs by a few ulps per step; the
      // step is a contraction, so differences stay near that size.
      const std::vector<float> expected = simulate_serially(chip, static_cast<int>(steps));
      double largest = 0;
      for (std::size_t k = 0; k < expected.size(); ++k)
        largest = rodinia::worse(largest, double(std::fabs(result[k] - expected[k])));
      if (largest <= 1e-3)
        std::printf("Validation: ok (largest difference from a serial run: %g K)\n", largest);
      else
        std::printf("Validation: FAILED (largest difference from a serial run: %g K)\n", largest);
      if (largest > 1e-3) return 1;
    }
  } catch (const canopy::Error& e) {
    rodinia::report_error("hotspot", e.what());
    return 1;
  }
  return 0;
}
