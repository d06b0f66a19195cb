// Host memory for arrays (runtime/host_memory.hpp): a freed large block is
// kept for the next block of the same size on a machine with one NUMA node,
// and a block asked to read as zero does, kept or fresh.
#include <doctest/doctest.h>

#include <cstdint>
#include <filesystem>
#include <string>

#include <canopy/runtime/host_memory.hpp>

using canopy::runtime::allocate_host;
using canopy::runtime::free_host;
using canopy::runtime::HostFill;

namespace {

int numa_nodes() {
  std::error_code error;
  int nodes = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/sys/devices/system/node", error))
    if (entry.path().filename().string().rfind("node", 0) == 0) ++nodes;
  return nodes;
}

void scribble(void* data, std::size_t bytes) {
  auto* words = static_cast<std::uint32_t*>(data);
  for (std::size_t k = 0; k < bytes / 4; ++k) words[k] = static_cast<std::uint32_t>(k * 2654435761u) | 1u;
}

std::size_t nonzero_words(const void* data, std::size_t bytes) {
  const auto* words = static_cast<const std::uint32_t*>(data);
  std::size_t count = 0;
  for (std::size_t k = 0; k < bytes / 4; ++k) count += words[k] != 0;
  return count;
}

}  // namespace

TEST_CASE("host memory: a freed block comes back for the same size, cleared when it must read as zero") {
  const std::size_t bytes = std::size_t{4} << 20;  // 4 MiB: Rodinia pathfinder's cost rows
  void* first = allocate_host(bytes);
  CHECK(nonzero_words(first, bytes) == 0);
  scribble(first, bytes);
  free_host(first, bytes);

  void* second = allocate_host(bytes);
  CHECK(nonzero_words(second, bytes) == 0);
  const bool kept = numa_nodes() <= 1;
  CHECK((second == first) == kept);
  scribble(second, bytes);
  free_host(second, bytes);

  // Uninitialized: taken as it is.
  void* third = allocate_host(bytes, HostFill::None);
  CHECK((third == first) == kept);
  if (kept) {
    CHECK(nonzero_words(third, bytes) == bytes / 4);
  }
  free_host(third, bytes);
}

TEST_CASE("host memory: a kept block is not handed out for another size, and two live blocks never share") {
  const std::size_t bytes = std::size_t{4} << 20, other = std::size_t{6} << 20;
  void* a = allocate_host(bytes);
  free_host(a, bytes);
  void* b = allocate_host(other);
  CHECK(b != a);
  void* c = allocate_host(bytes);
  void* d = allocate_host(bytes);
  CHECK(c != d);
  scribble(c, bytes);
  CHECK(nonzero_words(d, bytes) == 0);
  free_host(b, other);
  free_host(c, bytes);
  free_host(d, bytes);
}
