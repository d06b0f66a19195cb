// srad_v2's OpenCL baseline: the three steps of an iteration written by hand
// in OpenCL C on the same OpenCL device (context and queue) that Canopy
// uses. The region of interest's sums run one work-item per row of the
// region (each adds its row in double and writes its two partial sums,
// which the host reads back and adds); the two image kernels run one
// work-item per pixel over a 2-D range (columns fastest) with the driver's
// work-group size. Timed: upload the image, the iterations, read it back.
#include <chrono>
#include <string>
#include <vector>

#include <canopy/backends/opencl/opencl_device.hpp>

#include "opencl_program.hpp"
#include "srad_v2_baselines.hpp"

namespace canopy::bench::rodinia::srad_v2_baseline {

namespace {

constexpr const char* kSource = R"(
#pragma OPENCL EXTENSION cl_khr_fp64 : enable

__kernel void srad_roi_sums(__global const float* image, __global double* partial, const int cols,
                            const int r1, const int c1, const int c2) {
  const int r = get_global_id(0);
  const int base = (r1 + r) * cols;
  double sum = 0, sum2 = 0;
  for (int j = c1; j <= c2; ++j) {
    const double pixel = image[base + j];
    sum += pixel;
    sum2 += pixel * pixel;
  }
  partial[2 * r] = sum;
  partial[2 * r + 1] = sum2;
}

__kernel void srad_coefficients(__global const float* image, __global float* dn_out, __global float* ds_out,
                                __global float* dw_out, __global float* de_out, __global float* c_out,
                                const int rows, const int cols, const float q0sqr) {
  const int j = get_global_id(0), i = get_global_id(1);
  const int k = i * cols + j;
  const float jc = image[k];
  const float dn = image[i > 0 ? k - cols : k] - jc;
  const float ds = image[i < rows - 1 ? k + cols : k] - jc;
  const float dw = image[j > 0 ? k - 1 : k] - jc;
  const float de = image[j < cols - 1 ? k + 1 : k] - jc;
  dn_out[k] = dn;
  ds_out[k] = ds;
  dw_out[k] = dw;
  de_out[k] = de;
  const float g2 = (dn * dn + ds * ds + dw * dw + de * de) / (jc * jc);
  const float l = (dn + ds + dw + de) / jc;
  const float num = 0.5f * g2 - (1.0f / 16.0f) * (l * l);
  const float den = 1.0f + 0.25f * l;
  const float qsqr = num / (den * den);
  const float ratio = (qsqr - q0sqr) / (q0sqr * (1.0f + q0sqr));
  const float c = 1.0f / (1.0f + ratio);
  c_out[k] = c < 0.0f ? 0.0f : (c > 1.0f ? 1.0f : c);
}

__kernel void srad_update(__global float* image, __global const float* c, __global const float* dn,
                          __global const float* ds, __global const float* dw, __global const float* de,
                          const int rows, const int cols, const float lambda) {
  const int j = get_global_id(0), i = get_global_id(1);
  const int k = i * cols + j;
  const float cc = c[k];
  const float cs = c[i < rows - 1 ? k + cols : k];
  const float ce = c[j < cols - 1 ? k + 1 : k];
  image[k] = image[k] + 0.25f * lambda * (cc * dn[k] + cs * ds[k] + cc * dw[k] + ce * de[k]);
}
)";

}  // namespace

double run_opencl(backends::opencl::OpenCLDevice& device, const Problem& problem, std::vector<float>& result) {
  const std::string where = "the OpenCL srad_v2 baseline on " + device.info().name;
  opencl_program::Program program(device, kSource, "-cl-std=CL1.2", where);
  cl_kernel sums = program.kernel("srad_roi_sums");
  cl_kernel coefficients = program.kernel("srad_coefficients");
  cl_kernel update = program.kernel("srad_update");
  const std::size_t pixels = static_cast<std::size_t>(problem.rows * problem.cols), bytes = pixels * sizeof(float);
  const std::int64_t roi_rows = problem.r2 - problem.r1 + 1;
  enum { kImage, kC, kDn, kDs, kDw, kDe, kPartial };
  // Timed from the input in host memory: the buffers' creation counts.
  const auto start = std::chrono::steady_clock::now();
  opencl_program::Buffers buffers(
      device, {bytes, bytes, bytes, bytes, bytes, bytes, std::size_t(roi_rows) * 2 * sizeof(double)});
  const cl_int rows = cl_int(problem.rows), cols = cl_int(problem.cols);
  program.set(sums, 0, buffers[kImage]);
  program.set(sums, 1, buffers[kPartial]);
  program.set_value(sums, 2, cols);
  program.set_value(sums, 3, cl_int(problem.r1));
  program.set_value(sums, 4, cl_int(problem.c1));
  program.set_value(sums, 5, cl_int(problem.c2));
  program.set(coefficients, 0, buffers[kImage]);
  program.set(coefficients, 1, buffers[kDn]);
  program.set(coefficients, 2, buffers[kDs]);
  program.set(coefficients, 3, buffers[kDw]);
  program.set(coefficients, 4, buffers[kDe]);
  program.set(coefficients, 5, buffers[kC]);
  program.set_value(coefficients, 6, rows);
  program.set_value(coefficients, 7, cols);
  const cl_mem update_buffers[] = {buffers[kImage], buffers[kC],  buffers[kDn],
                                   buffers[kDs],    buffers[kDw], buffers[kDe]};
  for (cl_uint a = 0; a < 6; ++a) program.set(update, a, update_buffers[a]);
  program.set_value(update, 6, rows);
  program.set_value(update, 7, cols);
  program.set_value(update, 8, problem.lambda);
  const double roi_pixels = double(roi_rows * (problem.c2 - problem.c1 + 1));
  std::vector<double> partial(std::size_t(roi_rows) * 2);

  buffers.write(kImage, problem.image, bytes);
  for (int iteration = 0; iteration < problem.iterations; ++iteration) {
    program.run(sums, {std::size_t(roi_rows)});
    buffers.read(kPartial, partial.data(), partial.size() * sizeof(double));
    double sum = 0, sum2 = 0;
    for (std::size_t r = 0; r < partial.size(); r += 2) sum += partial[r], sum2 += partial[r + 1];
    const double mean = sum / roi_pixels;
    const float q0sqr = float((sum2 / roi_pixels - mean * mean) / (mean * mean));
    program.set_value(coefficients, 8, q0sqr);
    program.run(coefficients, {std::size_t(cols), std::size_t(rows)});
    program.run(update, {std::size_t(cols), std::size_t(rows)});
  }
  result.resize(pixels);
  buffers.read(kImage, result.data(), bytes);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace canopy::bench::rodinia::srad_v2_baseline
