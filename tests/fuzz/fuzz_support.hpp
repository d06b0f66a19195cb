// What every fuzz target shares: the libFuzzer entry point each one defines,
// and a check that stops the process when a property of the code under test
// breaks. A failed check is a finding: libFuzzer (or the corpus replay that
// CTest runs) sees the abort and keeps the input that caused it.
//
// Each target is one source built twice: with clang's -fsanitize=fuzzer
// (tools/canopy fuzz NAME), where libFuzzer provides main(); and as a plain
// program with replay_main.cpp, which feeds it every file of the corpus
// directories named on its command line (the CTest entries fuzz-NAME).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

/// The entry point libFuzzer calls with each input (defined once per target).
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace canopy::fuzz {

/// Prints "fuzz check failed: <what>" and `detail` (the values that broke the
/// property) to stderr, then aborts.
[[noreturn]] void fail(std::string_view what, std::string_view detail);

/// Stops the process through fail() unless `holds`.
inline void check(bool holds, std::string_view what, std::string_view detail = {}) {
  if (!holds) fail(what, detail);
}

/// The input as text (the parsers take any bytes, NUL included).
inline std::string_view text_of(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

}  // namespace canopy::fuzz
