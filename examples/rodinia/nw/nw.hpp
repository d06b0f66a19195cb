// Needleman-Wunsch (Rodinia's nw) on Canopy: the global alignment scores of
// two sequences, shared by the nw program, canopy-bench and the tests.
//
// score(i, j) = max(score(i-1, j-1) + reference(i, j),
//                   score(i, j-1) - penalty,
//                   score(i-1, j) - penalty)
// over a (dim+1) x (dim+1) matrix whose row 0 and column 0 hold the gap
// penalties. Each cell needs its left, upper and upper-left neighbours, so
// the matrix is cut into square blocks and the blocks of one anti-diagonal
// (bi + bj == d) are independent: one region per block anti-diagonal, one
// point per block, and inside a point For loops walk the block row by row.
//
// The kernels are traced for one problem shape (the block size and the
// number of blocks are literals in them), and the block row written by a
// point is an affine function of index(0), so a region splits over devices
// with exact footprints: block row bi = index(0) while the anti-diagonals
// grow, bi = nb-1-index(0) once they shrink, so that every point of every
// region has a block to fill.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include <canopy/canopy.hpp>

namespace rodinia::nw {

/// The BLOSUM62 substitution scores, in the usual residue order
/// (A R N D C Q E G H I L K M F P S T W Y V B Z X *), as Rodinia indexes them.
inline constexpr int kBlosum62[24][24] = {
    {4, -1, -2, -2, 0, -1, -1, 0, -2, -1, -1, -1, -1, -2, -1, 1, 0, -3, -2, 0, -2, -1, 0, -4},
    {-1, 5, 0, -2, -3, 1, 0, -2, 0, -3, -2, 2, -1, -3, -2, -1, -1, -3, -2, -3, -1, 0, -1, -4},
    {-2, 0, 6, 1, -3, 0, 0, 0, 1, -3, -3, 0, -2, -3, -2, 1, 0, -4, -2, -3, 3, 0, -1, -4},
    {-2, -2, 1, 6, -3, 0, 2, -1, -1, -3, -4, -1, -3, -3, -1, 0, -1, -4, -3, -3, 4, 1, -1, -4},
    {0, -3, -3, -3, 9, -3, -4, -3, -3, -1, -1, -3, -1, -2, -3, -1, -1, -2, -2, -1, -3, -3, -2, -4},
    {-1, 1, 0, 0, -3, 5, 2, -2, 0, -3, -2, 1, 0, -3, -1, 0, -1, -2, -1, -2, 0, 3, -1, -4},
    {-1, 0, 0, 2, -4, 2, 5, -2, 0, -3, -3, 1, -2, -3, -1, 0, -1, -3, -2, -2, 1, 4, -1, -4},
    {0, -2, 0, -1, -3, -2, -2, 6, -2, -4, -4, -2, -3, -3, -2, 0, -2, -2, -3, -3, -1, -2, -1, -4},
    {-2, 0, 1, -1, -3, 0, 0, -2, 8, -3, -3, -1, -2, -1, -2, -1, -2, -2, 2, -3, 0, 0, -1, -4},
    {-1, -3, -3, -3, -1, -3, -3, -4, -3, 4, 2, -3, 1, 0, -3, -2, -1, -3, -1, 3, -3, -3, -1, -4},
    {-1, -2, -3, -4, -1, -2, -3, -4, -3, 2, 4, -2, 2, 0, -3, -2, -1, -2, -1, 1, -4, -3, -1, -4},
    {-1, 2, 0, -1, -3, 1, 1, -2, -1, -3, -2, 5, -1, -3, -1, 0, -1, -3, -2, -2, 0, 1, -1, -4},
    {-1, -1, -2, -3, -1, 0, -2, -3, -2, 1, 2, -1, 5, 0, -2, -1, -1, -1, -1, 1, -3, -1, -1, -4},
    {-2, -3, -3, -3, -2, -3, -3, -3, -1, 0, 0, -3, 0, 6, -4, -2, -2, 1, 3, -1, -3, -3, -1, -4},
    {-1, -2, -2, -1, -3, -1, -1, -2, -2, -3, -3, -1, -2, -4, 7, -1, -1, -4, -3, -2, -2, -1, -2, -4},
    {1, -1, 1, 0, -1, 0, 0, 0, -1, -2, -2, 0, -1, -2, -1, 4, 1, -3, -2, -2, 0, 0, 0, -4},
    {0, -1, 0, -1, -1, -1, -1, -2, -2, -1, -1, -1, -1, -2, -1, 1, 5, -2, -2, 0, -1, -1, 0, -4},
    {-3, -3, -4, -4, -2, -2, -3, -2, -2, -3, -2, -3, -1, 1, -4, -3, -2, 11, 2, -3, -4, -3, -2, -4},
    {-2, -2, -2, -3, -2, -1, -2, -3, 2, -1, -1, -2, -1, 3, -3, -2, -2, 2, 7, -1, -3, -2, -1, -4},
    {0, -3, -3, -3, -1, -2, -2, -3, -3, 3, 1, -2, 1, -1, -2, -2, 0, -3, -1, 4, -3, -2, -1, -4},
    {-2, -1, 3, 4, -3, 0, 1, -1, 0, -3, -4, 0, -3, -3, -2, 0, -1, -4, -3, -3, 4, 1, -1, -4},
    {-1, 0, 0, 1, -3, 3, 4, -2, 0, -3, -3, 1, -1, -3, -1, 0, -1, -3, -2, -2, 1, 4, -1, -4},
    {0, -1, -1, -1, -2, -1, -1, -1, -1, -1, -1, -1, -1, -1, -2, 0, 0, -2, -1, -1, -1, -1, -1, -4},
    {-4, -4, -4, -4, -4, -4, -4, -4, -4, -4, -4, -4, -4, -4, -4, -4, -4, -4, -4, -4, -4, -4, -4, 1},
};

/// Where the regions run and how they split.
struct Where {
  std::string location;  ///< empty: where the arrays are (their Most Common Descendant)
  std::string policy = "static";
};

/// One alignment problem as Rodinia sets it up: two (dim+1) x (dim+1)
/// row-major matrices. score holds -k*penalty in row 0 and column 0 and zero
/// elsewhere; reference(i, j) is the BLOSUM62 score of residue i of the first
/// sequence against residue j of the second (row 0 and column 0 are zero).
struct Problem {
  std::int64_t dim = 0;
  std::int32_t penalty = 10;
  std::vector<std::int32_t> reference;
  std::vector<std::int32_t> score;

  /// Rows (and columns) of the matrices: dim + 1.
  std::int64_t side() const { return dim + 1; }
};

/// Rodinia's two sequences for `dim`: the C library's generator seeded with
/// 7 draws the first (rand() % 10 + 1 per residue), then the second; each
/// has dim + 1 residues, residue 0 being 0 (the row and column of gaps).
struct Sequences {
  std::vector<std::int32_t> first, second;
};

inline Sequences sequences(std::int64_t dim) {
  const std::int64_t side = dim + 1;
  Sequences s{std::vector<std::int32_t>(static_cast<std::size_t>(side), 0),
              std::vector<std::int32_t>(static_cast<std::size_t>(side), 0)};
  std::srand(7);
  for (auto* sequence : {&s.first, &s.second})
    for (std::int64_t i = 1; i < side; ++i) (*sequence)[static_cast<std::size_t>(i)] = std::rand() % 10 + 1;
  return s;
}

/// The matrices Rodinia's needle builds for `dim` and `penalty`, written into
/// `reference` and `score` (each (dim + 1)^2 elements, every one written, so
/// they may start uninitialized) from sequences(dim), so that a run here and
/// a run of Rodinia write the same result.txt.
inline void generate_into(std::int32_t* reference, std::int32_t* score, std::int64_t dim, std::int32_t penalty) {
  const std::int64_t side = dim + 1;
  const Sequences s = sequences(dim);
  for (std::int64_t i = 0; i < side; ++i) {
    const int* row = kBlosum62[s.first[static_cast<std::size_t>(i)]];
    std::int32_t* out = reference + i * side;
    std::int32_t* scores = score + i * side;
    for (std::int64_t j = 0; j < side; ++j) {
      out[j] = i > 0 && j > 0 ? row[s.second[static_cast<std::size_t>(j)]] : 0;
      scores[j] = 0;
    }
    scores[0] = static_cast<std::int32_t>(-i * penalty);
  }
  for (std::int64_t k = 1; k < side; ++k) score[k] = static_cast<std::int32_t>(-k * penalty);
}

/// The same problem in vectors of its own.
inline Problem generate(std::int64_t dim, std::int32_t penalty) {
  Problem p;
  p.dim = dim;
  p.penalty = penalty;
  p.reference.resize(static_cast<std::size_t>(p.side() * p.side()));
  p.score.resize(static_cast<std::size_t>(p.side() * p.side()));
  generate_into(p.reference.data(), p.score.data(), dim, penalty);
  return p;
}

/// The block size the program and the bench use for `dim`: the largest of
/// 64, 32, 16 that divides it (Rodinia requires a multiple of 16); 0 when none.
inline std::int64_t default_block(std::int64_t dim) {
  for (std::int64_t b : {64, 32, 16})
    if (dim > 0 && dim % b == 0) return b;
  return 0;
}

/// The text Rodinia's needle writes to result.txt: a header line, then the
/// scores met while tracing back from cell (dim-1, dim-1), each followed by a
/// space. At each step the move is chosen as Rodinia chooses it: the best of
/// the three candidates decides, ties resolved in the order diagonal, left,
/// up by comparing the neighbour values themselves (outside the matrix a
/// neighbour is -999). Rodinia reads past row 0 when a path leaves it
/// diagonally; the walk stops there instead.
inline std::string traceback(const std::int32_t* score, const std::int32_t* reference, std::int64_t dim,
                             std::int32_t penalty) {
  constexpr std::int32_t kOutside = -999;
  const std::int64_t side = dim + 1;
  auto at = [&](const std::int32_t* m, std::int64_t i, std::int64_t j) { return m[i * side + j]; };
  std::string text = "print traceback value GPU:\n";
  std::int64_t i = dim - 1, j = dim - 1;
  if (i < 0) return text;
  text += std::to_string(at(score, i, j)) + " ";
  while (i >= 0 && j >= 0 && !(i == 0 && j == 0)) {
    std::int32_t diagonal = kOutside, left = kOutside, up = kOutside;
    if (i > 0 && j > 0) {
      diagonal = at(score, i - 1, j - 1);
      left = at(score, i, j - 1);
      up = at(score, i - 1, j);
    } else if (i == 0) {
      left = at(score, i, j - 1);
    } else {
      up = at(score, i - 1, j);
    }
    const std::int32_t from_diagonal = diagonal + at(reference, i, j), from_left = left - penalty,
                       from_up = up - penalty;
    std::int32_t chosen = std::max({from_diagonal, from_left, from_up});
    if (chosen == from_diagonal) chosen = diagonal;
    if (chosen == from_left) chosen = left;
    if (chosen == from_up) chosen = up;
    text += std::to_string(chosen) + " ";
    if (chosen == diagonal) {
      --i;
      --j;
    } else if (chosen == left) {
      --j;
    } else {
      --i;
    }
  }
  return text;
}

/// Builds the same matrices as generate_into with one region: one point per
/// row, writing its row of both matrices, so the leaves fill (and first
/// touch) the rows they will align instead of one host thread filling all of
/// them. The sequences come from sequences(dim) on the host.
class Generator {
 public:
  using FillKernel =
      canopy::Kernel<void(canopy::Out<std::int32_t, 2>, canopy::Out<std::int32_t, 2>, canopy::In<std::int32_t>,
                          canopy::In<std::int32_t>, canopy::In<std::int32_t, 2>, canopy::Val<std::int32_t>)>;

  /// The kernel for sequences of length `dim` (dim >= 1).
  explicit Generator(std::int64_t dim) : dim_(dim), fill_(fill_kernel(dim + 1)) {
    if (dim < 1) throw canopy::Error("nw: the sequence length must be positive, got " + std::to_string(dim));
  }

  /// Queues the region that fills `reference` and `score` ((dim+1) x (dim+1)
  /// each; they may be uninitialized); returns at once.
  void launch(canopy::Runtime& rt, const canopy::Array<std::int32_t, 2>& reference,
              const canopy::Array<std::int32_t, 2>& score, std::int32_t penalty, const Where& where) const {
    const std::int64_t side = dim_ + 1;
    if (reference.extent(0) != side || reference.extent(1) != side || score.extent(0) != side ||
        score.extent(1) != side)
      throw canopy::Error("nw: reference and score must be " + std::to_string(side) + "x" + std::to_string(side));
    Sequences s = sequences(dim_);
    auto first = rt.array<std::int32_t>(side, canopy::named("first") | canopy::read_only());
    auto second = rt.array<std::int32_t>(side, canopy::named("second") | canopy::read_only());
    auto blosum = rt.array<std::int32_t, 2>(canopy::Shape(24, 24), canopy::named("blosum62") | canopy::read_only());
    {
      auto f = first.host();
      auto c = second.host();
      auto b = blosum.host();
      std::copy(s.first.begin(), s.first.end(), f.data());
      std::copy(s.second.begin(), s.second.end(), c.data());
      for (int r = 0; r < 24; ++r) std::copy(kBlosum62[r], kBlosum62[r] + 24, b.data() + r * 24);
    }
    auto region = rt.region(fill_);
    region.over(side).policy(where.policy);
    if (!where.location.empty()) region.at(where.location);
    region.launch(reference, score, first, second, blosum, penalty);
  }

 private:
  // Row i: reference(i, j) = BLOSUM62(first[i], second[j]) off row 0 and
  // column 0 (zero there); score holds -j * penalty in row 0, -i * penalty in
  // column 0 and zero elsewhere.
  static FillKernel fill_kernel(std::int64_t side) {
    using namespace canopy;
    return FillKernel("nw_generate",
                      [=](Out<std::int32_t, 2> reference, Out<std::int32_t, 2> score, In<std::int32_t> first,
                          In<std::int32_t> second, In<std::int32_t, 2> blosum, Val<std::int32_t> penalty) {
                        Idx i = index(0);
                        Var<std::int32_t> residue("residue", first[i]);
                        Var<std::int32_t> gap("gap", cast<std::int32_t>(i) * -penalty);
                        For(0, side, [&](Idx j) {
                          reference(i, j) = select(i > 0 && j > 0, blosum(residue, second[j]), 0);
                          score(i, j) = select(j == 0, gap, select(i == 0, cast<std::int32_t>(j) * -penalty, 0));
                        });
                      },
                      {"reference", "score", "first", "second", "blosum", "penalty"});
  }

  std::int64_t dim_;
  FillKernel fill_;
};

/// The Canopy implementation for one problem shape.
class Aligner {
 public:
  using BlockKernel = canopy::Kernel<void(canopy::InOut<std::int32_t, 2>, canopy::In<std::int32_t, 2>,
                                          canopy::Val<std::int64_t>, canopy::Val<std::int32_t>)>;

  /// Kernels for sequences of length `dim` filled in blocks of `block`
  /// (which must divide dim). Throws canopy::Error otherwise.
  Aligner(std::int64_t dim, std::int64_t block)
      : dim_(checked_dim(dim, block)),
        block_(block),
        blocks_(dim / block),
        growing_(block_kernel("nw_growing", block, dim / block, true)),
        shrinking_(block_kernel("nw_shrinking", block, dim / block, false)) {}

  std::int64_t dim() const { return dim_; }
  std::int64_t block() const { return block_; }
  /// Block anti-diagonals, one region each: 2 * dim / block - 1.
  std::int64_t regions() const { return 2 * blocks_ - 1; }

  /// Queues the regions that fill `score` ((dim+1) x (dim+1), row 0 and
  /// column 0 set) from `reference`; returns at once (Runtime::pause waits).
  void launch(canopy::Runtime& rt, const canopy::Array<std::int32_t, 2>& score,
              const canopy::Array<std::int32_t, 2>& reference, std::int32_t penalty, const Where& where) const {
    for (std::int64_t d = 0; d < regions(); ++d) {
      const bool growing = d < blocks_;
      auto region = rt.region(growing ? growing_ : shrinking_);
      region.over(growing ? d + 1 : regions() - d).policy(where.policy);
      if (!where.location.empty()) region.at(where.location);
      region.launch(score, reference, d, penalty);
    }
  }

 private:
  static std::int64_t checked_dim(std::int64_t dim, std::int64_t block) {
    if (dim < 1 || block < 1 || dim % block != 0)
      throw canopy::Error("nw: the sequence length " + std::to_string(dim) +
                          " is not a positive multiple of the block " + std::to_string(block) +
                          "; use a length that is a multiple of 16");
    return dim;
  }

  // One point fills block (bi, d - bi), bi = index(0) while the anti-diagonals
  // grow and bi = blocks-1-index(0) once they shrink. The row above the block
  // and the column left of it come from the previous anti-diagonal (or the
  // penalties).
  //
  // A row is filled in three passes, so that only a running maximum is left
  // in the chain from one cell to the next. With t(j) = max(upper-left +
  // reference, up - penalty), which needs only the row above, the recurrence
  // best(j) = max(t(j), best(j-1) - penalty) becomes, for
  // m(j) = best(j) + (j+1) * penalty, the prefix maximum
  // m(j) = max(t(j) + (j+1) * penalty, m(j-1)), m(-1) = the cell left of the
  // row. Pass 1 writes t(j) + (j+1) * penalty over the row (independent
  // cells: vectorised), pass 2 takes the running maximum in place (a load, a
  // max and a store per cell), pass 3 subtracts (j+1) * penalty again
  // (vectorised). All in 32-bit integers, so the scores are exactly
  // Rodinia's.
  static BlockKernel block_kernel(const char* name, std::int64_t block, std::int64_t blocks, bool growing) {
    using namespace canopy;
    return BlockKernel(name,
                       [=](InOut<std::int32_t, 2> score, In<std::int32_t, 2> reference, Val<std::int64_t> diagonal,
                           Val<std::int32_t> penalty) {
                         Idx b = index(0);
                         Idx block_row = growing ? b : (blocks - 1) - b;
                         Idx first_row = block_row * block + 1;
                         Idx first_col = (diagonal - block_row) * block + 1;
                         For(0, block, [&](Idx i) {
                           Idx row = first_row + i;
                           For(0, block, [&](Idx j) {
                             Idx col = first_col + j;
                             score(row, col) =
                                 max(score(row - 1, col - 1) + reference(row, col), score(row - 1, col) - penalty) +
                                 cast<std::int32_t>(j + 1) * penalty;
                           });
                           Var<std::int32_t> running = score(row, first_col - 1);
                           For(0, block, [&](Idx j) {
                             running = max(running, score(row, first_col + j));
                             score(row, first_col + j) = running;
                           });
                           For(0, block, [&](Idx j) {
                             Idx col = first_col + j;
                             score(row, col) = score(row, col) - cast<std::int32_t>(j + 1) * penalty;
                           });
                         });
                       },
                       {"score", "reference", "diagonal", "penalty"});
  }

  std::int64_t dim_, block_, blocks_;
  BlockKernel growing_, shrinking_;
};

}  // namespace rodinia::nw
