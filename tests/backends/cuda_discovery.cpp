// CUDA discovery on a machine without a GPU or without CUDA at all: the
// backend is absent with zero devices and a reason, and never throws. The
// driver missing (this machine, and CANOPY_LIBCUDA=/nonexistent anywhere),
// NVRTC missing (CANOPY_NVRTC=/nonexistent), both missing, libraries that
// are not CUDA's (a symbol named), and the toolkit's stub libcuda, which
// loads but whose cuInit fails. Where a real driver with a GPU is present,
// the device's traits are checked instead of its absence.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <string>

#include "cuda_support.hpp"

using namespace canopy;
using namespace cuda_test;
using backends::cuda::CudaOptions;
using backends::cuda::discover_cuda;

namespace {

// The reason of a discovery that must find nothing, after checking that it found nothing.
std::string absent_reason(const CudaOptions& options = {}) {
  backends::BackendDevices found;
  CHECK_NOTHROW(found = discover_cuda(options));
  CHECK(found.backend == "cuda");
  CHECK(found.devices.empty());
  CHECK_FALSE(found.absent_reason.empty());
  MESSAGE("reason: " << found.absent_reason);
  return found.absent_reason;
}

bool driver_present() { return backends::cuda::load_driver("libcuda.so.1").api != nullptr; }

}  // namespace

TEST_CASE("cuda discovery: without the driver library there are no devices, and the reason names libcuda.so.1") {
  if (driver_present()) {
    CANOPY_TEST_SKIP(Other, "this machine has a CUDA driver (libcuda.so.1 loads)");
  }
  ScopedEnvironment no_override("CANOPY_LIBCUDA", "");
  const std::string reason = absent_reason();
  CHECK(contains(reason, "the CUDA driver library 'libcuda.so.1' could not be opened"));
  CHECK(contains(reason, "CANOPY_LIBCUDA"));
}

TEST_CASE("cuda discovery: CANOPY_LIBCUDA=/nonexistent leaves the backend absent, naming the path") {
  ScopedEnvironment driver("CANOPY_LIBCUDA", "/nonexistent");
  const std::string reason = absent_reason();
  CHECK(contains(reason, "the CUDA driver library '/nonexistent' could not be opened"));
  CHECK(contains(reason, "install the NVIDIA driver or point CANOPY_LIBCUDA at its libcuda.so.1"));
  // The option overrides the environment.
  CHECK(contains(absent_reason({"/nonexistent/libcuda.so.1", "", "off"}), "'/nonexistent/libcuda.so.1'"));
}

TEST_CASE("cuda discovery: CANOPY_NVRTC=/nonexistent gives a reason naming NVRTC") {
  ScopedEnvironment compiler("CANOPY_NVRTC", "/nonexistent");
  CHECK(backends::cuda::nvrtc_candidates(backends::cuda::default_nvrtc_library()) ==
        std::vector<std::string>{"/nonexistent"});
  const auto& loaded = backends::cuda::load_nvrtc("/nonexistent");
  CHECK(loaded.api == nullptr);
  CHECK(
      contains(loaded.absent_reason,
               "NVRTC (the CUDA runtime compiler) could not be opened (tried /nonexistent; /nonexistent: cannot open"));
  CHECK(contains(loaded.absent_reason, "point CANOPY_NVRTC at its libnvrtc.so"));
  // Discovery says why NVRTC is missing whether or not the driver loads;
  // with both missing it names both.
  const std::string reason = absent_reason();
  CHECK(contains(reason, "NVRTC (the CUDA runtime compiler) could not be opened (tried /nonexistent;"));
  if (!driver_present()) CHECK(contains(reason, "the CUDA driver library 'libcuda.so.1' could not be opened"));
  ScopedEnvironment driver("CANOPY_LIBCUDA", "/nonexistent");
  const std::string both = absent_reason();
  CHECK(contains(both, "'/nonexistent' could not be opened"));
  CHECK(contains(both, "; and NVRTC"));
}

TEST_CASE("cuda discovery: a library that is not CUDA's is named with the first symbol it lacks") {
  // libm opens anywhere glibc does, and has neither API.
  const auto& driver = backends::cuda::load_driver("libm.so.6");
  CHECK(driver.api == nullptr);
  CHECK(contains(driver.absent_reason, "the CUDA driver library 'libm.so.6' has no symbol cuInit"));
  const auto& nvrtc = backends::cuda::load_nvrtc("libm.so.6");
  CHECK(nvrtc.api == nullptr);
  CHECK(contains(nvrtc.absent_reason, "NVRTC 'libm.so.6' has no symbol nvrtcVersion"));
  CHECK(contains(absent_reason({"libm.so.6", "", "off"}), "has no symbol cuInit"));
}

TEST_CASE("cuda discovery: the NVRTC search covers the usual names and the toolkit's directory") {
  ScopedEnvironment no_override("CANOPY_NVRTC", "");
  CHECK(backends::cuda::default_nvrtc_library().empty());
  const auto candidates = backends::cuda::nvrtc_candidates("");
  REQUIRE(candidates.size() >= 5);
  CHECK(candidates[0] == "libnvrtc.so.13");
  CHECK(candidates[1] == "libnvrtc.so.12");
  CHECK(std::find(candidates.begin(), candidates.end(), "libnvrtc.so.11.2") != candidates.end());
  CHECK(std::find(candidates.begin(), candidates.end(), "libnvrtc.so") != candidates.end());
  if (std::filesystem::is_directory("/usr/local/cuda/lib64"))
    CHECK(std::find(candidates.begin(), candidates.end(), "/usr/local/cuda/lib64/libnvrtc.so.13") != candidates.end());
  // Where NVRTC loads, it says what it is and what it compiles for.
  if (const auto* api = nvrtc().api.get()) {
    CHECK(api->major >= 11);
    CHECK_FALSE(api->architectures.empty());
    CHECK(std::is_sorted(api->architectures.begin(), api->architectures.end()));
    MESSAGE("NVRTC " << api->version() << " from " << api->library << ", oldest sm_" << api->architectures.front()
                     << ", newest sm_" << api->architectures.back());
  }
}

TEST_CASE("cuda discovery: the toolkit's stub libcuda loads, but cuInit fails and is named") {
  const char* stub = "/usr/local/cuda/lib64/stubs/libcuda.so";
  if (!std::filesystem::exists(stub)) {
    CANOPY_TEST_SKIP(Other, "no stub library at " << stub);
  }
  if (!nvrtc().api) {
    CANOPY_TEST_SKIP(Other,
                     "NVRTC is not available, so discovery stops before cuInit (" << nvrtc().absent_reason << ")");
  }
  const auto& driver = backends::cuda::load_driver(stub);
  REQUIRE_MESSAGE(driver.api != nullptr, driver.absent_reason);
  const std::string reason = absent_reason({stub, "", "off"});
  CHECK(contains(reason, fmt::format("cuInit failed in the CUDA driver library '{}'", stub)));
  CHECK(contains(reason, "CUDA_ERROR_STUB_LIBRARY (34)"));
  CHECK(contains(reason, "not a driver: install the NVIDIA driver"));
}

TEST_CASE("cuda discovery: a real device, where there is one, has sane traits" * doctest::test_suite("cuda-device")) {
  const auto found = discover_cuda({"", "", "off"});
  if (found.devices.empty()) {
    CANOPY_TEST_SKIP(Other, "no CUDA device (" << found.absent_reason << ")");
  }
  CHECK(found.absent_reason.empty());
  int index = 0;
  for (const auto& device : found.devices) {
    const auto& info = device->info();
    const auto& traits = static_cast<backends::cuda::CudaDevice&>(*device).traits();
    INFO(info.id, ": ", info.name);
    CHECK(info.id == "cuda:" + std::to_string(index++));
    CHECK(info.backend == "cuda");
    CHECK_FALSE(info.name.empty());
    CHECK(contains(info.fingerprint, info.name));
    CHECK(info.compute_units >= 1);
    CHECK(info.global_memory > 0);
    CHECK(info.max_work_group >= 64);
    CHECK(info.pci_bus_id.size() == 12);
    CHECK(traits.compute_major >= 3);
    CHECK((contains(traits.architecture, "sm_") || contains(traits.architecture, "compute_")));
    CHECK(traits.block_size > 0);
    CHECK(traits.reduction_blocks >= info.compute_units);
  }
}
