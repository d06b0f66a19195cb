// Engine: the runtime's machinery behind Runtime's templates. It owns this
// node's location tree, one worker per executing leaf, the arrays' placement
// and the compiled code of every kernel; regions come in as type-erased
// requests and leave as pieces queued on the leaves below where they run.
#pragma once

#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <canopy/backends/device.hpp>
#include <canopy/backends/launch.hpp>
#include <canopy/ir/kernel.hpp>

#include "array.hpp"
#include "completion.hpp"
#include "discovery.hpp"
#include "hierarchy.hpp"
#include "shape.hpp"
#include "stats.hpp"

namespace canopy {
class AdaptivePlacement;  // adaptive.hpp
class MachineModel;       // machine_model.hpp
}  // namespace canopy

namespace canopy::runtime {

/// One argument of a region, as the typed front end passes it.
using ArgRef = std::variant<std::shared_ptr<ArrayStorage>, backends::ScalarArg, backends::ReductionArg>;

struct RegionRequest {
  std::shared_ptr<const ir::Kernel> kernel;  ///< as traced (the engine optimizes it once)
  Shape range{1};
  std::string policy;    ///< empty: "static"
  std::string location;  ///< empty: the Most Common Descendant of the arrays' locations
  std::vector<ArgRef> args;
};

/// What part of the node a runtime may use: all of it by default. Several
/// processes on one node (the ranks of an MPI job) each take a disjoint part.
struct RuntimeOptions {
  /// Only these processing units (hwloc OS indexes) make CPU leaves; empty:
  /// those the constructing thread may run on (its affinity mask, as
  /// taskset, numactl or a batch system's binding left it), all of them
  /// when it holds none of the cores.
  std::vector<unsigned> pus;
  /// Only these devices ("opencl:1", "cuda:0") may be used; empty: all.
  /// CANOPY_DEVICES still applies on top.
  std::optional<std::vector<std::string>> device_ids;
};

/// A region in flight: done when all its pieces are; reduction results once done.
struct RegionHandle {
  CompletionPtr completion;
  std::shared_ptr<std::vector<backends::ReductionValue>> results;
};

class Engine {
 public:
  /// Discovers this node (hwloc) and builds its default hierarchy, or loads
  /// $CANOPY_CONFIG when it is set, within what `options` allow. Reads
  /// CANOPY_CHECK once: with `bounds`, every kernel is compiled with bounds
  /// checks (ir/passes/bounds_check.hpp) and an index out of bounds fails its
  /// region. A leaf whose launch, copy or compile fails (CANOPY_FAULT injects
  /// such faults, backends/fault_injection.hpp) has its piece run elsewhere;
  /// stats().recoveries counts it.
  explicit Engine(const RuntimeOptions& options = {});
  /// Waits for the regions in flight, then stops the workers.
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  /// A new array; throws canopy::Error for an unknown location.
  std::shared_ptr<ArrayStorage> allocate(ir::ScalarType type, const Shape& shape, const MemoryTraits& traits);
  /// An array over user memory (not freed by Canopy).
  std::shared_ptr<ArrayStorage> wrap(ir::ScalarType type, const Shape& shape, const MemoryTraits& traits, void* data);
  /// Checks and compiles the region, picks its location and split, and queues
  /// its pieces; returns at once.
  RegionHandle submit(RegionRequest request);
  /// Optimizes `kernels` now (each once) and compiles their programs for the
  /// devices of the tree's leaves in the background (Runtime::compile), the
  /// CPU's together. The futures are ready when those compiles are done.
  std::vector<std::shared_future<void>> prepare(const std::vector<std::shared_ptr<const ir::Kernel>>& kernels);
  /// Whether consecutive element-wise regions may be fused (Runtime::fuse).
  void set_fusion(bool on);
  bool fusion() const;
  /// Waits for every region submitted so far; rethrows the first failure
  /// (in checked mode, an index out of bounds: kernel, array, index, extent).
  void pause();
  /// Waits for what is queued on the leaves at or below `location`.
  void pause(const std::string& location);

  /// A copy of the current tree.
  Hierarchy hierarchy() const;
  /// Changes the tree: `change` edits a copy, which then replaces the tree.
  /// Regions in flight on leaves whose place changes finish first; arrays at
  /// locations that disappear move to the nearest surviving ancestor.
  void reconfigure(const std::function<void(Hierarchy&)>& change);
  /// Throws canopy::Error unless a leaf `name` of `kind` with `traits` has
  /// something to run on: a device leaf's `device` is one this Runtime
  /// started, of its kind; a CPU leaf's `pus` are processing units of this node.
  void check_leaf(const std::string& name, LocationKind kind, const LocationTraits& traits) const;
  /// Replaces the tree by a configuration file in Gecko's format.
  void load_config(const std::string& path);
  /// Applies configuration text (loctype/location/hierarchy lines) to the current tree.
  void apply_config(const std::string& text);

  /// Places `array` at `location` (after the regions that use it).
  void move_array(const std::shared_ptr<ArrayStorage>& array, const std::string& location);
  /// Copies every element of `source` into `destination` (same type and shape), in order with regions.
  void copy_array(const std::shared_ptr<ArrayStorage>& destination, const std::shared_ptr<ArrayStorage>& source);

  Stats stats() const;
  /// Where the adaptive and any policies get the machine model from, the
  /// first time one of them is used (Runtime sets MachineModel::load_or_calibrate);
  /// without one they split evenly and learn from measurements only.
  void set_machine_model_source(std::function<MachineModel()> source);
  /// The adaptive and any policies' learned splits and history (splits()
  /// lists what was learned; tests set a time source).
  AdaptivePlacement& adaptive();
  /// What discovery found on this node (cores, NUMA nodes, devices, absent backends).
  const NodeInventory& inventory() const;
  /// The device a backend found, by id ("opencl:0"), or null.
  std::shared_ptr<backends::Device> device(const std::string& id) const;
  /// What this node has and what Canopy uses, as text.
  std::string describe() const;
  /// CANOPY_DUMP=program's record: the tree, every live array, the recent regions.
  std::string program_record() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace canopy::runtime
