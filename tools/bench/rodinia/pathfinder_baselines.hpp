// The plain baselines of pathfinder that canopy-bench runs beside Canopy:
// the same dynamic programming written by hand with OpenMP
// (pathfinder_openmp.cpp, built -O3 -march=native) and in OpenCL C
// (pathfinder_opencl.cpp, on the same OpenCL device Canopy uses).
#pragma once

#include <cstdint>
#include <vector>

namespace canopy::backends::opencl {
class OpenCLDevice;
}

namespace canopy::bench::rodinia::pathfinder_baseline {

/// The walls: `rows` rows of `cols` columns, row-major.
struct Problem {
  std::int64_t rows = 0, cols = 0;
  const std::int32_t* walls = nullptr;
};

/// Runs every row with OpenMP threads and writes the last row's costs to
/// `result` (resized); returns the seconds the rows took.
double run_openmp(const Problem& problem, std::vector<std::int32_t>& result);

/// Runs every row on `device`: uploads the walls, runs one kernel per row,
/// reads the last row's costs back; returns the seconds of all of it.
double run_opencl(backends::opencl::OpenCLDevice& device, const Problem& problem, std::vector<std::int32_t>& result);

}  // namespace canopy::bench::rodinia::pathfinder_baseline
