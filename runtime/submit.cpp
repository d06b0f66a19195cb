// The submit pipeline: what Engine::submit does with a region, in order.
//   1. check the request against the kernel (ranks, extents, arguments);
//   2. compile the kernel (once, internal/kernel_cache.hpp) and refuse a
//      launch whose range takes a sure access outside its array;
//   3. find where it runs (its location, or the Most Common Descendant of
//      its arrays') and split its range over the leaves below by its policy
//      (adaptive and any: also by where its inputs were left,
//      internal/sequence_placement.hpp);
//   4. plan how pieces in different memories write each array, compile
//      every piece's program, so that a device that cannot fails the launch,
//      and keep where the pieces leave the arrays it writes;
//   5. record its uses of each array (its dependencies) and statistics;
//   6. hand it to the recorder (internal/recorder.hpp), which runs it now, or
//      holds it to run with the regions after it as one fused kernel;
//   7. run a small piece on an idle CPU leaf inline, else queue the pieces.
// Steps 1 to 4 may throw and leave nothing behind; from step 5 on, later
// regions depend on this one and nothing may throw.
#include <algorithm>
#include <canopy/ir/analysis/merge_updates.hpp>
#include <canopy/ir/settings.hpp>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <optional>

#include "internal/engine_state.hpp"
#include "launch_bounds.hpp"
#include "mcd.hpp"

namespace canopy::runtime {

namespace {

void check_shape(const ir::Kernel& kernel, const Shape& range) {
  if (range.rank() != kernel.dims)
    throw Error("kernel '" + kernel.name + "' has " + std::to_string(kernel.dims) +
                " index dimension(s) but the region is over " + std::to_string(range.rank()) + " (" +
                range.to_string() + "); give over() " + std::to_string(kernel.dims) + " extent(s)");
  for (int d = 0; d < range.rank(); ++d)
    if (range[d] < 0)
      throw Error("kernel '" + kernel.name + "': the region's extents cannot be negative (" + range.to_string() +
                  "); give over() extents of 0 or more");
}

void check_arguments(const ir::Kernel& kernel, const std::vector<ArgRef>& args) {
  if (args.size() != kernel.params.size()) {
    std::string names;
    for (const auto& param : kernel.params) names += (names.empty() ? "" : ", ") + param.name;
    throw Error("kernel '" + kernel.name + "' takes " + std::to_string(kernel.params.size()) + " arguments, " +
                std::to_string(args.size()) + " were given; pass one per parameter (" + names + ")");
  }
  for (std::size_t p = 0; p < kernel.params.size(); ++p) {
    const auto& param = kernel.params[p];
    auto* storage = std::get_if<std::shared_ptr<ArrayStorage>>(&args[p]);
    if (param.is_array() != (storage != nullptr) ||
        (storage && ((*storage)->type() != param.type || (*storage)->shape().rank() != param.rank))) {
      const std::string given = storage ? (*storage)->describe() : "a value";
      const std::string wanted = param.is_array() ? "an array of " + std::string(ir::name_of(param.type)) + " with " +
                                                        std::to_string(param.rank) + " dimension(s)"
                                                  : "a value of type " + std::string(ir::name_of(param.type));
      throw Error("kernel '" + kernel.name + "': argument " + std::to_string(p + 1) + " of " +
                  std::to_string(args.size()) + " (" + given + ") does not match parameter " +
                  kernel.describe_param(p) + "; pass " + wanted);
    }
    if (storage && param.writes() && (*storage)->traits().read_only)
      throw Error("kernel '" + kernel.name + "' writes parameter " + kernel.describe_param(p) + " but " +
                  (*storage)->describe() + " is read-only; pass a writable array");
    if (storage && param.writes() && (*storage)->traits().merge) {
      const ir::ReduceOp op = *(*storage)->traits().merge;
      // Every parameter that passes the array: a read through another is a read of it.
      std::vector<int> passing;
      for (std::size_t q = 0; q < args.size(); ++q)
        if (const auto* other = std::get_if<std::shared_ptr<ArrayStorage>>(&args[q]); other && *other == *storage)
          passing.push_back(static_cast<int>(q));
      const std::string problem = ir::non_combining_access(kernel, passing, op);
      if (!problem.empty()) {
        const std::string name(ir::name_of(op));
        throw Error("kernel '" + kernel.name + "' passes " + (*storage)->describe() + " with merge(" + name +
                    ") as parameter " + kernel.describe_param(p) + " and " + problem +
                    "; a merged array takes only updates that combine with its operator (" +
                    (op == ir::ReduceOp::Sum ? "atomic_add(m[e], x) or m[e] = m[e] + x"
                                             : "m[e] = " + name + "(m[e], x), or m[e] = x where x never loses") +
                    "), which give the same result on every leaf however the region splits");
      }
    }
  }
  // Two arrays over overlapping memory (wrap() twice over one buffer), one of
  // them written: a device would hold a copy of each, and the writes through
  // one would not show through the other, as they do through one array
  // passed twice.
  // Only arrays wrap() marked as sharing memory (with another of this
  // Runtime's) are compared: a launch with none pays one flag per pair.
  for (std::size_t p = 0; p < args.size(); ++p)
    for (std::size_t q = p + 1; q < args.size(); ++q) {
      const auto* a = std::get_if<std::shared_ptr<ArrayStorage>>(&args[p]);
      const auto* b = std::get_if<std::shared_ptr<ArrayStorage>>(&args[q]);
      if (!a || !b || *a == *b || !(*a)->shares_memory() || !(*b)->shares_memory() ||
          !(kernel.params[p].writes() || kernel.params[q].writes()))
        continue;
      const auto first = reinterpret_cast<std::uintptr_t>((*a)->wrapped_memory());
      const auto second = reinterpret_cast<std::uintptr_t>((*b)->wrapped_memory());
      if (first < second + (*b)->bytes() && second < first + (*a)->bytes())
        throw Error("kernel '" + kernel.name + "' is passed " + (*a)->describe() + " as parameter " +
                    kernel.describe_param(p) + " and " + (*b)->describe() + " as parameter " +
                    kernel.describe_param(q) +
                    ", two arrays over overlapping memory, and writes one of them; pass one array (one wrap() of "
                    "the memory) to both");
    }
}

// The location `levels` above `at` (the root when the tree is not that deep).
const Location& ancestor(const Location& at, int levels) {
  const Location* l = &at;
  for (int i = 0; i < levels && l->parent(); ++i) l = l->parent();
  return *l;
}

backends::Range range_of(const Piece& piece, const Shape& region) {
  backends::Range range;
  range.dims = region.rank();
  range.begin[0] = piece.begin;
  range.end[0] = piece.end;
  for (int d = 1; d < range.dims; ++d) range.end[static_cast<std::size_t>(d)] = region[d];
  return range;
}

// How many of `args` pass `array`.
std::ptrdiff_t times_passed(const std::vector<ArgRef>& args, const ArrayStorage* array) {
  return std::count_if(args.begin(), args.end(), [&](const ArgRef& arg) {
    const auto* storage = std::get_if<std::shared_ptr<ArrayStorage>>(&arg);
    return storage && storage->get() == array;
  });
}

// Whether the region writes every element of the array it passes as
// parameter `p` before anything reads one: a write-only parameter, stored at
// each point's own element by every point (no atomic add, nothing under a
// condition), over a range with the array's shape, the array passed once and
// its writes not merged with what it holds.
bool writes_every_element(const RegionRun& run, const RegionRequest& request, std::size_t p) {
  const auto& kernel = *run.kernel->optimized;
  const auto& array = std::get<std::shared_ptr<ArrayStorage>>(request.args[p]);
  const auto* footprint = run.footprint().of(static_cast<int>(p));
  if (kernel.params[p].reads() || array->traits().merge || !footprint || footprint->reads.present ||
      !footprint->writes.unconditional || !ir::at_own_point(footprint->writes, request.range.rank()) ||
      !(array->shape() == request.range))
    return false;
  return times_passed(request.args, array.get()) == 1;
}

// One piece without loops, of fewer points than its program runs on the
// caller's thread: dispatch runs it there when its leaf is idle.
bool small_enough_to_run_inline(const RegionRun& run, const std::vector<Piece>& pieces, const Shape& range) {
  return pieces.size() == 1 && !run.kernel->has_loops &&
         range_of(pieces.front(), range).points() < run.programs.front()->inline_points();
}

// The bytes of the device copies that rows [begin, end) of the region touch:
// per array, the hull of what those rows read and write, as a device holds
// it (DeviceCopies::window_bytes).
std::int64_t bytes_of_rows(const RegionRun& run, const RegionRequest& request, std::int64_t begin, std::int64_t end) {
  std::int64_t bytes = 0;
  std::vector<const ArrayStorage*> counted;
  for (std::size_t p = 0; p < request.args.size(); ++p) {
    const auto* storage = std::get_if<std::shared_ptr<ArrayStorage>>(&request.args[p]);
    const auto* footprint = run.footprint().of(static_cast<int>(p));
    if (!storage || !footprint) continue;
    if (std::find(counted.begin(), counted.end(), storage->get()) != counted.end()) continue;
    counted.push_back(storage->get());
    const Shape& shape = (*storage)->shape();
    IntervalSet touched = reads_of(footprint->reads, shape, begin, end).ranges;
    touched.add(writes_of(footprint->writes, shape, request.range, begin, end).written);
    if (!touched.empty()) bytes += (*storage)->copies().window_bytes(touched.hull());
  }
  return bytes;
}

// Whether an array of the region is merged: a device's piece then holds its
// private copy whole and runs in one pass.
bool merges_an_array(const RegionRequest& request) {
  for (const auto& arg : request.args)
    if (const auto* storage = std::get_if<std::shared_ptr<ArrayStorage>>(&arg))
      if ((*storage)->traits().merge) return true;
  return false;
}

// Whether a piece on a device runs in one pass, whatever its size
// (passes_for in piece_run.cpp): an array of the region is merged, or
// several memories add to one.
bool runs_in_one_pass(const RegionRun& run, const RegionRequest& request) {
  if (merges_an_array(request)) return true;
  for (std::size_t p = 0; p < request.args.size(); ++p)
    if (std::holds_alternative<std::shared_ptr<ArrayStorage>>(request.args[p]) &&
        run.writes.mode(p) == WriteMode::Added)
      return true;
  return false;
}

// What the smallest pass of a device piece over rows [begin, end) touches:
// its first row, or every row where it runs in one pass.
std::int64_t bytes_of_smallest_pass(const RegionRun& run, const RegionRequest& request, std::int64_t begin,
                                    std::int64_t end, bool one_pass) {
  return bytes_of_rows(run, request, begin, one_pass ? end : begin + 1);
}

// Any: the bytes of the region's arrays that its first row touches (all its
// rows, where an array is merged: such a piece runs in one pass). A piece
// too large for a device runs there in passes of fewer rows, but a gather
// or scatter over an array larger than the device touches all of it in
// every pass: `any` had put one on a 16 MiB device beside an idle CPU leaf,
// and the region failed.
std::int64_t bytes_of_a_row(const RegionRun& run, const RegionRequest& request) {
  if (request.range.rank() == 0 || request.range[0] == 0) return 0;
  return bytes_of_smallest_pass(run, request, 0, request.range[0], merges_an_array(request));
}

// The capacity of the device memory at `place` that the region's arrays
// see; 0 where none is set or known (the host's).
std::int64_t device_capacity(const RegionRequest& request, int place) {
  if (place == Coherence::kHost) return 0;
  for (const auto& arg : request.args)
    if (const auto* storage = std::get_if<std::shared_ptr<ArrayStorage>>(&arg))
      return (*storage)->copies().capacity(place);
  return 0;
}

// Whether the launch passes distinct memory in every array parameter: no
// array twice (check_arguments refuses two arrays over overlapping memory
// where one is written). One array passed as In and InOut is the program's
// right, as two pointers to one array are in C++: the kernel is then
// optimized for it (ir::Arrays::MayAlias).
ir::Arrays arrays_passed(const std::vector<ArgRef>& args) {
  for (const auto& arg : args)
    if (const auto* storage = std::get_if<std::shared_ptr<ArrayStorage>>(&arg);
        storage && times_passed(args, storage->get()) > 1)
      return ir::Arrays::MayAlias;
  return ir::Arrays::Distinct;
}

}  // namespace

std::vector<std::shared_future<void>> Engine::prepare(const std::vector<std::shared_ptr<const ir::Kernel>>& kernels) {
  std::vector<std::shared_ptr<const CompiledKernel>> compiled;
  for (const auto& kernel : kernels) compiled.push_back(state_->kernels.compiled(kernel));
  std::shared_lock tree_lock(state_->tree_mutex);
  return state_->kernels.prepare(compiled, state_->leaf_devices(), /*variants=*/true);
}

RegionHandle Engine::submit(RegionRequest request) {
  refuse_after_fork(state_->forks_before, "launching a region");
  const auto& kernel = *request.kernel;
  check_shape(kernel, request.range);
  check_arguments(kernel, request.args);
  const std::string policy_text = request.policy.empty() ? "static" : request.policy;
  Policy policy = state_->policy_named(policy_text);
  if (policy.kind == Policy::Kind::Runtime)  // unset: resolve says so
    policy = state_->runtime_policy ? *state_->runtime_policy : resolve_runtime_policy(policy, nullptr);

  auto run = std::make_shared<RegionRun>();
  bool first_sight = false;
  run->kernel = state_->kernels.compiled(request.kernel, &first_sight, arrays_passed(request.args));
  run->launch = run->kernel->footprint_at(request.args, request.range);
  check_launch_bounds(kernel, run->sure_accesses(), request.range, request.args);
  if (policy.kind == Policy::Kind::Adaptive || policy.kind == Policy::Kind::Any) state_->ensure_model();

  // The regions of other Runtimes launched before this one on its arrays
  // come first, even those still waiting in their recorder (not under this
  // recorder's lock: two Runtimes doing so at once would wait for each other).
  // Memory the program may write itself (wrapped, or a host view open)
  // refreshes the device copies when nothing was using it.
  for (const auto& arg : request.args)
    if (auto* storage = std::get_if<std::shared_ptr<ArrayStorage>>(&arg)) {
      (*storage)->start_recorded_elsewhere(state_.get());
      if (state_->wait_for_overlapping_wraps(**storage))
        (*storage)->memory_shared_may_have_changed();
      else
        (*storage)->host_may_have_written();
    }

  std::unique_lock record_lock(state_->recorder.mutex);
  std::shared_lock tree_lock(state_->tree_mutex);
  const Location& at = state_->region_location(request, kernel);
  std::vector<Piece> pieces = state_->choose_pieces(*run, request, policy, at);
  // Seen for the first time: its pieces' programs are compiled (choose_pieces
  // waited for them); the other leaves' compile in the background, ready for
  // later regions that run there.
  if (first_sight) state_->kernels.prepare({run->kernel}, state_->leaf_devices());

  RegionHandle handle{run->completion, run->results};
  state_->record_region({run, std::move(request), policy, &at, std::move(pieces)});
  return handle;
}

void Engine::State::start_region(RecordedRegion& region) {
  auto& run = region.run;
  std::unique_lock order_lock(order_mutex);
  record_uses(*run, region.request, region.policy, *region.at, region.pieces);
  if (region.pieces.empty())
    finish_region(*run);
  else
    dispatch(run, region.pieces, run->record->range, order_lock);
}

// Its explicit location, else the Most Common Descendant of its placed
// arrays' locations (the root when it has none). Arrays placed by distance
// follow the region and do not decide where it runs; so do arrays with a
// moving lifetime, unless the region has no placed array and no location of
// its own: then it runs where they are (the MCD of their locations, or the
// root), and they stay.
const Location& Engine::State::region_location(const RegionRequest& request, const ir::Kernel& kernel) {
  std::vector<const Location*> locations, moving;
  std::vector<std::size_t> placed;  // the parameter of each entry of `locations`
  for (std::size_t p = 0; p < request.args.size(); ++p) {
    auto* storage = std::get_if<std::shared_ptr<ArrayStorage>>(&request.args[p]);
    if (!storage || (*storage)->traits().distance) continue;
    const auto name = (*storage)->location();
    auto* location = tree.find(name);
    if (!location) location = tree.root();
    if ((*storage)->traits().lifetime == Lifetime::Moving) {
      moving.push_back(location);
      continue;
    }
    locations.push_back(location);
    placed.push_back(p);
  }
  // What the errors below call an argument; made only for them, not on every launch.
  auto label = [&](std::size_t i) {
    const auto& storage = std::get<std::shared_ptr<ArrayStorage>>(request.args[placed[i]]);
    return "argument '" + kernel.params[placed[i]].name + "', " + storage->describe() + ",";
  };
  if (locations.empty() && request.location.empty() && !moving.empty()) {
    auto* mcd = most_common_descendant(moving);
    return mcd ? *mcd : *tree.root();
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
        throw Error("region of kernel '" + kernel.name + "' at '" + at.name() + "': " + label(i) +
                    " is not visible there; memory is visible at its location and below it; move the array or "
                    "run the region below '" +
                    locations[i]->name() + "'");
    return at;
  }
  if (locations.empty()) return *tree.root();
  if (auto* mcd = most_common_descendant(locations)) return *mcd;
  std::vector<std::string> labels;
  for (std::size_t i = 0; i < locations.size(); ++i) labels.push_back(label(i));
  throw Error("region of kernel '" + kernel.name + "': " + explain_no_common_descendant(locations, labels));
}

// The pieces of the region at `at` by its policy, with how they write each
// array and every piece's program (compiled now, on this thread, so that a
// kernel a device cannot build fails the launch, naming the device).
std::vector<Piece> Engine::State::choose_pieces(RegionRun& run, const RegionRequest& request, const Policy& policy,
                                                const Location& at) {
  const auto& kernel = *request.kernel;
  SplitContext context;
  context.idle = [&](const Location& leaf) {
    auto it = workers.find(leaf.name());
    return it != workers.end() && it->second->idle();
  };
  context.load = [&](const Location& leaf) {
    auto it = workers.find(leaf.name());
    return it == workers.end() ? 1e300 : double(it->second->outstanding());
  };
  // Where the region's inputs were left (sequence_placement.hpp): what the
  // adaptive and any policies price the rows their leaves would receive at.
  std::vector<PlacedInput> inputs;
  if ((policy.kind == Policy::Kind::Adaptive || policy.kind == Policy::Kind::Any) && place_sequences)
    inputs = placed_inputs(kernel, run.kernel->adaptive.hash, request.args, request.range[0]);
  if (policy.kind == Policy::Kind::Adaptive)
    context.shares = [&](const std::vector<const Location*>& leaves) {
      run.adaptive = adaptive.plan(run.kernel->adaptive, at, leaves, request.range);
      if (!inputs.empty()) follow_placed_inputs(run, inputs, leaves, request.range[0]);
      drop_leaves_that_cannot_fit(run, request, leaves);
      return run.adaptive->shares;
    };
  std::optional<std::int64_t> row_bytes;  // any: computed at the first leaf with a capacity
  if (policy.kind == Policy::Kind::Any)
    context.can_run = [&](const Location& leaf) {
      const std::int64_t capacity = device_capacity(request, place_of(leaf));
      if (capacity <= 0) return true;
      if (!row_bytes) row_bytes = bytes_of_a_row(run, request);
      return *row_bytes <= capacity;
    };
  if (policy.kind == Policy::Kind::Any)
    context.predicted_seconds = [&](const Location& leaf) {
      double seconds = adaptive.predict_seconds(run.kernel->adaptive, leaf, request.range);
      if (!inputs.empty()) seconds += copy_seconds(inputs, {place_of(leaf)}, {0, request.range[0]}, link_price())[0];
      return seconds;
    };
  std::vector<Piece> pieces;
  try {
    pieces = split(at, policy, 0, request.range[0], context);
  } catch (const Error& e) {
    throw Error("region of kernel '" + kernel.name + "': " + e.what());
  }
  if (policy.kind == Policy::Kind::Any && pieces.size() == 1)
    run.adaptive = adaptive.plan_any(run.kernel->adaptive, *pieces.front().leaf, request.range);
  plan_writes(run, request, pieces);
  refuse_pieces_no_pass_fits(run, request, pieces);
  run.fallbacks = fallbacks_below(at);
  for (auto& piece : pieces) {
    auto worker = workers.find(piece.leaf->name());
    if (worker == workers.end())
      throw Error("region of kernel '" + kernel.name + "': leaf '" + piece.leaf->name() + "' (" +
                  std::string(name_of(piece.leaf->kind())) + ") has no device this build can run on");
    run.programs.push_back(program_for_piece(run, run.programs.size(), *worker->second));
  }
  wake_ahead(run, pieces, request.range, waits_in_recorder(run, request, pieces));
  leave_placement(run, request, pieces);
  return pieces;
}

// A piece on a device memory too small for what one pass of it touches
// (its first row; the whole piece where it runs in one pass) fails there
// whatever else the device holds: found only when the piece ran, the
// region's other pieces had already written their rows, and the error came
// at the next pause. Refused now, with the launch, before any piece runs.
void Engine::State::refuse_pieces_no_pass_fits(const RegionRun& run, const RegionRequest& request,
                                               const std::vector<Piece>& pieces) const {
  std::optional<bool> one_pass;
  for (const auto& piece : pieces) {
    const std::int64_t capacity = piece.size() > 0 ? device_capacity(request, place_of(*piece.leaf)) : 0;
    if (capacity <= 0) continue;
    if (!one_pass) one_pass = runs_in_one_pass(run, request);
    const std::int64_t need = bytes_of_smallest_pass(run, request, piece.begin, piece.end, *one_pass);
    if (need <= capacity) continue;
    throw Error("region of kernel '" + request.kernel->name + "', its piece on leaf '" + piece.leaf->name() + "' (" +
                describe_arrays(request.args) + "): what " +
                (*one_pass ? "the piece (it runs in one pass)" : "one row of it") + " touches, " +
                std::to_string(need) + " bytes of these arrays, does not fit a device memory of " +
                std::to_string(capacity) +
                " bytes (CANOPY_DEVICE_MEMORY, or the capacity the configuration or the device gives); no piece "
                "of the region ran. Give that leaf no rows (a percentage or range policy), let the policy any choose "
                "a leaf that can run it, or run the region below a location without that device");
  }
}

// Adaptive: a leaf whose device memory cannot hold what its share of the
// rows touches in one pass (its first row; all its rows where an array is
// merged) takes no share, and the others take its rows, as `any` passes over
// such a leaf. The policy chose the split, not the program: following the
// split an input was left in, it had put a merged histogram on a 32 KiB
// device, and the launch was refused. Where no leaf fits, the split stays
// and the launch is refused naming the sizes (refuse_pieces_no_pass_fits).
void Engine::State::drop_leaves_that_cannot_fit(RegionRun& run, const RegionRequest& request,
                                                const std::vector<const Location*>& leaves) const {
  const std::int64_t rows = request.range.rank() > 0 ? request.range[0] : 0;
  const bool one_pass = merges_an_array(request);
  std::vector<double> shares = run.adaptive->shares;
  if (shares.size() != leaves.size()) return;
  std::vector<bool> unfit(leaves.size(), false);
  bool changed = false;
  for (std::size_t round = 0; round <= leaves.size(); ++round) {  // a dropped leaf's rows may not fit another
    if (changed && std::none_of(shares.begin(), shares.end(), [](double share) { return share > 0; })) {
      // Every row was the dropped leaves' (all of it where the input was left): the others share them evenly.
      for (std::size_t i = 0; i < leaves.size(); ++i) shares[i] = unfit[i] ? 0.0 : 1.0;
      if (std::find(unfit.begin(), unfit.end(), false) == unfit.end()) return;
    }
    const std::vector<std::int64_t> bounds = share_boundaries(shares, rows);
    bool dropped = false;
    for (std::size_t i = 0; i < leaves.size(); ++i) {
      if (bounds[i + 1] == bounds[i]) continue;
      const std::int64_t capacity = device_capacity(request, place_of(*leaves[i]));
      if (capacity <= 0) continue;
      if (bytes_of_smallest_pass(run, request, bounds[i], bounds[i + 1], one_pass) <= capacity) continue;
      shares[i] = 0;
      unfit[i] = true;
      dropped = true;
    }
    if (!dropped) break;
    changed = true;
  }
  if (!changed) return;
  auto plan = std::make_shared<AdaptivePlan>(*run.adaptive);
  plan->shares = std::move(shares);
  run.adaptive = std::move(plan);
}

// The adaptive split of `run` replaced by the split its inputs were left in,
// when that is predicted faster (sequence_placement.hpp). The kernel's own
// split still learns from the rates its leaves showed (AdaptivePlan::followed).
void Engine::State::follow_placed_inputs(RegionRun& run, const std::vector<PlacedInput>& inputs,
                                         const std::vector<const Location*>& leaves, std::int64_t rows) {
  const AdaptivePlan& own = *run.adaptive;
  SplitQuestion region;
  region.leaves = own.leaves;
  for (const Location* leaf : leaves) region.places.push_back(place_of(*leaf));
  region.own_shares = own.shares;
  region.row_seconds = adaptive.row_seconds(own);
  region.leader_row_seconds = [&](std::uint64_t leader) {
    AdaptivePlan theirs;  // what the history knows of the leader's kernel on these leaves
    theirs.kernel_hash = leader;
    theirs.leaves = own.leaves;
    theirs.extents_class = own.extents_class;
    theirs.inner_points = own.inner_points;
    return adaptive.row_seconds(theirs);
  };
  region.link_price = link_price();
  region.rows = rows;
  region.margin = adaptive.options().dead_band;
  region.always = always_follow;
  auto followed = follow_inputs(inputs, region);
  if (!followed) return;
  auto plan = std::make_shared<AdaptivePlan>(*run.adaptive);
  plan->shares = std::move(followed->shares);
  plan->followed = true;
  run.adaptive = std::move(plan);
  run.follows = std::move(followed->follows);
  run.leader = followed->leader;
}

// Each array the region writes keeps where its pieces leave its rows, for the
// regions launched after it (sequence_placement.hpp).
void Engine::State::leave_placement(const RegionRun& run, const RegionRequest& request,
                                    const std::vector<Piece>& pieces) {
  if (!place_sequences) return;
  const auto& kernel = *request.kernel;
  std::shared_ptr<const RowPlacement> placed;
  for (std::size_t p = 0; p < kernel.params.size(); ++p) {
    auto* storage = std::get_if<std::shared_ptr<ArrayStorage>>(&request.args[p]);
    if (!storage || !kernel.params[p].writes()) continue;
    const auto& shape = (*storage)->shape();
    const bool by_rows = shape.rank() > 0 && shape[0] == request.range[0] && !pieces.empty();
    if (by_rows && !placed) {
      std::vector<RowPlacement::Rows> rows;
      for (const auto& piece : pieces)
        rows.push_back({piece.leaf->name(), place_of(*piece.leaf), piece.begin, piece.end});
      placed = placement_of(kernel.name, run.follows.empty() ? run.kernel->adaptive.hash : run.leader, request.range[0],
                            rows);
    }
    (*storage)->set_placed_rows(by_rows ? placed : nullptr);
  }
}

// The memory (coherence place) of an executing leaf's worker; the host's for a leaf without one.
int Engine::State::place_of(const Location& leaf) const {
  auto worker = workers.find(leaf.name());
  return worker == workers.end() ? Coherence::kHost : worker->second->place();
}

// What a byte moved between the host and the memory at a place costs: as
// the transfers so far took (TransferTotals::seconds_per_byte), else a copy
// (a read and a write) at the host's memory bandwidth.
std::function<double(int place)> Engine::State::link_price() const {
  return [this](int place) {
    const double measured = totals->seconds_per_byte(place);
    if (std::isfinite(measured)) return measured;
    if (const MachineModel* model = adaptive.model())
      for (const auto& leaf : model->leaves)
        if (leaf.kind == LocationKind::Cpu && leaf.bandwidth_gbs > 0) return 2 / (leaf.bandwidth_gbs * 1e9);
    return 2 / 10e9;  // 10 GB/s: a host's memory bandwidth of the order of today's
  };
}

// How the pieces write each array when they run in different memories
// (split_writes.hpp); a region that cannot be split over memories keeps only
// its pieces in one memory, and stats() says why, once per reason.
void Engine::State::plan_writes(RegionRun& run, const RegionRequest& request, std::vector<Piece>& pieces) {
  if (pieces.size() < 2) return;  // one piece writes in one memory
  std::vector<PlacedPiece> placed;
  std::vector<int> piece_places;
  for (const auto& piece : pieces) {
    auto worker = workers.find(piece.leaf->name());
    piece_places.push_back(worker == workers.end() ? 0 : worker->second->place());
    placed.push_back({piece_places.back(), piece.begin, piece.end});
  }
  run.writes = plan_split_writes(*run.kernel->optimized, run.footprint(), run.kernel->ops_per_point, request.args,
                                 request.range, placed, split_write_choice);
  if (run.writes.one_memory) {
    pieces = on_one_memory(pieces, piece_places, request.range[0]);
    run.adaptive = nullptr;  // its shares were for the pieces it planned
    run.follows.clear();
  }
  book.split_planned(run.writes);
}

// The region's record, its per-distance arrays placed, its uses of each array
// added (which makes it depend on earlier users), and it kept for pause().
void Engine::State::record_uses(RegionRun& run, RegionRequest& request, const Policy& policy, const Location& at,
                                const std::vector<Piece>& pieces) {
  const auto& kernel = *request.kernel;
  run.record = std::make_shared<RegionStats>();
  run.record->kernel = kernel.name;
  run.record->location = at.name();
  run.record->policy = policy.text();
  run.record->range = request.range;
  run.record->fused = run.fused_from;
  run.record->arrays_in_registers = run.arrays_in_registers;
  run.record->follows = run.follows;
  for (std::size_t p = 0; p < kernel.params.size(); ++p) {
    auto* storage = std::get_if<std::shared_ptr<ArrayStorage>>(&request.args[p]);
    if (!storage) continue;
    const auto& traits = (*storage)->traits();
    if (traits.distance) (*storage)->set_location(ancestor(at, *traits.distance).name());
    if (traits.lifetime == Lifetime::Moving && !traits.distance) (*storage)->set_location(at.name());
    if (traits.distance || traits.lifetime == Lifetime::Moving) bind_pages_to_location(**storage);
    // A region without pieces touches no array and finishes at once, before
    // the regions it would follow: recorded as a user, it would stand in for
    // them and let later regions skip the wait (and free per-region memory
    // still in use).
    if (pieces.empty()) continue;
    if (traits.lifetime == Lifetime::PerRegion) run.per_region_arrays.push_back(*storage);
    const bool reads = kernel.params[p].reads(), writes = kernel.params[p].writes();
    if ((*storage)->zeros_owed()) (*storage)->settle_contents(writes_every_element(run, request, p));
    run.record->arrays.push_back(std::string(reads && writes ? "inout "
                                             : reads         ? "in "
                                                             : "out ") +
                                 traits.name + "#" + std::to_string((*storage)->id()));
    CompletionPtr writer_before;
    auto deps = (*storage)->add_use(run.completion, reads, writes, &writer_before);
    run.deps.insert(run.deps.end(), deps.begin(), deps.end());
    if (writer_before) run.writers_before.push_back(std::move(writer_before));
  }
  run.args = std::move(request.args);
  run.partials.resize(pieces.size());
  run.pieces_left.store(static_cast<int>(pieces.size()));
  for (auto& piece : pieces) run.record->pieces.push_back({piece.leaf->name(), piece.begin, piece.end, 0.0});
  if (run.adaptive) run.adaptive->annotate(*run.record);
  run.submitted = std::chrono::steady_clock::now();
  book.remember(run.record, run.kernel->dram_bytes_per_point * static_cast<double>(request.range.size()));
  track(run.completion, run.record);
}

// A sleeping core takes 100-150 us to wake on a virtual machine. Woken here,
// as soon as the pieces are known, the leaves' threads come up while the
// caller finishes the launch, not after the pieces are handed to them. A
// region small enough to run on the caller's thread wakes nothing. One that
// waits in the recorder wakes the pool's helpers but not the leaf's worker:
// it starts either when the caller waits for it, and then runs on the
// caller's thread (dispatch), where a worker polling on the same core would
// take turns with it, or after the recorder's delay, which outlasts a
// worker's polling anyway (dispatch wakes it then).
void Engine::State::wake_ahead(const RegionRun& run, const std::vector<Piece>& pieces, const Shape& range,
                               bool helpers_only) {
  if (small_enough_to_run_inline(run, pieces, range)) return;
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    const auto piece = range_of(pieces[i], range);
    auto& leaf = *workers.at(pieces[i].leaf->name());
    if (!helpers_only) leaf.expect();
    leaf.device()->expect_run(*run.programs[i], piece);
  }
}

// A small region for an idle leaf runs here and now: handing it to the
// worker would cost more than the work. Order is kept, since the leaf has
// nothing queued before it and later launches start after this one returns.
// A region of any size whose caller waits for it next (start_recorded(true))
// is kept for the caller to run, as the pool's first member, once the locks
// are let go: the worker's wake-up (100-150 us on a virtual machine), its
// hand-over and the caller's own wake-up at the end are spared.
void Engine::State::dispatch(const std::shared_ptr<RegionRun>& run, const std::vector<Piece>& pieces,
                             const Shape& range, std::unique_lock<std::mutex>& order_lock) {
  if (caller_piece) {  // an earlier region goes first
    queue_piece(caller_piece->run, 0, caller_piece->range, *caller_piece->leaf);
    caller_piece.reset();
  }
  auto& first = *workers.at(pieces.front().leaf->name());
  const bool runs_here =
      pieces.size() == 1 && first.place() == Coherence::kHost && first.idle() && run->moved.empty() &&
      std::all_of(run->deps.begin(), run->deps.end(), [](const CompletionPtr& d) { return d->done(); });
  if (runs_here && small_enough_to_run_inline(*run, pieces, range)) {
    order_lock.unlock();
    run_piece(run, 0, range_of(pieces.front(), range), first);
    return;
  }
  if (runs_here && caller_waits && (!caller_waits_for || times_passed(run->args, caller_waits_for) > 0)) {
    caller_piece = CallerPiece{run, range_of(pieces.front(), range), &first};
    return;
  }
  for (std::size_t i = 0; i < pieces.size(); ++i)
    queue_piece(run, i, range_of(pieces[i], range), *workers.at(pieces[i].leaf->name()));
}

void Engine::State::queue_piece(const std::shared_ptr<RegionRun>& run, std::size_t piece, const backends::Range& range,
                                LeafWorker& leaf) {
  leaf.push([state = this, run, piece, range](LeafWorker& worker) { state->run_piece(run, piece, range, worker); });
  // The worker and the device's own threads wake at once, not one after the
  // other (a CPU leaf's helpers; see Device::expect_run). wake_ahead woke
  // them at the launch, but a recorded region may start after they went
  // back to sleep.
  leaf.device()->expect_run(*run->programs[piece], range);
}

}  // namespace canopy::runtime
