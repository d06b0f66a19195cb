// Rodinia's hotspot in Canopy: the transient thermal simulation of a chip.
// A grid of cells, each with a temperature and a dissipated power, is
// advanced step by step; every step computes each cell's new temperature
// from its own, its four neighbours' (a cell at the edge of the chip counts
// itself in place of the neighbour it lacks), its power and the ambient
// temperature. Two grids take turns as input and output, and stay on the
// runtime for the whole run: split over devices, each step moves only the
// rows at the boundary between two pieces.
//
// Shared by the `hotspot` example program and `canopy-bench rodinia`; the
// chip constants, file formats and command line are Rodinia 3.1's.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include <canopy/canopy.hpp>

#include "rodinia/common/rodinia.hpp"

namespace rodinia::hotspot {

/// The ambient temperature (kelvin) every cell loses heat to.
inline constexpr float kAmbient = 80.0f;

/// The coefficients of one step for a grid of `rows` x `cols` cells on
/// Rodinia's 16 mm x 16 mm, 0.5 mm thick silicon chip: the step over the
/// thermal capacitance (cap_1) and the inverse thermal resistances to the
/// horizontal (rx_1) and vertical (ry_1) neighbours and to the ambient (rz_1).
struct Coefficients {
  float cap_1 = 0, rx_1 = 0, ry_1 = 0, rz_1 = 0;

  static Coefficients of(std::int64_t rows, std::int64_t cols) {
    const float chip_thickness = 0.0005f, chip_height = 0.016f, chip_width = 0.016f;
    const float specific_heat = 1.75e6f, conductivity = 100.0f, capacitance_factor = 0.5f;
    const float max_power_density = 3.0e6f, precision = 0.001f;
    const float cell_height = chip_height / float(rows), cell_width = chip_width / float(cols);
    const float cap = capacitance_factor * specific_heat * chip_thickness * cell_width * cell_height;
    const float rx = cell_width / (2.0f * conductivity * chip_thickness * cell_height);
    const float ry = cell_height / (2.0f * conductivity * chip_thickness * cell_width);
    const float rz = chip_thickness / (conductivity * cell_height * cell_width);
    const float max_slope = max_power_density / (capacitance_factor * chip_thickness * specific_heat);
    const float step = precision / max_slope / 1000.0f;
    return {step / cap, 1.0f / rx, 1.0f / ry, 1.0f / rz};
  }
};

/// A chip: its initial temperatures and its powers, row-major.
struct Chip {
  std::int64_t rows = 0, cols = 0;
  std::vector<float> temperature, power;
};

/// A chip with smooth temperatures around 330 K and a few hot blocks of
/// power over a cool background; the same for the same arguments everywhere.
inline Chip generate(std::int64_t rows, std::int64_t cols, std::uint64_t seed = 7) {
  Random random(seed);
  Chip chip{rows, cols, std::vector<float>(std::size_t(rows * cols)), std::vector<float>(std::size_t(rows * cols))};
  const double pi = 3.14159265358979323846;
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < cols; ++j) {
      const double wave = std::sin(2 * pi * double(i) / double(rows)) * std::cos(2 * pi * double(j) / double(cols));
      chip.temperature[std::size_t(i * cols + j)] = float(330.0 + 8.0 * wave + random.uniform(-1.0, 1.0));
      chip.power[std::size_t(i * cols + j)] = float(random.uniform(0.0, 2.0e-4));
    }
  for (int block = 0; block < 6; ++block) {  // hot units: a few times the background power
    const std::int64_t top = random.below(rows), left = random.below(cols);
    const std::int64_t height = 1 + rows / 8, width = 1 + cols / 8;
    const float power = float(random.uniform(1.0e-3, 3.0e-3));
    for (std::int64_t i = top; i < std::min(rows, top + height); ++i)
      for (std::int64_t j = left; j < std::min(cols, left + width); ++j) chip.power[std::size_t(i * cols + j)] = power;
  }
  return chip;
}

/// Reads `count` values, one per line, as Rodinia's temp_N and power_N files
/// hold them. Throws canopy::Error naming the file and the line at fault.
inline std::vector<float> read_values(const std::string& path, std::int64_t count) {
  rodinia::Numbers numbers(path);
  if (!numbers.opened()) throw canopy::Error("cannot open '" + path + "' for reading; check the path");
  std::vector<float> values(static_cast<std::size_t>(count));
  for (std::int64_t k = 0; k < count; ++k)
    if (!numbers.next(values[std::size_t(k)]))
      throw canopy::Error("'" + path + "' value " + std::to_string(k + 1) + ": expected a number (the file needs " +
                          std::to_string(count) + " lines, one value per cell)");
  return values;
}

/// Writes one value per line ("%g"), the input format of read_values.
inline void write_values(const std::string& path, const std::vector<float>& values) {
  rodinia::TextOut out(path);
  for (float v : values) out.general(double(v)).put('\n');
  if (!out.close()) throw canopy::Error("cannot write '" + path + "'");
}

/// Writes Rodinia's output file: "index<TAB>temperature" for each cell, row-major.
inline void write_output(const std::string& path, const std::vector<float>& temperature) {
  rodinia::TextOut out(path);
  for (std::size_t k = 0; k < temperature.size(); ++k)
    out.integer(static_cast<long long>(k)).put('\t').general(double(temperature[k])).put('\n');
  if (!out.close()) throw canopy::Error("cannot write '" + path + "'");
}

/// The new temperature of one cell from its own (t), its neighbours' above
/// and below (north, south) and beside (west, east), its power and the
/// coefficients; the baselines and the tests evaluate the same expression.
template <class T, class C>
T next_temperature(T t, T north, T south, T west, T east, T power, const C& c) {
  return t + c.cap_1 * (power + (south + north - 2.0f * t) * c.ry_1 + (east + west - 2.0f * t) * c.rx_1 +
                        (kAmbient - t) * c.rz_1);
}

/// One step: `next` from `temperature` and `power`. Rows are clamped with
/// select (the footprint stays a stencil of one row each way, so a split
/// moves one halo row); columns with a conditional load, which the CPU's
/// vectoriser turns into masked loads.
using StepKernel = canopy::Kernel<void(canopy::Out<float, 2>, canopy::In<float, 2>, canopy::In<float, 2>,
                                       canopy::Val<float>, canopy::Val<float>, canopy::Val<float>, canopy::Val<float>)>;

inline const StepKernel& step_kernel() {
  using namespace canopy;
  static const StepKernel kernel("hotspot_step",
                                 [](Out<float, 2> next, In<float, 2> temperature, In<float, 2> power, Val<float> cap_1,
                                    Val<float> rx_1, Val<float> ry_1, Val<float> rz_1) {
                                   Idx i = index(0), j = index(1);
                                   const Idx rows = temperature.extent(0), cols = temperature.extent(1);
                                   const Value<float> t = temperature(i, j);
                                   const Value<float> north = temperature(select(i > 0, i - 1, i), j);
                                   const Value<float> south = temperature(select(i < rows - 1, i + 1, i), j);
                                   Var<float> west = t, east = t;
                                   If(j > 0, [&] { west = temperature(i, j - 1); });
                                   If(j < cols - 1, [&] { east = temperature(i, j + 1); });
                                   struct {
                                     Value<float> cap_1, rx_1, ry_1, rz_1;
                                   } c{cap_1, rx_1, ry_1, rz_1};
                                   next(i, j) = next_temperature(t, north, south, west.value(), east.value(),
                                                                 power(i, j).value(), c);
                                 },
                                 {"next", "temperature", "power", "cap_1", "rx_1", "ry_1", "rz_1"});
  return kernel;
}

/// A simulation on a runtime: the chip's grids live there from construction
/// to destruction, and run() advances them.
class Simulation {
 public:
  /// Places the chip's grids on `rt` (at the hierarchy's root) and fills
  /// them. Regions run at `location` (empty: where the arrays are) split by
  /// `policy`.
  Simulation(canopy::Runtime& rt, const Chip& chip, std::string location = "", std::string policy = "static")
      : Simulation(rt, chip, Coefficients::of(chip.rows, chip.cols), std::move(location), std::move(policy)) {}

  /// The same with other coefficients than Rodinia's chip has (a chip of
  /// other materials or another time step).
  Simulation(canopy::Runtime& rt, const Chip& chip, const Coefficients& coefficients, std::string location,
             std::string policy)
      : rt_(rt),
        rows_(chip.rows),
        cols_(chip.cols),
        coefficients_(coefficients),
        location_(std::move(location)),
        policy_(std::move(policy)),
        grids_{rt.array<float, 2>(canopy::Shape(rows_, cols_), canopy::named("hotspot_temperature_a")),
               // Written whole by the first step before anything reads it.
               rt.array<float, 2>(canopy::Shape(rows_, cols_),
                                  canopy::named("hotspot_temperature_b") | canopy::uninitialized())},
        power_(rt.array<float, 2>(canopy::Shape(rows_, cols_), canopy::named("hotspot_power"))) {
    auto t = grids_[0].host();
    std::copy(chip.temperature.begin(), chip.temperature.end(), t.begin());
    auto p = power_.host();
    std::copy(chip.power.begin(), chip.power.end(), p.begin());
  }

  /// Advances `steps` steps and waits for them.
  void run(int steps) {
    const Coefficients& c = coefficients_;
    for (int k = 0; k < steps; ++k) {
      const auto& from = grids_[current_];
      const auto& to = grids_[1 - current_];
      rt_.region(step_kernel())
          .over(rows_, cols_)
          .at(location_)
          .policy(policy_)
          .launch(to, from, power_, c.cap_1, c.rx_1, c.ry_1, c.rz_1);
      current_ = 1 - current_;
    }
    rt_.pause();
  }

  /// The current temperatures, row-major (read back from wherever they are).
  std::vector<float> temperature() const {
    auto view = temperature_view();
    return std::vector<float>(view.begin(), view.end());
  }
  /// The same in the grid's own host memory, without a copy where it is
  /// there already; valid until the next run().
  canopy::HostView<const float, 2> temperature_view() const { return grids_[current_].host_read(); }

 private:
  canopy::Runtime& rt_;
  std::int64_t rows_, cols_;
  Coefficients coefficients_;
  std::string location_, policy_;
  canopy::Array<float, 2> grids_[2];
  canopy::Array<float, 2> power_;
  int current_ = 0;
};

}  // namespace rodinia::hotspot
