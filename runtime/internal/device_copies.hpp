// DeviceCopies: one array's copies in device memories, and the coherence
// directory that says which elements each holds current. The engine asks it
// for the copies a piece needs before running at a place, performs them, and
// records what the piece wrote; a.host() asks it to bring the host copy up
// to date. Place 0 is the host copy (the array's home, also where CPU leaves
// work); every other place is one device's buffer.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <limits>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <canopy/backends/device.hpp>
#include <canopy/ir/error.hpp>
#include <canopy/ir/kernel.hpp>

#include "../coherence.hpp"

namespace canopy::runtime {

class DeviceCopies;

/// Bytes moved between memories, and what each device memory holds, for the
/// whole engine.
struct TransferTotals {
  std::atomic<std::int64_t> host_to_device{0};
  std::atomic<std::int64_t> device_to_host{0};
  std::atomic<std::int64_t> device_to_device{0};
  std::atomic<std::int64_t> avoided{0};
  /// Transfers that failed once and succeeded when tried again.
  std::atomic<std::int64_t> copies_retried{0};
  /// Bytes of the transfers made between the host and each device memory,
  /// by the device's place (places from kTimedPlaces - 1 on share the last
  /// entry), and the nanoseconds they took: what sequence placement prices a
  /// row moved over that device's link at.
  static constexpr int kTimedPlaces = 16;
  std::array<std::atomic<std::int64_t>, kTimedPlaces> timed_bytes{};
  std::array<std::atomic<std::int64_t>, kTimedPlaces> timed_nanoseconds{};

  static std::size_t timed_slot(int place) { return static_cast<std::size_t>(std::clamp(place, 0, kTimedPlaces - 1)); }
  void timed(int place, std::int64_t bytes, std::int64_t nanoseconds) {
    const std::size_t slot = timed_slot(place);
    timed_bytes[slot].fetch_add(bytes, std::memory_order_relaxed);
    timed_nanoseconds[slot].fetch_add(nanoseconds, std::memory_order_relaxed);
  }
  /// Seconds per byte moved between the host and the memory at `place`: as
  /// its transfers took once a MiB has moved over that link, else as all
  /// transfers took; NaN before a MiB has moved at all.
  double seconds_per_byte(int place) const {
    constexpr std::int64_t kEnough = std::int64_t{1} << 20;
    const std::size_t slot = timed_slot(place);
    std::int64_t bytes = timed_bytes[slot].load(std::memory_order_relaxed);
    std::int64_t nanoseconds = timed_nanoseconds[slot].load(std::memory_order_relaxed);
    if (bytes < kEnough) {
      bytes = nanoseconds = 0;
      for (std::size_t i = 0; i < timed_bytes.size(); ++i) {
        bytes += timed_bytes[i].load(std::memory_order_relaxed);
        nanoseconds += timed_nanoseconds[i].load(std::memory_order_relaxed);
      }
    }
    if (bytes < kEnough) return std::numeric_limits<double>::quiet_NaN();
    return 1e-9 * static_cast<double>(nanoseconds) / static_cast<double>(bytes);
  }

  /// What a device memory holds of the arrays' copies: bytes now and at
  /// most, its capacity (0: as much as the device allocates), the bytes of
  /// copies evicted to make room and the bytes written back to the host for
  /// them, and the copies themselves, least recently used first.
  struct Held {
    std::int64_t now = 0, peak = 0, capacity = 0, evicted = 0, written_back = 0;
    std::list<DeviceCopies*> copies;
  };
  /// Guards `held` and every eviction (taken after an array's mutex, and
  /// before another array's only with try_lock).
  std::mutex held_mutex;
  std::map<int, Held> held;  ///< by place (device memories only)

  /// Bytes of the host memory Canopy allocated for arrays (not wrap()'s),
  /// by the location each array is placed at: what a memory location holds
  /// is the sum over it and the locations below it.
  void add_host_bytes(const std::string& location, std::int64_t bytes) {
    std::lock_guard lock(host_mutex);
    if ((host_bytes[location] += bytes) == 0) host_bytes.erase(location);
  }
  std::int64_t host_bytes_at(const std::string& location) const {
    std::lock_guard lock(host_mutex);
    auto it = host_bytes.find(location);
    return it == host_bytes.end() ? 0 : it->second;
  }
  mutable std::mutex host_mutex;
  std::map<std::string, std::int64_t> host_bytes;
};

/// A transfer for a piece failed; the directory is as it was before the
/// transfers were planned (what it calls current is).
class TransferFailed : public Error {
 public:
  using Error::Error;
};

/// A device could not allocate an array's copy.
class AllocationFailed : public Error {
 public:
  using Error::Error;
};

/// Bytes of some elements of an array, one after the other (not zero-filled
/// when made: they are about to be overwritten).
struct Bytes {
  std::unique_ptr<char[]> data;
  std::size_t size = 0;

  explicit Bytes(std::size_t n = 0) : data(std::make_unique_for_overwrite<char[]>(n)), size(n) {}
};

class DeviceCopies {
 public:
  /// An array of `elements` elements of `type` whose host copy is at `host`.
  DeviceCopies(ir::ScalarType type, std::int64_t elements, void* host, std::optional<ir::ReduceOp> merge,
               std::shared_ptr<TransferTotals> totals);
  /// Frees the device buffers.
  ~DeviceCopies();
  DeviceCopies(const DeviceCopies&) = delete;
  DeviceCopies& operator=(const DeviceCopies&) = delete;

  /// Guards everything; held while transfers run so that no one reads a copy
  /// the directory already calls current before its data arrived.
  std::mutex mutex;

  /// A copy's buffer, and the element of the array at its start.
  struct Placed {
    backends::Buffer buffer;
    std::int64_t first = 0;
  };
  /// Windows start and end at multiples of this many elements (or at the
  /// array's end), so that every vector width divides their first element.
  static constexpr std::int64_t kWindowGrain = 64;
  /// Makes the copy at `place` on `device` hold at least the elements
  /// `window` (a piece's footprint in the array: the copy holds only the part
  /// its pieces touch, which lets several devices split an array none could
  /// hold whole). Allocates the copy on first use; a copy that does not
  /// cover `window` grows to the smallest range covering both, what it held
  /// current and its private merge copy moved into the larger buffer.
  /// Throws AllocationFailed when the device cannot hold it.
  Placed hold(int place, const std::shared_ptr<backends::Device>& device, Range window);
  /// Whether hold(place, ..., window) would move the copy at `place` to a
  /// larger buffer (which must wait until no other piece there uses it).
  bool must_grow(int place, Range window) const;
  /// Bytes of the copy hold() makes for `window` (rounded as it rounds it).
  std::int64_t window_bytes(Range window) const;
  /// Bytes of the copy at `place`; 0 where there is none.
  std::int64_t bytes_at(int place) const;
  /// Bytes of the copy at `place` once grown to cover `window` as well.
  std::int64_t grown_bytes(int place, Range window) const;
  /// The capacity of the device memory at `place`; 0 where none is set or known.
  std::int64_t capacity(int place) const;
  /// With `totals.held_mutex` held (by `held_lock`, let go while it waits
  /// for an array another thread holds or a piece elsewhere uses): evicts
  /// the copies at `place` of arrays other than `keep`, least recently used
  /// first, until `need` more bytes fit the device memory's capacity. A copy
  /// a piece at `place` uses stays. Throws AllocationFailed, naming the sizes
  /// and `device`, when they cannot be made to fit. Called before a piece
  /// holds any array's mutex, its waits cannot close a circle with a piece
  /// that waits for one of those arrays.
  static void make_room(TransferTotals& totals, int place, const std::string& device, std::int64_t need,
                        std::span<const DeviceCopies* const> keep, std::unique_lock<std::mutex>& held_lock);
  /// Flushes what only the copy at `place` holds to the host and frees it,
  /// counted as evicted (a piece run in passes, moving on to its next part,
  /// whose window of the array lies elsewhere). Not while another piece
  /// uses the array anywhere: the flush lands in the host copy.
  void evict(int place);
  /// Makes `need` current at `place` (performing the copies). When a copy
  /// fails, throws TransferFailed and leaves the directory as it was.
  void acquire(int place, const IntervalSet& need);
  /// Records that a piece at `place` wrote `written`.
  void wrote(int place, const IntervalSet& written);
  /// Starts private merge copies of `span` at `place` for region `region`
  /// (combining earlier regions' merges first), filling a device's private
  /// copy with the identity of `op` (the array's merge operator, or the one
  /// the engine chose for a region that adds atomically from several memories).
  void begin_merge(int place, const IntervalSet& span, std::uint64_t region, ir::ReduceOp op);
  /// Combines every private merge copy into the host copy.
  void combine_merges();
  /// At the end of a per_region() array's region, whose contents then go:
  /// the host copy becomes the current one everywhere (the caller clears
  /// it), whatever the device copies hold. Their buffers stay for the next
  /// region, to be filled from the host as any stale copy is.
  void drop_contents();

  /// Before a piece at `place` (a device) that may write some elements of
  /// `ranges`, which pieces at other places may write too: the host is made
  /// current for `ranges`, a twin of them is taken from it, and the copy at
  /// `place` is set to the twin, byte for byte (an element a CPU piece of the
  /// same region changes meanwhile in the host copy must not look changed by
  /// this piece). Returns the twin, for merge_changed.
  Bytes begin_changes(int place, const IntervalSet& ranges);
  /// After that piece: every element of its copy whose bytes differ from
  /// `twin` is written into the host copy, and the host holds `ranges`
  /// current. The other pieces of the region write other elements (a region
  /// whose points write one element twice is racy).
  void merge_changed(int place, const IntervalSet& ranges, const Bytes& twin);
  /// Brings the host copy up to date (merges combined first); with
  /// `host_will_write`, every device copy becomes stale (the host may change it).
  void sync_host(bool host_will_write);
  /// Flushes what only `place` holds to the host and frees its buffer.
  void release(int place);
  /// Makes the host current for `ranges` (what a device piece just wrote),
  /// the device copies staying current too; nothing while merges are in
  /// progress (they reach the host when combined).
  void pull_to_host(const IntervalSet& ranges);
  /// Whether any device holds a copy.
  bool has_device_copies() const { return !copies_.empty(); }
  /// A piece at `place` is using the array: none of its copies is evicted
  /// until as many unpin() calls have come. Without the mutex (a piece that
  /// ends must be able to unpin while another holds the array to make room).
  void pin(int place) { pins_[pin_slot(place)].fetch_add(1, std::memory_order_acq_rel); }
  void unpin(int place) { pins_[pin_slot(place)].fetch_sub(1, std::memory_order_acq_rel); }
  /// Whether a piece at `place` uses the array; without a place, a piece anywhere.
  bool pinned(int place) const { return pins(place) > 0; }
  /// How many pins the pieces at `place` hold.
  std::int32_t pins(int place) const { return pins_[pin_slot(place)].load(std::memory_order_acquire); }
  /// How many pins the pieces anywhere hold.
  std::int32_t all_pins() const {
    std::int32_t total = 0;
    for (const auto& p : pins_) total += p.load(std::memory_order_acquire);
    return total;
  }
  bool pinned() const { return all_pins() > 0; }
  /// Whether the copy at `place` (a device) may be flushed and freed while
  /// pieces at other places use the array: when no merge is in progress (the
  /// flush combines merges, which those pieces may still be adding to), and
  /// either no CPU piece uses it (the flush lands in host elements no device
  /// piece writes: a device piece writes its own copy, and what it records
  /// in the host it records under `mutex`) or the flush moves nothing (a CPU
  /// piece writes the host copy in place). Two pieces on two devices, each
  /// waiting for room that the other's arrays take, then both go on.
  /// With `mutex` held.
  bool may_free_while_used_elsewhere(int place) const;

  std::optional<ir::ReduceOp> merge_operator() const { return merge_; }
  /// The runtime's totals these copies add to (may be null).
  TransferTotals* totals() const { return totals_.get(); }
  /// Bytes of one whole copy of the array.
  std::int64_t bytes() const;
  /// Bytes moved for this array so far.
  CoherenceCounters counters() const;

 private:
  /// Performs the transfers; with `retry`, a failed one is tried once more
  /// (counted in copies_retried) before its error goes up.
  void perform(const std::vector<Transfer>& transfers, bool retry);
  void transfer(const Transfer& t);
  /// Runs `copy`; when it throws, runs it once more (counted, logged once).
  void retrying(const std::function<void()>& copy);
  void count(const CoherenceCounters& before);
  /// The elements `ranges` of the copy at `place`, one after the other.
  Bytes copy_out(int place, const IntervalSet& ranges);
  /// Copies `bytes` (the elements of `ranges`, one after the other) into the copy at `place`.
  void copy_in(int place, const IntervalSet& ranges, const Bytes& bytes);
  /// The static make_room, keeping this array's copies: `need` more bytes
  /// of a copy of this array (with this array's mutex held: the piece's room
  /// was made before, and this makes room only where something took it
  /// meanwhile).
  void make_room(int place, const std::string& device, std::int64_t need, std::unique_lock<std::mutex>& held_lock);
  /// release() with held_mutex already held (by the caller).
  void flush_and_free(int place);

  struct Copy {
    std::shared_ptr<backends::Device> device;
    backends::Buffer buffer;
    Range window;                                     ///< the array's elements in `buffer`, in order
    std::list<DeviceCopies*>::iterator in_use_order;  ///< its place in the ledger's copies (with totals_)
  };
  /// Bytes of `copy`'s buffer.
  std::int64_t bytes_of(const Copy& copy) const;
  /// The byte in `copy`'s buffer of element `element` of the array.
  std::size_t offset_in(const Copy& copy, std::int64_t element) const;
  /// `window` and an eighth of it on each side, rounded out to kWindowGrain
  /// and cut to the array; a copy for an empty window holds one grain.
  Range rounded(Range window) const;
  /// With held_mutex held: moves the copy at `place` into a buffer for `grown`.
  void grow(int place, Copy& copy, Range grown, std::unique_lock<std::mutex>& held_lock);
  /// With held_mutex held: takes the copy at `place`, about to be freed, off the ledger.
  void forget(int place, const Copy& copy);
  ir::ScalarType type_;
  std::size_t element_size_;
  void* host_;
  std::optional<ir::ReduceOp> merge_;
  std::shared_ptr<TransferTotals> totals_;
  Coherence directory_;
  std::map<int, Copy> copies_;
  /// Pieces using the array, per place (places past the last slot share it).
  static constexpr int kPinSlots = 64;
  static int pin_slot(int place) { return place < 0 ? 0 : place < kPinSlots ? place : kPinSlots - 1; }
  std::array<std::atomic<std::int32_t>, kPinSlots> pins_{};
  std::uint64_t merge_region_ = 0;
  ir::ReduceOp merge_op_ = ir::ReduceOp::Sum;  ///< of the merges in progress
  CoherenceCounters twins_;                    ///< what begin_changes and merge_changed moved beyond plans
};

}  // namespace canopy::runtime
