// pathfinder's OpenCL baseline: one row written by hand in OpenCL C, one
// work-item per column with the driver's work-group size, on the same OpenCL
// device (context and queue) that Canopy uses. Timed: upload the walls, one
// kernel per row (the cost buffers swapped between rows), read the last row.
#include <chrono>
#include <string>

#include <canopy/backends/opencl/opencl_device.hpp>

#include "opencl_program.hpp"
#include "pathfinder_baselines.hpp"

namespace canopy::bench::rodinia::pathfinder_baseline {

namespace {

constexpr const char* kSource = R"(
__kernel void pathfinder_step(__global const int* walls, __global const int* cost, __global int* next,
                              const int cols, const long row_offset) {
  const int n = get_global_id(0);
  int best = cost[n];
  if (n > 0) best = min(best, cost[n - 1]);
  if (n < cols - 1) best = min(best, cost[n + 1]);
  next[n] = walls[row_offset + n] + best;
}
)";

}  // namespace

double run_opencl(backends::opencl::OpenCLDevice& device, const Problem& problem, std::vector<std::int32_t>& result) {
  const std::string where = "the OpenCL pathfinder baseline on " + device.info().name;
  opencl_program::Program program(device, kSource, "", where);
  cl_kernel step = program.kernel("pathfinder_step");
  const std::size_t row_bytes = std::size_t(problem.cols) * sizeof(std::int32_t);
  // Timed from the input in host memory: the buffers' creation counts.
  const auto start = std::chrono::steady_clock::now();
  opencl_program::Buffers buffers(device, {row_bytes * std::size_t(problem.rows), row_bytes, row_bytes});
  program.set(step, 0, buffers[0]);
  program.set_value(step, 3, cl_int(problem.cols));

  buffers.write(0, problem.walls, row_bytes * std::size_t(problem.rows));
  buffers.write(1, problem.walls, row_bytes);  // row 0 is the first row's cost
  int current = 1;
  for (std::int64_t t = 1; t < problem.rows; ++t) {
    program.set(step, 1, buffers[current]);
    program.set(step, 2, buffers[3 - current]);
    program.set_value(step, 4, cl_long(t * problem.cols));
    program.run(step, {std::size_t(problem.cols)});
    current = 3 - current;
  }
  result.resize(std::size_t(problem.cols));
  buffers.read(current, result.data(), row_bytes);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace canopy::bench::rodinia::pathfinder_baseline
