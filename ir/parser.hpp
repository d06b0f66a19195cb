// Reads the IR's text form (see printer.hpp) back into a Kernel.
#pragma once

#include <string_view>

#include "kernel.hpp"

namespace canopy::ir {

/// Parses one kernel. Throws canopy::Error "<source>:<line>:<column>: expected
/// <what>, found <token>" on malformed text; the result is verified.
Kernel parse(std::string_view text, std::string_view source = "<text>");

}  // namespace canopy::ir
