#include "host_memory.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <vector>

#include <canopy/backends/fault_injection.hpp>
#include <canopy/ir/error.hpp>
#include <canopy/ir/settings.hpp>

namespace canopy::runtime {

namespace {

constexpr std::size_t mapped_threshold = std::size_t{1} << 16;  // 64 KiB
constexpr std::size_t huge_page = std::size_t{1} << 21;         // 2 MiB

std::size_t round_up(std::size_t n, std::size_t to) { return (n + to - 1) / to * to; }

// Large blocks freed by arrays, kept mapped for the next array of the same
// mapped length. A fresh page costs a fault on its first touch, and much
// more on a virtual machine (4 MiB of fresh pages took 5-7 ms on a 2-core
// VM, where clearing a kept block takes 0.2 ms): a program that makes and
// drops arrays of one size in a loop (a solver's temporaries, a benchmark's
// repetitions) would otherwise pay it every time. The C library keeps freed
// blocks of up to 32 MiB the same way. Only on a machine with one NUMA node:
// elsewhere a fresh block's pages go where the region that first writes them
// runs, and a kept block's are wherever they were.
class KeptBlocks {
 public:
  static constexpr std::size_t kMaxBlock = std::size_t{32} << 20, kMaxTotal = std::size_t{64} << 20;

  static KeptBlocks& get() {
    static KeptBlocks* kept = new KeptBlocks();  // never destroyed: arrays may be freed during exit
    return *kept;
  }

  // A kept block of exactly `length` mapped bytes, or null.
  void* take(std::size_t length) {
    if (!enabled_) return nullptr;
    std::lock_guard lock(mutex_);
    for (auto it = blocks_.rbegin(); it != blocks_.rend(); ++it)
      if (it->length == length) {
        void* data = it->data;
        total_ -= length;
        blocks_.erase(std::next(it).base());
        return data;
      }
    return nullptr;
  }

  // Keeps `data` (`length` mapped bytes) or unmaps it; the oldest kept blocks
  // go first when the total passes kMaxTotal.
  void give(void* data, std::size_t length) {
    if (enabled_ && length <= kMaxBlock) {
      std::lock_guard lock(mutex_);
      blocks_.push_back({data, length});
      total_ += length;
      while (total_ > kMaxTotal) {
        munmap(blocks_.front().data, blocks_.front().length);
        total_ -= blocks_.front().length;
        blocks_.erase(blocks_.begin());
      }
      return;
    }
    munmap(data, length);
  }

 private:
  struct Block {
    void* data;
    std::size_t length;
  };

  KeptBlocks() {
    std::error_code error;
    int nodes = 0;
    for (const auto& entry : std::filesystem::directory_iterator("/sys/devices/system/node", error))
      if (entry.path().filename().string().rfind("node", 0) == 0) ++nodes;
    enabled_ = nodes <= 1;
  }

  bool enabled_ = false;
  std::mutex mutex_;
  std::vector<Block> blocks_;  // oldest first
  std::size_t total_ = 0;
};

}  // namespace

void* allocate_host(std::size_t bytes, HostFill fill, bool* clear_owed) {
  if (clear_owed) *clear_owed = false;
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
  if (void* kept = KeptBlocks::get().take(round_up(bytes, huge_page))) {
    // To read as zero, it is handed over as it is, the caller owing the
    // clearing (an array: at its first use, which may overwrite it all, and
    // an array nothing uses, such as a fused chain's intermediate, never
    // touches it); else its pages go back, to read as zero when first
    // touched, as a fresh mapping's do.
    if (fill == HostFill::Zero) {
      if (clear_owed)
        *clear_owed = true;
      else
        release_host(kept, bytes);
    }
    return kept;
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
#if defined(MADV_HUGEPAGE) && defined(MADV_NOHUGEPAGE)
  madvise(reinterpret_cast<void*>(aligned), used, advises_huge_pages() ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
#endif
  return reinterpret_cast<void*>(aligned);
}

std::size_t mapped_length(std::size_t bytes) { return bytes < mapped_threshold ? 0 : round_up(bytes, huge_page); }

bool advises_huge_pages() {
  const std::string& choice = settings().huge_pages;
  if (choice == "on" || choice == "off") return choice == "on";
  static const bool hypervisor_takes_them = hypervisor_takes_free_huge_pages();
  return !hypervisor_takes_them;
}

bool hypervisor_takes_free_huge_pages(const std::string& sys) {
  // `features` lists a device's negotiated bits as 0/1 characters, bit 0 first.
  constexpr long kBalloonDevice = 5;
  constexpr std::size_t kReportingBit = 5;  // VIRTIO_BALLOON_F_REPORTING
  std::error_code error;
  for (const auto& device : std::filesystem::directory_iterator(sys + "/bus/virtio/devices", error)) {
    std::ifstream id(device.path() / "device"), features(device.path() / "features");
    std::string id_text, bits;
    id >> id_text;
    features >> bits;
    if (std::strtol(id_text.c_str(), nullptr, 0) == kBalloonDevice && bits.size() > kReportingBit &&
        bits[kReportingBit] == '1')
      return true;
  }
  return false;
}

std::string describe_host_pages() {
  const std::string& choice = settings().huge_pages;
  const std::string chosen = choice == "on" || choice == "off" ? " (CANOPY_HUGE_PAGES=" + choice + ")" : "";
  if (advises_huge_pages()) return "huge pages for blocks of 64 KiB or more" + chosen;
  if (!chosen.empty()) return "small pages" + chosen;
  return "small pages: a virtio balloon hands free memory back to the hypervisor, so a fresh huge page would fault "
         "in slowly (CANOPY_HUGE_PAGES=on asks for them anyway)";
}

void release_host(void* data, std::size_t bytes) {
  if (!data) return;
  if (bytes < mapped_threshold)
    std::memset(data, 0, bytes);
  else
    madvise(data, round_up(bytes, huge_page), MADV_DONTNEED);
}

void free_host(void* data, std::size_t bytes, HostRelease release) {
  if (!data) return;
  if (bytes == 0) bytes = 1;
  if (bytes < mapped_threshold)
    std::free(data);
  else if (release == HostRelease::Unmap)
    munmap(data, round_up(bytes, huge_page));
  else
    KeptBlocks::get().give(data, round_up(bytes, huge_page));
}

}  // namespace canopy::runtime
