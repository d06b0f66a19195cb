// Checks that a kernel is well formed before anything compiles it.
#pragma once

#include "kernel.hpp"

namespace canopy::ir {

/// Throws canopy::Error naming the kernel, the offending node (in text form)
/// and the rule it breaks: types that do not match, unknown or undeclared
/// names, writes to `in` arrays, wrong index counts, and so on.
void verify(const Kernel& kernel);

}  // namespace canopy::ir
