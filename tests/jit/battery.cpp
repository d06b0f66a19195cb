// The kernel battery (tests/battery/) on the CPU JIT: every case of the
// table compiled by the CPU backend and run on a CPU device with several
// threads, so that ranges are split between them as the runtime splits them.
#include <doctest/doctest.h>

#include <algorithm>
#include <thread>

#include <canopy/backends/cpu/cpu_device.hpp>

#include "battery/battery.hpp"
#include "scoped_setting.hpp"

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

// The same table with one point per SIMD lane (jit/internal/simd_lowering.hpp)
// for every kernel, straight-line ones included, at widths that leave
// remainders of every size: 2 and 4 lanes, 16 (two AVX-512 registers of
// floats, four of doubles) and 64 (wider than any CPU: LLVM splits it).
TEST_CASE("battery on the CPU JIT with SIMD across points") {
  canopy::testing::ScopedSetting simd("CANOPY_SIMD", "on");
  for (const char* lanes : {"2", "4", "16", "64"}) {
    CAPTURE(lanes);
    canopy::testing::ScopedSetting width("CANOPY_SIMD_WIDTH", lanes);
    for (const char* group : {"operators", "math", "control", "reductions", "shapes"})
      battery::run_group(group, std::string("CPU JIT, ") + lanes + " lanes",
                         [](const battery::Case& c) { return battery::run_on(device(), c); });
  }
}
