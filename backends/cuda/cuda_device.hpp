// The CUDA backend: every NVIDIA GPU the CUDA driver sees, as a
// backends::Device. Each device uses its primary context and one
// non-blocking stream; buffers are cuMemAlloc'd device memory (never managed
// memory; Buffer::handle and ArrayArg::data hold the CUdeviceptr); kernels
// are CUDA C++ generated from the optimized IR (jit/cuda_c.hpp, whose kernel
// ABI run() follows), compiled with NVRTC for the device's compute
// capability (a cubin for sm_XX where NVRTC knows the architecture, else PTX
// for the newest compute_XX no newer than the device, which the driver
// compiles on loading) and loaded with cuModuleLoadDataEx. Cubins and PTX
// are kept in the disk cache, keyed by the source, the device's
// fingerprint, the NVRTC version and the options, so that a second run
// compiles nothing. CANOPY_DUMP=cuda writes each kernel's source.
//
// Launches: CUDA has no global work offset, so the piece's begins are kernel
// arguments. Point kernels run whole blocks through the unchecked entry and
// the blocks at the piece's ends through the checked one, split further
// where a grid would pass the device's grid limits (plan_point_launches).
// A reduction runs a fixed number of blocks (a few per multiprocessor) whose
// threads each fold many points, and the host combines the blocks' partial
// results in block order, so a result is the same on every run.
//
// Every call returns when its work is done. All driver and NVRTC calls go
// through the function tables of api.hpp.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include <canopy/backends/device.hpp>
#include <canopy/jit/c_source.hpp>
#include <canopy/jit/disk_cache.hpp>

#include "api.hpp"

namespace canopy::backends::cuda {

/// Where the backend finds CUDA and keeps compiled kernels.
struct CudaOptions {
  /// The driver library. Empty: $CANOPY_LIBCUDA, else libcuda.so.1.
  std::string driver_library;
  /// NVRTC. Empty: $CANOPY_NVRTC, else a search (api.hpp).
  std::string nvrtc_library;
  /// Where cubins and PTX are kept between runs. Empty: $CANOPY_CACHE_DIR,
  /// else $HOME/.cache/canopy (none when neither is set); "off": none.
  std::string cache_dir;
};

/// What the backend reads from a device beyond DeviceInfo: what code
/// generation, compiling and launches depend on.
struct CudaTraits {
  int compute_major = 0, compute_minor = 0;  ///< compute capability
  int driver_version = 0;                    ///< cuDriverGetVersion: 12040 is CUDA 12.4
  std::string nvrtc_version;                 ///< "13.0"
  /// What compile() asks NVRTC for: "sm_90" (a cubin) or "compute_90" (PTX).
  std::string architecture;
  int warp_size = 32;
  std::array<int, 3> max_block{1, 1, 1};          ///< threads per block along x, y, z
  std::array<std::int64_t, 3> max_grid{1, 1, 1};  ///< blocks per grid along x, y, z
  std::size_t shared_memory_per_block = 0;        ///< bytes
  bool integrated = false;                        ///< shares memory with the host (Jetson)
  /// The threads per block point kernels aim for (a power of two).
  int block_size = 0;
  /// The threads per block of reductions (a power of two, at most jit::kCudaReductionBlock).
  int reduction_block_size = 0;
  /// The number of blocks a reduction runs (a few per multiprocessor).
  int reduction_blocks = 0;

  /// 10 * major + minor: 90 for compute capability 9.0.
  int capability() const { return 10 * compute_major + compute_minor; }
};

/// A device's primary context, shared by the device and the programs loaded
/// in it (defined in cuda_device.cpp): released when the last one goes.
struct CudaContext;

using backends::ProgramOrigin;

/// A kernel loaded on one CUDA device. Returned by CudaDevice::compile; run
/// it on the device that compiled it.
class CudaProgram final : public Program {
 public:
  ~CudaProgram() override;
  CudaProgram(const CudaProgram&) = delete;
  CudaProgram& operator=(const CudaProgram&) = delete;

  const ir::Kernel& kernel() const override { return *kernel_; }
  /// The CUDA C++ it was compiled from, and its kernel functions' names.
  const jit::CSource& source() const { return source_; }
  /// The disk-cache key of its image (32 hex characters).
  const std::string& cache_key() const override { return cache_key_; }
  ProgramOrigin origin() const override { return origin_; }
  /// True when the module was loaded from a cubin, false from PTX.
  bool is_cubin() const { return is_cubin_; }
  /// The most threads per block the device runs this kernel with.
  int max_threads_per_block() const { return max_threads_; }

 private:
  friend class CudaDevice;
  CudaProgram() = default;

  std::shared_ptr<CudaContext> context_;
  const void* device_ = nullptr;  ///< the CudaDevice that loaded it
  std::shared_ptr<const ir::Kernel> kernel_;
  jit::CSource source_;
  std::string cache_key_;
  ProgramOrigin origin_ = ProgramOrigin::Built;
  bool is_cubin_ = false;
  CUmodule module_ = nullptr;
  CUfunction entry_ = nullptr;  ///< the kernel (whole blocks only, when edges_ is set)
  CUfunction edges_ = nullptr;  ///< kernels without reductions: the entry that checks the piece's ends
  int max_threads_ = 1;
  /// Per reduction parameter (in order), memory for one partial per block; guarded by the device's launch mutex.
  std::vector<CUdeviceptr> partials_;
};

class CudaDevice final : public Device {
 public:
  /// Opens device `ordinal` of the driver as "cuda:<index>": reads its
  /// attributes, retains its primary context, creates a stream. Throws
  /// canopy::Error when the driver refuses or NVRTC cannot compile for it.
  CudaDevice(std::shared_ptr<const DriverApi> driver, std::shared_ptr<const NvrtcApi> nvrtc, int ordinal, int index,
             const CudaOptions& options = {});
  ~CudaDevice() override;
  CudaDevice(const CudaDevice&) = delete;
  CudaDevice& operator=(const CudaDevice&) = delete;

  const DeviceInfo& info() const override { return info_; }
  const CudaTraits& traits() const { return traits_; }

  Buffer allocate(std::size_t bytes) override;
  void free(Buffer buffer) noexcept override;
  void copy_in(Buffer buffer, std::size_t offset, const void* source, std::size_t bytes) override;
  void copy_out(Buffer buffer, std::size_t offset, void* destination, std::size_t bytes) override;
  void fill(Buffer buffer, std::size_t first, std::size_t count, const ScalarArg& value) override;

  /// Generates CUDA C++ for `optimized` and compiles it (through the caches).
  /// The same kernel text compiled twice returns the same program.
  std::shared_ptr<Program> compile(std::shared_ptr<const ir::Kernel> optimized) override;
  /// Compiles `source` as the program of `optimized` instead of the
  /// generated code: for tests and tools that need a source of their own.
  /// The source must follow the kernel ABI of jit/cuda_c.hpp for `optimized`.
  std::shared_ptr<CudaProgram> compile_source(std::shared_ptr<const ir::Kernel> optimized, jit::CSource source);
  std::vector<ReductionValue> run(const Program& program, const std::vector<KernelArg>& args,
                                  const Range& range) override;

  /// The code generation options this device's kernels use.
  jit::CSourceOptions code_options() const;
  /// The disk cache of cubins and PTX, or null when there is none.
  const jit::DiskCache* disk_cache() const override { return disk_.get(); }

 private:
  /// "CUDA device 'name' (cuda:0)", for messages.
  std::string label() const;
  void read_attributes(int ordinal);
  std::shared_ptr<CudaProgram> build(std::shared_ptr<const ir::Kernel> optimized, jit::CSource source,
                                     const std::string& key);
  /// Loads `image` as the program's module; false (and nothing loaded) when
  /// the driver refuses it and `throw_on_failure` is false.
  bool load_module(CudaProgram& program, const std::string& image, bool throw_on_failure);
  void check_buffer(Buffer buffer, std::size_t offset, std::size_t bytes, const char* what) const;
  void launch_points(const CudaProgram& program, std::vector<std::uint64_t>& values, std::vector<void*>& params,
                     const std::vector<std::size_t>& begin_slots, const Range& range);
  std::vector<ReductionValue> launch_reduction(const CudaProgram& program, std::vector<std::uint64_t>& values,
                                               std::vector<void*>& params, const std::vector<std::size_t>& begin_slots,
                                               const Range& range);
  /// Waits for everything queued on the stream; `what` names it in errors.
  void wait(const std::string& what);

  std::shared_ptr<const DriverApi> driver_;
  std::shared_ptr<const NvrtcApi> nvrtc_;
  std::shared_ptr<CudaContext> context_;
  CUstream stream_ = nullptr;
  CUevent done_ = nullptr;  ///< recorded after each piece of work, waited on
  DeviceInfo info_;
  CudaTraits traits_;
  std::unique_ptr<jit::DiskCache> disk_;

  std::mutex compile_mutex_;  ///< one build at a time; guards programs_
  std::unordered_map<std::string, std::weak_ptr<CudaProgram>> programs_;
  std::mutex launch_mutex_;  ///< partial buffers and the stream's order belong to one launch at a time
};

// ---- pieces of the backend that need no GPU (tested on any machine) --------

/// What NVRTC made of one source.
struct NvrtcImage {
  std::string architecture;  ///< "sm_90" (a cubin) or "compute_80" (PTX)
  bool is_cubin = false;
  std::string image;  ///< the cubin's bytes, or the PTX text (without its terminating NUL)
  std::string log;    ///< NVRTC's log (warnings); may be empty
};

/// The architecture to compile for on a device of compute capability
/// `capability` (10 * major + minor) with an NVRTC that compiles for
/// `supported` (nvrtcGetSupportedArchs): "sm_<capability>" when it is
/// among them, else "compute_<newest supported no newer than the device>".
/// Throws canopy::Error naming `device` and the NVRTC version when every
/// supported architecture is newer than the device.
std::string nvrtc_architecture(const std::vector<int>& supported, int capability, const std::string& nvrtc_version,
                               const std::string& device);

/// Compiles `source` with NVRTC for `architecture` with
/// jit::cuda_compile_options: a cubin for "sm_XX", PTX for "compute_XX".
/// Throws canopy::Error naming `where`, the kernel and the architecture,
/// with NVRTC's log and the numbered source, when it does not compile.
NvrtcImage nvrtc_compile(const NvrtcApi& nvrtc, const jit::CSource& source, const std::string& kernel_name,
                         const std::string& architecture, const std::string& where);

/// One cuLaunchKernel of a point kernel.
struct PointLaunch {
  bool edges = false;  ///< the checked entry (blocks at the piece's ends)
  /// Per index dimension, the index of the first block's first thread (the
  /// *_begin arguments); the *_end arguments are always the piece's ends.
  std::array<std::int64_t, 3> begin{0, 0, 0};
  std::array<std::int64_t, 3> grid{1, 1, 1};  ///< blocks along device x, y, z (x is the last index)
};

/// Threads per block along device x, y, z for a point kernel over `range`:
/// `budget` threads (a power of two) in one dimension; in more, a power of
/// two no larger than the range along each, at most 64 along x, within
/// `max_block`.
std::array<int, 3> point_block(const Range& range, int budget, const std::array<int, 3>& max_block);

/// The launches that run every point of non-empty `range` once with blocks
/// of `block` threads: whole blocks inside the range through the unchecked
/// entry, the blocks at its ends through the checked one, and each split
/// so that no grid passes `max_grid`.
std::vector<PointLaunch> plan_point_launches(const Range& range, const std::array<int, 3>& block,
                                             const std::array<std::int64_t, 3>& max_grid);

/// Throws canopy::Error naming the device and what is missing when `kernel`
/// needs what a device with `info` and `traits` lacks (atomic adds on f64
/// need compute capability 6.0).
void check_device_supports(const ir::Kernel& kernel, const DeviceInfo& info, const CudaTraits& traits);

/// Every CUDA device the driver sees ("cuda:0", "cuda:1", ... in the
/// driver's order). When there are none the reason says why: the driver or
/// NVRTC did not load (naming the library or the symbol; both when both are
/// missing), cuInit failed (naming the error), or the driver sees no
/// device. Never throws.
BackendDevices discover_cuda(const CudaOptions& options = {});

}  // namespace canopy::backends::cuda
