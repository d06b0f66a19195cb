#include "host_memory.hpp"

#include <sys/mman.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include <canopy/backends/fault_injection.hpp>
#include <canopy/ir/error.hpp>

namespace canopy::runtime {

namespace {

constexpr std::size_t mapped_threshold = std::size_t{1} << 16;  // 64 KiB
constexpr std::size_t huge_page = std::size_t{1} << 21;         // 2 MiB

std::size_t round_up(std::size_t n, std::size_t to) { return (n + to - 1) / to * to; }

}  // namespace

void* allocate_host(std::size_t bytes, HostFill fill) {
  // The CPU's memory is the host's: CANOPY_FAULT=cpu.alloc:n fails here.
  if (backends::inject_fault("cpu", backends::FaultOperation::Alloc))
    throw Error("cannot allocate " + std::to_string(bytes) + " bytes of host memory" +
                backends::injected_note("cpu", backends::FaultOperation::Alloc));
  if (bytes == 0) bytes = 1;
  if (bytes < mapped_threshold) {
    void* p = std::aligned_alloc(64, round_up(bytes, 64));
    if (!p)
      throw Error("cannot allocate " + std::to_string(bytes) +
                  " bytes of host memory; ask for a smaller array or free memory on this node");
    if (fill == HostFill::Zero) std::memset(p, 0, bytes);
    return p;
  }
  // Over-allocate by a huge page so the block can start on a huge-page boundary.
  const std::size_t length = round_up(bytes, huge_page) + huge_page;
  void* raw = mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (raw == MAP_FAILED)
    throw Error("cannot allocate " + std::to_string(bytes) + " bytes of host memory: " + std::strerror(errno) +
                "; ask for a smaller array or free memory on this node");
  auto start = reinterpret_cast<std::uintptr_t>(raw);
  auto aligned = round_up(start, huge_page);
  const std::size_t used = round_up(bytes, huge_page);
  if (aligned > start) munmap(raw, aligned - start);
  const auto tail = start + length - (aligned + used);
  if (tail > 0) munmap(reinterpret_cast<void*>(aligned + used), tail);
#ifdef MADV_HUGEPAGE
  madvise(reinterpret_cast<void*>(aligned), used, MADV_HUGEPAGE);
#endif
  return reinterpret_cast<void*>(aligned);
}

void release_host(void* data, std::size_t bytes) {
  if (!data) return;
  if (bytes < mapped_threshold)
    std::memset(data, 0, bytes);
  else
    madvise(data, round_up(bytes, huge_page), MADV_DONTNEED);
}

void free_host(void* data, std::size_t bytes) {
  if (!data) return;
  if (bytes == 0) bytes = 1;
  if (bytes < mapped_threshold)
    std::free(data);
  else
    munmap(data, round_up(bytes, huge_page));
}

}  // namespace canopy::runtime
