#include "level_zero_device.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <tuple>

#include <canopy/ir/error.hpp>
#include <canopy/ir/verifier.hpp>
#include <canopy/jit/c_source.hpp>
#include <canopy/jit/checked_file.hpp>
#include <canopy/jit/hash.hpp>
#include "../fault_injection.hpp"
#include "../program_cache.hpp"

namespace canopy::backends::level_zero {

namespace {

// Changes whenever what a cached native binary means for a given key changes
// in a way the key does not show (the host side of the kernel ABI).
constexpr int kProgramFormatVersion = 1;
constexpr std::uint64_t kFourGiB = std::uint64_t{1} << 32;
constexpr std::uint64_t kForever = UINT64_MAX;

std::string hex(const std::uint8_t* bytes, std::size_t count) {
  std::string text;
  char digits[3];
  for (std::size_t k = 0; k < count; ++k) {
    std::snprintf(digits, sizeof digits, "%02x", bytes[k]);
    text += digits;
  }
  return text;
}

std::string vendor_name(std::uint32_t vendor_id) {
  switch (vendor_id) {
    case 0x8086: return "Intel";
    case 0x10de: return "NVIDIA";
    case 0x1002: return "AMD";
    default: {
      char text[32];
      std::snprintf(text, sizeof text, "PCI vendor 0x%04x", vendor_id);
      return text;
    }
  }
}

std::string bytes_text(std::size_t bytes) {
  char text[64];
  std::snprintf(text, sizeof text, "%zu bytes (%.2f GiB)", bytes, static_cast<double>(bytes) / (1 << 30));
  return text;
}

// Reads everything describe_device needs from `device` of `driver`.
LevelZeroProperties read_properties(const Api& api, ze_driver_handle_t driver, ze_device_handle_t device,
                                    const std::string& where) {
  LevelZeroProperties p;
  p.driver.stype = ZE_STRUCTURE_TYPE_DRIVER_PROPERTIES;
  check(api.zeDriverGetProperties(driver, &p.driver), "zeDriverGetProperties", where);
  check(api.zeDriverGetApiVersion(driver, &p.api_version), "zeDriverGetApiVersion", where);
  p.device.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES;
  check(api.zeDeviceGetProperties(device, &p.device), "zeDeviceGetProperties", where);
  p.compute.stype = ZE_STRUCTURE_TYPE_DEVICE_COMPUTE_PROPERTIES;
  check(api.zeDeviceGetComputeProperties(device, &p.compute), "zeDeviceGetComputeProperties", where);
  p.module.stype = ZE_STRUCTURE_TYPE_DEVICE_MODULE_PROPERTIES;
  check(api.zeDeviceGetModuleProperties(device, &p.module), "zeDeviceGetModuleProperties", where);
  std::uint32_t count = 0;
  check(api.zeDeviceGetMemoryProperties(device, &count, nullptr), "zeDeviceGetMemoryProperties", where);
  ze_device_memory_properties_t memory{};
  memory.stype = ZE_STRUCTURE_TYPE_DEVICE_MEMORY_PROPERTIES;
  p.memories.assign(count, memory);
  if (count > 0)
    check(api.zeDeviceGetMemoryProperties(device, &count, p.memories.data()), "zeDeviceGetMemoryProperties", where);
  p.memories.resize(count);
  count = 0;
  check(api.zeDeviceGetCommandQueueGroupProperties(device, &count, nullptr), "zeDeviceGetCommandQueueGroupProperties",
        where);
  ze_command_queue_group_properties_t group{};
  group.stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_GROUP_PROPERTIES;
  p.queue_groups.assign(count, group);
  if (count > 0)
    check(api.zeDeviceGetCommandQueueGroupProperties(device, &count, p.queue_groups.data()),
          "zeDeviceGetCommandQueueGroupProperties", where);
  p.queue_groups.resize(count);
  if (api.zeDevicePciGetPropertiesExt) {
    ze_pci_ext_properties_t pci{};
    pci.stype = ZE_STRUCTURE_TYPE_PCI_EXT_PROPERTIES;
    if (api.zeDevicePciGetPropertiesExt(device, &pci) == ZE_RESULT_SUCCESS) p.pci = pci;
  }
  return p;
}

}  // namespace

// ---- describing a device ------------------------------------------------------

std::pair<DeviceInfo, LevelZeroTraits> describe_device(const LevelZeroProperties& p, int index) {
  DeviceInfo info;
  LevelZeroTraits traits;
  const auto& device = p.device;
  info.id = "level_zero:" + std::to_string(index);
  info.backend = "level_zero";
  info.name = std::string(device.name, strnlen(device.name, sizeof device.name));
  info.emulated = emulated_device_name(info.name);
  info.vendor = vendor_name(device.vendorId);
  char ids[64];
  std::snprintf(ids, sizeof ids, "%04x:%04x", device.vendorId, device.deviceId);
  info.driver_version = "driver " + std::to_string(p.driver.driverVersion) + ", Level Zero " +
                        std::to_string(ZE_MAJOR_VERSION(p.api_version)) + "." +
                        std::to_string(ZE_MINOR_VERSION(p.api_version));
  info.fingerprint = "level_zero|" + info.name + "|" + ids + "|" + std::to_string(p.driver.driverVersion) + "|" +
                     hex(p.module.nativeKernelSupported.id, sizeof p.module.nativeKernelSupported.id);
  if (p.pci) {
    char bus[32];
    const auto& a = p.pci->address;
    std::snprintf(bus, sizeof bus, "%04x:%02x:%02x.%x", a.domain, a.bus, a.device, a.function);
    info.pci_bus_id = bus;
  }
  info.compute_units = static_cast<int>(std::max<std::uint64_t>(
      1, std::uint64_t{device.numSlices} * device.numSubslicesPerSlice * device.numEUsPerSubslice));
  for (const auto& memory : p.memories) info.global_memory += static_cast<std::int64_t>(memory.totalSize);
  info.max_allocation = static_cast<std::int64_t>(device.maxMemAllocSize);
  info.max_work_group = static_cast<int>(std::max<std::uint32_t>(1, p.compute.maxTotalGroupSize));
  info.preferred_vector_width = static_cast<int>(device.physicalEUSimdWidth * 4);
  info.fp64 = (p.module.flags & ZE_DEVICE_MODULE_FLAG_FP64) != 0;
  info.host_memory = false;
  info.on_host_cores = device.type == ZE_DEVICE_TYPE_CPU;

  traits.vendor_id = device.vendorId;
  traits.device_id = device.deviceId;
  traits.spirv_version = p.module.spirvVersionSupported;
  traits.int64_atomics = (p.module.flags & ZE_DEVICE_MODULE_FLAG_INT64_ATOMICS) != 0;
  traits.integrated = (device.flags & ZE_DEVICE_PROPERTY_FLAG_INTEGRATED) != 0;
  for (std::size_t g = 0; g < p.queue_groups.size(); ++g)
    if (p.queue_groups[g].flags & ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COMPUTE) {
      traits.compute_ordinal = static_cast<std::uint32_t>(g);
      traits.max_fill_pattern = p.queue_groups[g].maxMemoryFillPatternSize;
      break;
    }
  SpirvLaunchLimits& limits = traits.limits;
  limits.max_group_size = static_cast<std::uint32_t>(info.max_work_group);
  limits.max_group_extent = {std::max(1u, p.compute.maxGroupSizeX), std::max(1u, p.compute.maxGroupSizeY),
                             std::max(1u, p.compute.maxGroupSizeZ)};
  limits.max_group_count = {std::max(1u, p.compute.maxGroupCountX), std::max(1u, p.compute.maxGroupCountY),
                            std::max(1u, p.compute.maxGroupCountZ)};
  limits.local_memory = p.compute.maxSharedLocalMemory;
  limits.point_group_size = std::min(256u, limits.max_group_size);
  limits.reduction_group_size = std::min(256u, limits.max_group_size);
  limits.reduction_groups = static_cast<std::uint32_t>(info.compute_units);
  if (device.maxMemAllocSize > kFourGiB) traits.build_flags = "-ze-opt-greater-than-4GB-buffer-required";
  return {info, traits};
}

void check_device_supports(const ir::Kernel& kernel, const DeviceInfo& info, const LevelZeroTraits& traits) {
  const jit::CSourceFeatures features = jit::features_of(kernel);
  const std::string device = "Level Zero device '" + info.name + "' (" + info.id + ")";
  if (features.uses_f64 && !info.fp64)
    throw Error("kernel '" + kernel.name + "' uses f64, but " + device +
                " has no double precision; use f32 or run the kernel on a device with fp64");
  if (features.int64_atomics && !traits.int64_atomics)
    throw Error("kernel '" + kernel.name +
                "' adds atomically to an i64 or f64 array, which needs 64-bit atomics, and " + device +
                " lacks them; use i32 or f32 atomics or run the kernel on another device");
}

// ---- programs ---------------------------------------------------------------

LevelZeroProgram::~LevelZeroProgram() {
  if (!api_) return;
  for (void* partials : partials_)
    if (partials) api_->zeMemFree(context_, partials);
  if (entry_) api_->zeKernelDestroy(entry_);
  if (module_) api_->zeModuleDestroy(module_);
}

// ---- the device -------------------------------------------------------------

LevelZeroDevice::LevelZeroDevice(std::shared_ptr<const Api> api, ze_driver_handle_t driver, ze_device_handle_t device,
                                 int index, const LevelZeroOptions& options)
    : api_(std::move(api)), driver_(driver), device_(device) {
  const Api& ze = *api_;
  const std::string where = "Level Zero device level_zero:" + std::to_string(index);
  std::tie(info_, traits_) = describe_device(read_properties(ze, driver, device, where), index);
  if (!traits_.compute_ordinal)
    throw Error(label() + " has no command queue group that runs compute commands; Canopy cannot launch on it");

  ze_context_desc_t context_desc{};
  context_desc.stype = ZE_STRUCTURE_TYPE_CONTEXT_DESC;
  check(ze.zeContextCreate(driver_, &context_desc, &context_), "zeContextCreate", label());
  try {
    ze_command_queue_desc_t queue_desc{};
    queue_desc.stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC;
    queue_desc.ordinal = *traits_.compute_ordinal;
    queue_desc.index = 0;
    queue_desc.mode = ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS;
    queue_desc.priority = ZE_COMMAND_QUEUE_PRIORITY_NORMAL;
    check(ze.zeCommandListCreateImmediate(context_, device_, &queue_desc, &list_), "zeCommandListCreateImmediate",
          label());
    ze_event_pool_desc_t pool_desc{};
    pool_desc.stype = ZE_STRUCTURE_TYPE_EVENT_POOL_DESC;
    pool_desc.flags = ZE_EVENT_POOL_FLAG_HOST_VISIBLE;
    pool_desc.count = 1;
    check(ze.zeEventPoolCreate(context_, &pool_desc, 1, &device_, &event_pool_), "zeEventPoolCreate", label());
    ze_event_desc_t event_desc{};
    event_desc.stype = ZE_STRUCTURE_TYPE_EVENT_DESC;
    event_desc.index = 0;
    event_desc.signal = ZE_EVENT_SCOPE_FLAG_HOST;  // the host reads what the command wrote
    event_desc.wait = ZE_EVENT_SCOPE_FLAG_HOST;
    check(ze.zeEventCreate(event_pool_, &event_desc, &event_), "zeEventCreate", label());
  } catch (...) {
    if (event_pool_) ze.zeEventPoolDestroy(event_pool_);
    if (list_) ze.zeCommandListDestroy(list_);
    ze.zeContextDestroy(context_);
    throw;
  }
  if (const std::string dir = jit::cache_directory(options.cache_dir); dir != "off")
    disk_ = std::make_unique<jit::DiskCache>(dir);
}

LevelZeroDevice::~LevelZeroDevice() {
  {
    // Programs free their own modules and partial buffers; like every
    // program of every backend, they must go before the device that built them.
    std::lock_guard lock(compile_mutex_);
    programs_.clear();
  }
  if (event_) api_->zeEventDestroy(event_);
  if (event_pool_) api_->zeEventPoolDestroy(event_pool_);
  if (list_) api_->zeCommandListDestroy(list_);
  if (context_) api_->zeContextDestroy(context_);
}

std::string LevelZeroDevice::label() const { return "Level Zero device '" + info_.name + "' (" + info_.id + ")"; }

template <class Append>
void LevelZeroDevice::submit(const std::string& what, Append append) {
  std::lock_guard lock(queue_mutex_);
  check(append(event_), what, label());
  const ze_result_t finished = api_->zeEventHostSynchronize(event_, kForever);
  const ze_result_t reset = api_->zeEventHostReset(event_);
  check(finished, "waiting for " + what, label());
  check(reset, "zeEventHostReset after " + what, label());
}

// ---- memory -----------------------------------------------------------------

Buffer LevelZeroDevice::allocate(std::size_t bytes) {
  const auto largest = static_cast<std::size_t>(info_.max_allocation);
  if (largest > 0 && bytes > largest)
    throw Error(label() + " cannot allocate " + bytes_text(bytes) + ": its largest allocation is " +
                bytes_text(largest) + "; split the array or place it on another location");
  ze_device_mem_alloc_desc_t desc{};
  desc.stype = ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC;
  desc.ordinal = 0;
  void* memory = nullptr;
  // Level Zero has no empty allocations: an empty buffer holds one byte nobody reads.
  const bool injected = inject_fault("level_zero", FaultOperation::Alloc);
  const ze_result_t result =
      injected ? ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY
               : api_->zeMemAllocDevice(context_, &desc, std::max<std::size_t>(bytes, 1), 64, device_, &memory);
  if (result != ZE_RESULT_SUCCESS || !memory)
    throw Error(label() + " could not allocate " + bytes_text(bytes) + " (" + result_name(result) +
                (injected ? injected_note("level_zero", FaultOperation::Alloc) : "") + "); it has " +
                bytes_text(static_cast<std::size_t>(info_.global_memory)) +
                " in all: free arrays there or place this one elsewhere");
  return Buffer{memory, bytes};
}

void LevelZeroDevice::free(Buffer buffer) noexcept {
  if (buffer.handle) api_->zeMemFree(context_, buffer.handle);
}

void LevelZeroDevice::check_buffer(Buffer buffer, std::size_t offset, std::size_t bytes, const char* what) const {
  if (!buffer) throw Error(std::string(what) + " on " + label() + " was given no buffer");
  if (offset > buffer.bytes || bytes > buffer.bytes - offset)
    throw Error(std::string(what) + " on " + label() + " reaches byte " + std::to_string(offset + bytes) +
                " of a buffer of " + std::to_string(buffer.bytes) + " bytes");
}

void LevelZeroDevice::copy_in(Buffer buffer, std::size_t offset, const void* source, std::size_t bytes) {
  check_buffer(buffer, offset, bytes, "copy_in");
  if (bytes == 0) return;
  if (!source) throw Error("copy_in on " + label() + " was given no host memory to read");
  void* destination = static_cast<char*>(buffer.handle) + offset;
  if (inject_fault("level_zero", FaultOperation::Copy))
    check(ZE_RESULT_ERROR_DEVICE_LOST,
          "zeCommandListAppendMemoryCopy (to the device)" + injected_note("level_zero", FaultOperation::Copy), label());
  submit("zeCommandListAppendMemoryCopy (to the device)", [&](ze_event_handle_t done) {
    return api_->zeCommandListAppendMemoryCopy(list_, destination, source, bytes, done, 0, nullptr);
  });
}

void LevelZeroDevice::copy_out(Buffer buffer, std::size_t offset, void* destination, std::size_t bytes) {
  check_buffer(buffer, offset, bytes, "copy_out");
  if (bytes == 0) return;
  if (!destination) throw Error("copy_out on " + label() + " was given no host memory to write");
  const void* source = static_cast<const char*>(buffer.handle) + offset;
  if (inject_fault("level_zero", FaultOperation::Copy))
    check(ZE_RESULT_ERROR_DEVICE_LOST,
          "zeCommandListAppendMemoryCopy (to the host)" + injected_note("level_zero", FaultOperation::Copy), label());
  submit("zeCommandListAppendMemoryCopy (to the host)", [&](ze_event_handle_t done) {
    return api_->zeCommandListAppendMemoryCopy(list_, destination, source, bytes, done, 0, nullptr);
  });
}

void LevelZeroDevice::fill(Buffer buffer, std::size_t first, std::size_t count, const ScalarArg& value) {
  std::vector<unsigned char> pattern = scalar_argument_bytes(value.type, value);
  if (value.type == ir::ScalarType::Bool) pattern.resize(1);  // bool elements are one byte
  const std::size_t size = pattern.size();
  check_buffer(buffer, 0, 0, "fill");
  const std::size_t capacity = buffer.bytes / size;
  if (first > capacity || count > capacity - first)
    throw Error("fill on " + label() + " reaches element " + std::to_string(first) + " + " + std::to_string(count) +
                " of a buffer of " + std::to_string(capacity) + " elements of " + std::to_string(size) + " bytes");
  if (count == 0) return;
  if (traits_.max_fill_pattern > 0 && size > traits_.max_fill_pattern)
    throw Error("fill on " + label() + " needs a pattern of " + std::to_string(size) +
                " bytes; its compute queue fills at most " + std::to_string(traits_.max_fill_pattern));
  void* start = static_cast<char*>(buffer.handle) + first * size;
  submit("zeCommandListAppendMemoryFill", [&](ze_event_handle_t done) {
    return api_->zeCommandListAppendMemoryFill(list_, start, pattern.data(), size, count * size, done, 0, nullptr);
  });
}

// ---- compiling --------------------------------------------------------------

std::shared_ptr<Program> LevelZeroDevice::compile(std::shared_ptr<const ir::Kernel> optimized) {
  if (!optimized) throw Error("compile on " + label() + " was given no kernel");
  if (inject_fault("level_zero", FaultOperation::Compile))
    throw Error(label() + " could not build kernel '" + optimized->name +
                "' (zeModuleCreate: " + result_name(ZE_RESULT_ERROR_MODULE_BUILD_FAILURE) +
                injected_note("level_zero", FaultOperation::Compile) + ")");
  ir::verify(*optimized);
  check_device_supports(*optimized, info_, traits_);
  jit::SpirvKernel spirv = jit::spirv_of(*optimized);
  if (traits_.spirv_version > 0 && spirv.version > traits_.spirv_version)
    throw Error("kernel '" + optimized->name + "' became SPIR-V version " + std::to_string(spirv.version >> 16) + "." +
                std::to_string((spirv.version >> 8) & 0xff) + ", newer than " + label() + " takes (" +
                std::to_string(traits_.spirv_version >> 16) + "." +
                std::to_string((traits_.spirv_version >> 8) & 0xff) + "); update its driver");
  const std::string key =
      jit::hash_hex("canopy level zero program " + std::to_string(kProgramFormatVersion) + "\n" + info_.fingerprint +
                    "\n" + traits_.build_flags + "\n" + spirv.entry + "\n" + spirv.binary);
  std::lock_guard lock(compile_mutex_);
  if (auto known = programs_[key].lock()) return known;
  auto program = build(std::move(optimized), std::move(spirv), key);
  programs_[key] = program;
  return program;
}

std::shared_ptr<LevelZeroProgram> LevelZeroDevice::build(std::shared_ptr<const ir::Kernel> optimized,
                                                         jit::SpirvKernel spirv, const std::string& key) {
  std::shared_ptr<LevelZeroProgram> program(new LevelZeroProgram);
  program->api_ = api_;
  program->device_ = this;
  program->context_ = context_;
  program->kernel_ = std::move(optimized);
  program->spirv_ = std::move(spirv);
  program->cache_key_ = key;
  program->origin_ = load_or_build(
      disk_.get(), key, [&](const std::string& binary) { return build_from_native(*program, binary); },
      [&] {
        build_from_spirv(*program);
        return native_binary(program->module_);
      });
  ze_kernel_desc_t desc{};
  desc.stype = ZE_STRUCTURE_TYPE_KERNEL_DESC;
  desc.pKernelName = program->spirv_.entry.c_str();
  check(api_->zeKernelCreate(program->module_, &desc, &program->entry_),
        "zeKernelCreate for kernel '" + program->kernel_->name + "'", label());
  ze_kernel_properties_t properties{};
  properties.stype = ZE_STRUCTURE_TYPE_KERNEL_PROPERTIES;
  std::uint32_t kernel_most = 0;
  if (api_->zeKernelGetProperties(program->entry_, &properties) == ZE_RESULT_SUCCESS)
    kernel_most = properties.maxSubgroupSize * properties.maxNumSubgroups;
  program->max_group_size_ = std::max<std::uint32_t>(
      1, kernel_most > 0 ? std::min(kernel_most, traits_.limits.max_group_size) : traits_.limits.max_group_size);
  // One partial per work-group for each reduction, allocated once.
  const auto& params = program->kernel_->params;
  program->partials_.assign(params.size(), nullptr);
  for (std::size_t p = 0; p < params.size(); ++p)
    if (params[p].is_reduction())
      program->partials_[p] =
          allocate(std::size_t{traits_.limits.reduction_groups} * ir::size_of(params[p].type)).handle;
  return program;
}

bool LevelZeroDevice::build_from_native(LevelZeroProgram& program, const std::string& binary) {
  ze_module_desc_t desc{};
  desc.stype = ZE_STRUCTURE_TYPE_MODULE_DESC;
  desc.format = ZE_MODULE_FORMAT_NATIVE;
  desc.inputSize = binary.size();
  desc.pInputModule = reinterpret_cast<const std::uint8_t*>(binary.data());
  desc.pBuildFlags = traits_.build_flags.c_str();
  ze_module_build_log_handle_t log = nullptr;
  const ze_result_t result = api_->zeModuleCreate(context_, device_, &desc, &program.module_, &log);
  if (log) api_->zeModuleBuildLogDestroy(log);
  if (result == ZE_RESULT_SUCCESS && program.module_) return true;
  // A binary the driver no longer takes (it changed without saying so): build from SPIR-V.
  if (program.module_) api_->zeModuleDestroy(program.module_);
  program.module_ = nullptr;
  return false;
}

void LevelZeroDevice::build_from_spirv(LevelZeroProgram& program) {
  const std::string& spirv = program.spirv_.binary;
  ze_module_desc_t desc{};
  desc.stype = ZE_STRUCTURE_TYPE_MODULE_DESC;
  desc.format = ZE_MODULE_FORMAT_IL_SPIRV;
  desc.inputSize = spirv.size();
  desc.pInputModule = reinterpret_cast<const std::uint8_t*>(spirv.data());
  desc.pBuildFlags = traits_.build_flags.c_str();
  ze_module_build_log_handle_t log_handle = nullptr;
  const ze_result_t result = api_->zeModuleCreate(context_, device_, &desc, &program.module_, &log_handle);
  std::string log;
  if (log_handle) {
    std::size_t size = 0;
    if (api_->zeModuleBuildLogGetString(log_handle, &size, nullptr) == ZE_RESULT_SUCCESS && size > 0) {
      log.assign(size, '\0');
      if (api_->zeModuleBuildLogGetString(log_handle, &size, log.data()) != ZE_RESULT_SUCCESS) log.clear();
      while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
    }
    api_->zeModuleBuildLogDestroy(log_handle);
  }
  if (result == ZE_RESULT_SUCCESS && program.module_) return;
  if (program.module_) api_->zeModuleDestroy(program.module_);
  program.module_ = nullptr;
  // The LLVM IR the SPIR-V came from is what a reader can follow.
  std::string llvm_ir;
  try {
    llvm_ir = jit::spirv_of(*program.kernel_, {true}).llvm_ir;
  } catch (const std::exception& error) {
    llvm_ir = std::string("(not available: ") + error.what() + ")\n";
  }
  throw Error(label() + " could not build kernel '" + program.kernel_->name + "' (zeModuleCreate: " +
              result_name(result) + ").\nBuild log:\n" + (log.empty() ? "(the driver gave no build log)" : log) +
              "\nLLVM IR the SPIR-V was translated from (entry " + program.spirv_.entry + "):\n" +
              jit::numbered_source(llvm_ir) +
              "Canopy generated this code from the kernel's IR: if the log blames it, please report it with the IR "
              "(CANOPY_DUMP=ir,spirv writes both).");
}

std::string LevelZeroDevice::native_binary(ze_module_handle_t module) const {
  std::size_t size = 0;
  if (api_->zeModuleGetNativeBinary(module, &size, nullptr) != ZE_RESULT_SUCCESS || size == 0) return "";
  std::string binary(size, '\0');
  if (api_->zeModuleGetNativeBinary(module, &size, reinterpret_cast<std::uint8_t*>(binary.data())) != ZE_RESULT_SUCCESS)
    return "";
  binary.resize(size);
  return binary;
}

// ---- running ----------------------------------------------------------------

std::vector<ReductionValue> LevelZeroDevice::run(const Program& base, const std::vector<KernelArg>& args,
                                                 const Range& range) {
  const auto* program = dynamic_cast<const LevelZeroProgram*>(&base);
  if (!program || program->device_ != this)
    throw Error(label() + " was asked to run a program compiled for another device; compile the kernel on it first");
  const ir::Kernel& kernel = program->kernel();
  check_launch(kernel, args, range, label());
  std::vector<ReductionValue> results;
  if (range.empty()) {
    for (const auto& param : kernel.params)
      if (param.is_reduction()) results.push_back(identity_value(param.reduce, param.type));
    return results;
  }
  if (inject_fault("level_zero", FaultOperation::Launch))
    check(ZE_RESULT_ERROR_DEVICE_LOST,
          "zeCommandListAppendLaunchKernel for kernel '" + kernel.name + "'" +
              injected_note("level_zero", FaultOperation::Launch),
          label());
  SpirvLaunchLimits limits = traits_.limits;
  limits.max_group_size = program->max_group_size_;
  std::lock_guard lock(launch_mutex_);
  // Point kernels too large for one launch go in pieces, each with its own
  // begins and ends; reductions are always one launch.
  SpirvLaunch launch;
  for (const Range& piece : launch_pieces(kernel, range, limits)) {
    launch = plan_spirv_launch(kernel, args, piece, program->partials_, limits, label());
    for (std::size_t a = 0; a < launch.arguments.size(); ++a) {
      const SpirvArgument& argument = launch.arguments[a];
      const auto index = static_cast<std::uint32_t>(a);
      ze_result_t result = ZE_RESULT_SUCCESS;
      switch (argument.kind) {
        case SpirvArgument::Kind::Value:
          result = api_->zeKernelSetArgumentValue(program->entry_, index, argument.bytes.size(), argument.bytes.data());
          break;
        case SpirvArgument::Kind::Buffer:
          result = api_->zeKernelSetArgumentValue(program->entry_, index, sizeof(void*), &argument.buffer);
          break;
        case SpirvArgument::Kind::Local:
          result = api_->zeKernelSetArgumentValue(program->entry_, index, argument.local_bytes, nullptr);
          break;
      }
      check(result, "setting argument " + std::to_string(a) + " of kernel '" + kernel.name + "'", label());
    }
    check(api_->zeKernelSetGroupSize(program->entry_, launch.group_size[0], launch.group_size[1], launch.group_size[2]),
          "zeKernelSetGroupSize for kernel '" + kernel.name + "'", label());
    const ze_group_count_t groups{launch.group_count[0], launch.group_count[1], launch.group_count[2]};
    submit("zeCommandListAppendLaunchKernel for kernel '" + kernel.name + "'", [&](ze_event_handle_t done) {
      return api_->zeCommandListAppendLaunchKernel(list_, program->entry_, &groups, done, 0, nullptr);
    });
  }
  if (!launch.reduces) return results;
  std::vector<std::vector<unsigned char>> partials(kernel.params.size());
  for (std::size_t p = 0; p < kernel.params.size(); ++p) {
    if (!kernel.params[p].is_reduction()) continue;
    partials[p].resize(launch.group_count[0] * ir::size_of(kernel.params[p].type));
    copy_out(Buffer{program->partials_[p],
                    std::size_t{traits_.limits.reduction_groups} * ir::size_of(kernel.params[p].type)},
             0, partials[p].data(), partials[p].size());
  }
  return combine_partials(kernel, partials, launch.group_count[0]);
}

// ---- discovery --------------------------------------------------------------

BackendDevices discover_level_zero(const LevelZeroOptions& options) {
  BackendDevices found;
  found.backend = "level_zero";
  if (!jit::spirv_available()) {
    found.absent_reason = jit::spirv_unavailable_reason();
    return found;
  }
  const std::string library = options.library.empty() ? default_library() : options.library;
  const LoadedApi& loaded = load_api(library);
  if (!loaded.api) {
    found.absent_reason = loaded.absent_reason;
    return found;
  }
  const Api& api = *loaded.api;
  const ze_result_t initialized = api.zeInit(ZE_INIT_FLAG_GPU_ONLY);
  if (initialized != ZE_RESULT_SUCCESS) {
    char code[16];
    std::snprintf(code, sizeof code, "0x%x", static_cast<unsigned>(initialized));
    found.absent_reason = "zeInit(ZE_INIT_FLAG_GPU_ONLY) returned " + result_name(initialized) + " (" + code +
                          "): the Level Zero loader '" + library +
                          "' found no GPU driver (install one, such as intel-level-zero-gpu, for Intel GPUs)";
    return found;
  }
  std::uint32_t driver_count = 0;
  if (const ze_result_t listed = api.zeDriverGet(&driver_count, nullptr);
      listed != ZE_RESULT_SUCCESS || driver_count == 0) {
    found.absent_reason = listed != ZE_RESULT_SUCCESS
                              ? "zeDriverGet failed: " + result_name(listed)
                              : "no Level Zero driver: the loader '" + library + "' initialized but lists none";
    return found;
  }
  std::vector<ze_driver_handle_t> drivers(driver_count);
  if (api.zeDriverGet(&driver_count, drivers.data()) != ZE_RESULT_SUCCESS) driver_count = 0;
  drivers.resize(driver_count);
  std::string problems;
  for (ze_driver_handle_t driver : drivers) {
    std::uint32_t device_count = 0;
    if (api.zeDeviceGet(driver, &device_count, nullptr) != ZE_RESULT_SUCCESS || device_count == 0) continue;
    std::vector<ze_device_handle_t> devices(device_count);
    if (api.zeDeviceGet(driver, &device_count, devices.data()) != ZE_RESULT_SUCCESS) continue;
    devices.resize(device_count);
    for (ze_device_handle_t device : devices) {
      try {
        const int index = static_cast<int>(found.devices.size());
        found.devices.push_back(std::make_shared<LevelZeroDevice>(loaded.api, driver, device, index, options));
      } catch (const std::exception& error) {
        problems += std::string(problems.empty() ? "" : "; ") + error.what();
      }
    }
  }
  if (found.devices.empty())
    found.absent_reason = problems.empty() ? "no Level Zero device: the " + std::to_string(drivers.size()) +
                                                 " driver(s) found offer no GPU"
                                           : problems;
  return found;
}

}  // namespace canopy::backends::level_zero
