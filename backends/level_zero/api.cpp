#include "api.hpp"

#include <cstdio>
#include <cstdlib>

#include <canopy/ir/error.hpp>
#include <canopy/ir/settings.hpp>

#include "../library.hpp"

namespace canopy::backends::level_zero {

namespace {

LoadedApi open_api(const std::string& library) {
  LoadedApi result;
  const OpenedLibrary opened = open_library(library);
  if (!opened.handle) {
    result.absent_reason = "the Level Zero loader '" + library + "' could not be opened (" + opened.error +
                           "); install it (libze1) or point CANOPY_LIBZE at one";
    return result;
  }
  auto api = std::make_shared<Api>();
  api->library = library;
  SymbolTable symbols(opened.handle);
#define CANOPY_LEVEL_ZERO_RESOLVE(name) symbols.required(api->name, #name);
  CANOPY_LEVEL_ZERO_FUNCTIONS(CANOPY_LEVEL_ZERO_RESOLVE)
#undef CANOPY_LEVEL_ZERO_RESOLVE
  if (!symbols.missing().empty()) {
    result.absent_reason = "the Level Zero loader '" + library + "' has no symbol " + symbols.missing() +
                           " (Canopy needs a Level Zero 1.x loader)";
    return result;
  }
#define CANOPY_LEVEL_ZERO_RESOLVE_OPTIONAL(name) symbols.optional(api->name, #name);
  CANOPY_LEVEL_ZERO_OPTIONAL_FUNCTIONS(CANOPY_LEVEL_ZERO_RESOLVE_OPTIONAL)
#undef CANOPY_LEVEL_ZERO_RESOLVE_OPTIONAL
  result.api = std::move(api);
  return result;
}

}  // namespace

std::string default_library() {
  const std::string& path = settings().lib_ze;
  return path.empty() ? "libze_loader.so.1" : path;
}

const LoadedApi& load_api(const std::string& library) { return load_once(library, open_api); }

std::string result_name(ze_result_t result) {
  switch (result) {
#define CANOPY_ZE_RESULT(name) \
  case name: return #name;
    CANOPY_ZE_RESULT(ZE_RESULT_SUCCESS)
    CANOPY_ZE_RESULT(ZE_RESULT_NOT_READY)
    CANOPY_ZE_RESULT(ZE_RESULT_ERROR_DEVICE_LOST)
    CANOPY_ZE_RESULT(ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY)
    CANOPY_ZE_RESULT(ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY)
    CANOPY_ZE_RESULT(ZE_RESULT_ERROR_MODULE_BUILD_FAILURE)
    CANOPY_ZE_RESULT(ZE_RESULT_ERROR_MODULE_LINK_FAILURE)
    CANOPY_ZE_RESULT(ZE_RESULT_ERROR_DEVICE_REQUIRES_RESET)
    CANOPY_ZE_RESULT(ZE_RESULT_ERROR_DEVICE_IN_LOW_POWER_STATE)
    CANOPY_ZE_RESULT(ZE_RESULT_ERROR_INSUFFICIENT_PERMISSIONS)
    CANOPY_ZE_RESULT(ZE_RESULT_ERROR_NOT_AVAILABLE)
    CANOPY_ZE_RESULT(ZE_RESULT_ERROR_DEPENDENCY_UNAVAILABLE)
    CANOPY_ZE_RESULT(ZE_RESULT_ERROR_UNINITIALIZED)
    CANOPY_ZE_RESULT(ZE_RESULT_ERROR_UNSUPPORTED_VERSION)
    CANOPY_ZE_RESULT(ZE_RESULT_ERROR_UNSUPPORTED_FEATURE)
    CANOPY_ZE_RESULT(ZE_RESULT_ERROR_INVALID_ARGUMENT)
    CANOPY_ZE_RESULT(ZE_RESULT_ERROR_INVALID_NULL_HANDLE)
    CANOPY_ZE_RESULT(ZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE)
    CANOPY_ZE_RESULT(ZE_RESULT_ERROR_INVALID_NULL_POINTER)
    CANOPY_ZE_RESULT(ZE_RESULT_ERROR_INVALID_SIZE)
    CANOPY_ZE_RESULT(ZE_RESULT_ERROR_UNSUPPORTED_SIZE)
    CANOPY_ZE_RESULT(ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT)
    CANOPY_ZE_RESULT(ZE_RESULT_ERROR_INVALID_SYNCHRONIZATION_OBJECT)
    CANOPY_ZE_RESULT(ZE_RESULT_ERROR_INVALID_ENUMERATION)
    CANOPY_ZE_RESULT(ZE_RESULT_ERROR_UNSUPPORTED_ENUMERATION)
    CANOPY_ZE_RESULT(ZE_RESULT_ERROR_UNSUPPORTED_IMAGE_FORMAT)
    CANOPY_ZE_RESULT(ZE_RESULT_ERROR_INVALID_NATIVE_BINARY)
    CANOPY_ZE_RESULT(ZE_RESULT_ERROR_INVALID_GLOBAL_NAME)
    CANOPY_ZE_RESULT(ZE_RESULT_ERROR_INVALID_KERNEL_NAME)
    CANOPY_ZE_RESULT(ZE_RESULT_ERROR_INVALID_FUNCTION_NAME)
    CANOPY_ZE_RESULT(ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION)
    CANOPY_ZE_RESULT(ZE_RESULT_ERROR_INVALID_GLOBAL_WIDTH_DIMENSION)
    CANOPY_ZE_RESULT(ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_INDEX)
    CANOPY_ZE_RESULT(ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE)
    CANOPY_ZE_RESULT(ZE_RESULT_ERROR_INVALID_KERNEL_ATTRIBUTE_VALUE)
    CANOPY_ZE_RESULT(ZE_RESULT_ERROR_INVALID_MODULE_UNLINKED)
    CANOPY_ZE_RESULT(ZE_RESULT_ERROR_INVALID_COMMAND_LIST_TYPE)
    CANOPY_ZE_RESULT(ZE_RESULT_ERROR_OVERLAPPING_REGIONS)
    CANOPY_ZE_RESULT(ZE_RESULT_ERROR_UNKNOWN)
#undef CANOPY_ZE_RESULT
    default: break;
  }
  char text[40];
  std::snprintf(text, sizeof text, "ze_result_t 0x%x", static_cast<unsigned>(result));
  return text;
}

void check(ze_result_t result, std::string_view what, std::string_view where) {
  if (result == ZE_RESULT_SUCCESS) return;
  char code[16];
  std::snprintf(code, sizeof code, "0x%x", static_cast<unsigned>(result));
  throw Error(std::string(what) + " failed on " + std::string(where) + ": " + result_name(result) + " (" + code + ")");
}

}  // namespace canopy::backends::level_zero
