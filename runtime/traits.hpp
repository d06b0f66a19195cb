// Memory traits: where an array lives and how it may be used. Gecko places
// memory by location name or by distance from where the work runs; Canopy
// adds lifetime, read-only and a merge operator for concurrent writers.
//
//   auto a = rt.array<double>(n, at("node"));
//   auto t = rt.array<double>(n, close());
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>

#include <canopy/ir/kernel.hpp>

namespace canopy {

/// How long an array's contents live.
enum class Lifetime : std::uint8_t {
  Persistent,  ///< from creation until the last handle is gone (the default)
  PerRegion,   ///< Gecko's realloc: memory is released after each region; contents start at zero in each
  Moving,      ///< Gecko's move: placed where the region using it runs, and follows the work
};

struct MemoryTraits {
  /// The location the array is placed at; empty with a distance, or for the
  /// hierarchy's root.
  std::string location;
  /// Placed by distance from where a region runs: 0 is `close()`, n is `far(n)`.
  std::optional<int> distance;
  Lifetime lifetime = Lifetime::Persistent;
  /// Kernels may only read it (an Out or InOut parameter refuses it).
  bool read_only = false;
  /// A name for messages, statistics and dumps.
  std::string name;
  /// Location consistency: several leaves of one region may write the array,
  /// each into a private copy starting at the operator's identity; the copies
  /// are combined with the operator into the array at the next pause (or the
  /// next use). CPU leaves combine into the array itself, so kernels must
  /// only combine into it (ir/analysis/merge_updates.hpp says how; a launch
  /// that does otherwise is refused), on disjoint elements unless atomically.
  std::optional<ir::ReduceOp> merge;
  /// Its elements start undefined instead of zero (Kokkos'
  /// WithoutInitializing): nothing is written when it is made, so its pages
  /// are first touched, and placed, by whatever writes them first.
  bool uninitialized = false;

  /// Combines the traits of two calls: `at("numa0") | read_only()`; the right
  /// side wins where both say something.
  MemoryTraits operator|(const MemoryTraits& other) const;
};

/// The array lives at `location` (visible there and below).
MemoryTraits at(std::string location);
/// The array lives at whatever location the region that uses it runs at.
MemoryTraits close();
/// The array lives `levels` above the location where the region runs.
MemoryTraits far(int levels);
/// Contents live for one region only: memory is given back after it, and each
/// region's pieces, on every leaf, start from zeros. Not for rt.wrap() (the
/// memory is the program's), which refuses it.
MemoryTraits per_region();
/// The array follows the work: each region places it where it runs.
MemoryTraits moving();
/// Regions may only read the array.
MemoryTraits read_only();
/// The array's elements start undefined rather than zero: for arrays the
/// program fills itself (through host(), or with a first region that writes
/// every element), which then pay no zero fill. Reading an element before
/// anything wrote it gives an unspecified value (never undefined behaviour).
MemoryTraits uninitialized();
/// Names the array in messages, statistics and dumps.
MemoryTraits named(std::string name);
/// The operators a merged array combines its copies with.
using MergeOp = ir::ReduceOp;
/// Several leaves may write the array in one region; their copies are
/// combined with `op` (MergeOp::Sum, Min, Max).
MemoryTraits merge(MergeOp op);

std::string_view name_of(Lifetime lifetime);  ///< "persistent", "per_region", "moving"

std::ostream& operator<<(std::ostream& out, const MemoryTraits& traits);

}  // namespace canopy
