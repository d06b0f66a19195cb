#include "api.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include <canopy/ir/error.hpp>
#include <canopy/ir/settings.hpp>

#include "../library.hpp"

namespace canopy::backends::cuda {

namespace {

LoadedDriver open_driver(const std::string& library) {
  LoadedDriver result;
  const OpenedLibrary opened = open_library(library);
  if (!opened.handle) {
    result.absent_reason = "the CUDA driver library '" + library + "' could not be opened (" + opened.error +
                           "); install the NVIDIA driver or point CANOPY_LIBCUDA at its libcuda.so.1";
    return result;
  }
  auto api = std::make_shared<DriverApi>();
  api->library = library;
  SymbolTable symbols(opened.handle);
#define CANOPY_CUDA_RESOLVE(name, symbol, ...) symbols.required(api->name, symbol);
  CANOPY_CUDA_DRIVER_FUNCTIONS(CANOPY_CUDA_RESOLVE)
#undef CANOPY_CUDA_RESOLVE
  if (!symbols.missing().empty()) {
    result.absent_reason = "the CUDA driver library '" + library + "' has no symbol " + symbols.missing() +
                           " (it is not a CUDA driver, or one older than CUDA 11: update the NVIDIA driver)";
    return result;
  }
  result.api = std::move(api);
  return result;
}

// Resolves NVRTC's table from an opened library and reads what it compiles
// for; empty when it did, else the reason.
std::string fill_nvrtc(void* handle, NvrtcApi& api) {
  SymbolTable symbols(handle);
#define CANOPY_NVRTC_RESOLVE(name, symbol, ...) symbols.required(api.name, symbol);
  CANOPY_NVRTC_FUNCTIONS(CANOPY_NVRTC_RESOLVE)
#undef CANOPY_NVRTC_RESOLVE
  if (!symbols.missing().empty())
    return "NVRTC '" + api.library + "' has no symbol " + symbols.missing() +
           " (Canopy needs NVRTC 11.2 or later: install a newer CUDA toolkit or point CANOPY_NVRTC at its "
           "libnvrtc.so)";
  if (api.nvrtcVersion(&api.major, &api.minor) != kNvrtcSuccess)
    return "NVRTC '" + api.library + "' does not tell its version (nvrtcVersion failed)";
  int count = 0;
  if (api.nvrtcGetNumSupportedArchs(&count) != kNvrtcSuccess || count <= 0)
    return "NVRTC '" + api.library + "' " + api.version() + " names no GPU architecture it compiles for";
  api.architectures.resize(static_cast<std::size_t>(count));
  if (api.nvrtcGetSupportedArchs(api.architectures.data()) != kNvrtcSuccess)
    return "NVRTC '" + api.library + "' " + api.version() + " could not list its GPU architectures";
  std::sort(api.architectures.begin(), api.architectures.end());
  return "";
}

LoadedNvrtc open_nvrtc(const std::string& library) {
  LoadedNvrtc result;
  std::string tried, first_error;
  for (const std::string& candidate : nvrtc_candidates(library)) {
    const OpenedLibrary opened = open_library(candidate);
    if (!opened.handle) {
      tried += (tried.empty() ? "" : ", ") + candidate;
      if (first_error.empty()) first_error = opened.error;
      continue;
    }
    auto api = std::make_shared<NvrtcApi>();
    api->library = candidate;
    if (std::string problem = fill_nvrtc(opened.handle, *api); !problem.empty()) {
      result.absent_reason = problem;
      return result;
    }
    result.api = std::move(api);
    return result;
  }
  // dlopen's first complaint names the first library and says why; the
  // others fail the same way when none is installed.
  result.absent_reason = "NVRTC (the CUDA runtime compiler) could not be opened (tried " + tried + "; " + first_error +
                         "); install the CUDA toolkit's NVRTC (11.2 or later) or point CANOPY_NVRTC at its libnvrtc.so";
  return result;
}

// Canopy's names for the driver's status codes, for drivers (a stub
// library) that cannot name their own.
const char* known_error_name(CUresult code) {
  switch (code) {
    case 0: return "CUDA_SUCCESS";
    case 1: return "CUDA_ERROR_INVALID_VALUE";
    case 2: return "CUDA_ERROR_OUT_OF_MEMORY";
    case 3: return "CUDA_ERROR_NOT_INITIALIZED";
    case 4: return "CUDA_ERROR_DEINITIALIZED";
    case 34: return "CUDA_ERROR_STUB_LIBRARY";
    case 35: return "CUDA_ERROR_INSUFFICIENT_DRIVER";
    case 36: return "CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER";
    case 46: return "CUDA_ERROR_DEVICE_UNAVAILABLE";
    case 100: return "CUDA_ERROR_NO_DEVICE";
    case 101: return "CUDA_ERROR_INVALID_DEVICE";
    case 200: return "CUDA_ERROR_INVALID_IMAGE";
    case 201: return "CUDA_ERROR_INVALID_CONTEXT";
    case 209: return "CUDA_ERROR_NO_BINARY_FOR_GPU";
    case 218: return "CUDA_ERROR_INVALID_PTX";
    case 221: return "CUDA_ERROR_JIT_COMPILER_NOT_FOUND";
    case 222: return "CUDA_ERROR_UNSUPPORTED_PTX_VERSION";
    case 223: return "CUDA_ERROR_JIT_COMPILATION_DISABLED";
    case 400: return "CUDA_ERROR_INVALID_HANDLE";
    case 500: return "CUDA_ERROR_NOT_FOUND";
    case 700: return "CUDA_ERROR_ILLEGAL_ADDRESS";
    case 701: return "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES";
    case 702: return "CUDA_ERROR_LAUNCH_TIMEOUT";
    case 719: return "CUDA_ERROR_LAUNCH_FAILED";
    case 801: return "CUDA_ERROR_NOT_SUPPORTED";
    case 802: return "CUDA_ERROR_SYSTEM_NOT_READY";
    case 803: return "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH";
    case 999: return "CUDA_ERROR_UNKNOWN";
    default: return nullptr;
  }
}

}  // namespace

std::string default_driver_library() {
  const std::string& path = settings().lib_cuda;
  return path.empty() ? "libcuda.so.1" : path;
}

std::string default_nvrtc_library() { return settings().nvrtc; }

std::vector<std::string> nvrtc_candidates(const std::string& library) {
  if (!library.empty()) return {library};
  static constexpr const char* kNames[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2", "libnvrtc.so.11",
                                           "libnvrtc.so"};
  std::vector<std::string> candidates(std::begin(kNames), std::end(kNames));
  std::vector<std::string> directories;
  if (const std::string& home = settings().cuda_home; !home.empty()) directories.push_back(home + "/lib64");
  directories.push_back("/usr/local/cuda/lib64");
  for (const auto& directory : directories) {
    std::error_code error;
    if (!std::filesystem::is_directory(directory, error)) continue;
    for (const char* name : kNames) candidates.push_back(directory + "/" + name);
  }
  return candidates;
}

const LoadedDriver& load_driver(const std::string& library) { return load_once(library, open_driver); }

const LoadedNvrtc& load_nvrtc(const std::string& library) { return load_once(library, open_nvrtc); }

std::string error_name(const DriverApi& api, CUresult code) {
  const char* name = nullptr;
  if (api.cuGetErrorName && api.cuGetErrorName(code, &name) != kCudaSuccess) name = nullptr;
  if (!name) name = known_error_name(code);
  std::string text = name ? std::string(name) + " (" + std::to_string(code) + ")" : "error " + std::to_string(code);
  const char* description = nullptr;
  if (api.cuGetErrorString && api.cuGetErrorString(code, &description) == kCudaSuccess && description)
    text += ": " + std::string(description);
  return text;
}

std::string nvrtc_error_name(const NvrtcApi& api, nvrtcResult code) {
  const char* name = api.nvrtcGetErrorString ? api.nvrtcGetErrorString(code) : nullptr;
  return (name ? std::string(name) : "NVRTC error") + " (" + std::to_string(code) + ")";
}

void check(const DriverApi& api, CUresult code, std::string_view what, std::string_view where) {
  if (code == kCudaSuccess) return;
  throw Error(std::string(what) + " failed on " + std::string(where) + ": " + error_name(api, code));
}

}  // namespace canopy::backends::cuda

// ---- the declarations above, checked against the CUDA headers ---------------
//
// Only where the toolkit's headers are installed; nothing here is needed to
// build. Included last so that cuda.h's macros (cuMemAlloc -> cuMemAlloc_v2)
// touch nothing above. Each table entry's symbol must be what cuda.h maps
// the function's name to, and the enumerators must have cuda.h's values.
#if defined(__has_include)
#if __has_include("/usr/local/cuda/include/cuda.h") && __has_include("/usr/local/cuda/include/nvrtc.h")
#include "/usr/local/cuda/include/cuda.h"
#include "/usr/local/cuda/include/nvrtc.h"
// Older toolkits name some entry points without the versions Canopy needs.
#if CUDA_VERSION >= 11020

namespace canopy::backends::cuda::header_check {

#define CANOPY_CUDA_SPELLED(name) #name
#define CANOPY_CUDA_EXPANDED(name) CANOPY_CUDA_SPELLED(name)
#define CANOPY_CUDA_CHECK_SYMBOL(name, symbol, ...)                                       \
  static_assert(std::string_view(CANOPY_CUDA_EXPANDED(name)) == std::string_view(symbol), \
                "the CUDA headers export " #name " under another symbol");
CANOPY_CUDA_DRIVER_FUNCTIONS(CANOPY_CUDA_CHECK_SYMBOL)
CANOPY_NVRTC_FUNCTIONS(CANOPY_CUDA_CHECK_SYMBOL)
#undef CANOPY_CUDA_CHECK_SYMBOL

static_assert(sizeof(::CUdeviceptr) == sizeof(CUdeviceptr));
static_assert(sizeof(::CUdevice) == sizeof(CUdevice));
static_assert(sizeof(::CUresult) == sizeof(CUresult));
static_assert(std::is_same_v<::CUcontext, CUcontext> && std::is_same_v<::CUmodule, CUmodule> &&
              std::is_same_v<::CUfunction, CUfunction> && std::is_same_v<::CUstream, CUstream> &&
              std::is_same_v<::CUevent, CUevent> && std::is_same_v<::nvrtcProgram, nvrtcProgram>);
static_assert(::CUDA_SUCCESS == kCudaSuccess && ::CUDA_ERROR_OUT_OF_MEMORY == kCudaErrorOutOfMemory &&
              ::CUDA_ERROR_STUB_LIBRARY == kCudaErrorStubLibrary && ::CUDA_ERROR_NO_DEVICE == kCudaErrorNoDevice &&
              ::CUDA_ERROR_UNSUPPORTED_PTX_VERSION == kCudaErrorUnsupportedPtxVersion);
static_assert(::NVRTC_SUCCESS == kNvrtcSuccess && ::NVRTC_ERROR_COMPILATION == kNvrtcErrorCompilation);

constexpr bool same(int theirs, DeviceAttribute ours) { return theirs == static_cast<int>(ours); }
static_assert(same(::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, DeviceAttribute::MaxThreadsPerBlock) &&
              same(::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, DeviceAttribute::MaxBlockDimX) &&
              same(::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y, DeviceAttribute::MaxBlockDimY) &&
              same(::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, DeviceAttribute::MaxBlockDimZ) &&
              same(::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, DeviceAttribute::MaxGridDimX) &&
              same(::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, DeviceAttribute::MaxGridDimY) &&
              same(::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, DeviceAttribute::MaxGridDimZ) &&
              same(::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, DeviceAttribute::MaxSharedMemoryPerBlock) &&
              same(::CU_DEVICE_ATTRIBUTE_WARP_SIZE, DeviceAttribute::WarpSize) &&
              same(::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, DeviceAttribute::MultiprocessorCount) &&
              same(::CU_DEVICE_ATTRIBUTE_INTEGRATED, DeviceAttribute::Integrated) &&
              same(::CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, DeviceAttribute::PciBusId) &&
              same(::CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, DeviceAttribute::PciDeviceId) &&
              same(::CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, DeviceAttribute::PciDomainId) &&
              same(::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, DeviceAttribute::ComputeCapabilityMajor) &&
              same(::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, DeviceAttribute::ComputeCapabilityMinor));
static_assert(::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK == static_cast<int>(FunctionAttribute::MaxThreadsPerBlock) &&
              ::CU_FUNC_ATTRIBUTE_NUM_REGS == static_cast<int>(FunctionAttribute::NumRegisters));
static_assert(::CU_JIT_INFO_LOG_BUFFER == static_cast<int>(JitOption::InfoLogBuffer) &&
              ::CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES == static_cast<int>(JitOption::InfoLogBufferSizeBytes) &&
              ::CU_JIT_ERROR_LOG_BUFFER == static_cast<int>(JitOption::ErrorLogBuffer) &&
              ::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES == static_cast<int>(JitOption::ErrorLogBufferSizeBytes) &&
              ::CU_JIT_LOG_VERBOSE == static_cast<int>(JitOption::LogVerbose));
static_assert(static_cast<unsigned int>(::CU_STREAM_NON_BLOCKING) == kStreamNonBlocking &&
              static_cast<unsigned int>(::CU_EVENT_DISABLE_TIMING) == kEventDisableTiming);

}  // namespace canopy::backends::cuda::header_check
#endif
#endif
#endif
