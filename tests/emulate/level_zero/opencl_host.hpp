// Where the emulated Level Zero driver runs kernels: an OpenCL CPU device
// (PoCL), opened with dlopen. A module's SPIR-V is translated back to SPIR
// 1.2 LLVM bitcode by the LLVM/SPIR-V translator's tool (`llvm-spirv -r`;
// PoCL 3.1 takes SPIR through cl_khr_spir but not SPIR-V) and built with
// clCreateProgramWithBinary. Device memory is host memory the driver maps;
// each buffer a kernel gets is an OpenCL buffer over it (CL_MEM_USE_HOST_PTR,
// which a CPU device uses in place), so copies and fills are plain memory
// operations and kernels see them.
#pragma once

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>

#include <cstddef>
#include <string>

namespace canopy_emulated_ze {

#define CANOPY_EMULATED_ZE_CL_FUNCTIONS(X) \
  X(clGetPlatformIDs)                      \
  X(clGetPlatformInfo)                     \
  X(clGetDeviceIDs)                        \
  X(clGetDeviceInfo)                       \
  X(clCreateContext)                       \
  X(clCreateCommandQueue)                  \
  X(clReleaseCommandQueue)                 \
  X(clCreateBuffer)                        \
  X(clReleaseMemObject)                    \
  X(clCreateProgramWithBinary)             \
  X(clBuildProgram)                        \
  X(clGetProgramBuildInfo)                 \
  X(clReleaseProgram)                      \
  X(clCreateKernel)                        \
  X(clReleaseKernel)                       \
  X(clSetKernelArg)                        \
  X(clGetKernelWorkGroupInfo)              \
  X(clEnqueueNDRangeKernel)                \
  X(clFlush)                               \
  X(clSetEventCallback)                    \
  X(clWaitForEvents)                       \
  X(clGetEventInfo)                        \
  X(clReleaseEvent)

/// The OpenCL device kernels run on, opened once per process.
struct OpenClHost {
#define CANOPY_EMULATED_ZE_CL_POINTER(name) decltype(&::name) name = nullptr;
  CANOPY_EMULATED_ZE_CL_FUNCTIONS(CANOPY_EMULATED_ZE_CL_POINTER)
#undef CANOPY_EMULATED_ZE_CL_POINTER
  cl_context context = nullptr;
  cl_device_id device = nullptr;
  std::string problem;  ///< why there is no device; empty when there is one
};

/// The host, opened on first use: libOpenCL.so.1 (or
/// $CANOPY_EMULATED_ZE_LIBOPENCL), the first CPU device that takes SPIR.
const OpenClHost& opencl_host();

/// A built program, or why it did not build (the translator's or the
/// OpenCL compiler's own words).
struct BuiltProgram {
  cl_program program = nullptr;
  std::string log;
};

/// SPIR 1.2 bitcode for `spirv` from the translator's tool
/// ($CANOPY_EMULATED_ZE_LLVM_SPIRV, else llvm-spirv-15 or llvm-spirv on the
/// PATH). Returns false with `log` set when the tool is missing or fails.
bool translate_spirv(const std::string& spirv, std::string& bitcode, std::string& log);

/// `bitcode` built on the host's device.
BuiltProgram build_spir(const std::string& bitcode);

/// An OpenCL status as its name ("CL_INVALID_VALUE").
std::string cl_status_name(cl_int status);

}  // namespace canopy_emulated_ze
