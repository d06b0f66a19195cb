#include "stream_opencl_baseline.hpp"

#include <chrono>
#include <string>
#include <type_traits>

#include <canopy/ir/error.hpp>

namespace canopy::bench::opencl_baseline {

namespace {

using backends::opencl::check;

// The hand-written kernels; TYPE is float or double (set at build time).
constexpr const char* kSource = R"(#ifdef USE_FP64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif

__kernel void stream_copy(__global const TYPE* a, __global TYPE* c) {
  const size_t i = get_global_id(0);
  c[i] = a[i];
}

__kernel void stream_mul(__global TYPE* b, __global const TYPE* c, TYPE scalar) {
  const size_t i = get_global_id(0);
  b[i] = scalar * c[i];
}

__kernel void stream_add(__global const TYPE* a, __global const TYPE* b, __global TYPE* c) {
  const size_t i = get_global_id(0);
  c[i] = a[i] + b[i];
}

__kernel void stream_triad(__global TYPE* a, __global const TYPE* b, __global const TYPE* c, TYPE scalar) {
  const size_t i = get_global_id(0);
  a[i] = b[i] + scalar * c[i];
}

// Each work-item strides over the arrays; each group adds up its items'
// sums in local memory and writes one partial sum.
__kernel void stream_dot(__global const TYPE* a, __global const TYPE* b, __global TYPE* partial_sums,
                  __local TYPE* group_sums, long n) {
  const size_t lane = get_local_id(0);
  TYPE sum = 0;
  for (long i = get_global_id(0); i < n; i += get_global_size(0)) sum += a[i] * b[i];
  group_sums[lane] = sum;
  for (size_t width = get_local_size(0) / 2; width > 0; width /= 2) {
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lane < width) group_sums[lane] += group_sums[lane + width];
  }
  if (lane == 0) partial_sums[get_group_id(0)] = group_sums[0];
}
)";

constexpr const char* kKernelNames[] = {"stream_copy", "stream_mul", "stream_add", "stream_triad", "stream_dot"};
enum Which { kCopy, kMul, kAdd, kTriad, kDot };

std::string build_log(const backends::opencl::Api& api, cl_program program, cl_device_id device) {
  std::size_t size = 0;
  api.clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, 0, nullptr, &size);
  std::string log(size, '\0');
  if (size) api.clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, size, log.data(), nullptr);
  return log;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

template <class T>
struct StreamBaseline<T>::State {
  const backends::opencl::Api* api = nullptr;
  cl_program program = nullptr;
  cl_kernel kernels[5] = {};
  cl_mem arrays[3] = {};  // a, b, c
  cl_mem partial_sums = nullptr;
};

template <class T>
StreamBaseline<T>::StreamBaseline(backends::opencl::OpenCLDevice& device, std::int64_t n, int dot_groups,
                                  int dot_work_group)
    : device_(device),
      n_(n),
      dot_groups_(static_cast<std::size_t>(std::max(1, dot_groups))),
      dot_work_group_(static_cast<std::size_t>(std::max(1, dot_work_group))),
      state_(new State) {
  try {
    const auto& api = device.api();
    state_->api = &api;
    const std::string where = "the OpenCL STREAM baseline on " + device.info().name;
    if (std::is_same_v<T, double> && !device.info().fp64)
      throw Error(where + ": the device has no fp64; run the baseline with float");
    cl_int status = CL_SUCCESS;
    const char* text = kSource;
    state_->program = api.clCreateProgramWithSource(device.context(), 1, &text, nullptr, &status);
    check(status, "clCreateProgramWithSource", where);
    const std::string options = std::is_same_v<T, double> ? "-DTYPE=double -DUSE_FP64" : "-DTYPE=float";
    cl_device_id id = device.id();
    if (api.clBuildProgram(state_->program, 1, &id, options.c_str(), nullptr, nullptr) != CL_SUCCESS)
      throw Error(where + ": its kernels do not build:\n" + build_log(api, state_->program, id));
    for (int k = 0; k < 5; ++k) {
      state_->kernels[k] = api.clCreateKernel(state_->program, kKernelNames[k], &status);
      check(status, std::string("clCreateKernel ") + kKernelNames[k], where);
    }
    const double starts[3] = {kStartA, kStartB, kStartC};
    for (int a = 0; a < 3; ++a) {
      state_->arrays[a] = static_cast<cl_mem>(device.allocate(static_cast<std::size_t>(n) * sizeof(T)).handle);
      const T value = static_cast<T>(starts[a]);
      check(api.clEnqueueFillBuffer(device.queue(), state_->arrays[a], &value, sizeof value, 0,
                                    static_cast<std::size_t>(n) * sizeof(T), 0, nullptr, nullptr),
            "clEnqueueFillBuffer", where);
    }
    state_->partial_sums = static_cast<cl_mem>(device.allocate(dot_groups_ * sizeof(T)).handle);
    check(api.clFinish(device.queue()), "clFinish", where);
  } catch (...) {
    release();
    throw;
  }
}

template <class T>
StreamBaseline<T>::~StreamBaseline() {
  release();
}

template <class T>
void StreamBaseline<T>::release() noexcept {
  if (!state_) return;
  const auto* api = state_->api;
  if (api) {
    for (cl_mem array : state_->arrays)
      if (array) api->clReleaseMemObject(array);
    if (state_->partial_sums) api->clReleaseMemObject(state_->partial_sums);
    for (cl_kernel kernel : state_->kernels)
      if (kernel) api->clReleaseKernel(kernel);
    if (state_->program) api->clReleaseProgram(state_->program);
  }
  delete state_;
  state_ = nullptr;
}

// Sets the arguments of an element-wise kernel and runs it over n_ work-items.
template <class T>
double StreamBaseline<T>::launch_elementwise(int which) {
  const auto& api = *state_->api;
  cl_kernel kernel = state_->kernels[which];
  cl_mem* arrays = state_->arrays;  // a, b, c
  const T scalar = static_cast<T>(kScalar);
  const std::string where = "the OpenCL STREAM baseline";
  auto set_arrays = [&](std::initializer_list<int> order) {
    cl_uint index = 0;
    for (int a : order) check(api.clSetKernelArg(kernel, index++, sizeof(cl_mem), &arrays[a]), "clSetKernelArg", where);
    return index;
  };
  cl_uint next = 0;
  switch (which) {
    case kCopy: next = set_arrays({0, 2}); break;
    case kMul: next = set_arrays({1, 2}); break;
    case kAdd: next = set_arrays({0, 1, 2}); break;
    default: next = set_arrays({0, 1, 2}); break;
  }
  if (which == kMul || which == kTriad)
    check(api.clSetKernelArg(kernel, next, sizeof scalar, &scalar), "clSetKernelArg", where);
  const auto global = static_cast<std::size_t>(n_);
  const auto start = std::chrono::steady_clock::now();
  check(api.clEnqueueNDRangeKernel(device_.queue(), kernel, 1, nullptr, &global, nullptr, 0, nullptr, nullptr),
        "clEnqueueNDRangeKernel", where);
  check(api.clFinish(device_.queue()), "clFinish", where);
  return seconds_since(start);
}

template <class T>
double StreamBaseline<T>::copy() {
  return launch_elementwise(kCopy);
}
template <class T>
double StreamBaseline<T>::mul() {
  return launch_elementwise(kMul);
}
template <class T>
double StreamBaseline<T>::add() {
  return launch_elementwise(kAdd);
}
template <class T>
double StreamBaseline<T>::triad() {
  return launch_elementwise(kTriad);
}

template <class T>
double StreamBaseline<T>::dot(double* dot_value) {
  const auto& api = *state_->api;
  cl_kernel kernel = state_->kernels[kDot];
  const std::string where = "the OpenCL STREAM baseline";
  const cl_long n = n_;
  check(api.clSetKernelArg(kernel, 0, sizeof(cl_mem), &state_->arrays[0]), "clSetKernelArg", where);
  check(api.clSetKernelArg(kernel, 1, sizeof(cl_mem), &state_->arrays[1]), "clSetKernelArg", where);
  check(api.clSetKernelArg(kernel, 2, sizeof(cl_mem), &state_->partial_sums), "clSetKernelArg", where);
  check(api.clSetKernelArg(kernel, 3, dot_work_group_ * sizeof(T), nullptr), "clSetKernelArg", where);
  check(api.clSetKernelArg(kernel, 4, sizeof n, &n), "clSetKernelArg", where);
  const std::size_t global = dot_groups_ * dot_work_group_;
  std::vector<T> partial_sums(dot_groups_);
  const auto start = std::chrono::steady_clock::now();
  check(api.clEnqueueNDRangeKernel(device_.queue(), kernel, 1, nullptr, &global, &dot_work_group_, 0, nullptr, nullptr),
        "clEnqueueNDRangeKernel", where);
  check(api.clEnqueueReadBuffer(device_.queue(), state_->partial_sums, CL_TRUE, 0, dot_groups_ * sizeof(T),
                                partial_sums.data(), 0, nullptr, nullptr),
        "clEnqueueReadBuffer", where);
  double sum = 0;
  for (T partial : partial_sums) sum += static_cast<double>(partial);
  const double seconds = seconds_since(start);
  if (dot_value) *dot_value = sum;
  return seconds;
}

template <class T>
StreamTimes StreamBaseline<T>::run() {
  StreamTimes times;
  times.copy = copy();
  times.mul = mul();
  times.add = add();
  times.triad = triad();
  times.dot = dot(&times.dot_value);
  return times;
}

template <class T>
std::vector<T> StreamBaseline<T>::read(int which) const {
  std::vector<T> values(static_cast<std::size_t>(n_));
  check(state_->api->clEnqueueReadBuffer(device_.queue(), state_->arrays[which], CL_TRUE, 0, values.size() * sizeof(T),
                                         values.data(), 0, nullptr, nullptr),
        "clEnqueueReadBuffer", "the OpenCL STREAM baseline");
  return values;
}

template <class T>
std::vector<T> StreamBaseline<T>::read_a() const {
  return read(0);
}
template <class T>
std::vector<T> StreamBaseline<T>::read_b() const {
  return read(1);
}
template <class T>
std::vector<T> StreamBaseline<T>::read_c() const {
  return read(2);
}

template class StreamBaseline<float>;
template class StreamBaseline<double>;

}  // namespace canopy::bench::opencl_baseline
