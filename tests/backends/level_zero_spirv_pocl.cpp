// The kernel battery (tests/battery/) as SPIR-V, executed and checked
// against the reference interpreter. Without a Level Zero driver the SPIR-V
// runs on the OpenCL device (PoCL): PoCL 3.1 does not take SPIR-V
// (clCreateProgramWithIL is not available: it reports no IL version), but
// it has cl_khr_spir, so each module is translated back with `llvm-spirv -r`
// to SPIR 1.2 LLVM bitcode and built with clCreateProgramWithBinary and
// "-x spir -spir-std=1.2". The launch uses the Level Zero device's host side
// of the kernel ABI (spirv_launch.hpp): argument order and bytes, local
// scratch sizes, work-group sizes and counts, partial results combined in
// group order; only the calls that set them are OpenCL's.
#include <doctest/doctest.h>

#include <dlfcn.h>

#include "battery/battery.hpp"
#include "common/skip.hpp"
#include "level_zero_support.hpp"

using namespace level_zero_test;

namespace {

/// Declares `runner_var`, the SPIR-V runner on the OpenCL device, or skips
/// the test saying what is missing.
#define SPIRV_ON_OPENCL_OR_SKIP(runner_var)                                                                  \
  if (!canopy::jit::spirv_available()) return canopy_test::skip(canopy::jit::spirv_unavailable_reason());    \
  if (llvm_spirv_tool().empty())                                                                             \
    return canopy_test::skip("llvm-spirv-15 is not installed (it translates SPIR-V back to SPIR for PoCL)"); \
  auto* runner_var##_device = opencl_test::device();                                                         \
  if (!runner_var##_device) return opencl_test::skip_without_opencl();                                       \
  if (runner_var##_device->traits().extensions.find("cl_khr_spir") == std::string::npos)                     \
    return canopy_test::skip("the OpenCL device '" + runner_var##_device->info().name +                      \
                             "' does not take SPIR (cl_khr_spir)");                                          \
  SpirvOnOpenCL runner_var(*runner_var##_device);

/// Runs every case of `group` as SPIR-V and checks it.
void run_group(const std::string& group) {
  SPIRV_ON_OPENCL_OR_SKIP(runner);
  battery::run_group(group, "SPIR-V on PoCL",
                     [&runner](const battery::Case& c) { return runner.run(c.kernel, c.args, c.range); });
}

}  // namespace

TEST_CASE("spirv on PoCL: operators" * doctest::test_suite("opencl")) { run_group("operators"); }
TEST_CASE("spirv on PoCL: conversions and math functions" * doctest::test_suite("opencl")) { run_group("math"); }
TEST_CASE("spirv on PoCL: control flow, loops and scalars" * doctest::test_suite("opencl")) { run_group("control"); }
TEST_CASE("spirv on PoCL: reductions and atomics" * doctest::test_suite("opencl")) { run_group("reductions"); }
TEST_CASE("spirv on PoCL: 1-D, 2-D and 3-D shapes and pieces" * doctest::test_suite("opencl")) { run_group("shapes"); }

// Why the SPIR-V above goes through `llvm-spirv -r`: PoCL 3.1 reports no IL
// version and refuses SPIR-V in clCreateProgramWithIL. Should a later PoCL
// take SPIR-V, this test says so (and the detour could go).
TEST_CASE("spirv on PoCL: the device takes SPIR through cl_khr_spir, not SPIR-V itself" *
          doctest::test_suite("opencl")) {
  SPIRV_ON_OPENCL_OR_SKIP(runner);
  auto* device = opencl_test::device();
  const auto& cl = device->api();
  constexpr cl_device_info kIlVersion = 0x105B;  // CL_DEVICE_IL_VERSION (OpenCL 2.1)
  std::size_t size = 0;
  std::string il_version;
  if (cl.clGetDeviceInfo(device->id(), kIlVersion, 0, nullptr, &size) == CL_SUCCESS && size > 0) {
    il_version.assign(size, '\0');
    cl.clGetDeviceInfo(device->id(), kIlVersion, size, il_version.data(), nullptr);
    while (!il_version.empty() && il_version.back() == '\0') il_version.pop_back();
  }
  // clCreateProgramWithIL is OpenCL 2.1: not in Canopy's 1.2 table, so it is looked up here.
  using CreateWithIl = cl_program (*)(cl_context, const void*, std::size_t, cl_int*);
  void* library = dlopen(canopy::backends::opencl::default_library().c_str(), RTLD_NOW | RTLD_LOCAL);
  REQUIRE(library);
  const auto create_with_il = reinterpret_cast<CreateWithIl>(dlsym(library, "clCreateProgramWithIL"));
  const canopy::jit::SpirvKernel spirv = canopy::jit::spirv_of(*battery::cases().front().kernel);
  cl_int status = CL_SUCCESS;
  cl_program program =
      create_with_il ? create_with_il(device->context(), spirv.binary.data(), spirv.binary.size(), &status) : nullptr;
  if (program) cl.clReleaseProgram(program);
  if (il_version.empty()) {
    MESSAGE("the OpenCL device '" << device->info().name << "' reports no IL version; clCreateProgramWithIL gives "
                                  << canopy::backends::opencl::error_name(status));
    CHECK(program == nullptr);
    CHECK(status != CL_SUCCESS);
  } else {
    MESSAGE("the OpenCL device takes IL (" << il_version << "): SPIR-V could be built directly");
  }
  dlclose(library);
}
