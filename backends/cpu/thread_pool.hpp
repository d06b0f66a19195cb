// ThreadPool: the threads of one CPU location, one per core, each bound to
// its core with hwloc. The thread that calls run() takes part as member 0, so
// a pool of n cores starts n-1 threads, at its first run() that splits a
// range over more than one member (a program that makes a Runtime and never
// launches on this location starts none); the runtime gives each CPU leaf a
// worker thread, bound to the leaf's first core, that is that member 0.
//
// run() splits a range into contiguous chunks by a fixed rule, so the same
// range and chunk count always produce the same chunks: reductions combine
// their per-chunk partial results in chunk order and give the same result on
// every run, whichever member ran which chunk. Each member owns a contiguous
// block of the chunks (the same block on every run, so a thread keeps its
// rows in its caches from one launch to the next) and runs them in order;
// a member whose block is done takes chunks from the far end of another's.
// With several chunks per member, a core that is slower this time (an
// interrupt, a neighbour on the host, a helper late to wake) is helped by the
// others instead of holding every member up at the end of the launch.
//
// Helpers poll for a while after a run, then sleep. Whoever hands a run to
// member 0's thread may wake them first (wake_helpers), so that both
// threads' wake-ups overlap instead of following one another. A run ends
// when its chunks are done: a helper still asleep or not yet scheduled when
// the others have taken every chunk skips the run instead of being waited
// for (an empty region over a million points: 1.5 instead of 5.2 us).

#pragma once

#include <sched.h>

#include <atomic>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace canopy::backends::cpu {

class ThreadPool {
 public:
  /// A pool over the processing units `pus` (hwloc OS indexes; empty: one
  /// member, no threads). Threads 1..n-1 are bound to pus[1..n-1].
  explicit ThreadPool(std::vector<unsigned> pus);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  /// Number of members, the calling thread included.
  int size() const { return static_cast<int>(pus_.empty() ? 1 : pus_.size()); }
  /// The processing units of the members (pus[0] is the caller's).
  const std::vector<unsigned>& pus() const { return pus_; }

  /// Calls task(chunk, chunk_begin, chunk_end) for the `chunks` contiguous,
  /// nearly equal chunks of [begin, end) (see chunk_bounds; a chunk may be
  /// empty), spread over the members, and returns when all are done. Rethrows
  /// the first exception a task threw. Calls from several threads at once are
  /// serialized.
  template <class Task>
  void run(std::int64_t begin, std::int64_t end, int chunks, std::int64_t grain, Task&& task) {
    run_erased(begin, end, chunks, grain, &call<std::remove_reference_t<Task>>, &task);
  }

  /// Wakes the helper threads that sleep, so that they poll for the next
  /// run() instead: called by whoever knows a run() will come soon from
  /// another thread, their wake-up then overlaps that thread's own. Does
  /// nothing before the first run() that started them.
  void wake_helpers();

  /// [begin, end) of chunk `chunk` of `chunks` over [begin, end): nearly
  /// equal parts whose inner bounds are rounded down to multiples of `grain`
  /// (so that chunks of a one-dimensional range start on whole vectors).
  static std::pair<std::int64_t, std::int64_t> chunk_bounds(std::int64_t begin, std::int64_t end, int chunks, int chunk,
                                                            std::int64_t grain = 1);

 private:
  using Erased = void (*)(void* task, int chunk, std::int64_t begin, std::int64_t end);
  template <class Task>
  static void call(void* task, int chunk, std::int64_t b, std::int64_t e) {
    (*static_cast<Task*>(task))(chunk, b, e);
  }
  void run_erased(std::int64_t begin, std::int64_t end, int chunks, std::int64_t grain, Erased fn, void* task);
  void run_member(int member);
  void run_chunk(int chunk);
  /// The next chunk of `member`'s block, from its front (`own`) or, for a
  /// member helping, from its back; -1 when the block is done.
  int take(int member, bool own);

  /// A member's block of chunks still to run, [front, back) packed as
  /// front << 32 | back, on a cache line of its own.
  struct alignas(64) Block {
    std::atomic<std::uint64_t> chunks{0};
  };
  void worker(int member);
  /// Bumps wake_ and wakes the helpers that sleep on it.
  void wake_sleepers();

  std::vector<unsigned> pus_;
  std::vector<std::thread> threads_;
  std::mutex run_mutex_;

  // The job being run; written by run() before generation_ is bumped.
  Erased fn_ = nullptr;
  void* task_ = nullptr;
  std::int64_t begin_ = 0, end_ = 0, grain_ = 1;
  int chunks_ = 0;
  std::unique_ptr<Block[]> blocks_;  ///< one per member
  std::exception_ptr error_;
  std::mutex error_mutex_;

  std::atomic<std::uint32_t> generation_{0};
  /// Helpers inside the current job (joined and not yet left).
  std::atomic<std::uint32_t> inside_{0};
  /// Set by the caller of run() once every chunk is taken: a helper that
  /// comes later skips the job. Cleared, after the job's fields are
  /// written, when the next job is posted.
  std::atomic<bool> closed_{true};
  /// What sleeping helpers wait on: bumped by each job and by wake_helpers().
  std::atomic<std::uint32_t> wake_{0};
  std::atomic<std::uint32_t> sleepers_{0};
  std::atomic<bool> started_{false};  ///< the helper threads exist
  std::atomic<bool> stopping_{false};
};

/// Binds the calling thread to processing unit `pu` (the OS's index, as
/// hwloc's os_index); false when the system refuses (the thread then runs
/// unbound).
bool bind_current_thread(unsigned pu);

/// The calling thread's CPU affinity, read when this is made and given back
/// when it goes if narrow() changed it meanwhile. Made and destroyed on the
/// same thread.
class SavedAffinity {
 public:
  SavedAffinity();
  ~SavedAffinity();
  SavedAffinity(const SavedAffinity&) = delete;
  SavedAffinity& operator=(const SavedAffinity&) = delete;

  /// The affinity read, or null when the system did not say.
  const cpu_set_t* saved() const { return read_ ? &saved_ : nullptr; }
  /// Keeps the calling thread to `set` until this goes; false when refused.
  bool narrow(const cpu_set_t& set);

 private:
  cpu_set_t saved_{};
  bool read_ = false, narrowed_ = false;
};

/// Names `thread` "canopy:" + `role` (cut to the system's 15 characters)
/// where `top -H`, `gdb` and /proc/self/task/*/comm show it; named by the
/// thread that starts it, the name is there as soon as the thread is.
void name_thread(std::thread& thread, const std::string& role);

/// Bytes of last-level cache the processing units `pus` share among them
/// (the sum over the distinct last-level caches that hold one of them, as
/// sysfs describes them); 0 when the system does not say.
std::size_t last_level_cache_bytes(const std::vector<unsigned>& pus);

}  // namespace canopy::backends::cpu
