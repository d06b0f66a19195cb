// hotspot's OpenCL baseline: the step written by hand in OpenCL C, one
// work-item per cell over a 2-D range (columns fastest) with the driver's
// work-group size, run on the same OpenCL device (context and queue) that
// Canopy uses. The timed part is what Canopy's run does: upload both grids,
// one kernel per step (arguments swapped between steps), read the result.
#include <chrono>
#include <string>

#include <canopy/backends/opencl/opencl_device.hpp>
#include <canopy/ir/error.hpp>

#include "hotspot_baselines.hpp"
#include "opencl_program.hpp"

namespace canopy::bench::rodinia::hotspot_baseline {

namespace {

constexpr const char* kSource = R"(
__kernel void hotspot_step(__global const float* temp, __global const float* power, __global float* next,
                           const int rows, const int cols, const float cap_1, const float rx_1,
                           const float ry_1, const float rz_1, const float ambient) {
  const int j = get_global_id(0), i = get_global_id(1);
  const int k = i * cols + j;
  const float t = temp[k];
  const float north = temp[i > 0 ? k - cols : k];
  const float south = temp[i < rows - 1 ? k + cols : k];
  const float west = temp[j > 0 ? k - 1 : k];
  const float east = temp[j < cols - 1 ? k + 1 : k];
  next[k] = t + cap_1 * (power[k] + (south + north - 2.0f * t) * ry_1 + (east + west - 2.0f * t) * rx_1 +
                         (ambient - t) * rz_1);
}
)";

}  // namespace

double run_opencl(backends::opencl::OpenCLDevice& device, const Problem& problem, std::vector<float>& result) {
  const std::string where = "the OpenCL hotspot baseline on " + device.info().name;
  opencl_program::Program program(device, kSource, "", where);
  cl_kernel kernel = program.kernel("hotspot_step");
  const std::size_t bytes = static_cast<std::size_t>(problem.rows * problem.cols) * sizeof(float);
  // Timed from the input in host memory: the buffers' creation counts.
  const auto start = std::chrono::steady_clock::now();
  opencl_program::Buffers buffers(device, {bytes, bytes, bytes});  // grid a, grid b, power
  const cl_int rows = static_cast<cl_int>(problem.rows), cols = static_cast<cl_int>(problem.cols);
  program.set(kernel, 1, buffers[2]);
  program.set_value(kernel, 3, rows);
  program.set_value(kernel, 4, cols);
  const float scalars[] = {problem.cap_1, problem.rx_1, problem.ry_1, problem.rz_1, problem.ambient};
  for (cl_uint s = 0; s < 5; ++s) program.set_value(kernel, 5 + s, scalars[s]);

  buffers.write(0, problem.temperature, bytes);
  buffers.write(2, problem.power, bytes);
  int current = 0;
  for (int k = 0; k < problem.steps; ++k) {
    program.set(kernel, 0, buffers[current]);
    program.set(kernel, 2, buffers[1 - current]);
    program.run(kernel, {std::size_t(cols), std::size_t(rows)});
    current = 1 - current;
  }
  result.resize(static_cast<std::size_t>(problem.rows * problem.cols));
  buffers.read(current, result.data(), bytes);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace canopy::bench::rodinia::hotspot_baseline
