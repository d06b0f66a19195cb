// The kernel battery: one table of kernels, written once and run on every
// backend (tests/jit/battery.cpp on the CPU JIT, tests/backends/
// opencl_battery.cpp on OpenCL, level_zero_spirv_pocl.cpp as SPIR-V on
// PoCL, cuda_device_battery.cpp on a CUDA device, the emulated one of
// tests/emulate/cuda/ included; cuda_battery.cpp and
// level_zero_spirv_validate.cpp compile every kernel of it). Before there
// was one table, the battery was written four times and kept in step by
// hand.
//
// A case is a kernel (after the IR's optimization pipeline, as backends get
// it), its arguments, the index range it runs over (whole ranges of many
// lengths and shapes, and pieces that do not start at 0), and what it must
// give:
//   - the reference: the IR's reference interpreter (ir/interpreter.hpp) run
//     on the same arguments. It shares no code with the code generators.
//   - the tolerance: the interpreter's own, value by value, as
//     docs/ir-semantics.md allows (exact for integers, bool and exactly
//     rounded float operations; ulps for math functions and f32 division;
//     the summation bound for float sums and atomic adds in another order).
//   - closed-form checks on some cases: values written out by hand (x / 0 is
//     0, abs(MIN) is MIN, a loop to the top of its type stops there).
// Every element of every array (those a piece does not touch included) and
// every reduction is compared.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include <canopy/backends/device.hpp>
#include <canopy/backends/launch.hpp>
#include <canopy/ir/kernel.hpp>

#include "battery/inputs.hpp"

namespace battery {

using canopy::backends::Range;
using canopy::backends::ReductionArg;
using canopy::backends::ReductionValue;
using canopy::backends::ScalarArg;
using canopy::ir::ScalarType;

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
    array.bytes.resize(values.size() * canopy::ir::size_of(array.type));
    for (std::size_t k = 0; k < values.size(); ++k) {
      const auto value = static_cast<host_t<T>>(values[k]);
      std::memcpy(array.bytes.data() + k * sizeof value, &value, sizeof value);
    }
    return array;
  }
  /// `count` elements of T set to `value`.
  template <class T>
  static HostArray filled(i64 count, T value, std::array<i64, 3> extents = {-1, 1, 1}, int rank = 1) {
    return of<T>(std::vector<host_t<T>>(static_cast<std::size_t>(count), value), extents, rank);
  }
  /// The elements as T.
  template <class T>
  std::vector<host_t<T>> values() const {
    std::vector<host_t<T>> out(bytes.size() / sizeof(host_t<T>));
    // An empty vector's data() may be null, which memcpy must not be given.
    if (!out.empty()) std::memcpy(out.data(), bytes.data(), out.size() * sizeof(host_t<T>));
    return out;
  }
};

/// The elements of `array` as T (a free function: no `.template` in templates).
template <class T>
std::vector<host_t<T>> values_of(const HostArray& array) {
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
Range range_of(std::initializer_list<i64> begin, std::initializer_list<i64> end);
/// The range [0, n).
Range range_of(i64 n);

/// A scalar argument.
template <class T>
ScalarArg scalar(T value) {
  return canopy::backends::scalar_arg(value);
}

/// The kernel as the backends get it: after the IR's optimization pipeline.
std::shared_ptr<const canopy::ir::Kernel> optimized(const canopy::KernelBase& kernel);

/// One row of the table.
struct Case {
  std::string group;  ///< "operators", "math", "control", "reductions" or "shapes"
  std::string what;   ///< "<kernel> over <range>"
  std::shared_ptr<const canopy::ir::Kernel> kernel;
  std::vector<HostArg> args;
  Range range;
  /// Values written out by hand, checked on a backend's results (may be empty).
  std::function<void(const Results&)> closed_form;
};

/// The groups of the table, in order.
const std::vector<std::string>& groups();
/// Every case of the table, built once per process.
const std::vector<Case>& cases();
/// The distinct kernels of the table, in order of first appearance.
std::vector<std::shared_ptr<const canopy::ir::Kernel>> kernels();

/// Runs `c` on `device` through the Device API: buffers allocated and filled
/// from the case's arrays, the kernel compiled and run, the buffers read back.
Results run_on(canopy::backends::Device& device, const Case& c);
/// Runs `kernel` over `range` on `device` the same way, with a program
/// `device` compiled already.
Results run_program(canopy::backends::Device& device, const canopy::backends::Program& program,
                    const std::vector<HostArg>& args, const Range& range);

/// Checks `got` (what `backend` computed for `c`) against the reference and
/// the case's closed-form checks; returns how many values it compared
/// exactly or within a tolerance (values the reference calls unsure, which
/// any value matches, are not counted).
i64 check(const Case& c, const Results& got, const std::string& backend);

/// Runs every case of `group` with `run` and checks it; checks that the
/// group has cases and that they compared values. Returns how many ran.
int run_group(const std::string& group, const std::string& backend, const std::function<Results(const Case&)>& run);

}  // namespace battery
