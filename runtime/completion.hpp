// Completion: the end of one piece of asynchronous work (a region, or its
// part on one leaf). Waiters spin for a few microseconds, the time a short
// region takes, and then sleep; a failure is kept and rethrown to whoever
// waits.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <memory>
#include <vector>

namespace canopy::runtime {

/// How many times this process is the child of a fork() since Canopy was
/// first used in it (a pthread_atfork handler counts). A Runtime's threads do
/// not survive fork(): a child that waited for its parent's regions hung.
unsigned forks_so_far();
/// Throws canopy::Error, naming `what` the program asked for, when the
/// process forked since `forks_before` (forks_so_far() when the Runtime or
/// the work was made).
void refuse_after_fork(unsigned forks_before, const char* what);

class Completion {
 public:
  bool done() const { return state_.load(std::memory_order_acquire) != 0; }
  /// Marks the work done (with the exception it failed with, if any). Call once.
  void finish(std::exception_ptr error = nullptr);
  /// Marks the work done with the failure of `cause`, work it depended on:
  /// the two are reported as one (telling the program of either tells it of
  /// both). Call once, instead of finish().
  void finish_as(const std::shared_ptr<const Completion>& cause);
  /// Blocks until done; rethrows the work's exception when `rethrow` (and
  /// counts it as reported).
  void wait(bool rethrow = true) const;
  /// The exception the work failed with, once done; null otherwise.
  std::exception_ptr error() const { return done() ? error_ : nullptr; }
  /// The exception the work failed with, the first time it is asked for
  /// once done (the program is told once: by pause(), a host view, or
  /// reduce()); null otherwise.
  std::exception_ptr claim_error() const {
    if (!done() || !error_ || reported().exchange(true, std::memory_order_acq_rel)) return nullptr;
    return error_;
  }
  /// The exception the work failed with while nobody has been told of it:
  /// work that depends on this work fails with it instead of running on what
  /// it left.
  std::exception_ptr unreported_error() const {
    return done() && error_ && !reported().load(std::memory_order_acquire) ? error_ : nullptr;
  }

 private:
  std::atomic<bool>& reported() const { return cause_ ? cause_->reported_ : reported_; }

  std::atomic<std::uint32_t> state_{0};
  const unsigned forks_before_ = forks_so_far();  ///< wait() in a child after fork() would never end
  mutable std::atomic<std::uint32_t> sleepers_{0};
  mutable std::atomic<bool> reported_{false};
  std::exception_ptr error_;  ///< written before state_ turns 1
  /// The work whose failure this one's is (finish_as), at the root of a
  /// chain: its flag says whether the program was told; null otherwise.
  std::shared_ptr<const Completion> cause_;
};

using CompletionPtr = std::shared_ptr<Completion>;

/// Drops the entries of `list` that `finished` says are over, but only once
/// the list has doubled since the last time (`next_prune` keeps that size).
/// Lists that grow by one per launch (the regions in flight, an array's
/// readers) would otherwise be scanned whole at every launch: a program that
/// launches thousands of regions ahead of the workers pays quadratic time in
/// the launching thread, on a core the workers need. This way a launch costs
/// O(1) amortized, and a list holds at most twice its unfinished entries
/// (and 16 more).
template <class T, class Finished>
void prune_when_doubled(std::vector<T>& list, std::size_t& next_prune, const Finished& finished) {
  if (list.size() < next_prune) return;
  std::erase_if(list, finished);
  next_prune = std::max<std::size_t>(16, 2 * list.size());
}

}  // namespace canopy::runtime
