// LU decomposition (Rodinia's lud) on Canopy: A = L * U in place, without
// pivoting, L with a unit diagonal; shared by the lud program, canopy-bench
// and the tests.
//
// The matrix is factored one block column at a time (blocks of `block`
// rows and columns, the last one smaller when the block does not divide n).
// Each step k0 is two regions:
//  1. top: one point factors the diagonal block and solves the U rows to its
//     right (rows k0 .. k0+b, every column from k0 on), then copies those U
//     rows into `panel`, a scratch array whose rows are n + 16 elements
//     apart (rows a multiple of 4 KiB apart, as n floats are for n = 1024,
//     2048, 4096, all fall in the same sets of the L1 cache, and the update
//     reads every panel row at each column: padded, lud runs 1.5x faster);
//  2. rows: one point per row r below the block computes the row's L part
//     (b values, solved against the diagonal block) and then updates the
//     rest of the row, a(r, c) -= sum over p of l_p * panel(p, c).
// A point of the second region writes only its own row, index(0) maps to the
// row affinely (r = n-1-index(0)), so the region splits over devices with
// exact footprints. The kernels are traced for one shape: n and the block
// are literals in them, which lets the CPU compiler see that the panel's
// rows are a constant distance apart and vectorize the update over columns.
// Each multiply-subtract is an fma(-l, u, v), rounded once: what a C
// compiler makes of `v - l * u` when it contracts (GCC does, with
// -march=native on a CPU with FMA), and half the instructions of a multiply
// and a subtraction each rounded.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include <canopy/canopy.hpp>

#include "rodinia/common/rodinia.hpp"

namespace rodinia::lud {

/// Where the regions run and how they split.
struct Where {
  std::string location;  ///< empty: where the arrays are (their Most Common Descendant)
  std::string policy = "static";
};

/// Rodinia's `lud -s n` matrix: a(i, j) = 10 * exp(-0.001 * |i - j|), rounded
/// to float as Rodinia computes it; symmetric positive definite, so LU without
/// pivoting is stable on it.
inline Vector<float> internal_matrix(std::int64_t n) {
  const float rate = -0.001f;
  std::vector<float> by_distance(static_cast<std::size_t>(n));
  for (std::int64_t d = 0; d < n; ++d)
    by_distance[static_cast<std::size_t>(d)] =
        static_cast<float>(10 * std::exp(static_cast<double>(rate * static_cast<float>(d))));
  Vector<float> m(static_cast<std::size_t>(n * n));
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < n; ++j)
      m[static_cast<std::size_t>(i * n + j)] = by_distance[static_cast<std::size_t>(i > j ? i - j : j - i)];
  return m;
}

/// A random matrix (fixed seed) that needs no pivoting: entries uniform in
/// [-1, 1) with n + 1 added on the diagonal (strictly diagonally dominant).
inline Vector<float> generated_matrix(std::int64_t n, std::uint64_t seed = 7) {
  Random random(seed);
  Vector<float> m(static_cast<std::size_t>(n * n));
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < n; ++j)
      m[static_cast<std::size_t>(i * n + j)] =
          static_cast<float>(random.uniform(-1.0, 1.0) + (i == j ? double(n) + 1.0 : 0.0));
  return m;
}

/// Reads a matrix in Rodinia's format: the size n, then n*n numbers separated
/// by white space, row by row. Throws canopy::Error naming the file on a
/// missing file, a bad size or too few numbers.
inline Vector<float> read_matrix(const std::string& path, std::int64_t& n) {
  rodinia::Numbers in(path);
  if (!in.opened()) throw canopy::Error("lud: cannot open input file '" + path + "'");
  long long size = 0;
  if (!in.next(size) || size < 1)
    throw canopy::Error("lud: input file '" + path + "' does not start with a positive matrix size");
  n = size;
  Vector<float> m(static_cast<std::size_t>(n * n));
  for (auto& x : m)
    if (!in.next(x))
      throw canopy::Error("lud: input file '" + path + "' holds fewer than " + std::to_string(n * n) +
                          " numbers after the size " + std::to_string(n));
  return m;
}

/// Writes `m` (n x n) in Rodinia's format, readable by read_matrix and `lud -i`.
inline void write_matrix(const std::string& path, std::span<const float> m, std::int64_t n) {
  std::FILE* out = std::fopen(path.c_str(), "w");
  if (!out) throw canopy::Error("lud: cannot write '" + path + "'");
  std::fprintf(out, "%lld\n", static_cast<long long>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t j = 0; j < n; ++j) std::fprintf(out, "%.9g ", double(m[static_cast<std::size_t>(i * n + j)]));
    std::fprintf(out, "\n");
  }
  std::fclose(out);
}

/// Rodinia's check: rebuilds L * U from the factored matrix `lu` and lists
/// every element that differs from `original` by more than 1e-4, as Rodinia
/// prints them ("dismatch at (i, j): (o)x (n)y"), at most `limit` lines.
/// Returns the number of such elements. One change from Rodinia: the 1e-4 is
/// relative to elements larger than 1, since a float near 2049 (the diagonal
/// of a generated 2048 x 2048 matrix) is spaced 2.4e-4 apart, and Rodinia's
/// absolute bound would call a result that is right to the last bit wrong.
inline std::int64_t verify(std::span<const float> original, const float* lu, std::int64_t n, std::string& report,
                           std::int64_t limit = 20) {
  std::int64_t mismatches = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      float sum = 0;
      const std::int64_t last = i < j ? i : j;
      for (std::int64_t k = 0; k <= last; ++k) sum += (k == i ? 1.0f : lu[i * n + k]) * lu[k * n + j];
      const float o = original[static_cast<std::size_t>(i * n + j)];
      if (!(std::fabs(o - sum) <= 0.0001f * std::max(1.0f, std::fabs(o)))) {  // a NaN differs
        if (mismatches++ < limit) {
          char line[128];
          std::snprintf(line, sizeof line, "dismatch at (%lld, %lld): (o)%f (n)%f\n", static_cast<long long>(i),
                        static_cast<long long>(j), double(o), double(sum));
          report += line;
        }
      }
    }
  }
  return mismatches;
}

/// The Canopy implementation for one matrix size.
class Decomposer {
 public:
  using TopKernel = canopy::Kernel<void(canopy::InOut<float, 2>, canopy::Out<float>, canopy::Val<std::int64_t>)>;
  using RowsKernel = canopy::Kernel<void(canopy::InOut<float, 2>, canopy::In<float>, canopy::Val<std::int64_t>)>;

  /// Kernels for n x n matrices in blocks of `block` (16 by default).
  explicit Decomposer(std::int64_t n, std::int64_t block = 16) : n_(n), block_(block) {
    if (n < 1 || block < 1)
      throw canopy::Error("lud: the matrix size (" + std::to_string(n) + ") and the block (" + std::to_string(block) +
                          ") must be positive");
  }

  std::int64_t size() const { return n_; }
  std::int64_t block() const { return block_; }
  /// Regions one decomposition launches.
  std::int64_t regions() const {
    std::int64_t count = 0;
    for (std::int64_t k0 = 0; k0 < n_; k0 += block_) count += k0 + block_ < n_ ? 2 : 1;
    return count;
  }

  /// The scratch array launch() needs: block x (n + 16) floats.
  canopy::Array<float> make_panel(canopy::Runtime& rt) const {
    return rt.array<float>(block_ * panel_stride(n_), canopy::named("lud_panel"));
  }

  /// Queues the regions that factor `matrix` (n x n) in place; returns at
  /// once (Runtime::pause waits).
  void launch(canopy::Runtime& rt, const canopy::Array<float, 2>& matrix, const canopy::Array<float>& panel,
              const Where& where) const {
    if (matrix.extent(0) != n_ || matrix.extent(1) != n_ || panel.size() < block_ * panel_stride(n_))
      throw canopy::Error("lud: the matrix must be " + std::to_string(n_) + "x" + std::to_string(n_) +
                          " and the panel hold " + std::to_string(block_ * panel_stride(n_)) + " floats");
    for (std::int64_t k0 = 0; k0 < n_; k0 += block_) {
      const Kernels& k = kernels_for(std::min(block_, n_ - k0));
      auto top = rt.region(k.top);
      top.policy(where.policy);
      if (!where.location.empty()) top.at(where.location);
      top.launch(matrix, panel, k0);
      const std::int64_t below = n_ - k0 - k.block;
      if (below <= 0) continue;
      auto rows = rt.region(k.rows);
      rows.over(below).policy(where.policy);
      if (!where.location.empty()) rows.at(where.location);
      rows.launch(matrix, panel, k0);
    }
  }

 private:
  // Elements from one panel row to the next (see the top of the file).
  static std::int64_t panel_stride(std::int64_t n) { return n + 16; }

  struct Kernels {
    std::int64_t block;
    TopKernel top;
    RowsKernel rows;
  };

  // The kernels for diagonal blocks of `b` rows (block_, and the last, smaller one).
  const Kernels& kernels_for(std::int64_t b) const {
    auto& slot = kernels_[b];
    if (!slot) slot = std::make_unique<Kernels>(Kernels{b, top_kernel(n_, b), rows_kernel(n_, b)});
    return *slot;
  }

  // One point: right-looking elimination of rows k0 .. k0+b over columns k0 ..
  // n, which factors the diagonal block (L below its diagonal, U on and
  // above) and turns the rows to its right into U; then those U rows are
  // copied into the panel, panel[p * panel_stride(n) + c] = a(k0 + p, c).
  static TopKernel top_kernel(std::int64_t n, std::int64_t b) {
    using namespace canopy;
    return TopKernel("lud_top_" + std::to_string(b),
                     [=, stride = panel_stride(n)](InOut<float, 2> a, Out<float> panel, Val<std::int64_t> k0) {
                       For(0, b, [&](Idx p) {
                         Idx pivot_row = k0 + p;
                         For(p + 1, b, [&](Idx i) {
                           Idx row = k0 + i;
                           Var<float> l = a(row, pivot_row) / a(pivot_row, pivot_row);
                           a(row, pivot_row) = l;
                           For(pivot_row + 1, n, [&](Idx c) { a(row, c) = fma(-l, a(pivot_row, c), a(row, c)); });
                         });
                       });
                       For(0, b, [&](Idx p) { For(k0 + b, n, [&](Idx c) { panel[p * stride + c] = a(k0 + p, c); }); });
                     },
                     {"a", "panel", "k0"});
  }

  // One point per row r below the diagonal block, r = n-1-index(0): the row's
  // L values l_p = (a(r, k0+p) - sum_{q<p} l_q * u(q, p)) / u(p, p), then the
  // update of the row right of the block with the panel's U rows. The loops
  // over p and q are unrolled while tracing (b is a literal), so the l_p stay
  // in registers and the column loop is the innermost one.
  static RowsKernel rows_kernel(std::int64_t n, std::int64_t b) {
    using namespace canopy;
    return RowsKernel("lud_rows_" + std::to_string(b),
                      [=, stride = panel_stride(n)](InOut<float, 2> a, In<float> panel, Val<std::int64_t> k0) {
                        Idx row = (n - 1) - index(0);
                        // Reserved up front: copying a Var (as a growing vector
                        // would) declares a new local in the kernel.
                        std::vector<Var<float>> l;
                        l.reserve(static_cast<std::size_t>(b));
                        for (std::int64_t p = 0; p < b; ++p) {
                          Value<float> v = a(row, k0 + p);
                          for (std::int64_t q = 0; q < p; ++q)
                            v = fma(-l[static_cast<std::size_t>(q)], a(k0 + q, k0 + p), v);
                          l.emplace_back("l" + std::to_string(p), v / a(k0 + p, k0 + p));
                          a(row, k0 + p) = l.back();
                        }
                        For(k0 + b, n, [&](Idx c) {
                          Value<float> v = a(row, c);
                          for (std::int64_t p = 0; p < b; ++p)
                            v = fma(-l[static_cast<std::size_t>(p)], panel[p * stride + c], v);
                          a(row, c) = v;
                        });
                      },
                      {"a", "panel", "k0"});
  }

  std::int64_t n_, block_;
  mutable std::map<std::int64_t, std::unique_ptr<Kernels>> kernels_;
};

}  // namespace rodinia::lud
