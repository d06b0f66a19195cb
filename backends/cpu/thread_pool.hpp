// ThreadPool: the threads of one CPU location, one per core, each bound to
// its core with hwloc. The thread that calls run() takes part as member 0, so
// a pool of n cores starts n-1 threads; the runtime gives each CPU leaf a
// worker thread, bound to the leaf's first core, that is that member 0.
//
// run() splits a range into contiguous chunks assigned to members by a fixed
// rule (chunk c runs on member c % size), so the same range and pool size
// always produce the same chunks: reductions combine their per-chunk partial
// results in chunk order and give the same result on every run.
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <mutex>
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
  /// nearly equal chunks of [begin, end), spread over the members, and returns
  /// when all are done. Rethrows the first exception a task threw. Calls from
  /// several threads at once are serialized.
  template <class Task>
  void run(std::int64_t begin, std::int64_t end, int chunks, Task&& task) {
    run_erased(begin, end, chunks, &call<std::remove_reference_t<Task>>, &task);
  }

  /// [begin, end) of chunk `chunk` of `chunks` over [begin, end).
  static std::pair<std::int64_t, std::int64_t> chunk_bounds(std::int64_t begin, std::int64_t end, int chunks,
                                                            int chunk);

 private:
  using Erased = void (*)(void* task, int chunk, std::int64_t begin, std::int64_t end);
  template <class Task>
  static void call(void* task, int chunk, std::int64_t b, std::int64_t e) {
    (*static_cast<Task*>(task))(chunk, b, e);
  }
  void run_erased(std::int64_t begin, std::int64_t end, int chunks, Erased fn, void* task);
  void run_member(int member);
  void worker(int member);

  std::vector<unsigned> pus_;
  std::vector<std::thread> threads_;
  std::mutex run_mutex_;

  // The job being run; written by run() before generation_ is bumped.
  Erased fn_ = nullptr;
  void* task_ = nullptr;
  std::int64_t begin_ = 0, end_ = 0;
  int chunks_ = 0;
  std::exception_ptr error_;
  std::mutex error_mutex_;

  std::atomic<std::uint32_t> generation_{0};
  std::atomic<std::uint32_t> remaining_{0};
  std::atomic<std::uint32_t> sleepers_{0};
  std::atomic<bool> stopping_{false};
};

/// Binds the calling thread to processing unit `pu` (the OS's index, as
/// hwloc's os_index); false when the system refuses (the thread then runs
/// unbound).
bool bind_current_thread(unsigned pu);

/// Bytes of last-level cache the processing units `pus` share among them
/// (the sum over the distinct last-level caches that hold one of them, as
/// sysfs describes them); 0 when the system does not say.
std::size_t last_level_cache_bytes(const std::vector<unsigned>& pus);

}  // namespace canopy::backends::cpu
