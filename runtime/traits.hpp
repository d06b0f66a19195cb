// Memory traits: where an array lives and how it may be used. Gecko places
// memory by location name or by distance from where the work runs; Canopy
// adds lifetime, read-only and a merge operator for concurrent writers.
//
//   auto a = rt.array<double>(n, at("node"));
//   auto t = rt.array<double>(n, close());
#pragma once

#include <optional>
#include <ostream>
#include <string>

#include <canopy/ir/kernel.hpp>

namespace canopy {

struct MemoryTraits {
  /// The location the array is placed at; empty with a distance, or for the
  /// hierarchy's root.
  std::string location;
  /// Placed by distance from where a region runs: 0 is `close()`, n is `far(n)`.
  std::optional<int> distance;

  /// Combines the traits of two calls: `at("numa0") | read_only()`.
  MemoryTraits operator|(const MemoryTraits& other) const;
};

/// The array lives at `location` (visible there and below).
MemoryTraits at(std::string location);
/// The array lives at whatever location the region that uses it runs at.
MemoryTraits close();
/// The array lives `levels` above the location where the region runs.
MemoryTraits far(int levels);

std::ostream& operator<<(std::ostream& out, const MemoryTraits& traits);

}  // namespace canopy
