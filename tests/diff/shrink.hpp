// Shrinking a program that shows a mismatch to a small reproducer: steps
// after the mismatch and steps it does not need go, then unused kernels and
// arrays, then statements of the kernels one at a time, then ranges are
// halved; each change is kept only if the program still shows a mismatch.
#pragma once

#include <functional>

#include "program.hpp"

namespace canopy::diff {

/// The smallest program found from `program` for which `fails` stays true,
/// trying at most `attempts` candidates. `fails` must return false for a
/// candidate that is not a valid program (the reference throws for it).
Program shrink(const Program& program, int mismatch_step, const std::function<bool(const Program&)>& fails,
               int attempts);

}  // namespace canopy::diff
