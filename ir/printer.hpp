// The IR's text form, written. `parse` (parser.hpp) reads it back: for every
// kernel k that verifies, print(parse(print(k))) == print(k). The text is also
// what tests compare and what the JIT's kernel cache is keyed on, so it is
// canonical: one spelling per tree, fully parenthesised, no optional spaces.
//
//   kernel triad(out f64[1] a, in f64[1] b, in f64[1] c, val f64 s) dims 1 {
//     a[index(0)] = (b[index(0)] + (s * c[index(0)]))
//   }
//
// Choices the format makes: a Block nested in a Block has no text of its own
// (its statements print in place); an If or For body that is a single
// statement prints like a Block holding it; a For's step is left out when it
// is the literal 1 of the loop's type; floats print the shortest text that
// reads back to the same value (std::to_chars), NaN as `nan` or `-nan`.
//
// The printer never fails: a malformed tree (null children, parameter numbers
// out of range) prints with `<null>` or `<param N>` in place of the bad part,
// so that the verifier can show it in its messages.
#pragma once

#include <fmt/ostream.h>

#include <ostream>
#include <string>
#include <string_view>

#include "kernel.hpp"

namespace canopy::ir {

/// The whole kernel: header with parameters and dims, then the body; ends with "}\n".
std::string print(const Kernel& kernel);
/// One expression, naming parameters as `kernel` does.
std::string print(const Expr& expr, const Kernel& kernel);
/// One statement (and its children), each line indented by `indent` levels of
/// two spaces and ended by "\n". A Block prints its statements one after the
/// other at the same indent (a nested Block has no text of its own).
std::string print(const Stmt& stmt, const Kernel& kernel, int indent = 0);

/// True for the words of the text form: kernel dims var if else for in step
/// atomic reduce true false val out inout sum min max index extent select neg
/// not, the type names and the math function names. A kernel, parameter or
/// local may still be called so: the text form writes such a name with a `$`
/// in front (`$sum`), and the parser reads `$word` as a name whatever the word.
bool is_keyword(std::string_view word);
/// True when `name` can name a kernel, parameter or local: [A-Za-z_][A-Za-z0-9_.]*.
bool is_valid_name(std::string_view name);
/// Appends `name` as the text form writes it: `$name` for a keyword (and for
/// inf and nan, which could read as literals), else the name itself.
void append_name(std::string& out, std::string_view name);

std::ostream& operator<<(std::ostream& out, const Kernel& kernel);

}  // namespace canopy::ir

/// fmt::format("{}", kernel) gives print(kernel).
template <>
struct fmt::formatter<canopy::ir::Kernel> : fmt::ostream_formatter {};
