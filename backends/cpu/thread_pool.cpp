#include "thread_pool.hpp"

#include "poll.hpp"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <optional>
#include <set>
#include <string>

namespace canopy::backends::cpu {

namespace {

std::string read_line(const std::string& path) {
  std::ifstream file(path);
  std::string line;
  std::getline(file, line);
  return line;
}

/// "32K", "1024K", "32M" (sysfs's cache sizes) in bytes; 0 when unreadable.
std::size_t size_of_text(const std::string& text) {
  std::size_t used = 0;
  unsigned long long value = 0;
  try {
    value = std::stoull(text, &used);
  } catch (...) {
    return 0;
  }
  const char unit = used < text.size() ? text[used] : 'B';
  const std::size_t scale = unit == 'K' ? 1024 : unit == 'M' ? 1024 * 1024 : unit == 'G' ? 1024ull << 20 : 1;
  return static_cast<std::size_t>(value) * scale;
}

}  // namespace

// Both read what they need from the kernel directly: a second hwloc topology
// (discovery has the first) would cost every Runtime a full scan of sysfs.
bool bind_current_thread(unsigned pu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (pu >= CPU_SETSIZE) return false;
  CPU_SET(pu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0;
}

SavedAffinity::SavedAffinity() : read_(sched_getaffinity(0, sizeof saved_, &saved_) == 0) {}

SavedAffinity::~SavedAffinity() {
  if (narrowed_) sched_setaffinity(0, sizeof saved_, &saved_);
}

bool SavedAffinity::narrow(const cpu_set_t& set) {
  const bool narrowed = read_ && sched_setaffinity(0, sizeof set, &set) == 0;
  narrowed_ = narrowed_ || narrowed;
  return narrowed;
}

void name_thread(std::thread& thread, const std::string& role) {
  pthread_setname_np(thread.native_handle(), ("canopy:" + role).substr(0, 15).c_str());
}

std::size_t last_level_cache_bytes(const std::vector<unsigned>& pus) {
  // Per PU: the highest-level data or unified cache; caches are the same
  // when their level and the PUs sharing them are.
  std::set<std::pair<int, std::string>> seen;
  std::size_t bytes = 0;
  for (unsigned pu : pus) {
    const std::string dir = "/sys/devices/system/cpu/cpu" + std::to_string(pu) + "/cache/";
    int best_level = 0;
    std::string best_shared;
    std::size_t best_size = 0;
    for (int index = 0; index < 16; ++index) {
      const std::string entry = dir + "index" + std::to_string(index) + "/";
      const std::string level = read_line(entry + "level");
      if (level.empty()) break;
      if (read_line(entry + "type") == "Instruction") continue;
      const int number = std::atoi(level.c_str());
      if (number <= best_level) continue;
      best_level = number;
      best_shared = read_line(entry + "shared_cpu_list");
      best_size = size_of_text(read_line(entry + "size"));
    }
    if (best_level > 0 && seen.emplace(best_level, best_shared).second) bytes += best_size;
  }
  return bytes;
}

ThreadPool::ThreadPool(std::vector<unsigned> pus) : pus_(std::move(pus)), blocks_(new Block[std::size_t(size())]) {}

ThreadPool::~ThreadPool() {
  stopping_.store(true);
  generation_.fetch_add(1, std::memory_order_release);
  wake_.fetch_add(1, std::memory_order_seq_cst);
  wake_.notify_all();
  for (auto& t : threads_) t.join();
}

std::pair<std::int64_t, std::int64_t> ThreadPool::chunk_bounds(std::int64_t begin, std::int64_t end, int chunks,
                                                               int chunk, std::int64_t grain) {
  const std::int64_t n = end - begin;
  const std::int64_t base = n / chunks, extra = n % chunks;
  auto bound = [&](int k) {
    if (k <= 0) return begin;
    if (k >= chunks) return end;
    const std::int64_t even = begin + k * base + std::min<std::int64_t>(k, extra);
    if (grain <= 1) return even;
    // Rounded down to a multiple of the grain in absolute index, not from
    // begin, so that rounding keeps bounds ordered and never below begin.
    const std::int64_t rounded = even - (((even % grain) + grain) % grain);
    return std::max(begin, rounded);
  };
  return {bound(chunk), bound(chunk + 1)};
}

int ThreadPool::take(int member, bool own) {
  auto& block = blocks_[static_cast<std::size_t>(member)].chunks;
  std::uint64_t packed = block.load(std::memory_order_acquire);
  for (;;) {
    const std::uint64_t front = packed >> 32, back = packed & 0xffffffffu;
    if (front >= back) return -1;
    const std::uint64_t next = own ? (front + 1) << 32 | back : front << 32 | (back - 1);
    if (block.compare_exchange_weak(packed, next, std::memory_order_acq_rel, std::memory_order_acquire))
      return static_cast<int>(own ? front : back - 1);
  }
}

void ThreadPool::run_chunk(int chunk) {
  auto [b, e] = chunk_bounds(begin_, end_, chunks_, chunk, grain_);
  if (b < e) fn_(task_, chunk, b, e);
}

void ThreadPool::run_member(int member) {
  try {
    auto drain = [&](int of, bool own) {
      for (int c = take(of, own); c >= 0; c = take(of, own)) run_chunk(c);
    };
    drain(member, true);
    for (int k = 1; k < size(); ++k) drain((member + k) % size(), false);
  } catch (...) {
    std::lock_guard lock(error_mutex_);
    if (!error_) error_ = std::current_exception();
  }
}

void ThreadPool::run_erased(std::int64_t begin, std::int64_t end, int chunks, std::int64_t grain, Erased fn,
                            void* task) {
  if (chunks < 1) chunks = 1;
  std::lock_guard lock(run_mutex_);
  fn_ = fn;
  task_ = task;
  begin_ = begin;
  end_ = end;
  grain_ = grain;
  chunks_ = chunks;
  error_ = nullptr;
  // Member m's block: chunks [m * chunks / size, (m + 1) * chunks / size).
  for (int m = 0; m < size(); ++m) {
    auto [front, back] = chunk_bounds(0, chunks, size(), m);
    blocks_[static_cast<std::size_t>(m)].chunks.store(
        static_cast<std::uint64_t>(front) << 32 | static_cast<std::uint64_t>(back), std::memory_order_relaxed);
  }
  const int helpers = std::min(size(), chunks) - 1;
  if (helpers > 0) {
    // The helpers start at the first run that needs them; generation_ is
    // still 0 then, so they see this run's bump below as a new job.
    if (threads_.empty()) {
      for (int member = 1; member < size(); ++member) {
        threads_.emplace_back([this, member] { worker(member); });
        name_thread(threads_.back(), "helper");
      }
      started_.store(true, std::memory_order_release);
    }
    closed_.store(false, std::memory_order_seq_cst);  // the job's fields are written
    generation_.fetch_add(1, std::memory_order_release);
    wake_sleepers();
  }
  // The caller is member 0: a program's own thread, running a region it
  // waits for, may sit on a helper's core, and would take turns there with
  // that helper while member 0's core idles, for as long as the scheduler
  // leaves it there (a whole 40 ms run in the test). It runs its part on
  // member 0's core and gets its affinity back. That holds for a caller
  // bound elsewhere too: the pool's cores are the Runtime's, and a thread an
  // OpenMP runtime bound to a helper's core (OMP_PLACES listing it first)
  // would otherwise share that core with the helper for the whole run.
  std::optional<SavedAffinity> caller_affinity;
  const unsigned core = pus_.empty() ? 0 : pus_.front();
  if (helpers > 0 && sched_getcpu() != static_cast<int>(core) && core < CPU_SETSIZE) {
    if (caller_affinity.emplace().saved()) {
      cpu_set_t only;
      CPU_ZERO(&only);
      CPU_SET(core, &only);
      caller_affinity->narrow(only);
    }
  }
  run_member(0);
  if (helpers > 0) {
    // Every chunk is taken: a helper that has not joined yet (asleep, or
    // its core busy) no longer may, and only those inside are waited for.
    closed_.store(true, std::memory_order_seq_cst);
    if (!poll_until([&] { return inside_.load(std::memory_order_seq_cst) == 0; })) {
      for (auto left = inside_.load(std::memory_order_acquire); left != 0;
           left = inside_.load(std::memory_order_acquire))
        inside_.wait(left, std::memory_order_acquire);
    }
  }
  if (error_) std::rethrow_exception(error_);
}

void ThreadPool::wake_sleepers() {
  wake_.fetch_add(1, std::memory_order_seq_cst);
  if (sleepers_.load(std::memory_order_seq_cst) > 0) wake_.notify_all();
}

void ThreadPool::wake_helpers() {
  if (started_.load(std::memory_order_acquire) && sleepers_.load(std::memory_order_seq_cst) > 0) wake_sleepers();
}

void ThreadPool::worker(int member) {
  bind_current_thread(pus_[static_cast<std::size_t>(member)]);
  // Generation 0 is the pool's start: a job or a stop posted before this
  // thread got here is still seen as new.
  std::uint32_t seen = 0;
  for (;;) {
    // The next launch of a loop of regions comes soon: poll (yielding the
    // core to anyone who wants it) before sleeping.
    auto changed = [&] { return generation_.load(std::memory_order_acquire) != seen; };
    // Woken without a job (wake_helpers: one is on its way), it polls again.
    while (!poll_until(changed, 16, 512)) {
      const auto woken = wake_.load(std::memory_order_seq_cst);
      sleepers_.fetch_add(1, std::memory_order_seq_cst);
      if (generation_.load(std::memory_order_seq_cst) == seen) wake_.wait(woken, std::memory_order_seq_cst);
      sleepers_.fetch_sub(1, std::memory_order_seq_cst);
    }
    seen = generation_.load(std::memory_order_acquire);
    if (stopping_.load()) return;
    // In, then a look at the gate: either the caller, closing it, sees this
    // member inside and waits for it, or this member sees it closed and
    // leaves the job's fields alone (they may be the next job's by now).
    inside_.fetch_add(1, std::memory_order_seq_cst);
    if (!closed_.load(std::memory_order_seq_cst)) run_member(member);
    if (inside_.fetch_sub(1, std::memory_order_acq_rel) == 1) inside_.notify_one();
  }
}

}  // namespace canopy::backends::cpu
