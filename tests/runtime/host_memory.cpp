// Host memory for arrays (runtime/host_memory.hpp): a freed large block is
// kept for the next block of the same size on a machine with one NUMA node,
// and a block asked to read as zero does, kept or fresh. And the allocator
// programs load their data with (runtime/host_allocator.hpp).
#include <doctest/doctest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <new>
#include <sstream>
#include <string>
#include <vector>

#include <canopy/runtime/host_allocator.hpp>
#include <canopy/runtime/host_memory.hpp>

#include "scoped_setting.hpp"

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

// The number in the field `field` ("AnonHugePages:", in kB, or
// "THPeligible:", 0 or 1) of the mapping that holds `address`, from
// /proc/self/smaps; -1 when no mapping holds it or it has no such field.
long smaps_field(const void* address, const std::string& field) {
  std::ifstream smaps("/proc/self/smaps");
  const auto at = reinterpret_cast<std::uintptr_t>(address);
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    std::uintptr_t start = 0, end = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> start >> dash >> end && dash == '-' && line.find(':') > line.find(' ')) {
      inside = start <= at && at < end;
      continue;
    }
    if (inside && line.rfind(field, 0) == 0) return std::stol(line.substr(field.size()));
  }
  return -1;
}

// A sysfs tree holding one virtio device of id `id` with the feature bits
// `features` (as its `features` file lists them).
struct FakeSysfs {
  std::filesystem::path root = std::filesystem::temp_directory_path() / ("canopy-sysfs-" + std::to_string(::getpid()));
  FakeSysfs() { std::filesystem::remove_all(root); }
  ~FakeSysfs() { std::filesystem::remove_all(root); }
  void device(const std::string& name, const std::string& id, const std::string& features) const {
    const auto dir = root / "bus/virtio/devices" / name;
    std::filesystem::create_directories(dir);
    std::ofstream(dir / "device") << id << "\n";
    std::ofstream(dir / "features") << features << "\n";
  }
};

}  // namespace

TEST_CASE("host memory: a machine whose balloon reports free pages to the hypervisor is told apart") {
  using canopy::runtime::hypervisor_takes_free_huge_pages;
  FakeSysfs sys;
  CHECK_FALSE(hypervisor_takes_free_huge_pages(sys.root.string()));  // no virtio bus: bare metal
  // This project's VM: a disk, a network card, and a balloon with bits 1, 2,
  // 5 and 7 (statistics, deflate on OOM, free page reporting, ...).
  sys.device("virtio1", "0x0002", "0010001001100100000000000000010010000000");
  sys.device("virtio2", "0x0001", "1111111111111111111111111111111111111111");  // every bit, but no balloon
  CHECK_FALSE(hypervisor_takes_free_huge_pages(sys.root.string()));
  sys.device("virtio0", "0x0005", "0110000100000000000000000000000010000000");  // a balloon without reporting
  CHECK_FALSE(hypervisor_takes_free_huge_pages(sys.root.string()));
  sys.device("virtio0", "0x0005", "0110010100000000000000000000000010000000");
  CHECK(hypervisor_takes_free_huge_pages(sys.root.string()));
}

TEST_CASE("host memory: CANOPY_HUGE_PAGES decides whether a large block is backed by huge pages") {
  // Past the largest block kept for reuse (32 MiB): always a fresh mapping.
  const std::size_t bytes = std::size_t{34} << 20;
  auto touched_block = [&] {
    void* block = allocate_host(bytes);
    scribble(block, bytes);
    return block;
  };
  {
    canopy::testing::ScopedSetting off("CANOPY_HUGE_PAGES", "off");
    CHECK_FALSE(canopy::runtime::advises_huge_pages());
    CHECK(canopy::runtime::describe_host_pages() == "small pages (CANOPY_HUGE_PAGES=off)");
    void* block = touched_block();
    CHECK(smaps_field(block, "AnonHugePages:") == 0);
    CHECK(smaps_field(block, "THPeligible:") == 0);
    free_host(block, bytes, canopy::runtime::HostRelease::Unmap);
  }
  {
    canopy::testing::ScopedSetting on("CANOPY_HUGE_PAGES", "on");
    CHECK(canopy::runtime::advises_huge_pages());
    CHECK(canopy::runtime::describe_host_pages() == "huge pages for blocks of 64 KiB or more (CANOPY_HUGE_PAGES=on)");
    std::ifstream enabled("/sys/kernel/mm/transparent_hugepage/enabled");
    std::string modes;
    std::getline(enabled, modes);
    if (modes.find("[never]") != std::string::npos || modes.empty()) {
      MESSAGE("SKIPPED: the kernel gives no huge pages (transparent_hugepage: '" << modes << "')");
    } else {
      // Eligible whatever the kernel found free; backed by huge pages unless
      // it had none to give (then it says so instead of failing).
      void* block = touched_block();
      CHECK(smaps_field(block, "THPeligible:") == 1);
      const long huge_kb = smaps_field(block, "AnonHugePages:");
      if (huge_kb == 0)
        MESSAGE("the kernel had no free huge page for the block: eligible, backed by small pages");
      else
        CHECK(huge_kb > 0);
      free_host(block, bytes, canopy::runtime::HostRelease::Unmap);
    }
  }
  {
    canopy::testing::ScopedSetting unset("CANOPY_HUGE_PAGES", nullptr);
    CHECK(canopy::runtime::advises_huge_pages() == !canopy::runtime::hypervisor_takes_free_huge_pages());
    // canopy-info's line says which, and how to ask for the other.
    const std::string line = canopy::runtime::describe_host_pages();
    CHECK(line.rfind(canopy::runtime::advises_huge_pages() ? "huge pages" : "small pages: a virtio balloon", 0) == 0);
  }
}

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
