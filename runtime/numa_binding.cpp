#include "numa_binding.hpp"

#include <linux/mempolicy.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

namespace canopy::runtime {

namespace {

// Bits in the node masks passed to the system: enough for any node number
// hwloc reports on today's machines.
constexpr unsigned long kMaskBits = 1024;
constexpr std::size_t kMaskWords = kMaskBits / (8 * sizeof(unsigned long));

}  // namespace

std::optional<int> numa_node_for(const Hierarchy& tree, const NodeInventory& node, const std::string& location) {
  const Location* at = tree.find(location);
  if (!at || (at->kind() != LocationKind::HostMemory && at->kind() != LocationKind::Cpu)) return std::nullopt;
  const int logical = at->traits().numa_node;
  if (logical < 0) return std::nullopt;
  for (const NumaInfo& numa : node.numa_nodes)
    if (numa.index == logical) return numa.os_index;
  return std::nullopt;
}

std::string bind_pages(void* data, std::size_t bytes, int os_node) {
  if (os_node < 0) return syscall(SYS_mbind, data, bytes, MPOL_DEFAULT, nullptr, 0, 0) == 0 ? "" : std::strerror(errno);
  if (static_cast<unsigned long>(os_node) >= kMaskBits)
    return "NUMA node " + std::to_string(os_node) + " is out of range";
  unsigned long mask[kMaskWords] = {};
  mask[static_cast<std::size_t>(os_node) / (8 * sizeof(unsigned long))] |=
      1UL << (static_cast<std::size_t>(os_node) % (8 * sizeof(unsigned long)));
  // maxnode counts one more than the bits the kernel reads.
  if (syscall(SYS_mbind, data, bytes, MPOL_BIND, mask, kMaskBits + 1, MPOL_MF_MOVE) != 0) return std::strerror(errno);
  return "";
}

std::optional<PagePolicy> page_policy(const void* address) {
  int mode = 0;
  unsigned long mask[kMaskWords] = {};
  if (syscall(SYS_get_mempolicy, &mode, mask, kMaskBits + 1, address, MPOL_F_ADDR) != 0) return std::nullopt;
  PagePolicy policy{mode, -1};
  for (std::size_t bit = 0; bit < kMaskBits && policy.node < 0; ++bit)
    if (mask[bit / (8 * sizeof(unsigned long))] & (1UL << (bit % (8 * sizeof(unsigned long)))))
      policy.node = static_cast<int>(bit);
  return policy;
}

}  // namespace canopy::runtime
