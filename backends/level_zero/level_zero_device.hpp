// The Level Zero backend: every GPU of every Level Zero driver on the node as
// a backends::Device. Each device gets its own context, one immediate
// command list on a compute queue group, and one host-visible event that
// every command signals and the host waits on, so each call returns when
// its work is done. Buffers are device allocations (zeMemAllocDevice;
// Buffer::handle and ArrayArg::data hold the device pointer). Kernels are
// SPIR-V made in-process from the optimized IR (jit/spirv.hpp, whose kernel
// ABI run() follows through spirv_launch.hpp), built with zeModuleCreate;
// the device's native binary (zeModuleGetNativeBinary) goes in the disk
// cache, keyed by the SPIR-V, the device's fingerprint (name, PCI ids,
// driver version and the native-kernel compatibility UUID) and the build
// flags, and is loaded back with ZE_MODULE_FORMAT_NATIVE on the next run.
// A build failure carries the driver's build log and the numbered LLVM IR
// the SPIR-V was translated from.
//
// Build flags are those the Level Zero specification defines:
// "-ze-opt-greater-than-4GB-buffer-required" where the device allocates
// buffers beyond 4 GiB. f32 division and sqrt therefore round as SPIR-V's
// OpenCL environment allows (2.5 and 3 ulp), not always correctly.
//
// Launches: kernels without reductions run one work-item per point in up to
// three dimensions, in several launches where a piece needs more
// work-groups than the device launches at once (each launch gets its own
// begins and ends); reductions run a fixed number of work-groups (one per
// EU), each writing one partial result per reduction, read back and
// combined on the host in group order.
//
// Discovery never throws: without the loader, without a driver (zeInit
// fails) or without a GPU, the backend is absent with a reason naming the
// library or the zeInit result. All Level Zero calls go through api.hpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <canopy/backends/device.hpp>
#include <canopy/jit/disk_cache.hpp>
#include <canopy/jit/spirv.hpp>

#include "api.hpp"
#include "spirv_launch.hpp"

namespace canopy::backends::level_zero {

/// Where the backend finds Level Zero and keeps compiled modules.
struct LevelZeroOptions {
  /// The loader to open. Empty: $CANOPY_LIBZE, else libze_loader.so.1.
  std::string library;
  /// Where native binaries are kept between runs. Empty: $CANOPY_CACHE_DIR,
  /// else $HOME/.cache/canopy (none when neither is set); "off": none.
  std::string cache_dir;
};

/// Everything Canopy reads from a driver and one of its devices: the input
/// of describe_device, kept whole so that describing is a pure function.
struct LevelZeroProperties {
  ze_driver_properties_t driver{};
  ze_api_version_t api_version{};
  ze_device_properties_t device{};
  ze_device_compute_properties_t compute{};
  ze_device_module_properties_t module{};
  std::vector<ze_device_memory_properties_t> memories;
  std::vector<ze_command_queue_group_properties_t> queue_groups;
  /// The PCI address, where the loader has zeDevicePciGetPropertiesExt and the driver answers.
  std::optional<ze_pci_ext_properties_t> pci;
};

/// What the backend knows of a device beyond DeviceInfo: what builds and
/// launches depend on.
struct LevelZeroTraits {
  std::uint32_t vendor_id = 0;
  std::uint32_t device_id = 0;
  std::uint32_t spirv_version = 0;  ///< the newest SPIR-V the device takes (0x00010200 is 1.2)
  bool int64_atomics = false;       ///< ZE_DEVICE_MODULE_FLAG_INT64_ATOMICS
  bool integrated = false;          ///< shares memory with the host (ZE_DEVICE_PROPERTY_FLAG_INTEGRATED)
  /// The ordinal of the first queue group that runs compute commands, if any.
  std::optional<std::uint32_t> compute_ordinal;
  std::size_t max_fill_pattern = 0;  ///< the largest fill pattern of that group, bytes
  /// The device's limits and the sizes launches aim for (before a kernel's own limit).
  SpirvLaunchLimits limits;
  /// zeModuleCreate's build flags.
  std::string build_flags;
};

/// The DeviceInfo ("level_zero:<index>") and traits of a device with
/// `properties`. Compute units are EUs (slices x sub-slices x EUs per
/// sub-slice), global memory the sum of the device's memories, the PCI bus
/// id "dddd:bb:dd.f" where known.
std::pair<DeviceInfo, LevelZeroTraits> describe_device(const LevelZeroProperties& properties, int index);

/// Throws canopy::Error naming the device and what is missing when `kernel`
/// needs what a device with `info` and `traits` lacks: doubles (fp64) or
/// 64-bit atomics.
void check_device_supports(const ir::Kernel& kernel, const DeviceInfo& info, const LevelZeroTraits& traits);

using backends::ProgramOrigin;

/// A kernel built for one Level Zero device. Returned by
/// LevelZeroDevice::compile; run it on the device that compiled it.
class LevelZeroProgram final : public Program {
 public:
  ~LevelZeroProgram() override;
  LevelZeroProgram(const LevelZeroProgram&) = delete;
  LevelZeroProgram& operator=(const LevelZeroProgram&) = delete;

  const ir::Kernel& kernel() const override { return *kernel_; }
  /// The SPIR-V it was built from.
  const jit::SpirvKernel& spirv() const { return spirv_; }
  /// The disk-cache key of its native binary (32 hex characters).
  const std::string& cache_key() const override { return cache_key_; }
  ProgramOrigin origin() const override { return origin_; }
  /// The largest work-group the device runs this kernel with.
  std::uint32_t max_group_size() const { return max_group_size_; }

 private:
  friend class LevelZeroDevice;
  LevelZeroProgram() = default;

  std::shared_ptr<const Api> api_;
  const void* device_ = nullptr;  ///< the LevelZeroDevice that built it
  ze_context_handle_t context_ = nullptr;
  std::shared_ptr<const ir::Kernel> kernel_;
  jit::SpirvKernel spirv_;
  std::string cache_key_;
  ProgramOrigin origin_ = ProgramOrigin::Built;
  ze_module_handle_t module_ = nullptr;
  ze_kernel_handle_t entry_ = nullptr;
  std::uint32_t max_group_size_ = 1;
  /// Per parameter: reductions' partial-result buffers (device pointers), else null.
  std::vector<void*> partials_;
};

class LevelZeroDevice final : public Device {
 public:
  /// Opens `device` of `driver` as "level_zero:<index>": reads its
  /// properties, creates a context, an immediate command list and an event.
  /// Throws canopy::Error when Level Zero refuses.
  LevelZeroDevice(std::shared_ptr<const Api> api, ze_driver_handle_t driver, ze_device_handle_t device, int index,
                  const LevelZeroOptions& options = {});
  ~LevelZeroDevice() override;
  LevelZeroDevice(const LevelZeroDevice&) = delete;
  LevelZeroDevice& operator=(const LevelZeroDevice&) = delete;

  const DeviceInfo& info() const override { return info_; }
  const LevelZeroTraits& traits() const { return traits_; }

  Buffer allocate(std::size_t bytes) override;
  void free(Buffer buffer) noexcept override;
  void copy_in(Buffer buffer, std::size_t offset, const void* source, std::size_t bytes) override;
  void copy_out(Buffer buffer, std::size_t offset, void* destination, std::size_t bytes) override;
  void fill(Buffer buffer, std::size_t first, std::size_t count, const ScalarArg& value) override;

  /// Translates `optimized` to SPIR-V and builds it (through the caches).
  /// The same kernel compiled twice returns the same program.
  std::shared_ptr<Program> compile(std::shared_ptr<const ir::Kernel> optimized) override;
  std::vector<ReductionValue> run(const Program& program, const std::vector<KernelArg>& args,
                                  const Range& range) override;

  /// The disk cache of native binaries, or null when there is none.
  const jit::DiskCache* disk_cache() const override { return disk_.get(); }

 private:
  /// "Level Zero device 'name' (level_zero:0)", for messages.
  std::string label() const;
  /// Appends one command that signals `event_` (through `append`), then
  /// waits for it and resets it. Throws canopy::Error naming `what`.
  template <class Append>
  void submit(const std::string& what, Append append);
  std::shared_ptr<LevelZeroProgram> build(std::shared_ptr<const ir::Kernel> optimized, jit::SpirvKernel spirv,
                                          const std::string& key);
  bool build_from_native(LevelZeroProgram& program, const std::string& binary);
  void build_from_spirv(LevelZeroProgram& program);
  std::string native_binary(ze_module_handle_t module) const;
  void check_buffer(Buffer buffer, std::size_t offset, std::size_t bytes, const char* what) const;

  std::shared_ptr<const Api> api_;
  ze_driver_handle_t driver_ = nullptr;
  ze_device_handle_t device_ = nullptr;
  ze_context_handle_t context_ = nullptr;
  ze_command_list_handle_t list_ = nullptr;
  ze_event_pool_handle_t event_pool_ = nullptr;
  ze_event_handle_t event_ = nullptr;
  DeviceInfo info_;
  LevelZeroTraits traits_;
  std::unique_ptr<jit::DiskCache> disk_;

  std::mutex queue_mutex_;    ///< the command list and its event: one command at a time
  std::mutex compile_mutex_;  ///< one build at a time; guards programs_
  std::unordered_map<std::string, std::weak_ptr<LevelZeroProgram>> programs_;
  std::mutex launch_mutex_;  ///< kernel arguments and partial buffers are set by one launch at a time
};

/// The devices of every Level Zero driver ("level_zero:0", ... in driver
/// order). When there are none, the reason says why: SPIR-V is not
/// available in this build, the loader did not load (naming it), a symbol
/// is missing (naming it), zeInit failed (naming its result: with the
/// loader but no driver it is ZE_RESULT_ERROR_UNINITIALIZED), no driver, or
/// no device. Never throws.
BackendDevices discover_level_zero(const LevelZeroOptions& options = {});

}  // namespace canopy::backends::level_zero
