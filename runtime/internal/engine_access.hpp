// The engine behind a Runtime, for Canopy's own code that works below the
// public API: the calibration of the machine model, the MPI job, the tests
// and canopy-bench's baselines. Not installed: a program uses Runtime.
#pragma once

#include "../engine.hpp"
#include "../runtime.hpp"

namespace canopy::runtime {

struct EngineAccess {
  static Engine& of(Runtime& rt) { return *rt.engine_; }
};

/// The engine `rt` runs on.
inline Engine& engine_of(Runtime& rt) { return EngineAccess::of(rt); }

}  // namespace canopy::runtime
