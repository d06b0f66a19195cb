// Running one piece of a region on a leaf: the elements it needs made
// current in the leaf's memory, the kernel run over the piece's range, what
// it wrote recorded in the coherence directory, and, when the leaf fails,
// the piece run again elsewhere (recovery.hpp says what that guarantees).
#include <chrono>
#include <map>
#include <thread>

#include "engine_state.hpp"

namespace canopy::runtime {

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

// What a piece touches of one array: the hull its device copy must hold, and
// how many of the piece's parameters pass the array (the pins it holds).
struct Touched {
  IntervalSet span;
  std::int32_t uses = 0;
};

// Makes `copies`' copy at `worker`'s device hold `touched.span`. A copy that
// grows moves to a larger buffer: not while a piece of another region uses it
// there (one moved to this device by recovery), which is waited for.
void hold_for_piece(DeviceCopies& copies, const Executor& worker, const Touched& touched) {
  const Range window = touched.span.hull();
  std::unique_lock lock(copies.mutex);
  for (int waited = 0; copies.must_grow(worker.place(), window) && copies.pins(worker.place()) > touched.uses;
       ++waited) {
    if (waited == 50000)
      throw Error("an array's copy on " + worker.device()->info().id +
                  " must grow for this piece while another piece there keeps using it (waited 5 s)");
    lock.unlock();
    std::this_thread::sleep_for(std::chrono::microseconds(100));
    lock.lock();
  }
  copies.hold(worker.place(), worker.device(), window);
}
}  // namespace

// Merge arrays, and arrays the region adds to from several memories, get
// private copies instead of current ones. On a device, each array's copy
// holds (at least) what the piece touches of it, whatever parameters pass it.
Engine::State::PieceWrites Engine::State::prepare_arrays(const RegionRun& run, const backends::Range& range,
                                                         const Executor& worker) {
  const auto& kernel = *run.kernel->optimized;
  PieceWrites piece{std::vector<IntervalSet>(run.args.size()), std::vector<std::optional<Bytes>>(run.args.size())};
  std::vector<std::optional<std::pair<ReadPlan, WritePlan>>> plans(run.args.size());
  std::map<DeviceCopies*, Touched> touched;
  for (std::size_t p = 0; p < run.args.size(); ++p) {
    auto* storage = std::get_if<std::shared_ptr<ArrayStorage>>(&run.args[p]);
    if (!storage) continue;
    Touched& array = touched[&(*storage)->copies()];
    ++array.uses;  // as PiecePins counts
    const auto* footprint = run.kernel->footprint.of(static_cast<int>(p));
    if (!footprint) continue;
    const auto& shape = (*storage)->shape();
    auto& plan = plans[p].emplace(reads_of(footprint->reads, shape, range.begin[0], range.end[0]),
                                  writes_of(footprint->writes, shape, run.record->range, range.begin[0], range.end[0]));
    array.span.add(plan.first.ranges);
    array.span.add(plan.second.written);
  }
  if (worker.place() != Coherence::kHost)
    for (const auto& [copies, array] : touched) hold_for_piece(*copies, worker, array);
  for (std::size_t p = 0; p < run.args.size(); ++p) {
    if (!plans[p]) continue;
    auto& [reads, writes] = *plans[p];
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
  }
}

void Engine::State::run_piece(const std::shared_ptr<RegionRun>& run, std::size_t piece, const backends::Range& range,
                              const Executor& leaf) {
  const Executor& worker = piece < run->moved.size() && run->moved[piece] ? *run->moved[piece] : leaf;
  const auto start = std::chrono::steady_clock::now();
  auto launched = start;
  double run_seconds = 0;
  try {
    for (auto& dep : run->deps) dep->wait(false);
    const PiecePins pins(*run, worker.place());
    auto written = prepare_arrays(*run, range, worker);
    launched = std::chrono::steady_clock::now();
    run->partials[piece] = launch_piece(*run, *run->programs[piece], range, worker);
    run_seconds = seconds_between(launched, std::chrono::steady_clock::now());
    record_writes(*run, written, worker);
  } catch (...) {
    if (!recover_piece(*run, piece, range, worker, std::current_exception())) run->fail(std::current_exception());
  }
  const auto end = std::chrono::steady_clock::now();
  if (trace::on()) trace::piece(worker.name(), *run->record, piece, range, start, launched, run_seconds, end);
  book.piece_finished(*run->record, piece, range.points(), seconds_between(start, end), run_seconds,
                      seconds_between(run->submitted, end));
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
      const PiecePins pins(run, target.place());
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
