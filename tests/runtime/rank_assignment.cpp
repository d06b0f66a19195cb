// Rank assignment: the ranks of an MPI job that share a node divide its cores
// and devices without overlap (disjoint), leave nothing out (complete), and
// take the devices nearest to their cores (nearest first), on hwloc's
// synthetic topologies with made-up devices.
#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include <canopy/ir/error.hpp>
#include <canopy/runtime/rank_assignment.hpp>

using namespace canopy;

namespace {

DiscoveredDevice device_near(LocationKind kind, int index, int numa, bool on_host_cores = false) {
  DiscoveredDevice device;
  device.kind = kind;
  device.index = index;
  device.id = std::string(name_of(kind)) + ":" + std::to_string(index);
  device.name = "made up";
  device.numa_node = numa;
  device.on_host_cores = on_host_cores;
  return device;
}

/// Node A: 2 packages x 2 NUMA nodes x 4 cores of 2 PUs, and three GPUs.
NodeInventory node_a() {
  NodeInventory node = discover_node_synthetic("pack:2 numa:2 core:4 pu:2");
  node.devices = {device_near(LocationKind::Cuda, 0, 3), device_near(LocationKind::Cuda, 1, 0),
                  device_near(LocationKind::OpenCL, 0, 1)};
  return node;
}

/// Node B: one NUMA node, two L3 domains of 4 cores, and one GPU.
NodeInventory node_b() {
  NodeInventory node = discover_node_synthetic("pack:1 numa:1 l3:2 core:4 pu:2");
  node.devices = {device_near(LocationKind::LevelZero, 0, 0)};
  return node;
}

std::vector<unsigned> all_pus(const NodeInventory& node) {
  std::vector<unsigned> pus;
  for (const CoreInfo& core : node.cores) pus.push_back(core.pu);
  return pus;
}

// Every core and every device goes to exactly one rank, none shared.
void check_disjoint_and_complete(const NodeInventory& node, const std::vector<RankShare>& shares) {
  std::vector<unsigned> pus;
  std::vector<std::string> devices;
  for (const RankShare& share : shares) {
    CHECK_FALSE(share.shares_cores);
    CHECK(share.shared_devices.empty());
    CHECK_FALSE(share.pus.empty());
    pus.insert(pus.end(), share.pus.begin(), share.pus.end());
    devices.insert(devices.end(), share.device_ids.begin(), share.device_ids.end());
  }
  std::sort(pus.begin(), pus.end());
  CHECK(pus == all_pus(node));  // each PU once: disjoint and complete
  std::sort(devices.begin(), devices.end());
  std::vector<std::string> expected;
  for (const auto& d : node.devices) expected.push_back(d.id);
  std::sort(expected.begin(), expected.end());
  CHECK(devices == expected);
}

std::set<int> numa_of(const NodeInventory& node, const RankShare& share) {
  std::set<int> numa;
  for (const CoreInfo& core : node.cores)
    if (std::count(share.pus.begin(), share.pus.end(), core.pu)) numa.insert(core.numa_node);
  return numa;
}

}  // namespace

TEST_CASE("rank assignment: four ranks on node A take one NUMA node each, and the GPU on it") {
  const NodeInventory node = node_a();
  const auto shares = assign_ranks(node, 4);
  REQUIRE(shares.size() == 4);
  check_disjoint_and_complete(node, shares);
  for (int r = 0; r < 4; ++r) {
    CHECK(shares[r].local_rank == r);
    CHECK(numa_of(node, shares[r]) == std::set<int>{r});
    CHECK(shares[r].pus.size() == 4);
  }
  // Nearest first: each device to the rank whose cores are on its NUMA node.
  CHECK(shares[0].device_ids == std::vector<std::string>{"cuda:1"});
  CHECK(shares[1].device_ids == std::vector<std::string>{"opencl:0"});
  CHECK(shares[2].device_ids.empty());
  CHECK(shares[3].device_ids == std::vector<std::string>{"cuda:0"});
  CHECK(shares[3].describe() == "local rank 3: pus 24,26,28,30; devices cuda:0");
  const auto options = shares[1].options();
  CHECK(options.pus == shares[1].pus);
  REQUIRE(options.device_ids.has_value());
  CHECK(*options.device_ids == std::vector<std::string>{"opencl:0"});
}

TEST_CASE("rank assignment: two ranks on node A take a package each, with the GPUs near it") {
  const NodeInventory node = node_a();
  const auto shares = assign_ranks(node, 2);
  check_disjoint_and_complete(node, shares);
  CHECK(numa_of(node, shares[0]) == std::set<int>{0, 1});
  CHECK(numa_of(node, shares[1]) == std::set<int>{2, 3});
  CHECK(shares[0].device_ids == std::vector<std::string>{"cuda:1", "opencl:0"});
  CHECK(shares[1].device_ids == std::vector<std::string>{"cuda:0"});
}

TEST_CASE("rank assignment: node B split 3 ways in blocks of 2, 3 and 3 cores") {
  const NodeInventory node = node_b();
  const auto shares = assign_ranks(node, 3);
  REQUIRE(shares.size() == 3);
  CHECK(shares[0].pus.size() == 2);
  CHECK(shares[1].pus.size() == 3);
  CHECK(shares[2].pus.size() == 3);
  // The one GPU: every rank is near it, so the lowest rank gets it.
  CHECK(shares[0].device_ids == std::vector<std::string>{"level_zero:0"});
  CHECK(shares[1].device_ids.empty());
  CHECK(shares[2].device_ids.empty());
  std::vector<unsigned> pus;
  for (const auto& s : shares) pus.insert(pus.end(), s.pus.begin(), s.pus.end());
  std::sort(pus.begin(), pus.end());
  CHECK(pus == all_pus(node));
  // Blocks follow hwloc's logical order: rank 0 has the first two cores.
  CHECK(shares[0].pus == std::vector<unsigned>{node.cores[0].pu, node.cores[1].pu});
}

TEST_CASE("rank assignment: every layout and rank count is disjoint and complete") {
  for (const char* layout :
       {"pack:2 numa:2 core:4 pu:2", "pack:1 numa:1 l3:2 core:4 pu:2", "pack:2 numa:1 core:3 pu:1"}) {
    for (int ranks = 1; ranks <= 6; ++ranks) {
      CAPTURE(layout);
      CAPTURE(ranks);
      NodeInventory node = discover_node_synthetic(layout);
      node.devices = {device_near(LocationKind::Cuda, 0, 0), device_near(LocationKind::Cuda, 1, 1)};
      const auto shares = assign_ranks(node, ranks);
      check_disjoint_and_complete(node, shares);
      // Block sizes differ by at most one.
      std::size_t smallest = node.cores.size(), largest = 0;
      for (const auto& s : shares) {
        smallest = std::min(smallest, s.pus.size());
        largest = std::max(largest, s.pus.size());
      }
      CHECK(largest - smallest <= 1);
    }
  }
}

TEST_CASE("rank assignment: a CPU rank and two OpenCL ranks on a two-core node (PoCL devices)") {
  NodeInventory node = discover_node_synthetic("pack:1 numa:1 core:2 pu:1");
  node.devices = {device_near(LocationKind::OpenCL, 0, 0, true), device_near(LocationKind::OpenCL, 1, 0, true)};
  const auto shares = assign_ranks(node, {"cpu", "opencl", "opencl"});
  CHECK(shares[0].pus == std::vector<unsigned>{0, 1});
  CHECK(shares[0].device_ids.empty());
  CHECK(shares[1].pus.empty());
  CHECK(shares[1].device_ids == std::vector<std::string>{"opencl:0"});
  CHECK(shares[2].pus.empty());
  CHECK(shares[2].device_ids == std::vector<std::string>{"opencl:1"});
  for (const auto& s : shares) {
    CHECK(s.shared_devices.empty());
    CHECK_FALSE(s.shares_cores);
  }
  // Two ranks that both ask for a CPU leaf and an OpenCL device.
  const auto both = assign_ranks(node, {"cpu,opencl", "cpu,opencl"});
  CHECK(both[0].pus == std::vector<unsigned>{0});
  CHECK(both[1].pus == std::vector<unsigned>{1});
  CHECK(both[0].device_ids == std::vector<std::string>{"opencl:0"});
  CHECK(both[1].device_ids == std::vector<std::string>{"opencl:1"});
  // "all" leaves devices that compute on the host's cores out.
  const auto all = assign_ranks(node, 2);
  CHECK(all[0].device_ids.empty());
  CHECK(all[1].device_ids.empty());
}

TEST_CASE("rank assignment: more ranks than there is to divide share, and say so") {
  NodeInventory node = discover_node_synthetic("pack:1 numa:1 core:2 pu:1");
  node.devices = {device_near(LocationKind::OpenCL, 0, 0, true)};
  const auto shares = assign_ranks(node, {"cpu,opencl", "cpu,opencl", "cpu,opencl"});
  CHECK(shares[0].pus == std::vector<unsigned>{0});
  CHECK(shares[1].pus == std::vector<unsigned>{0});
  CHECK(shares[2].pus == std::vector<unsigned>{1});
  // Ranks 0 and 1 share core 0; rank 2 has core 1 alone, and says so.
  CHECK(shares[0].shares_cores);
  CHECK(shares[1].shares_cores);
  CHECK_FALSE(shares[2].shares_cores);
  CHECK(shares[2].describe() == "local rank 2: pus 1; devices opencl:0 (shared)");
  for (const auto& s : shares) {
    CHECK(s.device_ids == std::vector<std::string>{"opencl:0"});
    CHECK(s.shared_devices == std::vector<std::string>{"opencl:0"});
  }
  CHECK(shares[1].describe() == "local rank 1: pus 0 (shared); devices opencl:0 (shared)");
  // A selection that matches nothing takes nothing (its Runtime reports it).
  const auto bad = assign_ranks(node, {"cuda", "cpu"});
  CHECK(bad[0].pus.empty());
  CHECK(bad[0].device_ids.empty());
  CHECK(bad[1].pus == std::vector<unsigned>{0, 1});
  CHECK_THROWS_AS(assign_ranks(node, 0), Error);
}
