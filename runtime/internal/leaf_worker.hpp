// LeafWorker: the thread that runs one leaf's pieces of regions, in the order
// they were queued, on the leaf's device. A CPU leaf's worker is bound to the
// leaf's first core and is member 0 of the leaf's thread pool.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <canopy/backends/cpu/cpu_device.hpp>

#include "../completion.hpp"

namespace canopy::runtime {

class LeafWorker {
 public:
  /// A work item: runs on the worker thread with the leaf's device.
  using Task = std::function<void(backends::cpu::CpuDevice&)>;

  LeafWorker(std::string name, std::vector<unsigned> pus);
  /// Runs what is queued, then stops the thread.
  ~LeafWorker();

  const std::string& name() const { return name_; }
  const std::vector<unsigned>& pus() const { return pus_; }
  /// Queues a task; returns at once.
  void push(Task task);
  /// Waits until everything queued before this call has run.
  void drain();
  /// True when nothing is queued or running.
  bool idle() const { return outstanding_.load(std::memory_order_acquire) == 0; }
  /// Tasks queued or running.
  std::int64_t outstanding() const { return outstanding_.load(std::memory_order_acquire); }
  /// The leaf's device, for work run on the calling thread (small pieces
  /// while the worker is idle; see Engine::submit).
  backends::cpu::CpuDevice& device() { return *device_; }

 private:
  void run();

  std::string name_;
  std::vector<unsigned> pus_;
  std::unique_ptr<backends::cpu::CpuDevice> device_;
  std::mutex mutex_;
  std::deque<Task> queue_;
  bool stopping_ = false;
  std::atomic<std::uint32_t> signal_{0};
  std::atomic<std::uint32_t> sleeping_{0};
  std::atomic<std::int64_t> outstanding_{0};
  std::thread thread_;
};

}  // namespace canopy::runtime
