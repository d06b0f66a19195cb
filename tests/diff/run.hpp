// Running a program two ways: on the reference interpreter (what it must
// compute) and on Canopy in one placement (a tree of leaves and a policy),
// comparing every reduction, every host read and every array at the end.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <canopy/canopy.hpp>
#include <canopy/ir/interpreter.hpp>

#include "program.hpp"

namespace canopy::diff {

/// What the reference computes for a program: the results each step is
/// compared with.
struct Expectation {
  /// Per step: a Launch's reduction results (empty when it has none).
  std::vector<std::vector<ir::RefValue>> reductions;
  /// Per step: the array a HostRead reads, as it must be then.
  std::vector<std::optional<ir::RefArray>> reads;
  /// Every array at the end.
  std::vector<ir::RefArray> arrays;
  /// Points whose writes the reference could not pin down (see interpreter.hpp).
  std::int64_t unsure_points = 0;
};

/// Runs `program` on the reference interpreter. Throws canopy::Error when the
/// program is not valid (an index out of bounds: a generator bug).
Expectation expect(const Program& program);

/// Where a program runs: which leaves the tree keeps, and the policy of every
/// launch (or each launch's own).
struct Placement {
  std::string name;                  ///< "cpu0", "cpu0+opencl0/percentage", "checked:opencl0+opencl1/mixed"
  std::vector<std::string> leaves;   ///< discovered leaves, or cpuA/cpuB (a core each)
  std::optional<PolicyKind> policy;  ///< nullopt: each launch's own ("mixed")
  bool checked = false;              ///< CANOPY_CHECK=bounds
  /// Runtime::fuse: chains of element-wise regions run as one kernel (checked
  /// mode never fuses). "unfused:" placements run the same programs without.
  bool fuse = true;
};

/// The first difference between Canopy and the reference.
struct Mismatch {
  int step = -1;  ///< the step it showed at; -1 for the final comparison
  std::string what;
};

/// What was compared, for the summary.
struct Counts {
  std::int64_t values = 0;  ///< values compared
  std::int64_t unsure = 0;  ///< values the reference could not pin down (not compared)
  /// Runs refused as expected: a launch whose arrays do not fit a device's
  /// memory (CANOPY_DEVICE_MEMORY) on a placement with that device.
  std::int64_t refused = 0;
  /// Launched regions that ran inside fused kernels (runtime/internal/recorder.hpp).
  std::int64_t fused = 0;
  /// Adaptive regions that took the split their inputs were left in
  /// (runtime/internal/sequence_placement.hpp).
  std::int64_t followed = 0;
};

/// Runs programs on this node's Canopy: one runtime that merges what each
/// memory wrote wherever it can (CANOPY_SPLIT_WRITES=merge), and one in
/// checked mode with the default choice, made when a checked placement first
/// needs it.
class CanopyRunner {
 public:
  CanopyRunner();
  ~CanopyRunner();

  /// Every placement this node can run: each leaf alone; cpu0 + the first
  /// device, the first two devices, two one-core CPU leaves and cpu0 + two
  /// devices under each policy and mixed; some of them checked.
  const std::vector<Placement>& placements() const { return placements_; }
  /// The names of the executing leaves discovery found ("cpu0", "opencl0", ...).
  const std::vector<std::string>& leaves() const { return leaves_; }
  /// The placement called `name`; throws canopy::Error naming those there are.
  const Placement& placement(const std::string& name) const;

  /// Runs `program` on `placement` and compares it with `expected`.
  std::optional<Mismatch> run(const Program& program, const Expectation& expected, const Placement& placement,
                              Counts& counts);

  /// Starts fresh runtimes (the compiled kernels of finished programs are freed).
  void renew();

 private:
  Runtime& runtime(bool checked);

  std::unique_ptr<Runtime> runtime_;
  std::unique_ptr<Runtime> checked_;
  Hierarchy discovered_;
  std::vector<std::string> leaves_;
  std::vector<Placement> placements_;
};

}  // namespace canopy::diff
