// The OpenCL API as Canopy reaches it: one table of function pointers, filled
// from the ICD loader opened with dlopen at run time, so that Canopy's
// libraries never link libOpenCL and run on nodes without it. api.cpp is the
// only file that touches OpenCL's symbols; everything else calls through the
// table. The official headers give the types (OpenCL 1.2 API).
//
// The library is $CANOPY_LIBOPENCL when set, else "libOpenCL.so.1". A library
// that does not open, or lacks a function of the table, leaves the backend
// absent with a reason naming the library or the symbol.
#pragma once

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>
#include <CL/cl_ext.h>

#include <memory>
#include <string>
#include <string_view>

namespace canopy::backends::opencl {

// The functions of the table, in one list (X-macro): every one must resolve.
#define CANOPY_OPENCL_FUNCTIONS(X) \
  X(clGetPlatformIDs)              \
  X(clGetPlatformInfo)             \
  X(clGetDeviceIDs)                \
  X(clGetDeviceInfo)               \
  X(clCreateContext)               \
  X(clReleaseContext)              \
  X(clCreateCommandQueue)          \
  X(clReleaseCommandQueue)         \
  X(clCreateBuffer)                \
  X(clReleaseMemObject)            \
  X(clEnqueueReadBuffer)           \
  X(clEnqueueWriteBuffer)          \
  X(clEnqueueCopyBuffer)           \
  X(clEnqueueFillBuffer)           \
  X(clCreateProgramWithSource)     \
  X(clCreateProgramWithBinary)     \
  X(clBuildProgram)                \
  X(clGetProgramInfo)              \
  X(clGetProgramBuildInfo)         \
  X(clReleaseProgram)              \
  X(clCreateKernel)                \
  X(clReleaseKernel)               \
  X(clSetKernelArg)                \
  X(clGetKernelWorkGroupInfo)      \
  X(clEnqueueNDRangeKernel)        \
  X(clWaitForEvents)               \
  X(clReleaseEvent)                \
  X(clGetEventProfilingInfo)       \
  X(clFlush)                       \
  X(clFinish)

/// The OpenCL functions Canopy uses, resolved from one library. Call them as
/// `api.clFinish(queue)`.
struct Api {
  std::string library;  ///< the name or path the table was loaded from
#define CANOPY_OPENCL_POINTER(name) decltype(&::name) name = nullptr;
  CANOPY_OPENCL_FUNCTIONS(CANOPY_OPENCL_POINTER)
#undef CANOPY_OPENCL_POINTER
};

/// A loaded table, or why there is none.
struct LoadedApi {
  std::shared_ptr<const Api> api;  ///< null when the library or a symbol is missing
  std::string absent_reason;       ///< a sentence naming the library or the symbol; empty when loaded
};

/// The library to load: $CANOPY_LIBOPENCL when set and not empty, else "libOpenCL.so.1".
std::string default_library();

/// Opens `library` with dlopen and resolves every function of the table. The
/// library stays loaded for the rest of the process (ICD loaders and their
/// drivers are not safe to unload). Loads once per library name: later calls
/// with the same name return the same result. Thread-safe; never throws.
const LoadedApi& load_api(const std::string& library);

/// The name of an OpenCL error code ("CL_OUT_OF_RESOURCES"), or "error <code>".
std::string error_name(cl_int code);

/// Throws canopy::Error "<what> failed on <where>: <error name> (<code>)" unless
/// `code` is CL_SUCCESS.
void check(cl_int code, std::string_view what, std::string_view where);

}  // namespace canopy::backends::opencl
