// Engine: the runtime's machinery behind Runtime's templates. It owns the
// devices found on this node, one worker thread per leaf, and the compiled
// code of every kernel; regions come in as type-erased requests.
#pragma once

#include <memory>
#include <string>
#include <variant>
#include <vector>

#include <canopy/backends/launch.hpp>
#include <canopy/ir/kernel.hpp>

#include "array.hpp"
#include "completion.hpp"
#include "shape.hpp"

namespace canopy::runtime {

/// One argument of a region, as the typed front end passes it.
using ArgRef = std::variant<std::shared_ptr<ArrayStorage>, backends::ScalarArg, backends::ReductionArg>;

struct RegionRequest {
  std::shared_ptr<const ir::Kernel> kernel;  ///< as traced (the engine optimizes it once)
  Shape range{1};
  std::string policy;    ///< empty: the default
  std::string location;  ///< empty: from the arguments' locations
  std::vector<ArgRef> args;
};

/// A region in flight: done when all its pieces are; reduction results once done.
struct RegionHandle {
  CompletionPtr completion;
  std::shared_ptr<std::vector<backends::ReductionValue>> results;
};

class Engine {
 public:
  Engine();
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  /// A new array; throws canopy::Error for an unknown location.
  std::shared_ptr<ArrayStorage> allocate(ir::ScalarType type, const Shape& shape, const MemoryTraits& traits);
  /// Checks and compiles the region, then queues it; returns at once.
  RegionHandle submit(RegionRequest request);
  /// Waits for every region submitted so far; rethrows the first failure.
  void pause();
  /// What this node has and what Canopy will use, as text.
  std::string describe() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace canopy::runtime
