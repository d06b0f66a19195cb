// Rank assignment: how the ranks of an MPI job that share one node divide its
// cores and devices, so that each rank builds a Runtime over its own part and
// no two ranks compete for a core or a device.
//
// It is a pure function of the node's inventory and of what each local rank
// asks for (its CANOPY_DEVICES value), so that tests can run it on hwloc's
// synthetic topologies and made-up devices; runtime/mpi/job.hpp calls it with
// the real inventory and the selections gathered from the node's ranks.
//
//   auto shares = assign_ranks(node, {"all", "all"});   // two ranks on `node`
//   Runtime rt(shares[local_rank].options());
//
// The rules:
//  - Cores go to the ranks that use CPU leaves (their selection has "all" or
//    "cpu"), in contiguous blocks of hwloc's logical order, so that a rank's
//    cores share caches and NUMA nodes as far as the node allows. Block sizes
//    differ by at most one. With more such ranks than cores, rank i gets core
//    i * cores / ranks alone, shared with the ranks that got the same core
//    (RankShare::shares_cores).
//  - Each device goes to one rank whose selection takes it, nearest first:
//    a rank left with nothing to run on comes first, then a rank with a core
//    on the device's NUMA node, then the rank with the fewest devices, then
//    the lowest local rank.
//  - A rank whose selection names a backend or a device id ("opencl",
//    "cuda:1") that matches devices on the node, but that got none of them,
//    shares the matching device held by the fewest ranks (nearest first);
//    so does a rank left with nothing at all. Such devices are listed in
//    RankShare::shared_devices: without overlap there would be a rank that
//    cannot run what it asked for.
#pragma once

#include <string>
#include <vector>

#include "discovery.hpp"
#include "engine.hpp"

namespace canopy {

/// One local rank's part of a node.
struct RankShare {
  int local_rank = 0;
  /// The processing units (hwloc OS indexes) its CPU leaves run on; empty
  /// when it runs no CPU leaves.
  std::vector<unsigned> pus;
  /// The devices it may use, by id ("opencl:0"), in inventory order.
  std::vector<std::string> device_ids;
  /// Another rank got one of its cores too (more ranks use CPU leaves than
  /// the node has cores).
  bool shares_cores = false;
  /// The ids of device_ids that another rank holds too.
  std::vector<std::string> shared_devices;

  /// The options to build this rank's Runtime with.
  runtime::RuntimeOptions options() const;
  /// "local rank 1: pus 2-3; devices opencl:1" (with "(shared)" where shared).
  std::string describe() const;
  bool operator==(const RankShare&) const = default;
};

/// The shares of the ranks of one node, one per entry of `selections` (each
/// rank's CANOPY_DEVICES value; empty means "all"), in local rank order. See
/// the file comment for the rules. A selection that does not parse or
/// matches nothing on the node takes nothing (the rank's own Runtime reports
/// it when it reads CANOPY_DEVICES).
std::vector<RankShare> assign_ranks(const NodeInventory& node, const std::vector<std::string>& selections);

/// The same for `local_ranks` ranks that all select "all".
std::vector<RankShare> assign_ranks(const NodeInventory& node, int local_ranks);

}  // namespace canopy
