// Recovery and checked launches: what the engine needs to survive a device
// that fails (a launch, a copy, an allocation, a compile) and to run kernels
// in checked mode (CANOPY_CHECK=bounds).
//
// A piece of a region normally runs on its leaf's device. When that fails,
// the engine runs the piece again through an Executor of another leaf below
// the region's location (or of a CPU leaf: the host), synchronously on the
// thread that saw the failure, so no queue order changes and no piece ever
// waits for work queued behind it. The coherence directory only learns what
// a piece wrote once it finished, and a failed copy leaves the directory as
// it was (DeviceCopies::acquire), so a retried piece reads and writes exactly
// what the first attempt would have.
//
// Not covered: a launch that fails after the kernel wrote part of a merge
// array's private copy (atomic sums into a device's copy) would have those
// contributions counted again by the retried piece. Injected faults fail
// before the kernel runs, so they never do; a real device that dies
// mid-kernel could.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include <canopy/backends/device.hpp>
#include <canopy/backends/launch.hpp>
#include <canopy/ir/error.hpp>

#include "../stats.hpp"
#include "leaf_worker.hpp"

namespace canopy::runtime {

/// Where a piece runs: a leaf's name, its coherence place (0: the host copy)
/// and its device. A LeafWorker converts to the Executor of its own leaf.
class Executor {
 public:
  Executor(std::string leaf, int place, std::shared_ptr<backends::Device> device)
      : leaf_(std::move(leaf)), place_(place), device_(std::move(device)) {}
  Executor(const LeafWorker& worker)  // NOLINT(google-explicit-constructor): a worker is its leaf's executor
      : leaf_(worker.name()), place_(worker.place()), device_(worker.device()) {}

  const std::string& name() const { return leaf_; }
  int place() const { return place_; }
  const std::shared_ptr<backends::Device>& device() const { return device_; }

 private:
  std::string leaf_;
  int place_ = 0;
  std::shared_ptr<backends::Device> device_;
};

/// A kernel indexed an array out of bounds (checked mode). Never retried:
/// every leaf would find the same fault.
class OutOfBounds : public Error {
 public:
  using Error::Error;
};

/// What failed: the kinds of recovery the engine counts (launch, copy,
/// compile), and Alloc, which it does not recover from.
enum class RecoveryKind { Launch, Copy, Alloc, Compile };

/// Recoveries counted per kind, each kind and leaf logged to stderr once.
class RecoveryLog {
 public:
  /// Counts one recovery; the first of its kind at `leaf` is written to stderr
  /// as "canopy: recovered: <what>".
  void recovered(RecoveryKind kind, const std::string& leaf, const std::string& what);
  /// Adds the counts to `stats` (plus `copies_retried`, transfers DeviceCopies
  /// retried on its own).
  void add_to(RecoveryStats& stats, std::int64_t copies_retried) const;

 private:
  std::atomic<std::int64_t> launches_{0}, copies_{0}, compiles_{0};
  std::mutex logged_mutex_;
  std::set<std::string> logged_;
};

/// What failed, read from the exception a piece threw: a failed transfer is
/// a Copy, a device allocation an Alloc, anything else a Launch.
RecoveryKind recovery_kind_of(std::exception_ptr error);
/// "launch", "copy", "alloc", "compile".
const char* name_of(RecoveryKind kind);
/// The exception's message ("unknown error" when it is not a std::exception).
std::string message_of(std::exception_ptr error);

/// True when CANOPY_CHECK asks for bounds checks ("bounds"); false when it is
/// unset, empty or "off". Throws canopy::Error for any other value.
bool bounds_checks_from_environment();

/// What a checked launch gives back: the reductions' values and, when an
/// index was out of bounds, the message saying where (empty otherwise).
struct CheckedOutcome {
  std::vector<backends::ReductionValue> partials;
  std::string fault;
};

/// Runs `program` (compiled from a kernel that ir::check_bounds rewrote) on
/// `device` with `args` plus a fresh, zeroed fault record on the device, and
/// reads the record back.
CheckedOutcome run_checked(backends::Device& device, const backends::Program& program,
                           std::vector<backends::KernelArg> args, const backends::Range& range);

}  // namespace canopy::runtime
