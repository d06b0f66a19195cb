// Completion: the end of one piece of asynchronous work (a region, or its
// part on one leaf). Waiters spin for a few microseconds, the time a short
// region takes, and then sleep; a failure is kept and rethrown to whoever
// waits.
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <memory>

namespace canopy::runtime {

class Completion {
 public:
  bool done() const { return state_.load(std::memory_order_acquire) != 0; }
  /// Marks the work done (with the exception it failed with, if any). Call once.
  void finish(std::exception_ptr error = nullptr);
  /// Blocks until done; rethrows the work's exception when `rethrow`.
  void wait(bool rethrow = true) const;
  /// The exception the work failed with, once done; null otherwise.
  std::exception_ptr error() const { return done() ? error_ : nullptr; }

 private:
  std::atomic<std::uint32_t> state_{0};
  mutable std::atomic<std::uint32_t> sleepers_{0};
  std::exception_ptr error_;  ///< written before state_ turns 1
};

using CompletionPtr = std::shared_ptr<Completion>;

}  // namespace canopy::runtime
