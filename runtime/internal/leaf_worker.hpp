// LeafWorker: the thread that runs one leaf's pieces of regions, in the order
// they were queued, on the leaf's device; it starts with the first. A CPU
// leaf's worker is bound to the leaf's first core and is member 0 of the
// leaf's thread pool; a device leaf's worker drives the device (copies,
// launches) and waits for it.
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
  /// A work item: runs on the worker thread.
  using Task = std::function<void(LeafWorker&)>;

  /// A CPU leaf over the processing units `pus` (its device is made here).
  LeafWorker(std::string name, std::vector<unsigned> pus);
  /// A device leaf: `device` holds its data at coherence place `place` (not 0).
  LeafWorker(std::string name, std::shared_ptr<backends::Device> device, int place);
  /// Runs what is queued, then stops the thread.
  ~LeafWorker();

  const std::string& name() const { return name_; }
  const std::vector<unsigned>& pus() const { return pus_; }
  /// Queues a task; returns at once.
  void push(Task task);
  /// A hint that a task is coming soon: a sleeping worker thread wakes now
  /// and polls for it, so that its wake-up overlaps what the caller still
  /// does before push(). Nothing when the thread is awake or not started.
  void expect();
  /// Waits until everything queued before this call has run.
  void drain();
  /// True when nothing is queued or running.
  bool idle() const { return outstanding_.load(std::memory_order_acquire) == 0; }
  /// Tasks queued or running.
  std::int64_t outstanding() const { return outstanding_.load(std::memory_order_acquire); }
  /// The leaf's device (also used by the calling thread for small pieces
  /// while the worker is idle; see Engine::submit).
  const std::shared_ptr<backends::Device>& device() const { return device_; }
  /// Where the device keeps its copies of arrays: 0 (the host copy) for CPU
  /// leaves, a number of its own for each device.
  int place() const { return place_; }

 private:
  void run();
  /// Starts the thread (at the first push: a leaf that never runs anything
  /// costs no thread); called with mutex_ held.
  void start();

  std::string name_;
  std::vector<unsigned> pus_;
  std::shared_ptr<backends::Device> device_;
  int place_ = 0;
  std::mutex mutex_;
  std::deque<Task> queue_;
  bool stopping_ = false;
  std::atomic<std::uint32_t> signal_{0};
  std::atomic<std::uint32_t> sleeping_{0};
  std::atomic<std::int64_t> outstanding_{0};
  std::thread thread_;
};

}  // namespace canopy::runtime
