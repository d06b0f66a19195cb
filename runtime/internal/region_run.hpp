// A region between Engine::submit and the end of its last piece: what every
// piece shares (the compiled kernel, the arguments, the dependencies, how
// the pieces write each array) and what they leave behind (partial
// reductions, the first error). The piece that finishes last calls
// finish_region, which combines the reductions and the private copies, frees
// the per-region arrays, tells the adaptive policy how long the pieces took
// and completes the region.
#pragma once

#include <atomic>
#include <chrono>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <variant>
#include <vector>

#include <canopy/backends/device.hpp>
#include <canopy/backends/launch.hpp>

#include "../adaptive.hpp"
#include "../array.hpp"
#include "../completion.hpp"
#include "../engine.hpp"
#include "../stats.hpp"
#include "kernel_cache.hpp"
#include "recovery.hpp"
#include "split_writes.hpp"

namespace canopy::runtime {

struct RegionRun {
  std::shared_ptr<const CompiledKernel> kernel;
  /// This launch's footprint where the kernel's depends on its launch values
  /// (CompiledKernel::footprint_at); null otherwise.
  std::shared_ptr<const LaunchFootprint> launch;
  std::vector<std::shared_ptr<backends::Program>> programs;  // per piece, for its leaf's device
  std::vector<ArgRef> args;
  std::vector<CompletionPtr> deps;
  /// The regions that wrote its arrays last before it (each done once deps
  /// are): a failure of one that the program was not told of becomes its own.
  std::vector<CompletionPtr> writers_before;
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
  /// A fused kernel's launched kernels, in order (recorder.hpp), and the
  /// completions of all but the last, which `completion` stands for.
  std::vector<std::string> fused_from;
  std::vector<CompletionPtr> also_completes;
  int arrays_in_registers = 0;
  /// The kernel whose placement of the inputs the adaptive split took
  /// instead of its own (sequence_placement.hpp); empty otherwise.
  std::string follows;
  std::uint64_t leader = 0;  ///< then: whose own split it took (RowPlacement::leader)
  /// When the pieces were queued: each piece's finishing time counts from here.
  std::chrono::steady_clock::time_point submitted = std::chrono::steady_clock::now();

  /// What each array parameter reads and writes at this launch.
  const ir::Footprint& footprint() const { return launch ? launch->footprint : kernel->footprint; }
  /// The accesses every point of this launch makes at known positions.
  const std::vector<SureAccess>& sure_accesses() const {
    return launch ? launch->sure_accesses : kernel->sure_accesses;
  }

  /// The region among writers_before whose failure this one took (fail_as).
  CompletionPtr cause;

  /// Keeps the first error of any piece (later ones are dropped).
  void fail(std::exception_ptr e) {
    std::lock_guard lock(error_mutex);
    if (!error) error = std::move(e);
  }
  /// Fails with the failure of `writer`, one of writers_before, unless a
  /// piece failed first.
  void fail_as(const CompletionPtr& writer) {
    std::lock_guard lock(error_mutex);
    if (error) return;
    error = writer->error();
    cause = writer;
  }
};

/// The arrays among `args`, each once, described and comma-separated (what
/// a refusal names).
std::string describe_arrays(const std::vector<ArgRef>& args);

/// The arguments as `worker`'s device sees them: its copy of each array (the
/// host copy for CPU leaves).
std::vector<backends::KernelArg> kernel_args(const std::vector<ArgRef>& refs, const Executor& worker);

/// After the last piece: reductions and private copies combined, the region completed.
void finish_region(RegionRun& run);

}  // namespace canopy::runtime
