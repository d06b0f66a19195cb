// Memory for data a program loads itself and then gives to Canopy with
// rt.wrap(): the same host memory Canopy's own arrays get. A large block
// comes straight from the kernel, starts on a huge-page boundary and is
// backed by huge pages where the system allows (Linux's transparent huge
// pages in `always` or `madvise` mode), so filling 1 GB takes about 500 page
// faults instead of a quarter of a million; a small block comes from the
// heap, aligned to a cache line.
//
//   canopy::HostVector<float> values(n);  // zero, as std::vector<float>(n)
//   read_into(values.data(), n);          // the program's own reader
//   auto a = rt.wrap(values.data(), canopy::Shape(n));
//
// Elements are constructed as std::allocator constructs them (a vector of n
// floats reads as zero), so code written for std::vector behaves the same.
#pragma once

#include <cstddef>
#include <limits>
#include <new>
#include <vector>

#include "host_memory.hpp"

namespace canopy {

/// A standard allocator over Canopy's host memory (see above). Stateless:
/// any two compare equal, so containers move and swap their memory freely.
/// allocate() throws canopy::Error, naming the size, when the system has no
/// memory for the block, and std::bad_array_new_length when the size in
/// bytes overflows.
template <class T>
class HostAllocator {
 public:
  using value_type = T;

  HostAllocator() noexcept = default;
  template <class U>
  HostAllocator(const HostAllocator<U>&) noexcept {}

  T* allocate(std::size_t count) {
    if (count > std::numeric_limits<std::size_t>::max() / sizeof(T)) throw std::bad_array_new_length();
    return static_cast<T*>(runtime::allocate_host(count * sizeof(T), runtime::HostFill::None));
  }
  /// Gives a large block back to the system at once (arrays' freed blocks
  /// are kept for reuse instead): a vector that grows by push_back frees
  /// block after block, which would otherwise stay resident.
  void deallocate(T* data, std::size_t count) noexcept {
    runtime::free_host(data, count * sizeof(T), runtime::HostRelease::Unmap);
  }

  template <class U>
  friend bool operator==(const HostAllocator&, const HostAllocator<U>&) noexcept {
    return true;
  }
};

/// A std::vector in Canopy's host memory.
template <class T>
using HostVector = std::vector<T, HostAllocator<T>>;

}  // namespace canopy
