// Shared by the OpenCL backend tests (tests/backends/opencl_*.cpp): the
// OpenCL device they run on, and a harness that runs one kernel through the
// Device API on that device and on the CPU device (backends::cpu::CpuDevice)
// with the same inputs, so that an OpenCL result can be checked against what
// Canopy's CPU code computes. Arguments are the battery's (tests/battery/).
//
// Where this machine has no OpenCL platform, device() is null and each test
// is skipped, saying so (tests/common/skip.hpp): a failure where
// CANOPY_TEST_REQUIRE_OPENCL=1.
#pragma once

#include <doctest/doctest.h>

#include <array>
#include <cstring>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include <canopy/backends/cpu/cpu_device.hpp>
#include <canopy/backends/opencl/opencl_device.hpp>
#include <canopy/ir/passes/optimize.hpp>

#include "battery/battery.hpp"
#include "common/skip.hpp"

namespace opencl_test {

using battery::HostArg;
using battery::HostArray;
using battery::i32;
using battery::i64;
using battery::optimized;
using battery::range_of;
using battery::Results;
using battery::SameArrayAs;
using battery::scalar;
using battery::values_of;
using canopy::backends::ArrayArg;
using canopy::backends::Range;
using canopy::backends::ReductionArg;
using canopy::backends::ReductionValue;
using canopy::backends::ScalarArg;
using canopy::ir::ScalarType;

/// The OpenCL devices of this machine (no disk cache: each test process
/// builds its own programs), found once.
inline const canopy::backends::BackendDevices& found() {
  static const canopy::backends::BackendDevices devices = canopy::backends::opencl::discover_opencl({"", "off"});
  return devices;
}

/// The device the tests run on: the first OpenCL device, or null.
inline canopy::backends::opencl::OpenCLDevice* device() {
  return found().devices.empty() ? nullptr
                                 : static_cast<canopy::backends::opencl::OpenCLDevice*>(found().devices[0].get());
}

/// Skips the running test, saying there is no OpenCL device (a failure
/// where CANOPY_TEST_REQUIRE_OPENCL=1).
inline void skip_without_opencl() {
  canopy_test::skip("no OpenCL device on this machine (" + found().absent_reason + ")", canopy_test::Needs::OpenCL);
}

/// Declares `name` as the test device, or skips the test saying why there is none.
#define OPENCL_DEVICE_OR_SKIP(name)     \
  auto* name = opencl_test::device();   \
  if (!name) {                          \
    opencl_test::skip_without_opencl(); \
    return;                             \
  }

/// Runs `kernel` on the CPU device (one thread) over `range`.
inline Results run_on_cpu(const std::shared_ptr<const canopy::ir::Kernel>& kernel, const std::vector<HostArg>& args,
                          const Range& range) {
  static canopy::backends::cpu::CpuDevice cpu("cpu-reference", {});
  const auto program = cpu.compile(kernel);
  Results results;
  results.arrays.resize(args.size());
  std::vector<canopy::backends::KernelArg> launch;
  for (std::size_t p = 0; p < args.size(); ++p) {
    if (const auto* array = std::get_if<HostArray>(&args[p])) {
      results.arrays[p] = *array;
      launch.push_back(ArrayArg{results.arrays[p].bytes.data(), results.arrays[p].extents});
    } else if (const auto* scalar = std::get_if<ScalarArg>(&args[p])) {
      launch.push_back(*scalar);
    } else if (const auto* same = std::get_if<SameArrayAs>(&args[p])) {
      launch.push_back(launch.at(static_cast<std::size_t>(same->param)));
    } else {
      launch.push_back(ReductionArg{});
    }
  }
  results.reductions = cpu.run(*program, launch, range);
  return results;
}

/// Runs `kernel` on the OpenCL device over `range`: buffers allocated and
/// filled from the host arrays, the kernel run, the buffers read back.
inline Results run_on_opencl(canopy::backends::opencl::OpenCLDevice& device,
                             const std::shared_ptr<const canopy::ir::Kernel>& kernel, const std::vector<HostArg>& args,
                             const Range& range) {
  return battery::run_program(device, *device.compile(kernel), args, range);
}

/// How closely the OpenCL results must match the CPU's.
struct Tolerance {
  /// Per argument position: the largest distance in ulp for a float array
  /// (arguments not listed must match exactly).
  std::vector<std::pair<int, std::uint64_t>> ulp;
  /// Per reduction (in order): the largest absolute difference allowed
  /// (reductions not listed must match exactly).
  std::vector<std::pair<int, double>> reduction;
};

template <class T>
std::uint64_t distance_of(T cpu, T got) {
  if constexpr (std::is_floating_point_v<T>)
    return battery::ulp_distance(cpu, got);
  else
    return cpu == got ? 0 : ~std::uint64_t{0};
}

/// The largest distance between the elements of two arrays of one type
/// (ulp for floats; 0 or "infinite" otherwise), and where it is.
template <class T>
std::pair<std::uint64_t, i64> worst_distance(const HostArray& cpu, const HostArray& got, std::string& example) {
  const auto want = cpu.values<T>(), have = got.values<T>();
  std::uint64_t worst = 0;
  i64 at = -1;
  for (std::size_t k = 0; k < want.size(); ++k) {
    const auto d = distance_of<battery::host_t<T>>(want[k], have[k]);
    if (d > worst) {
      worst = d;
      at = static_cast<i64>(k);
      example =
          "element " + std::to_string(k) + ": OpenCL " + battery::show(have[k]) + ", CPU " + battery::show(want[k]);
    }
  }
  return {worst, at};
}

/// Checks every array of `got` against `cpu` within `tolerance`.
inline void check_arrays(const Results& cpu, const Results& got, const Tolerance& tolerance, const std::string& what) {
  REQUIRE(cpu.arrays.size() == got.arrays.size());
  for (std::size_t p = 0; p < cpu.arrays.size(); ++p) {
    const HostArray& want = cpu.arrays[p];
    if (want.bytes.empty()) continue;
    std::uint64_t allowed = 0;
    for (auto [param, ulp] : tolerance.ulp)
      if (param == static_cast<int>(p)) allowed = ulp;
    std::string example;
    std::pair<std::uint64_t, i64> worst;
    switch (want.type) {
      case ScalarType::Bool: worst = worst_distance<bool>(want, got.arrays[p], example); break;
      case ScalarType::I32: worst = worst_distance<i32>(want, got.arrays[p], example); break;
      case ScalarType::I64: worst = worst_distance<i64>(want, got.arrays[p], example); break;
      case ScalarType::F32: worst = worst_distance<float>(want, got.arrays[p], example); break;
      case ScalarType::F64: worst = worst_distance<double>(want, got.arrays[p], example); break;
    }
    INFO(what, ", argument ", p, ": largest difference ", worst.first, " (allowed ", allowed, ") at ", example);
    CHECK(worst.first <= allowed);
  }
}

/// Checks the reductions of `got` against `cpu` within `tolerance`.
inline void check_reductions(const Results& cpu, const Results& got, const Tolerance& tolerance,
                             const std::string& what) {
  REQUIRE(cpu.reductions.size() == got.reductions.size());
  for (std::size_t r = 0; r < cpu.reductions.size(); ++r) {
    const auto& want = cpu.reductions[r];
    const auto& have = got.reductions[r];
    CHECK(have.type == want.type);
    double allowed = 0;
    for (auto [index, bound] : tolerance.reduction)
      if (index == static_cast<int>(r)) allowed = bound;
    if (canopy::ir::is_float(want.type)) {
      const bool both_nan = std::isnan(want.float_value) && std::isnan(have.float_value);
      INFO(what, ", reduction ", r, ": OpenCL ", battery::show(have.float_value), ", CPU ",
           battery::show(want.float_value), " (allowed difference ", allowed, ")");
      CHECK((both_nan || want.float_value == have.float_value ||
             std::fabs(want.float_value - have.float_value) <= allowed));
    } else {
      INFO(what, ", reduction ", r);
      CHECK(have.int_value == want.int_value);
    }
  }
}

/// Runs `kernel` over `range` on both devices and checks that the OpenCL
/// device computes what the CPU does (within `tolerance`). Returns both results.
inline std::pair<Results, Results> compare(canopy::backends::opencl::OpenCLDevice& device,
                                           const canopy::KernelBase& kernel, const std::vector<HostArg>& args,
                                           const Range& range, const Tolerance& tolerance = {},
                                           const std::string& what = "") {
  const auto ir = optimized(kernel);
  const std::string label = kernel.name() + (what.empty() ? "" : " " + what);
  Results cpu = run_on_cpu(ir, args, range);
  Results got = run_on_opencl(device, ir, args, range);
  check_arrays(cpu, got, tolerance, label);
  check_reductions(cpu, got, tolerance, label);
  return {std::move(cpu), std::move(got)};
}

}  // namespace opencl_test
