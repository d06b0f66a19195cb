#include "spirv_launch.hpp"

#include <algorithm>
#include <cstring>
#include <variant>

#include <canopy/ir/error.hpp>

namespace canopy::backends::level_zero {

namespace {

std::uint32_t floor_pow2(std::uint64_t n) {
  std::uint32_t p = 1;
  while (p <= n / 2 && p < (1u << 31)) p *= 2;
  return p;
}

template <class T>
std::vector<unsigned char> bytes_of(const T& value) {
  std::vector<unsigned char> out(sizeof value);
  std::memcpy(out.data(), &value, sizeof value);
  return out;
}

SpirvArgument value_argument(std::vector<unsigned char> bytes) {
  SpirvArgument argument;
  argument.kind = SpirvArgument::Kind::Value;
  argument.bytes = std::move(bytes);
  return argument;
}

SpirvArgument buffer_argument(void* buffer) {
  SpirvArgument argument;
  argument.kind = SpirvArgument::Kind::Buffer;
  argument.buffer = buffer;
  return argument;
}

}  // namespace

std::vector<unsigned char> scalar_argument_bytes(ir::ScalarType type, const ScalarArg& arg) {
  const double as_float = ir::is_float(arg.type) ? arg.float_value : static_cast<double>(arg.int_value);
  const std::int64_t as_int = ir::is_float(arg.type) ? static_cast<std::int64_t>(arg.float_value) : arg.int_value;
  switch (type) {
    case ir::ScalarType::Bool: return bytes_of(static_cast<std::int32_t>(as_int != 0 || as_float != 0.0));
    case ir::ScalarType::I32: return bytes_of(static_cast<std::int32_t>(as_int));
    case ir::ScalarType::I64: return bytes_of(as_int);
    case ir::ScalarType::F32: return bytes_of(static_cast<float>(as_float));
    case ir::ScalarType::F64: return bytes_of(as_float);
  }
  return {};
}

void check_launch(const ir::Kernel& kernel, const std::vector<KernelArg>& args, const Range& range,
                  const std::string& device) {
  if (args.size() != kernel.params.size())
    throw Error("kernel '" + kernel.name + "' takes " + std::to_string(kernel.params.size()) + " arguments, " +
                std::to_string(args.size()) + " were given");
  for (std::size_t p = 0; p < args.size(); ++p) {
    const auto& param = kernel.params[p];
    const bool fits = param.is_array()    ? std::holds_alternative<ArrayArg>(args[p])
                      : param.is_scalar() ? std::holds_alternative<ScalarArg>(args[p])
                                          : std::holds_alternative<ReductionArg>(args[p]);
    if (!fits)
      throw Error("argument " + std::to_string(p) + " of kernel '" + kernel.name + "' does not fit its " +
                  std::string(ir::name_of(param.kind)) + " parameter '" + param.name + "'");
    if (param.is_array() && !std::get<ArrayArg>(args[p]).data)
      throw Error("array argument '" + param.name + "' of kernel '" + kernel.name + "' has no buffer on " + device);
  }
  if (range.dims != kernel.dims)
    throw Error("kernel '" + kernel.name + "' has " + std::to_string(kernel.dims) + " index dimensions, the range " +
                std::to_string(range.dims));
  for (int d = 0; d < kernel.dims; ++d)
    if (range.begin[d] < 0)
      throw Error(device + " runs index ranges from 0 up; kernel '" + kernel.name + "' was given a range starting at " +
                  std::to_string(range.begin[d]) + " in dimension " + std::to_string(d));
}

namespace {

// Bytes of scratch memory one work-item of a reduction kernel needs (0: no reductions).
std::size_t scratch_per_item(const ir::Kernel& kernel) {
  std::size_t bytes = 0;
  for (const auto& param : kernel.params)
    if (param.is_reduction()) bytes += ir::size_of(param.type);
  return bytes;
}

// The work-group size per device dimension of a point kernel over `range`,
// and how many groups each dimension needs (which may exceed the device's
// limit: launch_pieces splits such ranges).
struct PointGeometry {
  std::array<std::uint32_t, 3> size{1, 1, 1};
  std::array<std::uint64_t, 3> count{1, 1, 1};
};

PointGeometry point_geometry(const Range& range, const SpirvLaunchLimits& limits) {
  PointGeometry geometry;
  const std::uint32_t most = std::max<std::uint32_t>(1, limits.max_group_size);
  std::uint32_t budget = floor_pow2(std::min(std::max<std::uint32_t>(1, limits.point_group_size), most));
  for (int e = 0; e < range.dims; ++e) {
    const int d = range.dims - 1 - e;  // device dimension e is index dimension d
    const auto extent = static_cast<std::uint64_t>(std::max<std::int64_t>(0, range.end[d] - range.begin[d]));
    std::uint32_t size = std::min(budget, floor_pow2(std::max<std::uint32_t>(1, limits.max_group_extent[e])));
    // In more than one dimension, no wider than the piece (and at most 64
    // along the fastest), so that thin pieces do not waste work-items.
    if (range.dims > 1) size = std::min({size, floor_pow2(extent), e == 0 ? 64u : size});
    geometry.size[e] = std::max<std::uint32_t>(1, size);
    budget = std::max<std::uint32_t>(1, budget / geometry.size[e]);
    geometry.count[e] = (extent + geometry.size[e] - 1) / geometry.size[e];
  }
  return geometry;
}

}  // namespace

std::vector<Range> launch_pieces(const ir::Kernel& kernel, const Range& range, const SpirvLaunchLimits& limits) {
  if (scratch_per_item(kernel) > 0 || range.empty()) return {range};
  const PointGeometry geometry = point_geometry(range, limits);
  // The most points of each index dimension one launch covers.
  std::array<std::int64_t, 3> most{1, 1, 1};
  for (int e = 0; e < range.dims; ++e) {
    const int d = range.dims - 1 - e;
    const std::uint64_t groups = std::max<std::uint32_t>(1, limits.max_group_count[e]);
    most[d] = static_cast<std::int64_t>(std::min<std::uint64_t>(groups * geometry.size[e], std::uint64_t{1} << 62));
  }
  std::vector<Range> pieces{range};
  for (int d = 0; d < range.dims; ++d) {
    std::vector<Range> split;
    for (const Range& piece : pieces)
      for (std::int64_t begin = piece.begin[d]; begin < piece.end[d]; begin += most[d]) {
        Range part = piece;
        part.begin[d] = begin;
        part.end[d] = std::min(piece.end[d], begin + most[d]);
        split.push_back(part);
      }
    pieces = std::move(split);
  }
  return pieces;
}

SpirvLaunch plan_spirv_launch(const ir::Kernel& kernel, const std::vector<KernelArg>& args, const Range& range,
                              const std::vector<void*>& partials, const SpirvLaunchLimits& limits,
                              const std::string& device) {
  SpirvLaunch launch;
  const std::size_t scratch = scratch_per_item(kernel);
  launch.reduces = scratch > 0;

  // The work-group geometry first: reductions size their scratch by it.
  if (launch.reduces) {
    const std::uint32_t most = std::max<std::uint32_t>(1, limits.max_group_size);
    std::uint64_t size = std::min({limits.reduction_group_size, most, limits.max_group_extent[0]});
    if (limits.local_memory > 0) size = std::min<std::uint64_t>(size, limits.local_memory / scratch);
    launch.group_size = {floor_pow2(std::max<std::uint64_t>(1, size)), 1, 1};
    const auto points = static_cast<std::uint64_t>(range.points());
    const std::uint64_t needed = (points + launch.group_size[0] - 1) / launch.group_size[0];
    const std::uint32_t allowed =
        std::max<std::uint32_t>(1, std::min(limits.reduction_groups, limits.max_group_count[0]));
    launch.group_count = {static_cast<std::uint32_t>(std::clamp<std::uint64_t>(needed, 1, allowed)), 1, 1};
  } else {
    launch.dims = static_cast<std::uint32_t>(range.dims);
    const PointGeometry geometry = point_geometry(range, limits);
    launch.group_size = geometry.size;
    for (int e = 0; e < range.dims; ++e) {
      if (geometry.count[e] > limits.max_group_count[e])
        throw Error("kernel '" + kernel.name + "' over " +
                    std::to_string(range.end[range.dims - 1 - e] - range.begin[range.dims - 1 - e]) +
                    " points in dimension " + std::to_string(range.dims - 1 - e) + " needs " +
                    std::to_string(geometry.count[e]) + " work-groups of " + std::to_string(geometry.size[e]) +
                    ", more than the " + std::to_string(limits.max_group_count[e]) + " that " + device +
                    " launches at once; launch it in the pieces launch_pieces gives (a Canopy bug if it did)");
      launch.group_count[e] = static_cast<std::uint32_t>(geometry.count[e]);
    }
  }

  for (std::size_t p = 0; p < kernel.params.size(); ++p) {
    const ir::Param& param = kernel.params[p];
    if (param.is_array()) {
      const auto& array = std::get<ArrayArg>(args[p]);
      launch.arguments.push_back(buffer_argument(array.data));
      for (int d = 0; d < param.rank; ++d)
        launch.arguments.push_back(value_argument(bytes_of(array.extents[static_cast<std::size_t>(d)])));
      launch.arguments.push_back(value_argument(bytes_of(array.first)));
    } else if (param.is_scalar()) {
      launch.arguments.push_back(value_argument(scalar_argument_bytes(param.type, std::get<ScalarArg>(args[p]))));
    } else {
      if (p >= partials.size() || !partials[p])
        throw Error("reduction '" + param.name + "' of kernel '" + kernel.name + "' has no partial-result buffer on " +
                    device + " (a Canopy bug)");
      launch.arguments.push_back(buffer_argument(partials[p]));
      SpirvArgument scratch;
      scratch.kind = SpirvArgument::Kind::Local;
      scratch.local_bytes = launch.group_size[0] * ir::size_of(param.type);
      launch.arguments.push_back(std::move(scratch));
    }
  }
  for (int d = 0; d < kernel.dims; ++d) {
    launch.arguments.push_back(value_argument(bytes_of(range.begin[d])));
    launch.arguments.push_back(value_argument(bytes_of(range.end[d])));
  }
  return launch;
}

std::vector<ReductionValue> combine_partials(const ir::Kernel& kernel,
                                             const std::vector<std::vector<unsigned char>>& partials,
                                             std::uint32_t groups) {
  std::vector<ReductionValue> results;
  for (std::size_t p = 0; p < kernel.params.size(); ++p) {
    const ir::Param& param = kernel.params[p];
    if (!param.is_reduction()) continue;
    const std::size_t size = ir::size_of(param.type);
    if (p >= partials.size() || partials[p].size() < groups * size)
      throw Error("the partial results of reduction '" + param.name + "' of kernel '" + kernel.name +
                  "' are missing (a Canopy bug)");
    ReductionValue total = identity_value(param.reduce, param.type);
    for (std::uint32_t g = 0; g < groups; ++g)
      total = combine(param.reduce, total, partial_value(param.type, partials[p].data() + g * size));
    results.push_back(total);
  }
  return results;
}

}  // namespace canopy::backends::level_zero
