// The compiled-kernel cache: what the engine learns about a traced kernel the
// first time it sees it (a region's launch, or Runtime::compile), kept for
// every later launch. The traced IR is optimized once (with bounds checks in
// checked mode); its programs, one per device, are compiled ahead on the
// cache's background thread for the devices of the tree's leaves, and a
// launch that needs one first waits for it (or compiles it, when the
// background thread has not got to it): a program belongs to the context of
// the device that built it, so two devices with one fingerprint (two PoCL
// devices) each build their own, the second finding the binary in the disk
// cache. What the splitter, the launch
// refusal and the adaptive policy need (footprint, sure accesses, cost) is
// computed here too, so a launch only looks it up.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include <canopy/backends/cpu/cpu_device.hpp>
#include <canopy/backends/device.hpp>
#include <canopy/ir/analysis/footprint.hpp>
#include <canopy/ir/kernel.hpp>
#include <canopy/ir/passes/optimize.hpp>

#include "../adaptive.hpp"
#include "../launch_bounds.hpp"
#include "recovery.hpp"

namespace canopy::runtime {

/// The footprint of one launch of a kernel whose footprint depends on its
/// launch values (CompiledKernel::footprint_at), and its sure accesses.
struct LaunchFootprint {
  ir::Footprint footprint;
  std::vector<SureAccess> sure_accesses;
};

/// A kernel as the engine keeps it: the traced IR (kept alive so the cache's
/// key stays valid), the optimized IR and its programs.
struct CompiledKernel {
  std::shared_ptr<const ir::Kernel> traced;
  std::shared_ptr<const ir::Kernel> optimized;
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
  /// Every array access at the point's own index, no atomic add
  /// (ir::accesses_only_own_point): the kernel may join a fused chain.
  bool own_point_only = false;
  /// Bytes per point between the last-level cache and DRAM (ir::cost_of):
  /// what stats() adds up as the modelled DRAM traffic of the kernels run.
  double dram_bytes_per_point = 0;

  /// The scalar parameters and extents the footprint depends on
  /// (ir::footprint_inputs): `out[i + k]`, `a[extent(0) - 1 - i]`. Empty for
  /// most kernels, whose every launch has `footprint`.
  ir::FootprintInputs footprint_inputs;
  /// Checked kernels guard every access: their sure accesses stay the
  /// unguarded form's, computed once.
  bool checked = false;

  /// What a launch with `args` reads and writes, and the accesses it surely
  /// makes: the footprint with the launch's scalars, extents and range
  /// bound where it depends on them (so that a region writing `out[i + k]` splits over
  /// memories and its device pieces run in passes), else null (`footprint`
  /// and `sure_accesses` hold). The last few launches' are kept.
  std::shared_ptr<const LaunchFootprint> footprint_at(const std::vector<ArgRef>& args, const Shape& range) const;

  /// The program for `device`: the CPU program on CPU devices, else the one
  /// compiled for that device. Compiles it now unless it is compiled or being
  /// compiled on another thread (then waits for that). Throws canopy::Error
  /// when the device cannot build it; a later call tries again.
  std::shared_ptr<backends::Program> program_for(backends::Device& device) const;
  /// True when the program for `device` is compiled or being compiled.
  bool has_program_for(const backends::Device& device) const;

 private:
  /// One device's program: null until compiled; `compiling` while a thread
  /// builds it (others wait on `compiled`).
  struct Slot {
    std::shared_ptr<backends::Program> program;
    bool compiling = false;
  };
  mutable std::mutex programs_mutex;
  mutable std::condition_variable compiled;
  mutable std::unordered_map<std::string, Slot> programs;  // by device id ("cpu" for every CPU device)
  mutable std::mutex launch_footprints_mutex;
  /// The most recent first; a few, since a kernel's index values rarely vary.
  mutable std::vector<std::pair<ir::LaunchValues, std::shared_ptr<const LaunchFootprint>>> launch_footprints;
};

/// Compiles programs ahead of the launches that need them, one at a time on
/// a thread of its own (started on first use): what a
/// launch would otherwise wait for. Tasks still queued when it is destroyed
/// are dropped; the one running finishes first. A compiler for work no
/// launch waits for (`idle_only`) runs its thread at the lowest priority
/// (SCHED_IDLE, or nice 10 where the process could not lift SCHED_IDLE
/// again before waiting for it), so that it takes only cores nothing else
/// wants.
class BackgroundCompiler {
 public:
  explicit BackgroundCompiler(bool idle_only = false) : idle_only_(idle_only) {}
  ~BackgroundCompiler();
  BackgroundCompiler(const BackgroundCompiler&) = delete;
  BackgroundCompiler& operator=(const BackgroundCompiler&) = delete;
  /// Queues `task`; the future is ready when it has run (or was dropped).
  std::shared_future<void> submit(std::function<void()> task);
  /// Drops the queued tasks and waits for the one running; later submits are dropped.
  void stop();

 private:
  void run();
  const bool idle_only_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::packaged_task<void()>> tasks_;
  bool stopping_ = false;
  std::thread thread_;
};

/// Every kernel the engine has seen, by its traced IR.
class KernelCache {
 public:
  /// `checked`: compile with bounds checks (CANOPY_CHECK=bounds).
  explicit KernelCache(bool checked) : checked_(checked) {}
  /// Stops both threads, the one that queues work for the other first.
  ~KernelCache() { stop_background(); }
  KernelCache(const KernelCache&) = delete;
  KernelCache& operator=(const KernelCache&) = delete;

  /// The kernel compiled from `traced`: optimized and analysed now the first
  /// time (then `*fresh` is set, when given), then looked up. Its programs
  /// come from prepare() or CompiledKernel::program_for. `arrays`: whether
  /// the launch passes distinct memory in every array parameter (every
  /// launch but one that passes an array twice, or wrapped memory that
  /// overlaps); a kernel launched both ways is compiled once for each.
  std::shared_ptr<const CompiledKernel> compiled(const std::shared_ptr<const ir::Kernel>& traced, bool* fresh = nullptr,
                                                 ir::Arrays arrays = ir::Arrays::Distinct);
  /// Compiles `kernels`' programs for `devices` on the background thread,
  /// except those compiled or being compiled: one task per device, which
  /// first lets the device prepare them together (Device::compile_together:
  /// the CPU's as one object). With `variants`, what the programs' launches
  /// may use beside them (Device::compile_variants: the CPU's streaming
  /// variants) is compiled afterwards on a second thread of the lowest
  /// priority: no launch waits for it, and the futures do not either. A
  /// failure is left for the launch that needs the program, which compiles
  /// it again and reports it.
  /// Stops the background thread (BackgroundCompiler::stop): the engine's
  /// first step when it goes, before its devices and trace do.
  void stop_background() {
    background_.stop();
    variants_.stop();
  }
  /// The futures are ready when the compiles queued now are done.
  std::vector<std::shared_future<void>> prepare(const std::vector<std::shared_ptr<const CompiledKernel>>& kernels,
                                                const std::vector<std::shared_ptr<backends::Device>>& devices,
                                                bool variants = false);
  /// True when kernels are compiled with bounds checks.
  bool checked() const { return checked_; }

 private:
  std::shared_ptr<CompiledKernel> compile(const std::shared_ptr<const ir::Kernel>& traced, ir::Arrays arrays);

  const bool checked_;
  std::mutex mutex_;
  std::unordered_map<const ir::Kernel*, std::shared_ptr<const CompiledKernel>> kernels_;
  std::unordered_map<const ir::Kernel*, std::shared_ptr<const CompiledKernel>> aliased_kernels_;  ///< Arrays::MayAlias
  // Last, and stopped by the destructor before any member goes: the first
  // queues work for the second.
  BackgroundCompiler background_;
  BackgroundCompiler variants_{/*idle_only=*/true};
};

}  // namespace canopy::runtime
