// The OpenCL side of the emulated Level Zero driver (opencl_host.hpp).
#include "opencl_host.hpp"

#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <sstream>
#include <vector>

namespace canopy_emulated_ze {

namespace {

std::string environment(const char* name, const char* fallback) {
  const char* value = std::getenv(name);
  return value && *value ? value : fallback;
}

std::string device_string(const OpenClHost& host, cl_device_id device, cl_device_info what) {
  std::size_t size = 0;
  if (host.clGetDeviceInfo(device, what, 0, nullptr, &size) != CL_SUCCESS || size == 0) return "";
  std::string text(size, '\0');
  host.clGetDeviceInfo(device, what, size, text.data(), nullptr);
  while (!text.empty() && text.back() == '\0') text.pop_back();
  return text;
}

void open_host(OpenClHost& host) {
  const std::string library = environment("CANOPY_EMULATED_ZE_LIBOPENCL", "libOpenCL.so.1");
  void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    host.problem = "the OpenCL library '" + library + "' could not be opened (" + dlerror() + ")";
    return;
  }
#define CANOPY_EMULATED_ZE_CL_RESOLVE(name)                                             \
  host.name = reinterpret_cast<decltype(&::name)>(dlsym(handle, #name));                \
  if (!host.name) {                                                                     \
    host.problem = "the OpenCL library '" + library + "' has no " + std::string(#name); \
    return;                                                                             \
  }
  CANOPY_EMULATED_ZE_CL_FUNCTIONS(CANOPY_EMULATED_ZE_CL_RESOLVE)
#undef CANOPY_EMULATED_ZE_CL_RESOLVE
  cl_uint platforms = 0;
  if (host.clGetPlatformIDs(0, nullptr, &platforms) != CL_SUCCESS || platforms == 0) {
    host.problem = "OpenCL lists no platform (install pocl-opencl-icd)";
    return;
  }
  std::vector<cl_platform_id> ids(platforms);
  host.clGetPlatformIDs(platforms, ids.data(), nullptr);
  for (cl_platform_id platform : ids) {
    cl_uint count = 0;
    if (host.clGetDeviceIDs(platform, CL_DEVICE_TYPE_CPU, 0, nullptr, &count) != CL_SUCCESS || count == 0) continue;
    std::vector<cl_device_id> devices(count);
    host.clGetDeviceIDs(platform, CL_DEVICE_TYPE_CPU, count, devices.data(), nullptr);
    for (cl_device_id device : devices) {
      if (device_string(host, device, CL_DEVICE_EXTENSIONS).find("cl_khr_spir") == std::string::npos) continue;
      cl_int status = CL_SUCCESS;
      host.context = host.clCreateContext(nullptr, 1, &device, nullptr, nullptr, &status);
      if (status != CL_SUCCESS) continue;
      host.device = device;
      return;
    }
  }
  host.problem = "no OpenCL CPU device takes SPIR (cl_khr_spir); install pocl-opencl-icd";
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

bool write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return out.good();
}

// Runs `argv` with its output into `output`; returns its exit status (-1 when it did not run).
int run_tool(const std::vector<std::string>& argv, std::string& output) {
  char log_path[] = "/tmp/canopy-emulated-ze-log-XXXXXX";
  const int log = mkstemp(log_path);
  if (log < 0) return -1;
  const pid_t child = fork();
  if (child == 0) {
    dup2(log, 1);
    dup2(log, 2);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    std::fprintf(stderr, "cannot run %s\n", args[0]);
    _exit(127);
  }
  close(log);
  int status = 0;
  const bool waited = child > 0 && waitpid(child, &status, 0) == child;
  output = read_file(log_path);
  unlink(log_path);
  return waited && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

const OpenClHost& opencl_host() {
  static OpenClHost host;
  static std::once_flag once;
  std::call_once(once, [] { open_host(host); });
  return host;
}

bool translate_spirv(const std::string& spirv, std::string& bitcode, std::string& log) {
  std::string tool = environment("CANOPY_EMULATED_ZE_LLVM_SPIRV", "");
  std::string found;
  if (tool.empty())
    tool = run_tool({"sh", "-c", "command -v llvm-spirv-15"}, found) == 0 ? "llvm-spirv-15" : "llvm-spirv";
  char directory[] = "/tmp/canopy-emulated-ze-XXXXXX";
  if (!mkdtemp(directory)) {
    log = "cannot make a temporary directory for the translator";
    return false;
  }
  const std::string spv = std::string(directory) + "/module.spv", bc = std::string(directory) + "/module.bc";
  bool ok = write_file(spv, spirv);
  if (ok) {
    const int status = run_tool({tool, "-r", "--spirv-target-env=CL1.2", spv, "-o", bc}, log);
    ok = status == 0;
    if (!ok) log = tool + " -r failed (exit status " + std::to_string(status) + "): " + log;
    if (ok) bitcode = read_file(bc);
  } else {
    log = "cannot write the module for the translator";
  }
  unlink(spv.c_str());
  unlink(bc.c_str());
  rmdir(directory);
  return ok && !bitcode.empty();
}

BuiltProgram build_spir(const std::string& bitcode) {
  const OpenClHost& host = opencl_host();
  BuiltProgram built;
  const std::size_t size = bitcode.size();
  const auto* bytes = reinterpret_cast<const unsigned char*>(bitcode.data());
  cl_int status = CL_SUCCESS, binary_status = CL_SUCCESS;
  cl_device_id device = host.device;
  built.program = host.clCreateProgramWithBinary(host.context, 1, &device, &size, &bytes, &binary_status, &status);
  if (status != CL_SUCCESS || binary_status != CL_SUCCESS) {
    built.log = "clCreateProgramWithBinary: " + cl_status_name(status != CL_SUCCESS ? status : binary_status);
    if (built.program) host.clReleaseProgram(built.program);
    built.program = nullptr;
    return built;
  }
  status = host.clBuildProgram(built.program, 1, &device, "-x spir -spir-std=1.2", nullptr, nullptr);
  std::size_t log_size = 0;
  host.clGetProgramBuildInfo(built.program, device, CL_PROGRAM_BUILD_LOG, 0, nullptr, &log_size);
  std::string log(log_size, '\0');
  if (log_size) host.clGetProgramBuildInfo(built.program, device, CL_PROGRAM_BUILD_LOG, log_size, log.data(), nullptr);
  while (!log.empty() && log.back() == '\0') log.pop_back();
  built.log = log;
  if (status != CL_SUCCESS) {
    built.log = "clBuildProgram: " + cl_status_name(status) + "; " + log;
    host.clReleaseProgram(built.program);
    built.program = nullptr;
  }
  return built;
}

std::string cl_status_name(cl_int status) {
  switch (status) {
    case CL_SUCCESS: return "CL_SUCCESS";
    case CL_OUT_OF_RESOURCES: return "CL_OUT_OF_RESOURCES";
    case CL_OUT_OF_HOST_MEMORY: return "CL_OUT_OF_HOST_MEMORY";
    case CL_BUILD_PROGRAM_FAILURE: return "CL_BUILD_PROGRAM_FAILURE";
    case CL_INVALID_VALUE: return "CL_INVALID_VALUE";
    case CL_INVALID_BINARY: return "CL_INVALID_BINARY";
    case CL_INVALID_KERNEL_NAME: return "CL_INVALID_KERNEL_NAME";
    case CL_INVALID_ARG_INDEX: return "CL_INVALID_ARG_INDEX";
    case CL_INVALID_ARG_SIZE: return "CL_INVALID_ARG_SIZE";
    case CL_INVALID_ARG_VALUE: return "CL_INVALID_ARG_VALUE";
    case CL_INVALID_MEM_OBJECT: return "CL_INVALID_MEM_OBJECT";
    case CL_INVALID_KERNEL_ARGS: return "CL_INVALID_KERNEL_ARGS";
    case CL_INVALID_WORK_GROUP_SIZE: return "CL_INVALID_WORK_GROUP_SIZE";
    case CL_INVALID_WORK_ITEM_SIZE: return "CL_INVALID_WORK_ITEM_SIZE";
    case CL_INVALID_BUFFER_SIZE: return "CL_INVALID_BUFFER_SIZE";
    case CL_INVALID_HOST_PTR: return "CL_INVALID_HOST_PTR";
    default: return "OpenCL status " + std::to_string(status);
  }
}

}  // namespace canopy_emulated_ze
