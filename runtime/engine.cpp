// The engine itself: made from what discovery finds, it owns the arrays,
// the location tree and its leaf workers. This file holds what a program does
// around its regions (arrays, pauses, tree changes, copies, statistics and
// descriptions); the other parts live beside it (internal/engine_state.hpp
// lists them): the submit pipeline in submit.cpp, the leaf workers in
// internal/leaves.cpp, running a piece in internal/piece_run.cpp.
#include "engine.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <unordered_set>

#include <unistd.h>

#include <canopy/backends/discovery_cache.hpp>
#include <canopy/backends/fault_injection.hpp>
#include <canopy/ir/dump.hpp>
#include <canopy/ir/settings.hpp>
#include <canopy/jit/checked_file.hpp>
#include <canopy/jit/cpu_compiler.hpp>

#include "config.hpp"
#include "host_memory.hpp"
#include "internal/engine_state.hpp"
#include "numa_binding.hpp"

namespace canopy::runtime {

namespace {

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

void Engine::State::ensure_model() {
  std::call_once(model_once, [&] {
    // A calibration's regions and copies are the runtime's, not the
    // program's: rt.stats() leaves them out.
    const StatsBook::Mark before = book.mark();
    const TransferTotals& t = *totals;
    const std::array<std::int64_t, 4> moved_before{t.host_to_device.load(), t.device_to_host.load(),
                                                   t.device_to_device.load(), t.avoided.load()};
    std::optional<MachineModel> model;
    try {
      if (model_source) model = model_source();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "canopy: adaptive placement runs without a machine model: %s\n", e.what());
    }
    book.forget_since(before);
    totals->host_to_device.store(moved_before[0]);
    totals->device_to_host.store(moved_before[1]);
    totals->device_to_device.store(moved_before[2]);
    totals->avoided.store(moved_before[3]);
    std::map<std::string, std::string> drivers;
    for (const auto& [id, device] : devices) drivers[id] = device->info().fingerprint;
    adaptive.set_model(std::move(model), fingerprint_of(inventory, Hierarchy(), drivers));
  });
}

Policy Engine::State::policy_named(const std::string& text) {
  std::lock_guard lock(policies_mutex);
  auto it = policies.find(text);
  if (it == policies.end()) it = policies.emplace(text, parse_policy(text)).first;
  return it->second;
}

void Engine::State::register_array(const std::shared_ptr<ArrayStorage>& array) {
  std::lock_guard lock(arrays_mutex);
  std::erase_if(arrays, [](const std::weak_ptr<ArrayStorage>& a) { return a.expired(); });
  arrays.push_back(array);
}

std::vector<std::shared_ptr<ArrayStorage>> Engine::State::live_arrays() {
  std::lock_guard lock(arrays_mutex);
  std::vector<std::shared_ptr<ArrayStorage>> live;
  for (auto& weak : arrays)
    if (auto a = weak.lock()) live.push_back(std::move(a));
  return live;
}

std::vector<std::shared_ptr<ArrayStorage>> Engine::State::wraps_over(std::uintptr_t first, std::size_t bytes,
                                                                     const ArrayStorage* array) {
  std::vector<std::shared_ptr<ArrayStorage>> found;
  const std::uintptr_t end = first + bytes;
  auto it = wraps.lower_bound(first > widest_wrap ? first - widest_wrap : 0);
  while (it != wraps.end() && it->first < end) {
    auto other = it->second.array.lock();
    if (!other) {
      it = wraps.erase(it);  // its array is gone
      continue;
    }
    if (other.get() != array && it->first + it->second.bytes > first) found.push_back(std::move(other));
    ++it;
  }
  return found;
}

void Engine::State::register_wrap(const std::shared_ptr<ArrayStorage>& array) {
  const auto first = reinterpret_cast<std::uintptr_t>(array->wrapped_memory());
  if (!first || array->bytes() == 0) return;
  std::lock_guard lock(arrays_mutex);
  for (const auto& other : wraps_over(first, array->bytes(), array.get())) {
    other->mark_shared_memory();
    array->mark_shared_memory();
  }
  // Blocks of arrays gone are dropped when a scan meets them, and all at
  // once whenever the map has doubled (a loop that wraps fresh buffers
  // would otherwise keep one entry per buffer for good).
  if (wraps.size() >= std::max<std::size_t>(64, 2 * wraps_after_prune)) {
    std::erase_if(wraps, [](const auto& entry) { return entry.second.array.expired(); });
    wraps_after_prune = wraps.size();
  }
  wraps.emplace(first, WrappedMemory{array->bytes(), array});
  widest_wrap = std::max(widest_wrap, array->bytes());
}

bool Engine::State::wait_for_overlapping_wraps(const ArrayStorage& array) {
  if (!array.shares_memory()) return false;
  std::vector<std::shared_ptr<ArrayStorage>> others;
  {
    std::lock_guard lock(arrays_mutex);
    others = wraps_over(reinterpret_cast<std::uintptr_t>(array.wrapped_memory()), array.bytes(), &array);
  }
  for (const auto& other : others) {
    other->start_recorded_elsewhere(this);
    other->wait_idle();
  }
  return !others.empty();
}

std::string Engine::State::location_of_new_array(const MemoryTraits& traits) {
  std::shared_lock lock(tree_mutex);
  if (!tree.root()) throw Error("the hierarchy is empty: load a configuration or add a location first");
  if (traits.distance) return tree.root()->name();  // placed when a region uses it
  if (traits.location.empty()) return tree.root()->name();
  return tree.at(traits.location).name();
}

namespace {

// Host, unified and file memory: locations that hold arrays' host copies.
bool is_memory(const Location& l) {
  return l.kind() == LocationKind::HostMemory || l.kind() == LocationKind::UnifiedMemory ||
         l.kind() == LocationKind::FileMemory;
}

bool at_or_below(const Location* l, const Location& memory) {
  for (; l; l = l->parent())
    if (l == &memory) return true;
  return false;
}

}  // namespace

std::int64_t Engine::State::bytes_in_memory(const Location& memory) const {
  std::int64_t bytes = totals->host_bytes_at(memory.name());
  for (const Location* child : memory.children()) bytes += bytes_in_memory(*child);
  return bytes;
}

void Engine::State::make_room_in_memory(const std::string& location, std::int64_t bytes, const ArrayStorage* placing) {
  if (bytes <= 0) return;
  for (;;) {
    std::shared_ptr<ArrayStorage> victim;
    std::string parent, memory_name;
    {
      std::shared_lock lock(tree_mutex);
      for (const Location* m = tree.find(location); m && !victim; m = m->parent()) {
        const std::int64_t capacity = m->traits().capacity;
        if (!is_memory(*m) || capacity <= 0) continue;
        // `placing` (an array moving within the memory) counts once.
        std::int64_t held = bytes_in_memory(*m);
        if (placing && at_or_below(tree.find(placing->location()), *m))
          held -= static_cast<std::int64_t>(placing->bytes());
        if (held + bytes <= capacity) continue;
        auto refuse = [&](const std::string& why) {
          throw Error("an array of " + std::to_string(bytes) + " bytes does not fit memory location '" + m->name() +
                      "' (capacity " + std::to_string(capacity) +
                      " bytes, from the configuration's size or what discovery found; it holds " +
                      std::to_string(held) + " bytes of other arrays): " + why);
        };
        if (bytes > capacity) refuse("the array alone is larger; place it higher in the tree");
        if (!m->parent()) refuse("it is the root, with no parent to move arrays to");
        victim = least_recently_used_in(*m, placing);  // only when full
        if (!victim) refuse("no array of Canopy's there to move");
        parent = m->parent()->name();
        memory_name = m->name();
      }
    }
    if (!victim) {
      // Every array together against the node's physical memory, whatever
      // the tree says its memories hold: past it, the first touch of the
      // last pages would end the process (canopy's stream example with
      // three arrays of 16 GB on a 24 GB node was killed without a word).
      std::int64_t physical = 0;
      for (const NumaInfo& numa : inventory.numa_nodes) physical += numa.capacity;
      std::shared_lock lock(tree_mutex);
      if (physical <= 0 || !tree.root()) return;
      std::int64_t held = bytes_in_memory(*tree.root());
      if (placing && placing->owns_memory()) held -= static_cast<std::int64_t>(placing->bytes());
      if (held + bytes <= physical) return;
      throw Error("an array of " + std::to_string(bytes) + " bytes does not fit this node's memory (" +
                  std::to_string(physical) + " bytes in its NUMA nodes; Canopy's other arrays hold " +
                  std::to_string(held) + " bytes): free arrays, or ask for smaller ones");
    }
    move_up(*victim, parent, memory_name);
  }
}

std::shared_ptr<ArrayStorage> Engine::State::least_recently_used_in(const Location& memory,
                                                                    const ArrayStorage* placing) {
  std::shared_ptr<ArrayStorage> found;
  for (const auto& array : live_arrays())
    if (array.get() != placing && array->owns_memory() && at_or_below(tree.find(array->location()), memory) &&
        (!found || array->last_use() < found->last_use()))
      found = array;
  return found;
}

// The only host copy moves up: visible to everything below the parent, the
// memory's own subtree included.
void Engine::State::move_up(ArrayStorage& array, const std::string& parent, const std::string& memory) {
  array.wait_idle();
  array.set_location(parent);
  {
    std::shared_lock lock(tree_mutex);
    bind_pages_to_location(array);
  }
  std::lock_guard ledger_lock(memory_mutex);
  memory_ledgers[memory].evicted += static_cast<std::int64_t>(array.bytes());
}

void Engine::State::fit_memories() {
  for (;;) {
    std::shared_ptr<ArrayStorage> victim;
    std::string parent, memory_name;
    {
      std::shared_lock lock(tree_mutex);
      if (!tree.root()) return;
      for (const Location* m : tree.all()) {
        const std::int64_t capacity = m->traits().capacity;
        if (!is_memory(*m) || capacity <= 0 || !m->parent() || bytes_in_memory(*m) <= capacity) continue;
        victim = least_recently_used_in(*m, nullptr);
        if (!victim) continue;
        parent = m->parent()->name();
        memory_name = m->name();
        break;
      }
    }
    if (!victim) return;
    move_up(*victim, parent, memory_name);
  }
}

void Engine::State::note_memory_peaks(const std::string& location) {
  std::shared_lock lock(tree_mutex);
  std::lock_guard ledger_lock(memory_mutex);
  for (const Location* m = tree.find(location); m; m = m->parent()) {
    if (!is_memory(*m)) continue;
    auto& ledger = memory_ledgers[m->name()];
    ledger.peak = std::max(ledger.peak, bytes_in_memory(*m));
  }
}

void Engine::State::bind_pages_to_location(ArrayStorage& array) {
  if (auto os_node = numa_node_for(tree, inventory, array.location())) array.bind_to_numa_node(*os_node);
}

void Engine::State::track(const CompletionPtr& completion, std::shared_ptr<RegionStats> record) {
  std::lock_guard lock(flight_mutex);
  prune_when_doubled(in_flight, prune_in_flight_at,
                     [](const InFlight& f) { return f.completion->done() && !f.completion->error(); });
  in_flight.push_back({completion, std::move(record)});
}

namespace {

// The environment read again, and CANOPY_FAULT, which only the backends can
// parse, checked before anything uses it (CANOPY_POLICY is resolved by State).
void read_settings() {
  const Settings& s = reload_settings();
  if (!s.fault.empty()) backends::check_fault_plan(s.fault);
}

}  // namespace

Engine::Engine(const RuntimeOptions& options) : state_((read_settings(), std::make_unique<State>())) {
  // The node's inventory and its devices are remembered under one key, read once.
  const std::string cache_dir = jit::cache_directory();
  const std::string key = cache_dir.empty() || cache_dir == "off" ? std::string() : backends::discovery_key();
  state_->inventory = discover_node_cached(cache_dir, key);
  if (!options.pus.empty()) {
    keep_cores(state_->inventory, options.pus);
    if (state_->inventory.cores.empty())
      throw Error("the runtime was given processing units none of which is a core of this node");
  } else if (const std::vector<unsigned> allowed = process_affinity(); !allowed.empty()) {
    // Only the cores this thread may run on (taskset, numactl, a batch
    // system's binding): leaf threads bound elsewhere would break the limit.
    // An OpenMP runtime's places count too: with OMP_PROC_BIND set, libgomp
    // binds the initial thread to the first place before main() runs, and a
    // hybrid program's Runtime saw one core of the process's.
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
  for (auto& found : discover_selected_backends(key)) {
    if (options.device_ids)
      std::erase_if(found.devices, [&](const std::shared_ptr<backends::Device>& d) {
        return std::find(options.device_ids->begin(), options.device_ids->end(), d->info().id) ==
               options.device_ids->end();
      });
    state_->add_backend(std::move(found));
  }
  if (const std::string& config = settings().config; !config.empty())
    state_->tree = load_config_file(config, state_->inventory, &state_->config_types);
  else
    state_->tree = default_hierarchy(state_->inventory, DiscoveryOptions::from_environment());
  state_->recorder.enabled = settings().fuse != "off";
  state_->place_sequences = settings().sequence_placement != "off";
  state_->always_follow = settings().sequence_placement == "always";
  state_->recorder.eager = settings().fuse == "eager";
  std::unique_lock lock(state_->tree_mutex);
  state_->sync_workers();
  warn_of_device_memory_names(state_->device_memory, state_->tree);
}

Engine::~Engine() {
  if (forks_so_far() != state_->forks_before) {
    // A child of fork() ending: the parent's threads, which the state would
    // join, do not exist here. Left as it is, for the process's end.
    (void)state_.release();
    return;
  }
  try {
    pause();
  } catch (const std::exception& e) {
    // A region failed and nothing reported it to the program (no pause(),
    // host view or reduce() after it): said here, not lost.
    std::fprintf(stderr, "canopy: a region failed and the program was not told before its Runtime ended: %s\n",
                 e.what());
  } catch (...) {
    std::fprintf(stderr, "canopy: a region failed and the program was not told before its Runtime ended\n");
  }
  state_->stop_recorder();
  if (dump_enabled("program")) dump("program", "canopy", program_record());
  state_->kernels.stop_background();  // compiles ahead are for launches that will not come
  std::unique_lock lock(state_->tree_mutex);
  state_->workers.clear();
  state_->trace_session.reset();  // writes CANOPY_TRACE's file, now that every piece has run
}

std::shared_ptr<ArrayStorage> Engine::allocate(ir::ScalarType type, const Shape& shape, const MemoryTraits& traits) {
  const std::string location = state_->location_of_new_array(traits);
  auto array = std::make_shared<ArrayStorage>(type, shape, traits, location, state_->totals);
  state_->make_room_in_memory(location, static_cast<std::int64_t>(array->bytes()), array.get());
  {
    std::shared_lock lock(state_->tree_mutex);
    state_->bind_pages_to_location(*array);
  }
  state_->register_array(array);
  state_->note_memory_peaks(location);
  return array;
}

std::shared_ptr<ArrayStorage> Engine::wrap(ir::ScalarType type, const Shape& shape, const MemoryTraits& traits,
                                           void* data) {
  if (!data && shape.size() > 0)
    throw Error("wrap() was given a null pointer for " + shape.to_string() +
                " elements; pass the address of the program's data");
  // Kernels load whole elements (and vectors of them) from it: a pointer
  // off its type's alignment is undefined behaviour on the host and faults
  // on some devices.
  if (const std::size_t align = ir::size_of(type); reinterpret_cast<std::uintptr_t>(data) % align != 0)
    throw Error("wrap() was given a pointer that is not aligned to its " + std::to_string(align) + "-byte " +
                std::string(ir::name_of(type)) + " elements; pass the address of an array of them");
  if (traits.lifetime == Lifetime::PerRegion)
    throw Error(
        "wrap() was given per_region(), whose contents go after each region, for memory that is the "
        "program's; make the array with rt.array() instead");
  auto array =
      std::make_shared<ArrayStorage>(type, shape, traits, state_->location_of_new_array(traits), data, state_->totals);
  state_->register_array(array);
  state_->register_wrap(array);
  return array;
}

void Engine::set_fusion(bool on) {
  std::unique_lock lock(state_->recorder.mutex);
  if (!on) state_->start_recorded();
  state_->recorder.enabled = on;
}

bool Engine::fusion() const {
  std::unique_lock lock(state_->recorder.mutex);
  return state_->recorder.enabled;
}

void Engine::pause() {
  refuse_after_fork(state_->forks_before, "pause()");
  state_->start_recorded(true);
  const trace::PauseSpan traced;
  // A copy of the list, taken off it once waited for: a second thread's
  // pause() meanwhile waits for the same regions (with the list taken, it had
  // returned at once).
  std::vector<State::InFlight> pending;
  {
    std::lock_guard lock(state_->flight_mutex);
    pending = state_->in_flight;
  }
  // The newest first: in a chain of dependent regions it ends last, so the
  // caller sleeps once instead of polling through every region in turn (and
  // taking turns on a core with the worker that runs them).
  for (auto f = pending.rbegin(); f != pending.rend(); ++f) f->completion->wait(false);
  {
    std::unordered_set<const Completion*> waited;
    for (const auto& f : pending) waited.insert(f.completion.get());
    std::lock_guard lock(state_->flight_mutex);
    std::erase_if(state_->in_flight, [&](const State::InFlight& f) { return waited.count(f.completion.get()) != 0; });
    state_->prune_in_flight_at = 0;
  }
  // The first failure not reported yet (by a host view or reduce()); every
  // one counts as reported from here on.
  std::exception_ptr first;
  for (auto& f : pending)
    if (auto error = f.completion->claim_error(); error && !first) first = error;
  if (first) std::rethrow_exception(first);
}

void Engine::pause(const std::string& location) {
  refuse_after_fork(state_->forks_before, "pause(location)");
  state_->start_recorded();  // the recorder keeps no leaves: all of it
  const trace::PauseSpan traced(location);
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
    for (const auto& f : state_->in_flight)
      if (!f.record || state_->book.touches(*f.record, leaves)) pending.push_back(f.completion);
  }
  for (auto c = pending.rbegin(); c != pending.rend(); ++c) (*c)->wait(false);
}

Hierarchy Engine::hierarchy() const {
  std::shared_lock lock(state_->tree_mutex);
  return state_->tree;
}

void Engine::reconfigure(const std::function<void(Hierarchy&)>& change) {
  // Recorded regions run on the tree they were split over; none is recorded until the change is done.
  std::unique_lock record_lock(state_->recorder.mutex);
  state_->start_recorded();
  std::unique_lock lock(state_->tree_mutex);
  Hierarchy next = state_->tree;
  change(next);
  if (!next.root() && state_->tree.root())
    throw Error("the change would leave no tree: it removes the root '" + state_->tree.root()->name() +
                "', where every array is visible; remove or move the locations below it instead, or give a whole "
                "new tree (load_config)");
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
  lock.unlock();
  record_lock.unlock();
  // A memory with a capacity that now holds more (arrays moved below it, or
  // a smaller size) moves its least recently used arrays up.
  state_->fit_memories();
}

void Engine::check_leaf(const std::string& name, LocationKind kind, const LocationTraits& traits) const {
  if (!executes(kind)) return;
  const std::string what = "location '" + name + "' (" + std::string(name_of(kind)) + ")";
  if (kind == LocationKind::Cpu) {
    const long configured = sysconf(_SC_NPROCESSORS_CONF);
    for (unsigned pu : traits.pus)
      if (configured > 0 && pu >= static_cast<unsigned long>(configured))
        throw Error(
            what + " is bound to processing unit " + std::to_string(pu) + ", which this node does not have (" +
            std::to_string(configured) +
            " processing units); give pus of this node, or add it by type (add_location(name, \"cpu\", parent)) "
            "to bind it to cores the tree does not use yet");
    // One thread per unit listed. Two leaves may list one unit (three
    // leaves on a two-core machine, to try a split over three): their
    // threads take turns on it.
    for (auto pu = traits.pus.begin(); pu != traits.pus.end(); ++pu)
      if (std::find(traits.pus.begin(), pu, *pu) != pu)
        throw Error(what + " lists processing unit " + std::to_string(*pu) +
                    " twice; a CPU leaf runs one thread per processing unit it lists");
    return;
  }
  std::string started;
  for (const auto& device : state_->inventory.devices) {
    if (device.kind != kind) continue;
    if (device.id == traits.device && state_->devices.count(device.id)) return;
    if (state_->devices.count(device.id)) started += (started.empty() ? "" : ", ") + device.id;
  }
  const std::string devices =
      "this Runtime's " + std::string(name_of(kind)) + " devices: " + (started.empty() ? "none" : started);
  throw Error(what +
              (traits.device.empty()
                   ? " names no device (its traits' device is empty; " + devices + ")"
                   : " names device '" + traits.device + "', which this Runtime did not start (" + devices + ")") +
              "; give the id of one of them as its traits' device, or add it by type (add_location(name, \"" +
              std::string(name_of(kind)) + "\", parent)) to bind it to a device the tree does not use yet");
}

// The loctypes a text declares are kept only when it loads (under tree_mutex,
// as reconfigure holds it while `change` runs).
void Engine::load_config(const std::string& path) {
  reconfigure([&](Hierarchy& h) {
    ConfigTypes types = state_->config_types;
    h = load_config_file(path, state_->inventory, &types);
    state_->config_types = std::move(types);
  });
}

void Engine::apply_config(const std::string& text) {
  reconfigure([&](Hierarchy& h) {
    ConfigTypes types = state_->config_types;
    apply_config_text(h, text, "configuration text", state_->inventory, &types);
    state_->config_types = std::move(types);
  });
}

void Engine::move_array(const std::shared_ptr<ArrayStorage>& array, const std::string& location) {
  state_->start_recorded();
  std::string name;
  {
    std::shared_lock lock(state_->tree_mutex);
    name = state_->tree.at(location).name();
  }
  if (array->owns_memory()) state_->make_room_in_memory(name, static_cast<std::int64_t>(array->bytes()), array.get());
  array->wait_idle();
  array->set_location(name);
  {
    std::shared_lock lock(state_->tree_mutex);
    state_->bind_pages_to_location(*array);
  }
  state_->note_memory_peaks(name);
}

void Engine::copy_array(const std::shared_ptr<ArrayStorage>& destination, const std::shared_ptr<ArrayStorage>& source) {
  if (destination->type() != source->type() || !(destination->shape() == source->shape()))
    throw Error("copy: " + source->describe() + " and " + destination->describe() +
                " differ in element type or shape; copy between arrays of one type and shape");
  if (destination->traits().read_only)
    throw Error("copy: " + destination->describe() + " is read-only; copy into a writable array");
  if (destination == source) return;
  state_->start_recorded();  // regions launched before the copy come first, of any Runtime
  source->start_recorded_elsewhere(state_.get());
  destination->start_recorded_elsewhere(state_.get());
  for (const auto& array : {source, destination})
    if (state_->wait_for_overlapping_wraps(*array)) array->memory_shared_may_have_changed();
  auto done = std::make_shared<Completion>();
  std::shared_lock lock(state_->tree_mutex);
  std::lock_guard order_lock(state_->order_mutex);
  // Zeros still owed are settled now, in launch order, as a region's are at
  // its launch: a region launched after the copy that overwrites the source
  // settles them without clearing (its writes pay the debt), and the copy,
  // running later, had read the dropped array's values left in the block
  // (found by a new user). The copy overwrites every element of the
  // destination.
  source->settle_contents(false);
  destination->settle_contents(true);

  CompletionPtr source_writer;
  auto deps = source->add_use(done, true, false, &source_writer);
  auto more = destination->add_use(done, false, true);
  deps.insert(deps.end(), more.begin(), more.end());
  state_->track(done);
  auto leaves = state_->tree.root() ? state_->tree.leaves(*state_->tree.root()) : std::vector<const Location*>{};
  auto it = leaves.empty() ? state_->workers.end() : state_->workers.find(leaves.front()->name());
  // Copied in host memory: the source's host copy brought up to date first,
  // the destination's device copies stale afterwards.
  auto copy = [deps, done, destination, source, source_writer] {
    try {
      for (auto& d : deps) d->wait(false);
      // The source's last writer failed unreported: the copy fails with it (see run_piece).
      if (source_writer && source_writer->unreported_error()) {
        done->finish_as(source_writer);
        return;
      }
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
  state_->start_recorded();  // what was launched is in it (started, not waited for)
  Stats stats;
  std::shared_lock tree_lock(state_->tree_mutex);
  std::vector<std::string> leaf_names;
  for (const auto& [name, worker] : state_->workers) leaf_names.push_back(name);
  state_->book.fill(stats, leaf_names);
  stats.transfers.host_to_device = state_->totals->host_to_device.load();
  stats.transfers.device_to_host = state_->totals->device_to_host.load();
  stats.transfers.device_to_device = state_->totals->device_to_device.load();
  stats.transfers.bytes_avoided = state_->totals->avoided.load();
  state_->recoveries.add_to(stats.recoveries, state_->totals->copies_retried.load());
  {
    std::lock_guard held_lock(state_->totals->held_mutex);
    for (const auto& [place, held] : state_->totals->held) {
      // A device no leaf runs now (its leaf removed or renamed): its id.
      std::string leaf = "place " + std::to_string(place);
      for (const auto& [id, device_place] : state_->places)
        if (device_place == place) leaf = id + " (no leaf)";
      for (const auto& [name, worker] : state_->workers)
        if (worker->place() == place) leaf = name;
      stats.device_memory.push_back({leaf, held.now, held.peak, held.capacity, held.evicted, held.written_back});
    }
  }
  {
    std::lock_guard ledger_lock(state_->memory_mutex);
    for (const Location* l : state_->tree.all()) {
      if (!is_memory(*l)) continue;
      const auto ledger = state_->memory_ledgers.find(l->name());
      const std::int64_t held = state_->bytes_in_memory(*l);
      const std::int64_t peak = ledger == state_->memory_ledgers.end() ? 0 : ledger->second.peak;
      stats.memory_locations.push_back({l->name(), held, std::max(peak, held), l->traits().capacity,
                                        ledger == state_->memory_ledgers.end() ? 0 : ledger->second.evicted});
    }
  }
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
  out << "Host memory: " << describe_host_pages() << "\n";
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
    // Its edges: a region depends on the earlier ones that pass an array it passes.
    if (!region.arrays.empty()) {
      out << "  arrays:";
      for (std::size_t i = 0; i < region.arrays.size(); ++i) out << (i ? ", " : " ") << region.arrays[i];
      out << "\n";
    }
    if (!region.follows.empty()) out << "  split as " << region.follows << " left its inputs\n";
    // The recorder's rewrite: the regions as launched, and what ran instead.
    if (!region.fused.empty()) {
      out << "  fused: launched as";
      for (auto& k : region.fused) out << " " << k;
      out << "; one kernel, " << region.arrays_in_registers << " array(s) kept in registers\n";
    }
  }
  return out.str();
}

}  // namespace canopy::runtime
