// Host memory for arrays (runtime/host_memory.hpp): a freed large block is
// kept for the next block of the same size on a machine with one NUMA node,
// and a block asked to read as zero does, kept or fresh. And the allocator
// programs load their data with (runtime/host_allocator.hpp).
#include <doctest/doctest.h>
#include <sys/mman.h>

#include <cerrno>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <new>
#include <string>
#include <vector>

#include <canopy/runtime/host_allocator.hpp>
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

TEST_CASE("HostVector: reads as a std::vector does, aligned, and gives a large block back when freed") {
  // Small (from the heap) and large (mapped, on huge-page boundaries).
  for (const std::size_t count : {std::size_t{1000}, std::size_t{3} << 20}) {
    CAPTURE(count);
    canopy::HostVector<float> values(count);
    REQUIRE(values.size() == count);
    CHECK(nonzero_words(values.data(), count * sizeof(float)) == 0);
    const auto address = reinterpret_cast<std::uintptr_t>(values.data());
    CHECK(address % 64 == 0);
    if (count * sizeof(float) >= (std::size_t{1} << 21)) {
      CHECK(address % (std::size_t{1} << 21) == 0);
    }
    for (std::size_t k = 0; k < count; ++k) values[k] = float(k % 97);
    const std::vector<float> copy(values.begin(), values.end());
    canopy::HostVector<float> moved = std::move(values);
    CHECK(std::vector<float>(moved.begin(), moved.end()) == copy);
  }

  // Growing by push_back: each outgrown block is unmapped at once, not kept
  // resident for reuse as an array's would be.
  void* outgrown = nullptr;
  std::size_t outgrown_bytes = 0;
  {
    canopy::HostVector<std::int32_t> grown;
    grown.reserve(std::size_t{1} << 20);  // 4 MiB: mapped
    outgrown = grown.data();
    outgrown_bytes = grown.capacity() * sizeof(std::int32_t);
    for (std::int32_t k = 0; k < (1 << 20) + 1; ++k) grown.push_back(k);
    CHECK(grown.data() != outgrown);
    CHECK(grown[std::size_t{1} << 20] == (1 << 20));
    CHECK(grown[12345] == 12345);
  }
  unsigned char residency[4];
  errno = 0;
  CHECK(mincore(outgrown, std::min<std::size_t>(outgrown_bytes, sizeof residency * 4096), residency) == -1);
  CHECK(errno == ENOMEM);  // no longer mapped

  CHECK(canopy::HostAllocator<float>() == canopy::HostAllocator<int>());
  CHECK_THROWS_AS(canopy::HostAllocator<double>().allocate(std::numeric_limits<std::size_t>::max() / 4),
                  std::bad_array_new_length);
}
