// The kernel battery (tests/battery/) on a CUDA device: every case of the
// table compiled by the backend (CUDA C++ through NVRTC), run through the
// Device API and checked against the reference interpreter, as on OpenCL.
// These tests are in the "cuda-device" suite: they run where there is a
// GPU, and on the emulated CUDA device (tests/emulate/cuda/), where CTest's
// backends-cuda-emulated points CANOPY_LIBCUDA and CANOPY_NVRTC at the
// emulators; elsewhere they are skipped, saying why.
#include <doctest/doctest.h>

#include "battery/battery.hpp"
#include "cuda_support.hpp"

using namespace canopy;

namespace {

// The first CUDA device, found once (with the disk cache CANOPY_CACHE_DIR names).
backends::Device* cuda_device(std::string& absent) {
  static const backends::BackendDevices found = backends::cuda::discover_cuda({});
  absent = found.absent_reason;
  return found.devices.empty() ? nullptr : found.devices[0].get();
}

void run_group(const std::string& group) {
  std::string absent;
  backends::Device* device = cuda_device(absent);
  if (!device) {
    CANOPY_TEST_SKIP(Other, "no CUDA device (" << absent << ")");
  }
  MESSAGE("on " << device->info().name << " (" << device->info().driver_version << ")");
  const int ran = battery::run_group(group, "CUDA", [device](const battery::Case& c) { return run_on(*device, c); });
  MESSAGE(ran << " cases of group '" << group << "' ran on CUDA");
}

}  // namespace

TEST_CASE("battery on CUDA: operators" * doctest::test_suite("cuda-device")) { run_group("operators"); }
TEST_CASE("battery on CUDA: conversions and math functions" * doctest::test_suite("cuda-device")) { run_group("math"); }
TEST_CASE("battery on CUDA: control flow, loops and scalars" * doctest::test_suite("cuda-device")) {
  run_group("control");
}
TEST_CASE("battery on CUDA: reductions and atomics" * doctest::test_suite("cuda-device")) { run_group("reductions"); }
TEST_CASE("battery on CUDA: 1-D, 2-D and 3-D shapes and pieces" * doctest::test_suite("cuda-device")) {
  run_group("shapes");
}
