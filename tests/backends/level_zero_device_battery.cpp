// The kernel battery (tests/battery/) on a Level Zero device: every case of
// the table made into SPIR-V by the backend, built with zeModuleCreate, run
// through the Device API and checked against the reference interpreter, as
// on OpenCL and CUDA. These tests are in the "level-zero-device" suite: they
// run where there is a Level Zero GPU, and on the emulated Level Zero driver
// (tests/emulate/level_zero/), which CTest's backends-level-zero-emulated
// names to the real loader with ZE_ENABLE_ALT_DRIVERS; elsewhere they are
// skipped, saying why.
#include <doctest/doctest.h>

#include <canopy/backends/level_zero/level_zero_device.hpp>

#include "battery/battery.hpp"
#include "common/skip.hpp"

using namespace canopy;

namespace {

// The first Level Zero device, found once (with the disk cache CANOPY_CACHE_DIR names).
backends::Device* level_zero_device(std::string& absent) {
  static const backends::BackendDevices found = backends::level_zero::discover_level_zero({});
  absent = found.absent_reason;
  return found.devices.empty() ? nullptr : found.devices[0].get();
}

void run_group(const std::string& group) {
  std::string absent;
  backends::Device* device = level_zero_device(absent);
  if (!device) {
    CANOPY_TEST_SKIP(Other, "no Level Zero device (" << absent << ")");
  }
  MESSAGE("on " << device->info().name << " (" << device->info().driver_version << ")");
  const int ran =
      battery::run_group(group, "Level Zero", [device](const battery::Case& c) { return run_on(*device, c); });
  MESSAGE(ran << " cases of group '" << group << "' ran on Level Zero");
}

}  // namespace

TEST_CASE("battery on Level Zero: operators" * doctest::test_suite("level-zero-device")) { run_group("operators"); }
TEST_CASE("battery on Level Zero: conversions and math functions" * doctest::test_suite("level-zero-device")) {
  run_group("math");
}
TEST_CASE("battery on Level Zero: control flow, loops and scalars" * doctest::test_suite("level-zero-device")) {
  run_group("control");
}
TEST_CASE("battery on Level Zero: reductions and atomics" * doctest::test_suite("level-zero-device")) {
  run_group("reductions");
}
TEST_CASE("battery on Level Zero: 1-D, 2-D and 3-D shapes and pieces" * doctest::test_suite("level-zero-device")) {
  run_group("shapes");
}
