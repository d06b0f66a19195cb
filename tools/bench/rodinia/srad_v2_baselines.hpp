// The plain baselines of srad_v2 that canopy-bench runs beside Canopy: the
// same diffusion written by hand with OpenMP (srad_v2_openmp.cpp, built
// -O3 -march=native) and in OpenCL C (srad_v2_opencl.cpp, on the same
// OpenCL device Canopy uses).
#pragma once

#include <cstdint>
#include <vector>

namespace canopy::backends::opencl {
class OpenCLDevice;
}

namespace canopy::bench::rodinia::srad_v2_baseline {

/// The image and the run's parameters (as rodinia::srad_v2::Parameters).
struct Problem {
  std::int64_t rows = 0, cols = 0;
  const float* image = nullptr;                 ///< rows x cols, row-major
  std::int64_t r1 = 0, r2 = 0, c1 = 0, c2 = 0;  ///< the region of interest, inclusive
  float lambda = 0;
  int iterations = 0;
};

/// Runs the iterations with OpenMP threads and writes the final image to
/// `result` (resized); returns the seconds the iterations took.
double run_openmp(const Problem& problem, std::vector<float>& result);

/// Runs the iterations on `device`: uploads the image, runs the three
/// kernels of each iteration (reading the region's sums back in between),
/// reads the image back; returns the seconds of all of it.
double run_opencl(backends::opencl::OpenCLDevice& device, const Problem& problem, std::vector<float>& result);

}  // namespace canopy::bench::rodinia::srad_v2_baseline
