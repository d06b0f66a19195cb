// Launch bounds: refuses, before anything runs, a region whose range takes an
// access that every point performs outside its array.
//
// Why it exists: without CANOPY_CHECK=bounds the generated code does not test
// indices, so `o[i] = x[i + 1]` over one point more than x holds reads and
// writes past the arrays and corrupts memory that the program only notices
// later, if at all. An access that every point performs (not under an If,
// which may guard it as hotspot's edges do, nor in a loop that may not run)
// at a position affine in the index with one constant offset (or with a
// counter of a loop of fixed bounds, which reaches both its ends; or with a
// scalar argument or extent, taken at its launch's value) reaches exactly
// the positions the footprint says, so the range alone decides whether it
// leaves the array. Guarded accesses, gathers and scatters stay with
// CANOPY_CHECK=bounds. The check is a few multiplications per such access,
// made from the footprint the engine computes once per kernel.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include <canopy/ir/analysis/footprint.hpp>
#include <canopy/ir/kernel.hpp>

#include "engine.hpp"
#include "shape.hpp"

namespace canopy::runtime {

/// The positions one array dimension takes at every point: sum over d of
/// coeff[d] * index(d), plus each offset in [lowest, highest] (both taken by
/// some access every point performs).
struct SureAccess {
  int param = 0;
  bool write = false;
  int dim = 0;
  std::array<std::int64_t, 3> coeff{};
  std::int64_t lowest = 0;
  std::int64_t highest = 0;
};

/// The accesses of `footprint` whose positions every point surely touches,
/// one entry per array, direction, dimension and coefficients.
std::vector<SureAccess> sure_accesses_of(const ir::Footprint& footprint);

/// Throws canopy::Error when a region of `kernel` over `range` with `args`
/// (checked against the kernel's parameters already) would take one of
/// `accesses` outside its array, naming the kernel, the array, the positions
/// it would touch and the array's extent. Nothing for an empty range.
void check_launch_bounds(const ir::Kernel& kernel, const std::vector<SureAccess>& accesses, const Shape& range,
                         const std::vector<ArgRef>& args);

}  // namespace canopy::runtime
