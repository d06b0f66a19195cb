// Coherence directory: for one array, which elements each copy of it holds
// current, and the copies that bring a copy up to date before a piece of work
// runs there. The directory moves no data and knows no device: it plans the
// copies, the caller performs them, and the directory records the result.
//
// Why it exists: a region split over devices with separate memories must move
// only what each piece touches (AMGE), and a copy that is already current
// must not move again (LC-MEMENTO keeps clean copies on the device and copies
// back only dirty data). So per copy the directory keeps an interval set of
// the elements that hold the current value, and turns a piece's access
// footprint into element ranges (reads_of, writes_of).
//
// The model:
//  - An array of `elements` elements (row-major, flattened: rows [r0,r1) of a
//    2-D array of n1 columns are elements [r0*n1, r1*n1)) has a home copy in
//    host memory, place 0 (kHost), and may have copies at other places (device
//    memories), named by small non-negative integers the caller chooses.
//  - A new directory: only the host holds the array, every element valid there.
//  - Invariant: every element is current in at least one copy. Every plan takes
//    its data from a copy that holds the current value.
//  - Thread-compatible: one directory per array; the caller serialises calls.
//
// The rules:
//  - acquire(place, need) before a piece reads `need` at `place`: every element
//    of `need` not current there is copied in, from the host where the host
//    holds it, else from another place that holds it (fewest transfers; the
//    source is reported, see Routing). Elements already current count as
//    avoided. The directory then records `need` as current at `place`.
//  - wrote(place, range) after a piece wrote `range` at `place`: current there,
//    stale in every other copy. A piece that may leave some elements of what it
//    writes unchanged (a conditional, strided or atomic write, see writes_of)
//    must first acquire them, so that the copy it leaves behind is right.
//  - acquire_host(range) for a.host(): pulls back only the stale ranges.
//  - release(place) when a device copy is freed or its location removed: what
//    only that copy holds is flushed to the host first (returned as transfers).
//  - Merge copies (location consistency): begin_merge(place, range) gives
//    `place` a private copy of `range` that starts at the merge operator's
//    identity; end_merge() lists the private copies to combine into the host.
//
// Elements that pieces at two different places may both write cannot be
// resolved by the directory (it cannot tell which place's value is right):
// such pieces must be disjoint (see conflicting_writes), run at one place, or
// use a merge copy. The engine finds them with conflicting_writes and keeps
// every write by merging what each device changed, by private copies for
// atomic adds, or by running the region at one place
// (runtime/internal/split_writes.hpp).
//
// How a piece at place p over rows [b,e) of index(0) uses it, per array:
//   ReadPlan r = reads_of(fp.reads, shape, b, e);
//   WritePlan w = writes_of(fp.writes, shape, range, b, e);
//   need = r.ranges + w.acquire_first;   perform acquire(p, need); run the piece;
//   wrote(p, w.written);
// and for an array with a merge operator: perform begin_merge(p, w.written)
// (flush, then fill `initialize` with the identity), run, and at the pause
// combine end_merge()'s transfers into the host. CPU pieces work in the host
// copy in place: their place is 0.
#pragma once

#include <fmt/ostream.h>

#include <canopy/ir/analysis/footprint.hpp>
#include <cstdint>
#include <map>
#include <ostream>
#include <vector>

#include "interval_set.hpp"
#include "shape.hpp"

namespace canopy::runtime {

/// One copy to perform: elements `range` from the copy at place `from` into the
/// copy at place `to`. In an end_merge() plan, "into" means combine with the
/// merge operator rather than overwrite.
struct Transfer {
  Range range;
  int from = 0;
  int to = 0;
  bool operator==(const Transfer&) const = default;
};

/// "[0,10) 0->1".
std::ostream& operator<<(std::ostream& out, const Transfer& transfer);

/// What the directory's plans moved, in bytes (elements times the element size
/// given to the directory), counted when a plan is made.
struct CoherenceCounters {
  std::int64_t host_to_device = 0;    ///< transfers from place 0 to another place
  std::int64_t device_to_host = 0;    ///< transfers from another place to place 0 (flushes and merges too)
  std::int64_t device_to_device = 0;  ///< transfers between two places other than 0 (Routing::Direct)
  std::int64_t avoided = 0;           ///< elements acquire() needed that were already current there

  CoherenceCounters& operator+=(const CoherenceCounters& other);
  bool operator==(const CoherenceCounters&) const = default;
};

/// "h2d 80 d2h 80 d2d 0 avoided 1440".
std::ostream& operator<<(std::ostream& out, const CoherenceCounters& counters);

/// How acquire() plans data that only another device place holds.
enum class Routing : std::uint8_t {
  /// One transfer from that place to the destination (counted device_to_device);
  /// the caller may still stage it through host memory, but the directory then
  /// does not know the host holds it.
  Direct,
  /// Two transfers, that place to the host and then the host to the destination
  /// (in this order in the plan); the host copy becomes current too.
  ThroughHost,
};

/// What begin_merge() asks of the caller before the piece runs.
struct MergeStart {
  /// Perform first: brings the current value of the range into the host copy
  /// (the copy the private copies are combined into).
  std::vector<Transfer> flush;
  /// Set to the operator's identity in the place's private copy: the range less
  /// what that place already holds as a private copy (empty for place 0).
  IntervalSet initialize;
};

/// The coherence directory of one array (see the file comment).
class Coherence {
 public:
  /// The home copy's place.
  static constexpr int kHost = 0;

  /// An array of `elements` elements of `element_size` bytes each (the counters
  /// are in bytes; 1 counts elements), valid only at the host. Throws
  /// canopy::Error when `elements` < 0 or `element_size` < 1.
  explicit Coherence(std::int64_t elements, std::int64_t element_size = 1, Routing routing = Routing::Direct);

  std::int64_t elements() const { return elements_; }          ///< the array's element count
  std::int64_t element_size() const { return element_size_; }  ///< bytes per element, for the counters
  Routing routing() const { return routing_; }                 ///< how device-only data is planned

  /// The places that hold a copy (valid in part or not at all), ascending; the
  /// host is always first. A place gets a copy at its first acquire, wrote or
  /// begin_merge, and loses it at release.
  std::vector<int> places() const;
  /// True when `place` holds a copy.
  bool has_copy(int place) const;
  /// The elements current at `place` (empty when it holds no copy).
  const IntervalSet& valid(int place) const;

  /// Plans what to copy so that `need` is current at `place`, and records it
  /// as current there as if the plan were performed (see the file comment).
  /// Transfers come out ordered by range begin, each range maximal for its
  /// source: the host for every element it holds, else, along each run the
  /// host lacks, repeatedly the place whose current range reaches furthest
  /// (ties to the lowest place), which gives the fewest transfers for that run.
  /// Throws canopy::Error for a negative place, a range outside the array, or
  /// one that overlaps elements being merged (call end_merge() first).
  std::vector<Transfer> acquire(int place, Range need);
  /// As above for every range of `need`, in one plan.
  std::vector<Transfer> acquire(int place, const IntervalSet& need);
  /// acquire(kHost, range): what a.host() must pull back (only stale ranges).
  std::vector<Transfer> acquire_host(Range range);
  /// acquire(kHost, every element).
  std::vector<Transfer> acquire_host();

  /// Records that a piece wrote `range` at `place`: current there, stale in
  /// every other copy. Throws canopy::Error as acquire() does.
  void wrote(int place, Range range);
  /// As above for every range of `ranges`.
  void wrote(int place, const IntervalSet& ranges);

  /// Forgets the copy at `place` (its memory freed or its location removed),
  /// returning the transfers to perform first: every element current only
  /// there, to the host. Nothing to do for a place without a copy. Throws
  /// canopy::Error for the host (the home copy stays) and for a place whose
  /// private merge copy is not combined yet (call end_merge() first).
  std::vector<Transfer> release(int place);
  /// The elements current at `place` and at no other place: what release()
  /// would flush to the host (empty for a place without a copy).
  IntervalSet only_at(int place) const;

  /// Starts a merge copy (an array with a merge operator, written by pieces at
  /// several places in one region): `place` writes a private copy of `range`
  /// that starts at the operator's identity, nothing copied in. The current
  /// value of `range` is brought home first (MergeStart::flush) and every
  /// other copy of it becomes stale, since the combined value will differ.
  /// The host (place 0) has no private copy: its pieces combine straight into
  /// the home copy (atomically, as CPU pieces of one region must). Until
  /// end_merge(), acquire and wrote refuse elements being merged. Several
  /// places, and one place several times, may merge overlapping ranges.
  /// Throws canopy::Error for a negative place or a range outside the array.
  MergeStart begin_merge(int place, Range range);
  /// As above for every range of `ranges` (a WritePlan's `written`), in one start.
  MergeStart begin_merge(int place, const IntervalSet& ranges);
  /// Ends every merge in progress (the runtime calls it at the pause): returns,
  /// per place in ascending order, the ranges of its private copy, each a
  /// Transfer to the host that the caller combines into the host copy with the
  /// operator. Afterwards those elements are current at the host only.
  std::vector<Transfer> end_merge();
  /// The elements of `place`'s private merge copy (empty when none).
  const IntervalSet& merging(int place) const;
  /// The elements of every private merge copy.
  IntervalSet merging() const;

  /// Bytes planned so far (see CoherenceCounters).
  const CoherenceCounters& counters() const { return counters_; }
  /// Sets the counters to zero.
  void reset_counters() { counters_ = {}; }

 private:
  struct Copy {
    IntervalSet valid;    ///< elements current in this copy
    IntervalSet merging;  ///< elements of this place's private merge copy
  };

  Copy& copy_at(int place);
  void check_place(int place, const char* operation) const;
  void check_inside(const IntervalSet& ranges, int place, const char* operation) const;
  void check_not_merging(const IntervalSet& ranges, int place, const char* operation) const;
  std::vector<Transfer> plan(int place, const IntervalSet& need, bool count_avoided);
  void cover_from_devices(Range run, int place, std::vector<Transfer>& plan);
  void count(const Transfer& transfer);

  std::int64_t elements_;
  std::int64_t element_size_;
  Routing routing_;
  std::map<int, Copy> copies_;
  CoherenceCounters counters_;
};

/// "coherence of 100 elements (8 bytes each): host {[0,100)}; place 1 {[0,50)};
/// place 2 {} merging {[0,10)}".
std::ostream& operator<<(std::ostream& out, const Coherence& coherence);

/// The elements a piece may read.
struct ReadPlan {
  IntervalSet ranges;        ///< acquire these at the piece's place before it runs
  bool whole_array = false;  ///< `ranges` is every element (dim 0 not bounded, or data-dependent)
};

/// The elements a piece may write, and the ones to copy in first.
struct WritePlan {
  /// After the piece: wrote(place, written). Every element it may write.
  IntervalSet written;
  /// Before the piece: acquire these too, because the piece may leave some of
  /// them unchanged (read-modify-write). Empty when the piece surely overwrites
  /// every element of `written`; `written` itself otherwise.
  IntervalSet acquire_first;
  bool whole_array = false;  ///< `written` is every element

  /// True when every element of `written` is surely overwritten.
  bool overwrites() const { return acquire_first.empty(); }
};

/// The elements that a piece over rows [begin, end) of index(0) (the other
/// index dimensions over their full range) may read, given the read footprint
/// of an array of shape `array`. One range: from the first to the last element
/// the footprint's per-dimension positions (ir::rows_touched) allow. For an
/// affine dim 0 with whole inner dimensions this is exactly the piece's rows
/// plus its halo (a 5-point stencil's piece over rows [b,e) reads rows
/// [b-1, e+1) clamped); an unbounded or data-dependent dim 0 gives the whole
/// array; an inner dimension that depends on index(1) or index(2), or is
/// unbounded or data-dependent, takes its whole extent (whole rows).
/// Empty when the footprint is not present or the piece touches nothing.
/// Throws canopy::Error when the footprint's rank differs from the array's.
ReadPlan reads_of(const ir::AccessFootprint& reads, const Shape& array, std::int64_t begin, std::int64_t end);

/// The elements that a piece over rows [begin, end) of index(0) of a region
/// over `range` (whose extents bound index(1) and index(2)) may write, given
/// the write footprint of an array of shape `array`: the same single range as
/// reads_of. The piece surely overwrites every element of it (acquire_first
/// empty) only when all of these hold:
///  - the writes are unconditional and none is atomic;
///  - dim 0 is index(0) or -index(0) plus one constant offset (lo == hi);
///  - every other array dimension d is ±index(k) plus one constant, k >= 1, k
///    distinct among the dimensions, with the positions over index(k)'s extent
///    in `range` covering [0, array[d]); or a constant 0 when array[d] == 1.
/// Otherwise (conditional, atomic, strided, several offsets, partial or
/// unbounded inner dimensions, data-dependent) the write is read-modify-write:
/// acquire_first = written, so the elements it leaves unchanged stay current.
/// Throws canopy::Error when the footprint's rank differs from the array's.
WritePlan writes_of(const ir::AccessFootprint& writes, const Shape& array, const Shape& range, std::int64_t begin,
                    std::int64_t end);

/// One piece's writes at its place, for conflicting_writes().
struct PlacedWrites {
  int place = 0;
  IntervalSet written;
};

/// The elements that pieces at two different places may both write (empty
/// when the pieces are safe to run at their places). Pieces at one place may
/// overlap: they share one copy.
IntervalSet conflicting_writes(const std::vector<PlacedWrites>& pieces);

}  // namespace canopy::runtime

/// fmt::format("{}", x) gives what operator<< writes.
template <>
struct fmt::formatter<canopy::runtime::Transfer> : fmt::ostream_formatter {};
template <>
struct fmt::formatter<canopy::runtime::CoherenceCounters> : fmt::ostream_formatter {};
template <>
struct fmt::formatter<canopy::runtime::Coherence> : fmt::ostream_formatter {};
