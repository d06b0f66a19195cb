#include "cuda_device.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>

#include <canopy/ir/dump.hpp>
#include <canopy/ir/error.hpp>
#include <canopy/ir/verifier.hpp>
#include <canopy/jit/checked_file.hpp>
#include <canopy/jit/cuda_c.hpp>
#include <canopy/jit/hash.hpp>
#include "../fault_injection.hpp"
#include "../program_cache.hpp"

namespace canopy::backends::cuda {

// A device's primary context, retained while a device or a program holds it.
struct CudaContext {
  std::shared_ptr<const DriverApi> api;
  CUdevice device = 0;
  CUcontext context = nullptr;

  CudaContext(std::shared_ptr<const DriverApi> driver, CUdevice ordinal) : api(std::move(driver)), device(ordinal) {}
  ~CudaContext() {
    if (context) api->cuDevicePrimaryCtxRelease(device);
  }
  CudaContext(const CudaContext&) = delete;
  CudaContext& operator=(const CudaContext&) = delete;
};

namespace {

// Changes whenever what the generated source means for a given text changes
// in a way the key does not show (the host side of the kernel ABI).
constexpr int kProgramFormatVersion = 1;

// Makes a context current on the calling thread for a scope, restoring the
// one that was current before.
class CurrentContext {
 public:
  CurrentContext(const CudaContext& context, std::string_view where) : api_(*context.api) {
    check(api_, api_.cuCtxPushCurrent(context.context), "making the context current", where);
  }
  ~CurrentContext() {
    CUcontext popped = nullptr;
    api_.cuCtxPopCurrent(&popped);
  }
  CurrentContext(const CurrentContext&) = delete;
  CurrentContext& operator=(const CurrentContext&) = delete;

 private:
  const DriverApi& api_;
};

std::size_t floor_pow2(std::size_t n) {
  std::size_t p = 1;
  while (p <= n / 2) p *= 2;
  return p;
}

std::string bytes_text(std::size_t bytes) {
  char text[64];
  std::snprintf(text, sizeof text, "%zu bytes (%.2f GiB)", bytes, static_cast<double>(bytes) / (1 << 30));
  return text;
}

// "12.4" from cuDriverGetVersion's 12040.
std::string driver_version_text(int version) {
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

// The bytes of a scalar argument of parameter type `type` (bool as int), in
// an 8-byte slot.
std::uint64_t scalar_slot(ir::ScalarType type, const ScalarArg& arg) {
  const double as_float = ir::is_float(arg.type) ? arg.float_value : static_cast<double>(arg.int_value);
  const std::int64_t as_int = ir::is_float(arg.type) ? static_cast<std::int64_t>(arg.float_value) : arg.int_value;
  std::uint64_t slot = 0;
  auto put = [&](const auto& value) { std::memcpy(&slot, &value, sizeof value); };
  switch (type) {
    case ir::ScalarType::Bool: put(static_cast<std::int32_t>(as_int != 0 || as_float != 0.0)); break;
    case ir::ScalarType::I32: put(static_cast<std::int32_t>(as_int)); break;
    case ir::ScalarType::I64: put(static_cast<std::int64_t>(as_int)); break;
    case ir::ScalarType::F32: put(static_cast<float>(as_float)); break;
    case ir::ScalarType::F64: put(as_float); break;
  }
  return slot;
}

}  // namespace

// ---- programs -----------------------------------------------------------------

CudaProgram::~CudaProgram() {
  if (!context_) return;
  const DriverApi& api = *context_->api;
  // Nothing here may throw: a context that cannot be made current leaves its
  // module and memory to the context's own destruction.
  if (api.cuCtxPushCurrent(context_->context) != kCudaSuccess) return;
  for (CUdeviceptr partials : partials_)
    if (partials) api.cuMemFree(partials);
  if (module_) api.cuModuleUnload(module_);
  CUcontext popped = nullptr;
  api.cuCtxPopCurrent(&popped);
}

// ---- the pieces that need no GPU ------------------------------------------------

std::string nvrtc_architecture(const std::vector<int>& supported, int capability, const std::string& nvrtc_version,
                               const std::string& device) {
  if (std::find(supported.begin(), supported.end(), capability) != supported.end())
    return "sm_" + std::to_string(capability);
  int newest = 0;
  for (int architecture : supported)
    if (architecture <= capability) newest = std::max(newest, architecture);
  if (newest > 0) return "compute_" + std::to_string(newest);
  std::string oldest =
      supported.empty() ? "none" : "sm_" + std::to_string(*std::min_element(supported.begin(), supported.end()));
  throw Error(device + " has compute capability " + std::to_string(capability / 10) + "." +
              std::to_string(capability % 10) + ", older than every architecture NVRTC " + nvrtc_version +
              " compiles for (the oldest is " + oldest +
              "); point CANOPY_NVRTC at the NVRTC of an older CUDA toolkit that still supports it");
}

NvrtcImage nvrtc_compile(const NvrtcApi& nvrtc, const jit::CSource& source, const std::string& kernel_name,
                         const std::string& architecture, const std::string& where) {
  NvrtcImage result;
  result.architecture = architecture;
  result.is_cubin = architecture.rfind("sm_", 0) == 0;
  nvrtcProgram program = nullptr;
  const std::string file = kernel_name + ".cu";
  nvrtcResult status = nvrtc.nvrtcCreateProgram(&program, source.text.c_str(), file.c_str(), 0, nullptr, nullptr);
  if (status != kNvrtcSuccess)
    throw Error("nvrtcCreateProgram failed for kernel '" + kernel_name + "' on " + where + ": " +
                nvrtc_error_name(nvrtc, status));
  struct Destroy {
    const NvrtcApi& nvrtc;
    nvrtcProgram& program;
    ~Destroy() { nvrtc.nvrtcDestroyProgram(&program); }
  } destroy{nvrtc, program};

  const std::vector<std::string> options = jit::cuda_compile_options(architecture);
  std::vector<const char*> option_pointers;
  for (const auto& option : options) option_pointers.push_back(option.c_str());
  status = nvrtc.nvrtcCompileProgram(program, static_cast<int>(option_pointers.size()), option_pointers.data());
  std::size_t log_size = 0;
  if (nvrtc.nvrtcGetProgramLogSize(program, &log_size) == kNvrtcSuccess && log_size > 1) {
    result.log.resize(log_size);
    if (nvrtc.nvrtcGetProgramLog(program, result.log.data()) != kNvrtcSuccess) result.log.clear();
    while (!result.log.empty() && (result.log.back() == '\0' || result.log.back() == '\n')) result.log.pop_back();
  }
  if (status != kNvrtcSuccess) {
    std::string options_text;
    for (const auto& option : options) options_text += " " + option;
    throw Error(where + " could not compile kernel '" + kernel_name + "' with NVRTC " + std::to_string(nvrtc.major) +
                "." + std::to_string(nvrtc.minor) + " for " + architecture + " (" + nvrtc_error_name(nvrtc, status) +
                "; options" + options_text + ").\nNVRTC log:\n" +
                (result.log.empty() ? std::string("(NVRTC gave no log)") : result.log) + "\nCUDA C++ source (" +
                source.entry + "):\n" + jit::numbered_source(source.text) +
                "Canopy generated this source from the kernel's IR: if the log blames the source, please report it "
                "with the IR (CANOPY_DUMP=ir,cuda writes both).");
  }
  std::size_t size = 0;
  if (result.is_cubin) {
    status = nvrtc.nvrtcGetCUBINSize(program, &size);
    if (status == kNvrtcSuccess) {
      result.image.resize(size);
      status = nvrtc.nvrtcGetCUBIN(program, result.image.data());
    }
  } else {
    status = nvrtc.nvrtcGetPTXSize(program, &size);
    if (status == kNvrtcSuccess) {
      result.image.resize(size);
      status = nvrtc.nvrtcGetPTX(program, result.image.data());
      while (!result.image.empty() && result.image.back() == '\0') result.image.pop_back();
    }
  }
  if (status != kNvrtcSuccess || result.image.empty())
    throw Error("NVRTC compiled kernel '" + kernel_name + "' for " + architecture + " on " + where + " but gave no " +
                (result.is_cubin ? "cubin" : "PTX") + " (" + nvrtc_error_name(nvrtc, status) + ")");
  return result;
}

std::array<int, 3> point_block(const Range& range, int budget_threads, const std::array<int, 3>& max_block) {
  std::array<int, 3> block{1, 1, 1};
  auto budget = floor_pow2(static_cast<std::size_t>(std::max(1, budget_threads)));
  const int dims = range.dims;
  for (int e = 0; e < dims; ++e) {
    const auto d = static_cast<std::size_t>(dims - 1 - e);
    const auto extent = static_cast<std::size_t>(std::max<std::int64_t>(1, range.end[d] - range.begin[d]));
    std::size_t size =
        std::min(budget, floor_pow2(static_cast<std::size_t>(std::max(1, max_block[static_cast<std::size_t>(e)]))));
    if (dims > 1) size = std::min({size, floor_pow2(extent), e == 0 ? std::size_t{64} : size});
    block[static_cast<std::size_t>(e)] = static_cast<int>(std::max<std::size_t>(1, size));
    budget = std::max<std::size_t>(1, budget / static_cast<std::size_t>(block[static_cast<std::size_t>(e)]));
  }
  return block;
}

// A box of blocks along device x, y, z: the first thread's offset from the
// range's begin, and how many blocks.
namespace {
struct BlockBox {
  bool edges = false;
  std::array<std::int64_t, 3> offset{0, 0, 0};
  std::array<std::int64_t, 3> blocks{1, 1, 1};
};
}  // namespace

std::vector<PointLaunch> plan_point_launches(const Range& range, const std::array<int, 3>& block,
                                             const std::array<std::int64_t, 3>& max_grid) {
  const int dims = range.dims;
  std::array<std::int64_t, 3> extent{1, 1, 1}, local{1, 1, 1}, whole{1, 1, 1};
  for (int e = 0; e < dims; ++e) {
    const auto d = static_cast<std::size_t>(dims - 1 - e);
    extent[e] = range.end[d] - range.begin[d];
    local[e] = std::max(1, block[static_cast<std::size_t>(e)]);
    whole[e] = extent[e] / local[e];  // whole blocks
  }
  // Whole blocks everywhere, then for each dimension e with a partial block
  // at its end: that block along e, every block (partial ones included)
  // along the dimensions before e, and whole blocks along those after. A
  // point lands in the box of the last dimension where it is in a partial
  // block, or in the first box when it is in none.
  std::vector<BlockBox> boxes;
  BlockBox interior;
  for (int e = 0; e < dims; ++e) interior.blocks[e] = whole[e];
  boxes.push_back(interior);
  for (int e = 0; e < dims; ++e) {
    if (whole[e] * local[e] == extent[e]) continue;
    BlockBox box;
    box.edges = true;
    for (int f = 0; f < dims; ++f) box.blocks[f] = f < e ? (extent[f] + local[f] - 1) / local[f] : whole[f];
    box.offset[e] = whole[e] * local[e];
    box.blocks[e] = 1;
    boxes.push_back(box);
  }
  std::vector<PointLaunch> launches;
  for (const BlockBox& box : boxes) {
    bool empty = false;
    for (int e = 0; e < dims; ++e) empty = empty || box.blocks[e] == 0;
    if (empty) continue;
    // Split the box where it has more blocks than a grid may.
    std::array<std::int64_t, 3> step{};
    for (int e = 0; e < 3; ++e) step[e] = std::max<std::int64_t>(1, max_grid[e]);
    for (std::int64_t z = 0; z < box.blocks[2]; z += step[2])
      for (std::int64_t y = 0; y < box.blocks[1]; y += step[1])
        for (std::int64_t x = 0; x < box.blocks[0]; x += step[0]) {
          const std::array<std::int64_t, 3> first{x, y, z};
          PointLaunch launch;
          launch.edges = box.edges;
          for (int e = 0; e < 3; ++e) launch.grid[e] = std::min(step[e], box.blocks[e] - first[e]);
          for (int e = 0; e < dims; ++e) {
            const auto d = static_cast<std::size_t>(dims - 1 - e);
            launch.begin[d] = range.begin[d] + box.offset[e] + first[e] * local[e];
          }
          launches.push_back(launch);
        }
  }
  return launches;
}

void check_device_supports(const ir::Kernel& kernel, const DeviceInfo& info, const CudaTraits& traits) {
  const jit::CSourceFeatures features = jit::features_of(kernel);
  if (!features.int64_atomics || traits.capability() >= 60) return;
  // i64 atomics work everywhere (atomicAdd on unsigned long long); f64 ones need sm_60.
  struct F64Atomics : ir::Visitor {
    bool found = false;
    void visit(const ir::AtomicAdd& node) override { found = found || node.value->type == ir::ScalarType::F64; }
  } finder;
  finder.walk(kernel.body);
  if (finder.found)
    throw Error("kernel '" + kernel.name +
                "' adds atomically to an f64 array, which needs compute capability 6.0, and " + "CUDA device '" +
                info.name + "' (" + info.id + ") has " + std::to_string(traits.compute_major) + "." +
                std::to_string(traits.compute_minor) + "; use f32 atomics or run the kernel on another device");
}

// ---- the device -------------------------------------------------------------------

CudaDevice::CudaDevice(std::shared_ptr<const DriverApi> driver, std::shared_ptr<const NvrtcApi> nvrtc, int ordinal,
                       int index, const CudaOptions& options)
    : driver_(std::move(driver)), nvrtc_(std::move(nvrtc)) {
  info_.id = "cuda:" + std::to_string(index);
  info_.backend = "cuda";
  info_.vendor = "NVIDIA Corporation";
  read_attributes(ordinal);
  const DriverApi& api = *driver_;
  check(api, api.cuDevicePrimaryCtxRetain(&context_->context, context_->device), "cuDevicePrimaryCtxRetain", label());
  {
    CurrentContext current(*context_, label());
    check(api, api.cuStreamCreate(&stream_, kStreamNonBlocking), "cuStreamCreate", label());
    if (const CUresult status = api.cuEventCreate(&done_, kEventDisableTiming); status != kCudaSuccess) {
      api.cuStreamDestroy(stream_);
      stream_ = nullptr;
      check(api, status, "cuEventCreate", label());
    }
  }
  if (const std::string dir = jit::cache_directory(options.cache_dir); dir != "off")
    disk_ = std::make_unique<jit::DiskCache>(dir);
}

void CudaDevice::read_attributes(int ordinal) {
  const DriverApi& api = *driver_;
  const std::string where = "CUDA device " + std::to_string(ordinal);
  CUdevice device = 0;
  check(api, api.cuDeviceGet(&device, ordinal), "cuDeviceGet", where);
  context_ = std::make_shared<CudaContext>(driver_, device);
  char name[256] = {};
  check(api, api.cuDeviceGetName(name, static_cast<int>(sizeof name) - 1, device), "cuDeviceGetName", where);
  info_.name = name;
  info_.emulated = emulated_device_name(name);
  auto attribute = [&](DeviceAttribute which) {
    int value = 0;
    check(api, api.cuDeviceGetAttribute(&value, which, device),
          "cuDeviceGetAttribute(" + std::to_string(static_cast<int>(which)) + ")", label());
    return value;
  };
  traits_.compute_major = attribute(DeviceAttribute::ComputeCapabilityMajor);
  traits_.compute_minor = attribute(DeviceAttribute::ComputeCapabilityMinor);
  traits_.warp_size = attribute(DeviceAttribute::WarpSize);
  traits_.max_block = {attribute(DeviceAttribute::MaxBlockDimX), attribute(DeviceAttribute::MaxBlockDimY),
                       attribute(DeviceAttribute::MaxBlockDimZ)};
  traits_.max_grid = {attribute(DeviceAttribute::MaxGridDimX), attribute(DeviceAttribute::MaxGridDimY),
                      attribute(DeviceAttribute::MaxGridDimZ)};
  traits_.shared_memory_per_block = static_cast<std::size_t>(attribute(DeviceAttribute::MaxSharedMemoryPerBlock));
  traits_.integrated = attribute(DeviceAttribute::Integrated) != 0;
  check(api, api.cuDriverGetVersion(&traits_.driver_version), "cuDriverGetVersion", label());
  traits_.nvrtc_version = nvrtc_->version();
  traits_.architecture =
      nvrtc_architecture(nvrtc_->architectures, traits_.capability(), traits_.nvrtc_version, label());

  info_.compute_units = attribute(DeviceAttribute::MultiprocessorCount);
  std::size_t memory = 0;
  check(api, api.cuDeviceTotalMem(&memory, device), "cuDeviceTotalMem", label());
  info_.global_memory = static_cast<std::int64_t>(memory);
  info_.max_allocation = info_.global_memory;
  info_.max_work_group = attribute(DeviceAttribute::MaxThreadsPerBlock);
  info_.preferred_vector_width = 4;  // one float per thread: GPUs vectorise across threads
  info_.fp64 = true;
  info_.host_memory = false;
  info_.on_host_cores = false;
  // "0000:3b:00.0" as hwloc and OpenCL write it: the driver may write the
  // domain with 8 digits and the hexadecimal in capitals.
  char bus[64] = {};
  unsigned domain = 0, bus_number = 0, slot = 0, function = 0;
  if (api.cuDeviceGetPCIBusId(bus, static_cast<int>(sizeof bus) - 1, device) != kCudaSuccess ||
      std::sscanf(bus, "%x:%x:%x.%x", &domain, &bus_number, &slot, &function) != 4) {
    domain = static_cast<unsigned>(attribute(DeviceAttribute::PciDomainId));
    bus_number = static_cast<unsigned>(attribute(DeviceAttribute::PciBusId));
    slot = static_cast<unsigned>(attribute(DeviceAttribute::PciDeviceId));
    function = 0;
  }
  char text[32];
  std::snprintf(text, sizeof text, "%04x:%02x:%02x.%x", domain, bus_number, slot, function);
  info_.pci_bus_id = text;
  const std::string capability = std::to_string(traits_.compute_major) + "." + std::to_string(traits_.compute_minor);
  info_.driver_version = "CUDA driver " + driver_version_text(traits_.driver_version) + ", NVRTC " +
                         traits_.nvrtc_version + ", compute capability " + capability;
  info_.fingerprint = "cuda|" + info_.name + "|sm_" + std::to_string(traits_.capability()) + "|driver " +
                      std::to_string(traits_.driver_version) + "|nvrtc " + traits_.nvrtc_version;

  const auto most = static_cast<int>(floor_pow2(static_cast<std::size_t>(std::max(1, info_.max_work_group))));
  traits_.block_size = std::min(most, 256);
  traits_.reduction_block_size = std::min(most, jit::kCudaReductionBlock);
  traits_.reduction_blocks = std::max(1, info_.compute_units) * 4;
}

CudaDevice::~CudaDevice() {
  {
    std::lock_guard lock(compile_mutex_);
    programs_.clear();  // programs held elsewhere keep the context alive
  }
  if (!context_ || !context_->context) return;
  const DriverApi& api = *driver_;
  if (api.cuCtxPushCurrent(context_->context) != kCudaSuccess) return;
  if (stream_) {
    api.cuStreamSynchronize(stream_);
    api.cuStreamDestroy(stream_);
  }
  if (done_) api.cuEventDestroy(done_);
  CUcontext popped = nullptr;
  api.cuCtxPopCurrent(&popped);
}

std::string CudaDevice::label() const { return "CUDA device '" + info_.name + "' (" + info_.id + ")"; }

jit::CSourceOptions CudaDevice::code_options() const {
  jit::CSourceOptions options;
  options.reduction_walk = jit::ReductionWalk::Strided;  // neighbouring threads read neighbouring elements
  return options;
}

void CudaDevice::wait(const std::string& what) {
  const DriverApi& api = *driver_;
  check(api, api.cuEventRecord(done_, stream_), "cuEventRecord after " + what, label());
  check(api, api.cuEventSynchronize(done_), "waiting for " + what, label());
}

// ---- memory -------------------------------------------------------------------------

Buffer CudaDevice::allocate(std::size_t bytes) {
  const auto largest = static_cast<std::size_t>(info_.max_allocation);
  if (largest > 0 && bytes > largest)
    throw Error(label() + " cannot allocate " + bytes_text(bytes) + ": it has " + bytes_text(largest) +
                " of memory; split the array or place it on another location");
  const DriverApi& api = *driver_;
  CurrentContext current(*context_, label());
  CUdeviceptr memory = 0;
  // cuMemAlloc takes no empty allocations: an empty buffer holds one byte nobody reads.
  const bool injected = inject_fault("cuda", FaultOperation::Alloc);
  const CUresult status = injected ? kCudaErrorOutOfMemory : api.cuMemAlloc(&memory, std::max<std::size_t>(bytes, 1));
  if (status != kCudaSuccess || memory == 0) {
    std::size_t free_bytes = 0, total_bytes = 0;
    api.cuMemGetInfo(&free_bytes, &total_bytes);
    throw Error(label() + " could not allocate " + bytes_text(bytes) + " (" + error_name(api, status) +
                (injected ? injected_note("cuda", FaultOperation::Alloc) : "") + "); " + bytes_text(free_bytes) +
                " of its " + bytes_text(total_bytes) + " are free: free arrays there or place this one elsewhere");
  }
  return Buffer{reinterpret_cast<void*>(static_cast<std::uintptr_t>(memory)), bytes};
}

void CudaDevice::free(Buffer buffer) noexcept {
  if (!buffer.handle) return;
  const DriverApi& api = *driver_;
  if (api.cuCtxPushCurrent(context_->context) != kCudaSuccess) return;
  api.cuMemFree(static_cast<CUdeviceptr>(reinterpret_cast<std::uintptr_t>(buffer.handle)));
  CUcontext popped = nullptr;
  api.cuCtxPopCurrent(&popped);
}

void CudaDevice::check_buffer(Buffer buffer, std::size_t offset, std::size_t bytes, const char* what) const {
  if (!buffer) throw Error(std::string(what) + " on " + label() + " was given no buffer");
  if (offset > buffer.bytes || bytes > buffer.bytes - offset)
    throw Error(std::string(what) + " on " + label() + " reaches byte " + std::to_string(offset + bytes) +
                " of a buffer of " + std::to_string(buffer.bytes) + " bytes");
}

namespace {
CUdeviceptr address_of(Buffer buffer, std::size_t offset) {
  return static_cast<CUdeviceptr>(reinterpret_cast<std::uintptr_t>(buffer.handle)) + offset;
}
}  // namespace

void CudaDevice::copy_in(Buffer buffer, std::size_t offset, const void* source, std::size_t bytes) {
  check_buffer(buffer, offset, bytes, "copy_in");
  if (bytes == 0) return;
  if (!source) throw Error("copy_in on " + label() + " was given no host memory to read");
  const DriverApi& api = *driver_;
  std::lock_guard lock(launch_mutex_);
  CurrentContext current(*context_, label());
  if (inject_fault("cuda", FaultOperation::Copy))
    check(api, kCudaErrorLaunchFailed, "cuMemcpyHtoDAsync" + injected_note("cuda", FaultOperation::Copy), label());
  check(api, api.cuMemcpyHtoDAsync(address_of(buffer, offset), source, bytes, stream_), "cuMemcpyHtoDAsync", label());
  wait("a copy to the device");
}

void CudaDevice::copy_out(Buffer buffer, std::size_t offset, void* destination, std::size_t bytes) {
  check_buffer(buffer, offset, bytes, "copy_out");
  if (bytes == 0) return;
  if (!destination) throw Error("copy_out on " + label() + " was given no host memory to write");
  const DriverApi& api = *driver_;
  std::lock_guard lock(launch_mutex_);
  CurrentContext current(*context_, label());
  if (inject_fault("cuda", FaultOperation::Copy))
    check(api, kCudaErrorLaunchFailed, "cuMemcpyDtoHAsync" + injected_note("cuda", FaultOperation::Copy), label());
  check(api, api.cuMemcpyDtoHAsync(destination, address_of(buffer, offset), bytes, stream_), "cuMemcpyDtoHAsync",
        label());
  wait("a copy from the device");
}

void CudaDevice::fill(Buffer buffer, std::size_t first, std::size_t count, const ScalarArg& value) {
  const ir::ScalarType type = value.type;
  const std::size_t size = type == ir::ScalarType::Bool ? 1 : ir::size_of(type);
  check_buffer(buffer, 0, 0, "fill");
  const std::size_t capacity = buffer.bytes / size;
  if (first > capacity || count > capacity - first)
    throw Error("fill on " + label() + " reaches element " + std::to_string(first) + " + " + std::to_string(count) +
                " of a buffer of " + std::to_string(capacity) + " elements of " + std::to_string(size) + " bytes");
  if (count == 0) return;
  const std::uint64_t bits = scalar_slot(type, value);
  const DriverApi& api = *driver_;
  std::lock_guard lock(launch_mutex_);
  CurrentContext current(*context_, label());
  const CUdeviceptr start = address_of(buffer, first * size);
  if (size == 1) {
    check(api, api.cuMemsetD8Async(start, static_cast<unsigned char>(bits != 0), count, stream_), "cuMemsetD8Async",
          label());
  } else if (size == 4) {
    check(api, api.cuMemsetD32Async(start, static_cast<unsigned int>(bits), count, stream_), "cuMemsetD32Async",
          label());
  } else {
    const auto low = static_cast<unsigned int>(bits), high = static_cast<unsigned int>(bits >> 32);
    if (low == high) {
      check(api, api.cuMemsetD32Async(start, low, 2 * count, stream_), "cuMemsetD32Async", label());
    } else {
      // Each 8-byte element as a row of one 32-bit word, twice: the low
      // words, then the high ones.
      check(api, api.cuMemsetD2D32Async(start, 8, low, 1, count, stream_), "cuMemsetD2D32Async", label());
      check(api, api.cuMemsetD2D32Async(start + 4, 8, high, 1, count, stream_), "cuMemsetD2D32Async", label());
    }
  }
  wait("a fill");
}

// ---- compiling ------------------------------------------------------------------------

std::shared_ptr<Program> CudaDevice::compile(std::shared_ptr<const ir::Kernel> optimized) {
  if (!optimized) throw Error("compile on " + label() + " was given no kernel");
  if (inject_fault("cuda", FaultOperation::Compile))
    throw Error(label() + " could not compile kernel '" + optimized->name + "' with NVRTC (" +
                nvrtc_error_name(*nvrtc_, kNvrtcErrorCompilation) + injected_note("cuda", FaultOperation::Compile) +
                ")");
  ir::verify(*optimized);
  check_device_supports(*optimized, info_, traits_);
  return compile_source(optimized, jit::cuda_c_source(*optimized, code_options()));
}

std::shared_ptr<CudaProgram> CudaDevice::compile_source(std::shared_ptr<const ir::Kernel> optimized,
                                                        jit::CSource source) {
  if (!optimized) throw Error("compile on " + label() + " was given no kernel");
  ir::verify(*optimized);
  check_device_supports(*optimized, info_, traits_);
  dump("cuda", optimized->name, source.text);
  std::string options;
  for (const auto& option : jit::cuda_compile_options(traits_.architecture)) options += option + " ";
  const std::string key = jit::hash_hex("canopy cuda program " + std::to_string(kProgramFormatVersion) + "\n" +
                                        info_.fingerprint + "\n" + nvrtc_->version() + "\n" + options + "\n" +
                                        source.entry + "\n" + source.edge_entry + "\n" + source.text);
  std::lock_guard lock(compile_mutex_);
  if (auto known = programs_[key].lock()) return known;
  auto program = build(std::move(optimized), std::move(source), key);
  programs_[key] = program;
  return program;
}

std::shared_ptr<CudaProgram> CudaDevice::build(std::shared_ptr<const ir::Kernel> optimized, jit::CSource source,
                                               const std::string& key) {
  std::shared_ptr<CudaProgram> program(new CudaProgram);
  program->context_ = context_;
  program->device_ = this;
  program->kernel_ = std::move(optimized);
  program->source_ = std::move(source);
  program->cache_key_ = key;
  const DriverApi& api = *driver_;
  CurrentContext current(*context_, label());
  program->origin_ = load_or_build(
      disk_.get(), key, [&](const std::string& binary) { return load_module(*program, binary, false); },
      [&] {
        NvrtcImage image =
            nvrtc_compile(*nvrtc_, program->source_, program->kernel_->name, traits_.architecture, label());
        load_module(*program, image.image, true);
        return std::move(image.image);
      });
  const std::string& name = program->kernel_->name;
  check(api, api.cuModuleGetFunction(&program->entry_, program->module_, program->source_.entry.c_str()),
        "cuModuleGetFunction for kernel '" + name + "'", label());
  std::vector<CUfunction> functions{program->entry_};
  if (!program->source_.edge_entry.empty()) {
    check(api, api.cuModuleGetFunction(&program->edges_, program->module_, program->source_.edge_entry.c_str()),
          "cuModuleGetFunction for the edges of kernel '" + name + "'", label());
    functions.push_back(program->edges_);
  }
  program->max_threads_ = std::max(1, info_.max_work_group);
  for (CUfunction function : functions) {
    int threads = 0;
    if (api.cuFuncGetAttribute(&threads, FunctionAttribute::MaxThreadsPerBlock, function) == kCudaSuccess &&
        threads > 0)
      program->max_threads_ = std::min(program->max_threads_, threads);
  }
  // One partial per block for each reduction, allocated once.
  const auto& params = program->kernel_->params;
  program->partials_.assign(params.size(), 0);
  for (std::size_t p = 0; p < params.size(); ++p)
    if (params[p].is_reduction())
      program->partials_[p] =
          address_of(allocate(static_cast<std::size_t>(traits_.reduction_blocks) * ir::size_of(params[p].type)), 0);
  return program;
}

bool CudaDevice::load_module(CudaProgram& program, const std::string& image, bool throw_on_failure) {
  const DriverApi& api = *driver_;
  std::string info_log(16384, '\0'), error_log(16384, '\0');
  JitOption options[] = {JitOption::InfoLogBuffer, JitOption::InfoLogBufferSizeBytes, JitOption::ErrorLogBuffer,
                         JitOption::ErrorLogBufferSizeBytes, JitOption::LogVerbose};
  void* values[] = {info_log.data(), reinterpret_cast<void*>(static_cast<std::uintptr_t>(info_log.size())),
                    error_log.data(), reinterpret_cast<void*>(static_cast<std::uintptr_t>(error_log.size())),
                    reinterpret_cast<void*>(std::uintptr_t{1})};
  // A cubin is an ELF image; PTX is text the driver reads up to its NUL (c_str).
  const bool is_cubin = image.size() >= 4 && image.compare(0, 4,
                                                           "\x7f"
                                                           "ELF") == 0;
  CUmodule module = nullptr;
  const CUresult status = api.cuModuleLoadDataEx(&module, image.c_str(), 5, options, values);
  if (status == kCudaSuccess) {
    program.module_ = module;
    program.is_cubin_ = is_cubin;
    return true;
  }
  if (!throw_on_failure) return false;
  error_log.resize(std::strlen(error_log.c_str()));
  std::string hint;
  if (status == kCudaErrorUnsupportedPtxVersion)
    hint = "\nThe driver (CUDA " + driver_version_text(traits_.driver_version) + ") is older than NVRTC " +
           nvrtc_->version() + ": update the driver, or point CANOPY_NVRTC at an NVRTC no newer than it.";
  throw Error(label() + " could not load kernel '" + program.kernel_->name + "' compiled for " + traits_.architecture +
              " (cuModuleLoadDataEx: " + error_name(api, status) + ")." + hint + "\nJIT log:\n" +
              (error_log.empty() ? std::string("(the driver gave no log)") : error_log) + "\nCUDA C++ source (" +
              program.source_.entry + "):\n" + jit::numbered_source(program.source_.text));
}

// ---- running --------------------------------------------------------------------------------

std::vector<ReductionValue> CudaDevice::run(const Program& base, const std::vector<KernelArg>& args,
                                            const Range& range) {
  const auto* program = dynamic_cast<const CudaProgram*>(&base);
  if (!program || program->device_ != this)
    throw Error(label() + " was asked to run a program compiled for another device; compile the kernel on it first");
  const ir::Kernel& kernel = program->kernel();
  if (args.size() != kernel.params.size())
    throw Error("kernel '" + kernel.name + "' takes " + std::to_string(kernel.params.size()) + " arguments, " +
                std::to_string(args.size()) + " were given");
  for (std::size_t p = 0; p < args.size(); ++p) {
    const auto& param = kernel.params[p];
    const bool fits = param.is_array()    ? std::holds_alternative<ArrayArg>(args[p])
                      : param.is_scalar() ? std::holds_alternative<ScalarArg>(args[p])
                                          : std::holds_alternative<ReductionArg>(args[p]);
    if (!fits)
      throw Error("argument " + std::to_string(p) + " of kernel '" + kernel.name + "' does not fit its " +
                  std::string(ir::name_of(param.kind)) + " parameter '" + param.name + "'");
  }
  if (range.dims != kernel.dims)
    throw Error("kernel '" + kernel.name + "' has " + std::to_string(kernel.dims) + " index dimensions, the range " +
                std::to_string(range.dims));
  bool empty = false;
  for (int d = 0; d < kernel.dims; ++d) {
    if (range.begin[d] < 0)
      throw Error(label() + " runs index ranges from 0 up; kernel '" + kernel.name +
                  "' was given a range starting at " + std::to_string(range.begin[d]) + " in dimension " +
                  std::to_string(d));
    empty = empty || range.end[d] <= range.begin[d];
  }
  std::vector<ReductionValue> results;
  if (empty) {
    for (const auto& param : kernel.params)
      if (param.is_reduction()) results.push_back(identity_value(param.reduce, param.type));
    return results;
  }

  // The arguments as the kernel ABI says (jit/cuda_c.hpp), one 8-byte slot
  // each; cuLaunchKernel reads each parameter's size from the kernel.
  std::vector<std::uint64_t> values;
  std::vector<std::size_t> begin_slots;
  for (std::size_t p = 0; p < args.size(); ++p) {
    const ir::Param& param = kernel.params[p];
    if (param.is_array()) {
      const auto& array = std::get<ArrayArg>(args[p]);
      values.push_back(static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(array.data)));
      for (int d = 0; d < param.rank; ++d)
        values.push_back(static_cast<std::uint64_t>(array.extents[static_cast<std::size_t>(d)]));
      values.push_back(static_cast<std::uint64_t>(array.first));
    } else if (param.is_scalar()) {
      values.push_back(scalar_slot(param.type, std::get<ScalarArg>(args[p])));
    } else {
      values.push_back(program->partials_[p]);
    }
  }
  for (int d = 0; d < kernel.dims; ++d) {
    begin_slots.push_back(values.size());
    values.push_back(static_cast<std::uint64_t>(range.begin[d]));
    values.push_back(static_cast<std::uint64_t>(range.end[d]));
  }
  std::vector<void*> params;
  for (auto& value : values) params.push_back(&value);

  if (inject_fault("cuda", FaultOperation::Launch))
    check(*driver_, kCudaErrorLaunchFailed,
          "cuLaunchKernel for kernel '" + kernel.name + "'" + injected_note("cuda", FaultOperation::Launch), label());
  std::lock_guard lock(launch_mutex_);
  CurrentContext current(*context_, label());
  if (program->edges_) {
    launch_points(*program, values, params, begin_slots, range);
    return results;
  }
  return launch_reduction(*program, values, params, begin_slots, range);
}

void CudaDevice::launch_points(const CudaProgram& program, std::vector<std::uint64_t>& values,
                               std::vector<void*>& params, const std::vector<std::size_t>& begin_slots,
                               const Range& range) {
  const DriverApi& api = *driver_;
  const std::array<int, 3> block =
      point_block(range, std::min(traits_.block_size, program.max_threads_), traits_.max_block);
  const std::string what = "kernel '" + program.kernel().name + "'";
  for (const PointLaunch& launch : plan_point_launches(range, block, traits_.max_grid)) {
    for (std::size_t d = 0; d < begin_slots.size(); ++d)
      values[begin_slots[d]] = static_cast<std::uint64_t>(launch.begin[d]);
    const CUresult status =
        api.cuLaunchKernel(launch.edges ? program.edges_ : program.entry_, static_cast<unsigned int>(launch.grid[0]),
                           static_cast<unsigned int>(launch.grid[1]), static_cast<unsigned int>(launch.grid[2]),
                           static_cast<unsigned int>(block[0]), static_cast<unsigned int>(block[1]),
                           static_cast<unsigned int>(block[2]), 0, stream_, params.data(), nullptr);
    if (status != kCudaSuccess) {
      api.cuStreamSynchronize(stream_);
      check(api, status, "cuLaunchKernel for " + what, label());
    }
  }
  wait(what);
}

std::vector<ReductionValue> CudaDevice::launch_reduction(const CudaProgram& program, std::vector<std::uint64_t>& values,
                                                         std::vector<void*>& params,
                                                         const std::vector<std::size_t>& begin_slots,
                                                         const Range& range) {
  const DriverApi& api = *driver_;
  const ir::Kernel& kernel = program.kernel();
  const std::string what = "kernel '" + kernel.name + "'";
  for (std::size_t d = 0; d < begin_slots.size(); ++d)
    values[begin_slots[d]] = static_cast<std::uint64_t>(range.begin[d]);
  const auto block = floor_pow2(static_cast<std::size_t>(
      std::max(1, std::min({traits_.reduction_block_size, program.max_threads_, jit::kCudaReductionBlock}))));
  const auto points = static_cast<std::size_t>(range.points());
  const std::size_t blocks = std::max<std::size_t>(
      1, std::min(static_cast<std::size_t>(traits_.reduction_blocks), (points + block - 1) / block));
  check(api,
        api.cuLaunchKernel(program.entry_, static_cast<unsigned int>(blocks), 1, 1, static_cast<unsigned int>(block), 1,
                           1, 0, stream_, params.data(), nullptr),
        "cuLaunchKernel for " + what, label());
  // Every reduction's partials, then one wait: the stream runs in order.
  std::vector<std::vector<unsigned char>> partials(kernel.params.size());
  for (std::size_t p = 0; p < kernel.params.size(); ++p) {
    const ir::Param& param = kernel.params[p];
    if (!param.is_reduction()) continue;
    partials[p].resize(blocks * ir::size_of(param.type));
    check(api, api.cuMemcpyDtoHAsync(partials[p].data(), program.partials_[p], partials[p].size(), stream_),
          "reading the partial results of " + what, label());
  }
  wait(what);
  std::vector<ReductionValue> results;
  for (std::size_t p = 0; p < kernel.params.size(); ++p) {
    const ir::Param& param = kernel.params[p];
    if (!param.is_reduction()) continue;
    const std::size_t size = ir::size_of(param.type);
    ReductionValue total = identity_value(param.reduce, param.type);
    for (std::size_t b = 0; b < blocks; ++b)
      total = combine(param.reduce, total, partial_value(param.type, partials[p].data() + b * size));
    results.push_back(total);
  }
  return results;
}

// ---- discovery ---------------------------------------------------------------------------

BackendDevices discover_cuda(const CudaOptions& options) {
  BackendDevices found;
  found.backend = "cuda";
  const std::string driver_library = options.driver_library.empty() ? default_driver_library() : options.driver_library;
  const std::string nvrtc_library = options.nvrtc_library.empty() ? default_nvrtc_library() : options.nvrtc_library;
  const LoadedDriver& driver = load_driver(driver_library);
  const LoadedNvrtc& nvrtc = load_nvrtc(nvrtc_library);
  if (!driver.api || !nvrtc.api) {
    found.absent_reason = driver.absent_reason;
    if (!nvrtc.api) found.absent_reason += (found.absent_reason.empty() ? "" : "; and ") + nvrtc.absent_reason;
    return found;
  }
  const DriverApi& api = *driver.api;
  if (const CUresult status = api.cuInit(0); status != kCudaSuccess) {
    found.absent_reason =
        "cuInit failed in the CUDA driver library '" + driver_library + "': " + error_name(api, status);
    if (status == kCudaErrorStubLibrary)
      found.absent_reason += " (this is the toolkit's stub library, not a driver: install the NVIDIA driver)";
    else if (status == kCudaErrorNoDevice)
      found.absent_reason += " (the driver is installed but sees no GPU)";
    return found;
  }
  int count = 0;
  if (const CUresult status = api.cuDeviceGetCount(&count); status != kCudaSuccess) {
    found.absent_reason = "cuDeviceGetCount failed: " + error_name(api, status);
    return found;
  }
  std::string problems;
  for (int ordinal = 0; ordinal < count; ++ordinal) {
    try {
      const int index = static_cast<int>(found.devices.size());
      found.devices.push_back(std::make_shared<CudaDevice>(driver.api, nvrtc.api, ordinal, index, options));
    } catch (const std::exception& error) {
      problems += std::string(problems.empty() ? "" : "; ") + error.what();
    }
  }
  if (found.devices.empty() && problems.empty()) {
    int version = 0;
    api.cuDriverGetVersion(&version);
    problems =
        "no CUDA device: the driver '" + driver_library + "' (CUDA " + driver_version_text(version) + ") sees none";
  }
  if (found.devices.empty()) found.absent_reason = problems;
  return found;
}

}  // namespace canopy::backends::cuda
