// Where an array's host pages live on a machine with several NUMA nodes.
// An array placed at a NUMA node's memory location ("numa1"), or at a CPU
// leaf below one, has its pages bound to that node (mbind), moved there when
// the array moves to another such location; one placed higher is left to the
// kernel's first touch, so its pages go where the leaves that first write
// them run. Memory given with rt.wrap() and arrays under 64 KiB (which share
// pages with other allocations) are left as they are.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "discovery.hpp"
#include "hierarchy.hpp"

namespace canopy::runtime {

/// The operating system's number of the NUMA node an array placed at
/// `location` is bound to: the node of a host-memory location or of a CPU
/// leaf, where `node` knows it; nullopt for any other location (a grouping,
/// memory shared with devices, a device) and for a location not in `tree`.
std::optional<int> numa_node_for(const Hierarchy& tree, const NodeInventory& node, const std::string& location);

/// Binds the pages of `bytes` bytes from `data` (page-aligned) to NUMA node
/// `os_node`, moving those already touched; with a negative `os_node`, gives
/// them the process's default policy again. Returns empty text when it is
/// done, else why not (the system's error; the pages stay where they are).
std::string bind_pages(void* data, std::size_t bytes, int os_node);

/// The NUMA policy of the page at `address`, as get_mempolicy reports it:
/// the mode (MPOL_DEFAULT, MPOL_BIND, ...) and the lowest node of its mask
/// (-1 when the mask is empty); nullopt where the system does not say.
struct PagePolicy {
  int mode = 0;
  int node = -1;
};
std::optional<PagePolicy> page_policy(const void* address);

}  // namespace canopy::runtime
