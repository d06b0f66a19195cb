// Engine::State: what the engine holds, shared by the files that each do one
// part of its work (the walk of one launch is in docs/DESIGN.md):
//
//   runtime/engine.cpp              making the engine, arrays, the tree, pauses, copies
//   runtime/submit.cpp              the submit pipeline: check, place, split, queue
//   runtime/internal/recorder.cpp   regions held briefly to run a chain of them as one kernel
//   runtime/internal/sequence_placement.*  a split priced against where its inputs were left
//   runtime/internal/leaves.cpp     the leaf workers and the devices behind them
//   runtime/internal/piece_run.cpp  running one piece: arrays current, run, record writes, recover
//   runtime/internal/kernel_cache.* compiling a kernel once per engine and device
//   runtime/internal/statistics.*   what stats() reports
//
// Locks, in the order they may be taken: recorder.mutex, tree_mutex (shared by launches,
// exclusive to reconfigure), order_mutex, then the short ones (flight,
// policies, arrays, fallbacks, and those inside KernelCache and StatsBook).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include <canopy/ir/settings.hpp>

#include "../adaptive.hpp"
#include "../config.hpp"
#include "../engine.hpp"
#include "../machine_model.hpp"
#include "../policy.hpp"
#include "device_copies.hpp"
#include "kernel_cache.hpp"
#include "leaf_worker.hpp"
#include "recorder.hpp"
#include "recovery.hpp"
#include "region_run.hpp"
#include "sequence_placement.hpp"
#include "split_writes.hpp"
#include "statistics.hpp"
#include "trace.hpp"

namespace canopy::runtime {

/// CANOPY_DEVICE_MEMORY ("opencl0:256MiB,opencl1:1GiB") as leaf names and
/// bytes; throws canopy::Error naming the part that is not such a pair.
std::map<std::string, std::int64_t> device_memory_limits();
/// Says on stderr which names of CANOPY_DEVICE_MEMORY are not device leaves of `tree`.
void warn_of_device_memory_names(const std::map<std::string, std::int64_t>& limits, const Hierarchy& tree);

struct PiecePlan;

struct Engine::State {
  /// forks_so_far() when the Runtime was made: in a child of a later fork()
  /// its threads are gone, and it refuses to launch or pause.
  const unsigned forks_before = forks_so_far();
  /// CANOPY_TRACE's recording (null when unset): made first, so a bad value fails the Runtime at once.
  std::unique_ptr<trace::Session> trace_session = trace::session_from_environment();
  NodeInventory inventory;
  /// The loctypes the configuration texts declared so far (Gecko keeps them
  /// for the program's life). Guarded by tree_mutex after construction.
  ConfigTypes config_types;
  /// The devices the backends found, by id ("opencl:0"), and where each keeps
  /// its copies of arrays (coherence places: 0 is the host copy).
  std::map<std::string, std::shared_ptr<backends::Device>> devices;
  std::map<std::string, int> places;
  std::shared_ptr<TransferTotals> totals = std::make_shared<TransferTotals>();
  /// CANOPY_DEVICE_MEMORY: the bytes each named device leaf may hold.
  std::map<std::string, std::int64_t> device_memory = device_memory_limits();

  mutable std::shared_mutex tree_mutex;  // shared: submit; exclusive: reconfigure
  Hierarchy tree;
  std::unordered_map<std::string, std::unique_ptr<LeafWorker>> workers;  // guarded by tree_mutex

  RecoveryLog recoveries;
  /// CANOPY_CHECK=bounds: kernels are compiled with bounds checks (read once).
  KernelCache kernels{bounds_checks_from_environment()};
  /// CANOPY_POLICY, resolved once: the policy of regions launched with policy "runtime".
  const std::optional<Policy> runtime_policy = runtime_policy_of(settings().policy, settings().policy_variable);
  /// CANOPY_SPLIT_WRITES: how regions whose pieces may write one element split (read once).
  const SplitWriteChoice split_write_choice = split_write_choice_from_environment();
  StatsBook book;

  std::mutex policies_mutex;
  std::unordered_map<std::string, Policy> policies;

  std::mutex arrays_mutex;
  std::vector<std::weak_ptr<ArrayStorage>> arrays;
  // The memory each wrap() was given, by first address (arrays_mutex): an
  // array over memory another live array wraps too is marked
  // (ArrayStorage::shares_memory), and only those look for the others at a
  // launch. `widest` bounds how far before an address an overlapping block
  // may start.
  struct WrappedMemory {
    std::size_t bytes;
    std::weak_ptr<ArrayStorage> array;
  };
  std::multimap<std::uintptr_t, WrappedMemory> wraps;
  std::size_t widest_wrap = 0;
  std::size_t wraps_after_prune = 0;
  /// Notes the memory of a new wrapped array, marking it and every live one
  /// over overlapping memory.
  void register_wrap(const std::shared_ptr<ArrayStorage>& array);
  /// The live wrapped arrays other than `array` whose memory overlaps
  /// [first, first + bytes) (arrays_mutex held).
  std::vector<std::shared_ptr<ArrayStorage>> wraps_over(std::uintptr_t first, std::size_t bytes,
                                                        const ArrayStorage* array);

  // --- memory locations' capacities (engine.cpp)
  /// Serializes placing arrays at memory locations; per location, the most
  /// held and the bytes evicted to its parent.
  std::mutex memory_mutex;
  struct MemoryLedger {
    std::int64_t peak = 0, evicted = 0;
  };
  std::map<std::string, MemoryLedger> memory_ledgers;  // guarded by memory_mutex
  /// Makes room for `placing` (`bytes`, just made there or about to move
  /// there) at `location` in every memory location with a capacity from it
  /// up to the root: Canopy's other arrays there move up to the memory's
  /// parent, least recently used first, until it fits. Throws Error, naming
  /// the sizes, where it cannot (the array alone is larger, or the memory is
  /// the root). Then call note_memory_peaks(location).
  void make_room_in_memory(const std::string& location, std::int64_t bytes, const ArrayStorage* placing);
  /// After the tree changed: every memory location with a capacity and a
  /// parent that holds more than it moves its least recently used arrays up
  /// until it does not.
  void fit_memories();
  /// The least recently used of the arrays Canopy allocated at `memory` or
  /// below it, other than `placing`; null when none (tree_mutex held).
  std::shared_ptr<ArrayStorage> least_recently_used_in(const Location& memory, const ArrayStorage* placing);
  /// Moves `array` to `parent`, counting it as evicted from `memory`.
  void move_up(ArrayStorage& array, const std::string& parent, const std::string& memory);
  /// Records what the memory locations from `location` up hold now, for their peaks.
  void note_memory_peaks(const std::string& location);
  /// Bytes of Canopy's arrays at `memory` or below it (tree_mutex held).
  std::int64_t bytes_in_memory(const Location& memory) const;

  std::mutex flight_mutex;
  /// Regions (and copies) not yet waited for by pause(), with the record of
  /// where their pieces run (null for a copy: it may touch any leaf).
  struct InFlight {
    CompletionPtr completion;
    std::shared_ptr<RegionStats> record;
  };
  std::vector<InFlight> in_flight;
  std::size_t prune_in_flight_at = 0;  ///< see prune_when_doubled

  // Held from a region's (or copy's) first add_use to its last push: queues
  // then hold work in the order its dependencies were recorded, so a piece
  // never waits for one queued behind it (two threads launching on a shared
  // array could otherwise deadlock two leaves).
  std::mutex order_mutex;

  /// The adaptive and any policies' model, learned splits and history; the
  /// model comes from model_source the first time one of them is used.
  AdaptivePlacement adaptive;
  std::function<MachineModel()> model_source;
  std::once_flag model_once;

  // The leaves a failed piece of a region at a location may run on instead,
  // per location, until the workers change.
  std::mutex fallbacks_mutex;
  std::unordered_map<std::string, std::shared_ptr<const std::vector<Executor>>> fallbacks_known;

  // --- engine.cpp
  /// Gets the machine model from model_source once (before the tree lock: a
  /// calibration launches regions), leaving its regions out of stats().
  void ensure_model();
  Policy policy_named(const std::string& text);
  void register_array(const std::shared_ptr<ArrayStorage>& array);
  std::vector<std::shared_ptr<ArrayStorage>> live_arrays();
  /// Memory wrapped twice (two wrap() calls over one buffer, or overlapping
  /// parts of it) is one array to the program, while each array keeps its
  /// own dependences and device copies: before `array` is used, waits for
  /// the regions that use every other live array over overlapping memory
  /// (their devices' writes reach the memory as they end). True when there
  /// is one: `array`'s device copies are stale then.
  bool wait_for_overlapping_wraps(const ArrayStorage& array);
  std::string location_of_new_array(const MemoryTraits& traits);
  /// Binds the array's host pages to the NUMA node of its location, where
  /// it has one (numa_binding.hpp). Called with tree_mutex held.
  void bind_pages_to_location(ArrayStorage& array);
  /// Keeps `completion` for pause() (with where its pieces run, for pause(location)).
  void track(const CompletionPtr& completion, std::shared_ptr<RegionStats> record = nullptr);

  // --- internal/leaves.cpp
  /// Adds what one backend found, leaving out devices another backend already drives.
  void add_backend(backends::BackendDevices discovered);
  /// The device a leaf runs on, or null when this node has none for it.
  std::shared_ptr<backends::Device> device_of(const Location& leaf) const;
  /// The devices of the tree's executing leaves (tree_mutex held).
  std::vector<std::shared_ptr<backends::Device>> leaf_devices() const;
  /// True when `worker` no longer matches `leaf` (gone, other cores, other device).
  bool stale(const LeafWorker& worker, const Location* leaf) const;
  /// Workers for exactly the tree's executing leaves (tree_mutex held
  /// exclusively, after draining the stale ones).
  void sync_workers();
  /// Device copies made for `place` go back to the host and are freed.
  void release_place(int place);
  /// Where a failed piece of a region at `at` may run instead (tree_mutex held).
  std::shared_ptr<const std::vector<Executor>> fallbacks_below(const Location& at);

  // --- internal/piece_run.cpp
  /// What a piece writes, per parameter: the elements it may write, and for
  /// an array in Changed mode at a device, the twin of its copy of them.
  struct PieceWrites {
    std::vector<IntervalSet> written;
    std::vector<std::optional<Bytes>> twins;
  };
  /// Makes the arrays of a piece ready at `worker` as `plan` (its range's
  /// footprints, piece_run.cpp) says.
  PieceWrites prepare_arrays(const RegionRun& run, PiecePlan plan, const Executor& worker);
  void record_writes(const RegionRun& run, const PieceWrites& piece, const Executor& worker);
  /// Runs piece `piece` (on its leaf, or where it moved), records its time,
  /// and finishes the region when it is the last.
  void run_piece(const std::shared_ptr<RegionRun>& run, std::size_t piece, const backends::Range& range,
                 const Executor& leaf);
  std::vector<backends::ReductionValue> launch_piece(RegionRun& run, const backends::Program& program,
                                                     const backends::Range& range, const Executor& worker);
  bool recover_piece(RegionRun& run, std::size_t piece, const backends::Range& range, const Executor& failed,
                     std::exception_ptr error);
  std::shared_ptr<backends::Program> program_for_piece(RegionRun& run, std::size_t piece, const LeafWorker& worker);

  /// Sequence placement (sequence_placement.hpp), in runtime/submit.cpp;
  /// recorder.mutex and tree_mutex (shared) held. On unless
  /// CANOPY_SEQUENCE_PLACEMENT=off when the engine was made.
  bool place_sequences = true;
  /// CANOPY_SEQUENCE_PLACEMENT=always: follow wherever the inputs' split
  /// differs, whatever it costs (so that tests exercise every following).
  bool always_follow = false;
  void follow_placed_inputs(RegionRun& run, const std::vector<PlacedInput>& inputs,
                            const std::vector<const Location*>& leaves, std::int64_t rows);
  void leave_placement(const RegionRun& run, const RegionRequest& request, const std::vector<Piece>& pieces);
  int place_of(const Location& leaf) const;
  /// Seconds per byte moved between the host and the memory at a place
  /// (sequence_placement.hpp's LinkPrice).
  std::function<double(int place)> link_price() const;

  // --- internal/recorder.cpp
  /// Launched regions waiting to run as chains (recorder.hpp).
  Recorder recorder;
  /// Holds `region` in the recorder, or runs it (after the chains it shares
  /// an array with) when it cannot wait there. recorder.mutex and tree_mutex
  /// (shared) held.
  void record_region(RecordedRegion region);
  /// Whether the region may join a chain (recorder.mutex held).
  bool fusable(const RegionRun& run, const RegionRequest& request, const std::vector<Piece>& pieces);
  /// Whether it waits in the recorder once launched (fusable, no reduction:
  /// a reduction ends its chain at once).
  bool waits_in_recorder(const RegionRun& run, const RegionRequest& request, const std::vector<Piece>& pieces);
  /// Starts every recorded chain, fused where it can be (takes the locks).
  /// `waits`: the caller waits for them next (pause, or a host view of
  /// `array` when not null), so the last region (one that uses `array`),
  /// when its leaf is an idle CPU leaf, runs on the caller's thread (see
  /// dispatch) instead of waking the leaf's worker.
  void start_recorded(bool waits = false, const ArrayStorage* array = nullptr);
  /// What an array calls to start the regions of the recorder of `state`
  /// (an Engine::State) that use it (ArrayStorage::add_recorded).
  static void start_recorded_of(void* state, bool waits, const ArrayStorage* array);
  /// Counts a recorded region's arrays, its arguments `args` (once per
  /// parameter), as recorded here (+1) or started (-1).
  void count_recorded(const std::vector<ArgRef>& args, int delta);
  /// Starts recorder.chains[index] and removes it; recorder.mutex and
  /// tree_mutex (shared) held.
  void start_chain(std::size_t index);
  /// Stops the recorder's thread (the chains started first).
  void stop_recorder();
  /// The recorder's thread: starts each chain kDelay after its first region.
  void run_timer();
  /// Arms the recorder's timer to fire at `deadline` (recorder.mutex held).
  void arm_recorder(std::chrono::steady_clock::time_point deadline);

  // --- submit.cpp
  /// Runs a region as placed and split: its uses recorded, its pieces queued
  /// (recorder.mutex and tree_mutex held, shared).
  void start_region(RecordedRegion& region);
  const Location& region_location(const RegionRequest& request, const ir::Kernel& kernel);
  std::vector<Piece> choose_pieces(RegionRun& run, const RegionRequest& request, const Policy& policy,
                                   const Location& at);
  void plan_writes(RegionRun& run, const RegionRequest& request, std::vector<Piece>& pieces);
  /// Adaptive: the shares of `leaves` whose device memory cannot hold their
  /// piece's smallest pass go to the others.
  void drop_leaves_that_cannot_fit(RegionRun& run, const RegionRequest& request,
                                   const std::vector<const Location*>& leaves) const;
  /// Throws, before any piece of the region runs, where a piece's device
  /// memory cannot hold even its smallest pass.
  void refuse_pieces_no_pass_fits(const RegionRun& run, const RegionRequest& request,
                                  const std::vector<Piece>& pieces) const;
  void record_uses(RegionRun& run, RegionRequest& request, const Policy& policy, const Location& at,
                   const std::vector<Piece>& pieces);
  /// Wakes the leaves that will run the pieces, unless the region is small
  /// enough to run on the caller's thread (see dispatch); a region that
  /// waits in the recorder wakes only the leaves' helpers (`helpers_only`).
  void wake_ahead(const RegionRun& run, const std::vector<Piece>& pieces, const Shape& range, bool helpers_only);
  void dispatch(const std::shared_ptr<RegionRun>& run, const std::vector<Piece>& pieces, const Shape& range,
                std::unique_lock<std::mutex>& order_lock);
  /// Queues piece `piece` of `run` on `leaf`'s worker.
  void queue_piece(const std::shared_ptr<RegionRun>& run, std::size_t piece, const backends::Range& range,
                   LeafWorker& leaf);
  /// A region's only piece that the thread in start_recorded(true) runs
  /// itself once it has started every chain and let the recorder go.
  struct CallerPiece {
    std::shared_ptr<RegionRun> run;
    backends::Range range;
    LeafWorker* leaf = nullptr;
  };
  /// Set while start_recorded(true) starts chains, with the array the
  /// caller waits for (null: every region); recorder.mutex held.
  bool caller_waits = false;
  const ArrayStorage* caller_waits_for = nullptr;
  /// The piece kept for the caller (at most one: a region dispatched after
  /// it queues it first, so that the leaf's order holds); recorder.mutex held.
  std::optional<CallerPiece> caller_piece;

 private:
  std::vector<Executor> find_fallbacks(const Location& at) const;
};

}  // namespace canopy::runtime
