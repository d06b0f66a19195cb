// Device: what every backend (CPU, OpenCL, CUDA, Level Zero) offers the
// runtime, so that the runtime runs regions, moves data and combines
// reductions the same way on all of them. A device has its own memory
// (except the CPU, whose "device memory" is the host arrays themselves),
// compiles kernels from the optimized IR, and runs one piece of a region at a
// time. Every call returns when its work is done (the leaf's worker thread
// is what makes regions asynchronous).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <canopy/ir/kernel.hpp>

#include "launch.hpp"

namespace canopy::jit {
class DiskCache;
}

namespace canopy::backends {

/// Who a device is and what it can do; zero or empty means unknown.
struct DeviceInfo {
  std::string id;       ///< "cpu0", "opencl:0", "cuda:1"
  std::string backend;  ///< "cpu", "opencl", "cuda", "level_zero"
  std::string name;     ///< what the driver calls it
  std::string vendor;
  std::string driver_version;  ///< driver and, where separate, compiler version
  /// Devices with equal fingerprints run the same compiled code: backend,
  /// name, driver and compiler versions (kernel caches and MPI sharing key on it).
  std::string fingerprint;
  std::string pci_bus_id;  ///< "0000:3b:00.0" when the device is on PCI, else empty
  int compute_units = 0;
  std::int64_t global_memory = 0;   ///< bytes
  std::int64_t max_allocation = 0;  ///< bytes in one buffer
  int max_work_group = 0;
  int preferred_vector_width = 0;  ///< bytes
  bool fp64 = true;                ///< doubles supported
  bool host_memory = false;        ///< its buffers are host memory (the CPU): no copies needed
  /// It computes on the host's own cores (an OpenCL CPU device such as PoCL):
  /// it competes with the CPU leaves, so it is used only when asked for.
  bool on_host_cores = false;
  /// A launch of a kernel that suits the device's streaming code (OpenCL:
  /// jit::streaming_entry_type) stores the arrays it only writes with
  /// streaming stores where takes_streaming_stores (launch.hpp) says so
  /// with this threshold; -1: never.
  std::int64_t streaming_threshold = -1;
  /// A test device: one of Canopy's emulated drivers (tests/emulate/, named
  /// through CANOPY_LIBCUDA or ZE_ENABLE_ALT_DRIVERS) that runs kernels on
  /// the host's cores; never hardware, and never chosen unless named so.
  bool emulated = false;
};

/// True for the name Canopy's emulated drivers give their devices
/// ("Canopy emulated CUDA device 0"): the backends set DeviceInfo::emulated from it.
inline bool emulated_device_name(std::string_view name) { return name.rfind("Canopy emulated ", 0) == 0; }

/// Memory on a device: an opaque handle its backend understands (a cl_mem,
/// a CUdeviceptr, a host pointer), and its size.
struct Buffer {
  void* handle = nullptr;
  std::size_t bytes = 0;
  explicit operator bool() const { return handle != nullptr; }
};

/// Where compile() found a program the first time it returned it.
enum class ProgramOrigin {
  Built,  ///< compiled by this device (from source, SPIR-V or IR)
  Disk,   ///< loaded from a binary in the disk cache
};

/// A kernel compiled for one device; each backend derives its own. What the
/// runtime and MPI need from any program is here, so that no code above the
/// backends names a backend's type.
class Program {
 public:
  virtual ~Program() = default;
  /// The optimized IR it was compiled from.
  virtual const ir::Kernel& kernel() const = 0;
  /// The key of its binary in its device's disk cache; empty when it has none.
  virtual const std::string& cache_key() const {
    static const std::string none;
    return none;
  }
  virtual ProgramOrigin origin() const { return ProgramOrigin::Built; }
  /// A launch of fewer points than this may run on the calling thread, where
  /// handing it to a worker costs more than the work (the CPU); 0: never.
  virtual std::int64_t inline_points() const { return 0; }
};

class Device {
 public:
  virtual ~Device() = default;
  virtual const DeviceInfo& info() const = 0;
  /// Where compile() keeps binaries between runs; null when nowhere.
  virtual const jit::DiskCache* disk_cache() const { return nullptr; }

  /// `bytes` of device memory. Throws canopy::Error naming the device, the
  /// size and what it can hold when it cannot.
  virtual Buffer allocate(std::size_t bytes) = 0;
  virtual void free(Buffer buffer) noexcept = 0;
  /// Host to device: `bytes` from `source` into `buffer` at byte `offset`.
  virtual void copy_in(Buffer buffer, std::size_t offset, const void* source, std::size_t bytes) = 0;
  /// Device to host.
  virtual void copy_out(Buffer buffer, std::size_t offset, void* destination, std::size_t bytes) = 0;
  /// Sets `count` elements of `value`'s type from element `first` to `value`.
  virtual void fill(Buffer buffer, std::size_t first, std::size_t count, const ScalarArg& value) = 0;

  /// Compiles an optimized kernel for this device (through its caches).
  /// Throws canopy::Error with the device, the compiler's log and the
  /// numbered source when it does not compile, or when the kernel needs
  /// something the device lacks (fp64).
  virtual std::shared_ptr<Program> compile(std::shared_ptr<const ir::Kernel> optimized) = 0;
  /// Prepares the programs of several optimized kernels at once where that
  /// is cheaper than one by one (the CPU: one object for all); compile() of
  /// each then finds its code made. Never throws: what failed is left to
  /// compile(). Default: nothing.
  virtual void compile_together(const std::vector<std::shared_ptr<const ir::Kernel>>& optimized) { (void)optimized; }
  /// Compiles what launches of `program` (from this device's compile()) may
  /// use beside it, so that the first of them finds it ready: the CPU's
  /// streaming variant (Runtime::compile asks for it). Never throws: what
  /// failed is compiled again, and reported, by the launch that needs it.
  /// Default: nothing.
  virtual void compile_variants(const Program& program) { (void)program; }
  /// Runs `program` over `range`. Array arguments carry this device's
  /// buffers (ArrayArg::data is the Buffer handle) and the array's full
  /// extents; indexes are those of the whole array. Returns one value per
  /// reduction parameter, in parameter order.
  virtual std::vector<ReductionValue> run(const Program& program, const std::vector<KernelArg>& args,
                                          const Range& range) = 0;
  /// Says that run(program, ..., range) comes soon, from another thread: a
  /// device whose threads sleep between launches may start waking them now,
  /// so that their wake-up overlaps the hand-over of the launch instead of
  /// following it. Only a hint: cheap, and it never runs anything. Default:
  /// nothing.
  virtual void expect_run(const Program& program, const Range& range) {
    (void)program;
    (void)range;
  }
};

/// What one backend found on this node: its devices, or why it has none.
struct BackendDevices {
  std::string backend;  ///< "opencl", "cuda", "level_zero"
  std::vector<std::shared_ptr<Device>> devices;
  /// Empty when the backend loaded; else a sentence saying why it is absent
  /// (no library, a missing symbol, no platform, no device).
  std::string absent_reason;
};

}  // namespace canopy::backends
