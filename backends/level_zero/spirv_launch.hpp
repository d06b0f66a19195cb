// The host side of the SPIR-V kernel ABI (jit/spirv.hpp): from a kernel, its
// arguments and a piece of the range, the list of kernel arguments in order
// and the work-group size and count of the launch; and, after a reduction
// kernel ran, the reductions' values from the work-groups' partial results.
// It calls no device API, so that the Level Zero device (which sets the
// arguments with zeKernelSetArgumentValue) and any other consumer of the
// same SPIR-V (the tests run it on an OpenCL device through clSetKernelArg)
// share one implementation of the ABI.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <canopy/backends/launch.hpp>
#include <canopy/ir/kernel.hpp>

namespace canopy::backends::level_zero {

/// One kernel argument as the ABI lays it out.
struct SpirvArgument {
  enum class Kind : std::uint8_t {
    Value,   ///< `bytes` by value (a scalar, an extent, a begin or end)
    Buffer,  ///< device memory: the handle `buffer`, passed by its address with size sizeof(void*)
    Local,   ///< work-group memory of `local_bytes`, passed with that size and no value
  };
  Kind kind = Kind::Value;
  std::vector<unsigned char> bytes;
  void* buffer = nullptr;
  std::size_t local_bytes = 0;
};

/// What a device (and the kernel compiled for it) can launch, and the sizes
/// Canopy aims for on it.
struct SpirvLaunchLimits {
  std::uint32_t max_group_size = 256;                            ///< work-items in one group
  std::array<std::uint32_t, 3> max_group_extent{256, 256, 256};  ///< per device dimension
  std::array<std::uint32_t, 3> max_group_count{0xffffffffu, 0xffffffffu, 0xffffffffu};
  std::size_t local_memory = 0;              ///< bytes of work-group memory; 0 when unknown
  std::uint32_t point_group_size = 256;      ///< work-items per group for kernels without reductions
  std::uint32_t reduction_group_size = 256;  ///< work-items per group for reductions (a power of two)
  std::uint32_t reduction_groups = 64;  ///< the most work-groups a reduction runs (its partial buffers hold as many)
};

/// One launch: the arguments in order, and the work-group size and count
/// per device dimension (dimension 0, X, is the kernel's last index).
struct SpirvLaunch {
  std::vector<SpirvArgument> arguments;
  std::uint32_t dims = 1;
  std::array<std::uint32_t, 3> group_size{1, 1, 1};
  std::array<std::uint32_t, 3> group_count{1, 1, 1};
  /// True for kernels with reductions: group_count[0] partial results per reduction.
  bool reduces = false;
};

/// Throws canopy::Error naming the kernel (and `device`) unless `args` fit
/// the kernel's parameters one by one, `range` has the kernel's dimensions
/// and no dimension begins below 0.
void check_launch(const ir::Kernel& kernel, const std::vector<KernelArg>& args, const Range& range,
                  const std::string& device);

/// The pieces a point kernel's `range` is launched in so that no launch
/// needs more work-groups in a dimension than the device allows: `range`
/// itself when it fits (always for reductions, whose group count is bounded
/// anyway), else consecutive slices of each dimension that does not, each
/// launched on its own with its begins and ends as arguments.
std::vector<Range> launch_pieces(const ir::Kernel& kernel, const Range& range, const SpirvLaunchLimits& limits);

/// The launch of `kernel` over the non-empty `range` (check_launch passed).
/// ArrayArg::data is the array's buffer handle; `partials[p]` is the buffer
/// for reduction parameter p's partial results, with room for
/// limits.reduction_groups elements (other entries are ignored). Throws
/// canopy::Error naming `device` when the piece needs more work-groups
/// than the device launches (pieces from launch_pieces never do).
SpirvLaunch plan_spirv_launch(const ir::Kernel& kernel, const std::vector<KernelArg>& args, const Range& range,
                              const std::vector<void*>& partials, const SpirvLaunchLimits& limits,
                              const std::string& device);

/// The bytes a scalar argument of parameter type `type` passes (bool as a
/// 32-bit 0 or 1; a value of another type converted as C++ would).
std::vector<unsigned char> scalar_argument_bytes(ir::ScalarType type, const ScalarArg& value);

/// One value per reduction parameter of `kernel` (in parameter order): the
/// partial results of `groups` work-groups, `partials[p]` holding
/// reduction p's as the device wrote them, combined in group order.
std::vector<ReductionValue> combine_partials(const ir::Kernel& kernel,
                                             const std::vector<std::vector<unsigned char>>& partials,
                                             std::uint32_t groups);

}  // namespace canopy::backends::level_zero
