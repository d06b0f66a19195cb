// The emulated Level Zero driver's own tests (the "level-zero-emulated"
// suite, run by CTest's backends-level-zero-emulated entries with the driver
// named to the real loader): what it tells the backend about its devices,
// and the errors a GPU driver gives, reached through the loader as the
// backend reaches them. The loader initializes once per process, so each
// set of device properties is its own CTest entry; the tests read the
// emulator's variables to know which set they run with.
#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <set>
#include <utility>

#include <canopy/backends/level_zero/level_zero_device.hpp>
#include <canopy/canopy.hpp>
#include <canopy/ir/error.hpp>
#include <canopy/jit/spirv.hpp>

#include "battery/battery.hpp"
#include "common/skip.hpp"

using namespace canopy;
using namespace canopy::backends::level_zero;

namespace {

const backends::BackendDevices& found() {
  static const backends::BackendDevices devices = discover_level_zero({"", "off"});
  return devices;
}

bool emulated() {
  const char* drivers = std::getenv("ZE_ENABLE_ALT_DRIVERS");
  return drivers && std::string(drivers).find("canopy_emulated_ze") != std::string::npos;
}

#define EMULATOR_OR_SKIP()                                                                   \
  if (!emulated() || found().devices.empty())                                                \
    CANOPY_TEST_SKIP(Other,                                                                  \
                     "the emulated Level Zero driver is not named by ZE_ENABLE_ALT_DRIVERS " \
                     "(CTest's backends-level-zero-emulated does): "                         \
                         << found().absent_reason);

std::int64_t environment_number(const char* name, std::int64_t fallback) {
  const char* text = std::getenv(name);
  return text && *text ? std::atoll(text) : fallback;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

LevelZeroDevice& first() { return static_cast<LevelZeroDevice&>(*found().devices[0]); }

// The loader's table, and a context and device of the emulated driver.
struct Raw {
  const Api& api = *load_api(default_library()).api;
  ze_driver_handle_t driver = nullptr;
  ze_device_handle_t device = nullptr;
  ze_context_handle_t context = nullptr;
  Raw() {
    uint32_t count = 1;
    REQUIRE(api.zeDriverGet(&count, &driver) == ZE_RESULT_SUCCESS);
    count = 1;
    REQUIRE(api.zeDeviceGet(driver, &count, &device) == ZE_RESULT_SUCCESS);
    ze_context_desc_t desc{ZE_STRUCTURE_TYPE_CONTEXT_DESC, nullptr, 0};
    REQUIRE(api.zeContextCreate(driver, &desc, &context) == ZE_RESULT_SUCCESS);
  }
  ~Raw() { api.zeContextDestroy(context); }
  void* allocate(std::size_t bytes, ze_result_t expected = ZE_RESULT_SUCCESS) {
    ze_device_mem_alloc_desc_t desc{ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC, nullptr, 0, 0};
    void* memory = nullptr;
    CHECK(api.zeMemAllocDevice(context, &desc, bytes, 64, device, &memory) == expected);
    return memory;
  }
  ze_module_handle_t module(const std::string& bytes, ze_result_t expected, std::string* log_text = nullptr) {
    ze_module_desc_t desc{};
    desc.stype = ZE_STRUCTURE_TYPE_MODULE_DESC;
    desc.format = ZE_MODULE_FORMAT_IL_SPIRV;
    desc.inputSize = bytes.size();
    desc.pInputModule = reinterpret_cast<const uint8_t*>(bytes.data());
    ze_module_handle_t module = nullptr;
    ze_module_build_log_handle_t log = nullptr;
    CHECK(api.zeModuleCreate(context, device, &desc, &module, &log) == expected);
    if (log) {
      std::size_t size = 0;
      CHECK(api.zeModuleBuildLogGetString(log, &size, nullptr) == ZE_RESULT_SUCCESS);
      std::string text(size, '\0');
      CHECK(api.zeModuleBuildLogGetString(log, &size, text.data()) == ZE_RESULT_SUCCESS);
      if (log_text) *log_text = text;
      CHECK(api.zeModuleBuildLogDestroy(log) == ZE_RESULT_SUCCESS);
    }
    return module;
  }
};

// Runs the child test cases matching `test_case` (suite
// "level-zero-emulated-child") in a new process of this binary, with the
// variables `environment` ("NAME=VALUE ..."), and returns its wait status and
// what it printed. A new process, not fork(): the OpenCL host's threads do not
// survive fork.
std::pair<int, std::string> run_child(const std::string& test_case, const std::string& environment) {
  const std::string command = environment + " /proc/" + std::to_string(getpid()) +
                              "/exe --test-suite=level-zero-emulated-child '--test-case=" + test_case +
                              "' --no-intro --no-version 2>&1";
  std::FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe);
  std::string said;
  char buffer[512];
  std::size_t got;
  while ((got = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) said.append(buffer, got);
  return {pclose(pipe), said};
}

// The first point kernel of the battery over one dimension of at least
// 1024 points: its arrays are read and written across its range.
const battery::Case& point_case() {
  for (const auto& c : battery::cases()) {
    if (c.range.dims != 1 || c.range.end[0] - c.range.begin[0] < 1024) continue;
    bool plain = true;
    for (const auto& arg : c.args) plain = plain && !std::holds_alternative<backends::ReductionArg>(arg);
    if (plain) return c;
  }
  FAIL("the battery has no 1-D point kernel over 1024 points");
  return battery::cases().front();
}

}  // namespace

TEST_CASE("level zero emulated: devices as the environment sets them, each with its own PCI address, emulated" *
          doctest::test_suite("level-zero-emulated")) {
  EMULATOR_OR_SKIP();
  const auto& devices = found().devices;
  CHECK(static_cast<std::int64_t>(devices.size()) == environment_number("CANOPY_EMULATED_ZE_DEVICES", 1));
  std::set<std::string> addresses;
  for (const auto& device : devices) {
    const auto& info = device->info();
    CHECK(info.emulated);
    CHECK(contains(info.name, "Canopy emulated Level Zero device"));
    CHECK(info.global_memory == environment_number("CANOPY_EMULATED_ZE_MEMORY", std::int64_t{2} << 30));
    CHECK(info.fp64 == (environment_number("CANOPY_EMULATED_ZE_FP64", 1) != 0));
    CHECK(info.pci_bus_id.rfind("0000:e1:", 0) == 0);
    addresses.insert(info.pci_bus_id);
    const auto& traits = static_cast<const LevelZeroDevice&>(*device).traits();
    CHECK(traits.limits.max_group_size <= environment_number("CANOPY_EMULATED_ZE_MAX_GROUP", 1024));
    CHECK(traits.compute_ordinal == std::optional<std::uint32_t>(1));  // group 0 only copies
  }
  CHECK(addresses.size() == devices.size());
}

TEST_CASE("level zero emulated: an allocation past the device's memory is refused by name, and memory comes back" *
          doctest::test_suite("level-zero-emulated")) {
  EMULATOR_OR_SKIP();
  LevelZeroDevice& device = first();
  const auto total = static_cast<std::size_t>(device.info().global_memory);
  const backends::Buffer most = device.allocate(total / 2 + total / 4);
  std::string message;
  try {
    device.allocate(total / 2);
  } catch (const Error& e) {
    message = e.what();
  }
  CHECK(contains(message, "ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY"));
  device.free(most);
  const backends::Buffer again = device.allocate(total / 2);
  CHECK(again.handle != nullptr);
  device.free(again);
}

TEST_CASE("level zero emulated: unknown handles, bad sizes, names, group sizes and arguments are refused" *
          doctest::test_suite("level-zero-emulated")) {
  EMULATOR_OR_SKIP();
  if (!jit::spirv_available()) CANOPY_TEST_SKIP(Other, jit::spirv_unavailable_reason());
  Raw raw;
  const Api& api = raw.api;
  raw.allocate(0, ZE_RESULT_ERROR_UNSUPPORTED_SIZE);
  int on_the_host = 0;
  CHECK(api.zeMemFree(raw.context, &on_the_host) == ZE_RESULT_ERROR_INVALID_ARGUMENT);

  std::string log;
  CHECK(raw.module("not SPIR-V at all", ZE_RESULT_ERROR_MODULE_BUILD_FAILURE, &log) == nullptr);
  CHECK(contains(log, "not SPIR-V"));

  const battery::Case& c = point_case();
  const jit::SpirvKernel spirv = jit::spirv_of(*c.kernel);
  ze_module_handle_t module = raw.module(spirv.binary, ZE_RESULT_SUCCESS);
  REQUIRE(module != nullptr);
  ze_kernel_desc_t desc{ZE_STRUCTURE_TYPE_KERNEL_DESC, nullptr, 0, "no_such_kernel"};
  ze_kernel_handle_t kernel = nullptr;
  CHECK(api.zeKernelCreate(module, &desc, &kernel) == ZE_RESULT_ERROR_INVALID_KERNEL_NAME);
  desc.pKernelName = spirv.entry.c_str();
  REQUIRE(api.zeKernelCreate(module, &desc, &kernel) == ZE_RESULT_SUCCESS);

  const auto max_group = static_cast<uint32_t>(environment_number("CANOPY_EMULATED_ZE_MAX_GROUP", 1024));
  CHECK(api.zeKernelSetGroupSize(kernel, max_group + 1, 1, 1) == ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION);
  CHECK(api.zeKernelSetGroupSize(kernel, 0, 1, 1) == ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION);
  CHECK(api.zeKernelSetGroupSize(kernel, 1, 1, 1) == ZE_RESULT_SUCCESS);
  ze_kernel_properties_t properties{};
  properties.stype = ZE_STRUCTURE_TYPE_KERNEL_PROPERTIES;
  REQUIRE(api.zeKernelGetProperties(kernel, &properties) == ZE_RESULT_SUCCESS);
  const std::uint64_t value = 0;
  CHECK(api.zeKernelSetArgumentValue(kernel, properties.numKernelArgs, 8, &value) ==
        ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_INDEX);
  CHECK(api.zeKernelSetArgumentValue(kernel, 0, 3, &value) == ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE);
  void* host_pointer = &on_the_host;  // not device memory: a GPU would fault when the kernel ran
  CHECK(api.zeKernelSetArgumentValue(kernel, 0, sizeof host_pointer, &host_pointer) ==
        ZE_RESULT_ERROR_INVALID_ARGUMENT);

  CHECK(api.zeModuleDestroy(module) == ZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE);  // its kernel is alive
  CHECK(api.zeKernelDestroy(kernel) == ZE_RESULT_SUCCESS);
  CHECK(api.zeKernelDestroy(kernel) == ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
  CHECK(api.zeModuleDestroy(module) == ZE_RESULT_SUCCESS);
}

// Run in a process of its own by the test below (OpenCL's threads do not
// survive fork, so the parent execs this binary again): every array of a
// point kernel over 1024 or more points gets 8 bytes (256 usable, then a
// page no one may touch), and the kernel runs off the end.
TEST_CASE("level zero emulated: (in a process of its own) a kernel runs off its arrays" *
          doctest::test_suite("level-zero-emulated-child")) {
  EMULATOR_OR_SKIP();
  const battery::Case& c = point_case();
  LevelZeroDevice& device = first();
  auto program = device.compile(c.kernel);
  std::vector<backends::KernelArg> args;
  for (const auto& arg : c.args) {
    if (const auto* scalar = std::get_if<backends::ScalarArg>(&arg)) {
      args.emplace_back(*scalar);
    } else {
      backends::ArrayArg array;
      array.data = device.allocate(8).handle;
      array.extents = {c.range.end[0], 1, 1};
      args.emplace_back(array);
    }
  }
  device.run(*program, args, c.range);
  FAIL("the access outside the allocations went unnoticed");
}

TEST_CASE("level zero emulated: a kernel's access outside its allocation ends the process, saying so" *
          doctest::test_suite("level-zero-emulated")) {
  EMULATOR_OR_SKIP();
  const auto [status, said] = run_child("*runs off its arrays", "");
  INFO(said);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 70);
  CHECK(contains(said, "canopy emulated Level Zero: a kernel accessed address"));
  CHECK(contains(said, "past the end of an allocation of 8 bytes"));
}

// Run in a process of its own by the test below, with
// CANOPY_EMULATED_ZE_TIMEOUT=0.5: a kernel that would count to 2^60 runs
// past its time, and the launch fails with ZE_RESULT_ERROR_DEVICE_LOST. The
// OpenCL host cannot stop the kernel, so the process ends at once after
// saying what it saw.
TEST_CASE("level zero emulated: (in a process of its own) a kernel that never ends" *
          doctest::test_suite("level-zero-emulated-child")) {
  EMULATOR_OR_SKIP();
  Kernel forever("forever",
                 [](Out<battery::i64> out, In<battery::i64> count) {
                   Idx i = index(0);
                   Var<battery::i64> acc("acc", 0);
                   For(cast<battery::i64>(0), count[i], [&](Idx k) { acc += k ^ i; });
                   out[i] = acc;
                 },
                 {"out", "count"});
  LevelZeroDevice& device = first();
  auto program = device.compile(battery::optimized(forever));
  const backends::Buffer out = device.allocate(sizeof(std::int64_t)), count = device.allocate(sizeof(std::int64_t));
  const std::int64_t huge = std::int64_t{1} << 60;
  device.copy_in(count, 0, &huge, sizeof huge);
  std::vector<backends::KernelArg> args{backends::ArrayArg{out.handle, {1, 1, 1}},
                                        backends::ArrayArg{count.handle, {1, 1, 1}}};
  backends::Range range;
  range.end = {1, 1, 1};
  std::string message;
  try {
    device.run(*program, args, range);
  } catch (const Error& e) {
    message = e.what();
  }
  std::printf("the launch said: %s\n", message.c_str());
  std::fflush(stdout);
  std::_Exit(contains(message, "ZE_RESULT_ERROR_DEVICE_LOST") ? 0 : 4);
}

TEST_CASE("level zero emulated: a kernel that never ends loses the device after the time-out, saying so" *
          doctest::test_suite("level-zero-emulated")) {
  EMULATOR_OR_SKIP();
  const auto [status, said] = run_child("*never ends", "CANOPY_EMULATED_ZE_TIMEOUT=0.5");
  INFO(said);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(contains(said, "ran past 0.5 s (CANOPY_EMULATED_ZE_TIMEOUT); the device is lost"));
  CHECK(contains(said, "the launch said: zeCommandListAppendLaunchKernel for kernel 'forever'"));
}
