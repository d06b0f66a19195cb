// The CUDA driver API and NVRTC as Canopy reaches them: two tables of
// function pointers, filled from libcuda and libnvrtc opened with dlopen at
// run time, so that Canopy's libraries never link either and run on nodes
// without them. api.cpp is the only file that touches their symbols;
// everything else calls through the tables.
//
// No CUDA header is needed to build: the few types, enumerators and
// signatures Canopy uses are declared here with the values of the CUDA
// driver ABI (stable across releases; versioned entry points such as
// cuMemAlloc_v2 are named by their exported symbol). Where the CUDA headers
// are installed at /usr/local/cuda/include, api.cpp checks these
// declarations against them at build time.
//
// The driver is $CANOPY_LIBCUDA when set, else "libcuda.so.1". NVRTC is
// $CANOPY_NVRTC when set, else the first of libnvrtc.so.13, .12, .11.2,
// .11 and libnvrtc.so that opens (each also tried in $CUDA_HOME/lib64 and
// /usr/local/cuda/lib64 where they exist); Canopy needs NVRTC 11.2 or later
// (nvrtcGetSupportedArchs, cubins). A library that does not open, or lacks
// a function of its table, leaves the backend absent with a reason naming
// the library or the symbol.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

// Opaque handles: the same incomplete types cuda.h and nvrtc.h declare.
struct CUctx_st;
struct CUmod_st;
struct CUfunc_st;
struct CUstream_st;
struct CUevent_st;
struct _nvrtcProgram;

namespace canopy::backends::cuda {

// ---- driver API types -------------------------------------------------------

using CUresult = int;                    ///< a driver API status; 0 is success
using CUdevice = int;                    ///< a device ordinal as the driver numbers them
using CUdeviceptr = unsigned long long;  ///< a device address (64-bit on every platform Canopy runs on)
using CUcontext = CUctx_st*;
using CUmodule = CUmod_st*;
using CUfunction = CUfunc_st*;
using CUstream = CUstream_st*;
using CUevent = CUevent_st*;

/// Driver API status codes Canopy tells apart.
inline constexpr CUresult kCudaSuccess = 0;
inline constexpr CUresult kCudaErrorOutOfMemory = 2;
inline constexpr CUresult kCudaErrorStubLibrary = 34;
inline constexpr CUresult kCudaErrorNoDevice = 100;
inline constexpr CUresult kCudaErrorLaunchFailed = 719;
inline constexpr CUresult kCudaErrorUnsupportedPtxVersion = 222;

/// CUdevice_attribute values Canopy reads.
enum class DeviceAttribute : int {
  MaxThreadsPerBlock = 1,
  MaxBlockDimX = 2,
  MaxBlockDimY = 3,
  MaxBlockDimZ = 4,
  MaxGridDimX = 5,
  MaxGridDimY = 6,
  MaxGridDimZ = 7,
  MaxSharedMemoryPerBlock = 8,
  WarpSize = 10,
  MultiprocessorCount = 16,
  Integrated = 18,
  PciBusId = 33,
  PciDeviceId = 34,
  PciDomainId = 50,
  ComputeCapabilityMajor = 75,
  ComputeCapabilityMinor = 76,
};

/// CUfunction_attribute values Canopy reads.
enum class FunctionAttribute : int {
  MaxThreadsPerBlock = 0,
  NumRegisters = 4,
};

/// CUjit_option values Canopy passes to cuModuleLoadDataEx.
enum class JitOption : int {
  InfoLogBuffer = 3,
  InfoLogBufferSizeBytes = 4,
  ErrorLogBuffer = 5,
  ErrorLogBufferSizeBytes = 6,
  LogVerbose = 12,
};

inline constexpr unsigned int kStreamNonBlocking = 0x1;   ///< CU_STREAM_NON_BLOCKING
inline constexpr unsigned int kEventDisableTiming = 0x2;  ///< CU_EVENT_DISABLE_TIMING

// ---- NVRTC types ------------------------------------------------------------

using nvrtcResult = int;  ///< an NVRTC status; 0 is success
using nvrtcProgram = _nvrtcProgram*;
inline constexpr nvrtcResult kNvrtcSuccess = 0;
inline constexpr nvrtcResult kNvrtcErrorCompilation = 6;

// The driver functions of the table, in one list (X-macro): the member's
// name, the exported symbol, and the function type. Every one must resolve.
#define CANOPY_CUDA_DRIVER_FUNCTIONS(X)                                                                           \
  X(cuInit, "cuInit", CUresult(unsigned int))                                                                     \
  X(cuDriverGetVersion, "cuDriverGetVersion", CUresult(int*))                                                     \
  X(cuGetErrorName, "cuGetErrorName", CUresult(CUresult, const char**))                                           \
  X(cuGetErrorString, "cuGetErrorString", CUresult(CUresult, const char**))                                       \
  X(cuDeviceGetCount, "cuDeviceGetCount", CUresult(int*))                                                         \
  X(cuDeviceGet, "cuDeviceGet", CUresult(CUdevice*, int))                                                         \
  X(cuDeviceGetName, "cuDeviceGetName", CUresult(char*, int, CUdevice))                                           \
  X(cuDeviceGetAttribute, "cuDeviceGetAttribute", CUresult(int*, DeviceAttribute, CUdevice))                      \
  X(cuDeviceTotalMem, "cuDeviceTotalMem_v2", CUresult(std::size_t*, CUdevice))                                    \
  X(cuDeviceGetPCIBusId, "cuDeviceGetPCIBusId", CUresult(char*, int, CUdevice))                                   \
  X(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", CUresult(CUcontext*, CUdevice))                         \
  X(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", CUresult(CUdevice))                                \
  X(cuCtxPushCurrent, "cuCtxPushCurrent_v2", CUresult(CUcontext))                                                 \
  X(cuCtxPopCurrent, "cuCtxPopCurrent_v2", CUresult(CUcontext*))                                                  \
  X(cuMemGetInfo, "cuMemGetInfo_v2", CUresult(std::size_t*, std::size_t*))                                        \
  X(cuMemAlloc, "cuMemAlloc_v2", CUresult(CUdeviceptr*, std::size_t))                                             \
  X(cuMemFree, "cuMemFree_v2", CUresult(CUdeviceptr))                                                             \
  X(cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2", CUresult(CUdeviceptr, const void*, std::size_t, CUstream))         \
  X(cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2", CUresult(void*, CUdeviceptr, std::size_t, CUstream))               \
  X(cuMemsetD8Async, "cuMemsetD8Async", CUresult(CUdeviceptr, unsigned char, std::size_t, CUstream))              \
  X(cuMemsetD32Async, "cuMemsetD32Async", CUresult(CUdeviceptr, unsigned int, std::size_t, CUstream))             \
  X(cuMemsetD2D32Async, "cuMemsetD2D32Async",                                                                     \
    CUresult(CUdeviceptr, std::size_t, unsigned int, std::size_t, std::size_t, CUstream))                         \
  X(cuStreamCreate, "cuStreamCreate", CUresult(CUstream*, unsigned int))                                          \
  X(cuStreamDestroy, "cuStreamDestroy_v2", CUresult(CUstream))                                                    \
  X(cuStreamSynchronize, "cuStreamSynchronize", CUresult(CUstream))                                               \
  X(cuEventCreate, "cuEventCreate", CUresult(CUevent*, unsigned int))                                             \
  X(cuEventRecord, "cuEventRecord", CUresult(CUevent, CUstream))                                                  \
  X(cuEventSynchronize, "cuEventSynchronize", CUresult(CUevent))                                                  \
  X(cuEventDestroy, "cuEventDestroy_v2", CUresult(CUevent))                                                       \
  X(cuModuleLoadDataEx, "cuModuleLoadDataEx", CUresult(CUmodule*, const void*, unsigned int, JitOption*, void**)) \
  X(cuModuleUnload, "cuModuleUnload", CUresult(CUmodule))                                                         \
  X(cuModuleGetFunction, "cuModuleGetFunction", CUresult(CUfunction*, CUmodule, const char*))                     \
  X(cuFuncGetAttribute, "cuFuncGetAttribute", CUresult(int*, FunctionAttribute, CUfunction))                      \
  X(cuLaunchKernel, "cuLaunchKernel",                                                                             \
    CUresult(CUfunction, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int,      \
             unsigned int, CUstream, void**, void**))

// The NVRTC functions of the table, likewise.
#define CANOPY_NVRTC_FUNCTIONS(X)                                                                      \
  X(nvrtcVersion, "nvrtcVersion", nvrtcResult(int*, int*))                                             \
  X(nvrtcGetErrorString, "nvrtcGetErrorString", const char*(nvrtcResult))                              \
  X(nvrtcGetNumSupportedArchs, "nvrtcGetNumSupportedArchs", nvrtcResult(int*))                         \
  X(nvrtcGetSupportedArchs, "nvrtcGetSupportedArchs", nvrtcResult(int*))                               \
  X(nvrtcCreateProgram, "nvrtcCreateProgram",                                                          \
    nvrtcResult(nvrtcProgram*, const char*, const char*, int, const char* const*, const char* const*)) \
  X(nvrtcDestroyProgram, "nvrtcDestroyProgram", nvrtcResult(nvrtcProgram*))                            \
  X(nvrtcCompileProgram, "nvrtcCompileProgram", nvrtcResult(nvrtcProgram, int, const char* const*))    \
  X(nvrtcGetProgramLogSize, "nvrtcGetProgramLogSize", nvrtcResult(nvrtcProgram, std::size_t*))         \
  X(nvrtcGetProgramLog, "nvrtcGetProgramLog", nvrtcResult(nvrtcProgram, char*))                        \
  X(nvrtcGetPTXSize, "nvrtcGetPTXSize", nvrtcResult(nvrtcProgram, std::size_t*))                       \
  X(nvrtcGetPTX, "nvrtcGetPTX", nvrtcResult(nvrtcProgram, char*))                                      \
  X(nvrtcGetCUBINSize, "nvrtcGetCUBINSize", nvrtcResult(nvrtcProgram, std::size_t*))                   \
  X(nvrtcGetCUBIN, "nvrtcGetCUBIN", nvrtcResult(nvrtcProgram, char*))

#define CANOPY_CUDA_POINTER(name, symbol, ...) std::add_pointer_t<__VA_ARGS__> name = nullptr;

/// The driver functions Canopy uses, resolved from one library. Call them as
/// `api.cuInit(0)` (members drop the symbols' version suffixes).
struct DriverApi {
  std::string library;  ///< the name or path the table was loaded from
  CANOPY_CUDA_DRIVER_FUNCTIONS(CANOPY_CUDA_POINTER)
};

/// The NVRTC functions Canopy uses, resolved from one library, and what
/// that library compiles for.
struct NvrtcApi {
  std::string library;       ///< the name or path that opened
  int major = 0, minor = 0;  ///< nvrtcVersion
  /// The compute capabilities it compiles for, as 10 * major + minor (75, 80, 86, 90, ...), ascending.
  std::vector<int> architectures;
  CANOPY_NVRTC_FUNCTIONS(CANOPY_CUDA_POINTER)

  /// "13.0".
  std::string version() const { return std::to_string(major) + "." + std::to_string(minor); }
};

#undef CANOPY_CUDA_POINTER

/// A loaded driver table, or why there is none.
struct LoadedDriver {
  std::shared_ptr<const DriverApi> api;  ///< null when the library or a symbol is missing
  std::string absent_reason;             ///< a sentence naming the library or the symbol; empty when loaded
};

/// A loaded NVRTC table, or why there is none.
struct LoadedNvrtc {
  std::shared_ptr<const NvrtcApi> api;  ///< null when no library or a symbol is missing
  std::string absent_reason;            ///< a sentence naming NVRTC and what was tried; empty when loaded
};

/// The driver library to load: $CANOPY_LIBCUDA when set and not empty, else "libcuda.so.1".
std::string default_driver_library();
/// The NVRTC library asked for: $CANOPY_NVRTC when set and not empty, else "" (search).
std::string default_nvrtc_library();
/// The libraries load_nvrtc tries, in order, for `library` ("" searches the
/// usual names and places; anything else is tried alone).
std::vector<std::string> nvrtc_candidates(const std::string& library);

/// Opens `library` with dlopen and resolves every driver function. The
/// library stays loaded for the rest of the process. Loads once per name:
/// later calls return the same result. Thread-safe; never throws.
const LoadedDriver& load_driver(const std::string& library);
/// Opens the first of nvrtc_candidates(library) that opens, resolves every
/// NVRTC function, and reads its version and architectures. Loads once per
/// name; thread-safe; never throws.
const LoadedNvrtc& load_nvrtc(const std::string& library);

/// "CUDA_ERROR_OUT_OF_MEMORY (2)": the driver's name for `code` when it
/// tells, else Canopy's own, else "error <code>".
std::string error_name(const DriverApi& api, CUresult code);
/// "NVRTC_ERROR_COMPILATION (6)".
std::string nvrtc_error_name(const NvrtcApi& api, nvrtcResult code);

/// Throws canopy::Error "<what> failed on <where>: <error name>" unless
/// `code` is success.
void check(const DriverApi& api, CUresult code, std::string_view what, std::string_view where);

}  // namespace canopy::backends::cuda
