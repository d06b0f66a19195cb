// Reads the IR's text form (see printer.hpp) back into a Kernel.
//
// The parser takes any input without crashing or hanging: it reads the text
// once, nests at most kMaxParseDepth levels (expressions and blocks together)
// and reports the first problem as a canopy::Error. Blank lines and `#`
// comments to the end of a line may appear anywhere; line breaks are otherwise
// just spaces, since every statement's end is clear from its grammar.
#pragma once

#include <string_view>

#include "kernel.hpp"

namespace canopy::ir {

/// How deeply expressions and blocks may nest in parsed text (each parenthesis,
/// call, index list and block is one level). Deeper text is rejected with an
/// error rather than risking the stack.
inline constexpr int kMaxParseDepth = 500;

/// Parses one kernel. Throws canopy::Error "<source>:<line>:<column>: expected
/// <what>, found '<token>'" (line and column 1-based, of the offending token)
/// on malformed text, "<source>:<line>:<column>: unknown name 'x'" and the
/// like for names that do not resolve, and "<source>: <verifier message>" when
/// the kernel parses but does not verify.
Kernel parse(std::string_view text, std::string_view source = "<text>");

}  // namespace canopy::ir
