// Running one piece of a region on a leaf: the elements it needs made
// current in the leaf's memory, the kernel run over the piece's range, what
// it wrote recorded in the coherence directory, and, when the leaf fails,
// the piece run again elsewhere (recovery.hpp says what that guarantees).
#include <algorithm>
#include <chrono>
#include <map>
#include <thread>

#include "engine_state.hpp"

namespace canopy::runtime {

// What a piece touches of one array: the hull its device copy must hold, and
// how many of the piece's parameters pass the array (the pins it holds).
struct Touched {
  IntervalSet span;
  std::int32_t uses = 0;
};

// What a piece over `range` reads and writes of each array parameter, and
// what it touches of each array, from the kernel's footprints.
struct PiecePlan {
  backends::Range range;
  std::vector<std::optional<std::pair<ReadPlan, WritePlan>>> params;
  std::map<DeviceCopies*, Touched> arrays;
};

namespace {
double seconds_between(std::chrono::steady_clock::time_point from, std::chrono::steady_clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

// The arrays a piece uses, kept from eviction (to make room for another
// array's copy in a device memory) from before their copies are made until
// the piece's writes are recorded. On the host too: an evicted copy is
// flushed to the host, where a CPU piece may be writing the same elements.
class PiecePins {
 public:
  PiecePins(const RegionRun& run, int place) : place_(place) {
    for (const auto& arg : run.args)
      if (const auto* storage = std::get_if<std::shared_ptr<ArrayStorage>>(&arg)) {
        auto& copies = (*storage)->copies();
        copies.pin(place);
        pinned_.push_back(&copies);
      }
  }
  ~PiecePins() {
    for (auto* copies : pinned_) copies->unpin(place_);
  }
  PiecePins(const PiecePins&) = delete;
  PiecePins& operator=(const PiecePins&) = delete;

 private:
  int place_;
  std::vector<DeviceCopies*> pinned_;
};

// Polls `busy` every 100 µs, `lock` let go in between, for about 5 s at
// most (pieces end; two waiting for each other end with a refusal). True
// when it no longer holds.
template <class Busy>
bool wait_while(std::unique_lock<std::mutex>& lock, const Busy& busy) {
  for (int waited = 0; busy(); ++waited) {
    if (waited == 50000) return false;
    lock.unlock();
    std::this_thread::sleep_for(std::chrono::microseconds(100));
    lock.lock();
  }
  return true;
}

// Makes `copies`' copy at `worker`'s device hold `touched.span`. A copy that
// grows moves to a larger buffer: not while a piece of another region uses it
// there (one moved to this device by recovery), which is waited for.
void hold_for_piece(DeviceCopies& copies, const Executor& worker, const Touched& touched) {
  const Range window = touched.span.hull();
  std::unique_lock lock(copies.mutex);
  if (!wait_while(
          lock, [&] { return copies.must_grow(worker.place(), window) && copies.pins(worker.place()) > touched.uses; }))
    throw Error("an array's copy on " + worker.device()->info().id +
                " must grow for this piece while another piece there keeps using it (waited 5 s)");
  copies.hold(worker.place(), worker.device(), window);
}

PiecePlan plan_piece(const RegionRun& run, const backends::Range& range) {
  PiecePlan plan{range, std::vector<std::optional<std::pair<ReadPlan, WritePlan>>>(run.args.size()), {}};
  for (std::size_t p = 0; p < run.args.size(); ++p) {
    auto* storage = std::get_if<std::shared_ptr<ArrayStorage>>(&run.args[p]);
    if (!storage) continue;
    Touched& array = plan.arrays[&(*storage)->copies()];
    ++array.uses;  // as PiecePins counts
    const auto* footprint = run.footprint().of(static_cast<int>(p));
    if (!footprint) continue;
    const auto& shape = (*storage)->shape();
    auto& param =
        plan.params[p].emplace(reads_of(footprint->reads, shape, range.begin[0], range.end[0]),
                               writes_of(footprint->writes, shape, run.record->range, range.begin[0], range.end[0]));
    array.span.add(param.first.ranges);
    array.span.add(param.second.written);
  }
  return plan;
}

// The bytes of the copies a piece over `range` holds on a device.
std::int64_t window_bytes(const PiecePlan& plan) {
  std::int64_t bytes = 0;
  for (const auto& [copies, array] : plan.arrays) bytes += copies->window_bytes(array.span.hull());
  return bytes;
}

// `range` cut into `parts` consecutive parts along dimension 0.
std::vector<backends::Range> cut(const backends::Range& range, std::int64_t parts) {
  const std::int64_t rows = range.end[0] - range.begin[0];
  std::vector<backends::Range> out;
  for (std::int64_t k = 0; k < parts; ++k) {
    backends::Range part = range;
    part.begin[0] = range.begin[0] + rows * k / parts;
    part.end[0] = range.begin[0] + rows * (k + 1) / parts;
    if (part.end[0] > part.begin[0]) out.push_back(part);
  }
  return out;
}

// A piece on a device whose windows do not fit its device memory together
// (an array larger than the device, split over nothing else) runs in
// passes: consecutive parts of its range along dimension 0, the fewest
// (doubling) whose windows each fit, one after the other, each pass's
// copies flushed to the host and freed before the next takes its own. Not
// where arrays are merged or added to (their private copies may not be
// combined while other pieces add to theirs), and not where the footprint
// does not shrink with the range (a gather over a whole array): then the
// piece is the one pass, and hold() refuses it, naming the sizes.
std::vector<PiecePlan> passes_for(const RegionRun& run, const backends::Range& range, const Executor& worker) {
  std::vector<PiecePlan> whole;
  whole.push_back(plan_piece(run, range));
  if (worker.place() == Coherence::kHost) return whole;
  std::int64_t capacity = 0;
  for (const auto& [copies, array] : whole[0].arrays) {
    if (copies->merge_operator()) return whole;
    capacity = copies->capacity(worker.place());
  }
  for (std::size_t p = 0; p < run.args.size(); ++p)
    if (run.writes.mode(p) == WriteMode::Added) return whole;
  if (capacity <= 0 || window_bytes(whole[0]) <= capacity) return whole;
  const std::int64_t rows = range.end[0] - range.begin[0];
  for (std::int64_t parts = 2; parts / 2 < rows; parts *= 2) {
    std::vector<PiecePlan> passes;
    for (const auto& part : cut(range, std::min(parts, rows))) {
      passes.push_back(plan_piece(run, part));
      if (window_bytes(passes.back()) > capacity) break;
    }
    if (window_bytes(passes.back()) <= capacity) return passes;
  }
  return whole;
}

// Whether the copies at `place` of a piece's arrays, grown to what it
// touches, would pass the device's capacity together.
bool outgrows(const PiecePlan& plan, int place) {
  std::int64_t capacity = 0, projected = 0;
  for (const auto& [copies, array] : plan.arrays) {
    std::lock_guard lock(copies->mutex);
    capacity = copies->capacity(place);
    projected += copies->grown_bytes(place, array.span.hull());
  }
  return capacity > 0 && projected > capacity;
}

// Room in the device memory at `worker` for the copies of a piece's arrays,
// grown to what it touches, made by evicting other arrays' copies before the
// piece takes any array's mutex. Made later, in hold(), with the array's
// mutex held, a wait there for a copy that a piece elsewhere uses could close
// a circle: that piece waiting for the same array, or on another device for
// room that this piece's arrays take.
void make_room_for(const PiecePlan& plan, const Executor& worker) {
  const int place = worker.place();
  std::int64_t need = 0;
  TransferTotals* totals = nullptr;
  std::vector<const DeviceCopies*> keep;
  for (const auto& [copies, array] : plan.arrays) {
    std::lock_guard lock(copies->mutex);
    if (copies->capacity(place) <= 0 || !copies->totals()) return;
    const Range window = array.span.hull();
    if (copies->bytes_at(place) == 0 || copies->must_grow(place, window))
      need += copies->grown_bytes(place, window) - copies->bytes_at(place);
    totals = copies->totals();
    keep.push_back(copies);
  }
  if (!totals || need <= 0) return;
  std::unique_lock held_lock(totals->held_mutex);
  DeviceCopies::make_room(*totals, place, worker.device()->info().id, need, keep, held_lock);
}

// Before a piece (or a pass of one) on a device, room for its arrays'
// copies. Before a pass (`always`), or a piece whose arrays' copies would
// outgrow the device together, first the copies that do not cover what it
// touches (the last pass's windows, or an earlier region's) or hold more
// than it (an earlier region's whole array) are written back and freed, so
// that its own windows take their place. The piece pins its arrays, and a
// copy it pins is never evicted to make room: without this, copies grown or
// kept larger than the piece needs would leave no room beside them.
void make_way(const PiecePlan& plan, const Executor& worker, bool always) {
  if (worker.place() == Coherence::kHost) return;
  const int place = worker.place();
  if (always || outgrows(plan, place)) {
    for (const auto& [copies, array] : plan.arrays) {
      const Range window = array.span.hull();
      std::unique_lock lock(copies->mutex);
      auto misplaced = [&] {
        return copies->must_grow(place, window) || copies->bytes_at(place) > copies->window_bytes(window);
      };
      // Not while another piece here uses the copy, nor while a piece
      // elsewhere uses the array where freeing it is not safe (this piece
      // holds no pins yet, so none waits for it).
      auto in_use = [&] {
        return copies->pinned(place) || (copies->pinned() && !copies->may_free_while_used_elsewhere(place));
      };
      if (wait_while(lock, [&] { return misplaced() && in_use(); }) && misplaced()) copies->evict(place);
    }
  }
  make_room_for(plan, worker);
}

// A device memory's refusal, told with the region, the leaf and the arrays
// the program knows (the refusal itself names only bytes), and why the piece
// did not run in passes; any other error as it is.
std::exception_ptr with_context(const RegionRun& run, const Executor& worker, std::exception_ptr error) {
  try {
    std::rethrow_exception(error);
  } catch (const AllocationFailed& refused) {
    std::string one_pass;
    for (std::size_t p = 0; p < run.args.size(); ++p) {
      const auto* storage = std::get_if<std::shared_ptr<ArrayStorage>>(&run.args[p]);
      if (!storage) continue;
      if ((*storage)->copies().merge_operator() && one_pass.empty())
        one_pass = "; it runs in one pass, since " + (*storage)->describe() + " is merged";
      else if (run.writes.mode(p) == WriteMode::Added && one_pass.empty())
        one_pass = "; it runs in one pass, since several memories add to " + (*storage)->describe();
    }
    return std::make_exception_ptr(AllocationFailed("region of kernel '" + run.kernel->optimized->name +
                                                    "', its piece on leaf '" + worker.name() + "' (" +
                                                    describe_arrays(run.args) + "): " + refused.what() + one_pass));
  } catch (...) {
    return error;
  }
}

// The reductions' partials of two passes of a piece, combined.
std::vector<backends::ReductionValue> combined(const RegionRun& run, const std::vector<backends::ReductionValue>& a,
                                               const std::vector<backends::ReductionValue>& b) {
  std::vector<backends::ReductionValue> out;
  std::size_t r = 0;
  for (const auto& param : run.kernel->optimized->params) {
    if (!param.is_reduction()) continue;
    if (r < a.size() && r < b.size()) out.push_back(backends::combine(param.reduce, a[r], b[r]));
    ++r;
  }
  return out;
}

}  // namespace

// Merge arrays, and arrays the region adds to from several memories, get
// private copies instead of current ones. On a device, each array's copy
// holds (at least) what the piece touches of it, whatever parameters pass it.
Engine::State::PieceWrites Engine::State::prepare_arrays(const RegionRun& run, PiecePlan plan, const Executor& worker) {
  const auto& kernel = *run.kernel->optimized;
  PieceWrites piece{std::vector<IntervalSet>(run.args.size()), std::vector<std::optional<Bytes>>(run.args.size())};
  if (worker.place() != Coherence::kHost)
    for (const auto& [copies, array] : plan.arrays) hold_for_piece(*copies, worker, array);
  for (std::size_t p = 0; p < run.args.size(); ++p) {
    if (!plan.params[p]) continue;
    auto& [reads, writes] = *plan.params[p];
    auto& copies = std::get<std::shared_ptr<ArrayStorage>>(run.args[p])->copies();
    std::lock_guard lock(copies.mutex);
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

void Engine::State::record_writes(const RegionRun& run, const PieceWrites& piece, const Executor& worker) {
  for (std::size_t p = 0; p < run.args.size(); ++p) {
    auto* storage = std::get_if<std::shared_ptr<ArrayStorage>>(&run.args[p]);
    if (!storage || piece.written[p].empty()) continue;
    auto& copies = (*storage)->copies();
    std::lock_guard lock(copies.mutex);
    if (piece.twins[p])
      copies.merge_changed(worker.place(), piece.written[p], *piece.twins[p]);
    else
      copies.wrote(worker.place(), piece.written[p]);
    // The program reads this memory itself (wrapped, or a host view open):
    // what the device wrote is there when the region ends, as on a CPU leaf.
    if (worker.place() != Coherence::kHost && (*storage)->host_sees_writes()) copies.pull_to_host(piece.written[p]);
  }
}

void Engine::State::run_piece(const std::shared_ptr<RegionRun>& run, std::size_t piece, const backends::Range& range,
                              const Executor& leaf) {
  const Executor& worker = piece < run->moved.size() && run->moved[piece] ? *run->moved[piece] : leaf;
  const auto start = std::chrono::steady_clock::now();
  auto launched = start;
  double run_seconds = 0;
  std::size_t passes_run = 1;
  for (auto& dep : run->deps) dep->wait(false);
  // A region that wrote one of its arrays last failed, and the program has
  // not been told: this one fails with the same error instead of running on
  // what that one left (a host view of what it writes reports the cause).
  const auto failed = std::find_if(run->writers_before.begin(), run->writers_before.end(),
                                   [](const CompletionPtr& writer) { return writer->unreported_error() != nullptr; });
  if (failed != run->writers_before.end()) {
    run->fail_as(*failed);
    passes_run = 0;
  } else {
    // The part of the range no pass has finished: a pass whose writes are
    // recorded stays done (an update in place must not run twice), and only
    // the rest runs again when a later pass fails.
    backends::Range rest = range;
    std::size_t done = 0;
    try {
      auto passes = passes_for(*run, range, worker);
      for (std::size_t k = 0; k < passes.size(); ++k) {
        const backends::Range part = passes[k].range;
        rest.begin[0] = part.begin[0];
        make_way(passes[k], worker, passes.size() > 1);
        const PiecePins pins(*run, worker.place());
        auto written = prepare_arrays(*run, std::move(passes[k]), worker);
        const auto pass_launched = std::chrono::steady_clock::now();
        if (k == 0) launched = pass_launched;
        auto partials = launch_piece(*run, *run->programs[piece], part, worker);
        run_seconds += seconds_between(pass_launched, std::chrono::steady_clock::now());
        record_writes(*run, written, worker);
        run->partials[piece] = k == 0 ? std::move(partials) : combined(*run, run->partials[piece], partials);
        ++done;
      }
      passes_run = passes.size();
    } catch (...) {
      passes_run = done + 1;  // the one that failed included
      const auto before = done > 0 ? run->partials[piece] : std::vector<backends::ReductionValue>{};
      if (!recover_piece(*run, piece, rest, worker, std::current_exception()))
        run->fail(with_context(*run, worker, std::current_exception()));
      else if (done > 0)
        run->partials[piece] = combined(*run, before, run->partials[piece]);
    }
  }
  const auto end = std::chrono::steady_clock::now();
  if (trace::on()) trace::piece(worker.name(), *run->record, piece, range, start, launched, run_seconds, end);
  book.piece_finished(*run->record, piece, range.points(), seconds_between(start, end), run_seconds,
                      seconds_between(run->submitted, end), static_cast<std::int64_t>(passes_run));
  if (run->pieces_left.fetch_sub(1, std::memory_order_acq_rel) == 1) finish_region(*run);
}

// In checked mode an index out of bounds becomes the region's error (what
// the piece wrote in bounds still counts).
std::vector<backends::ReductionValue> Engine::State::launch_piece(RegionRun& run, const backends::Program& program,
                                                                  const backends::Range& range,
                                                                  const Executor& worker) {
  if (!kernels.checked()) return worker.device()->run(program, kernel_args(run.args, worker), range);
  auto outcome = run_checked(*worker.device(), program, kernel_args(run.args, worker), range);
  if (!outcome.fault.empty()) run.fail(std::make_exception_ptr(OutOfBounds(outcome.fault)));
  return std::move(outcome.partials);
}

// Runs the piece on each fallback in turn, then on `failed` once more. True
// when one attempt succeeded (counted and logged). An array the device cannot
// allocate is not retried: the user placed it there, and the region fails
// with the device's error.
bool Engine::State::recover_piece(RegionRun& run, std::size_t piece, const backends::Range& range,
                                  const Executor& failed, std::exception_ptr error) {
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
      PiecePlan plan = plan_piece(run, range);
      make_way(plan, target, false);
      const PiecePins pins(run, target.place());
      auto written = prepare_arrays(run, std::move(plan), target);
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

// When the leaf's device cannot compile the kernel, the piece moves to the
// first fallback that can (or the same device compiles it on a second try).
// Throws the first error when none can.
std::shared_ptr<backends::Program> Engine::State::program_for_piece(RegionRun& run, std::size_t piece,
                                                                    const LeafWorker& worker) {
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

}  // namespace canopy::runtime
