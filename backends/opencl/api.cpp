#include "api.hpp"

#include <cstdlib>

#include <canopy/ir/error.hpp>
#include <canopy/ir/settings.hpp>

#include "../library.hpp"

namespace canopy::backends::opencl {

namespace {

LoadedApi open_api(const std::string& library) {
  LoadedApi result;
  const OpenedLibrary opened = open_library(library);
  if (!opened.handle) {
    result.absent_reason = "the OpenCL library '" + library + "' could not be opened (" + opened.error +
                           "); install an OpenCL ICD loader (ocl-icd-libopencl1) or point CANOPY_LIBOPENCL at one";
    return result;
  }
  auto api = std::make_shared<Api>();
  api->library = library;
  SymbolTable symbols(opened.handle);
#define CANOPY_OPENCL_RESOLVE(name) symbols.required(api->name, #name);
  CANOPY_OPENCL_FUNCTIONS(CANOPY_OPENCL_RESOLVE)
#undef CANOPY_OPENCL_RESOLVE
  if (!symbols.missing().empty()) {
    result.absent_reason = "the OpenCL library '" + library + "' has no symbol " + symbols.missing() +
                           " (Canopy needs an OpenCL 1.2 ICD loader)";
    return result;
  }
  result.api = std::move(api);
  return result;
}

}  // namespace

std::string default_library() {
  const std::string& path = settings().lib_opencl;
  return path.empty() ? "libOpenCL.so.1" : path;
}

const LoadedApi& load_api(const std::string& library) { return load_once(library, open_api); }

std::string error_name(cl_int code) {
  switch (code) {
#define CANOPY_OPENCL_ERROR(name) \
  case name: return #name;
    CANOPY_OPENCL_ERROR(CL_SUCCESS)
    CANOPY_OPENCL_ERROR(CL_DEVICE_NOT_FOUND)
    CANOPY_OPENCL_ERROR(CL_DEVICE_NOT_AVAILABLE)
    CANOPY_OPENCL_ERROR(CL_COMPILER_NOT_AVAILABLE)
    CANOPY_OPENCL_ERROR(CL_MEM_OBJECT_ALLOCATION_FAILURE)
    CANOPY_OPENCL_ERROR(CL_OUT_OF_RESOURCES)
    CANOPY_OPENCL_ERROR(CL_OUT_OF_HOST_MEMORY)
    CANOPY_OPENCL_ERROR(CL_PROFILING_INFO_NOT_AVAILABLE)
    CANOPY_OPENCL_ERROR(CL_MEM_COPY_OVERLAP)
    CANOPY_OPENCL_ERROR(CL_IMAGE_FORMAT_MISMATCH)
    CANOPY_OPENCL_ERROR(CL_IMAGE_FORMAT_NOT_SUPPORTED)
    CANOPY_OPENCL_ERROR(CL_BUILD_PROGRAM_FAILURE)
    CANOPY_OPENCL_ERROR(CL_MAP_FAILURE)
    CANOPY_OPENCL_ERROR(CL_MISALIGNED_SUB_BUFFER_OFFSET)
    CANOPY_OPENCL_ERROR(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
    CANOPY_OPENCL_ERROR(CL_COMPILE_PROGRAM_FAILURE)
    CANOPY_OPENCL_ERROR(CL_LINKER_NOT_AVAILABLE)
    CANOPY_OPENCL_ERROR(CL_LINK_PROGRAM_FAILURE)
    CANOPY_OPENCL_ERROR(CL_DEVICE_PARTITION_FAILED)
    CANOPY_OPENCL_ERROR(CL_KERNEL_ARG_INFO_NOT_AVAILABLE)
    CANOPY_OPENCL_ERROR(CL_INVALID_VALUE)
    CANOPY_OPENCL_ERROR(CL_INVALID_DEVICE_TYPE)
    CANOPY_OPENCL_ERROR(CL_INVALID_PLATFORM)
    CANOPY_OPENCL_ERROR(CL_INVALID_DEVICE)
    CANOPY_OPENCL_ERROR(CL_INVALID_CONTEXT)
    CANOPY_OPENCL_ERROR(CL_INVALID_QUEUE_PROPERTIES)
    CANOPY_OPENCL_ERROR(CL_INVALID_COMMAND_QUEUE)
    CANOPY_OPENCL_ERROR(CL_INVALID_HOST_PTR)
    CANOPY_OPENCL_ERROR(CL_INVALID_MEM_OBJECT)
    CANOPY_OPENCL_ERROR(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR)
    CANOPY_OPENCL_ERROR(CL_INVALID_IMAGE_SIZE)
    CANOPY_OPENCL_ERROR(CL_INVALID_SAMPLER)
    CANOPY_OPENCL_ERROR(CL_INVALID_BINARY)
    CANOPY_OPENCL_ERROR(CL_INVALID_BUILD_OPTIONS)
    CANOPY_OPENCL_ERROR(CL_INVALID_PROGRAM)
    CANOPY_OPENCL_ERROR(CL_INVALID_PROGRAM_EXECUTABLE)
    CANOPY_OPENCL_ERROR(CL_INVALID_KERNEL_NAME)
    CANOPY_OPENCL_ERROR(CL_INVALID_KERNEL_DEFINITION)
    CANOPY_OPENCL_ERROR(CL_INVALID_KERNEL)
    CANOPY_OPENCL_ERROR(CL_INVALID_ARG_INDEX)
    CANOPY_OPENCL_ERROR(CL_INVALID_ARG_VALUE)
    CANOPY_OPENCL_ERROR(CL_INVALID_ARG_SIZE)
    CANOPY_OPENCL_ERROR(CL_INVALID_KERNEL_ARGS)
    CANOPY_OPENCL_ERROR(CL_INVALID_WORK_DIMENSION)
    CANOPY_OPENCL_ERROR(CL_INVALID_WORK_GROUP_SIZE)
    CANOPY_OPENCL_ERROR(CL_INVALID_WORK_ITEM_SIZE)
    CANOPY_OPENCL_ERROR(CL_INVALID_GLOBAL_OFFSET)
    CANOPY_OPENCL_ERROR(CL_INVALID_EVENT_WAIT_LIST)
    CANOPY_OPENCL_ERROR(CL_INVALID_EVENT)
    CANOPY_OPENCL_ERROR(CL_INVALID_OPERATION)
    CANOPY_OPENCL_ERROR(CL_INVALID_GL_OBJECT)
    CANOPY_OPENCL_ERROR(CL_INVALID_BUFFER_SIZE)
    CANOPY_OPENCL_ERROR(CL_INVALID_MIP_LEVEL)
    CANOPY_OPENCL_ERROR(CL_INVALID_GLOBAL_WORK_SIZE)
    CANOPY_OPENCL_ERROR(CL_INVALID_PROPERTY)
    CANOPY_OPENCL_ERROR(CL_INVALID_IMAGE_DESCRIPTOR)
    CANOPY_OPENCL_ERROR(CL_INVALID_COMPILER_OPTIONS)
    CANOPY_OPENCL_ERROR(CL_INVALID_LINKER_OPTIONS)
    CANOPY_OPENCL_ERROR(CL_INVALID_DEVICE_PARTITION_COUNT)
    CANOPY_OPENCL_ERROR(CL_PLATFORM_NOT_FOUND_KHR)
#undef CANOPY_OPENCL_ERROR
    default: return "error " + std::to_string(code);
  }
}

void check(cl_int code, std::string_view what, std::string_view where) {
  if (code == CL_SUCCESS) return;
  throw Error(std::string(what) + " failed on " + std::string(where) + ": " + error_name(code) + " (" +
              std::to_string(code) + ")");
}

}  // namespace canopy::backends::opencl
