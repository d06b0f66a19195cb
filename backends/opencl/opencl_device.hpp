// The OpenCL backend: every OpenCL device on the node as a backends::Device.
// Each device gets its own context and in-order command queue; buffers are
// cl_mem objects (Buffer::handle and ArrayArg::data hold the cl_mem);
// kernels are OpenCL C generated from the optimized IR (jit/opencl_c.hpp,
// whose kernel ABI run() follows), built with clBuildProgram, and kept as
// program binaries in the disk cache, keyed by the source, the device's
// name, driver and OpenCL versions and the build options, so that a second
// run builds nothing (clCreateProgramWithBinary). CANOPY_DUMP=opencl writes
// each kernel's source.
//
// Launches: the piece's first point is the global work offset and the
// work-group size comes from the device (OpenCLTraits). The whole
// work-groups inside the piece run the kernel's unchecked entry (which a CPU
// driver such as PoCL vectorises across work-items); the groups straddling
// its ends run the checked entry, in at most one more launch per dimension.
// A reduction runs a
// fixed number of work-groups (a few per compute unit) whose work-items each
// fold many points, and the host combines the groups' partial results in
// group order, so a result is the same on every run.
//
// Every call returns when its work is done. All OpenCL calls go through the
// function table of api.hpp.
#pragma once

#include <array>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include <canopy/backends/device.hpp>
#include <canopy/jit/c_source.hpp>
#include <canopy/jit/disk_cache.hpp>

#include "api.hpp"

namespace canopy::backends::opencl {

/// Where the backend finds OpenCL and keeps compiled programs.
struct OpenCLOptions {
  /// The ICD loader to open. Empty: $CANOPY_LIBOPENCL, else libOpenCL.so.1.
  std::string library;
  /// Where program binaries are kept between runs. Empty: $CANOPY_CACHE_DIR,
  /// else $HOME/.cache/canopy (none when neither is set); "off": none.
  std::string cache_dir;
};

/// What the backend reads from a device beyond DeviceInfo: what code
/// generation, builds and launches depend on.
struct OpenCLTraits {
  std::string platform_name;
  std::string platform_version;
  std::string device_version;    ///< "OpenCL 3.0 ..."
  std::string opencl_c_version;  ///< "OpenCL C 1.2 ..."
  std::string extensions;        ///< the device's extension list, space separated
  bool is_cpu = false;           ///< CL_DEVICE_TYPE_CPU
  /// CPU devices whose buffers start on 64-byte boundaries: kernels that
  /// suit it get a streaming entry (jit::CSource::stream_entry), used for
  /// launches that takes_streaming_stores (launch.hpp) picks with
  /// streaming_threshold.
  bool streaming_entry = false;
  /// Twice the device's global memory cache (64 MiB when it says none), or as
  /// CANOPY_STREAMING_STORES asks (on: 0, off: never).
  std::size_t streaming_threshold = 0;
  bool int64_atomics = false;  ///< cl_khr_int64_base_atomics
  /// -cl-fp32-correctly-rounded-divide-sqrt is accepted: f32 / and sqrt
  /// round correctly (as on the CPU) instead of within OpenCL's 2.5 and 3 ulp.
  bool correctly_rounded_divide_sqrt = false;
  bool opencl_c_1_2 = false;  ///< OpenCL C 1.2 or later: built with -cl-std=CL1.2
  std::array<std::size_t, 3> max_work_item_sizes{1, 1, 1};
  std::size_t local_memory = 0;  ///< bytes of work-group local memory
  /// The work-group size launches aim for (at most max_work_group).
  int work_group_size = 0;
  /// The work-group size of reductions (a power of two).
  int reduction_work_group_size = 0;
  /// The number of work-groups a reduction runs (a few per compute unit).
  int reduction_groups = 0;
  /// How the work-items of a reduction walk their points (chunked on CPUs).
  jit::ReductionWalk reduction_walk = jit::ReductionWalk::Strided;
};

using backends::ProgramOrigin;

/// A kernel built for one OpenCL device. Returned by OpenCLDevice::compile;
/// run it on the device that compiled it.
class OpenCLProgram final : public Program {
 public:
  ~OpenCLProgram() override;
  OpenCLProgram(const OpenCLProgram&) = delete;
  OpenCLProgram& operator=(const OpenCLProgram&) = delete;

  const ir::Kernel& kernel() const override { return *kernel_; }
  /// The OpenCL C it was built from, and its kernel function's name.
  const jit::CSource& source() const { return source_; }
  /// The disk-cache key of its binary (32 hex characters).
  const std::string& cache_key() const override { return cache_key_; }
  ProgramOrigin origin() const override { return origin_; }
  /// The largest work-group the device runs this kernel with.
  std::size_t max_work_group() const { return max_work_group_; }

 private:
  friend class OpenCLDevice;
  OpenCLProgram() = default;

  std::shared_ptr<const Api> api_;
  const void* device_ = nullptr;  ///< the OpenCLDevice that built it
  std::shared_ptr<const ir::Kernel> kernel_;
  jit::CSource source_;
  std::string cache_key_;
  ProgramOrigin origin_ = ProgramOrigin::Built;
  cl_program program_ = nullptr;
  cl_kernel entry_ = nullptr;   ///< the kernel (whole work-groups only, when edges_ is set)
  cl_kernel edges_ = nullptr;   ///< kernels without reductions: the entry that checks the piece's ends
  cl_kernel stream_ = nullptr;  ///< the streaming entry, when the source has one
  std::size_t max_work_group_ = 1;
  /// Per reduction parameter (in order), a buffer for one partial per work-group; guarded by the device's launch mutex.
  std::vector<cl_mem> partials_;
};

class OpenCLDevice final : public Device {
 public:
  /// Opens `device` (of `platform`) as "opencl:<index>": reads its traits,
  /// creates a context and an in-order queue. Throws canopy::Error when
  /// OpenCL refuses.
  OpenCLDevice(std::shared_ptr<const Api> api, cl_platform_id platform, cl_device_id device, int index,
               const OpenCLOptions& options = {});
  ~OpenCLDevice() override;
  OpenCLDevice(const OpenCLDevice&) = delete;
  OpenCLDevice& operator=(const OpenCLDevice&) = delete;

  const DeviceInfo& info() const override { return info_; }
  const OpenCLTraits& traits() const { return traits_; }

  Buffer allocate(std::size_t bytes) override;
  void free(Buffer buffer) noexcept override;
  void copy_in(Buffer buffer, std::size_t offset, const void* source, std::size_t bytes) override;
  void copy_out(Buffer buffer, std::size_t offset, void* destination, std::size_t bytes) override;
  void fill(Buffer buffer, std::size_t first, std::size_t count, const ScalarArg& value) override;

  /// Generates OpenCL C for `optimized` and builds it (through the caches).
  /// The same kernel text compiled twice returns the same program.
  std::shared_ptr<Program> compile(std::shared_ptr<const ir::Kernel> optimized) override;
  /// Builds `source` as the program of `optimized` instead of the generated
  /// code: for tests and tools that need a source of their own. The source
  /// must follow the kernel ABI of jit/c_source.hpp for `optimized`.
  std::shared_ptr<OpenCLProgram> compile_source(std::shared_ptr<const ir::Kernel> optimized, jit::CSource source);
  std::vector<ReductionValue> run(const Program& program, const std::vector<KernelArg>& args,
                                  const Range& range) override;

  /// The code generation options this device's kernels use.
  jit::CSourceOptions code_options() const;
  /// The options clBuildProgram gets.
  std::string build_options() const;
  /// The disk cache of program binaries, or null when there is none.
  const jit::DiskCache* disk_cache() const override { return disk_.get(); }

  // For code that drives OpenCL itself through the same device (benchmarks).
  const Api& api() const { return *api_; }
  cl_device_id id() const { return device_; }
  cl_context context() const { return context_; }
  cl_command_queue queue() const { return queue_; }

 private:
  /// "OpenCL device 'name' (opencl:0)", for messages.
  std::string label() const;
  std::shared_ptr<OpenCLProgram> build(std::shared_ptr<const ir::Kernel> optimized, jit::CSource source,
                                       const std::string& key);
  bool build_from_binary(OpenCLProgram& program, const std::string& binary);
  void build_from_source(OpenCLProgram& program);
  std::string build_log(cl_program program) const;
  std::string program_binary(cl_program program) const;
  bool check_launch(const ir::Kernel& kernel, const std::vector<KernelArg>& args, const Range& range) const;
  void check_buffer(Buffer buffer, std::size_t offset, std::size_t bytes, const char* what) const;
  void set_arguments(const OpenCLProgram& program, cl_kernel entry, const std::vector<KernelArg>& args,
                     const Range& range);
  std::size_t reduction_work_group(const OpenCLProgram& program) const;
  std::array<std::size_t, 3> point_work_group(const OpenCLProgram& program, const Range& range) const;
  void launch_points(const OpenCLProgram& program, const std::vector<KernelArg>& args, const Range& range);
  std::vector<ReductionValue> launch_reduction(const OpenCLProgram& program, const Range& range);
  void wait(cl_event event, const char* what);

  std::shared_ptr<const Api> api_;
  cl_platform_id platform_ = nullptr;
  cl_device_id device_ = nullptr;
  cl_context context_ = nullptr;
  cl_command_queue queue_ = nullptr;
  DeviceInfo info_;
  OpenCLTraits traits_;
  std::unique_ptr<jit::DiskCache> disk_;

  std::mutex compile_mutex_;  ///< one build at a time; guards programs_
  std::unordered_map<std::string, std::weak_ptr<OpenCLProgram>> programs_;
  std::mutex launch_mutex_;  ///< kernel arguments and partial buffers are set by one launch at a time
};

/// Throws canopy::Error naming the device and what is missing when `kernel`
/// needs what a device with `info` and `traits` lacks: doubles (fp64) or
/// 64-bit atomics (cl_khr_int64_base_atomics).
void check_device_supports(const ir::Kernel& kernel, const DeviceInfo& info, const OpenCLTraits& traits);

/// Every OpenCL device of every platform, each with its own context and
/// queue ("opencl:0", "opencl:1", ... in platform order). When there are none
/// the reason says why: the library did not load (naming it), a symbol is
/// missing (naming it), no platform, or no device. Never throws.
BackendDevices discover_opencl(const OpenCLOptions& options = {});

}  // namespace canopy::backends::opencl
