#include "recorder.hpp"

#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <canopy/backends/cpu/thread_pool.hpp>
#include <canopy/ir/passes/fuse.hpp>
#include <cerrno>
#include <map>
#include <optional>
#include <utility>

#include "engine_state.hpp"

namespace canopy::runtime {

namespace {

const std::shared_ptr<ArrayStorage>* array_of(const ArgRef& arg) {
  return std::get_if<std::shared_ptr<ArrayStorage>>(&arg);
}

// Whether `region` passes an array some region of `chain` passes: the only
// way two regions depend on each other (dependences are by array identity).
bool shares_array(const std::vector<RecordedRegion>& chain, const RecordedRegion& region) {
  for (const auto& arg : region.request.args) {
    auto* storage = array_of(arg);
    if (!storage) continue;
    for (const auto& recorded : chain)
      for (const auto& other : recorded.request.args)
        if (auto* theirs = array_of(other); theirs && theirs->get() == storage->get()) return true;
  }
  return false;
}

bool joins(const RecordedRegion& first, const RecordedRegion& next) {
  return next.request.range == first.request.range && next.policy.text() == first.policy.text() &&
         next.request.location == first.request.location && next.at == first.at;
}

// The fused kernel's slots for a chain: each array once, each scalar and
// reduction of each region on its own; which arrays only the chain uses
// (intermediates, kept in locals); and the signature the fused kernel is
// cached by (the kernels, how their parameters map to slots, which are local).
struct ChainPlan {
  std::vector<ir::FusedSlot> slots;
  std::vector<ArgRef> slot_args;  // per slot; an intermediate's is its array, not passed
  std::vector<ir::FusedPart> parts;
  std::string signature;
  std::string name;
};

ChainPlan plan_chain(const std::vector<RecordedRegion>& chain) {
  ChainPlan plan;
  std::map<const ArrayStorage*, int> slot_of_array;
  std::map<const ArrayStorage*, long> references;  // in the chain's arguments
  for (std::size_t i = 0; i < chain.size(); ++i) {
    const auto& kernel = *chain[i].run->kernel->optimized;
    plan.name += (i ? "." : "") + kernel.name;
    ir::FusedPart part{&kernel, {}};
    for (std::size_t p = 0; p < kernel.params.size(); ++p) {
      const auto& arg = chain[i].request.args[p];
      auto* storage = array_of(arg);
      int slot = -1;
      if (storage) {
        ++references[storage->get()];
        auto found = slot_of_array.find(storage->get());
        if (found != slot_of_array.end()) slot = found->second;
      }
      if (slot < 0) {
        slot = static_cast<int>(plan.slots.size());
        ir::Param param = kernel.params[p];
        param.name = "s" + std::to_string(slot) + "_" + param.name;
        plan.slots.push_back({param, false});
        plan.slot_args.push_back(arg);
        if (storage) slot_of_array[storage->get()] = slot;
      }
      part.slots.push_back(slot);
      plan.signature += std::to_string(slot) + ",";
    }
    plan.parts.push_back(std::move(part));
    plan.signature += std::to_string(reinterpret_cast<std::uintptr_t>(chain[i].run->kernel->traced.get())) + ";";
  }
  // Intermediates: no handle of the program holds the array (the chain's
  // arguments are all its references), Canopy owns its memory, no kernel
  // reads its extent, and the first region that uses it writes it on every
  // path without reading it.
  for (const auto& [array, slot] : slot_of_array) {
    const auto& storage = std::get<std::shared_ptr<ArrayStorage>>(plan.slot_args[static_cast<std::size_t>(slot)]);
    // plan.slot_args holds one more reference than the chain's arguments.
    if (storage.use_count() != references[array] + 1 || !array->owns_memory()) continue;
    bool local = true, seen = false;
    for (std::size_t i = 0; i < chain.size() && local; ++i) {
      const auto& part = plan.parts[i];
      for (std::size_t p = 0; p < part.slots.size() && local; ++p) {
        if (part.slots[p] != slot) continue;
        if (ir::reads_extent_of(*part.kernel, static_cast<int>(p))) local = false;
        if (seen) continue;
        const auto* footprint = chain[i].run->kernel->footprint.of(static_cast<int>(p));
        if (!footprint || footprint->reads.present || !footprint->writes.unconditional) local = false;
      }
      for (int s : part.slots) seen = seen || s == slot;
    }
    plan.slots[static_cast<std::size_t>(slot)].local = local;
  }
  for (const auto& slot : plan.slots) plan.signature += slot.local ? 'L' : 'M';
  return plan;
}

// Whether the kernel has a reduction parameter.
bool has_reduction(const ir::Kernel& kernel) {
  return std::any_of(kernel.params.begin(), kernel.params.end(), [](const ir::Param& p) { return p.is_reduction(); });
}

}  // namespace

bool Engine::State::fusable(const RegionRun& run, const RegionRequest& request, const std::vector<Piece>& pieces) {
  if (!recorder.enabled || kernels.checked() || pieces.empty() || !run.moved.empty() || !run.kernel->own_point_only)
    return false;
  return std::none_of(request.args.begin(), request.args.end(), [](const ArgRef& arg) {
    const auto* storage = array_of(arg);
    if (!storage) return false;
    const auto& traits = (*storage)->traits();
    return traits.distance || traits.merge || traits.lifetime != Lifetime::Persistent;
  });
}

bool Engine::State::waits_in_recorder(const RegionRun& run, const RegionRequest& request,
                                      const std::vector<Piece>& pieces) {
  return fusable(run, request, pieces) && !has_reduction(*run.kernel->optimized);
}

void Engine::State::record_region(RecordedRegion region) {
  const bool reduces = has_reduction(*region.run->kernel->optimized);  // ends its chain
  const bool fusable = this->fusable(*region.run, region.request, region.pieces);
  // The chain it joins: the one over the same range, policy and location
  // (never two at once). Every other chain it shares an array with starts
  // first, oldest first: it depends on them, or they on it. (Starting a chain
  // may start others, so each step looks again.)
  auto& chains = recorder.chains;
  auto joined = [&]() -> Recorder::Chain* {
    if (fusable)
      for (auto& chain : chains)
        if (joins(chain.regions.front(), region)) return &chain;
    return nullptr;
  };
  for (;;) {
    const Recorder::Chain* joins_now = joined();
    auto other = std::find_if(chains.begin(), chains.end(), [&](const Recorder::Chain& chain) {
      return &chain != joins_now && shares_array(chain.regions, region);
    });
    if (other == chains.end()) break;
    start_chain(static_cast<std::size_t>(other - chains.begin()));
  }
  if (!fusable) {
    start_region(region);
    return;
  }
  Recorder::Chain* chain = joined();
  if (!chain) {
    if (chains.size() >= Recorder::kMaxChains) start_chain(0);
    chain = &chains.emplace_back(Recorder::Chain{{}, std::chrono::steady_clock::now()});
  }
  count_recorded(region.request.args, +1);
  chain->regions.push_back(std::move(region));
  if (reduces || chain->regions.size() >= Recorder::kMaxChain) {
    start_chain(static_cast<std::size_t>(chain - chains.data()));
    return;
  }
  if (!recorder.timer.joinable()) {
    recorder.timer_fd = ::timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
    if (recorder.timer_fd < 0) {  // no timer: the chains wait for a pause or a dependent launch
      start_chain(static_cast<std::size_t>(chain - chains.data()));
      return;
    }
    recorder.timer = std::thread([this] { run_timer(); });
    backends::cpu::name_thread(recorder.timer, "recorder");
  }
  if (!recorder.armed) arm_recorder(chains.front().first_recorded + Recorder::kDelay);
}

void Engine::State::arm_recorder(std::chrono::steady_clock::time_point deadline) {
  // steady_clock is CLOCK_MONOTONIC (libstdc++ and libc++ on Linux).
  const auto since = std::chrono::duration_cast<std::chrono::nanoseconds>(deadline.time_since_epoch()).count();
  itimerspec at{};
  at.it_value.tv_sec = static_cast<time_t>(since / 1000000000);
  at.it_value.tv_nsec = static_cast<long>(since % 1000000000);
  if (at.it_value.tv_sec == 0 && at.it_value.tv_nsec == 0) at.it_value.tv_nsec = 1;  // zero would disarm it
  recorder.armed = ::timerfd_settime(recorder.timer_fd, TFD_TIMER_ABSTIME, &at, nullptr) == 0;
}

void Engine::State::run_timer() {
  for (;;) {
    // Blocks until the timer fires (a deadline, or the stop).
    std::uint64_t fired = 0;
    const bool woke = ::read(recorder.timer_fd, &fired, sizeof fired) == static_cast<ssize_t>(sizeof fired);
    std::unique_lock lock(recorder.mutex);
    if (recorder.stopping) return;
    if (!woke && errno != EINTR) {  // the timer broke: no region waits from here on
      recorder.armed = false;
      recorder.enabled = false;
      std::shared_lock tree_lock(tree_mutex);
      while (!recorder.chains.empty()) start_chain(0);
      return;
    }
    recorder.armed = false;
    auto& chains = recorder.chains;
    const auto now = std::chrono::steady_clock::now();
    {
      std::shared_lock tree_lock(tree_mutex);
      while (!chains.empty() && chains.front().first_recorded + Recorder::kDelay <= now) start_chain(0);
    }
    if (!chains.empty()) arm_recorder(chains.front().first_recorded + Recorder::kDelay);
  }
}

void Engine::State::start_recorded_of(void* state, bool waits, const ArrayStorage* array) {
  static_cast<Engine::State*>(state)->start_recorded(waits, array);
}

void Engine::State::count_recorded(const std::vector<ArgRef>& args, int delta) {
  for (const auto& arg : args)
    if (auto* storage = array_of(arg)) (*storage)->add_recorded(this, &start_recorded_of, delta);
}

void Engine::State::start_recorded(bool waits, const ArrayStorage* array) {
  std::unique_lock lock(recorder.mutex);
  if (recorder.chains.empty()) return;
  std::shared_lock tree_lock(tree_mutex);
  // Nested (the recursive mutex held already by this thread, as in
  // reconfigure): never kept for the caller, which holds the recorder.
  const bool outermost = !caller_waits;
  if (outermost) {
    caller_waits = waits;
    caller_waits_for = array;
  }
  while (!recorder.chains.empty()) start_chain(0);
  if (!outermost) return;
  caller_waits = false;
  std::optional<CallerPiece> mine = std::exchange(caller_piece, std::nullopt);
  if (!mine) return;
  // Launches from other threads go on meanwhile; the tree (and so the leaf)
  // stays as it is until the piece is done.
  lock.unlock();
  run_piece(mine->run, 0, mine->range, *mine->leaf);
}

void Engine::State::start_chain(std::size_t index) {
  std::vector<RecordedRegion> chain = std::move(recorder.chains[index].regions);
  recorder.chains.erase(recorder.chains.begin() + static_cast<std::ptrdiff_t>(index));
  bool fused = false;
  // A region of the chain reads what a failed region left, unreported: it
  // fails with that failure (run_piece), and fused, the regions that share
  // nothing with it would fail too. Region by region, only it does.
  const bool inherits_failure = std::any_of(chain.begin(), chain.end(), [](const RecordedRegion& region) {
    return std::any_of(region.request.args.begin(), region.request.args.end(), [](const ArgRef& arg) {
      const auto* storage = array_of(arg);
      return storage && (*storage)->writer_failed_unreported();
    });
  });
  if (chain.size() > 1 && !inherits_failure) {
    ChainPlan plan = plan_chain(chain);
    auto& entry = recorder.fused[plan.signature];
    // From then on the chain runs region by region, counted as a recovery.
    auto give_up = [&](const char* what, const std::exception& e) {
      entry.failed = true;
      recoveries.recovered(RecoveryKind::Compile, chain.front().at->name(),
                           "kernel '" + plan.name + "' (fused) could not be " + what + " (" + e.what() +
                               "); its regions run one by one");
    };
    if (!entry.kernel && !entry.failed) {
      // Seen for the first time: compiled in the background, the chain runs
      // region by region meanwhile (CANOPY_FUSE=eager: it waits for it).
      try {
        entry.kernel = std::make_shared<const ir::Kernel>(ir::fuse_kernels(plan.name, plan.slots, plan.parts));
        entry.ready = kernels.prepare({kernels.compiled(entry.kernel)}, leaf_devices());
        if (recorder.eager)
          for (const auto& f : entry.ready) f.wait();
      } catch (const std::exception& e) {
        give_up("made", e);
      }
    }
    if (entry.kernel && !entry.failed &&
        std::all_of(entry.ready.begin(), entry.ready.end(), [](const std::shared_future<void>& f) {
          return f.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
        })) {
      RecordedRegion region;
      region.run = std::make_shared<RegionRun>();
      region.request.kernel = entry.kernel;
      region.request.range = chain.front().request.range;
      region.request.policy = chain.front().request.policy;
      region.request.location = chain.front().at->name();
      for (std::size_t s = 0; s < plan.slots.size(); ++s)
        if (!plan.slots[s].local) region.request.args.push_back(plan.slot_args[s]);
      plan.slot_args.clear();  // an intermediate's last reference goes with the chain
      region.policy = chain.front().policy;
      region.at = chain.front().at;
      try {
        region.run->kernel = kernels.compiled(entry.kernel);
        region.pieces = choose_pieces(*region.run, region.request, region.policy, *region.at);
        if (!region.run->moved.empty()) throw Error("a leaf could not build it");
        fused = true;
      } catch (const std::exception& e) {
        give_up("built", e);
      }
      if (fused) {
        // The fused region completes every launched one (reduce() reads the last's results).
        region.run->completion = chain.back().run->completion;
        region.run->results = chain.back().run->results;
        for (std::size_t i = 0; i + 1 < chain.size(); ++i)
          region.run->also_completes.push_back(chain[i].run->completion);
        for (const auto& launched : chain) region.run->fused_from.push_back(launched.run->kernel->traced->name);
        for (const auto& slot : plan.slots) region.run->arrays_in_registers += slot.local ? 1 : 0;
        start_region(region);
      }
    }
  }
  if (!fused)
    for (auto& region : chain) start_region(region);
  // Counted off once their uses are recorded (start_region moved each
  // region's arguments into its run; fused, they stay in the request).
  for (const auto& region : chain) count_recorded(fused ? region.request.args : region.run->args, -1);
}

void Engine::State::stop_recorder() {
  {
    std::unique_lock lock(recorder.mutex);
    recorder.stopping = true;
    if (recorder.timer.joinable()) arm_recorder(std::chrono::steady_clock::time_point{});  // fires at once
  }
  if (recorder.timer.joinable()) recorder.timer.join();
  if (recorder.timer_fd >= 0) ::close(recorder.timer_fd);
  recorder.timer_fd = -1;
}

}  // namespace canopy::runtime
