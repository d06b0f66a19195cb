// The plain OpenCL baseline of canopy-bench's STREAM comparison: BabelStream's
// five kernels written by hand in OpenCL C, as a programmer would without
// Canopy, run on the same OpenCL device (its context and queue) as Canopy's
// code. copy, mul, add and triad run one work-item per element with the
// driver's default work-group size (a NULL local size); dot runs a fixed,
// small number of work-groups (2 groups of 16 work-items by default, what
// BabelStream's OpenCL version uses on a CPU device like PoCL's) that each
// stride over the arrays, reduce in local memory and write one partial sum,
// which the host adds up.
//
// Each kernel is timed with the host clock around its enqueue and clFinish
// (dot's time includes reading the partial sums back), as BabelStream does.
#pragma once

#include <cstdint>
#include <vector>

#include <canopy/backends/opencl/opencl_device.hpp>

namespace canopy::bench::opencl_baseline {

/// Seconds each kernel took in one run, and dot's result.
struct StreamTimes {
  double copy = 0, mul = 0, add = 0, triad = 0, dot = 0;
  double dot_value = 0;
};

/// BabelStream's kernels on arrays of T (float or double) on one OpenCL device.
template <class T>
class StreamBaseline {
 public:
  /// The values BabelStream starts the arrays with, and its scalar.
  static constexpr double kStartA = 0.1, kStartB = 0.2, kStartC = 0.0, kScalar = 0.4;

  /// Builds the kernels on `device` and allocates a, b and c of `n` elements
  /// there, set to kStartA, kStartB, kStartC. Throws canopy::Error when the
  /// device cannot build them (double needs fp64) or hold the arrays.
  StreamBaseline(backends::opencl::OpenCLDevice& device, std::int64_t n, int dot_groups = 2, int dot_work_group = 16);
  ~StreamBaseline();
  StreamBaseline(const StreamBaseline&) = delete;
  StreamBaseline& operator=(const StreamBaseline&) = delete;

  /// Runs copy, mul, add, triad and dot once each, in that order (BabelStream's).
  StreamTimes run();
  /// Runs one kernel: seconds it took (dot's value goes to `dot_value` when given).
  double copy();
  double mul();
  double add();
  double triad();
  double dot(double* dot_value = nullptr);

  /// The arrays' contents now (for checking results).
  std::vector<T> read_a() const;
  std::vector<T> read_b() const;
  std::vector<T> read_c() const;

  std::int64_t size() const { return n_; }

 private:
  struct State;
  double launch_elementwise(int which);
  void release() noexcept;
  std::vector<T> read(int which) const;

  backends::opencl::OpenCLDevice& device_;
  std::int64_t n_;
  std::size_t dot_groups_, dot_work_group_;
  State* state_;
};

extern template class StreamBaseline<float>;
extern template class StreamBaseline<double>;

}  // namespace canopy::bench::opencl_baseline
