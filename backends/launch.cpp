#include "launch.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>

#include <canopy/ir/error.hpp>
#include <canopy/ir/settings.hpp>

namespace canopy::backends {

std::int64_t Range::points() const {
  std::int64_t n = 1;
  for (int d = 0; d < dims; ++d) n *= std::max<std::int64_t>(0, end[d] - begin[d]);
  return n;
}

ReductionValue partial_value(ir::ScalarType type, const unsigned char* bytes) {
  ReductionValue value;
  value.type = type;
  switch (type) {
    case ir::ScalarType::Bool: value.int_value = bytes[0] != 0; break;
    case ir::ScalarType::I32: {
      std::int32_t x;
      std::memcpy(&x, bytes, sizeof x);
      value.int_value = x;
      break;
    }
    case ir::ScalarType::I64: std::memcpy(&value.int_value, bytes, sizeof(std::int64_t)); break;
    case ir::ScalarType::F32: {
      float x;
      std::memcpy(&x, bytes, sizeof x);
      value.float_value = x;
      break;
    }
    case ir::ScalarType::F64: std::memcpy(&value.float_value, bytes, sizeof(double)); break;
  }
  return value;
}

ReductionValue identity_value(ir::ReduceOp op, ir::ScalarType type) {
  const ir::Expr identity = ir::identity_of(op, type);  // kept alive: `c` refers into it
  const auto& c = identity->as<ir::Const>();
  ReductionValue v;
  v.type = type;
  v.int_value = c.int_value;
  v.float_value = c.float_value;
  return v;
}

ReductionValue combine(ir::ReduceOp op, const ReductionValue& a, const ReductionValue& b) {
  ReductionValue r = a;
  if (ir::is_float(a.type)) {
    double x = a.float_value, y = b.float_value;
    double z = op == ir::ReduceOp::Sum ? x + y : op == ir::ReduceOp::Min ? std::fmin(x, y) : std::fmax(x, y);
    r.float_value = a.type == ir::ScalarType::F32 ? static_cast<double>(static_cast<float>(z)) : z;
  } else {
    auto x = a.int_value, y = b.int_value;
    std::int64_t z;
    if (op == ir::ReduceOp::Sum) {
      z = static_cast<std::int64_t>(static_cast<std::uint64_t>(x) + static_cast<std::uint64_t>(y));
      if (a.type == ir::ScalarType::I32) z = static_cast<std::int32_t>(static_cast<std::uint32_t>(z));
    } else {
      z = op == ir::ReduceOp::Min ? std::min(x, y) : std::max(x, y);
    }
    r.int_value = z;
  }
  return r;
}

std::size_t streaming_threshold_for_cache(std::size_t cache_bytes) {
  return cache_bytes ? 2 * cache_bytes : std::size_t{64} << 20;
}

std::size_t streaming_threshold_from_environment(std::size_t automatic) {
  const std::string& value = settings().streaming_stores;  // "", auto, on or off (settings.hpp checks)
  if (value == "on") return 0;
  if (value == "off") return std::numeric_limits<std::size_t>::max();
  return automatic;
}

bool takes_streaming_stores(std::size_t written, std::size_t passed, std::size_t threshold) {
  if (written == 0 || threshold == std::numeric_limits<std::size_t>::max()) return false;
  return passed >= threshold && written >= threshold / 16;
}

namespace {

// bytes_passed with `elements(p)` the elements of array parameter p.
template <class Elements>
std::size_t passed_through(const ir::Kernel& kernel, std::int64_t points, const Elements& elements) {
  std::size_t bytes = 0;
  for (std::size_t p = 0; p < kernel.params.size(); ++p) {
    const auto& param = kernel.params[p];
    if (!param.is_array()) continue;
    const std::int64_t count = param.rank == kernel.dims ? points : elements(p);
    bytes += static_cast<std::size_t>(std::max<std::int64_t>(count, 0)) * ir::size_of(param.type);
  }
  return bytes;
}

}  // namespace

std::size_t bytes_passed(const ir::Kernel& kernel, std::int64_t points, const std::vector<std::int64_t>& elements) {
  return passed_through(kernel, points,
                        [&](std::size_t p) { return p < elements.size() ? elements[p] : std::int64_t{0}; });
}

std::size_t bytes_passed(const ir::Kernel& kernel, std::int64_t points, const std::vector<KernelArg>& args) {
  return passed_through(kernel, points, [&](std::size_t p) {
    const auto* array = p < args.size() ? std::get_if<ArrayArg>(&args[p]) : nullptr;
    if (!array) return std::int64_t{0};
    std::int64_t count = 1;
    for (int d = 0; d < kernel.params[p].rank; ++d) count *= array->extents[static_cast<std::size_t>(d)];
    return count;
  });
}

}  // namespace canopy::backends
