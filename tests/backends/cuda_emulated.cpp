// The emulated CUDA device (tests/emulate/cuda/) answers as a driver does,
// through Canopy's own driver and NVRTC tables: what it refuses and with
// which status (calls without a context, unknown handles, copies outside an
// allocation, a block of more threads than the device allows, an image that
// is not one of its modules), memory that runs out at the emulated capacity
// as Canopy's device reports it, a barrier that not every thread reaches
// (a launch failure that sticks to the context, as on a GPU), an access
// outside an allocation (CUDA_ERROR_ILLEGAL_ADDRESS), a kernel that never
// ends (CUDA_ERROR_LAUNCH_TIMEOUT), and warp shuffles with their GPU
// meaning. In the "cuda-emulated" suite, which
// CTest's backends-cuda-emulated runs with CANOPY_LIBCUDA and CANOPY_NVRTC
// set to the emulators; elsewhere these tests are skipped.
#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <numeric>

#include "cuda_support.hpp"

using namespace canopy;
using namespace cuda_test;
using backends::cuda::CUcontext;
using backends::cuda::CUdeviceptr;
using backends::cuda::CUfunction;
using backends::cuda::CUmodule;
using backends::cuda::CUstream;
using backends::cuda::DriverApi;
using backends::cuda::NvrtcApi;

namespace {

constexpr int kInvalidValue = 1, kInvalidImage = 200, kInvalidContext = 201, kInvalidDevice = 101, kInvalidHandle = 400,
              kNotFound = 500, kIllegalAddress = 700, kLaunchTimeout = 702, kLaunchFailed = 719;

// The emulated driver and NVRTC, or null where the tables loaded are not the emulator's.
struct Emulator {
  const DriverApi* driver = nullptr;
  const NvrtcApi* nvrtc = nullptr;
  std::string absent;
};

const Emulator& emulator() {
  static const Emulator found = [] {
    Emulator result;
    const auto& driver = backends::cuda::load_driver(backends::cuda::default_driver_library());
    const auto& nvrtc = backends::cuda::load_nvrtc(backends::cuda::default_nvrtc_library());
    char name[128] = {};
    if (!driver.api || !nvrtc.api || driver.api->cuInit(0) != 0 || driver.api->cuDeviceGetName(name, 127, 0) != 0 ||
        std::string(name).rfind("Canopy emulated", 0) != 0) {
      result.absent = "CANOPY_LIBCUDA and CANOPY_NVRTC do not name the emulated CUDA device (tests/emulate/cuda/)";
      return result;
    }
    result.driver = driver.api.get();
    result.nvrtc = nvrtc.api.get();
    return result;
  }();
  return found;
}

#define EMULATOR_OR_SKIP(api, nvrtc)            \
  const DriverApi* api = emulator().driver;     \
  const NvrtcApi* nvrtc = emulator().nvrtc;     \
  if (!api) {                                   \
    CANOPY_TEST_SKIP(Other, emulator().absent); \
  }                                             \
  (void)nvrtc

// The primary context of device `ordinal`, current for a scope.
struct Current {
  const DriverApi& api;
  int ordinal;
  CUcontext context = nullptr;
  Current(const DriverApi& driver, int device) : api(driver), ordinal(device) {
    REQUIRE(api.cuDevicePrimaryCtxRetain(&context, ordinal) == 0);
    REQUIRE(api.cuCtxPushCurrent(context) == 0);
  }
  ~Current() {
    CUcontext popped = nullptr;
    api.cuCtxPopCurrent(&popped);
    api.cuDevicePrimaryCtxRelease(ordinal);
  }
};

// `source` compiled by the emulated NVRTC and loaded in the current context.
CUmodule load(const DriverApi& api, const NvrtcApi& nvrtc, const std::string& source, const std::string& name) {
  jit::CSource program;
  program.text = source;
  program.entry = name;
  const auto image = backends::cuda::nvrtc_compile(nvrtc, program, name, "sm_80", "the test");
  CUmodule module = nullptr;
  REQUIRE(api.cuModuleLoadDataEx(&module, image.image.c_str(), 0, nullptr, nullptr) == 0);
  return module;
}

constexpr const char* kDivergent = R"(
extern "C" __global__ void divergent(int* out) {
  if (threadIdx.x == 3) return;
  out[threadIdx.x] = 1;
  __syncthreads();
})";

constexpr const char* kPastTheEnd = R"(
extern "C" __global__ void past_the_end(int* out, long long n, long long shift) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i + shift] = 7;
})";

// Runs `past_the_end` over an allocation of `n` ints with each write moved
// by `shift`, in a child process (a failure sticks to the context for good).
// The child's exit status: 0 when the launch was accepted and waiting for it
// gave `expected`, else which step differed.
int run_past_the_end(const DriverApi& api, CUfunction function, long long n, long long shift, int expected) {
  const pid_t child = fork();
  if (child != 0) {
    int status = -1;
    if (child < 0 || waitpid(child, &status, 0) != child || !WIFEXITED(status)) return -1;
    return WEXITSTATUS(status);
  }
  CUdeviceptr memory = 0;
  if (api.cuMemAlloc(&memory, static_cast<std::size_t>(n) * sizeof(int)) != 0) _exit(10);
  void* params[] = {&memory, &n, &shift};
  if (api.cuLaunchKernel(function, static_cast<unsigned>((n + 63) / 64), 1, 1, 64, 1, 1, 0, nullptr, params, nullptr) !=
      0)
    _exit(11);
  if (api.cuStreamSynchronize(nullptr) != expected) _exit(12);
  if (expected == 0) {
    std::vector<int> back(static_cast<std::size_t>(n));
    if (api.cuMemcpyDtoHAsync(back.data(), memory, back.size() * sizeof(int), nullptr) != 0) _exit(13);
    for (long long i = shift; i < n; ++i)
      if (back[static_cast<std::size_t>(i)] != 7) _exit(14);
  }
  _exit(0);
}

#if defined(__SANITIZE_THREAD__)
constexpr bool kThreadSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
constexpr bool kThreadSanitizer = true;
#else
constexpr bool kThreadSanitizer = false;
#endif
#else
constexpr bool kThreadSanitizer = false;
#endif

constexpr const char* kForever = R"(
extern "C" __global__ void forever(volatile int* flag) {
  while (*flag == 0) {
  }
})";

constexpr const char* kShuffle = R"(
extern "C" __global__ void warp_sums(const int* in, int* out) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  int value = in[t];
  for (int offset = warpSize / 2; offset > 0; offset /= 2) value += __shfl_down_sync(0xffffffffu, value, offset);
  if (threadIdx.x % warpSize == 0) out[t / warpSize] = value;
  out[64 + t] = __shfl_xor_sync(0xffffffffu, in[t], 1);
})";

}  // namespace

TEST_CASE("cuda emulated: the driver refuses what a driver refuses, with its status codes" *
          doctest::test_suite("cuda-emulated")) {
  EMULATOR_OR_SKIP(api, nvrtc);
  int count = 0;
  REQUIRE(api->cuDeviceGetCount(&count) == 0);
  int device = 0;
  CHECK(api->cuDeviceGet(&device, count) == kInvalidDevice);
  CUdeviceptr memory = 0;
  CHECK(api->cuMemAlloc(&memory, 64) == kInvalidContext);  // no context is current
  Current current(*api, 0);
  CHECK(api->cuMemAlloc(&memory, 0) == kInvalidValue);
  REQUIRE(api->cuMemAlloc(&memory, 64) == 0);
  std::vector<char> host(128);
  CHECK(api->cuMemcpyHtoDAsync(memory, host.data(), 64, nullptr) == 0);
  CHECK(api->cuMemcpyHtoDAsync(memory + 1000000, host.data(), 8, nullptr) == kInvalidValue);  // outside it
  CHECK(api->cuMemFree(memory + 8) == kInvalidValue);  // not an allocation's start
  CHECK(api->cuMemFree(memory) == 0);
  CHECK(api->cuMemFree(memory) == kInvalidValue);  // freed already
  CHECK(api->cuStreamDestroy(reinterpret_cast<CUstream>(host.data())) == kInvalidHandle);
  const char ptx[] = ".version 8.0\n.target sm_80\n.address_size 64\n";
  CUmodule module = nullptr;
  CHECK(api->cuModuleLoadDataEx(&module, ptx, 0, nullptr, nullptr) == kInvalidImage);
  module = load(*api, *nvrtc, kDivergent, "divergent");
  CUfunction function = nullptr;
  CHECK(api->cuModuleGetFunction(&function, module, "no_such_kernel") == kNotFound);
  REQUIRE(api->cuModuleGetFunction(&function, module, "divergent") == 0);
  int most = 0;
  REQUIRE(api->cuDeviceGetAttribute(&most, backends::cuda::DeviceAttribute::MaxThreadsPerBlock, 0) == 0);
  REQUIRE(api->cuMemAlloc(&memory, 4096 * sizeof(int)) == 0);
  void* params[] = {&memory};
  CHECK(api->cuLaunchKernel(function, 1, 1, 1, static_cast<unsigned>(most) * 2, 1, 1, 0, nullptr, params, nullptr) ==
        kInvalidValue);
  CHECK(api->cuLaunchKernel(function, 0, 1, 1, 32, 1, 1, 0, nullptr, params, nullptr) == kInvalidValue);
  CHECK(backends::cuda::error_name(*api, kInvalidValue) == "CUDA_ERROR_INVALID_VALUE (1): invalid argument");
  CHECK(api->cuMemFree(memory) == 0);
  CHECK(api->cuModuleUnload(module) == 0);
  CHECK(api->cuModuleUnload(module) == kInvalidHandle);
}

TEST_CASE("cuda emulated: a barrier that not every thread reaches fails the launch, and the failure sticks" *
          doctest::test_suite("cuda-emulated")) {
  EMULATOR_OR_SKIP(api, nvrtc);
  // In a child process: the failure poisons the context for good, as on a GPU.
  Current current(*api, 0);
  const CUmodule module = load(*api, *nvrtc, kDivergent, "divergent");
  CUfunction function = nullptr;
  REQUIRE(api->cuModuleGetFunction(&function, module, "divergent") == 0);
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    CUdeviceptr memory = 0;
    if (api->cuMemAlloc(&memory, 64 * sizeof(int)) != 0) _exit(10);
    void* params[] = {&memory};
    if (api->cuLaunchKernel(function, 2, 1, 1, 32, 1, 1, 0, nullptr, params, nullptr) != 0) _exit(11);
    if (api->cuStreamSynchronize(nullptr) != kLaunchFailed) _exit(12);
    CUdeviceptr more = 0;
    if (api->cuMemAlloc(&more, 64) != kLaunchFailed) _exit(13);  // sticky
    _exit(0);
  }
  int status = -1;
  REQUIRE(waitpid(child, &status, 0) == child);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  // The parent's context never saw the launch.
  CUdeviceptr memory = 0;
  CHECK(api->cuMemAlloc(&memory, 64) == 0);
  CHECK(api->cuMemFree(memory) == 0);
  CHECK(api->cuModuleUnload(module) == 0);
}

TEST_CASE("cuda emulated: warp shuffles move values between the lanes of a warp" *
          doctest::test_suite("cuda-emulated")) {
  EMULATOR_OR_SKIP(api, nvrtc);
  Current current(*api, 0);
  const CUmodule module = load(*api, *nvrtc, kShuffle, "warp_sums");
  CUfunction function = nullptr;
  REQUIRE(api->cuModuleGetFunction(&function, module, "warp_sums") == 0);
  int warp = 0;
  REQUIRE(api->cuDeviceGetAttribute(&warp, backends::cuda::DeviceAttribute::WarpSize, 0) == 0);
  REQUIRE(warp == 32);
  // Two blocks of 32 threads: 64 values, 2 warp sums, and each value's xor-1 neighbour.
  std::vector<int> in(64), out(128, -1);
  for (int t = 0; t < 64; ++t) in[static_cast<std::size_t>(t)] = t * t - 7 * t;
  CUdeviceptr device_in = 0, device_out = 0;
  REQUIRE(api->cuMemAlloc(&device_in, in.size() * sizeof(int)) == 0);
  REQUIRE(api->cuMemAlloc(&device_out, out.size() * sizeof(int)) == 0);
  REQUIRE(api->cuMemcpyHtoDAsync(device_in, in.data(), in.size() * sizeof(int), nullptr) == 0);
  REQUIRE(api->cuMemcpyHtoDAsync(device_out, out.data(), out.size() * sizeof(int), nullptr) == 0);
  void* params[] = {&device_in, &device_out};
  REQUIRE(api->cuLaunchKernel(function, 2, 1, 1, 32, 1, 1, 0, nullptr, params, nullptr) == 0);
  REQUIRE(api->cuStreamSynchronize(nullptr) == 0);
  REQUIRE(api->cuMemcpyDtoHAsync(out.data(), device_out, out.size() * sizeof(int), nullptr) == 0);
  CHECK(out[0] == std::accumulate(in.begin(), in.begin() + 32, 0));
  CHECK(out[1] == std::accumulate(in.begin() + 32, in.end(), 0));
  for (int t = 0; t < 64; ++t) CHECK(out[static_cast<std::size_t>(64 + t)] == in[static_cast<std::size_t>(t ^ 1)]);
  CHECK(api->cuMemFree(device_in) == 0);
  CHECK(api->cuMemFree(device_out) == 0);
  CHECK(api->cuModuleUnload(module) == 0);
}

TEST_CASE("cuda emulated: memory runs out at the emulated capacity, and Canopy's device says so" *
          doctest::test_suite("cuda-emulated")) {
  EMULATOR_OR_SKIP(api, nvrtc);
  const auto found = backends::cuda::discover_cuda({"", "", "off"});
  REQUIRE_FALSE(found.devices.empty());
  backends::Device& device = *found.devices[0];
  const auto total = static_cast<std::size_t>(device.info().global_memory);
  // More than the device has: Canopy refuses before asking the driver.
  CHECK(contains(error_of([&] { device.allocate(total + 1); }), "cannot allocate"));
  // Within the device's size, but not while most of it is taken: the driver's out of memory.
  const backends::Buffer most = device.allocate(total / 4 * 3);
  const std::string message = error_of([&] { device.allocate(total / 2); });
  INFO(message);
  CHECK(contains(message, "CUDA_ERROR_OUT_OF_MEMORY (2)"));
  CHECK(contains(message, "could not allocate"));
  device.free(most);
  const backends::Buffer again = device.allocate(total / 2);
  CHECK(again.handle != nullptr);
  device.free(again);
}

TEST_CASE("cuda emulated: a kernel's access outside its allocation fails the launch with CUDA_ERROR_ILLEGAL_ADDRESS" *
          doctest::test_suite("cuda-emulated")) {
  EMULATOR_OR_SKIP(api, nvrtc);
  Current current(*api, 0);
  const CUmodule module = load(*api, *nvrtc, kPastTheEnd, "past_the_end");
  CUfunction function = nullptr;
  REQUIRE(api->cuModuleGetFunction(&function, module, "past_the_end") == 0);
  // 1024 ints end on a 256-byte step: one int past the end is outside.
  CHECK(run_past_the_end(*api, function, 1024, 0, 0) == 0);
  CHECK(run_past_the_end(*api, function, 1024, 1, kIllegalAddress) == 0);
  CHECK(run_past_the_end(*api, function, 1000, -2000, kIllegalAddress) == 0);  // before the start
  // The parent's context never saw the failures.
  CUdeviceptr memory = 0;
  CHECK(api->cuMemAlloc(&memory, 64) == 0);
  CHECK(api->cuMemFree(memory) == 0);
  CHECK(api->cuModuleUnload(module) == 0);
}

TEST_CASE("cuda emulated: a kernel that never ends fails its launch with CUDA_ERROR_LAUNCH_TIMEOUT" *
          doctest::test_suite("cuda-emulated")) {
  EMULATOR_OR_SKIP(api, nvrtc);
  if (kThreadSanitizer) {
    CANOPY_TEST_SKIP(Other,
                     "ThreadSanitizer holds a signal back until the thread calls into it, which a spinning "
                     "kernel (not instrumented) never does: the timer cannot end the launch");
  }
  Current current(*api, 0);
  const CUmodule module = load(*api, *nvrtc, kForever, "forever");
  CUfunction function = nullptr;
  REQUIRE(api->cuModuleGetFunction(&function, module, "forever") == 0);
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    setenv("CANOPY_EMULATED_CUDA_TIMEOUT", "0.5", 1);
    CUdeviceptr flag = 0;
    if (api->cuMemAlloc(&flag, sizeof(int)) != 0 || api->cuMemsetD32Async(flag, 0, 1, nullptr) != 0) _exit(10);
    void* params[] = {&flag};
    if (api->cuLaunchKernel(function, 1, 1, 1, 32, 1, 1, 0, nullptr, params, nullptr) != 0) _exit(11);
    if (api->cuStreamSynchronize(nullptr) != kLaunchTimeout) _exit(12);
    _exit(0);
  }
  int status = -1;
  REQUIRE(waitpid(child, &status, 0) == child);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(api->cuModuleUnload(module) == 0);
}
