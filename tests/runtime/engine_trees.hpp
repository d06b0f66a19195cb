// Small trees of CPU leaves for the engine's end-to-end tests
// (tests/runtime/engine_*.cpp): every test builds the tree it means instead
// of depending on what discovery gives on the machine it runs on, and reads
// back where the pieces of its regions ran from rt.stats().
#pragma once

#include <doctest/doctest.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include <canopy/canopy.hpp>
#include <canopy/runtime/discovery.hpp>
#include <canopy/runtime/internal/engine_access.hpp>

#include "scoped_setting.hpp"

namespace canopy::engine_tests {

/// The first PU of each core of this machine, in hwloc's order (at least one).
inline const std::vector<unsigned>& core_pus() {
  static const std::vector<unsigned> pus = [] {
    std::vector<unsigned> found;
    for (const CoreInfo& core : discover_node().cores) found.push_back(core.pu);
    if (found.empty()) found.push_back(0);
    return found;
  }();
  return pus;
}

/// The PU of core `k`, wrapping around on machines with fewer cores (several
/// leaves may share a core).
inline unsigned core(std::size_t k) { return core_pus()[k % core_pus().size()]; }

/// Traits of a CPU leaf that runs one thread on each of `pus`.
inline LocationTraits cpu_on(std::vector<unsigned> pus) {
  LocationTraits traits;
  traits.cores = static_cast<int>(pus.size());
  traits.pus = std::move(pus);
  return traits;
}

/// node (virtual) -> numa0 (host memory) -> cpu0 on every core.
inline Hierarchy one_leaf_tree() {
  Hierarchy tree;
  tree.add("node", LocationKind::Virtual, {}, "");
  tree.add("numa0", LocationKind::HostMemory, {}, "node");
  tree.add("cpu0", LocationKind::Cpu, cpu_on(core_pus()), "numa0");
  return tree;
}

/// node (virtual) -> numa0 (host memory) -> cpuA on the first core, cpuB on the second.
inline Hierarchy two_leaf_tree() {
  Hierarchy tree;
  tree.add("node", LocationKind::Virtual, {}, "");
  tree.add("numa0", LocationKind::HostMemory, {}, "node");
  tree.add("cpuA", LocationKind::Cpu, cpu_on({core(0)}), "numa0");
  tree.add("cpuB", LocationKind::Cpu, cpu_on({core(1)}), "numa0");
  return tree;
}

/// Replaces the runtime's tree by `tree` (a reconfiguration like any other).
inline void use_tree(Runtime& rt, const Hierarchy& tree) {
  canopy::runtime::engine_of(rt).reconfigure([&](Hierarchy& h) { h = tree; });
}

/// "leaf[begin,end)" for each piece of a region, in order.
inline std::vector<std::string> pieces_of(const RegionStats& region) {
  std::vector<std::string> pieces;
  for (const PieceStats& piece : region.pieces)
    pieces.push_back(piece.leaf + "[" + std::to_string(piece.begin) + "," + std::to_string(piece.end) + ")");
  return pieces;
}

/// The most recent region the runtime launched.
inline RegionStats last_region(const Runtime& rt) {
  Stats stats = rt.stats();
  REQUIRE(!stats.recent.empty());
  return stats.recent.back();
}

using EnvironmentFor = canopy::testing::ScopedSetting;

/// The message of the canopy::Error `action` throws, or "no error".
template <class Action>
std::string error_of(Action&& action) {
  try {
    action();
  } catch (const Error& error) {
    return error.what();
  }
  return "no error";
}

}  // namespace canopy::engine_tests
