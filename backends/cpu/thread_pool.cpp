#include "thread_pool.hpp"

#include "poll.hpp"

#include <hwloc.h>

#include <algorithm>
#include <memory>

namespace canopy::backends::cpu {

namespace {

hwloc_topology_t binding_topology() {
  static std::once_flag once;
  static hwloc_topology_t topology = nullptr;
  std::call_once(once, [] {
    hwloc_topology_t t;
    if (hwloc_topology_init(&t) == 0 && hwloc_topology_load(t) == 0) topology = t;
  });
  return topology;
}

}  // namespace

bool bind_current_thread(unsigned pu) {
  auto topology = binding_topology();
  if (!topology) return false;
  std::unique_ptr<hwloc_bitmap_s, void (*)(hwloc_bitmap_t)> set(hwloc_bitmap_alloc(), hwloc_bitmap_free);
  hwloc_bitmap_only(set.get(), pu);
  return hwloc_set_cpubind(topology, set.get(), HWLOC_CPUBIND_THREAD) == 0;
}

std::size_t last_level_cache_bytes(const std::vector<unsigned>& pus) {
  auto topology = binding_topology();
  if (!topology) return 0;
  std::vector<hwloc_obj_t> caches;
  for (unsigned pu : pus) {
    hwloc_obj_t obj = hwloc_get_pu_obj_by_os_index(topology, pu);
    hwloc_obj_t last = nullptr;
    for (; obj; obj = obj->parent)
      if (hwloc_obj_type_is_dcache(obj->type) && obj->attr) last = obj;
    if (last && std::find(caches.begin(), caches.end(), last) == caches.end()) caches.push_back(last);
  }
  std::size_t bytes = 0;
  for (auto cache : caches) bytes += cache->attr->cache.size;
  return bytes;
}

ThreadPool::ThreadPool(std::vector<unsigned> pus) : pus_(std::move(pus)) {
  for (int member = 1; member < size(); ++member) threads_.emplace_back([this, member] { worker(member); });
}

ThreadPool::~ThreadPool() {
  stopping_.store(true);
  generation_.fetch_add(1, std::memory_order_release);
  generation_.notify_all();
  for (auto& t : threads_) t.join();
}

std::pair<std::int64_t, std::int64_t> ThreadPool::chunk_bounds(std::int64_t begin, std::int64_t end, int chunks,
                                                               int chunk) {
  const std::int64_t n = end - begin;
  const std::int64_t base = n / chunks, extra = n % chunks;
  const std::int64_t b = begin + chunk * base + std::min<std::int64_t>(chunk, extra);
  return {b, b + base + (chunk < extra ? 1 : 0)};
}

void ThreadPool::run_member(int member) {
  try {
    for (int c = member; c < chunks_; c += size()) {
      auto [b, e] = chunk_bounds(begin_, end_, chunks_, c);
      fn_(task_, c, b, e);
    }
  } catch (...) {
    std::lock_guard lock(error_mutex_);
    if (!error_) error_ = std::current_exception();
  }
}

void ThreadPool::run_erased(std::int64_t begin, std::int64_t end, int chunks, Erased fn, void* task) {
  if (chunks < 1) chunks = 1;
  std::lock_guard lock(run_mutex_);
  fn_ = fn;
  task_ = task;
  begin_ = begin;
  end_ = end;
  chunks_ = chunks;
  error_ = nullptr;
  const int helpers = std::min(size(), chunks) - 1;
  if (helpers > 0) {
    remaining_.store(static_cast<std::uint32_t>(size() - 1), std::memory_order_relaxed);
    generation_.fetch_add(1, std::memory_order_release);
    if (sleepers_.load(std::memory_order_seq_cst) > 0) generation_.notify_all();
  }
  run_member(0);
  if (helpers > 0 && !poll_until([&] { return remaining_.load(std::memory_order_acquire) == 0; })) {
    for (auto left = remaining_.load(std::memory_order_acquire); left != 0;
         left = remaining_.load(std::memory_order_acquire))
      remaining_.wait(left, std::memory_order_acquire);
  }
  if (error_) std::rethrow_exception(error_);
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
    while (!poll_until(changed, 16, 512)) {
      sleepers_.fetch_add(1, std::memory_order_seq_cst);
      if (generation_.load(std::memory_order_seq_cst) == seen) generation_.wait(seen, std::memory_order_acquire);
      sleepers_.fetch_sub(1, std::memory_order_seq_cst);
    }
    seen = generation_.load(std::memory_order_acquire);
    if (stopping_.load()) return;
    run_member(member);
    if (remaining_.fetch_sub(1, std::memory_order_acq_rel) == 1) remaining_.notify_one();
  }
}

}  // namespace canopy::backends::cpu
