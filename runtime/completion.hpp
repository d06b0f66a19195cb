// Completion: the end of one piece of asynchronous work (a region's part on
// one leaf). Waiters block until it is done; a failure is kept and rethrown
// to whoever waits.
#pragma once

#include <atomic>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>

namespace canopy::runtime {

class Completion {
 public:
  bool done() const { return done_.load(std::memory_order_acquire); }
  /// Marks the work done (with the exception it failed with, if any).
  void finish(std::exception_ptr error = nullptr);
  /// Blocks until done; rethrows the work's exception when `rethrow`.
  void wait(bool rethrow = true) const;
  std::exception_ptr error() const;

 private:
  std::atomic<bool> done_{false};
  mutable std::mutex mutex_;
  mutable std::condition_variable cv_;
  std::exception_ptr error_;
};

using CompletionPtr = std::shared_ptr<Completion>;

}  // namespace canopy::runtime
