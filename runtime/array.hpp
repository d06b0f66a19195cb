// Array<T, Rank>: a handle to an array the runtime manages. Handles are
// cheap to copy and share one storage; the memory is freed when the last
// handle and the last region using it are gone. `host()` gives a view on the
// host whose contents are current (it waits for the regions using the array).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <canopy/ir/error.hpp>
#include <canopy/ir/type.hpp>

#include "completion.hpp"
#include "shape.hpp"
#include "traits.hpp"

namespace canopy {

namespace runtime {

class DeviceCopies;
struct TransferTotals;

/// Where the last region that wrote an array left its rows: the pieces that
/// region was split into, as planned when it was launched. A later region
/// that reads the array may take the same split so that no row changes
/// memory (internal/sequence_placement.hpp).
struct RowPlacement {
  /// One piece: rows [begin, end) of the region's range on `leaf`, whose
  /// memory is coherence place `place`.
  struct Rows {
    std::string leaf;
    int place = 0;
    std::int64_t begin = 0, end = 0;
  };
  std::string kernel;  ///< the kernel of the region that wrote it
  /// The hash of the kernel whose own split this is: the writer's, or, where
  /// the writer took its inputs' split, the kernel that split came from. A
  /// kernel never follows its own split back (in a loop of two kernels,
  /// that would hold both at whatever split the first launch took).
  std::uint64_t leader = 0;
  std::int64_t extent = 0;   ///< rows of that region's range (the array's first extent)
  std::vector<Rows> pieces;  ///< ordered by begin
};

/// One array's memory and bookkeeping, shared by its handles and by the
/// regions in flight that use it.
class ArrayStorage {
 public:
  /// An array in memory Canopy allocates (zero-filled). Its transfers to and
  /// from devices add to `totals` (may be null).
  ArrayStorage(ir::ScalarType type, Shape shape, MemoryTraits traits, std::string location,
               std::shared_ptr<TransferTotals> totals = nullptr);
  /// An array over the user's memory at `user_data` (Runtime::wrap): never freed by Canopy.
  ArrayStorage(ir::ScalarType type, Shape shape, MemoryTraits traits, std::string location, void* user_data,
               std::shared_ptr<TransferTotals> totals);
  ~ArrayStorage();
  ArrayStorage(const ArrayStorage&) = delete;
  ArrayStorage& operator=(const ArrayStorage&) = delete;

  ir::ScalarType type() const { return type_; }
  const Shape& shape() const { return shape_; }
  std::size_t bytes() const { return bytes_; }
  const MemoryTraits& traits() const { return traits_; }
  /// A number unique among the arrays of the process (for statistics and dumps).
  std::uint64_t id() const { return id_; }
  /// The location the array is placed at now.
  std::string location() const;
  /// Places the array at another location (the runtime moves its data first).
  void set_location(std::string location);
  /// "array 'grid' (f64 512x512 at numa0)", or "array #3 (...)" without a name.
  std::string describe() const;
  /// The host copy of the elements (row-major), cleared first when its
  /// zeros are still owed (see settle_contents).
  void* host_data() const {
    if (clear_owed_.load(std::memory_order_acquire)) settle_contents(false);
    return host_;
  }
  /// A kept block handed to a new array (host_memory.hpp) still holds what
  /// its last array left there: the zeros the array must read as are owed
  /// until its first use. Called before that use (a region, a host view, a
  /// copy): the block is cleared now, unless the use writes every element
  /// before anything reads one (`overwritten`), which pays the debt as well.
  /// Nothing once settled, and for memory given with wrap().
  void settle_contents(bool overwritten) const;
  /// Whether the zeros are still owed.
  bool zeros_owed() const { return clear_owed_.load(std::memory_order_acquire); }
  /// Gives the memory's pages back to the system and forgets what device
  /// copies hold; the contents read as zero afterwards everywhere (arrays
  /// with a per-region lifetime, between regions).
  void release_contents();
  /// Binds the host pages to NUMA node `os_node` (the operating system's
  /// number), moving those already touched; nothing when they are bound
  /// there already, for memory given with wrap(), and for arrays under
  /// 64 KiB (which share pages with other allocations). Where the system
  /// refuses, the pages stay where they are, said once per process on stderr.
  void bind_to_numa_node(int os_node);
  /// The copies of the array in device memories and which elements each
  /// holds current (see internal/device_copies.hpp).
  DeviceCopies& copies() const { return *copies_; }
  /// Makes the host copy current (pulling back only stale ranges from
  /// devices and combining merge copies); with `host_will_write`, the device
  /// copies become stale, since the host may change any element.
  void sync_host(bool host_will_write);

  /// Records a region that reads and/or writes the array and returns the
  /// earlier regions it must wait for (read after write, write after read
  /// or write).
  /// `writer_before`, when given, receives the region that wrote the array
  /// last before this use (null when none did).
  std::vector<CompletionPtr> add_use(const CompletionPtr& use, bool reads, bool writes,
                                     CompletionPtr* writer_before = nullptr);
  /// Whether the region that wrote the array last failed and the program
  /// has not been told yet (Completion::unreported_error).
  bool writer_failed_unreported() const;
  /// Waits for every region in flight that uses the array; regions that use
  /// it and are still recorded (runtime/internal/recorder.hpp), by any
  /// Runtime, start first.
  /// With `report`, rethrows the failure of the region that wrote the array
  /// last (its elements are not what the program asked for), unless the
  /// program was told of it already (Completion::claim_error).
  void wait_idle(bool report = false);
  /// Counts the regions recorded by `recorder` (an engine's) that use the
  /// array: `start(recorder, waits, array)` starts them (the recorder keeps
  /// the count; an array may be used by the regions of several Runtimes).
  using StartRecorded = void (*)(void* recorder, bool waits, const ArrayStorage* array);
  void add_recorded(void* recorder, StartRecorded start, int delta);
  /// Starts the recorded regions that use the array, of every recorder but
  /// `except`: a region of one Runtime comes after the regions of another
  /// that were launched before it on the same array, even when those still
  /// wait in their recorder to be fused.
  void start_recorded_elsewhere(const void* except);
  /// False for memory given with wrap() (the program's, placed where it put it).
  bool owns_memory() const { return owns_memory_; }
  /// The program's memory given with wrap(), as [first, first + bytes());
  /// null for memory Canopy owns (which no other array shares).
  const void* wrapped_memory() const { return owns_memory_ ? nullptr : host_; }
  /// True once another live array of the Runtime wrapped overlapping memory.
  bool shares_memory() const { return shares_memory_.load(std::memory_order_acquire); }
  void mark_shared_memory() { shares_memory_.store(true, std::memory_order_release); }

  // The host copy is the program's to read (and write) directly while a
  // host view of it is open, and always for memory given with wrap(): on
  // every backend it then behaves as on a CPU leaf, where regions work in
  // that memory itself. What device pieces write lands in it as each piece
  // ends (host_sees_writes), and a region launched when none that uses the
  // array is in flight takes what the program may have written there since
  // (host_may_have_written).

  /// A host view of the array opens or closes (HostView counts itself).
  void view_opened(bool writable);
  void view_closed(bool writable);
  /// Whether device pieces' writes must reach the host copy as they end.
  bool host_sees_writes() const { return !owns_memory_ || views_.load(std::memory_order_acquire) > 0; }
  /// Whether the program may write the host copy between regions.
  bool host_may_write() const {
    return (!owns_memory_ && !traits_.read_only) || writable_views_.load(std::memory_order_acquire) > 0;
  }
  /// Before a region that uses the array is recorded: when the program may
  /// write the host copy and no region that uses the array is in flight or
  /// recorded, the device copies become stale (the program may have changed
  /// any element since the last region ended).
  void host_may_have_written();
  /// Another array over this one's memory (wrap() twice over one buffer) may
  /// have changed any element: like host_may_have_written, for a read-only
  /// array too.
  void memory_shared_may_have_changed();
  /// When a region last used the array (or it was made), as a count that
  /// grows over the process: the least recently used has the smallest.
  std::uint64_t last_use() const { return last_use_.load(std::memory_order_relaxed); }
  /// Where the last region that wrote the array left its rows; null when no
  /// region did, or the host has written it since (its rows are all there).
  std::shared_ptr<const RowPlacement> placed_rows() const;
  void set_placed_rows(std::shared_ptr<const RowPlacement> placed);

 private:
  ir::ScalarType type_;
  Shape shape_;
  std::size_t bytes_;
  MemoryTraits traits_;
  std::uint64_t id_;
  void* host_ = nullptr;
  bool owns_memory_ = true;
  std::atomic<bool> shares_memory_{false};
  std::unique_ptr<DeviceCopies> copies_;
  mutable std::atomic<bool> clear_owed_{false};
  mutable std::mutex clear_mutex_;  ///< held while the owed zeros are written

  mutable std::mutex mutex_;
  /// forks_so_far() when made: in a child of a later fork(), the regions
  /// recorded or running for it belong to threads that are gone.
  const unsigned forks_before_ = forks_so_far();
  std::string location_;
  int numa_node_ = -1;  ///< the NUMA node (OS number) the host pages are bound to; -1: none
  std::atomic<std::uint64_t> last_use_{0};
  /// Starts the recorded regions of every recorder but `except` (null: all).
  void start_recorded(const void* except, bool waits);
  struct RecordedBy {
    void* recorder;
    StartRecorded start;
    int count;
  };
  std::atomic<int> views_{0}, writable_views_{0};    ///< host views open
  std::atomic<int> recorded_{0};                     ///< over every recorder: nothing to start when 0
  std::mutex recorded_mutex_;                        ///< guards recorded_by_
  std::vector<RecordedBy> recorded_by_;              ///< recorders with a count above 0
  std::shared_ptr<const RowPlacement> placed_rows_;  ///< guarded by mutex_
  CompletionPtr last_writer_;
  std::vector<CompletionPtr> readers_;  ///< since the last writer
  std::size_t prune_readers_at_ = 0;    ///< see prune_when_doubled
};

/// An open host view, counted in its array (ArrayStorage::view_opened) for
/// as long as it or a copy of it lives.
class OpenView {
 public:
  OpenView() = default;
  OpenView(std::shared_ptr<ArrayStorage> storage, bool writable) : storage_(std::move(storage)), writable_(writable) {
    if (storage_) storage_->view_opened(writable_);
  }
  OpenView(const OpenView& other) : OpenView(other.storage_, other.writable_) {}
  OpenView(OpenView&& other) noexcept = default;
  OpenView& operator=(OpenView other) noexcept {
    std::swap(storage_, other.storage_);
    std::swap(writable_, other.writable_);
    return *this;
  }
  ~OpenView() {
    if (storage_) storage_->view_closed(writable_);
  }

 private:
  std::shared_ptr<ArrayStorage> storage_;
  bool writable_ = false;
};

}  // namespace runtime

/// A view of an array's elements in host memory. While it is open (it or a
/// copy of it lives), the memory it shows is kept current at the end of
/// every region, and what the program writes through it is seen by the
/// regions launched once those before have ended, on every backend.
template <class T, int Rank>
class HostView {
 public:
  HostView(T* data, Shape shape) : data_(data), shape_(shape) {}
  /// A view counted open in `storage` (Array::host, Array::host_read).
  HostView(T* data, Shape shape, std::shared_ptr<runtime::ArrayStorage> storage)
      : data_(data), shape_(shape), open_(std::move(storage), !std::is_const_v<T>) {}

  /// The first element; the elements are contiguous, the last dimension fastest.
  T* data() const { return data_; }
  /// The number of elements (the product of the extents).
  std::int64_t size() const { return shape_.size(); }
  /// The array's extents.
  const Shape& shape() const { return shape_; }
  /// The elements in memory order, for range-for and the standard algorithms.
  T* begin() const { return data_; }
  T* end() const { return data_ + size(); }

  /// Element i of a 1-D array (unchecked).
  T& operator[](std::int64_t i) const requires(Rank == 1) { return data_[i]; }
  /// Element (i), (i, j) or (i, j, k), row-major (unchecked).
  T& operator()(std::int64_t i) const requires(Rank == 1) { return data_[i]; }
  T& operator()(std::int64_t i, std::int64_t j) const requires(Rank == 2) { return data_[i * shape_[1] + j]; }
  T& operator()(std::int64_t i, std::int64_t j, std::int64_t k) const requires(Rank == 3) {
    return data_[(i * shape_[1] + j) * shape_[2] + k];
  }

 private:
  T* data_;
  Shape shape_;
  runtime::OpenView open_;
};

/// Rows [begin_row, end_row) of an array's first dimension with every inner
/// dimension whole: one contiguous run of elements in row-major order (of a
/// 2-D array of n1 columns, elements [begin_row * n1, end_row * n1)). Made by
/// Array::slice; it is what MPI communication (runtime/mpi/job.hpp) sends
/// and receives. It holds the array's storage, so the array lives as long.
template <class T, int Rank>
class ArraySlice {
 public:
  ArraySlice(std::shared_ptr<runtime::ArrayStorage> storage, std::int64_t begin_row, std::int64_t end_row)
      : storage_(std::move(storage)), begin_row_(begin_row), end_row_(end_row) {}

  /// The whole array's storage (the runtime's side of it).
  const std::shared_ptr<runtime::ArrayStorage>& storage() const { return storage_; }
  /// The first row of the slice, and one past its last.
  std::int64_t begin_row() const { return begin_row_; }
  std::int64_t end_row() const { return end_row_; }
  /// Elements in one row (the product of the inner extents; 1 for Rank 1).
  std::int64_t row_elements() const { return storage_->shape().size() / std::max<std::int64_t>(1, rows_of_array()); }
  /// The flattened index of the slice's first element.
  std::int64_t first_element() const { return begin_row_ * row_elements(); }
  /// The number of elements in the slice.
  std::int64_t elements() const { return (end_row_ - begin_row_) * row_elements(); }

 private:
  std::int64_t rows_of_array() const { return storage_->shape()[0]; }

  std::shared_ptr<runtime::ArrayStorage> storage_;
  std::int64_t begin_row_, end_row_;
};

/// A handle to an array of T with Rank dimensions, made by Runtime::array.
template <class T, int Rank = 1>
class Array {
  static_assert(ir::is_kernel_scalar_v<T>, "array elements are bool, int32_t, int64_t, float or double");
  static_assert(Rank >= 1 && Rank <= 3, "arrays have 1, 2 or 3 dimensions");

 public:
  using element_type = T;
  static constexpr int rank = Rank;

  /// A handle to no array.
  Array() = default;
  explicit Array(std::shared_ptr<runtime::ArrayStorage> storage) : storage_(std::move(storage)) {}

  /// False for a default-constructed (empty) handle, which no launch takes.
  explicit operator bool() const { return storage_ != nullptr; }
  /// The extents, and the extent of dimension `dim` (0 is the outermost).
  /// Every member below but storage() throws canopy::Error on an empty
  /// handle, naming what was asked.
  const Shape& shape() const { return held("shape()").shape(); }
  std::int64_t extent(int dim) const { return held("extent()").shape()[dim]; }
  /// The number of elements (the product of the extents).
  std::int64_t size() const { return held("size()").shape().size(); }
  /// The location the array is placed at now.
  std::string location() const { return held("location()").location(); }

  /// The elements on the host, current: waits for the regions that use the
  /// array and brings back what devices changed. Writes through the view are
  /// seen by the regions launched after (device copies are refreshed then).
  /// While the view is open, it shows what each region wrote once that
  /// region has ended (after pause(), say), and what the program writes
  /// through it between regions reaches the next ones, on devices as on
  /// CPU leaves. Throws the error of the region that wrote the array last,
  /// when it failed and neither pause() nor another view has reported it yet.
  HostView<T, Rank> host() const {
    runtime::ArrayStorage& array = held("host()");
    array.wait_idle(true);
    array.sync_host(true);
    return HostView<T, Rank>(static_cast<T*>(array.host_data()), array.shape(), storage_);
  }
  /// Like host(), for reading only: the device copies stay current, so the
  /// next regions on devices copy nothing in again.
  HostView<const T, Rank> host_read() const {
    runtime::ArrayStorage& array = held("host_read()");
    array.wait_idle(true);
    array.sync_host(false);
    return HostView<const T, Rank>(static_cast<const T*>(array.host_data()), array.shape(), storage_);
  }

  /// Rows [begin_row, end_row) of the first dimension, every inner dimension
  /// whole (see ArraySlice). Throws canopy::Error when the rows are not
  /// within [0, extent(0)] or end_row < begin_row.
  ArraySlice<T, Rank> slice(std::int64_t begin_row, std::int64_t end_row) const {
    const runtime::ArrayStorage& array = held("slice()");
    if (begin_row < 0 || end_row < begin_row || end_row > array.shape()[0])
      throw Error("slice(" + std::to_string(begin_row) + ", " + std::to_string(end_row) + ") of " + array.describe() +
                  " is not within its " + std::to_string(array.shape()[0]) +
                  " rows; give 0 <= begin_row <= end_row <= extent(0)");
    return ArraySlice<T, Rank>(storage_, begin_row, end_row);
  }
  /// Every row: the whole array as a slice.
  ArraySlice<T, Rank> slice() const { return slice(0, extent(0)); }

  /// The runtime's side of the array (shared by every copy of this handle);
  /// for the runtime and tools, not needed to write programs.
  const std::shared_ptr<runtime::ArrayStorage>& storage() const { return storage_; }

 private:
  // The array, or canopy::Error for an empty handle (a default-constructed
  // Array, or a member not assigned yet), which had crashed.
  runtime::ArrayStorage& held(const char* what) const {
    if (!storage_)
      throw Error(std::string("Array::") + what +
                  " on an empty handle (a default-constructed Array): assign it an array made with "
                  "rt.array<T>(...) first");
    return *storage_;
  }

  std::shared_ptr<runtime::ArrayStorage> storage_;
};

}  // namespace canopy
