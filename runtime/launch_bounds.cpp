#include "launch_bounds.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include <canopy/ir/error.hpp>

namespace canopy::runtime {

namespace {

__extension__ typedef __int128 Wide;

// A position for a message (clamped: a range of 2^62 points times a large
// coefficient leaves int64).
long long printable(Wide x) {
  return static_cast<long long>(
      std::clamp<Wide>(x, std::numeric_limits<long long>::min(), std::numeric_limits<long long>::max()));
}

// The entry of `accesses` for this array, direction, dimension and coefficients.
SureAccess& entry_for(std::vector<SureAccess>& accesses, int param, bool write, int dim,
                      const std::array<std::int64_t, 3>& coeff, std::int64_t offset) {
  for (auto& a : accesses)
    if (a.param == param && a.write == write && a.dim == dim && a.coeff == coeff) return a;
  accesses.push_back(SureAccess{param, write, dim, coeff, offset, offset});
  return accesses.back();
}

void add_sites(std::vector<SureAccess>& accesses, int param, bool write, const ir::AccessFootprint& access) {
  for (const auto& site : access.sure_sites)
    for (std::size_t dim = 0; dim < site.size(); ++dim) {
      const ir::DimFootprint& position = site[dim];
      if (!position.is_affine() || position.lo != position.hi) continue;
      auto& entry = entry_for(accesses, param, write, static_cast<int>(dim), position.coeff, position.lo);
      entry.lowest = std::min(entry.lowest, position.lo);
      entry.highest = std::max(entry.highest, position.lo);
    }
}

[[noreturn, gnu::cold]] void refuse(const ir::Kernel& kernel, const SureAccess& access, const ArrayStorage& array,
                                    const Shape& range, Wide first, Wide last) {
  const std::int64_t extent = array.shape()[access.dim];
  const std::string where = array.shape().rank() > 1 ? fmt::format(" along dimension {}", access.dim) : "";
  throw Error(fmt::format(
      "kernel '{}' {} parameter {}, {}, at positions {} to {}{} over the region's range {}, but the array's "
      "extent{} is {}; launch the region over a range the array holds, make the array larger, or guard the "
      "access with If",
      kernel.name, access.write ? "writes" : "reads", kernel.describe_param(static_cast<std::size_t>(access.param)),
      array.describe(), printable(first), printable(last), where, range.to_string(), where, extent));
}

}  // namespace

std::vector<SureAccess> sure_accesses_of(const ir::Footprint& footprint) {
  std::vector<SureAccess> accesses;
  for (const auto& array : footprint.arrays) {
    add_sites(accesses, array.param, false, array.reads);
    add_sites(accesses, array.param, true, array.writes);
  }
  return accesses;
}

void check_launch_bounds(const ir::Kernel& kernel, const std::vector<SureAccess>& accesses, const Shape& range,
                         const std::vector<ArgRef>& args) {
  if (accesses.empty() || range.size() == 0) return;
  for (const auto& access : accesses) {
    const auto* storage = std::get_if<std::shared_ptr<ArrayStorage>>(&args[static_cast<std::size_t>(access.param)]);
    if (!storage) continue;
    Wide first = access.lowest, last = access.highest;
    for (int d = 0; d < range.rank(); ++d) {
      const Wide reach = Wide{access.coeff[static_cast<std::size_t>(d)]} * (range[d] - 1);
      (reach < 0 ? first : last) += reach;
    }
    const std::int64_t extent = (*storage)->shape()[access.dim];
    if (first < 0 || last >= extent) refuse(kernel, access, **storage, range, first, last);
  }
}

}  // namespace canopy::runtime
