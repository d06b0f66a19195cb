// Access footprint: which part of every array parameter a kernel reads and
// writes, as a function of the point of the index range it runs.
//
// Why it exists: the runtime splits a kernel's index range over devices along
// dimension 0 (index(0), the outermost) and must copy to each device only the
// rows its piece reads (for a stencil: its own rows plus the halo) and mark
// valid only the rows it writes. The cost model counts bytes per iteration
// from the same record (streaming, strided, stencil or gather).
//
// For every array parameter and every array dimension, separately for reads
// (Loads) and writes (Stores and AtomicAdds), the analysis classifies the index
// expression used in that dimension:
//  - Affine: index = sum_d coeff[d] * index(d) + offset, where the offset lies
//    in [lo, hi] over all sites (and all loop iterations). Offsets come from
//    integer literals and arithmetic on them, from counted For loops whose
//    bounds are affine with equal coefficients (`for k in 0..3` gives [0, 2],
//    `for k in i..i+3` gives i+[0, 2]), and from bounded operators (a compare
//    is in [0, 1], `x & 7` in [0, 7], `x % 4` in [-3, 3]). Locals declared once
//    and never assigned are looked through.
//  - Whole: the index depends on something the analysis cannot bound that is
//    not read from memory: a scalar parameter, an extent, a loop with bounds
//    of different shapes, a reassigned local, non-affine arithmetic (i*i, i/2),
//    or sites of one dimension whose coefficients differ.
//  - DataDependent: as Whole, and the unbounded part involves a Load (a gather
//    or scatter like a[idx[i]]), directly or through locals and loop bounds.
//
// Assumptions, shared with the runtime: index(d) is never negative, and
// integer index arithmetic does not wrap for the points of the range (an i32
// offset outside i32's range, or any overflow in the analysis's own
// arithmetic, makes the dimension Whole instead).
#pragma once

#include <fmt/ostream.h>

#include <array>
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "../kernel.hpp"

namespace canopy::ir {

/// How the index of one array dimension depends on the kernel's index.
enum class IndexPattern : std::uint8_t {
  Affine,         ///< sum_d coeff[d] * index(d) + [lo, hi]
  Whole,          ///< unbounded, not read from memory: the whole extent may be touched
  DataDependent,  ///< unbounded and computed from array contents (gather/scatter)
};

/// "affine", "whole", "data-dependent".
std::string_view name_of(IndexPattern pattern);

/// The positions one array dimension may take. For Affine: coeff[d] multiplies
/// index(d) (0 for index dims the kernel does not have) and the offset lies in
/// [lo, hi]. For Whole and DataDependent, coeff is all zero and lo = hi = 0.
struct DimFootprint {
  IndexPattern pattern = IndexPattern::Whole;
  std::array<std::int64_t, 3> coeff{};
  std::int64_t lo = 0;
  std::int64_t hi = 0;

  bool is_affine() const { return pattern == IndexPattern::Affine; }
  /// Affine with every coefficient zero: the same positions for every point.
  bool is_invariant() const { return is_affine() && coeff == std::array<std::int64_t, 3>{}; }

  static DimFootprint affine(std::array<std::int64_t, 3> coeff, std::int64_t lo, std::int64_t hi);
  static DimFootprint whole();
  static DimFootprint data_dependent();

  bool operator==(const DimFootprint&) const = default;
};

/// What one kind of access (reads, or writes) does to one array.
struct AccessFootprint {
  bool present = false;            ///< at least one site
  std::vector<DimFootprint> dims;  ///< one per array dimension (the array's rank); empty when !present
  int sites = 0;                   ///< Loads (each distinct node once) or Store/AtomicAdd statements
  /// True when present and no site is under an If, nor in a For loop that may
  /// run zero times: every point surely performs every site's access.
  bool unconditional = false;
  bool atomic = false;   ///< writes only: some site is an AtomicAdd (read-modify-write)
  int atomic_sites = 0;  ///< writes only: how many of the sites are AtomicAdds
  /// The sites every point performs (not under an If, nor in a loop that may
  /// run zero times), each as one DimFootprint per array dimension, without
  /// repeats. A dimension that is Affine with lo == hi is exactly the position
  /// the site touches at every point, so a range that takes it outside the
  /// array surely faults (the runtime refuses such a launch). A site in a
  /// loop whose counter takes both ends of its interval at every point (`b[j]`
  /// for j in 0..200) is there twice, with the dimension at each end.
  std::vector<std::vector<DimFootprint>> sure_sites;

  /// True when present and every site is an AtomicAdd.
  bool only_atomic() const { return present && atomic_sites == sites; }

  bool operator==(const AccessFootprint&) const = default;
};

/// Reads and writes of one array parameter.
struct ArrayFootprint {
  int param = 0;     ///< position in Kernel::params
  std::string name;  ///< the parameter's name, for printing
  AccessFootprint reads;
  AccessFootprint writes;
};

/// One ArrayFootprint per array parameter of a kernel, in parameter order
/// (arrays the kernel never touches are there too, with nothing present).
struct Footprint {
  std::vector<ArrayFootprint> arrays;

  /// The footprint of parameter `param`; null when it is not an array parameter.
  const ArrayFootprint* of(int param) const;
};

/// True when `access` is present and every one of its sites is at the
/// point's own element: one dimension per index dim, index(d) in dimension d,
/// offset 0, and none an atomic add. Only the point itself then touches that
/// element this way.
bool at_own_point(const AccessFootprint& access, int dims);

/// Analyses every array parameter of `kernel`. Never throws for a kernel that
/// verifies; malformed pieces of one that does not are treated as Whole.
Footprint footprint_of(const Kernel& kernel);

/// Analyses one array parameter. Throws canopy::Error when `param` is not the
/// position of an array parameter of `kernel`.
ArrayFootprint footprint_of(const Kernel& kernel, int param);

/// What one launch gives a kernel that its footprint may depend on: the value
/// of each integer (or bool) scalar parameter and the extents of each array
/// parameter, indexed by parameter position, and the extents of the range
/// (every index(d) lies in [0, range[d])); a missing or empty entry is not
/// known.
struct LaunchValues {
  std::vector<std::optional<std::int64_t>> scalars;
  std::vector<std::vector<std::int64_t>> extents;
  std::vector<std::int64_t> range;

  bool operator==(const LaunchValues&) const = default;
};

/// The footprint of one launch: as footprint_of(kernel), with every scalar
/// parameter and extent that `values` knows taken as the constant it is at
/// that launch. `out[i + k]` with k = 3 is then i0+3, `a[extent(0) - 1 - i]`
/// over 100 elements -i0+99, and a loop `for j in 0..m` counted: what was
/// Whole becomes Affine. As sound as the analysis of the same kernel traced
/// with those values as literals.
Footprint footprint_of(const Kernel& kernel, const LaunchValues& values);

/// The scalar parameters and extents (parameter, dimension) that the
/// footprint of `kernel` depends on: those the analysis looks at while
/// bounding an index; and whether the launch's range does (`range`: an index
/// clamped to a bound, x[min(i + 1, n - 1)], is bounded by how far the
/// range's indices reach). All empty when no launch value can change it.
struct FootprintInputs {
  std::vector<int> scalars;
  std::vector<std::pair<int, int>> extents;
  bool range = false;

  bool empty() const { return scalars.empty() && extents.empty() && !range; }
};
FootprintInputs footprint_inputs(const Kernel& kernel);

/// A half-open range of positions [begin, end); empty ranges are {0, 0}.
struct Interval {
  std::int64_t begin = 0;
  std::int64_t end = 0;

  bool empty() const { return begin >= end; }
  std::int64_t size() const { return empty() ? 0 : end - begin; }
  bool operator==(const Interval&) const = default;
};

/// The positions along array dimension `dim` that a piece of work covering
/// index(0) in [begin, end) (every other index dim over its full range) may
/// touch, clamped to [0, extent). For an Affine dimension that depends on
/// index(0) alone (a coefficient of any sign) or on no index, this is exactly
/// the smallest interval holding every position touched inside [0, extent):
/// b[2*i] gives [2*begin, 2*end-1), a[99-i] gives [100-end, 100-begin). It is
/// the full extent for Whole, DataDependent, and Affine dimensions with a
/// non-zero coefficient on index(1) or index(2). It is empty ({0, 0}) when the
/// access is not present, the piece is empty, extent <= 0, or every position
/// falls outside the array. The arithmetic is exact for all int64 inputs.
/// Throws canopy::Error when `dim` is not a dimension of a present access.
Interval rows_touched(const AccessFootprint& access, int dim, std::int64_t begin, std::int64_t end,
                      std::int64_t extent);

/// One dimension in text form: "i0+[-1,1]", "2*i0+1", "-i0+99", "i1", "3",
/// "[0,2]", "whole", "data-dependent".
std::string describe(const DimFootprint& dim);
/// One access: "dim0 i0+[-1,1] dim1 i1".
std::string describe(const AccessFootprint& access);
/// One line per array parameter, named as in `kernel`, e.g.
/// "a: read dim0 i0+[-1,1] dim1 i1+[-1,1]; written dim0 i0 dim1 i1".
/// Writes are "written conditionally" when some write site is conditional and
/// "written atomically" when some site is an AtomicAdd; an array with no
/// access is "a: unused".
std::string describe(const Footprint& footprint, const Kernel& kernel);
/// As above for one array, named by its own `name`.
std::string describe(const ArrayFootprint& array);

std::ostream& operator<<(std::ostream& out, IndexPattern pattern);
std::ostream& operator<<(std::ostream& out, const DimFootprint& dim);
std::ostream& operator<<(std::ostream& out, const AccessFootprint& access);
std::ostream& operator<<(std::ostream& out, const Interval& interval);  ///< "[begin,end)"
/// The footprint as describe() writes it, arrays named by their stored names.
std::ostream& operator<<(std::ostream& out, const Footprint& footprint);

}  // namespace canopy::ir

/// fmt::format("{}", x) gives what operator<< writes.
template <>
struct fmt::formatter<canopy::ir::IndexPattern> : fmt::ostream_formatter {};
template <>
struct fmt::formatter<canopy::ir::DimFootprint> : fmt::ostream_formatter {};
template <>
struct fmt::formatter<canopy::ir::AccessFootprint> : fmt::ostream_formatter {};
template <>
struct fmt::formatter<canopy::ir::Interval> : fmt::ostream_formatter {};
template <>
struct fmt::formatter<canopy::ir::Footprint> : fmt::ostream_formatter {};
