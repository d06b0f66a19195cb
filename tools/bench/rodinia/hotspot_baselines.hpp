// The plain baselines of hotspot that canopy-bench runs beside Canopy: the
// same simulation written by hand with OpenMP (hotspot_openmp.cpp, built
// -O3 -march=native) and in OpenCL C (hotspot_opencl.cpp, on the same
// OpenCL device Canopy uses).
#pragma once

#include <cstdint>
#include <vector>

namespace canopy::backends::opencl {
class OpenCLDevice;
}

namespace canopy::bench::rodinia::hotspot_baseline {

/// The grid and what a step needs (the coefficients of rodinia::hotspot::Coefficients).
struct Problem {
  std::int64_t rows = 0, cols = 0;
  const float* temperature = nullptr;  ///< rows x cols, row-major
  const float* power = nullptr;        ///< rows x cols, row-major
  float cap_1 = 0, rx_1 = 0, ry_1 = 0, rz_1 = 0, ambient = 0;
  int steps = 0;
};

/// Runs `problem.steps` steps with OpenMP threads and writes the final
/// temperatures to `result` (resized); returns the seconds the steps took.
double run_openmp(const Problem& problem, std::vector<float>& result);

/// Runs the steps on `device`: uploads both grids, runs one kernel per step,
/// reads the result back; returns the seconds of all of it.
double run_opencl(backends::opencl::OpenCLDevice& device, const Problem& problem, std::vector<float>& result);

}  // namespace canopy::bench::rodinia::hotspot_baseline
