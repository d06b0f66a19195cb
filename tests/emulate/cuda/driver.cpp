// A stand-in for the CUDA driver library (libcuda.so.1), so that Canopy's
// CUDA backend runs unchanged on a machine without a GPU: Canopy opens it
// through CANOPY_LIBCUDA exactly as it opens the real driver, and it exports
// every function of Canopy's driver table (backends/cuda/api.hpp) under the
// driver's symbols, with the driver's signatures, status codes and error
// semantics: calls before cuInit, unknown devices, contexts, streams,
// events, modules and functions, and device pointers that are not an
// allocation's are refused as the driver refuses them; allocations past
// the emulated memory give CUDA_ERROR_OUT_OF_MEMORY; launches past the
// block and grid limits CUDA_ERROR_INVALID_VALUE.
//
// Modules are what the emulated NVRTC (nvrtc.cpp) makes, host shared
// objects (module_image.hpp); a launch runs the kernel a module exports with
// cuLaunchKernel's own arguments, grid and block (launch.hpp). A launch that
// fails (a barrier not every thread reaches, an access outside every
// allocation, a kernel past its time) fails as on a GPU: cuLaunchKernel
// returns success and the error sticks to the context, returned by the
// next wait and by later calls there. Each allocation is mapped with a page
// that may not be touched right after its end (its size rounded up to 256
// bytes) and one before it.
//
// Work is done when it is submitted, in call order: every stream's order,
// and events (complete when recorded), hold trivially.
//
// Device properties come from the environment when cuInit runs (the
// emulator's own variables, not Canopy's settings):
//   CANOPY_EMULATED_CUDA_DEVICES      how many devices (default 1)
//   CANOPY_EMULATED_CUDA_MEMORY       bytes of memory per device; K, M, G suffixes (default 2G)
//   CANOPY_EMULATED_CUDA_MAX_THREADS  most threads per block (default 1024)
//   CANOPY_EMULATED_CUDA_WARP_SIZE    threads per warp (default 32)
//   CANOPY_EMULATED_CUDA_CAPABILITY   compute capability, "8.0" (default)
//   CANOPY_EMULATED_CUDA_SMS          multiprocessors (default 4)
//   CANOPY_EMULATED_CUDA_SHARED       shared memory per block in bytes; suffixes as above (default 48K)
//   CANOPY_EMULATED_CUDA_TIMEOUT      seconds a launch may run (default 120; 0: no limit), read
//                                     at each launch; past it, CUDA_ERROR_LAUNCH_TIMEOUT
//   CANOPY_EMULATED_CUDA_ORDER        in-order: blocks run in the grid's order (default:
//                                     scrambled), read at each launch
// Each device has a PCI address of its own, 0000:e0:<ordinal>.0.
//
// A test-only library: nothing in Canopy's product opens it unless told to.
#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "../environment.hpp"
#include "driver_state.hpp"
#include "launch.hpp"
#include "module_image.hpp"

using namespace canopy_emulated;

namespace {

using canopy_emulated_environment::size_from_environment;

int int_from_environment(const char* name, int fallback) {
  const char* text = std::getenv(name);
  if (!text || !*text) return fallback;
  const int value = std::atoi(text);
  return value > 0 ? value : fallback;
}

void make_devices(Driver& state) {
  const int count = int_from_environment("CANOPY_EMULATED_CUDA_DEVICES", 1);
  for (int ordinal = 0; ordinal < count; ++ordinal) {
    auto device = std::make_unique<Device>();
    device->ordinal = ordinal;
    device->memory = size_from_environment("CANOPY_EMULATED_CUDA_MEMORY", std::size_t{2} << 30);
    device->max_threads = int_from_environment("CANOPY_EMULATED_CUDA_MAX_THREADS", 1024);
    device->warp_size = int_from_environment("CANOPY_EMULATED_CUDA_WARP_SIZE", 32);
    device->multiprocessors = int_from_environment("CANOPY_EMULATED_CUDA_SMS", 4);
    device->shared_memory = size_from_environment("CANOPY_EMULATED_CUDA_SHARED", 48 * 1024);
    if (const char* capability = std::getenv("CANOPY_EMULATED_CUDA_CAPABILITY"); capability && *capability)
      std::sscanf(capability, "%d.%d", &device->major, &device->minor);
    auto context = std::make_unique<Context>();
    context->device = device.get();
    state.devices.push_back(std::move(device));
    state.contexts.push_back(std::move(context));
  }
}

// Writes a message into the JIT log buffer cuModuleLoadDataEx was given, if any.
void write_log(unsigned int count, const int* options, void** values, int buffer_option, int size_option,
               const std::string& message) {
  char* buffer = nullptr;
  std::size_t size = 0;
  for (unsigned int k = 0; k < count; ++k) {
    if (options[k] == buffer_option) buffer = static_cast<char*>(values[k]);
    if (options[k] == size_option) size = static_cast<std::size_t>(reinterpret_cast<std::uintptr_t>(values[k]));
  }
  if (!buffer || size == 0) return;
  const std::size_t n = std::min(size - 1, message.size());
  std::memcpy(buffer, message.data(), n);
  buffer[n] = '\0';
}

// The names and descriptions of the driver's status codes.
struct ErrorText {
  CUresult code;
  const char* name;
  const char* description;
};
constexpr ErrorText kErrors[] = {
    {0, "CUDA_SUCCESS", "no error"},
    {1, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {2, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {3, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {100, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {101, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {200, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {201, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {400, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {500, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {700, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
    {702, "CUDA_ERROR_LAUNCH_TIMEOUT", "the launch timed out and was terminated"},
    {719, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
    {801, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
};

const ErrorText* error_text(CUresult code) {
  for (const ErrorText& text : kErrors)
    if (text.code == code) return &text;
  return nullptr;
}

}  // namespace

extern "C" {

// ---- initialization, errors and devices ---------------------------------------------------

CUresult cuInit(unsigned int flags) {
  if (flags != 0) return kInvalidValue;
  Driver& state = driver();
  std::lock_guard lock(state.mutex);
  if (!state.initialized) make_devices(state);
  state.initialized = true;
  return state.devices.empty() ? kNoDevice : kSuccess;
}

CUresult cuDriverGetVersion(int* version) {
  if (!version) return kInvalidValue;
  *version = kDriverVersion;
  return kSuccess;
}

CUresult cuGetErrorName(CUresult code, const char** name) {
  if (!name) return kInvalidValue;
  const ErrorText* text = error_text(code);
  *name = text ? text->name : nullptr;
  return text ? kSuccess : kInvalidValue;
}

CUresult cuGetErrorString(CUresult code, const char** description) {
  if (!description) return kInvalidValue;
  const ErrorText* text = error_text(code);
  *description = text ? text->description : nullptr;
  return text ? kSuccess : kInvalidValue;
}

CUresult cuDeviceGetCount(int* count) {
  if (!count) return kInvalidValue;
  Driver& state = driver();
  std::lock_guard lock(state.mutex);
  if (!state.initialized) return kNotInitialized;
  *count = static_cast<int>(state.devices.size());
  return kSuccess;
}

CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  if (!device) return kInvalidValue;
  Driver& state = driver();
  std::lock_guard lock(state.mutex);
  if (!state.initialized) return kNotInitialized;
  if (ordinal < 0 || ordinal >= static_cast<int>(state.devices.size())) return kInvalidDevice;
  *device = ordinal;
  return kSuccess;
}

}  // extern "C"

namespace {
// The device `ordinal` names, or null; sets `status` to why not.
Device* device_at(CUdevice ordinal, CUresult& status) {
  Driver& state = driver();
  status = kSuccess;
  if (!state.initialized)
    status = kNotInitialized;
  else if (ordinal < 0 || ordinal >= static_cast<int>(state.devices.size()))
    status = kInvalidDevice;
  return status == kSuccess ? state.devices[static_cast<std::size_t>(ordinal)].get() : nullptr;
}
}  // namespace

extern "C" {

CUresult cuDeviceGetName(char* name, int length, CUdevice ordinal) {
  if (!name || length <= 0) return kInvalidValue;
  std::lock_guard lock(driver().mutex);
  CUresult status = kSuccess;
  if (!device_at(ordinal, status)) return status;
  std::snprintf(name, static_cast<std::size_t>(length), "Canopy emulated CUDA device %d", ordinal);
  return kSuccess;
}

CUresult cuDeviceGetAttribute(int* value, int attribute, CUdevice ordinal) {
  if (!value) return kInvalidValue;
  std::lock_guard lock(driver().mutex);
  CUresult status = kSuccess;
  const Device* device = device_at(ordinal, status);
  if (!device) return status;
  switch (attribute) {
    case 1: *value = device->max_threads; break;  // MAX_THREADS_PER_BLOCK
    case 2:
    case 3: *value = device->max_threads; break;                // MAX_BLOCK_DIM_X, _Y
    case 4: *value = std::min(64, device->max_threads); break;  // MAX_BLOCK_DIM_Z
    case 5: *value = 2147483647; break;                         // MAX_GRID_DIM_X
    case 6:
    case 7: *value = 65535; break;                                    // MAX_GRID_DIM_Y, _Z
    case 8: *value = static_cast<int>(device->shared_memory); break;  // MAX_SHARED_MEMORY_PER_BLOCK
    case 10: *value = device->warp_size; break;                       // WARP_SIZE
    case 16: *value = device->multiprocessors; break;                 // MULTIPROCESSOR_COUNT
    case 18: *value = 0; break;                                       // INTEGRATED
    case 33: *value = 0xe0; break;                                    // PCI_BUS_ID
    case 34: *value = ordinal; break;                                 // PCI_DEVICE_ID
    case 50: *value = 0; break;                                       // PCI_DOMAIN_ID
    case 75: *value = device->major; break;                           // COMPUTE_CAPABILITY_MAJOR
    case 76: *value = device->minor; break;                           // COMPUTE_CAPABILITY_MINOR
    default: return kInvalidValue;
  }
  return kSuccess;
}

CUresult cuDeviceTotalMem_v2(std::size_t* bytes, CUdevice ordinal) {
  if (!bytes) return kInvalidValue;
  std::lock_guard lock(driver().mutex);
  CUresult status = kSuccess;
  const Device* device = device_at(ordinal, status);
  if (!device) return status;
  *bytes = device->memory;
  return kSuccess;
}

CUresult cuDeviceGetPCIBusId(char* text, int length, CUdevice ordinal) {
  if (!text || length <= 0) return kInvalidValue;
  std::lock_guard lock(driver().mutex);
  CUresult status = kSuccess;
  if (!device_at(ordinal, status)) return status;
  std::snprintf(text, static_cast<std::size_t>(length), "0000:E0:%02X.0", static_cast<unsigned>(ordinal));
  return kSuccess;
}

// ---- contexts ----------------------------------------------------------------------------

CUresult cuDevicePrimaryCtxRetain(CUcontext* context, CUdevice ordinal) {
  if (!context) return kInvalidValue;
  Driver& state = driver();
  std::lock_guard lock(state.mutex);
  CUresult status = kSuccess;
  if (!device_at(ordinal, status)) return status;
  Context* primary = state.contexts[static_cast<std::size_t>(ordinal)].get();
  ++primary->retained;
  *context = reinterpret_cast<CUcontext>(primary);
  return kSuccess;
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice ordinal) {
  Driver& state = driver();
  std::lock_guard lock(state.mutex);
  CUresult status = kSuccess;
  if (!device_at(ordinal, status)) return status;
  Context* primary = state.contexts[static_cast<std::size_t>(ordinal)].get();
  if (primary->retained == 0) return kInvalidContext;
  if (--primary->retained == 0) primary->sticky = kSuccess;  // a context made afresh next time
  return kSuccess;
}

CUresult cuCtxPushCurrent_v2(CUcontext context) {
  Driver& state = driver();
  std::lock_guard lock(state.mutex);
  if (!state.initialized) return kNotInitialized;
  auto* pushed = reinterpret_cast<Context*>(context);
  const bool known = std::any_of(state.contexts.begin(), state.contexts.end(),
                                 [&](const auto& c) { return c.get() == pushed && c->retained > 0; });
  if (!known) return kInvalidContext;
  current_contexts_of_this_thread().push_back(pushed);
  return kSuccess;
}

CUresult cuCtxPopCurrent_v2(CUcontext* context) {
  Driver& state = driver();
  std::lock_guard lock(state.mutex);
  if (!state.initialized) return kNotInitialized;
  if (current_contexts_of_this_thread().empty()) return kInvalidContext;
  if (context) *context = reinterpret_cast<CUcontext>(current_contexts_of_this_thread().back());
  current_contexts_of_this_thread().pop_back();
  return kSuccess;
}

// ---- memory ----------------------------------------------------------------------------------

CUresult cuMemGetInfo_v2(std::size_t* free_bytes, std::size_t* total_bytes) {
  if (!free_bytes || !total_bytes) return kInvalidValue;
  Driver& state = driver();
  std::lock_guard lock(state.mutex);
  Context* context = nullptr;
  if (const CUresult status = usable_context(state, context); status != kSuccess) return status;
  *total_bytes = context->device->memory;
  *free_bytes = context->device->memory - context->device->used;
  return kSuccess;
}

CUresult cuMemAlloc_v2(CUdeviceptr* address, std::size_t bytes) {
  if (!address) return kInvalidValue;
  Driver& state = driver();
  std::lock_guard lock(state.mutex);
  Context* context = nullptr;
  if (const CUresult status = usable_context(state, context); status != kSuccess) return status;
  if (bytes == 0) return kInvalidValue;
  Device& device = *context->device;
  // The driver counts memory in pieces of 512 bytes and aligns it to 256.
  const std::size_t counted = (bytes + 511) / 512 * 512;
  if (counted > device.memory - device.used) return kOutOfMemory;
  const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  const std::size_t usable = (bytes + 255) / 256 * 256, span = (usable + page - 1) / page * page;
  void* mapping =
      mmap(nullptr, span + 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (mapping == MAP_FAILED) return kOutOfMemory;
  auto* base = static_cast<char*>(mapping);
  mprotect(base, page, PROT_NONE);
  mprotect(base + page + span, page, PROT_NONE);
  device.used += counted;
  const auto start = static_cast<CUdeviceptr>(reinterpret_cast<std::uintptr_t>(base + page + span - usable));
  state.allocations[start] = Allocation{usable, counted, mapping, span + 2 * page, context};
  *address = start;
  return kSuccess;
}

CUresult cuMemFree_v2(CUdeviceptr address) {
  Driver& state = driver();
  std::lock_guard lock(state.mutex);
  Context* context = nullptr;
  if (const CUresult status = usable_context(state, context); status != kSuccess) return status;
  if (address == 0) return kSuccess;
  auto found = state.allocations.find(address);
  if (found == state.allocations.end()) return kInvalidValue;
  found->second.context->device->used -= found->second.counted;
  munmap(found->second.mapping, found->second.mapping_bytes);
  state.allocations.erase(found);
  return kSuccess;
}

}  // extern "C"

namespace {
// The checks every copy and fill makes: a usable context and stream, and
// `bytes` at `address` inside one of its allocations.
CUresult check_device_range(CUdeviceptr address, std::size_t bytes, CUstream stream) {
  Driver& state = driver();
  std::lock_guard lock(state.mutex);
  Context* context = nullptr;
  if (const CUresult status = usable_context(state, context); status != kSuccess) return status;
  if (!usable_stream(state, stream, context)) return kInvalidHandle;
  if (bytes > 0 && !inside_allocation(state, address, bytes, context)) return kInvalidValue;
  return kSuccess;
}
void* host_address(CUdeviceptr address) { return reinterpret_cast<void*>(static_cast<std::uintptr_t>(address)); }
}  // namespace

extern "C" {

CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr destination, const void* source, std::size_t bytes, CUstream stream) {
  if (bytes > 0 && !source) return kInvalidValue;
  if (const CUresult status = check_device_range(destination, bytes, stream); status != kSuccess) return status;
  if (bytes > 0) std::memcpy(host_address(destination), source, bytes);
  return kSuccess;
}

CUresult cuMemcpyDtoHAsync_v2(void* destination, CUdeviceptr source, std::size_t bytes, CUstream stream) {
  if (bytes > 0 && !destination) return kInvalidValue;
  if (const CUresult status = check_device_range(source, bytes, stream); status != kSuccess) return status;
  if (bytes > 0) std::memcpy(destination, host_address(source), bytes);
  return kSuccess;
}

CUresult cuMemsetD8Async(CUdeviceptr destination, unsigned char value, std::size_t count, CUstream stream) {
  if (const CUresult status = check_device_range(destination, count, stream); status != kSuccess) return status;
  if (count > 0) std::memset(host_address(destination), value, count);
  return kSuccess;
}

CUresult cuMemsetD32Async(CUdeviceptr destination, unsigned int value, std::size_t count, CUstream stream) {
  if (destination % 4 != 0) return kInvalidValue;
  if (const CUresult status = check_device_range(destination, 4 * count, stream); status != kSuccess) return status;
  auto* words = static_cast<unsigned int*>(host_address(destination));
  std::fill(words, words + count, value);
  return kSuccess;
}

CUresult cuMemsetD2D32Async(CUdeviceptr destination, std::size_t pitch, unsigned int value, std::size_t width,
                            std::size_t height, CUstream stream) {
  if (destination % 4 != 0 || pitch % 4 != 0 || (height > 1 && pitch < 4 * width)) return kInvalidValue;
  const std::size_t reach = height == 0 ? 0 : (height - 1) * pitch + 4 * width;
  if (const CUresult status = check_device_range(destination, reach, stream); status != kSuccess) return status;
  for (std::size_t row = 0; row < height; ++row) {
    auto* words = static_cast<unsigned int*>(host_address(destination + row * pitch));
    std::fill(words, words + width, value);
  }
  return kSuccess;
}

// ---- streams and events: work is done when it is submitted -----------------------------------

CUresult cuStreamCreate(CUstream* stream, unsigned int flags) {
  if (!stream || flags > 1) return kInvalidValue;
  Driver& state = driver();
  std::lock_guard lock(state.mutex);
  Context* context = nullptr;
  if (const CUresult status = usable_context(state, context); status != kSuccess) return status;
  auto* created = new Stream{context};
  state.streams.insert(created);
  *stream = reinterpret_cast<CUstream>(created);
  return kSuccess;
}

CUresult cuStreamDestroy_v2(CUstream stream) {
  Driver& state = driver();
  std::lock_guard lock(state.mutex);
  if (!state.initialized) return kNotInitialized;
  auto* known = reinterpret_cast<Stream*>(stream);
  if (!state.streams.erase(known)) return kInvalidHandle;
  delete known;
  return kSuccess;
}

CUresult cuStreamSynchronize(CUstream stream) {
  Driver& state = driver();
  std::lock_guard lock(state.mutex);
  Context* context = nullptr;
  if (const CUresult status = usable_context(state, context); status != kSuccess) return status;
  return usable_stream(state, stream, context) ? kSuccess : kInvalidHandle;
}

CUresult cuEventCreate(CUevent* event, unsigned int flags) {
  if (!event || (flags & ~0x7u) != 0) return kInvalidValue;
  Driver& state = driver();
  std::lock_guard lock(state.mutex);
  Context* context = nullptr;
  if (const CUresult status = usable_context(state, context); status != kSuccess) return status;
  auto* created = new Event{context};
  state.events.insert(created);
  *event = reinterpret_cast<CUevent>(created);
  return kSuccess;
}

CUresult cuEventRecord(CUevent event, CUstream stream) {
  Driver& state = driver();
  std::lock_guard lock(state.mutex);
  Context* context = nullptr;
  if (const CUresult status = usable_context(state, context); status != kSuccess) return status;
  auto* known = reinterpret_cast<Event*>(event);
  if (!state.events.count(known) || !usable_stream(state, stream, known->context)) return kInvalidHandle;
  return kSuccess;
}

CUresult cuEventSynchronize(CUevent event) {
  Driver& state = driver();
  std::lock_guard lock(state.mutex);
  if (!state.initialized) return kNotInitialized;
  auto* known = reinterpret_cast<Event*>(event);
  if (!state.events.count(known)) return kInvalidHandle;
  return known->context->sticky;
}

CUresult cuEventDestroy_v2(CUevent event) {
  Driver& state = driver();
  std::lock_guard lock(state.mutex);
  if (!state.initialized) return kNotInitialized;
  auto* known = reinterpret_cast<Event*>(event);
  if (!state.events.erase(known)) return kInvalidHandle;
  delete known;
  return kSuccess;
}

// ---- modules and launches -----------------------------------------------------------------------

CUresult cuModuleLoadDataEx(CUmodule* module, const void* image, unsigned int count, int* options, void** values) {
  if (!module || !image || (count > 0 && (!options || !values))) return kInvalidValue;
  {
    Driver& state = driver();
    std::lock_guard lock(state.mutex);
    Context* context = nullptr;
    if (const CUresult status = usable_context(state, context); status != kSuccess) return status;
  }
  std::string error;
  std::unique_ptr<Module> opened = open_module(image, error);
  constexpr int kInfoLog = 3, kInfoLogSize = 4, kErrorLog = 5, kErrorLogSize = 6;
  write_log(count, options, values, kInfoLog, kInfoLogSize, "");
  write_log(count, options, values, kErrorLog, kErrorLogSize, error);
  if (!opened) return kInvalidImage;
  Driver& state = driver();
  std::lock_guard lock(state.mutex);
  opened->context = current();
  Module* loaded = opened.release();
  state.modules.insert(loaded);
  *module = reinterpret_cast<CUmodule>(loaded);
  return kSuccess;
}

CUresult cuModuleUnload(CUmodule module) {
  Driver& state = driver();
  std::lock_guard lock(state.mutex);
  if (!state.initialized) return kNotInitialized;
  auto* known = reinterpret_cast<Module*>(module);
  if (!state.modules.erase(known)) return kInvalidHandle;
  for (auto& [name, function] : known->functions) state.functions.erase(function.get());
  dlclose(known->library);
  delete known;
  return kSuccess;
}

CUresult cuModuleGetFunction(CUfunction* function, CUmodule module, const char* name) {
  if (!function || !name) return kInvalidValue;
  Driver& state = driver();
  std::lock_guard lock(state.mutex);
  if (!state.initialized) return kNotInitialized;
  auto* known = reinterpret_cast<Module*>(module);
  if (!state.modules.count(known)) return kInvalidHandle;
  auto& slot = known->functions[name];
  if (!slot) {
    const std::string entry_name = std::string(canopy_emulated::kEntryPrefix) + name;
    auto entry = reinterpret_cast<canopy_emulated::Entry>(dlsym(known->library, entry_name.c_str()));
    if (!entry) {
      known->functions.erase(name);
      return kNotFound;
    }
    slot = std::make_unique<Function>(Function{known, name, entry});
    state.functions.insert(slot.get());
  }
  *function = reinterpret_cast<CUfunction>(slot.get());
  return kSuccess;
}

CUresult cuFuncGetAttribute(int* value, int attribute, CUfunction function) {
  if (!value) return kInvalidValue;
  Driver& state = driver();
  std::lock_guard lock(state.mutex);
  if (!state.initialized) return kNotInitialized;
  auto* known = reinterpret_cast<Function*>(function);
  if (!state.functions.count(known)) return kInvalidHandle;
  switch (attribute) {
    case 0: *value = known->module->context->device->max_threads; return kSuccess;  // MAX_THREADS_PER_BLOCK
    case 1:
    case 2:
    case 3: *value = 0; return kSuccess;   // shared, constant and local bytes: the host's
    case 4: *value = 32; return kSuccess;  // NUM_REGS
    case 5: *value = 80; return kSuccess;  // PTX_VERSION
    case 6: *value = 80; return kSuccess;  // BINARY_VERSION
    default: return kInvalidValue;
  }
}

CUresult cuLaunchKernel(CUfunction function, unsigned int grid_x, unsigned int grid_y, unsigned int grid_z,
                        unsigned int block_x, unsigned int block_y, unsigned int block_z, unsigned int shared_bytes,
                        CUstream stream, void** params, void** extra) {
  Driver& state = driver();
  Function* known = reinterpret_cast<Function*>(function);
  int warp_size = 32;
  {
    std::lock_guard lock(state.mutex);
    Context* context = nullptr;
    if (const CUresult status = usable_context(state, context); status != kSuccess) return status;
    if (!state.functions.count(known)) return kInvalidHandle;
    if (known->module->context != context) return kInvalidContext;
    if (!usable_stream(state, stream, context)) return kInvalidHandle;
    if (extra) return kNotSupported;  // Canopy passes its arguments as kernelParams
    const Device& device = *context->device;
    const unsigned long long threads = 1ULL * block_x * block_y * block_z;
    if (grid_x == 0 || grid_y == 0 || grid_z == 0 || grid_y > 65535 || grid_z > 65535 || threads == 0 ||
        threads > static_cast<unsigned long long>(device.max_threads) || block_z > 64 ||
        shared_bytes > device.shared_memory)
      return kInvalidValue;
    warp_size = device.warp_size;
  }
  const unsigned int grid[3] = {grid_x, grid_y, grid_z}, block[3] = {block_x, block_y, block_z};
  CUresult status = kSuccess;
  const std::string failure = run_grid(*known, grid, block, params, warp_size, status);
  if (failure.empty()) return kSuccess;
  std::fprintf(stderr, "canopy emulated CUDA: kernel '%s' failed: %s\n", known->name.c_str(), failure.c_str());
  std::lock_guard lock(state.mutex);
  known->module->context->sticky = status;
  return kSuccess;  // as on a GPU, the failure shows when the stream is waited for
}

}  // extern "C"
