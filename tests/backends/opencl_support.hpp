// Shared by the OpenCL backend tests (tests/backends/opencl_*.cpp): the
// OpenCL device they run on, and a harness that runs one kernel through the
// Device API on that device and on the CPU device (backends::cpu::CpuDevice)
// with the same inputs, so that every OpenCL result is checked against what
// Canopy's CPU code computes. Inputs come from the JIT battery's generators
// (tests/jit/battery_support.hpp): edge values of every type, then random ones.
//
// Where this machine has no OpenCL platform, device() is null and each test
// says why with a MESSAGE and passes without checking anything.
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

#include "jit/battery_support.hpp"

namespace opencl_test {

using battery::i32;
using battery::i64;
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

/// Declares `name` as the test device, or ends the test with a message
/// saying why there is none.
#define OPENCL_DEVICE_OR_SKIP(name)                                                                      \
  auto* name = opencl_test::device();                                                                    \
  if (!name) {                                                                                           \
    MESSAGE("skipped: no OpenCL device on this machine (" << opencl_test::found().absent_reason << ")"); \
    return;                                                                                              \
  }

/// The values of one array argument as bytes, with the array's element type and extents.
struct HostArray {
  ScalarType type = ScalarType::F64;
  int rank = 1;
  std::array<i64, 3> extents{0, 1, 1};
  std::vector<unsigned char> bytes;

  i64 size() const { return extents[0] * extents[1] * extents[2]; }

  /// An array of T holding `values` (bool as one byte per element).
  template <class T, class V>
  static HostArray of(const std::vector<V>& values, std::array<i64, 3> extents = {-1, 1, 1}, int rank = 1) {
    HostArray array;
    array.type = canopy::ir::scalar_type_of<T>();
    array.rank = rank;
    array.extents = extents;
    if (array.extents[0] < 0) array.extents[0] = static_cast<i64>(values.size());
    REQUIRE(array.size() == static_cast<i64>(values.size()));
    array.bytes.resize(values.size() * canopy::ir::size_of(array.type));
    for (std::size_t k = 0; k < values.size(); ++k) {
      const auto value = static_cast<battery::host_t<T>>(values[k]);
      std::memcpy(array.bytes.data() + k * sizeof value, &value, sizeof value);
    }
    return array;
  }
  /// `count` elements of T set to `value`.
  template <class T>
  static HostArray filled(i64 count, T value, std::array<i64, 3> extents = {-1, 1, 1}, int rank = 1) {
    return of<T>(std::vector<battery::host_t<T>>(static_cast<std::size_t>(count), value), extents, rank);
  }
  /// The elements as T.
  template <class T>
  std::vector<battery::host_t<T>> values() const {
    std::vector<battery::host_t<T>> out(bytes.size() / sizeof(battery::host_t<T>));
    // An empty vector's data() may be null, which memcpy must not be given.
    if (!out.empty()) std::memcpy(out.data(), bytes.data(), out.size() * sizeof(battery::host_t<T>));
    return out;
  }
};

/// The elements of `array` as T (a free function: no `.template` in templates).
template <class T>
std::vector<battery::host_t<T>> values_of(const HostArray& array) {
  return array.values<T>();
}

/// An array argument that is the same array as argument `param` (an array
/// passed twice, say as Out and In).
struct SameArrayAs {
  int param = 0;
};

using HostArg = std::variant<HostArray, ScalarArg, ReductionArg, SameArrayAs>;

/// What one run left: every argument's array after the run (empty for
/// scalars and reductions), and the reductions' values.
struct Results {
  std::vector<HostArray> arrays;
  std::vector<ReductionValue> reductions;
};

/// A range of `dims` dimensions from `begin` to `end`.
inline Range range_of(std::initializer_list<i64> begin, std::initializer_list<i64> end) {
  Range range;
  range.dims = static_cast<int>(begin.size());
  std::copy(begin.begin(), begin.end(), range.begin.begin());
  std::copy(end.begin(), end.end(), range.end.begin());
  return range;
}
/// The range [0, n).
inline Range range_of(i64 n) { return range_of({0}, {n}); }

/// The kernel as the backends get it: after the IR's optimization pipeline.
inline std::shared_ptr<const canopy::ir::Kernel> optimized(const canopy::KernelBase& kernel) {
  return std::make_shared<const canopy::ir::Kernel>(canopy::ir::optimize(kernel.ir()));
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
  const auto program = device.compile(kernel);
  Results results;
  results.arrays.resize(args.size());
  std::vector<canopy::backends::Buffer> buffers(args.size());
  std::vector<canopy::backends::KernelArg> launch;
  for (std::size_t p = 0; p < args.size(); ++p) {
    if (const auto* array = std::get_if<HostArray>(&args[p])) {
      buffers[p] = device.allocate(array->bytes.size());
      device.copy_in(buffers[p], 0, array->bytes.data(), array->bytes.size());
      launch.push_back(ArrayArg{buffers[p].handle, array->extents});
      results.arrays[p] = *array;
    } else if (const auto* scalar = std::get_if<ScalarArg>(&args[p])) {
      launch.push_back(*scalar);
    } else if (const auto* same = std::get_if<SameArrayAs>(&args[p])) {
      launch.push_back(launch.at(static_cast<std::size_t>(same->param)));
    } else {
      launch.push_back(ReductionArg{});
    }
  }
  try {
    results.reductions = device.run(*program, launch, range);
  } catch (...) {
    for (auto& buffer : buffers) device.free(buffer);
    throw;
  }
  for (std::size_t p = 0; p < args.size(); ++p) {
    if (!buffers[p]) continue;
    device.copy_out(buffers[p], 0, results.arrays[p].bytes.data(), results.arrays[p].bytes.size());
    device.free(buffers[p]);
  }
  return results;
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

/// A scalar argument.
template <class T>
ScalarArg scalar(T value) {
  return canopy::backends::scalar_arg(value);
}

}  // namespace opencl_test
