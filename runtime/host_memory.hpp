// Host memory for arrays: large blocks come straight from the kernel (mmap),
// zero-filled lazily, so each page is first touched by the thread of the
// region that first writes it (NUMA-friendly), and backed by huge pages where
// they pay (advises_huge_pages); small ones from the heap, cache-line aligned. On a
// machine with one NUMA node, freed large blocks of up to 32 MiB (64 MiB in
// all) are kept for the next block of the same size. One that must read as
// zero either has its pages given back here, to be faulted in again as
// zeros, or is handed to an array that owes the clearing (ArrayStorage): its
// first use clears it, unless that use writes every element anyway.
#pragma once

#include <cstddef>
#include <string>

namespace canopy::runtime {

/// What a new block holds: zeros, or whatever the allocator gives (small
/// blocks are then not cleared; large ones read as zero anyway, the kernel
/// clearing each page at its first touch).
enum class HostFill { Zero, None };

/// `bytes` of memory aligned to at least 64 bytes, filled as `fill` says;
/// throws canopy::Error naming the size when the system has no memory for it.
/// With `clear_owed`, a kept block asked for as zeros comes back as it was
/// left and *clear_owed is set: the caller clears it before its first use
/// (or finds that its first use overwrites every byte); otherwise
/// *clear_owed is false.
void* allocate_host(std::size_t bytes, HostFill fill = HostFill::Zero, bool* clear_owed = nullptr);
/// What free_host does with a large block on a machine with one NUMA node:
/// keeps it for the next block of the same size (arrays made and dropped in
/// a loop), or gives it back to the system at once (the outgrown blocks of a
/// growing HostVector, which a cache of freed blocks would keep resident).
enum class HostRelease { Keep, Unmap };

/// Frees what allocate_host returned (`bytes` must be the same).
void free_host(void* data, std::size_t bytes, HostRelease release = HostRelease::Keep);
/// The bytes of whole pages allocate_host maps for a block of `bytes`; 0
/// for a block from the heap, which shares its pages with other blocks.
std::size_t mapped_length(std::size_t bytes);
/// Gives the pages of what allocate_host returned back to the system while
/// keeping the addresses valid: the memory reads as zero afterwards.
void release_host(void* data, std::size_t bytes);

/// Whether allocate_host asks the kernel to back a new large block with huge
/// pages (fewer TLB misses in every loop over it) or with small ones, as
/// CANOPY_HUGE_PAGES says when the block is made: `on`, `off`, or `auto`
/// (unset): huge pages unless hypervisor_takes_free_huge_pages().
bool advises_huge_pages();

/// True when the machine is a virtual machine that hands its free memory
/// back to the hypervisor (a virtio balloon device with free page
/// reporting), as sysfs under `sys` says. There a fresh huge page is
/// usually one the hypervisor took back, and its first touch waits for the
/// host to fault in and clear 2 MiB: 0.2 GB/s against 2.5 GB/s for small
/// pages on the project's VM, which made a whole Rodinia nw run 2.2x slower.
bool hypervisor_takes_free_huge_pages(const std::string& sys = "/sys");

/// What backs large blocks and why, in a line for people (canopy-info).
std::string describe_host_pages();

}  // namespace canopy::runtime
