// OpenCL discovery: the devices of this machine with sane traits (PoCL's CPU
// device here), two devices when PoCL is asked for two, and the backend
// absent with a reason naming the library or the symbol when the ICD loader
// is missing or is not an OpenCL library.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>

#include "opencl_support.hpp"
#include "scoped_setting.hpp"

using namespace canopy;
using namespace opencl_test;

namespace {

bool is_power_of_two(int n) { return n > 0 && (n & (n - 1)) == 0; }

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

using ScopedEnvironment = canopy::testing::ScopedSetting;

}  // namespace

TEST_CASE("opencl discovery: the devices found have sane traits" * doctest::test_suite("opencl")) {
  OPENCL_DEVICE_OR_SKIP(first);
  CHECK(found().backend == "opencl");
  CHECK(found().absent_reason.empty());
  int index = 0;
  for (const auto& device : found().devices) {
    const auto& info = device->info();
    const auto& traits = static_cast<backends::opencl::OpenCLDevice&>(*device).traits();
    INFO(info.id, ": ", info.name);
    CHECK(info.id == "opencl:" + std::to_string(index++));
    CHECK(info.backend == "opencl");
    CHECK_FALSE(info.name.empty());
    CHECK_FALSE(info.vendor.empty());
    CHECK(contains(info.driver_version, "OpenCL C"));
    CHECK(contains(info.fingerprint, info.name));
    CHECK(contains(info.fingerprint, traits.platform_name));
    CHECK(info.compute_units >= 1);
    CHECK(info.global_memory > 0);
    CHECK(info.max_allocation > 0);
    CHECK(info.max_allocation <= info.global_memory);
    CHECK(info.max_work_group >= 1);
    CHECK(info.preferred_vector_width >= 4);
    CHECK_FALSE(info.host_memory);
    CHECK(info.fp64 == contains(traits.extensions, "cl_khr_fp64"));
    CHECK(contains(traits.opencl_c_version, "OpenCL C"));
    CHECK(is_power_of_two(traits.work_group_size));
    CHECK(traits.work_group_size <= info.max_work_group);
    CHECK(is_power_of_two(traits.reduction_work_group_size));
    CHECK(traits.reduction_groups >= info.compute_units);
    CHECK(traits.max_work_item_sizes[0] >= 1);
    CHECK(traits.int64_atomics == contains(traits.extensions, "cl_khr_int64_base_atomics"));
    if (traits.is_cpu) CHECK(traits.reduction_walk == jit::ReductionWalk::Chunked);
    // A PCI bus id is "dddd:bb:dd.f" or, where the device tells none (a CPU), empty.
    CHECK((info.pci_bus_id.empty() || (info.pci_bus_id.size() == 12 && info.pci_bus_id[4] == ':')));
    if (contains(traits.platform_name, "Portable Computing Language") && traits.is_cpu) {
      CHECK(info.pci_bus_id.empty());
      CHECK(info.fp64);
    }
  }
  // Discovering again gives new device objects for the same devices.
  const auto again = backends::opencl::discover_opencl({"", "off"});
  REQUIRE(again.devices.size() == found().devices.size());
  CHECK(again.devices[0].get() != found().devices[0].get());
  CHECK(again.devices[0]->info().fingerprint == found().devices[0]->info().fingerprint);
}

TEST_CASE("opencl discovery: a missing library leaves the backend absent, naming the library") {
  const auto by_option = backends::opencl::discover_opencl({"/nonexistent/libOpenCL.so.1", "off"});
  CHECK(by_option.backend == "opencl");
  CHECK(by_option.devices.empty());
  CHECK(contains(by_option.absent_reason, "/nonexistent/libOpenCL.so.1"));
  CHECK(contains(by_option.absent_reason, "could not be opened"));

  ScopedEnvironment library("CANOPY_LIBOPENCL", "/nonexistent");
  CHECK(backends::opencl::default_library() == "/nonexistent");
  const auto by_environment = backends::opencl::discover_opencl({"", "off"});
  CHECK(by_environment.devices.empty());
  CHECK(contains(by_environment.absent_reason, "'/nonexistent'"));
}

TEST_CASE("opencl discovery: a library without OpenCL's symbols leaves the backend absent, naming the symbol") {
  const auto& loaded = backends::opencl::load_api("libm.so.6");
  CHECK_FALSE(loaded.api);
  CHECK(contains(loaded.absent_reason, "has no symbol clGetPlatformIDs"));
  const auto found_there = backends::opencl::discover_opencl({"libm.so.6", "off"});
  CHECK(found_there.devices.empty());
  CHECK(found_there.absent_reason == loaded.absent_reason);
  // Loading is done once per library name.
  CHECK(&backends::opencl::load_api("libm.so.6") == &loaded);
}

// Run by the next test in a child process with POCL_DEVICES set (with
// --no-skip: doctest lists it as skipped in every other run).
TEST_CASE("opencl discovery: device count as a parent process expects it" * doctest::skip()) {
  const char* expected = std::getenv("CANOPY_TEST_EXPECT_OPENCL_DEVICES");
  REQUIRE(expected);
  const auto devices = backends::opencl::discover_opencl({"", "off"});
  REQUIRE(devices.devices.size() == static_cast<std::size_t>(std::atoi(expected)));
  // Each device runs a kernel of its own.
  Kernel fill("fill_index", [](Out<i64> out) { out[index(0)] = index(0) * 3; }, {"out"});
  for (const auto& device : devices.devices) {
    auto& opencl = static_cast<backends::opencl::OpenCLDevice&>(*device);
    const auto got = run_on_opencl(opencl, optimized(fill), {HostArray::filled<i64>(1000, 0)}, range_of(1000));
    CHECK(values_of<i64>(got.arrays[0])[999] == 2997);
  }
  CHECK(devices.devices[1]->info().id == "opencl:1");
}

TEST_CASE("opencl discovery: PoCL asked for two devices gives two" * doctest::test_suite("opencl")) {
  OPENCL_DEVICE_OR_SKIP(device);
  if (!contains(device->traits().platform_name, "Portable Computing Language"))
    CANOPY_TEST_SKIP(Other, "the OpenCL platform is not PoCL");
  // PoCL reads POCL_DEVICES once per process: ask a child process.
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  const std::string command =
      "POCL_DEVICES='pthread pthread' CANOPY_TEST_EXPECT_OPENCL_DEVICES=2 '" + self +
      "' --no-skip -tc='opencl discovery: device count as a parent process expects it' > /dev/null 2>&1";
  CHECK(std::system(command.c_str()) == 0);
}
