#include "engine.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <map>
#include <mutex>
#include <shared_mutex>
#include <sstream>
#include <unordered_map>

#include <canopy/backends/cpu/cpu_device.hpp>
#include <canopy/ir/analysis/cost.hpp>
#include <canopy/ir/analysis/footprint.hpp>
#include <canopy/ir/dump.hpp>
#include <canopy/ir/error.hpp>
#include <canopy/ir/passes/bounds_check.hpp>
#include <canopy/ir/passes/optimize.hpp>
#include <canopy/ir/printer.hpp>
#include <canopy/ir/visitor.hpp>
#include <canopy/jit/cpu_compiler.hpp>
#include <canopy/jit/hash.hpp>

#include <canopy/backends/discover.hpp>

#include "adaptive.hpp"
#include "coherence.hpp"
#include "config.hpp"
#include "discovery.hpp"
#include "internal/device_copies.hpp"
#include "internal/leaf_worker.hpp"
#include "internal/recovery.hpp"
#include "internal/split_writes.hpp"
#include "launch_bounds.hpp"
#include "mcd.hpp"
#include "policy.hpp"

namespace canopy::runtime {

namespace {

// A kernel as the engine keeps it: the traced IR (kept alive so the map's key
// stays valid), the optimized IR and its CPU program.
struct CompiledKernel {
  std::shared_ptr<const ir::Kernel> traced;
  std::shared_ptr<const ir::Kernel> optimized;
  /// Null when compiling it failed; program_for then compiles it again (under programs_mutex).
  mutable std::shared_ptr<backends::cpu::CpuProgram> cpu;
  /// What each array parameter reads and writes: which elements a piece needs.
  ir::Footprint footprint;
  /// The accesses every point makes at known positions: a launch whose range
  /// takes one outside its array is refused (launch_bounds.hpp).
  std::vector<SureAccess> sure_accesses;
  /// A point may do any amount of work (a For loop), so even a small region
  /// of it is never run in the launching thread (launch() must return at once).
  bool has_loops = false;
  /// The optimized kernel and the hash of its text: the adaptive policy's key.
  AdaptiveKernel adaptive;
  /// Simple operations per point (flops, integer operations, loads and
  /// stores, from ir::cost_of): what a split can save, against what merging
  /// what each memory wrote costs (split_writes.hpp).
  double ops_per_point = 0;

  /// The program for `device`: the CPU program on CPU devices, else compiled
  /// for the device (once per device: a program belongs to the context of the
  /// device that built it, so two devices with one fingerprint, such as two
  /// PoCL devices, each build their own; the second finds the binary in the
  /// disk cache).
  std::shared_ptr<backends::Program> program_for(backends::Device& device) const {
    std::lock_guard lock(programs_mutex);
    if (device.info().host_memory) {
      if (!cpu) cpu = backends::cpu::CpuDevice::compile_program(optimized);  // it failed before (see compiled())
      return cpu;
    }
    auto& slot = programs[device.info().id];
    if (!slot) slot = device.compile(optimized);
    return slot;
  }

 private:
  mutable std::mutex programs_mutex;
  mutable std::unordered_map<std::string, std::shared_ptr<backends::Program>> programs;  // by device id
};

// True when the kernel's body has a For loop.
bool body_has_loops(const ir::Kernel& kernel) {
  struct Finder : ir::Visitor {
    bool found = false;
    void visit(const ir::For&) override { found = true; }
  } finder;
  finder.walk(kernel.body);
  return finder.found;
}

// A region between submit() and the end of its last piece.
struct RegionRun {
  std::shared_ptr<const CompiledKernel> kernel;
  std::vector<std::shared_ptr<backends::Program>> programs;  // per piece, for its leaf's device
  std::vector<ArgRef> args;
  std::vector<CompletionPtr> deps;
  std::vector<std::vector<backends::ReductionValue>> partials;  // per piece
  std::atomic<int> pieces_left{0};
  std::mutex error_mutex;
  std::exception_ptr error;
  CompletionPtr completion = std::make_shared<Completion>();
  std::shared_ptr<std::vector<backends::ReductionValue>> results =
      std::make_shared<std::vector<backends::ReductionValue>>();
  std::shared_ptr<RegionStats> record;
  std::vector<std::shared_ptr<ArrayStorage>> per_region_arrays;
  /// Where a piece may run again when its leaf fails: the leaves below the
  /// region's location, then the CPU leaves (the host).
  std::shared_ptr<const std::vector<Executor>> fallbacks;
  /// Pieces whose leaf could not compile the kernel run on another leaf's device.
  std::vector<std::optional<Executor>> moved;
  std::shared_ptr<const AdaptivePlan> adaptive;  ///< adaptive and any launches: learns from the pieces' times
  /// How pieces in different memories write each array (split_writes.hpp).
  SplitWritePlan writes;
  /// When the pieces were queued: each piece's finishing time counts from here.
  std::chrono::steady_clock::time_point submitted = std::chrono::steady_clock::now();
};

// The arguments as `worker`'s device sees them: its copy of each array (the
// host copy for CPU leaves).
std::vector<backends::KernelArg> kernel_args(const std::vector<ArgRef>& refs, const Executor& worker) {
  std::vector<backends::KernelArg> args;
  args.reserve(refs.size());
  for (const auto& ref : refs) {
    if (auto* storage = std::get_if<std::shared_ptr<ArrayStorage>>(&ref)) {
      backends::ArrayArg array;
      if (worker.place() == Coherence::kHost) {
        array.data = (*storage)->host_data();
      } else {
        auto& copies = (*storage)->copies();
        std::lock_guard lock(copies.mutex);
        array.data = copies.buffer(worker.place(), worker.device()).handle;
      }
      array.extents = (*storage)->shape().extents();
      args.emplace_back(array);
    } else if (auto* scalar = std::get_if<backends::ScalarArg>(&ref)) {
      args.emplace_back(*scalar);
    } else {
      args.emplace_back(backends::ReductionArg{});
    }
  }
  return args;
}

// The reductions of a finished region: each piece's partials combined in piece order.
void combine_partials(RegionRun& run) {
  const auto& kernel = *run.kernel->optimized;
  std::vector<const ir::Param*> reductions;
  for (const auto& p : kernel.params)
    if (p.is_reduction()) reductions.push_back(&p);
  run.results->clear();
  for (std::size_t r = 0; r < reductions.size(); ++r) {
    auto total = backends::identity_value(reductions[r]->reduce, reductions[r]->type);
    for (const auto& piece : run.partials)
      if (r < piece.size()) total = backends::combine(reductions[r]->reduce, total, piece[r]);
    run.results->push_back(total);
  }
}

// The private copies of the arrays the region's device pieces added into,
// summed into the host copies now that every piece is done.
void combine_added_arrays(RegionRun& run) {
  for (std::size_t p = 0; p < run.args.size(); ++p) {
    if (run.writes.mode(p) != WriteMode::Added) continue;
    auto& copies = std::get<std::shared_ptr<ArrayStorage>>(run.args[p])->copies();
    std::lock_guard lock(copies.mutex);
    copies.combine_merges();
  }
}

void finish_region(RegionRun& run) {
  combine_partials(run);
  std::exception_ptr error;
  {
    std::lock_guard lock(run.error_mutex);
    try {
      combine_added_arrays(run);
    } catch (...) {
      if (!run.error) run.error = std::current_exception();
    }
    error = run.error;
  }
  for (auto& array : run.per_region_arrays) array->release_contents();
  if (run.adaptive && !error) run.adaptive->finished(*run.record);
  run.completion->finish(error);
}

// "x86_64-pc-linux-gnu, znver4, AVX-512" from the JIT's long target description
// ("triple;cpu;+feature,-feature,...").
std::string short_target(const std::string& description) {
  auto first = description.find(';');
  auto second = first == std::string::npos ? first : description.find(';', first + 1);
  if (second == std::string::npos) return description;
  const std::string features = description.substr(second) + ",";
  const char* vector_isa = features.find("+avx512f,") != std::string::npos ? "AVX-512"
                           : features.find("+avx2,") != std::string::npos  ? "AVX2"
                                                                           : "SSE";
  return description.substr(0, first) + ", " + description.substr(first + 1, second - first - 1) + ", " + vector_isa;
}

// The names of a leaf's ancestors, root first: two trees place a leaf alike
// when these agree.
std::vector<std::string> path_of(const Location& location) {
  std::vector<std::string> path;
  for (auto* l = &location; l; l = l->parent()) path.push_back(l->name());
  return path;
}

}  // namespace

struct Engine::State {
  NodeInventory inventory;
  /// The devices the backends found, by id ("opencl:0"), and where each keeps
  /// its copies of arrays (coherence places: 0 is the host copy).
  std::map<std::string, std::shared_ptr<backends::Device>> devices;
  std::map<std::string, int> places;
  std::shared_ptr<TransferTotals> totals = std::make_shared<TransferTotals>();

  void add_backend(backends::BackendDevices discovered) {
    std::vector<backends::DeviceInfo> known;
    for (const auto& [id, device] : devices) known.push_back(device->info());
    const auto found = without_duplicates(std::move(discovered), known);
    add_backend_devices(inventory, found);
    for (const auto& device : found.devices) {
      devices[device->info().id] = device;
      if (!device->info().host_memory) places.emplace(device->info().id, static_cast<int>(places.size()) + 1);
    }
  }

  mutable std::shared_mutex tree_mutex;  // shared: submit; exclusive: reconfigure
  Hierarchy tree;
  std::unordered_map<std::string, std::unique_ptr<LeafWorker>> workers;  // guarded by tree_mutex

  std::mutex kernels_mutex;
  std::unordered_map<const ir::Kernel*, std::shared_ptr<const CompiledKernel>> kernels;

  std::mutex policies_mutex;
  std::unordered_map<std::string, Policy> policies;

  std::mutex arrays_mutex;
  std::vector<std::weak_ptr<ArrayStorage>> arrays;

  std::mutex flight_mutex;
  /// Regions (and copies) not yet waited for by pause(), with the record of
  /// where their pieces run (null for a copy: it may touch any leaf).
  struct InFlight {
    CompletionPtr completion;
    std::shared_ptr<RegionStats> record;
  };
  std::vector<InFlight> in_flight;

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

  void ensure_model() {
    std::call_once(model_once, [&] {
      // A calibration's regions and copies are the runtime's, not the
      // program's: rt.stats() leaves them out.
      std::unique_lock stats_lock(stats_mutex);
      const std::int64_t regions_before = regions;
      const auto leaves_before = leaf_stats;
      const auto recent_before = recent;
      stats_lock.unlock();
      const TransferTotals& t = *totals;
      const std::array<std::int64_t, 4> moved_before{t.host_to_device.load(), t.device_to_host.load(),
                                                     t.device_to_device.load(), t.avoided.load()};
      std::optional<MachineModel> model;
      try {
        if (model_source) model = model_source();
      } catch (const std::exception& e) {
        std::fprintf(stderr, "canopy: adaptive placement runs without a machine model: %s\n", e.what());
      }
      stats_lock.lock();
      hidden_regions += regions - regions_before;
      leaf_stats = leaves_before;
      recent = recent_before;
      stats_lock.unlock();
      totals->host_to_device.store(moved_before[0]);
      totals->device_to_host.store(moved_before[1]);
      totals->device_to_device.store(moved_before[2]);
      totals->avoided.store(moved_before[3]);
      std::map<std::string, std::string> drivers;
      for (const auto& [id, device] : devices) drivers[id] = device->info().fingerprint;
      adaptive.set_model(std::move(model), fingerprint_of(inventory, Hierarchy(), drivers));
    });
  }

  /// CANOPY_CHECK=bounds: kernels are compiled with bounds checks (read once).
  const bool checked = bounds_checks_from_environment();
  /// CANOPY_SPLIT_WRITES: how regions whose pieces may write one element split (read once).
  const SplitWriteChoice split_write_choice = split_write_choice_from_environment();
  RecoveryLog recoveries;

  mutable std::mutex stats_mutex;
  std::int64_t regions = 0;
  std::int64_t hidden_regions = 0;  ///< the machine model's calibration launched them
  std::unordered_map<std::string, LeafStats> leaf_stats;
  std::deque<std::shared_ptr<RegionStats>> recent;
  SplitWriteStats split_writes;

  std::shared_ptr<const CompiledKernel> compiled(const std::shared_ptr<const ir::Kernel>& traced) {
    std::lock_guard lock(kernels_mutex);
    auto& slot = kernels[traced.get()];
    if (!slot) {
      auto compiled = std::make_shared<CompiledKernel>();
      compiled->traced = traced;
      compiled->optimized = std::make_shared<const ir::Kernel>(
          checked ? ir::optimize(ir::check_bounds(ir::optimize(*traced))) : ir::optimize(*traced));
      const std::string text = ir::print(*compiled->optimized);
      dump("ir", traced->name, text);
      if (dump_enabled("cost"))
        dump("cost", traced->name, ir::describe_cost(*compiled->optimized, ir::cost_of(*compiled->optimized)));
      compiled->adaptive = AdaptiveKernel{compiled->optimized.get(), jit::hash64(text)};
      try {
        compiled->cpu = backends::cpu::CpuDevice::compile_program(compiled->optimized);
      } catch (const Error& e) {
        // Compiled again when a CPU leaf needs it; the devices may run it meanwhile.
        recoveries.recovered(RecoveryKind::Compile, "cpu", std::string(e.what()) + "; compiling again where needed");
      }
      compiled->has_loops = body_has_loops(*compiled->optimized);
      compiled->footprint = ir::footprint_of(*compiled->optimized);
      const ir::KernelCost cost = ir::cost_of(*compiled->optimized);
      compiled->ops_per_point = cost.flops + cost.int_ops + cost.accesses();
      // Checked kernels guard every access; the refusal reads the unguarded form.
      compiled->sure_accesses =
          sure_accesses_of(checked ? ir::footprint_of(ir::optimize(*traced)) : compiled->footprint);
      slot = std::move(compiled);
    }
    return slot;
  }

  Policy policy_named(const std::string& text) {
    std::lock_guard lock(policies_mutex);
    auto it = policies.find(text);
    if (it == policies.end()) it = policies.emplace(text, parse_policy(text)).first;
    return it->second;
  }

  // Workers for exactly the tree's executing leaves (call with tree_mutex held exclusively).
  // The device a leaf runs on, or null when this node has none for it.
  std::shared_ptr<backends::Device> device_of(const Location& leaf) const {
    auto it = devices.find(leaf.traits().device);
    return it == devices.end() ? nullptr : it->second;
  }

  // True when `worker` no longer matches `leaf` (gone, other cores, other device).
  bool stale(const LeafWorker& worker, const Location* leaf) const {
    if (!leaf || !leaf->executes()) return true;
    if (leaf->kind() == LocationKind::Cpu)
      return worker.place() != Coherence::kHost || leaf->traits().pus != worker.pus();
    return worker.device() != device_of(*leaf);
  }

  // Workers for exactly the tree's executing leaves (call with tree_mutex held
  // exclusively, after draining the stale ones).
  void sync_workers() {
    {
      std::lock_guard lock(fallbacks_mutex);
      fallbacks_known.clear();
    }
    std::vector<std::string> gone;
    for (auto& [name, worker] : workers)
      if (stale(*worker, tree.find(name))) gone.push_back(name);
    for (auto& name : gone) workers.erase(name);
    if (!tree.root()) return;
    for (auto* leaf : tree.leaves(*tree.root())) {
      if (workers.count(leaf->name())) continue;
      if (leaf->kind() == LocationKind::Cpu) {
        workers.emplace(leaf->name(), std::make_unique<LeafWorker>(leaf->name(), leaf->traits().pus));
      } else if (auto device = device_of(*leaf)) {
        workers.emplace(leaf->name(), std::make_unique<LeafWorker>(leaf->name(), device, places.at(device->info().id)));
      }
    }
  }

  // Device copies made for `place` go back to the host and are freed, each
  // after the regions in flight that use its array: one running on a leaf
  // that stays may be writing host elements that the directory still calls
  // current only at `place` (a piece records its writes when it ends), and
  // the flush would land on them.
  void release_place(int place) {
    for (auto& array : live_arrays()) {
      array->wait_idle();
      auto& copies = array->copies();
      std::lock_guard lock(copies.mutex);
      copies.release(place);
    }
  }

  void register_array(const std::shared_ptr<ArrayStorage>& array) {
    std::lock_guard lock(arrays_mutex);
    std::erase_if(arrays, [](const std::weak_ptr<ArrayStorage>& a) { return a.expired(); });
    arrays.push_back(array);
  }

  std::vector<std::shared_ptr<ArrayStorage>> live_arrays() {
    std::lock_guard lock(arrays_mutex);
    std::vector<std::shared_ptr<ArrayStorage>> live;
    for (auto& weak : arrays)
      if (auto a = weak.lock()) live.push_back(std::move(a));
    return live;
  }

  std::string location_of_new_array(const MemoryTraits& traits) {
    std::shared_lock lock(tree_mutex);
    if (!tree.root()) throw Error("the hierarchy is empty: load a configuration or add a location first");
    if (traits.distance) return tree.root()->name();  // placed when a region uses it
    if (traits.location.empty()) return tree.root()->name();
    return tree.at(traits.location).name();
  }

  void track(const CompletionPtr& completion, std::shared_ptr<RegionStats> record = nullptr) {
    std::lock_guard lock(flight_mutex);
    std::erase_if(in_flight, [](const InFlight& f) { return f.completion->done() && !f.completion->error(); });
    in_flight.push_back({completion, std::move(record)});
  }

  void remember(const std::shared_ptr<RegionStats>& record) {
    std::lock_guard lock(stats_mutex);
    ++regions;
    recent.push_back(record);
    while (recent.size() > 64) recent.pop_front();
  }

  /// What a piece writes, per parameter: the elements it may write, and for
  /// an array in Changed mode at a device, the twin of its copy of them.
  struct PieceWrites {
    std::vector<IntervalSet> written;
    std::vector<std::optional<Bytes>> twins;
  };

  // Before a piece at `worker` over `range`: each array's elements the piece
  // needs become current at the worker's place (merge arrays, and arrays
  // the region adds to from several memories, get private copies instead).
  // Returns what each array's piece will write.
  PieceWrites prepare_arrays(const RegionRun& run, const backends::Range& range, const Executor& worker) {
    const auto& kernel = *run.kernel->optimized;
    PieceWrites piece{std::vector<IntervalSet>(run.args.size()), std::vector<std::optional<Bytes>>(run.args.size())};
    for (std::size_t p = 0; p < run.args.size(); ++p) {
      auto* storage = std::get_if<std::shared_ptr<ArrayStorage>>(&run.args[p]);
      if (!storage) continue;
      const auto* footprint = run.kernel->footprint.of(static_cast<int>(p));
      if (!footprint) continue;
      const auto& shape = (*storage)->shape();
      auto reads = reads_of(footprint->reads, shape, range.begin[0], range.end[0]);
      auto writes = writes_of(footprint->writes, shape, run.record->range, range.begin[0], range.end[0]);
      auto& copies = (*storage)->copies();
      std::lock_guard lock(copies.mutex);
      if (worker.place() != Coherence::kHost) copies.buffer(worker.place(), worker.device());
      const WriteMode mode = run.writes.mode(p);
      if ((copies.merge_operator() && kernel.params[p].writes()) || mode == WriteMode::Added) {
        IntervalSet span = writes.written;
        span.add(reads.ranges);
        copies.begin_merge(worker.place(), span, run.record->id, copies.merge_operator().value_or(ir::ReduceOp::Sum));
        continue;
      }
      IntervalSet need = reads.ranges;
      need.add(writes.acquire_first);
      if (mode == WriteMode::Changed && worker.place() != Coherence::kHost) {
        piece.twins[p] = copies.begin_changes(worker.place(), writes.written);
        need.subtract(writes.written);
      }
      copies.acquire(worker.place(), need);
      piece.written[p] = std::move(writes.written);
    }
    return piece;
  }

  void record_writes(const RegionRun& run, const PieceWrites& piece, const Executor& worker) {
    for (std::size_t p = 0; p < run.args.size(); ++p) {
      auto* storage = std::get_if<std::shared_ptr<ArrayStorage>>(&run.args[p]);
      if (!storage || piece.written[p].empty()) continue;
      auto& copies = (*storage)->copies();
      std::lock_guard lock(copies.mutex);
      if (piece.twins[p])
        copies.merge_changed(worker.place(), piece.written[p], *piece.twins[p]);
      else
        copies.wrote(worker.place(), piece.written[p]);
    }
  }

  void run_piece(const std::shared_ptr<RegionRun>& run, std::size_t piece, const backends::Range& range,
                 const Executor& leaf) {
    const Executor& worker = piece < run->moved.size() && run->moved[piece] ? *run->moved[piece] : leaf;
    const auto start = std::chrono::steady_clock::now();
    double run_seconds = 0;
    try {
      for (auto& dep : run->deps) dep->wait(false);
      auto written = prepare_arrays(*run, range, worker);
      const auto launched = std::chrono::steady_clock::now();
      run->partials[piece] = launch_piece(*run, *run->programs[piece], range, worker);
      run_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - launched).count();
      record_writes(*run, written, worker);
    } catch (...) {
      if (!recover_piece(*run, piece, range, worker, std::current_exception())) {
        std::lock_guard lock(run->error_mutex);
        if (!run->error) run->error = std::current_exception();
      }
    }
    const auto end = std::chrono::steady_clock::now();
    const double seconds = std::chrono::duration<double>(end - start).count();
    {
      std::lock_guard lock(stats_mutex);
      auto& piece_stats = run->record->pieces[piece];
      piece_stats.seconds = seconds;
      piece_stats.run_seconds = run_seconds;
      piece_stats.finished_seconds = std::chrono::duration<double>(end - run->submitted).count();
      auto& leaf = leaf_stats[piece_stats.leaf];
      leaf.leaf = piece_stats.leaf;
      leaf.regions += 1;
      leaf.iterations += range.points();
      leaf.busy_seconds += seconds;
    }
    if (run->pieces_left.fetch_sub(1, std::memory_order_acq_rel) == 1) finish_region(*run);
  }

  // The piece's program on `worker`; in checked mode an index out of bounds
  // becomes the region's error (what the piece wrote in bounds still counts).
  std::vector<backends::ReductionValue> launch_piece(RegionRun& run, const backends::Program& program,
                                                     const backends::Range& range, const Executor& worker) {
    if (!checked) return worker.device()->run(program, kernel_args(run.args, worker), range);
    auto outcome = run_checked(*worker.device(), program, kernel_args(run.args, worker), range);
    if (!outcome.fault.empty()) {
      std::lock_guard lock(run.error_mutex);
      if (!run.error) run.error = std::make_exception_ptr(OutOfBounds(outcome.fault));
    }
    return std::move(outcome.partials);
  }

  // After the piece failed on `failed`: runs it on each fallback in turn, then
  // on `failed` once more. True when one attempt succeeded (counted and logged).
  // An array the device cannot allocate is not retried: the user placed it
  // there, and the region fails with the device's error.
  bool recover_piece(RegionRun& run, std::size_t piece, const backends::Range& range, const Executor& failed,
                     std::exception_ptr error) {
    const RecoveryKind kind = recovery_kind_of(error);
    if (kind == RecoveryKind::Alloc) return false;
    if (kind == RecoveryKind::Launch) {
      try {
        std::rethrow_exception(error);
      } catch (const OutOfBounds&) {
        return false;
      } catch (...) {
      }
    }
    std::vector<Executor> attempts;
    for (const auto& e : *run.fallbacks)
      if (e.name() != failed.name()) attempts.push_back(e);
    attempts.push_back(failed);
    for (const auto& target : attempts) {
      try {
        auto program = run.kernel->program_for(*target.device());
        auto written = prepare_arrays(run, range, target);
        run.partials[piece] = launch_piece(run, *program, range, target);
        record_writes(run, written, target);
      } catch (const OutOfBounds&) {
        return false;
      } catch (...) {
        continue;
      }
      const std::string where = target.name() == failed.name() ? "ran again on '" + target.name() + "'"
                                                               : "ran on '" + target.name() + "' instead";
      recoveries.recovered(kind, failed.name(),
                           std::string(name_of(kind)) + " failed on leaf '" + failed.name() + "' for kernel '" +
                               run.kernel->optimized->name + "' (" + message_of(error) + "); the piece " + where);
      return true;
    }
    return false;
  }

  // The leaves a failed piece of a region at `at` may run on instead (call
  // with tree_mutex held): those below `at`, then every CPU leaf. Kept per
  // location until the workers change, so a launch pays a lookup only.
  std::mutex fallbacks_mutex;
  std::unordered_map<std::string, std::shared_ptr<const std::vector<Executor>>> fallbacks_known;
  std::shared_ptr<const std::vector<Executor>> fallbacks_below(const Location& at) {
    std::lock_guard lock(fallbacks_mutex);
    auto& known = fallbacks_known[at.name()];
    if (!known) known = std::make_shared<const std::vector<Executor>>(find_fallbacks(at));
    return known;
  }
  std::vector<Executor> find_fallbacks(const Location& at) const {
    std::vector<Executor> found;
    auto add = [&](const Location* leaf) {
      auto it = workers.find(leaf->name());
      if (it == workers.end()) return;
      for (const auto& e : found)
        if (e.name() == leaf->name()) return;
      found.emplace_back(*it->second);
    };
    for (const auto* leaf : tree.leaves(at)) add(leaf);
    if (tree.root())
      for (const auto* leaf : tree.leaves(*tree.root()))
        if (leaf->kind() == LocationKind::Cpu) add(leaf);
    return found;
  }

  // The program for piece `piece` on `worker`; when that device cannot compile
  // it, the piece moves to the first fallback that can (or the same device
  // compiles it on a second try). Throws the first error when none can.
  std::shared_ptr<backends::Program> program_for_piece(RegionRun& run, std::size_t piece, const LeafWorker& worker) {
    std::exception_ptr error;
    try {
      return run.kernel->program_for(*worker.device());
    } catch (const Error&) {
      error = std::current_exception();
    }
    std::vector<Executor> attempts;
    for (const auto& e : *run.fallbacks)
      if (e.name() != worker.name()) attempts.push_back(e);
    attempts.emplace_back(worker);
    for (const auto& target : attempts) {
      std::shared_ptr<backends::Program> program;
      try {
        program = run.kernel->program_for(*target.device());
      } catch (const Error&) {
        continue;
      }
      if (target.name() != worker.name()) {
        if (run.moved.size() <= piece) run.moved.resize(piece + 1);
        run.moved[piece] = target;
      }
      recoveries.recovered(
          RecoveryKind::Compile, worker.name(),
          message_of(error) + "; the piece of leaf '" + worker.name() + "' ran on '" + target.name() + "'");
      return program;
    }
    std::rethrow_exception(error);
  }

  // Where a region runs: its explicit location, else the Most Common
  // Descendant of its placed arrays' locations (the root when it has none).
  const Location& region_location(const RegionRequest& request, const ir::Kernel& kernel) {
    std::vector<const Location*> locations;
    std::vector<std::string> labels;
    for (std::size_t p = 0; p < request.args.size(); ++p) {
      auto* storage = std::get_if<std::shared_ptr<ArrayStorage>>(&request.args[p]);
      if (!storage || (*storage)->traits().distance) continue;
      const auto name = (*storage)->location();
      auto* location = tree.find(name);
      if (!location) location = tree.root();
      locations.push_back(location);
      labels.push_back("argument '" + kernel.params[p].name + "', " + (*storage)->describe() + ",");
    }
    if (!request.location.empty()) {
      auto* found = tree.find(request.location);
      if (!found) {
        try {
          tree.at(request.location);
        } catch (const Error& e) {
          throw Error("region of kernel '" + kernel.name + "': " + e.what());
        }
      }
      const auto& at = *found;
      for (std::size_t i = 0; i < locations.size(); ++i)
        if (!Hierarchy::is_above_or_same(*locations[i], at))
          throw Error("region of kernel '" + kernel.name + "' at '" + at.name() + "': " + labels[i] +
                      " is not visible there; memory is visible at its location and below it; move the array or "
                      "run the region below '" +
                      locations[i]->name() + "'");
      return at;
    }
    if (locations.empty()) return *tree.root();
    if (auto* mcd = most_common_descendant(locations)) return *mcd;
    throw Error("region of kernel '" + kernel.name + "': " + explain_no_common_descendant(locations, labels));
  }

  // How the pieces write each array when they run in different memories
  // (split_writes.hpp); a region that cannot be split over memories keeps
  // only its pieces in one memory, and stats() says why, once per reason.
  // Call with tree_mutex held.
  void plan_writes(RegionRun& run, const RegionRequest& request, std::vector<Piece>& pieces) {
    if (pieces.size() < 2) return;  // one piece writes in one memory
    std::vector<PlacedPiece> placed;
    std::vector<int> places;
    for (const auto& piece : pieces) {
      auto worker = workers.find(piece.leaf->name());
      places.push_back(worker == workers.end() ? 0 : worker->second->place());
      placed.push_back({places.back(), piece.begin, piece.end});
    }
    run.writes = plan_split_writes(*run.kernel->optimized, run.kernel->footprint, run.kernel->ops_per_point,
                                   request.args, request.range, placed, split_write_choice);
    std::lock_guard lock(stats_mutex);
    if (run.writes.one_memory) {
      pieces = on_one_memory(pieces, places, request.range[0]);
      run.adaptive = nullptr;  // its shares were for the pieces it planned
      ++split_writes.one_memory;
      if (std::find(split_writes.notes.begin(), split_writes.notes.end(), *run.writes.one_memory) ==
          split_writes.notes.end())
        split_writes.notes.push_back(*run.writes.one_memory);
    }
    const auto& modes = run.writes.modes;
    if (std::count(modes.begin(), modes.end(), WriteMode::Changed) > 0) ++split_writes.changed_merged;
    if (std::count(modes.begin(), modes.end(), WriteMode::Added) > 0) ++split_writes.sums_merged;
  }

  // The location `levels` above `at` (the root when the tree is not that deep).
  const Location& ancestor(const Location& at, int levels) {
    const Location* l = &at;
    for (int i = 0; i < levels && l->parent(); ++i) l = l->parent();
    return *l;
  }
};

Engine::Engine(const RuntimeOptions& options) : state_(std::make_unique<State>()) {
  state_->inventory = discover_node();
  if (!options.pus.empty()) {
    keep_cores(state_->inventory, options.pus);
    if (state_->inventory.cores.empty())
      throw Error("the runtime was given processing units none of which is a core of this node");
  } else if (const std::vector<unsigned> allowed = thread_affinity(); !allowed.empty()) {
    // Only the cores this thread may run on (taskset, numactl, a batch
    // system's binding): leaf threads bound elsewhere would break the limit.
    NodeInventory within = state_->inventory;
    keep_cores(within, allowed);
    if (!within.cores.empty())
      state_->inventory = std::move(within);
    else if (!state_->inventory.cores.empty())
      std::fprintf(stderr,
                   "canopy: the thread's affinity mask holds none of the cores' first processing units; "
                   "CPU leaves use every core (pass RuntimeOptions::pus to choose)\n");
  }
  // The preferred API first: a GPU that CUDA or Level Zero drives is not used
  // again through OpenCL.
  for (auto& found : backends::discover_devices()) {
    if (options.device_ids)
      std::erase_if(found.devices, [&](const std::shared_ptr<backends::Device>& d) {
        return std::find(options.device_ids->begin(), options.device_ids->end(), d->info().id) ==
               options.device_ids->end();
      });
    state_->add_backend(std::move(found));
  }
  if (const char* config = std::getenv("CANOPY_CONFIG"); config && *config)
    state_->tree = load_config_file(config, state_->inventory);
  else
    state_->tree = default_hierarchy(state_->inventory, DiscoveryOptions::from_environment());
  std::unique_lock lock(state_->tree_mutex);
  state_->sync_workers();
}

Engine::~Engine() {
  try {
    pause();
  } catch (...) {
    // A region failed and nobody paused to hear it; the program is ending anyway.
  }
  if (dump_enabled("program")) dump("program", "canopy", program_record());
  std::unique_lock lock(state_->tree_mutex);
  state_->workers.clear();
}

std::shared_ptr<ArrayStorage> Engine::allocate(ir::ScalarType type, const Shape& shape, const MemoryTraits& traits) {
  auto array =
      std::make_shared<ArrayStorage>(type, shape, traits, state_->location_of_new_array(traits), state_->totals);
  state_->register_array(array);
  return array;
}

std::shared_ptr<ArrayStorage> Engine::wrap(ir::ScalarType type, const Shape& shape, const MemoryTraits& traits,
                                           void* data) {
  if (!data && shape.size() > 0)
    throw Error("wrap() was given a null pointer for " + shape.to_string() +
                " elements; pass the address of the program's data");
  auto array =
      std::make_shared<ArrayStorage>(type, shape, traits, state_->location_of_new_array(traits), data, state_->totals);
  state_->register_array(array);
  return array;
}

RegionHandle Engine::submit(RegionRequest request) {
  const auto& kernel = *request.kernel;
  if (request.range.rank() != kernel.dims)
    throw Error("kernel '" + kernel.name + "' has " + std::to_string(kernel.dims) +
                " index dimension(s) but the region is over " + std::to_string(request.range.rank()) + " (" +
                request.range.to_string() + "); give over() " + std::to_string(kernel.dims) + " extent(s)");
  for (int d = 0; d < request.range.rank(); ++d)
    if (request.range[d] < 0)
      throw Error("kernel '" + kernel.name + "': the region's extents cannot be negative (" +
                  request.range.to_string() + "); give over() extents of 0 or more");
  if (request.args.size() != kernel.params.size()) {
    std::string names;
    for (const auto& param : kernel.params) names += (names.empty() ? "" : ", ") + param.name;
    throw Error("kernel '" + kernel.name + "' takes " + std::to_string(kernel.params.size()) + " arguments, " +
                std::to_string(request.args.size()) + " were given; pass one per parameter (" + names + ")");
  }
  for (std::size_t p = 0; p < kernel.params.size(); ++p) {
    const auto& param = kernel.params[p];
    auto* storage = std::get_if<std::shared_ptr<ArrayStorage>>(&request.args[p]);
    if (param.is_array() != (storage != nullptr) ||
        (storage && ((*storage)->type() != param.type || (*storage)->shape().rank() != param.rank))) {
      const std::string given = storage ? (*storage)->describe() : "a value";
      const std::string wanted = param.is_array() ? "an array of " + std::string(ir::name_of(param.type)) + " with " +
                                                        std::to_string(param.rank) + " dimension(s)"
                                                  : "a value of type " + std::string(ir::name_of(param.type));
      throw Error("kernel '" + kernel.name + "': argument " + std::to_string(p) + " (" + given +
                  ") does not match parameter '" + param.name + "'; pass " + wanted);
    }
    if (storage && param.writes() && (*storage)->traits().read_only)
      throw Error("kernel '" + kernel.name + "' writes parameter '" + param.name + "' but " + (*storage)->describe() +
                  " is read-only; pass a writable array");
  }
  const std::string policy_text = request.policy.empty() ? "static" : request.policy;
  const Policy policy = resolve_runtime_policy(state_->policy_named(policy_text), std::getenv("CANOPY_POLICY"));

  auto run = std::make_shared<RegionRun>();
  run->kernel = state_->compiled(request.kernel);
  check_launch_bounds(kernel, run->kernel->sure_accesses, request.range, request.args);
  const bool adaptive = policy.kind == Policy::Kind::Adaptive || policy.kind == Policy::Kind::Any;
  if (adaptive) state_->ensure_model();  // before the tree lock: a calibration launches regions

  std::shared_lock tree_lock(state_->tree_mutex);
  const Location& at = state_->region_location(request, kernel);
  SplitContext context;
  context.idle = [&](const Location& leaf) {
    auto it = state_->workers.find(leaf.name());
    return it != state_->workers.end() && it->second->idle();
  };
  context.load = [&](const Location& leaf) {
    auto it = state_->workers.find(leaf.name());
    return it == state_->workers.end() ? 1e300 : double(it->second->outstanding());
  };
  if (policy.kind == Policy::Kind::Adaptive)
    context.shares = [&](const std::vector<const Location*>& leaves) {
      run->adaptive = state_->adaptive.plan(run->kernel->adaptive, at, leaves, request.range);
      return run->adaptive->shares;
    };
  if (policy.kind == Policy::Kind::Any)
    context.predicted_seconds = [&](const Location& leaf) {
      return state_->adaptive.predict_seconds(run->kernel->adaptive, leaf, request.range);
    };
  std::vector<Piece> pieces;
  try {
    pieces = split(at, policy, 0, request.range[0], context);
  } catch (const Error& e) {
    throw Error("region of kernel '" + kernel.name + "': " + e.what());
  }
  if (policy.kind == Policy::Kind::Any && pieces.size() == 1)
    run->adaptive = state_->adaptive.plan_any(run->kernel->adaptive, *pieces.front().leaf, request.range);
  state_->plan_writes(*run, request, pieces);
  run->fallbacks = state_->fallbacks_below(at);
  // Every piece's program, compiled now (on this thread) so that a kernel a
  // device cannot build fails the launch, naming the device.
  for (auto& piece : pieces) {
    auto worker = state_->workers.find(piece.leaf->name());
    if (worker == state_->workers.end())
      throw Error("region of kernel '" + kernel.name + "': leaf '" + piece.leaf->name() + "' (" +
                  std::string(name_of(piece.leaf->kind())) + ") has no device this build can run on");
    run->programs.push_back(state_->program_for_piece(*run, run->programs.size(), *worker->second));
  }

  // Nothing below may throw: from here on, later regions depend on this one.
  std::unique_lock order_lock(state_->order_mutex);
  run->record = std::make_shared<RegionStats>();
  run->record->kernel = kernel.name;
  run->record->location = at.name();
  run->record->policy = policy.text();
  run->record->range = request.range;
  for (std::size_t p = 0; p < kernel.params.size(); ++p) {
    auto* storage = std::get_if<std::shared_ptr<ArrayStorage>>(&request.args[p]);
    if (!storage) continue;
    const auto& traits = (*storage)->traits();
    if (traits.distance) (*storage)->set_location(state_->ancestor(at, *traits.distance).name());
    // A region without pieces touches no array and finishes at once, before
    // the regions it would follow: recorded as a user, it would stand in for
    // them and let later regions skip the wait (and free per-region memory
    // still in use).
    if (pieces.empty()) continue;
    if (traits.lifetime == Lifetime::PerRegion) run->per_region_arrays.push_back(*storage);
    auto deps = (*storage)->add_use(run->completion, kernel.params[p].reads(), kernel.params[p].writes());
    run->deps.insert(run->deps.end(), deps.begin(), deps.end());
  }
  run->args = std::move(request.args);
  run->partials.resize(pieces.size());
  run->pieces_left.store(static_cast<int>(pieces.size()));
  for (auto& piece : pieces) run->record->pieces.push_back({piece.leaf->name(), piece.begin, piece.end, 0.0});
  if (run->adaptive) run->adaptive->annotate(*run->record);
  run->submitted = std::chrono::steady_clock::now();
  {
    std::lock_guard lock(state_->stats_mutex);
    run->record->id = static_cast<std::uint64_t>(state_->regions + 1);
  }
  state_->remember(run->record);
  state_->track(run->completion, run->record);
  RegionHandle handle{run->completion, run->results};
  if (pieces.empty()) {
    finish_region(*run);
    return handle;
  }
  auto range_of = [&](const Piece& piece) {
    backends::Range range;
    range.dims = request.range.rank();
    range.begin[0] = piece.begin;
    range.end[0] = piece.end;
    for (int d = 1; d < range.dims; ++d) range.end[static_cast<std::size_t>(d)] = request.range[d];
    return range;
  };
  // A small region for an idle leaf runs here and now: handing it to the
  // worker would cost more than the work. Order is kept, since the leaf has
  // nothing queued before it and later launches start after this one returns.
  auto& first = *state_->workers.at(pieces.front().leaf->name());
  const auto first_range = range_of(pieces.front());
  if (pieces.size() == 1 && first.place() == Coherence::kHost && !run->kernel->has_loops && first.idle() &&
      run->moved.empty() && first_range.points() < run->programs.front()->inline_points() &&
      std::all_of(run->deps.begin(), run->deps.end(), [](const CompletionPtr& d) { return d->done(); })) {
    order_lock.unlock();
    state_->run_piece(run, 0, first_range, first);
    return handle;
  }
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    state_->workers.at(pieces[i].leaf->name())
        ->push([state = state_.get(), run, i, range = range_of(pieces[i])](LeafWorker& worker) {
          state->run_piece(run, i, range, worker);
        });
  }
  return handle;
}

void Engine::pause() {
  std::vector<State::InFlight> pending;
  {
    std::lock_guard lock(state_->flight_mutex);
    pending.swap(state_->in_flight);
  }
  std::exception_ptr first;
  for (auto& f : pending) {
    f.completion->wait(false);
    if (!first && f.completion->error()) first = f.completion->error();
  }
  if (first) std::rethrow_exception(first);
}

void Engine::pause(const std::string& location) {
  std::vector<std::string> leaves;
  {
    std::shared_lock lock(state_->tree_mutex);
    for (auto* leaf : state_->tree.leaves(state_->tree.at(location))) leaves.push_back(leaf->name());
  }
  // The regions with a piece on one of those leaves (whether queued on its
  // worker or running in a launching thread), and every copy.
  std::vector<CompletionPtr> pending;
  {
    std::lock_guard lock(state_->flight_mutex);
    for (const auto& f : state_->in_flight) {
      bool touches = !f.record;
      if (f.record) {
        std::lock_guard stats_lock(state_->stats_mutex);
        for (const auto& piece : f.record->pieces)
          touches = touches || std::find(leaves.begin(), leaves.end(), piece.leaf) != leaves.end();
      }
      if (touches) pending.push_back(f.completion);
    }
  }
  for (auto& c : pending) c->wait(false);
}

Hierarchy Engine::hierarchy() const {
  std::shared_lock lock(state_->tree_mutex);
  return state_->tree;
}

void Engine::reconfigure(const std::function<void(Hierarchy&)>& change) {
  std::unique_lock lock(state_->tree_mutex);
  Hierarchy next = state_->tree;
  change(next);
  // Leaves that vanish, move or change cores finish what they were given
  // first; a device that leaves the tree gives its copies back to the host.
  std::vector<int> released;
  for (auto& [name, worker] : state_->workers) {
    auto* before = state_->tree.find(name);
    auto* after = next.find(name);
    if (!before || !after || path_of(*before) != path_of(*after) || state_->stale(*worker, after)) worker->drain();
    if (worker->place() != Coherence::kHost && state_->stale(*worker, after)) released.push_back(worker->place());
  }
  for (int place : released) state_->release_place(place);
  // Arrays whose location disappears go to its nearest surviving ancestor.
  for (auto& array : state_->live_arrays()) {
    auto name = array->location();
    if (next.find(name)) continue;
    const Location* l = state_->tree.find(name);
    while (l && !next.find(l->name())) l = l->parent();
    array->wait_idle();
    array->set_location(l ? l->name() : (next.root() ? next.root()->name() : std::string()));
  }
  state_->tree = std::move(next);
  state_->sync_workers();
}

void Engine::load_config(const std::string& path) {
  auto tree = load_config_file(path, state_->inventory);
  reconfigure([&](Hierarchy& h) { h = std::move(tree); });
}

void Engine::apply_config(const std::string& text) {
  reconfigure([&](Hierarchy& h) { apply_config_text(h, text, "configuration text", state_->inventory); });
}

void Engine::move_array(const std::shared_ptr<ArrayStorage>& array, const std::string& location) {
  std::string name;
  {
    std::shared_lock lock(state_->tree_mutex);
    name = state_->tree.at(location).name();
  }
  array->wait_idle();
  array->set_location(name);
}

void Engine::copy_array(const std::shared_ptr<ArrayStorage>& destination, const std::shared_ptr<ArrayStorage>& source) {
  if (destination->type() != source->type() || !(destination->shape() == source->shape()))
    throw Error("copy: " + source->describe() + " and " + destination->describe() +
                " differ in element type or shape; copy between arrays of one type and shape");
  if (destination->traits().read_only)
    throw Error("copy: " + destination->describe() + " is read-only; copy into a writable array");
  if (destination == source) return;
  auto done = std::make_shared<Completion>();
  std::shared_lock lock(state_->tree_mutex);
  std::lock_guard order_lock(state_->order_mutex);
  auto deps = source->add_use(done, true, false);
  auto more = destination->add_use(done, false, true);
  deps.insert(deps.end(), more.begin(), more.end());
  state_->track(done);
  auto leaves = state_->tree.root() ? state_->tree.leaves(*state_->tree.root()) : std::vector<const Location*>{};
  auto it = leaves.empty() ? state_->workers.end() : state_->workers.find(leaves.front()->name());
  // Copied in host memory: the source's host copy brought up to date first,
  // the destination's device copies stale afterwards.
  auto copy = [deps, done, destination, source] {
    try {
      for (auto& d : deps) d->wait(false);
      source->sync_host(false);
      destination->sync_host(true);
      std::memcpy(destination->host_data(), source->host_data(), source->bytes());
      done->finish();
    } catch (...) {
      done->finish(std::current_exception());
    }
  };
  if (it == state_->workers.end())
    copy();
  else
    it->second->push([copy](LeafWorker&) { copy(); });
}

Stats Engine::stats() const {
  Stats stats;
  std::shared_lock tree_lock(state_->tree_mutex);
  std::lock_guard lock(state_->stats_mutex);
  stats.regions = state_->regions - state_->hidden_regions;
  for (auto& [name, leaf] : state_->leaf_stats) stats.leaves.push_back(leaf);
  for (auto& [name, worker] : state_->workers)
    if (!state_->leaf_stats.count(name)) stats.leaves.push_back(LeafStats{name, 0, 0, 0.0});
  std::sort(stats.leaves.begin(), stats.leaves.end(),
            [](const LeafStats& a, const LeafStats& b) { return a.leaf < b.leaf; });
  for (auto& r : state_->recent) stats.recent.push_back(*r);
  stats.transfers.host_to_device = state_->totals->host_to_device.load();
  stats.transfers.device_to_host = state_->totals->device_to_host.load();
  stats.transfers.device_to_device = state_->totals->device_to_device.load();
  stats.transfers.bytes_avoided = state_->totals->avoided.load();
  stats.split_writes = state_->split_writes;
  state_->recoveries.add_to(stats.recoveries, state_->totals->copies_retried.load());
  for (auto& array : state_->live_arrays()) {
    auto& copies = array->copies();
    std::lock_guard copies_lock(copies.mutex);
    const auto& c = copies.counters();
    if (c.host_to_device + c.device_to_host + c.device_to_device + c.avoided == 0) continue;
    ArrayTransferStats a;
    a.array = array->describe();
    a.host_to_device = c.host_to_device;
    a.device_to_host = c.device_to_host;
    a.device_to_device = c.device_to_device;
    a.bytes_avoided = c.avoided;
    stats.arrays.push_back(std::move(a));
  }
  return stats;
}

void Engine::set_machine_model_source(std::function<MachineModel()> source) {
  state_->model_source = std::move(source);
}

AdaptivePlacement& Engine::adaptive() { return state_->adaptive; }

const NodeInventory& Engine::inventory() const { return state_->inventory; }

std::shared_ptr<backends::Device> Engine::device(const std::string& id) const {
  auto it = state_->devices.find(id);
  return it == state_->devices.end() ? nullptr : it->second;
}

std::string Engine::describe() const {
  std::ostringstream out;
  const auto& node = state_->inventory;
  out << describe_inventory(node);
  out << "JIT target: " << short_target(jit::CpuCompiler::shared().target_description()) << "\n";
  out << hierarchy().to_text();
  return out.str();
}

std::string Engine::program_record() const {
  std::ostringstream out;
  out << "# Canopy program record\n## hierarchy\n" << hierarchy().to_text() << "## arrays\n";
  for (auto& array : state_->live_arrays()) out << array->describe() << " " << array->traits() << "\n";
  out << "## regions (most recent)\n";
  for (auto& region : stats().recent) {
    out << "region " << region.id << " " << region.kernel << " over " << region.range << " at " << region.location
        << " policy " << region.policy << ":";
    for (auto& piece : region.pieces) out << " " << piece.leaf << "[" << piece.begin << "," << piece.end << ")";
    out << "\n";
  }
  return out.str();
}

}  // namespace canopy::runtime
