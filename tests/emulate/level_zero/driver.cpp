// A stand-in for a Level Zero GPU driver, so that Canopy's Level Zero
// backend runs unchanged on a machine without one: the real loader
// (libze_loader.so.1) opens it when ZE_ENABLE_ALT_DRIVERS names it, reads
// its tables through the zeGet*ProcAddrTable functions every driver exports,
// and Canopy reaches it through the loader exactly as it reaches a vendor's
// driver. Every zeGet*, zetGet* and zesGet*ProcAddrTable of the installed
// headers is exported: the loader initializes its tools and sysman layers
// too, and a driver without one of them is dropped; the tables of
// functions this driver does not have stay empty.
//
// The functions Canopy calls (backends/level_zero/api.hpp) have the
// specification's signatures and results: unknown or destroyed handles,
// missing descriptors and bad sizes are refused; allocations past the
// device's memory give ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY; work-groups
// past the device's limits ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION;
// unknown kernel names ZE_RESULT_ERROR_INVALID_KERNEL_NAME; arguments of the
// wrong size, index or kind the matching errors; a module the device cannot
// run (doubles or 64-bit atomics it lacks, SPIR-V that does not translate)
// ZE_RESULT_ERROR_MODULE_BUILD_FAILURE with a build log.
//
// Modules are SPIR-V, run on an OpenCL CPU device (opencl_host.hpp); the
// native binary is the SPIR-V with its translation, which zeModuleCreate
// takes back with ZE_MODULE_FORMAT_NATIVE. Command lists run each command
// when it is appended (immediate lists, in order), then signal its event. A
// launch that runs past its time (CANOPY_EMULATED_ZE_TIMEOUT) loses the
// device: the call returns ZE_RESULT_ERROR_DEVICE_LOST and so does every
// later one on that device. Each allocation ends right before a page that
// may not be touched (its size rounded up to 256 bytes), with another page
// before it: a kernel's access outside every allocation ends the process
// with a message saying so, as a GPU's page fault would end the context.
//
// Device properties come from the environment when zeInit first runs (the
// emulator's own variables, not Canopy's settings):
//   CANOPY_EMULATED_ZE_DEVICES         how many devices (default 1)
//   CANOPY_EMULATED_ZE_MEMORY          bytes of memory per device; K, M, G suffixes (default 2G)
//   CANOPY_EMULATED_ZE_MAX_GROUP       most work-items per work-group (default 1024)
//   CANOPY_EMULATED_ZE_MAX_GROUPS      most work-groups per dimension of a launch (default 2^32-1)
//   CANOPY_EMULATED_ZE_SUB_GROUP       sub-group size (default 16)
//   CANOPY_EMULATED_ZE_EUS             execution units (default 8)
//   CANOPY_EMULATED_ZE_LOCAL           work-group memory in bytes; suffixes as above (default 64K)
//   CANOPY_EMULATED_ZE_FP64            0: no doubles (default 1)
//   CANOPY_EMULATED_ZE_INT64_ATOMICS   0: no 64-bit atomics (default 1)
//   CANOPY_EMULATED_ZE_TIMEOUT         seconds a launch may run (default 120; 0: no limit)
// Each device has a PCI address of its own, 0000:e1:<ordinal>.0.
//
// A test-only library: nothing in Canopy's product opens it unless told to.
#include <level_zero/ze_ddi.h>
#include <level_zero/zes_ddi.h>
#include <level_zero/zet_ddi.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "../environment.hpp"
#include "driver_state.hpp"

using namespace canopy_emulated_ze;

namespace {

Driver& driver() {
  static Driver* state = new Driver;  // never destroyed: the loader may call in while the process exits
  return *state;
}

using canopy_emulated_environment::size_from_environment;

std::uint32_t count_from_environment(const char* name, std::uint32_t fallback) {
  const char* text = std::getenv(name);
  if (!text || !*text) return fallback;
  const unsigned long long value = std::strtoull(text, nullptr, 10);
  return value > 0 && value <= 0xffffffffull ? static_cast<std::uint32_t>(value) : fallback;
}

bool flag_from_environment(const char* name) {
  const char* text = std::getenv(name);
  return !(text && std::strcmp(text, "0") == 0);
}

// ---- handles ------------------------------------------------------------------

template <typename Handle, typename Object>
Handle handle_of(Object* object) {
  return reinterpret_cast<Handle>(object);
}

template <typename Object, typename Handle>
Object* known(const std::set<Object*>& set, Handle handle) {
  auto* object = reinterpret_cast<Object*>(handle);
  return object && set.count(object) ? object : nullptr;
}

// Destroys the object `handle` names in `set`, after `release` readies it
// (or refuses with an error, and the object stays).
template <typename Object, typename Handle, typename Release>
ze_result_t destroy(std::set<Object*>& set, Handle handle, Release&& release) {
  if (!driver().initialized) return ZE_RESULT_ERROR_UNINITIALIZED;
  std::lock_guard lock(driver().mutex);
  Object* object = known(set, handle);
  if (!object) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (const ze_result_t refused = release(*object); refused != ZE_RESULT_SUCCESS) return refused;
  set.erase(object);
  delete object;
  return ZE_RESULT_SUCCESS;
}

template <typename Object, typename Handle>
ze_result_t destroy(std::set<Object*>& set, Handle handle) {
  return destroy(set, handle, [](Object&) { return ZE_RESULT_SUCCESS; });
}

Device* known_device(ze_device_handle_t handle) {
  for (auto& device : driver().devices)
    if (reinterpret_cast<Device*>(handle) == device.get()) return device.get();
  return nullptr;
}

bool known_driver(ze_driver_handle_t handle) { return handle && reinterpret_cast<Driver*>(handle) == &driver(); }

// The allocation `pointer` falls in, or null.
Allocation* allocation_of(const void* pointer) {
  auto& allocations = driver().allocations;
  const char* p = static_cast<const char*>(pointer);
  auto after = allocations.upper_bound(p);
  if (after == allocations.begin()) return nullptr;
  Allocation& found = std::prev(after)->second;
  return p < found.start + found.usable ? &found : nullptr;
}

// ---- faults outside allocations ---------------------------------------------------

// The guard pages of live allocations, readable from a signal handler
// without a lock: a slot is written before its allocation is handed out
// and cleared after it is unmapped.
struct Guard {
  std::atomic<std::uintptr_t> below{0}, above{0};  // first byte of each guard page; 0: free slot
  std::atomic<std::size_t> bytes{0};               // the allocation's size
};
constexpr std::size_t kGuards = 4096;
Guard guards[kGuards];
std::size_t page_bytes() { return static_cast<std::size_t>(sysconf(_SC_PAGESIZE)); }
struct sigaction previous_segv, previous_bus;

void on_fault(int signal, siginfo_t* info, void* context) {
  const auto address = reinterpret_cast<std::uintptr_t>(info->si_addr);
  const std::uintptr_t page = page_bytes();
  for (const Guard& guard : guards) {
    const std::uintptr_t below = guard.below.load(), above = guard.above.load();
    if (!below) continue;
    if ((address >= below && address < below + page) || (address >= above && address < above + page)) {
      char message[256];
      const bool after = address >= above;
      const int n =
          std::snprintf(message, sizeof message,
                        "canopy emulated Level Zero: a kernel accessed address %p, %zu bytes %s an "
                        "allocation of %zu bytes; a GPU would fault here\n",
                        info->si_addr, static_cast<std::size_t>(after ? address - above + 1 : below + page - address),
                        after ? "past the end of" : "before", guard.bytes.load());
      if (n > 0) {
        const ssize_t written = write(2, message, static_cast<std::size_t>(n));
        (void)written;
      }
      _exit(70);
    }
  }
  const struct sigaction& before = signal == SIGSEGV ? previous_segv : previous_bus;
  if ((before.sa_flags & SA_SIGINFO) && before.sa_sigaction) return before.sa_sigaction(signal, info, context);
  if (!(before.sa_flags & SA_SIGINFO) && before.sa_handler != SIG_DFL && before.sa_handler != SIG_IGN)
    return before.sa_handler(signal);
  sigaction(signal, &before, nullptr);  // the default action when the access is made again
}

void install_fault_handler() {
  struct sigaction action {};
  action.sa_sigaction = &on_fault;
  action.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&action.sa_mask);
  sigaction(SIGSEGV, &action, &previous_segv);
  sigaction(SIGBUS, &action, &previous_bus);
}

void set_guard(const Allocation& a, bool on) {
  const auto below = reinterpret_cast<std::uintptr_t>(a.mapping);
  const std::uintptr_t above = below + a.mapping_bytes - page_bytes();
  for (Guard& guard : guards) {
    if (on && guard.below.load() == 0) {
      guard.bytes = a.bytes;
      guard.above = above;
      guard.below = below;
      return;
    }
    if (!on && guard.below.load() == below) {
      guard.below = 0;
      return;
    }
  }
}

// ---- driver, devices ------------------------------------------------------------

void make_devices(Driver& state) {
  const std::uint32_t count = count_from_environment("CANOPY_EMULATED_ZE_DEVICES", 1);
  for (std::uint32_t ordinal = 0; ordinal < count; ++ordinal) {
    auto device = std::make_unique<Device>();
    device->ordinal = static_cast<int>(ordinal);
    device->name = "Canopy emulated Level Zero device " + std::to_string(ordinal);
    device->memory = size_from_environment("CANOPY_EMULATED_ZE_MEMORY", std::size_t{2} << 30);
    device->max_group = count_from_environment("CANOPY_EMULATED_ZE_MAX_GROUP", 1024);
    device->max_group_count = count_from_environment("CANOPY_EMULATED_ZE_MAX_GROUPS", 0xffffffffu);
    device->sub_group = count_from_environment("CANOPY_EMULATED_ZE_SUB_GROUP", 16);
    device->eus = count_from_environment("CANOPY_EMULATED_ZE_EUS", 8);
    device->local_memory = size_from_environment("CANOPY_EMULATED_ZE_LOCAL", 64 * 1024);
    device->fp64 = flag_from_environment("CANOPY_EMULATED_ZE_FP64");
    device->int64_atomics = flag_from_environment("CANOPY_EMULATED_ZE_INT64_ATOMICS");
    state.devices.push_back(std::move(device));
  }
}

ze_result_t ZE_APICALL Init(ze_init_flags_t flags) {
  if (flags > (ZE_INIT_FLAG_GPU_ONLY | ZE_INIT_FLAG_VPU_ONLY)) return ZE_RESULT_ERROR_INVALID_ENUMERATION;
  if (flags == ZE_INIT_FLAG_VPU_ONLY) return ZE_RESULT_ERROR_UNINITIALIZED;  // its devices are GPUs
  Driver& state = driver();
  std::lock_guard lock(state.mutex);
  if (state.initialized) return ZE_RESULT_SUCCESS;
  const OpenClHost& host = opencl_host();
  if (!host.problem.empty()) {
    std::fprintf(stderr, "canopy emulated Level Zero: no device: %s\n", host.problem.c_str());
    return ZE_RESULT_ERROR_UNINITIALIZED;
  }
  make_devices(state);
  for (auto& device : state.devices) {
    cl_int status = CL_SUCCESS;
    device->queue = host.clCreateCommandQueue(host.context, host.device, 0, &status);
    if (status != CL_SUCCESS) return ZE_RESULT_ERROR_UNINITIALIZED;
  }
  install_fault_handler();
  state.initialized = true;
  return ZE_RESULT_SUCCESS;
}

#define CHECK_INITIALIZED() \
  if (!driver().initialized) return ZE_RESULT_ERROR_UNINITIALIZED

// Fills `count` items from `have` the two-call way: count only, or up to *count of them.
template <typename T>
ze_result_t list_out(uint32_t* count, T* out, const std::vector<T>& have) {
  if (!count) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (*count == 0 || !out) {
    *count = static_cast<uint32_t>(have.size());
    return ZE_RESULT_SUCCESS;
  }
  *count = std::min<uint32_t>(*count, static_cast<uint32_t>(have.size()));
  for (uint32_t k = 0; k < *count; ++k) out[k] = have[k];
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL DriverGet(uint32_t* count, ze_driver_handle_t* drivers) {
  CHECK_INITIALIZED();
  return list_out(count, drivers, std::vector<ze_driver_handle_t>{handle_of<ze_driver_handle_t>(&driver())});
}

ze_result_t ZE_APICALL DriverGetApiVersion(ze_driver_handle_t handle, ze_api_version_t* version) {
  CHECK_INITIALIZED();
  if (!known_driver(handle)) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!version) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  *version = ZE_API_VERSION_CURRENT;
  return ZE_RESULT_SUCCESS;
}

void set_uuid(std::uint8_t* id, std::size_t bytes, const char* kind, int ordinal) {
  std::memset(id, 0, bytes);
  const std::string text = std::string(kind) + "-" + std::to_string(ordinal);  // cut to the id's size
  std::memcpy(id, text.data(), std::min(bytes, text.size()));
}

ze_result_t ZE_APICALL DriverGetProperties(ze_driver_handle_t handle, ze_driver_properties_t* properties) {
  CHECK_INITIALIZED();
  if (!known_driver(handle)) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!properties) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  set_uuid(properties->uuid.id, ZE_MAX_DRIVER_UUID_SIZE, "ze-driver", 0);
  properties->driverVersion = 1;
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL DriverGetIpcProperties(ze_driver_handle_t handle, ze_driver_ipc_properties_t* properties) {
  CHECK_INITIALIZED();
  if (!known_driver(handle)) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!properties) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  properties->flags = 0;
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL DriverGetExtensionProperties(ze_driver_handle_t handle, uint32_t* count,
                                                    ze_driver_extension_properties_t* extensions) {
  CHECK_INITIALIZED();
  if (!known_driver(handle)) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  ze_driver_extension_properties_t pci{};
  std::snprintf(pci.name, sizeof pci.name, "%s", ZE_PCI_PROPERTIES_EXT_NAME);
  pci.version = ZE_PCI_PROPERTIES_EXT_VERSION_CURRENT;
  return list_out(count, extensions, std::vector<ze_driver_extension_properties_t>{pci});
}

ze_result_t ZE_APICALL DeviceGet(ze_driver_handle_t handle, uint32_t* count, ze_device_handle_t* devices) {
  CHECK_INITIALIZED();
  if (!known_driver(handle)) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  std::vector<ze_device_handle_t> all;
  for (auto& device : driver().devices) all.push_back(handle_of<ze_device_handle_t>(device.get()));
  return list_out(count, devices, all);
}

ze_result_t ZE_APICALL DeviceGetSubDevices(ze_device_handle_t handle, uint32_t* count, ze_device_handle_t* devices) {
  CHECK_INITIALIZED();
  if (!known_device(handle)) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  return list_out(count, devices, std::vector<ze_device_handle_t>{});
}

ze_result_t ZE_APICALL DeviceGetProperties(ze_device_handle_t handle, ze_device_properties_t* properties) {
  CHECK_INITIALIZED();
  Device* device = known_device(handle);
  if (!device) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!properties) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  properties->type = ZE_DEVICE_TYPE_GPU;
  properties->vendorId = 0x8086;
  properties->deviceId = 0xe000u + static_cast<std::uint32_t>(device->ordinal);
  properties->flags = 0;
  properties->subdeviceId = 0;
  properties->coreClockRate = 1000;
  properties->maxMemAllocSize = device->memory;
  properties->maxHardwareContexts = 64;
  properties->maxCommandQueuePriority = 0;
  properties->numThreadsPerEU = 8;
  properties->physicalEUSimdWidth = 8;
  properties->numEUsPerSubslice = std::min<std::uint32_t>(8, device->eus);
  properties->numSubslicesPerSlice = std::max<std::uint32_t>(1, device->eus / properties->numEUsPerSubslice);
  properties->numSlices = 1;
  properties->timerResolution = 1;
  properties->timestampValidBits = 64;
  properties->kernelTimestampValidBits = 64;
  set_uuid(properties->uuid.id, ZE_MAX_DEVICE_UUID_SIZE, "ze-device", device->ordinal);
  std::snprintf(properties->name, sizeof properties->name, "%s", device->name.c_str());
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL DeviceGetComputeProperties(ze_device_handle_t handle,
                                                  ze_device_compute_properties_t* properties) {
  CHECK_INITIALIZED();
  Device* device = known_device(handle);
  if (!device) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!properties) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  properties->maxTotalGroupSize = device->max_group;
  properties->maxGroupSizeX = properties->maxGroupSizeY = properties->maxGroupSizeZ = device->max_group;
  properties->maxGroupCountX = properties->maxGroupCountY = properties->maxGroupCountZ = device->max_group_count;
  properties->maxSharedLocalMemory = static_cast<std::uint32_t>(device->local_memory);
  properties->numSubGroupSizes = 1;
  properties->subGroupSizes[0] = device->sub_group;
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL DeviceGetModuleProperties(ze_device_handle_t handle, ze_device_module_properties_t* properties) {
  CHECK_INITIALIZED();
  Device* device = known_device(handle);
  if (!device) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!properties) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  properties->spirvVersionSupported = ZE_MAKE_VERSION(1, 2);
  properties->flags = (device->fp64 ? std::uint32_t{ZE_DEVICE_MODULE_FLAG_FP64} : 0u) |
                      (device->int64_atomics ? std::uint32_t{ZE_DEVICE_MODULE_FLAG_INT64_ATOMICS} : 0u);
  properties->fp16flags = 0;
  properties->fp32flags = ZE_DEVICE_FP_FLAG_ROUND_TO_NEAREST | ZE_DEVICE_FP_FLAG_INF_NAN;
  properties->fp64flags = device->fp64 ? (ZE_DEVICE_FP_FLAG_ROUND_TO_NEAREST | ZE_DEVICE_FP_FLAG_INF_NAN |
                                          ZE_DEVICE_FP_FLAG_FMA | ZE_DEVICE_FP_FLAG_DENORM)
                                       : 0u;
  properties->maxArgumentsSize = 2048;
  properties->printfBufferSize = 0;
  set_uuid(properties->nativeKernelSupported.id, ZE_MAX_NATIVE_KERNEL_UUID_SIZE, "ze-native", 1);
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL DeviceGetMemoryProperties(ze_device_handle_t handle, uint32_t* count,
                                                 ze_device_memory_properties_t* memories) {
  CHECK_INITIALIZED();
  Device* device = known_device(handle);
  if (!device) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!count) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (*count == 0 || !memories) {
    *count = 1;
    return ZE_RESULT_SUCCESS;
  }
  *count = 1;
  memories[0].flags = 0;
  memories[0].maxClockRate = 1000;
  memories[0].maxBusWidth = 64;
  memories[0].totalSize = device->memory;
  std::snprintf(memories[0].name, sizeof memories[0].name, "emulated HBM");
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL DeviceGetCommandQueueGroupProperties(ze_device_handle_t handle, uint32_t* count,
                                                            ze_command_queue_group_properties_t* groups) {
  CHECK_INITIALIZED();
  if (!known_device(handle)) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!count) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  // Group 0 copies only, group 1 computes and copies: a backend must look for the compute group.
  if (*count == 0 || !groups) {
    *count = 2;
    return ZE_RESULT_SUCCESS;
  }
  *count = std::min<uint32_t>(*count, 2);
  for (uint32_t k = 0; k < *count; ++k) {
    groups[k].flags = k == 0
                          ? ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COPY
                          : (ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COMPUTE | ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COPY);
    groups[k].maxMemoryFillPatternSize = 128;
    groups[k].numQueues = 1;
  }
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL DeviceGetStatus(ze_device_handle_t handle) {
  CHECK_INITIALIZED();
  Device* device = known_device(handle);
  if (!device) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  std::lock_guard lock(driver().mutex);
  return device->lost ? ZE_RESULT_ERROR_DEVICE_LOST : ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL DevicePciGetPropertiesExt(ze_device_handle_t handle, ze_pci_ext_properties_t* properties) {
  CHECK_INITIALIZED();
  Device* device = known_device(handle);
  if (!device) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!properties) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  properties->address.domain = 0;
  properties->address.bus = 0xe1;
  properties->address.device = static_cast<uint32_t>(device->ordinal);
  properties->address.function = 0;
  properties->maxSpeed.genVersion = 4;
  properties->maxSpeed.width = 16;
  properties->maxSpeed.maxBandwidth = 32ll << 30;
  return ZE_RESULT_SUCCESS;
}

// ---- contexts, command lists, events ---------------------------------------------

ze_result_t ZE_APICALL ContextCreate(ze_driver_handle_t handle, const ze_context_desc_t* desc,
                                     ze_context_handle_t* context) {
  CHECK_INITIALIZED();
  if (!known_driver(handle)) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!desc || !context) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  std::lock_guard lock(driver().mutex);
  auto* made = new Context;
  driver().contexts.insert(made);
  *context = handle_of<ze_context_handle_t>(made);
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL ContextDestroy(ze_context_handle_t handle) { return destroy(driver().contexts, handle); }

ze_result_t ZE_APICALL CommandListCreateImmediate(ze_context_handle_t context_handle, ze_device_handle_t device_handle,
                                                  const ze_command_queue_desc_t* desc, ze_command_list_handle_t* list) {
  CHECK_INITIALIZED();
  std::lock_guard lock(driver().mutex);
  Context* context = known(driver().contexts, context_handle);
  Device* device = known_device(device_handle);
  if (!context || !device) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!desc || !list) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (desc->ordinal >= 2) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  auto* made = new CommandList{context, device};
  driver().lists.insert(made);
  *list = handle_of<ze_command_list_handle_t>(made);
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL CommandListDestroy(ze_command_list_handle_t handle) { return destroy(driver().lists, handle); }

ze_result_t ZE_APICALL EventPoolCreate(ze_context_handle_t context_handle, const ze_event_pool_desc_t* desc,
                                       uint32_t device_count, ze_device_handle_t* devices,
                                       ze_event_pool_handle_t* pool) {
  CHECK_INITIALIZED();
  std::lock_guard lock(driver().mutex);
  Context* context = known(driver().contexts, context_handle);
  if (!context) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!desc || !pool || (device_count > 0 && !devices)) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (desc->count == 0) return ZE_RESULT_ERROR_INVALID_SIZE;
  for (uint32_t k = 0; k < device_count; ++k)
    if (!known_device(devices[k])) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  auto* made = new EventPool{context, desc->count, std::vector<Event*>(desc->count, nullptr)};
  driver().pools.insert(made);
  *pool = handle_of<ze_event_pool_handle_t>(made);
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL EventPoolDestroy(ze_event_pool_handle_t handle) {
  return destroy(driver().pools, handle, [](EventPool& pool) {
    for (Event* event : pool.events)
      if (event) return ZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE;
    return ZE_RESULT_SUCCESS;
  });
}

ze_result_t ZE_APICALL EventCreate(ze_event_pool_handle_t pool_handle, const ze_event_desc_t* desc,
                                   ze_event_handle_t* event) {
  CHECK_INITIALIZED();
  std::lock_guard lock(driver().mutex);
  EventPool* pool = known(driver().pools, pool_handle);
  if (!pool) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!desc || !event) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (desc->index >= pool->count) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  if (pool->events[desc->index]) return ZE_RESULT_ERROR_INVALID_ARGUMENT;  // that slot is taken
  auto* made = new Event{pool, desc->index, false};
  pool->events[desc->index] = made;
  driver().events.insert(made);
  *event = handle_of<ze_event_handle_t>(made);
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL EventDestroy(ze_event_handle_t handle) {
  return destroy(driver().events, handle, [](Event& event) {
    event.pool->events[event.index] = nullptr;
    return ZE_RESULT_SUCCESS;
  });
}

ze_result_t ZE_APICALL EventHostSignal(ze_event_handle_t handle) {
  CHECK_INITIALIZED();
  std::lock_guard lock(driver().mutex);
  Event* event = known(driver().events, handle);
  if (!event) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  event->signaled = true;
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL EventQueryStatus(ze_event_handle_t handle) {
  CHECK_INITIALIZED();
  std::lock_guard lock(driver().mutex);
  Event* event = known(driver().events, handle);
  if (!event) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  return event->signaled ? ZE_RESULT_SUCCESS : ZE_RESULT_NOT_READY;
}

// Work runs when it is appended, so an event is signaled by the time any
// wait begins, or never: a wait on one that is not gives ZE_RESULT_NOT_READY
// at once (after a time-out, a real driver would say the same).
ze_result_t ZE_APICALL EventHostSynchronize(ze_event_handle_t handle, uint64_t) { return EventQueryStatus(handle); }

ze_result_t ZE_APICALL EventHostReset(ze_event_handle_t handle) {
  CHECK_INITIALIZED();
  std::lock_guard lock(driver().mutex);
  Event* event = known(driver().events, handle);
  if (!event) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  event->signaled = false;
  return ZE_RESULT_SUCCESS;
}

// ---- memory -----------------------------------------------------------------------

ze_result_t ZE_APICALL MemAllocDevice(ze_context_handle_t context_handle, const ze_device_mem_alloc_desc_t* desc,
                                      size_t size, size_t alignment, ze_device_handle_t device_handle, void** pointer) {
  CHECK_INITIALIZED();
  std::lock_guard lock(driver().mutex);
  Context* context = known(driver().contexts, context_handle);
  Device* device = known_device(device_handle);
  if (!context || !device) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!desc || !pointer) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (size == 0) return ZE_RESULT_ERROR_UNSUPPORTED_SIZE;
  if (alignment & (alignment - 1) || alignment > 256) return ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT;
  if (device->lost) return ZE_RESULT_ERROR_DEVICE_LOST;
  const std::size_t page = page_bytes();
  const std::size_t usable = (size + 255) / 256 * 256, span = (usable + page - 1) / page * page;
  if (size > device->memory || usable > device->memory - device->used) return ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY;
  auto* base = static_cast<char*>(
      mmap(nullptr, span + 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0));
  if (base == MAP_FAILED) return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  mprotect(base, page, PROT_NONE);
  mprotect(base + page + span, page, PROT_NONE);
  Allocation a;
  a.context = context;
  a.device = device;
  a.start = base + page + span - usable;
  a.bytes = size;
  a.usable = usable;
  a.counted = usable;
  a.mapping = base;
  a.mapping_bytes = span + 2 * page;
  set_guard(a, true);
  device->used += usable;
  driver().allocations[a.start] = a;
  *pointer = a.start;
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL MemFree(ze_context_handle_t context_handle, void* pointer) {
  CHECK_INITIALIZED();
  std::lock_guard lock(driver().mutex);
  if (!known(driver().contexts, context_handle)) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!pointer) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  auto found = driver().allocations.find(static_cast<const char*>(pointer));
  if (found == driver().allocations.end()) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  Allocation& a = found->second;
  for (auto& [offset, buffer] : a.buffers) opencl_host().clReleaseMemObject(buffer);
  a.device->used -= a.counted;
  munmap(a.mapping, a.mapping_bytes);
  set_guard(a, false);
  driver().allocations.erase(found);
  return ZE_RESULT_SUCCESS;
}

// Whether [pointer, pointer + bytes) is host memory or lies whole in one allocation of `device`.
bool fits(const void* pointer, std::size_t bytes, const Device* device) {
  const Allocation* a = allocation_of(pointer);
  if (!a) return !allocation_of(static_cast<const char*>(pointer) + (bytes ? bytes - 1 : 0));
  return a->device == device && static_cast<const char*>(pointer) + bytes <= a->start + a->bytes;
}

// Resolves the list and the events of an append; null `list` on failure with `result` set.
struct Append {
  CommandList* list = nullptr;
  Event* signal = nullptr;
  ze_result_t result = ZE_RESULT_SUCCESS;
};

Append begin_append(ze_command_list_handle_t list_handle, ze_event_handle_t signal_handle, uint32_t waits,
                    ze_event_handle_t* wait_handles) {
  Append append;
  append.list = known(driver().lists, list_handle);
  if (!append.list) append.result = ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (signal_handle && !(append.signal = known(driver().events, signal_handle)))
    append.result = ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (waits > 0 && !wait_handles) append.result = ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  for (uint32_t k = 0; k < waits && wait_handles; ++k) {
    Event* wait = known(driver().events, wait_handles[k]);
    if (!wait)
      append.result = ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    else if (!wait->signaled)
      append.result = ZE_RESULT_ERROR_INVALID_ARGUMENT;  // would wait forever
  }
  if (append.result == ZE_RESULT_SUCCESS && append.list->device->lost) append.result = ZE_RESULT_ERROR_DEVICE_LOST;
  if (append.result != ZE_RESULT_SUCCESS) append.list = nullptr;
  return append;
}

ze_result_t ZE_APICALL CommandListAppendMemoryCopy(ze_command_list_handle_t list_handle, void* destination,
                                                   const void* source, size_t size, ze_event_handle_t signal,
                                                   uint32_t waits, ze_event_handle_t* wait_events) {
  CHECK_INITIALIZED();
  std::lock_guard lock(driver().mutex);
  Append append = begin_append(list_handle, signal, waits, wait_events);
  if (!append.list) return append.result;
  if (!destination || !source) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (!fits(destination, size, append.list->device) || !fits(source, size, append.list->device))
    return ZE_RESULT_ERROR_INVALID_SIZE;
  if (size > 0) std::memmove(destination, source, size);
  if (append.signal) append.signal->signaled = true;
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL CommandListAppendMemoryFill(ze_command_list_handle_t list_handle, void* pointer,
                                                   const void* pattern, size_t pattern_size, size_t size,
                                                   ze_event_handle_t signal, uint32_t waits,
                                                   ze_event_handle_t* wait_events) {
  CHECK_INITIALIZED();
  std::lock_guard lock(driver().mutex);
  Append append = begin_append(list_handle, signal, waits, wait_events);
  if (!append.list) return append.result;
  if (!pointer || !pattern) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (pattern_size == 0 || (pattern_size & (pattern_size - 1)) || pattern_size > 128 || size % pattern_size)
    return ZE_RESULT_ERROR_INVALID_SIZE;
  if (!fits(pointer, size, append.list->device)) return ZE_RESULT_ERROR_INVALID_SIZE;
  auto* out = static_cast<char*>(pointer);
  for (std::size_t at = 0; at < size; at += pattern_size) std::memcpy(out + at, pattern, pattern_size);
  if (append.signal) append.signal->signaled = true;
  return ZE_RESULT_SUCCESS;
}

// ---- modules and kernels ------------------------------------------------------------

// The native binary: a tag, the SPIR-V's size, the SPIR-V, then its SPIR bitcode.
constexpr char kNativeTag[8] = {'C', 'Z', 'E', 'N', 'A', 'T', '1', '\0'};

ze_result_t fail_build(ze_module_build_log_handle_t* log_handle, const std::string& text) {
  if (log_handle) {
    auto* log = new BuildLog{text};
    driver().logs.insert(log);
    *log_handle = handle_of<ze_module_build_log_handle_t>(log);
  }
  return ZE_RESULT_ERROR_MODULE_BUILD_FAILURE;
}

ze_result_t ZE_APICALL ModuleCreate(ze_context_handle_t context_handle, ze_device_handle_t device_handle,
                                    const ze_module_desc_t* desc, ze_module_handle_t* module_handle,
                                    ze_module_build_log_handle_t* log_handle) {
  CHECK_INITIALIZED();
  if (log_handle) *log_handle = nullptr;
  auto module = std::make_unique<Module>();
  std::string problem;
  {
    std::lock_guard lock(driver().mutex);
    module->context = known(driver().contexts, context_handle);
    module->device = known_device(device_handle);
    if (!module->context || !module->device) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!desc || !module_handle || (!desc->pInputModule && desc->inputSize))
      return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (desc->inputSize == 0) return ZE_RESULT_ERROR_INVALID_SIZE;
    if (desc->format != ZE_MODULE_FORMAT_IL_SPIRV && desc->format != ZE_MODULE_FORMAT_NATIVE)
      return ZE_RESULT_ERROR_INVALID_ENUMERATION;
    const std::string input(reinterpret_cast<const char*>(desc->pInputModule), desc->inputSize);
    if (desc->format == ZE_MODULE_FORMAT_NATIVE) {
      std::uint64_t spirv_bytes = 0;
      if (input.size() < sizeof kNativeTag + 8 || std::memcmp(input.data(), kNativeTag, sizeof kNativeTag) != 0)
        return ZE_RESULT_ERROR_INVALID_NATIVE_BINARY;
      std::memcpy(&spirv_bytes, input.data() + sizeof kNativeTag, 8);
      if (spirv_bytes > input.size() - sizeof kNativeTag - 8) return ZE_RESULT_ERROR_INVALID_NATIVE_BINARY;
      module->spirv = input.substr(sizeof kNativeTag + 8, spirv_bytes);
      module->bitcode = input.substr(sizeof kNativeTag + 8 + spirv_bytes);
    } else {
      module->spirv = input;
    }
    if (desc->pBuildFlags) {
      const std::string flags = desc->pBuildFlags;
      std::size_t at = 0;
      while ((at = flags.find_first_not_of(' ', at)) != std::string::npos) {
        const std::size_t end = std::min(flags.find(' ', at), flags.size());
        const std::string flag = flags.substr(at, end - at);
        if (flag != "-ze-opt-greater-than-4GB-buffer-required" && flag != "-ze-opt-disable" &&
            flag != "-ze-opt-level=2" && flag != "-g")
          return fail_build(log_handle, "unknown build flag '" + flag + "'");
        at = end;
      }
    }
    if (!parse_spirv(module->spirv, module->parsed, problem)) return fail_build(log_handle, problem);
    if (module->parsed.float64 && !module->device->fp64)
      return fail_build(log_handle, "the module uses doubles (Float64), which " + module->device->name + " lacks");
    if (module->parsed.int64_atomics && !module->device->int64_atomics)
      return fail_build(log_handle,
                        "the module uses 64-bit atomics (Int64Atomics), which " + module->device->name + " lacks");
  }
  // Translating and building take long: without the driver's lock.
  if (module->bitcode.empty() && !translate_spirv(module->spirv, module->bitcode, problem)) {
    std::lock_guard lock(driver().mutex);
    return fail_build(log_handle, problem);
  }
  BuiltProgram built = build_spir(module->bitcode);
  std::lock_guard lock(driver().mutex);
  if (!built.program) return fail_build(log_handle, built.log);
  module->program = built.program;
  if (log_handle) {
    auto* log = new BuildLog{built.log};
    driver().logs.insert(log);
    *log_handle = handle_of<ze_module_build_log_handle_t>(log);
  }
  driver().modules.insert(module.get());
  *module_handle = handle_of<ze_module_handle_t>(module.release());
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL ModuleDestroy(ze_module_handle_t handle) {
  return destroy(driver().modules, handle, [](Module& module) {
    for (Kernel* kernel : driver().kernels)
      if (kernel->module == &module) return ZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE;
    opencl_host().clReleaseProgram(module.program);
    return ZE_RESULT_SUCCESS;
  });
}

ze_result_t ZE_APICALL ModuleBuildLogGetString(ze_module_build_log_handle_t handle, size_t* size, char* text) {
  CHECK_INITIALIZED();
  std::lock_guard lock(driver().mutex);
  BuildLog* log = known(driver().logs, handle);
  if (!log) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!size) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (*size == 0 || !text) {
    *size = log->text.size() + 1;
    return ZE_RESULT_SUCCESS;
  }
  const std::size_t n = std::min(*size - 1, log->text.size());
  std::memcpy(text, log->text.data(), n);
  text[n] = '\0';
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL ModuleBuildLogDestroy(ze_module_build_log_handle_t handle) {
  return destroy(driver().logs, handle);
}

ze_result_t ZE_APICALL ModuleGetNativeBinary(ze_module_handle_t handle, size_t* size, uint8_t* binary) {
  CHECK_INITIALIZED();
  std::lock_guard lock(driver().mutex);
  Module* module = known(driver().modules, handle);
  if (!module) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!size) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  const std::size_t total = sizeof kNativeTag + 8 + module->spirv.size() + module->bitcode.size();
  if (!binary) {
    *size = total;
    return ZE_RESULT_SUCCESS;
  }
  if (*size < total) return ZE_RESULT_ERROR_INVALID_SIZE;
  const std::uint64_t spirv_bytes = module->spirv.size();
  std::memcpy(binary, kNativeTag, sizeof kNativeTag);
  std::memcpy(binary + sizeof kNativeTag, &spirv_bytes, 8);
  std::memcpy(binary + sizeof kNativeTag + 8, module->spirv.data(), module->spirv.size());
  std::memcpy(binary + sizeof kNativeTag + 8 + module->spirv.size(), module->bitcode.data(), module->bitcode.size());
  *size = total;
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL KernelCreate(ze_module_handle_t module_handle, const ze_kernel_desc_t* desc,
                                    ze_kernel_handle_t* kernel_handle) {
  CHECK_INITIALIZED();
  std::lock_guard lock(driver().mutex);
  Module* module = known(driver().modules, module_handle);
  if (!module) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!desc || !desc->pKernelName || !kernel_handle) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  const SpirvEntry* entry = nullptr;
  for (const auto& e : module->parsed.entries)
    if (e.name == desc->pKernelName) entry = &e;
  if (!entry) return ZE_RESULT_ERROR_INVALID_KERNEL_NAME;
  const OpenClHost& host = opencl_host();
  cl_int status = CL_SUCCESS;
  cl_kernel made = host.clCreateKernel(module->program, desc->pKernelName, &status);
  if (status != CL_SUCCESS) return ZE_RESULT_ERROR_INVALID_KERNEL_NAME;
  auto* kernel = new Kernel;
  kernel->module = module;
  kernel->entry = entry;
  kernel->kernel = made;
  kernel->set.assign(entry->parameters.size(), false);
  host.clGetKernelWorkGroupInfo(made, host.device, CL_KERNEL_WORK_GROUP_SIZE, sizeof kernel->max_group,
                                &kernel->max_group, nullptr);
  driver().kernels.insert(kernel);
  *kernel_handle = handle_of<ze_kernel_handle_t>(kernel);
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL KernelDestroy(ze_kernel_handle_t handle) {
  return destroy(driver().kernels, handle, [](Kernel& kernel) {
    opencl_host().clReleaseKernel(kernel.kernel);
    return ZE_RESULT_SUCCESS;
  });
}

// The most work-items a group of `kernel` may have on its device.
std::uint32_t group_limit(const Kernel& kernel) {
  return static_cast<std::uint32_t>(
      std::min<std::size_t>(kernel.module->device->max_group, std::max<std::size_t>(1, kernel.max_group)));
}

ze_result_t ZE_APICALL KernelGetProperties(ze_kernel_handle_t handle, ze_kernel_properties_t* properties) {
  CHECK_INITIALIZED();
  std::lock_guard lock(driver().mutex);
  Kernel* kernel = known(driver().kernels, handle);
  if (!kernel) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!properties) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  const Device& device = *kernel->module->device;
  properties->numKernelArgs = static_cast<uint32_t>(kernel->entry->parameters.size());
  properties->requiredGroupSizeX = properties->requiredGroupSizeY = properties->requiredGroupSizeZ = 0;
  properties->requiredNumSubGroups = 0;
  properties->requiredSubgroupSize = 0;
  properties->maxSubgroupSize = device.sub_group;
  properties->maxNumSubgroups = std::max<std::uint32_t>(1, group_limit(*kernel) / device.sub_group);
  properties->localMemSize = 0;
  properties->privateMemSize = 0;
  properties->spillMemSize = 0;
  set_uuid(properties->uuid.kid, ZE_MAX_KERNEL_UUID_SIZE, "ze-kernel", 0);
  set_uuid(properties->uuid.mid, ZE_MAX_MODULE_UUID_SIZE, "ze-module", 0);
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL KernelSetGroupSize(ze_kernel_handle_t handle, uint32_t x, uint32_t y, uint32_t z) {
  CHECK_INITIALIZED();
  std::lock_guard lock(driver().mutex);
  Kernel* kernel = known(driver().kernels, handle);
  if (!kernel) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  const std::uint64_t total = std::uint64_t{x} * y * z;
  if (x == 0 || y == 0 || z == 0 || total > group_limit(*kernel)) return ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION;
  kernel->group = {x, y, z};
  return ZE_RESULT_SUCCESS;
}

// The OpenCL buffer that starts at `pointer`, inside allocation `a`.
cl_mem buffer_at(Allocation& a, const char* pointer, cl_int& status) {
  const std::size_t offset = static_cast<std::size_t>(pointer - a.start);
  auto found = a.buffers.find(offset);
  if (found != a.buffers.end()) return found->second;
  cl_mem made = opencl_host().clCreateBuffer(opencl_host().context, CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR,
                                             a.usable - offset, const_cast<char*>(pointer), &status);
  if (status == CL_SUCCESS) a.buffers[offset] = made;
  return made;
}

ze_result_t ZE_APICALL KernelSetArgumentValue(ze_kernel_handle_t handle, uint32_t index, size_t size,
                                              const void* value) {
  CHECK_INITIALIZED();
  std::lock_guard lock(driver().mutex);
  Kernel* kernel = known(driver().kernels, handle);
  if (!kernel) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (index >= kernel->entry->parameters.size()) return ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_INDEX;
  const SpirvParameter& parameter = kernel->entry->parameters[index];
  const OpenClHost& host = opencl_host();
  cl_int status = CL_SUCCESS;
  switch (parameter.kind) {
    case SpirvParameter::Kind::GlobalPointer: {
      if (size != sizeof(void*)) return ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE;
      const char* pointer = value ? *static_cast<const char* const*>(value) : nullptr;
      if (!pointer) {
        status = host.clSetKernelArg(kernel->kernel, index, sizeof(cl_mem), nullptr);
        break;
      }
      Allocation* a = allocation_of(pointer);
      // Host memory or another device's: a GPU would fault on it when the kernel ran.
      if (!a || a->device != kernel->module->device) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
      cl_mem buffer = buffer_at(*a, pointer, status);
      if (status == CL_SUCCESS) status = host.clSetKernelArg(kernel->kernel, index, sizeof(cl_mem), &buffer);
      break;
    }
    case SpirvParameter::Kind::LocalPointer:
      if (value) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
      if (size == 0 || size > kernel->module->device->local_memory) return ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE;
      status = host.clSetKernelArg(kernel->kernel, index, size, nullptr);
      break;
    case SpirvParameter::Kind::OtherPointer: return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    case SpirvParameter::Kind::Value:
      if (size != parameter.bytes) return ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE;
      if (!value) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
      status = host.clSetKernelArg(kernel->kernel, index, size, value);
      break;
  }
  if (status != CL_SUCCESS) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  kernel->set[index] = true;
  return ZE_RESULT_SUCCESS;
}

struct LaunchWait {
  std::mutex mutex;
  std::condition_variable done;
  bool finished = false;
};

void CL_CALLBACK on_complete(cl_event, cl_int, void* data) {
  auto* wait = static_cast<LaunchWait*>(data);
  std::lock_guard lock(wait->mutex);
  wait->finished = true;
  wait->done.notify_all();
}

ze_result_t ZE_APICALL CommandListAppendLaunchKernel(ze_command_list_handle_t list_handle,
                                                     ze_kernel_handle_t kernel_handle, const ze_group_count_t* groups,
                                                     ze_event_handle_t signal, uint32_t waits,
                                                     ze_event_handle_t* wait_events) {
  CHECK_INITIALIZED();
  std::unique_lock lock(driver().mutex);
  Append append = begin_append(list_handle, signal, waits, wait_events);
  if (!append.list) return append.result;
  Kernel* kernel = known(driver().kernels, kernel_handle);
  if (!kernel) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!groups) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  Device* device = append.list->device;
  if (kernel->module->device != device) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  if (kernel->group[0] == 0) return ZE_RESULT_ERROR_INVALID_ARGUMENT;  // zeKernelSetGroupSize never called
  for (std::size_t k = 0; k < kernel->set.size(); ++k)
    if (!kernel->set[k]) return ZE_RESULT_ERROR_INVALID_ARGUMENT;  // an argument never set
  const std::uint32_t counts[3] = {groups->groupCountX, groups->groupCountY, groups->groupCountZ};
  for (std::uint32_t c : counts)
    if (c > device->max_group_count) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  if (counts[0] == 0 || counts[1] == 0 || counts[2] == 0) {
    if (append.signal) append.signal->signaled = true;
    return ZE_RESULT_SUCCESS;
  }
  const std::size_t local[3] = {kernel->group[0], kernel->group[1], kernel->group[2]};
  const std::size_t global[3] = {local[0] * counts[0], local[1] * counts[1], local[2] * counts[2]};
  const OpenClHost& host = opencl_host();
  cl_event event = nullptr;
  std::lock_guard run(device->run);  // arguments stay as set until the launch is queued
  const cl_int status =
      host.clEnqueueNDRangeKernel(device->queue, kernel->kernel, 3, nullptr, global, local, 0, nullptr, &event);
  if (status != CL_SUCCESS) {
    std::fprintf(stderr, "canopy emulated Level Zero: the OpenCL host refused the launch: %s\n",
                 cl_status_name(status).c_str());
    return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  }
  LaunchWait wait;
  host.clSetEventCallback(event, CL_COMPLETE, &on_complete, &wait);
  host.clFlush(device->queue);
  lock.unlock();  // other devices may work meanwhile
  const double timeout = [] {
    const char* text = std::getenv("CANOPY_EMULATED_ZE_TIMEOUT");
    return text && *text ? std::atof(text) : 120.0;
  }();
  bool finished = false;
  {
    std::unique_lock waiting(wait.mutex);
    if (timeout > 0)
      finished = wait.done.wait_for(waiting, std::chrono::duration<double>(timeout), [&] { return wait.finished; });
    else
      wait.done.wait(waiting, [&] { return wait.finished; }), finished = true;
  }
  lock.lock();
  if (!finished) {
    std::fprintf(stderr,
                 "canopy emulated Level Zero: a launch on %s ran past %.3g s (CANOPY_EMULATED_ZE_TIMEOUT); the "
                 "device is lost\n",
                 device->name.c_str(), timeout);
    device->lost = true;
    // The OpenCL host cannot stop the kernel, and its callback will still
    // come: `wait` must outlive it, so it is left behind on purpose.
    new LaunchWait;
    return ZE_RESULT_ERROR_DEVICE_LOST;
  }
  cl_int executed = CL_COMPLETE;
  host.clGetEventInfo(event, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof executed, &executed, nullptr);
  host.clReleaseEvent(event);
  if (executed < 0) {
    device->lost = true;
    return ZE_RESULT_ERROR_DEVICE_LOST;
  }
  if (append.signal && known(driver().events, signal)) append.signal->signaled = true;
  return ZE_RESULT_SUCCESS;
}

}  // namespace

// ---- the tables the loader reads --------------------------------------------------

namespace {

// Every table getter: checks the version and empties the table; the
// filled ones below then set the functions this driver has.
template <typename Table>
ze_result_t empty_table(ze_api_version_t version, Table* table) {
  if (!table) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (ZE_MAJOR_VERSION(version) != ZE_MAJOR_VERSION(ZE_API_VERSION_CURRENT)) return ZE_RESULT_ERROR_UNSUPPORTED_VERSION;
  std::memset(static_cast<void*>(table), 0, sizeof *table);
  return ZE_RESULT_SUCCESS;
}

void fill(ze_global_dditable_t& t) { t.pfnInit = Init; }
void fill(ze_driver_dditable_t& t) {
  t.pfnGet = DriverGet;
  t.pfnGetApiVersion = DriverGetApiVersion;
  t.pfnGetProperties = DriverGetProperties;
  t.pfnGetIpcProperties = DriverGetIpcProperties;
  t.pfnGetExtensionProperties = DriverGetExtensionProperties;
}
void fill(ze_device_dditable_t& t) {
  t.pfnGet = DeviceGet;
  t.pfnGetSubDevices = DeviceGetSubDevices;
  t.pfnGetProperties = DeviceGetProperties;
  t.pfnGetComputeProperties = DeviceGetComputeProperties;
  t.pfnGetModuleProperties = DeviceGetModuleProperties;
  t.pfnGetCommandQueueGroupProperties = DeviceGetCommandQueueGroupProperties;
  t.pfnGetMemoryProperties = DeviceGetMemoryProperties;
  t.pfnGetStatus = DeviceGetStatus;
  t.pfnPciGetPropertiesExt = DevicePciGetPropertiesExt;
}
void fill(ze_context_dditable_t& t) {
  t.pfnCreate = ContextCreate;
  t.pfnDestroy = ContextDestroy;
}
void fill(ze_command_list_dditable_t& t) {
  t.pfnCreateImmediate = CommandListCreateImmediate;
  t.pfnDestroy = CommandListDestroy;
  t.pfnAppendMemoryCopy = CommandListAppendMemoryCopy;
  t.pfnAppendMemoryFill = CommandListAppendMemoryFill;
  t.pfnAppendLaunchKernel = CommandListAppendLaunchKernel;
}
void fill(ze_event_pool_dditable_t& t) {
  t.pfnCreate = EventPoolCreate;
  t.pfnDestroy = EventPoolDestroy;
}
void fill(ze_event_dditable_t& t) {
  t.pfnCreate = EventCreate;
  t.pfnDestroy = EventDestroy;
  t.pfnHostSignal = EventHostSignal;
  t.pfnHostSynchronize = EventHostSynchronize;
  t.pfnQueryStatus = EventQueryStatus;
  t.pfnHostReset = EventHostReset;
}
void fill(ze_mem_dditable_t& t) {
  t.pfnAllocDevice = MemAllocDevice;
  t.pfnFree = MemFree;
}
void fill(ze_module_dditable_t& t) {
  t.pfnCreate = ModuleCreate;
  t.pfnDestroy = ModuleDestroy;
  t.pfnGetNativeBinary = ModuleGetNativeBinary;
}
void fill(ze_module_build_log_dditable_t& t) {
  t.pfnDestroy = ModuleBuildLogDestroy;
  t.pfnGetString = ModuleBuildLogGetString;
}
void fill(ze_kernel_dditable_t& t) {
  t.pfnCreate = KernelCreate;
  t.pfnDestroy = KernelDestroy;
  t.pfnSetGroupSize = KernelSetGroupSize;
  t.pfnSetArgumentValue = KernelSetArgumentValue;
  t.pfnGetProperties = KernelGetProperties;
}
template <typename Table>
void fill(Table&) {}  // a table this driver leaves empty

}  // namespace

// Every table getter of ze_ddi.h, zet_ddi.h and zes_ddi.h (Level Zero 1.8).
#define CANOPY_EMULATED_ZE_TABLES(X)                                         \
  X(zeGetGlobalProcAddrTable, ze_global_dditable_t)                          \
  X(zeGetDriverProcAddrTable, ze_driver_dditable_t)                          \
  X(zeGetDeviceProcAddrTable, ze_device_dditable_t)                          \
  X(zeGetDeviceExpProcAddrTable, ze_device_exp_dditable_t)                   \
  X(zeGetContextProcAddrTable, ze_context_dditable_t)                        \
  X(zeGetCommandQueueProcAddrTable, ze_command_queue_dditable_t)             \
  X(zeGetCommandListProcAddrTable, ze_command_list_dditable_t)               \
  X(zeGetImageProcAddrTable, ze_image_dditable_t)                            \
  X(zeGetImageExpProcAddrTable, ze_image_exp_dditable_t)                     \
  X(zeGetFenceProcAddrTable, ze_fence_dditable_t)                            \
  X(zeGetEventPoolProcAddrTable, ze_event_pool_dditable_t)                   \
  X(zeGetEventProcAddrTable, ze_event_dditable_t)                            \
  X(zeGetEventExpProcAddrTable, ze_event_exp_dditable_t)                     \
  X(zeGetModuleProcAddrTable, ze_module_dditable_t)                          \
  X(zeGetModuleBuildLogProcAddrTable, ze_module_build_log_dditable_t)        \
  X(zeGetKernelProcAddrTable, ze_kernel_dditable_t)                          \
  X(zeGetKernelExpProcAddrTable, ze_kernel_exp_dditable_t)                   \
  X(zeGetSamplerProcAddrTable, ze_sampler_dditable_t)                        \
  X(zeGetPhysicalMemProcAddrTable, ze_physical_mem_dditable_t)               \
  X(zeGetMemProcAddrTable, ze_mem_dditable_t)                                \
  X(zeGetVirtualMemProcAddrTable, ze_virtual_mem_dditable_t)                 \
  X(zeGetFabricVertexExpProcAddrTable, ze_fabric_vertex_exp_dditable_t)      \
  X(zeGetFabricEdgeExpProcAddrTable, ze_fabric_edge_exp_dditable_t)          \
  X(zetGetDeviceProcAddrTable, zet_device_dditable_t)                        \
  X(zetGetContextProcAddrTable, zet_context_dditable_t)                      \
  X(zetGetCommandListProcAddrTable, zet_command_list_dditable_t)             \
  X(zetGetModuleProcAddrTable, zet_module_dditable_t)                        \
  X(zetGetKernelProcAddrTable, zet_kernel_dditable_t)                        \
  X(zetGetMetricGroupProcAddrTable, zet_metric_group_dditable_t)             \
  X(zetGetMetricGroupExpProcAddrTable, zet_metric_group_exp_dditable_t)      \
  X(zetGetMetricProcAddrTable, zet_metric_dditable_t)                        \
  X(zetGetMetricStreamerProcAddrTable, zet_metric_streamer_dditable_t)       \
  X(zetGetMetricQueryPoolProcAddrTable, zet_metric_query_pool_dditable_t)    \
  X(zetGetMetricQueryProcAddrTable, zet_metric_query_dditable_t)             \
  X(zetGetTracerExpProcAddrTable, zet_tracer_exp_dditable_t)                 \
  X(zetGetDebugProcAddrTable, zet_debug_dditable_t)                          \
  X(zesGetDriverProcAddrTable, zes_driver_dditable_t)                        \
  X(zesGetDeviceProcAddrTable, zes_device_dditable_t)                        \
  X(zesGetSchedulerProcAddrTable, zes_scheduler_dditable_t)                  \
  X(zesGetPerformanceFactorProcAddrTable, zes_performance_factor_dditable_t) \
  X(zesGetPowerProcAddrTable, zes_power_dditable_t)                          \
  X(zesGetFrequencyProcAddrTable, zes_frequency_dditable_t)                  \
  X(zesGetEngineProcAddrTable, zes_engine_dditable_t)                        \
  X(zesGetStandbyProcAddrTable, zes_standby_dditable_t)                      \
  X(zesGetFirmwareProcAddrTable, zes_firmware_dditable_t)                    \
  X(zesGetMemoryProcAddrTable, zes_memory_dditable_t)                        \
  X(zesGetFabricPortProcAddrTable, zes_fabric_port_dditable_t)               \
  X(zesGetTemperatureProcAddrTable, zes_temperature_dditable_t)              \
  X(zesGetPsuProcAddrTable, zes_psu_dditable_t)                              \
  X(zesGetFanProcAddrTable, zes_fan_dditable_t)                              \
  X(zesGetLedProcAddrTable, zes_led_dditable_t)                              \
  X(zesGetRasProcAddrTable, zes_ras_dditable_t)                              \
  X(zesGetDiagnosticsProcAddrTable, zes_diagnostics_dditable_t)

extern "C" {
#define CANOPY_EMULATED_ZE_GETTER(name, Table)                                       \
  ZE_DLLEXPORT ze_result_t ZE_APICALL name(ze_api_version_t version, Table* table) { \
    const ze_result_t result = empty_table(version, table);                          \
    if (result == ZE_RESULT_SUCCESS) fill(*table);                                   \
    return result;                                                                   \
  }
CANOPY_EMULATED_ZE_TABLES(CANOPY_EMULATED_ZE_GETTER)
#undef CANOPY_EMULATED_ZE_GETTER
}
