// What the hand-written OpenCL baselines of the Rodinia workloads share: a
// program built from OpenCL C on one device with its kernels, and a set of
// buffers there, both released when they go out of scope. Every call goes
// through the device's function table (backends/opencl/api.hpp) and throws
// canopy::Error naming the baseline and the call that failed.
#pragma once

#include <initializer_list>
#include <map>
#include <string>
#include <vector>

#include <canopy/backends/opencl/opencl_device.hpp>
#include <canopy/ir/error.hpp>

namespace canopy::bench::rodinia::opencl_program {

/// An OpenCL program built from source on one device, and its kernels by name.
class Program {
 public:
  /// Builds `source` with `options`; `where` names the baseline in errors
  /// (a failed build throws with the build log).
  Program(backends::opencl::OpenCLDevice& device, const char* source, const std::string& options, std::string where)
      : device_(device), api_(device.api()), where_(std::move(where)) {
    cl_int status = CL_SUCCESS;
    program_ = api_.clCreateProgramWithSource(device.context(), 1, &source, nullptr, &status);
    backends::opencl::check(status, "clCreateProgramWithSource", where_);
    cl_device_id id = device.id();
    if (api_.clBuildProgram(program_, 1, &id, options.c_str(), nullptr, nullptr) != CL_SUCCESS) {
      std::size_t size = 0;
      api_.clGetProgramBuildInfo(program_, id, CL_PROGRAM_BUILD_LOG, 0, nullptr, &size);
      std::string log(size, '\0');
      if (size) api_.clGetProgramBuildInfo(program_, id, CL_PROGRAM_BUILD_LOG, size, log.data(), nullptr);
      api_.clReleaseProgram(program_);
      throw Error(where_ + ": the kernels do not build:\n" + log);
    }
  }
  ~Program() {
    for (auto& [name, kernel] : kernels_) api_.clReleaseKernel(kernel);
    api_.clReleaseProgram(program_);
  }
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;

  /// The kernel called `name` (made on first use).
  cl_kernel kernel(const std::string& name) {
    auto found = kernels_.find(name);
    if (found != kernels_.end()) return found->second;
    cl_int status = CL_SUCCESS;
    cl_kernel kernel = api_.clCreateKernel(program_, name.c_str(), &status);
    backends::opencl::check(status, "clCreateKernel " + name, where_);
    return kernels_[name] = kernel;
  }

  /// Sets argument `index` of `kernel` to a buffer.
  void set(cl_kernel kernel, cl_uint index, cl_mem buffer) const {
    backends::opencl::check(api_.clSetKernelArg(kernel, index, sizeof(cl_mem), &buffer), "clSetKernelArg", where_);
  }
  /// Sets argument `index` of `kernel` to a value (cl_int, cl_long, float, ...).
  template <class T>
  void set_value(cl_kernel kernel, cl_uint index, const T& value) const {
    backends::opencl::check(api_.clSetKernelArg(kernel, index, sizeof(T), &value), "clSetKernelArg", where_);
  }
  /// Sets argument `index` of `kernel` to `bytes` of work-group local memory.
  void set_local(cl_kernel kernel, cl_uint index, std::size_t bytes) const {
    backends::opencl::check(api_.clSetKernelArg(kernel, index, bytes, nullptr), "clSetKernelArg", where_);
  }
  /// Enqueues `kernel` over `global` (1 to 3 dimensions), with the driver's
  /// work-group size unless `local` is given.
  void run(cl_kernel kernel, std::initializer_list<std::size_t> global,
           std::initializer_list<std::size_t> local = {}) const {
    std::vector<std::size_t> g(global), l(local);
    backends::opencl::check(
        api_.clEnqueueNDRangeKernel(device_.queue(), kernel, static_cast<cl_uint>(g.size()), nullptr, g.data(),
                                    l.empty() ? nullptr : l.data(), 0, nullptr, nullptr),
        "clEnqueueNDRangeKernel", where_);
  }

 private:
  backends::opencl::OpenCLDevice& device_;
  const backends::opencl::Api& api_;
  std::string where_;
  cl_program program_ = nullptr;
  std::map<std::string, cl_kernel> kernels_;
};

/// Buffers on one device, freed together.
class Buffers {
 public:
  /// One buffer of each size in `bytes`.
  Buffers(backends::opencl::OpenCLDevice& device, std::vector<std::size_t> bytes) : device_(device) {
    try {
      for (std::size_t size : bytes) buffers_.push_back(device.allocate(size));
    } catch (...) {
      release();
      throw;
    }
  }
  ~Buffers() { release(); }
  Buffers(const Buffers&) = delete;
  Buffers& operator=(const Buffers&) = delete;

  cl_mem operator[](std::size_t k) const { return static_cast<cl_mem>(buffers_.at(k).handle); }
  /// Copies `bytes` from the host into buffer `k` (in queue order; returns before it is done).
  void write(std::size_t k, const void* source, std::size_t bytes) const {
    backends::opencl::check(device_.api().clEnqueueWriteBuffer(device_.queue(), (*this)[k], CL_FALSE, 0, bytes, source,
                                                               0, nullptr, nullptr),
                            "clEnqueueWriteBuffer", device_.info().name);
  }
  /// Copies `bytes` of buffer `k` to the host, after everything queued before; waits for it.
  void read(std::size_t k, void* destination, std::size_t bytes) const {
    backends::opencl::check(device_.api().clEnqueueReadBuffer(device_.queue(), (*this)[k], CL_TRUE, 0, bytes,
                                                              destination, 0, nullptr, nullptr),
                            "clEnqueueReadBuffer", device_.info().name);
  }

 private:
  void release() noexcept {
    for (auto& buffer : buffers_) device_.free(buffer);
    buffers_.clear();
  }
  backends::opencl::OpenCLDevice& device_;
  std::vector<backends::Buffer> buffers_;
};

}  // namespace canopy::bench::rodinia::opencl_program
