// The leaf workers and the devices behind them: which devices the engine
// uses, one worker (a thread and its queue) per executing leaf of the tree,
// kept in step with the tree when it changes, and the leaves a failed piece
// may run on instead.
#include "engine_state.hpp"

#include <cstdio>

namespace canopy::runtime {

void Engine::State::add_backend(backends::BackendDevices discovered) {
  std::vector<backends::DeviceInfo> known;
  for (const auto& [id, device] : devices) known.push_back(device->info());
  const auto found = without_duplicates(std::move(discovered), known);
  add_backend_devices(inventory, found);
  for (const auto& device : found.devices) {
    devices[device->info().id] = device;
    if (!device->info().host_memory) places.emplace(device->info().id, static_cast<int>(places.size()) + 1);
  }
}

std::vector<std::shared_ptr<backends::Device>> Engine::State::leaf_devices() const {
  std::vector<std::shared_ptr<backends::Device>> found;
  for (const auto& [name, worker] : workers)
    if (worker->device()) found.push_back(worker->device());
  return found;
}

std::shared_ptr<backends::Device> Engine::State::device_of(const Location& leaf) const {
  auto it = devices.find(leaf.traits().device);
  return it == devices.end() ? nullptr : it->second;
}

bool Engine::State::stale(const LeafWorker& worker, const Location* leaf) const {
  if (!leaf || !leaf->executes()) return true;
  if (leaf->kind() == LocationKind::Cpu)
    return worker.place() != Coherence::kHost || leaf->traits().pus != worker.pus();
  return worker.device() != device_of(*leaf);
}

void Engine::State::sync_workers() {
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
  // What each device leaf's memory may hold: CANOPY_DEVICE_MEMORY, else the
  // capacity the configuration or the device gives it.
  std::lock_guard held_lock(totals->held_mutex);
  for (auto& [name, worker] : workers) {
    if (worker->place() == Coherence::kHost) continue;
    const auto limit = device_memory.find(name);
    const Location* leaf = tree.find(name);
    auto& held = totals->held[worker->place()];
    const std::int64_t capacity = limit != device_memory.end() ? limit->second : (leaf ? leaf->traits().capacity : 0);
    // A new capacity (a configuration that renames and limits the leaf)
    // starts a new peak: the old one, under another limit, read as if this
    // limit had been passed.
    if (held.capacity != capacity) held.peak = held.now;
    held.capacity = capacity;
    // The tree shows the capacity in force (it had shown the device's own).
    if (leaf && limit != device_memory.end() && leaf->traits().capacity != limit->second) {
      LocationTraits traits = leaf->traits();
      traits.capacity = limit->second;
      tree.set_traits(name, std::move(traits));
    }
  }
}

std::map<std::string, std::int64_t> device_memory_limits() {
  std::map<std::string, std::int64_t> limits;
  const std::string& text = settings().device_memory;
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t end = std::min(text.find(',', start), text.size());
    const std::string part = text.substr(start, end - start);
    const std::size_t colon = part.find(':');
    const std::int64_t bytes = colon == std::string::npos ? -1 : parse_size(part.substr(colon + 1));
    if (colon == 0 || bytes <= 0)
      throw Error("CANOPY_DEVICE_MEMORY: '" + part +
                  "' is not <leaf>:<size>; give device leaves and sizes, e.g. opencl0:256MiB,opencl1:1GiB");
    if (!limits.emplace(part.substr(0, colon), bytes).second)
      throw Error("CANOPY_DEVICE_MEMORY: '" + text + "' names the leaf '" + part.substr(0, colon) +
                  "' twice; give each device leaf one size, e.g. opencl0:256MiB,opencl1:1GiB");
    start = end + 1;
  }
  return limits;
}

// A name that is no device leaf of the tree limits nothing now (a typo had
// dropped the program's limit without a word): said once, when the Runtime
// is made. Its limit still holds for a leaf of that name added later.
void warn_of_device_memory_names(const std::map<std::string, std::int64_t>& limits, const Hierarchy& tree) {
  if (limits.empty() || !tree.root()) return;
  std::string devices;
  for (const Location* leaf : tree.leaves(*tree.root()))
    if (is_device(leaf->kind())) devices += (devices.empty() ? "" : ", ") + leaf->name();
  for (const auto& [name, bytes] : limits) {
    const Location* leaf = tree.find(name);
    if (leaf && is_device(leaf->kind())) continue;
    const std::string what = !leaf                               ? "no location of this Runtime's tree"
                             : leaf->kind() == LocationKind::Cpu ? "a CPU leaf, which works in the host's memory"
                                                                 : "a location that runs no region";
    std::fprintf(stderr,
                 "canopy: CANOPY_DEVICE_MEMORY names '%s', %s; it limits device leaves (here: %s), and holds for a "
                 "leaf of that name added later\n",
                 name.c_str(), what.c_str(), devices.empty() ? "none" : devices.c_str());
  }
}

// Each array's copies go back after the regions in flight that use it: one
// running on a leaf that stays may be writing host elements that the
// directory still calls current only at `place` (a piece records its writes
// when it ends), and the flush would land on them.
void Engine::State::release_place(int place) {
  for (auto& array : live_arrays()) {
    array->wait_idle();
    auto& copies = array->copies();
    std::lock_guard lock(copies.mutex);
    copies.release(place);
  }
}

// Those below `at`, then every CPU leaf; kept per location until the workers
// change, so a launch pays a lookup only.
std::shared_ptr<const std::vector<Executor>> Engine::State::fallbacks_below(const Location& at) {
  std::lock_guard lock(fallbacks_mutex);
  auto& known = fallbacks_known[at.name()];
  if (!known) known = std::make_shared<const std::vector<Executor>>(find_fallbacks(at));
  return known;
}

std::vector<Executor> Engine::State::find_fallbacks(const Location& at) const {
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

}  // namespace canopy::runtime
