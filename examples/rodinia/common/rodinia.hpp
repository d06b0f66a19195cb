// What the Rodinia examples share: a seeded random generator for generated
// inputs (the same numbers on every machine), a timer, and command-line
// helpers that fail with a usage message.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace rodinia {

/// A small, fast generator (splitmix64) whose sequence is fixed by its seed.
class Random {
 public:
  explicit Random(std::uint64_t seed = 7) : state_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  /// Uniform in [0, 1).
  double uniform() { return double(next() >> 11) * 0x1.0p-53; }
  /// Uniform in [lo, hi).
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  /// Uniform integer in [0, n).
  std::int64_t below(std::int64_t n) { return n > 0 ? static_cast<std::int64_t>(next() % std::uint64_t(n)) : 0; }

 private:
  std::uint64_t state_;
};

/// Seconds since `start`.
inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

/// Prints "PROGRAM: PROBLEM" and the usage to stderr, then exits with status 2.
[[noreturn]] inline void usage_error(const char* program, const std::string& problem, const char* usage) {
  std::fprintf(stderr, "%s: %s\nusage: %s\n", program, problem.c_str(), usage);
  std::exit(2);
}

/// The whole number in `text`; exits through usage_error when it is not one
/// or is below `least`.
inline long long parse_integer(const char* program, const char* what, const char* text, const char* usage,
                               long long least = 1) {
  char* end = nullptr;
  const long long value = std::strtoll(text, &end, 10);
  if (!*text || *end || value < least)
    usage_error(program, std::string(what) + " must be a whole number of at least " + std::to_string(least) +
                             ", got '" + text + "'",
                usage);
  return value;
}

/// The number in `text`; exits through usage_error when it is not one.
inline double parse_number(const char* program, const char* what, const char* text, const char* usage) {
  char* end = nullptr;
  const double value = std::strtod(text, &end);
  if (!*text || *end) usage_error(program, std::string(what) + " must be a number, got '" + text + "'", usage);
  return value;
}

}  // namespace rodinia
