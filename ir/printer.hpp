// The IR's text form, written. `parse` (parser.hpp) reads it back: for every
// kernel k that verifies, print(parse(print(k))) == print(k).
#pragma once

#include <ostream>
#include <string>

#include "kernel.hpp"

namespace canopy::ir {

/// The whole kernel: header with parameters and dims, then the body.
std::string print(const Kernel& kernel);
/// One expression, naming parameters as `kernel` does.
std::string print(const Expr& expr, const Kernel& kernel);
/// One statement (and its children), each line indented by `indent` levels.
std::string print(const Stmt& stmt, const Kernel& kernel, int indent = 0);

std::ostream& operator<<(std::ostream& out, const Kernel& kernel);

}  // namespace canopy::ir
