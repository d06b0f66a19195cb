// Gaussian elimination (Rodinia's gaussian) on Canopy: solves A x = b by
// forward elimination on the runtime and back substitution on the host, as
// Rodinia does; shared by the gaussian program, canopy-bench and the tests.
//
// Rodinia's Fan1 computes the multipliers m(i, t) = a(i, t) / a(t, t) of step
// t and Fan2 subtracts m(i, t) times row t from every row i below it (from
// column t on, and from b). Here both are one region per step, one point per
// row below the pivot: the point computes its multiplier, stores it in m,
// then updates its row of a and its element of b. A point writes only its own
// row, and index(0) maps to the row affinely (row = n-1-index(0), the region
// covering exactly the rows below the pivot), so a step splits over devices
// with exact footprints. The kernel is traced for one size: n is a literal.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include <canopy/canopy.hpp>

#include "rodinia/common/rodinia.hpp"

namespace rodinia::gaussian {

/// Where the regions run and how they split.
struct Where {
  std::string location;  ///< empty: where the arrays are (their Most Common Descendant)
  std::string policy = "static";
};

/// A linear system: a is n x n, row-major; b has n elements.
struct System {
  std::int64_t n = 0;
  Vector<float> a, b;
};

/// Rodinia's `gaussian -s n` system: a(i, j) = 10 * exp(-0.01 * |i - j|)
/// (rounded to float as Rodinia computes it) and b all ones.
inline System internal_system(std::int64_t n) {
  System s;
  s.n = n;
  const float rate = -0.01f;
  std::vector<float> by_distance(static_cast<std::size_t>(n));
  for (std::int64_t d = 0; d < n; ++d)
    by_distance[static_cast<std::size_t>(d)] =
        static_cast<float>(10 * std::exp(static_cast<double>(rate * static_cast<float>(d))));
  s.a.resize(static_cast<std::size_t>(n * n));
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < n; ++j)
      s.a[static_cast<std::size_t>(i * n + j)] = by_distance[static_cast<std::size_t>(i > j ? i - j : j - i)];
  s.b.assign(static_cast<std::size_t>(n), 1.0f);
  return s;
}

/// A random system (fixed seed) that needs no pivoting: entries of a uniform
/// in [-1, 1) with n + 1 added on the diagonal, b uniform in [-1, 1).
inline System generated_system(std::int64_t n, std::uint64_t seed = 7) {
  Random random(seed);
  System s;
  s.n = n;
  s.a.resize(static_cast<std::size_t>(n * n));
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < n; ++j)
      s.a[static_cast<std::size_t>(i * n + j)] =
          static_cast<float>(random.uniform(-1.0, 1.0) + (i == j ? double(n) + 1.0 : 0.0));
  s.b.resize(static_cast<std::size_t>(n));
  for (auto& x : s.b) x = static_cast<float>(random.uniform(-1.0, 1.0));
  return s;
}

/// Reads a system in Rodinia's format: n, then the n*n elements of a row by
/// row, then the n elements of b, separated by white space (a solution that
/// may follow is ignored). Throws canopy::Error naming the file when it is
/// missing, does not start with a positive size or holds too few numbers.
inline System read_system(const std::string& path) {
  rodinia::Numbers in(path);
  if (!in.opened()) throw canopy::Error("gaussian: cannot open input file '" + path + "'");
  long long n = 0;
  if (!in.next(n) || n < 1)
    throw canopy::Error("gaussian: input file '" + path + "' does not start with a positive matrix size");
  System s;
  s.n = n;
  s.a.resize(static_cast<std::size_t>(n * n));
  s.b.resize(static_cast<std::size_t>(n));
  for (auto* part : {&s.a, &s.b})
    for (auto& x : *part)
      if (!in.next(x))
        throw canopy::Error("gaussian: input file '" + path + "' holds fewer than " + std::to_string(n * n + n) +
                            " numbers after the size " + std::to_string(n) + " (the matrix, then b)");
  return s;
}

/// Writes `s` in Rodinia's format (n, a blank line, the rows of a separated
/// by tabs, a blank line, b), readable by read_system and `gaussian -f`.
inline void write_system(const std::string& path, const System& s) {
  std::FILE* out = std::fopen(path.c_str(), "w");
  if (!out) throw canopy::Error("gaussian: cannot write '" + path + "'");
  std::fprintf(out, "%lld\n\n", static_cast<long long>(s.n));
  for (std::int64_t i = 0; i < s.n; ++i) {
    for (std::int64_t j = 0; j < s.n; ++j)
      std::fprintf(out, j + 1 < s.n ? "%.9g\t" : "%.9g\n", double(s.a[static_cast<std::size_t>(i * s.n + j)]));
  }
  std::fprintf(out, "\n");
  for (std::int64_t j = 0; j < s.n; ++j)
    std::fprintf(out, j + 1 < s.n ? "%.9g\t" : "%.9g\n", double(s.b[static_cast<std::size_t>(j)]));
  std::fclose(out);
}

/// Rodinia's BackSub: x from the eliminated (upper triangular) a and b,
/// bottom row first, in float.
inline std::vector<float> back_substitute(const float* a, const float* b, std::int64_t n) {
  std::vector<float> x(static_cast<std::size_t>(n));
  for (std::int64_t i = n - 1; i >= 0; --i) {
    float v = b[i];
    for (std::int64_t j = n - 1; j > i; --j) v -= a[i * n + j] * x[static_cast<std::size_t>(j)];
    x[static_cast<std::size_t>(i)] = v / a[i * n + i];
  }
  return x;
}

/// The Canopy implementation for one system size.
class Eliminator {
 public:
  using StepKernel = canopy::Kernel<void(canopy::InOut<float, 2>, canopy::InOut<float>, canopy::Out<float, 2>,
                                         canopy::Val<std::int64_t>)>;

  /// The kernel for n x n systems.
  explicit Eliminator(std::int64_t n) : n_(checked(n)), step_(step_kernel(n)) {}

  std::int64_t size() const { return n_; }
  /// Regions one elimination launches: n - 1.
  std::int64_t regions() const { return n_ - 1; }

  /// Queues the forward elimination of a (n x n) and b (n), writing the
  /// multipliers into m (n x n, below its diagonal); returns at once
  /// (Runtime::pause waits). Afterwards a is upper triangular (up to rounding
  /// below the diagonal, as in Rodinia) and back_substitute solves the system.
  void launch(canopy::Runtime& rt, const canopy::Array<float, 2>& a, const canopy::Array<float>& b,
              const canopy::Array<float, 2>& m, const Where& where) const {
    if (a.extent(0) != n_ || a.extent(1) != n_ || b.size() != n_ || m.extent(0) != n_ || m.extent(1) != n_)
      throw canopy::Error("gaussian: a and m must be " + std::to_string(n_) + "x" + std::to_string(n_) +
                          " and b hold " + std::to_string(n_) + " elements");
    for (std::int64_t t = 0; t + 1 < n_; ++t) {
      auto step = rt.region(step_);
      step.over(n_ - 1 - t).policy(where.policy);
      if (!where.location.empty()) step.at(where.location);
      step.launch(a, b, m, t);
    }
  }

 private:
  static std::int64_t checked(std::int64_t n) {
    if (n < 1) throw canopy::Error("gaussian: the matrix size must be positive, got " + std::to_string(n));
    return n;
  }

  // Step t, one point per row below the pivot (row = n-1-index(0)): Fan1's
  // multiplier, then Fan2's update of the row from column t on, and of b.
  static StepKernel step_kernel(std::int64_t n) {
    using namespace canopy;
    return StepKernel("gaussian_step",
                      [=](InOut<float, 2> a, InOut<float> b, Out<float, 2> m, Val<std::int64_t> t) {
                        Idx row = (n - 1) - index(0);
                        Var<float> multiplier("multiplier", a(row, t) / a(t, t));
                        m(row, t) = multiplier;
                        // Columns t .. n in two loops, the second starting on a
                        // multiple of 16 columns: rows start on 64-byte boundaries
                        // when n is a multiple of 16, so its vector stores do not
                        // straddle cache lines (the CPU compiler does not peel loops
                        // to align them).
                        Idx aligned = min((t + 15) & -16, n);
                        // Each multiply-subtract rounds once (fma), as a C compiler
                        // contracts `row[c] - multiplier * pivot[c]` with -march=native.
                        auto update = [&](Idx c) { a(row, c) = fma(-multiplier, a(t, c), a(row, c)); };
                        For(t, aligned, update);
                        For(aligned, n, update);
                        b[row] = fma(-multiplier, b[t], b[row]);
                      },
                      {"a", "b", "m", "t"});
  }

  std::int64_t n_;
  StepKernel step_;
};

}  // namespace rodinia::gaussian
