// The JIT battery's kernels (tests/jit/battery_*.cpp) as one list, for the
// backend tests that generate and compile code without running it (CUDA C
// through NVRTC and ptxas on machines without a GPU): every kernel of the
// battery, each type it is instantiated for included, after the IR's
// optimization pipeline, as the backends get them. When a battery kernel
// changes or one is added, change battery_kernels.cpp with it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <canopy/ir/kernel.hpp>

namespace battery_kernels {

/// One kernel of the battery, optimized.
struct NamedKernel {
  std::string name;  ///< the kernel's IR name ("arithmetic_i32")
  std::shared_ptr<const canopy::ir::Kernel> optimized;
};

/// Every kernel of the battery, in the battery's file order (ops, math,
/// control, reduce, shapes), built once.
const std::vector<NamedKernel>& all();

}  // namespace battery_kernels
