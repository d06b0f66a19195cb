#include "leaf_worker.hpp"

#include <canopy/backends/cpu/poll.hpp>
#include <canopy/backends/cpu/thread_pool.hpp>

namespace canopy::runtime {

LeafWorker::LeafWorker(std::string name, std::vector<unsigned> pus)
    : name_(std::move(name)), pus_(std::move(pus)), device_(std::make_shared<backends::cpu::CpuDevice>(name_, pus_)) {}

LeafWorker::LeafWorker(std::string name, std::shared_ptr<backends::Device> device, int place)
    : name_(std::move(name)), device_(std::move(device)), place_(place) {}

void LeafWorker::start() {
  thread_ = std::thread([this] {
    if (!pus_.empty()) backends::cpu::bind_current_thread(pus_.front());  // a CPU leaf's first core
    run();
  });
  backends::cpu::name_thread(thread_, name_);
}

LeafWorker::~LeafWorker() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  signal_.fetch_add(1, std::memory_order_seq_cst);
  signal_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void LeafWorker::push(Task task) {
  outstanding_.fetch_add(1, std::memory_order_acq_rel);
  {
    std::lock_guard lock(mutex_);
    queue_.push_back(std::move(task));
    if (!thread_.joinable()) start();  // the first task: the thread starts now
  }
  signal_.fetch_add(1, std::memory_order_seq_cst);
  if (sleeping_.load(std::memory_order_seq_cst) != 0) signal_.notify_one();
}

void LeafWorker::expect() {
  if (sleeping_.load(std::memory_order_seq_cst) == 0) return;
  signal_.fetch_add(1, std::memory_order_seq_cst);  // run() finds no task and polls again
  signal_.notify_one();
}

void LeafWorker::drain() {
  if (idle()) return;
  auto done = std::make_shared<Completion>();
  push([done](LeafWorker&) { done->finish(); });
  done->wait(false);
}

void LeafWorker::run() {
  for (;;) {
    Task task;
    const auto seen = signal_.load(std::memory_order_seq_cst);
    {
      std::lock_guard lock(mutex_);
      if (!queue_.empty()) {
        task = std::move(queue_.front());
        queue_.pop_front();
      } else if (stopping_) {
        return;
      }
    }
    if (task) {
      task(*this);
      outstanding_.fetch_sub(1, std::memory_order_acq_rel);
      continue;
    }
    // Nothing queued: poll briefly (the next region of a loop comes soon),
    // then sleep until push() or the destructor signals.
    if (!backends::cpu::poll_until([&] { return signal_.load(std::memory_order_acquire) != seen; }, 16, 256)) {
      sleeping_.fetch_add(1, std::memory_order_seq_cst);
      signal_.wait(seen, std::memory_order_seq_cst);
      sleeping_.fetch_sub(1, std::memory_order_seq_cst);
    }
  }
}

}  // namespace canopy::runtime
