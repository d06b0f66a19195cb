// Shared by the SPIR-V and Level Zero tests (tests/backends/level_zero_*.cpp):
// running the tools of spirv-tools and the LLVM/SPIR-V translator as
// subprocesses, and running Canopy's SPIR-V on an OpenCL device.
//
// No Level Zero driver exists on the machines these tests run on, so the
// SPIR-V that the Level Zero device would hand to zeModuleCreate is checked
// in the two ways this machine allows: spirv-val validates it, and it runs
// on PoCL after translating it back to SPIR 1.2 LLVM bitcode (llvm-spirv -r,
// PoCL takes SPIR through cl_khr_spir but not SPIR-V itself), built with
// clCreateProgramWithBinary and "-x spir -spir-std=1.2". The launch goes
// through the same host side of the kernel ABI as the Level Zero device
// (backends/level_zero/spirv_launch.hpp): the arguments, work-group sizes
// and counts, and the combining of reductions' partial results are the
// ones zeKernelSetArgumentValue and zeCommandListAppendLaunchKernel would get.
#pragma once

#include <doctest/doctest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <sys/wait.h>

#include <canopy/backends/level_zero/spirv_launch.hpp>
#include <canopy/jit/hash.hpp>
#include <canopy/jit/spirv.hpp>

#include "backends/opencl_support.hpp"
#include "jit/jit_test_support.hpp"

namespace level_zero_test {

/// What a command printed (stdout and stderr together) and its exit status.
struct CommandResult {
  int status = -1;  ///< the exit status, or -1 when it did not run or exit normally
  std::string output;
};

/// Runs `command` with /bin/sh and collects what it prints.
inline CommandResult run_command(const std::string& command) {
  CommandResult result;
  std::FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (!pipe) return result;
  char buffer[4096];
  std::size_t got;
  while ((got = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) result.output.append(buffer, got);
  const int status = ::pclose(pipe);
  result.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

/// True when `tool` is a program on the PATH.
inline bool have_tool(const std::string& tool) { return run_command("command -v " + tool + " >/dev/null").status == 0; }

/// The translator's command-line tool, or "" when neither spelling is installed.
inline const std::string& llvm_spirv_tool() {
  static const std::string tool = have_tool("llvm-spirv-15") ? "llvm-spirv-15"
                                  : have_tool("llvm-spirv")  ? "llvm-spirv"
                                                             : "";
  return tool;
}

inline void write_file(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  REQUIRE(out.good());
}

inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

/// spirv-val's verdict on `spirv` (status 0: valid), run on a temporary
/// file: for the universal environment of the module's SPIR-V version, and
/// when `opencl_1_2` is set also for OpenCL 1.2's (the capabilities an
/// OpenCL 1.2 full profile allows without extensions: not Int64Atomics,
/// which 64-bit atomic adds need and a device must offer as an extension).
inline CommandResult validate_spirv(const std::string& spirv, const std::string& name, bool opencl_1_2) {
  canopy::jit::testing::TempDir dir;
  const auto file = dir.path() / (name + ".spv");
  write_file(file, spirv);
  CommandResult universal = run_command("spirv-val '" + file.string() + "'");
  if (universal.status != 0 || !opencl_1_2) return universal;
  return run_command("spirv-val --target-env opencl1.2 '" + file.string() + "'");
}

/// The build options PoCL gets for SPIR bitcode.
inline const char* kSpirBuildOptions = "-x spir -spir-std=1.2";

/// Canopy's SPIR-V for kernels, translated back to SPIR bitcode and built
/// on one OpenCL device; programs are kept per SPIR-V module.
class SpirvOnOpenCL {
 public:
  explicit SpirvOnOpenCL(canopy::backends::opencl::OpenCLDevice& device) : device_(device) {}
  ~SpirvOnOpenCL() {
    const auto& cl = device_.api();
    for (auto& [key, built] : programs_) {
      if (built.kernel) cl.clReleaseKernel(built.kernel);
      if (built.program) cl.clReleaseProgram(built.program);
    }
  }
  SpirvOnOpenCL(const SpirvOnOpenCL&) = delete;
  SpirvOnOpenCL& operator=(const SpirvOnOpenCL&) = delete;

  /// A program that did build, or the reason it did not.
  struct Built {
    cl_program program = nullptr;
    cl_kernel kernel = nullptr;
    std::size_t max_group_size = 1;
    std::string problem;  ///< empty when built
  };

  /// Builds (once) the SPIR-V of `kernel`: `llvm-spirv -r` to SPIR 1.2
  /// bitcode, then clCreateProgramWithBinary and clBuildProgram.
  const Built& build(const canopy::ir::Kernel& kernel) {
    const canopy::jit::SpirvKernel spirv = canopy::jit::spirv_of(kernel);
    const std::string key = canopy::jit::hash_hex(spirv.binary);
    auto [slot, fresh] = programs_.try_emplace(key);
    Built& built = slot->second;
    if (!fresh) return built;
    canopy::jit::testing::TempDir dir;
    const auto spv = dir.path() / "kernel.spv", bitcode = dir.path() / "kernel.bc";
    write_file(spv, spirv.binary);
    const auto translated = run_command(llvm_spirv_tool() + " -r --spirv-target-env=CL1.2 '" + spv.string() + "' -o '" +
                                        bitcode.string() + "'");
    if (translated.status != 0) {
      built.problem = llvm_spirv_tool() + " -r failed: " + translated.output;
      return built;
    }
    const std::string binary = read_file(bitcode);
    const auto& cl = device_.api();
    cl_device_id id = device_.id();
    const std::size_t size = binary.size();
    const auto* bytes = reinterpret_cast<const unsigned char*>(binary.data());
    cl_int status = CL_SUCCESS, binary_status = CL_SUCCESS;
    built.program = cl.clCreateProgramWithBinary(device_.context(), 1, &id, &size, &bytes, &binary_status, &status);
    if (status != CL_SUCCESS || binary_status != CL_SUCCESS) {
      built.problem = "clCreateProgramWithBinary: " + canopy::backends::opencl::error_name(status) + " / " +
                      canopy::backends::opencl::error_name(binary_status);
      return built;
    }
    status = cl.clBuildProgram(built.program, 1, &id, kSpirBuildOptions, nullptr, nullptr);
    if (status != CL_SUCCESS) {
      std::size_t log_size = 0;
      cl.clGetProgramBuildInfo(built.program, id, CL_PROGRAM_BUILD_LOG, 0, nullptr, &log_size);
      std::string log(log_size, '\0');
      cl.clGetProgramBuildInfo(built.program, id, CL_PROGRAM_BUILD_LOG, log_size, log.data(), nullptr);
      built.problem = "clBuildProgram(\"" + std::string(kSpirBuildOptions) +
                      "\"): " + canopy::backends::opencl::error_name(status) + "; log: " + log;
      return built;
    }
    built.kernel = cl.clCreateKernel(built.program, spirv.entry.c_str(), &status);
    if (status != CL_SUCCESS) {
      built.problem = "clCreateKernel(" + spirv.entry + "): " + canopy::backends::opencl::error_name(status);
      return built;
    }
    cl.clGetKernelWorkGroupInfo(built.kernel, id, CL_KERNEL_WORK_GROUP_SIZE, sizeof built.max_group_size,
                                &built.max_group_size, nullptr);
    return built;
  }

  /// The limits a launch on this device works within, as the Level Zero
  /// device sets them from its properties, except: reductions run 8
  /// work-groups, and a launch has at most 16 work-groups per dimension, so
  /// that larger ranges go in several launches (launch_pieces), each with its
  /// own begins and ends, as on a device with a low limit.
  canopy::backends::level_zero::SpirvLaunchLimits limits(const Built& built) const {
    canopy::backends::level_zero::SpirvLaunchLimits limits;
    const auto& traits = device_.traits();
    limits.max_group_size = static_cast<std::uint32_t>(
        std::min<std::size_t>(built.max_group_size, static_cast<std::size_t>(device_.info().max_work_group)));
    for (int d = 0; d < 3; ++d)
      limits.max_group_extent[static_cast<std::size_t>(d)] = static_cast<std::uint32_t>(
          std::min<std::size_t>(traits.max_work_item_sizes[static_cast<std::size_t>(d)], 0xffffffffu));
    limits.local_memory = traits.local_memory;
    limits.point_group_size = 64;
    limits.reduction_group_size = 64;
    limits.reduction_groups = 8;
    limits.max_group_count = {16, 16, 16};
    return limits;
  }

  /// Runs `kernel` over `range` as the Level Zero device would: buffers
  /// from the host arrays, one launch per piece of launch_pieces with the
  /// arguments of plan_spirv_launch, the partial results combined with
  /// combine_partials.
  opencl_test::Results run(const std::shared_ptr<const canopy::ir::Kernel>& kernel,
                           const std::vector<opencl_test::HostArg>& args, const canopy::backends::Range& range) {
    namespace lz = canopy::backends::level_zero;
    const Built& built = build(*kernel);
    REQUIRE_MESSAGE(built.problem.empty(), kernel->name << ": " << built.problem);
    const auto& cl = device_.api();
    opencl_test::Results results;
    results.arrays.resize(args.size());
    std::vector<canopy::backends::Buffer> buffers(args.size()), partials(args.size());
    std::vector<canopy::backends::KernelArg> launch_args;
    const auto limits_here = limits(built);
    for (std::size_t p = 0; p < args.size(); ++p) {
      if (const auto* array = std::get_if<opencl_test::HostArray>(&args[p])) {
        buffers[p] = device_.allocate(array->bytes.size());
        device_.copy_in(buffers[p], 0, array->bytes.data(), array->bytes.size());
        launch_args.push_back(canopy::backends::ArrayArg{buffers[p].handle, array->extents});
        results.arrays[p] = *array;
      } else if (const auto* value = std::get_if<canopy::backends::ScalarArg>(&args[p])) {
        launch_args.push_back(*value);
      } else if (const auto* same = std::get_if<opencl_test::SameArrayAs>(&args[p])) {
        launch_args.push_back(launch_args.at(static_cast<std::size_t>(same->param)));
      } else {
        launch_args.push_back(canopy::backends::ReductionArg{});
        partials[p] = device_.allocate(limits_here.reduction_groups * canopy::ir::size_of(kernel->params[p].type));
      }
    }
    lz::check_launch(*kernel, launch_args, range, "the OpenCL device");
    if (range.empty()) {
      for (const auto& param : kernel->params)
        if (param.is_reduction())
          results.reductions.push_back(canopy::backends::identity_value(param.reduce, param.type));
    } else {
      std::vector<void*> partial_handles;
      for (const auto& buffer : partials) partial_handles.push_back(buffer.handle);
      lz::SpirvLaunch launch;
      for (const canopy::backends::Range& piece : lz::launch_pieces(*kernel, range, limits_here)) {
        launch = lz::plan_spirv_launch(*kernel, launch_args, piece, partial_handles, limits_here, "the OpenCL device");
        for (std::size_t a = 0; a < launch.arguments.size(); ++a) {
          const auto& argument = launch.arguments[a];
          const auto index = static_cast<cl_uint>(a);
          cl_int status = CL_SUCCESS;
          switch (argument.kind) {
            case lz::SpirvArgument::Kind::Value:
              status = cl.clSetKernelArg(built.kernel, index, argument.bytes.size(), argument.bytes.data());
              break;
            case lz::SpirvArgument::Kind::Buffer:
              status = cl.clSetKernelArg(built.kernel, index, sizeof(cl_mem), &argument.buffer);
              break;
            case lz::SpirvArgument::Kind::Local:
              status = cl.clSetKernelArg(built.kernel, index, argument.local_bytes, nullptr);
              break;
          }
          REQUIRE_MESSAGE(status == CL_SUCCESS, "clSetKernelArg " << a << " of " << kernel->name << ": "
                                                                  << canopy::backends::opencl::error_name(status));
        }
        std::array<std::size_t, 3> global{}, local{};
        for (std::size_t e = 0; e < 3; ++e) {
          local[e] = launch.group_size[e];
          global[e] = std::size_t{launch.group_count[e]} * launch.group_size[e];
        }
        const cl_int status = cl.clEnqueueNDRangeKernel(device_.queue(), built.kernel, launch.dims, nullptr,
                                                        global.data(), local.data(), 0, nullptr, nullptr);
        REQUIRE_MESSAGE(status == CL_SUCCESS, "clEnqueueNDRangeKernel "
                                                  << kernel->name << ": "
                                                  << canopy::backends::opencl::error_name(status));
        REQUIRE(cl.clFinish(device_.queue()) == CL_SUCCESS);
      }
      if (launch.reduces) {
        std::vector<std::vector<unsigned char>> read(args.size());
        for (std::size_t p = 0; p < args.size(); ++p) {
          if (!partials[p]) continue;
          read[p].resize(launch.group_count[0] * canopy::ir::size_of(kernel->params[p].type));
          device_.copy_out(partials[p], 0, read[p].data(), read[p].size());
        }
        results.reductions = lz::combine_partials(*kernel, read, launch.group_count[0]);
      }
    }
    for (std::size_t p = 0; p < args.size(); ++p) {
      if (buffers[p]) {
        device_.copy_out(buffers[p], 0, results.arrays[p].bytes.data(), results.arrays[p].bytes.size());
        device_.free(buffers[p]);
      }
      if (partials[p]) device_.free(partials[p]);
    }
    return results;
  }

 private:
  canopy::backends::opencl::OpenCLDevice& device_;
  std::map<std::string, Built> programs_;
};

}  // namespace level_zero_test
