// The Level Zero API as Canopy reaches it: one table of function pointers,
// filled from the loader (libze_loader) opened with dlopen at run time, so
// that Canopy's libraries never link it and run on nodes without it.
// api.cpp is the only file that touches Level Zero's symbols; everything
// else calls through the table. ze_api.h gives the types (API 1.4 or later).
//
// The library is $CANOPY_LIBZE when set, else "libze_loader.so.1". A library
// that does not open, or lacks a function of the table, leaves the backend
// absent with a reason naming the library or the symbol. Functions of
// extensions (zeDevicePciGetPropertiesExt) are optional: null when missing.
#pragma once

#include <level_zero/ze_api.h>

#include <memory>
#include <string>
#include <string_view>

namespace canopy::backends::level_zero {

// The functions of the table, in one list (X-macro): every one must resolve.
#define CANOPY_LEVEL_ZERO_FUNCTIONS(X)      \
  X(zeInit)                                 \
  X(zeDriverGet)                            \
  X(zeDriverGetProperties)                  \
  X(zeDriverGetApiVersion)                  \
  X(zeDeviceGet)                            \
  X(zeDeviceGetProperties)                  \
  X(zeDeviceGetComputeProperties)           \
  X(zeDeviceGetModuleProperties)            \
  X(zeDeviceGetMemoryProperties)            \
  X(zeDeviceGetCommandQueueGroupProperties) \
  X(zeContextCreate)                        \
  X(zeContextDestroy)                       \
  X(zeCommandListCreateImmediate)           \
  X(zeCommandListDestroy)                   \
  X(zeCommandListAppendMemoryCopy)          \
  X(zeCommandListAppendMemoryFill)          \
  X(zeCommandListAppendLaunchKernel)        \
  X(zeEventPoolCreate)                      \
  X(zeEventPoolDestroy)                     \
  X(zeEventCreate)                          \
  X(zeEventDestroy)                         \
  X(zeEventHostSynchronize)                 \
  X(zeEventHostReset)                       \
  X(zeMemAllocDevice)                       \
  X(zeMemFree)                              \
  X(zeModuleCreate)                         \
  X(zeModuleDestroy)                        \
  X(zeModuleBuildLogGetString)              \
  X(zeModuleBuildLogDestroy)                \
  X(zeModuleGetNativeBinary)                \
  X(zeKernelCreate)                         \
  X(zeKernelDestroy)                        \
  X(zeKernelGetProperties)                  \
  X(zeKernelSetGroupSize)                   \
  X(zeKernelSetArgumentValue)

// Functions of extensions: resolved when the loader has them.
#define CANOPY_LEVEL_ZERO_OPTIONAL_FUNCTIONS(X) X(zeDevicePciGetPropertiesExt)

/// The Level Zero functions Canopy uses, resolved from one library. Call
/// them as `api.zeInit(flags)`.
struct Api {
  std::string library;  ///< the name or path the table was loaded from
#define CANOPY_LEVEL_ZERO_POINTER(name) decltype(&::name) name = nullptr;
  CANOPY_LEVEL_ZERO_FUNCTIONS(CANOPY_LEVEL_ZERO_POINTER)
  CANOPY_LEVEL_ZERO_OPTIONAL_FUNCTIONS(CANOPY_LEVEL_ZERO_POINTER)
#undef CANOPY_LEVEL_ZERO_POINTER
};

/// A loaded table, or why there is none.
struct LoadedApi {
  std::shared_ptr<const Api> api;  ///< null when the library or a symbol is missing
  std::string absent_reason;       ///< a sentence naming the library or the symbol; empty when loaded
};

/// The library to load: $CANOPY_LIBZE when set and not empty, else "libze_loader.so.1".
std::string default_library();

/// Opens `library` with dlopen and resolves every function of the table. The
/// library stays loaded for the rest of the process (the loader and its
/// drivers are not safe to unload). Loads once per library name: later calls
/// with the same name return the same result. Thread-safe; never throws.
const LoadedApi& load_api(const std::string& library);

/// The name of a Level Zero result ("ZE_RESULT_ERROR_UNINITIALIZED"), or
/// "ze_result_t 0x..." for one this table does not know.
std::string result_name(ze_result_t result);

/// Throws canopy::Error "<what> failed on <where>: <result name> (0x...)"
/// unless `result` is ZE_RESULT_SUCCESS.
void check(ze_result_t result, std::string_view what, std::string_view where);

}  // namespace canopy::backends::level_zero
