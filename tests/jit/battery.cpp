// The kernel battery (tests/battery/) on the CPU JIT: every case of the
// table compiled by the CPU backend and run on a CPU device with several
// threads, so that ranges are split between them as the runtime splits them.
#include <doctest/doctest.h>

#include <algorithm>
#include <thread>

#include <canopy/backends/cpu/cpu_device.hpp>

#include "battery/battery.hpp"

namespace {

/// A CPU device over the first processing units of the machine (up to four).
canopy::backends::cpu::CpuDevice& device() {
  static canopy::backends::cpu::CpuDevice cpu("cpu-battery", [] {
    std::vector<unsigned> pus(std::clamp(std::thread::hardware_concurrency(), 1u, 4u));
    for (unsigned k = 0; k < pus.size(); ++k) pus[k] = k;
    return pus;
  }());
  return cpu;
}

void run_group(const std::string& group) {
  battery::run_group(group, "CPU JIT", [](const battery::Case& c) { return battery::run_on(device(), c); });
}

}  // namespace

TEST_CASE("battery on the CPU JIT: operators") { run_group("operators"); }
TEST_CASE("battery on the CPU JIT: conversions and math functions") { run_group("math"); }
TEST_CASE("battery on the CPU JIT: control flow, loops and scalars") { run_group("control"); }
TEST_CASE("battery on the CPU JIT: reductions and atomics") { run_group("reductions"); }
TEST_CASE("battery on the CPU JIT: 1-D, 2-D and 3-D shapes and pieces") { run_group("shapes"); }
