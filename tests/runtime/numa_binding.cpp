// NUMA binding (runtime/numa_binding.hpp): which node an array's pages are
// bound to, decided on hwloc's synthetic two-node machines, and the system
// calls made on this machine, read back with get_mempolicy: an array at a
// NUMA node's memory location is bound there (also after rt.move), one
// placed higher and memory given with rt.wrap() are left alone.
#include <doctest/doctest.h>

#include <linux/mempolicy.h>
#include <sys/mman.h>

#include <cstdint>
#include <string>
#include <vector>

#include <canopy/canopy.hpp>
#include <canopy/runtime/discovery.hpp>
#include <canopy/runtime/numa_binding.hpp>

#include "scoped_setting.hpp"

using namespace canopy;
using namespace canopy::runtime;

TEST_CASE("NUMA binding: a NUMA node's memory and the CPU leaves below it bind to the node's OS number") {
  NodeInventory node = discover_node_synthetic("pack:2 numa:2 core:4 pu:1");
  REQUIRE(node.numa_nodes.size() == 4);
  // Firmware may number nodes with gaps: the OS's numbers are what mbind takes.
  for (auto& numa : node.numa_nodes) numa.os_index = 2 * numa.index + 1;
  const Hierarchy tree = default_hierarchy(node);
  int memories = 0, leaves = 0;
  for (const Location* at : tree.all()) {
    CAPTURE(at->name());
    const auto bound = numa_node_for(tree, node, at->name());
    if (at->kind() == LocationKind::HostMemory || at->kind() == LocationKind::Cpu) {
      REQUIRE(at->traits().numa_node >= 0);
      CHECK(bound == 2 * at->traits().numa_node + 1);
      (at->kind() == LocationKind::HostMemory ? memories : leaves) += 1;
    } else {
      CHECK_FALSE(bound.has_value());  // the node itself, groupings: first touch decides
    }
  }
  CHECK(memories == 4);
  CHECK(leaves >= 4);
  CHECK(numa_node_for(tree, node, "numa2") == 5);
  CHECK_FALSE(numa_node_for(tree, node, "nowhere").has_value());
}

TEST_CASE("NUMA binding: this machine's pages, as get_mempolicy reads them") {
  // Where the system refuses the calls (a container without CAP_SYS_NICE),
  // the arrays stay where they are: said, and the rest of this case skipped.
  {
    const std::size_t bytes = std::size_t{1} << 21;
    void* block = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(block != MAP_FAILED);
    const std::string refused = bind_pages(block, bytes, 0);
    const auto policy = page_policy(block);
    munmap(block, bytes);
    if (!refused.empty() || !policy) {
      MESSAGE("SKIPPED: this system refuses mbind or get_mempolicy (" << refused << ")");
      return;
    }
    CHECK(policy->mode == MPOL_BIND);
  }
  canopy::testing::ScopedSetting devices("CANOPY_DEVICES", "cpu");
  canopy::Runtime rt;
  const std::int64_t n = 1 << 18;  // 2 MiB of doubles
  auto at_numa = rt.array<double>(n, canopy::at("numa0"));
  auto at_node = rt.array<double>(n);
  std::vector<double> mine(static_cast<std::size_t>(n), 1.0);
  auto wrapped = rt.wrap(mine.data(), canopy::Shape(n), canopy::at("numa0"));
  auto small = rt.array<double>(16, canopy::at("numa0"));

  const auto bound = page_policy(at_numa.host().data());
  REQUIRE(bound.has_value());
  CHECK(bound->mode == MPOL_BIND);
  CHECK(bound->node == 0);
  // Placed at the node: left to first touch.
  const auto higher = page_policy(at_node.host().data());
  REQUIRE(higher.has_value());
  CHECK(higher->mode == MPOL_DEFAULT);
  // The program's own memory, and a small array on the heap: as they were.
  CHECK(page_policy(wrapped.host().data())->mode == MPOL_DEFAULT);
  CHECK(page_policy(small.host().data())->mode == MPOL_DEFAULT);

  // Moved to the NUMA node's memory: bound then, its contents kept.
  {
    auto view = at_node.host();
    for (std::int64_t k = 0; k < n; ++k) view[k] = static_cast<double>(k);
  }
  rt.move(at_node, "numa0");
  const auto moved = page_policy(at_node.host().data());
  CHECK(moved->mode == MPOL_BIND);
  CHECK(moved->node == 0);
  auto view = at_node.host_read();
  std::int64_t wrong = 0;
  for (std::int64_t k = 0; k < n; ++k) wrong += view[k] != static_cast<double>(k);
  CHECK(wrong == 0);

  // A freed block kept for the next array of its size (host_memory.hpp) does not carry its binding along.
  const void* freed = nullptr;
  {
    auto bound_then_freed = rt.array<double>(4 * n, canopy::at("numa0"));
    freed = bound_then_freed.host().data();
    CHECK(page_policy(freed)->mode == MPOL_BIND);
  }
  auto next = rt.array<double>(4 * n);
  CAPTURE(next.host().data() == freed);
  CHECK(page_policy(next.host().data())->mode == MPOL_DEFAULT);

  // A moving() array follows its region to the CPU leaf, and its pages to the leaf's node.
  auto travels = rt.array<double>(n, canopy::moving());
  CHECK(page_policy(travels.host().data())->mode == MPOL_DEFAULT);
  canopy::Kernel<void(canopy::Out<double>)> fill("numa_fill",
                                                 [](canopy::Out<double> out) { out[canopy::index(0)] = 2.0; }, {"out"});
  const Hierarchy tree = rt.hierarchy();
  const std::string leaf = tree.leaves(*tree.root()).front()->name();
  rt.region(fill).over(n).at(leaf).launch(travels);
  rt.pause();
  CHECK(travels.location() == leaf);
  const auto followed = page_policy(travels.host().data());
  CHECK(followed->mode == MPOL_BIND);
  CHECK(followed->node == 0);
  CHECK(travels.host_read()[n - 1] == 2.0);
}
