// Host memory for arrays: large blocks come straight from the kernel (mmap),
// zero-filled lazily, so each page is first touched by the thread of the
// region that first writes it (NUMA-friendly), and backed by huge pages where
// the system allows; small ones from the heap, cache-line aligned. On a
// machine with one NUMA node, freed large blocks of up to 32 MiB (64 MiB in
// all) are kept for the next block of the same size. One that must read as
// zero either has its pages given back here, to be faulted in again as
// zeros, or is handed to an array that owes the clearing (ArrayStorage): its
// first use clears it, unless that use writes every element anyway.
#pragma once

#include <cstddef>

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

}  // namespace canopy::runtime
