#include "region_run.hpp"

#include <algorithm>

#include "../coherence.hpp"
#include "device_copies.hpp"

namespace canopy::runtime {

namespace {

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
// summed into the host copies now that every piece is done; so are a merged
// array's when the program reads its host copy itself (a host view open, or
// wrapped memory), as it would find them on a CPU leaf.
void combine_added_arrays(RegionRun& run) {
  for (std::size_t p = 0; p < run.args.size(); ++p) {
    const auto* storage = std::get_if<std::shared_ptr<ArrayStorage>>(&run.args[p]);
    if (!storage) continue;
    auto& copies = (*storage)->copies();
    const bool merged_and_seen = copies.merge_operator() && (*storage)->host_sees_writes();
    if (run.writes.mode(p) != WriteMode::Added && !merged_and_seen) continue;
    std::lock_guard lock(copies.mutex);
    copies.combine_merges();
  }
}

}  // namespace

std::string describe_arrays(const std::vector<ArgRef>& args) {
  std::string text;
  std::vector<const ArrayStorage*> named;
  for (const auto& arg : args)
    if (const auto* storage = std::get_if<std::shared_ptr<ArrayStorage>>(&arg))
      if (std::find(named.begin(), named.end(), storage->get()) == named.end()) {
        named.push_back(storage->get());
        text += (text.empty() ? "" : ", ") + (*storage)->describe();
      }
  return text;
}

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
        // prepare_arrays made the copy; an array whose footprint is unknown gets one grain here.
        const DeviceCopies::Placed placed = copies.hold(worker.place(), worker.device(), Range{});
        array.data = placed.buffer.handle;
        array.first = placed.first;
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

void finish_region(RegionRun& run) {
  combine_partials(run);
  std::exception_ptr error;
  CompletionPtr cause;
  {
    std::lock_guard lock(run.error_mutex);
    try {
      combine_added_arrays(run);
    } catch (...) {
      if (!run.error) run.error = std::current_exception();
    }
    error = run.error;
    cause = run.cause;
  }
  for (auto& array : run.per_region_arrays) array->release_contents();
  if (run.adaptive && !error) run.adaptive->finished(*run.record);
  // A failure taken from a region it depended on is reported as that one's.
  auto finish = [&](Completion& c) { cause ? c.finish_as(cause) : c.finish(error); };
  for (auto& launched : run.also_completes) finish(*launched);
  finish(*run.completion);
}

}  // namespace canopy::runtime
