// Kernel cost: what one point of a kernel's index range costs, read from the
// IR alone: weighted floating-point operations, integer operations, and the
// bytes it moves between the last-level cache and DRAM. Their ratio is the
// kernel's operational intensity (flop/byte), the x axis of a roofline.
//
// Why it exists: the runtime splits a region over leaves of different speed
// and picks a leaf for `any`. It predicts a leaf's time for a piece as
// max(flops / compute rate, bytes / bandwidth) + launch latency
// (runtime/machine_model.hpp), so it needs per-point flops and bytes that are
// right to within tens of percent for the kernels people write: streams,
// strided walks, stencils, gathers, reductions and short loops.
//
//   ir::KernelCost c = ir::cost_of(kernel);          // per point
//   double seconds = c.bytes() * points / bandwidth;  // a bandwidth-bound estimate
//   std::cout << ir::describe_cost(kernel, c);        // what CANOPY_DUMP=cost writes
//
// ## Operations
// Every statement is counted once per point, loops multiplied by their trip
// counts (below), an If by its condition plus the costlier of its two
// branches (an If without else counts its body: guards are usually taken).
// An expression node shared within one statement is counted once (the code
// generators keep shared subtrees in registers). Float operations, weighted
// by OpWeights, go to flops_f32 / flops_f64: + - * neg, min max abs floor,
// comparisons of floats, / and the math functions with their weights, the
// combine of a float Reduce or AtomicAdd. Operations on integers and bools
// (index arithmetic, comparisons, logic) are int_ops, one each, plus two per
// loop trip (increment and test). Casts and selects count nothing. Loads
// (each distinct Load node of a statement once) and stores (with atomic
// adds) are counted as issued, loops and Ifs as above, in `loads` and
// `stores`; the bytes they move from DRAM are counted apart (below).
//
// ## Loop trip counts
// max(0, ceil((end - begin) / step)) when the bounds evaluate to numbers:
// literals, scalar parameters and array extents the caller supplies
// (CostOptions), index(d) and enclosing loop counters at the middle of their
// range (so a triangular `for k in 0..i` counts its average trip count), and
// locals declared once and never assigned. Otherwise the caller's
// trip_counts[var], else default_trip_count.
//
// ## Bytes (per array parameter, reads and writes separately)
// From the access footprint (footprint.hpp), which joins all sites of one
// array into one pattern per array dimension. Points are visited with the
// last index dimension fastest (index(dims-1): the CPU loop's inner
// iteration, the work-item id 0 of the device backends). With e the element
// size and L the line size (CostOptions::line_bytes), per point:
//  - gather (some dimension data-dependent, a[idx[i]]): a line (L) for every
//    execution of an access site;
//  - the innermost array dimension moves by c elements per point (stride c):
//    |c|*e when |c|*e <= L or the accessed offsets of neighbouring points
//    overlap or touch (a stencil's neighbours along that dimension hit in
//    cache, so a[i-1] + a[i] + a[i+1] costs e), else the lines the window
//    [lo, hi] covers (a[16*i] on doubles costs one 64-byte line);
//  - an outer array dimension that moves by c rows per step of its index
//    multiplies that by min(|c|, width) when the rows it touches are reused
//    by the next step (the 2-D 5-point stencil reads each input row once:
//    e per point), else by its width; one moved by the fastest index (a
//    column walk, a[j][i] with j fastest) costs the lines of one row window
//    per point; one that no index moves (a loop over rows, b[k][j]) multiplies
//    by its width (each row is a separate stream);
//  - an access no array dimension of which moves with the fastest index is
//    reused by consecutive points: its cost per step of the next slower index
//    it depends on, divided by the extents of the faster index dimensions
//    (known: CostOptions::range; unknown: taken as large, so ~0);
//  - a dimension whose index is unbounded but not data-dependent ("whole":
//    a flattened a[i*n + j], a loop bound from a scalar) is costed as if it
//    walked contiguously: e per execution of an access site in the innermost
//    dimension; the executions per site (at least 1, at most its extent
//    when known) as the row factor of an outer one;
//  - an array whose whole size is known and fits in cache_bytes costs at most
//    its size once per launch (spread over the points);
//  - write-allocate: the lines an array's writes touch that its loads do
//    not also read are read first (an Out array, or an InOut one never
//    loaded, reads what it writes), unless write_allocate is off or the
//    array takes streaming stores (streaming_stores set, written only, in the
//    streaming pattern); an atomic add always reads what it writes.
// Reductions and scalars move no bytes. Nothing models TLBs, prefetchers
// fetching extra lines, or page zeroing on first touch.
#pragma once

#include <fmt/ostream.h>

#include <array>
#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "../kernel.hpp"

namespace canopy::ir {

/// What one operation counts as, in flops. + - * neg min max abs floor and
/// float comparisons count 1; the rest are weighted by their rough cost in
/// multiply-adds on vector hardware.
struct OpWeights {
  double add = 1;      ///< + - and unary neg
  double mul = 1;      ///< *
  double div = 4;      ///< / and float % (fmod)
  double min_max = 1;  ///< min, max
  double compare = 1;  ///< a comparison of floats
  double sqrt = 4;
  double exp = 10;
  double log = 10;
  double sin = 15;
  double cos = 15;
  double pow = 25;
  double abs = 1;
  double floor = 1;
  double fma = 1;  ///< one fused multiply-add
};

/// What the caller knows about a launch; everything is optional.
struct CostOptions {
  /// Bytes of a cache line (64 on x86 CPUs; 32 or 128 on some GPUs).
  int line_bytes = 64;
  /// A store to a line not in cache first reads the line (x86, most GPUs for partial lines).
  bool write_allocate = true;
  /// The code writes its write-only arrays of streaming pattern with
  /// streaming (non-temporal) stores, which skip the allocating read.
  bool streaming_stores = false;
  /// Trip count of a loop whose bounds do not evaluate to numbers.
  double default_trip_count = 16;
  /// Trip counts by loop variable name; they win over the bounds and the default.
  std::map<std::string, double> trip_counts;
  /// The launch's index extents per dimension (0: unknown).
  std::array<std::int64_t, 3> range{};
  /// Array extents by parameter position (row-major, one per array dimension).
  std::map<int, std::vector<std::int64_t>> array_extents;
  /// Values of scalar parameters by parameter position (for loop bounds).
  std::map<int, double> scalar_values;
  /// Bytes of cache one leaf's stream of points can keep (last-level share);
  /// 0: unknown, then only reuse between neighbouring points and rows is
  /// credited (see the top of this file).
  double cache_bytes = 0;
  OpWeights weights;
};

/// How one array's accesses of one kind (reads or writes) move through memory.
enum class AccessPattern : std::uint8_t {
  None,       ///< no access
  Streaming,  ///< unit stride along the fastest index
  Strided,    ///< a stride of more than one element along the fastest index
  Stencil,    ///< neighbouring offsets (a window wider than one element) that hit in cache
  Column,     ///< an outer array dimension moves with the fastest index: a line per point
  Reused,     ///< does not move with the fastest index: amortised over consecutive points
  Gather,     ///< data-dependent index: a line per access
  Unbounded,  ///< an index the footprint cannot bound (costed as contiguous)
};

/// "none", "streaming", "strided", "stencil", "column", "reused", "gather", "unbounded".
std::string_view name_of(AccessPattern pattern);

/// One array parameter's share of a kernel's bytes per point.
struct ArrayCost {
  int param = 0;     ///< position in Kernel::params
  std::string name;  ///< the parameter's name
  AccessPattern read_pattern = AccessPattern::None;
  AccessPattern write_pattern = AccessPattern::None;
  double bytes_read = 0;       ///< loads, including the allocating read below
  double bytes_written = 0;    ///< stores and atomic adds
  double allocating_read = 0;  ///< part of bytes_read: lines read only because they are written
};

/// What one point of a kernel's index range costs.
struct KernelCost {
  double flops = 0;          ///< weighted float operations, f32 and f64 together
  double flops_f32 = 0;      ///< the part on f32 values
  double flops_f64 = 0;      ///< the part on f64 values
  double int_ops = 0;        ///< integer and bool operations, loop overhead included
  double bytes_read = 0;     ///< DRAM to cache, per point
  double bytes_written = 0;  ///< cache to DRAM, per point
  /// Element loads the code issues per point, wherever they hit: each
  /// distinct Load of a statement once, loops multiplied by their trips (the
  /// machine model's third ceiling: the rate a core issues loads and stores).
  double loads = 0;
  double stores = 0;              ///< element stores and atomic adds issued per point
  std::vector<ArrayCost> arrays;  ///< one per array parameter, in parameter order

  /// bytes_read + bytes_written.
  double bytes() const { return bytes_read + bytes_written; }
  /// loads + stores.
  double accesses() const { return loads + stores; }
  /// flops per byte; +infinity for a kernel that moves no bytes, 0 when it
  /// does neither.
  double intensity() const;
  /// A few lines: flops (by type), int ops, loads and stores, bytes,
  /// intensity, then one line per array that moves bytes with its patterns.
  std::string describe() const;
};

/// The cost of one point of `kernel` (see the top of this file). Never throws
/// for a kernel that verifies; malformed parts of one that does not cost
/// nothing or are treated as unbounded.
KernelCost cost_of(const Kernel& kernel, const CostOptions& options = {});

/// What CANOPY_DUMP=cost writes for a kernel: "kernel NAME (dims D): " and
/// cost.describe().
std::string describe_cost(const Kernel& kernel, const KernelCost& cost);

std::ostream& operator<<(std::ostream& out, AccessPattern pattern);
/// Writes cost.describe().
std::ostream& operator<<(std::ostream& out, const KernelCost& cost);

}  // namespace canopy::ir

/// fmt::format("{}", cost) gives cost.describe().
template <>
struct fmt::formatter<canopy::ir::KernelCost> : fmt::ostream_formatter {};
template <>
struct fmt::formatter<canopy::ir::AccessPattern> : fmt::ostream_formatter {};
