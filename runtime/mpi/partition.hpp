// Partition: the rows of a domain (its first dimension) in blocks over the
// ranks of a Job, balanced by how fast each rank runs its block.
//
//   canopy::mpi::Partition rows(job, 4096);              // even blocks
//   auto grid = rows.make<double>(cols, /*halo=*/1);      // this rank's block
//   for (int step = 0; step < steps; ++step) {
//     double seconds = advance(grid);                     // one step, timed
//     rows.record(seconds);
//     if (step % 10 == 9 && rows.rebalance().moved)       // collective
//       grid = rows.redistribute(grid, 1);                // rows move to neighbours
//   }
//
// Each rank's time per step is modelled as fixed + per_row * rows, fitted
// from the steps it recorded at each block size it has held (the median per
// size); with one size seen the fixed part is taken as zero. rebalance()
// gathers the models, computes the blocks that make every rank's predicted
// time equal, and moves rows only when the predicted saving over the steps
// ahead beats the predicted cost of moving them (measured from the last
// move; a few microseconds per row before any). Works for any number of
// ranks and any mix of devices: only the measured times matter.
//
// For tests, CANOPY_TEST_RANK_TIME="RANK:FIXED:PER_ROW,..." makes the named
// ranks record FIXED + PER_ROW * rows seconds instead of what they measured,
// so that balancing can be checked on a machine whose ranks share cores.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "job.hpp"

namespace canopy::mpi {

class Partition {
 public:
  struct Options {
    /// Steps the program expects to run after a rebalancing: the saving of a
    /// move is counted over these.
    int steps_ahead = 100;
    /// Rows move only when the slowest rank's predicted time per step drops
    /// by more than this fraction.
    double min_gain = 0.02;
  };

  /// What one rebalance() found and did (the same on every rank).
  struct Report {
    bool moved = false;
    std::vector<std::int64_t> before, after;  ///< block boundaries, size()+1 each
    std::vector<double> seconds_before;       ///< per rank: modelled seconds per step of its block before
    std::vector<double> seconds_after;        ///< per rank: modelled seconds per step of its block after
    double move_seconds = 0;                  ///< the predicted cost of the move
    std::string reason;                       ///< why it moved or did not
    /// "rows [0,48) [48,96) -> [0,60) [60,96); slowest 2.10 -> 1.70 ms per step (predicted); moved"
    std::string text() const;
  };

  /// Even blocks of `rows` rows over the job's ranks (each at least one row).
  /// Not collective: every rank computes the same blocks.
  Partition(Job& job, std::int64_t rows, Options options);
  Partition(Job& job, std::int64_t rows) : Partition(job, rows, Options{}) {}

  std::int64_t rows() const { return rows_; }  ///< the domain's rows
  std::int64_t first() const;                  ///< this rank's first row
  std::int64_t count() const;                  ///< this rank's number of rows
  /// Block boundaries: rank r holds rows [bounds()[r], bounds()[r + 1]).
  const std::vector<std::int64_t>& bounds() const { return bounds_; }

  /// Records the seconds one step over this rank's current block took.
  void record(double seconds);
  /// Records a step from this rank's regions instead: the busiest leaf's
  /// busy seconds (Runtime::stats) since the previous call, which leaves out
  /// the host's work and the time regions waited to start. The first call
  /// only takes the starting point.
  void record_regions();
  /// Collective: fits every rank's model, and moves the blocks' boundaries
  /// when that pays (see the file's comment). After a move, call
  /// redistribute() for each array that holds the rows.
  Report rebalance();
  /// The last rebalance()'s report (empty before the first).
  const Report& last() const { return last_; }

  /// A new array for this rank's block: count() + 2 * halo rows of `row`
  /// elements (a 2-D array), the halos first and last.
  template <class T>
  Array<T, 2> make(std::int64_t row, std::int64_t halo = 0, MemoryTraits traits = {}) const {
    return job_.runtime().array<T, 2>(Shape(count() + 2 * halo, row), traits);
  }

  /// Collective, after a rebalance() that moved: a new array for this rank's
  /// new block with the same halo and inner extents as `old`, holding the
  /// rows it held before (halo rows are not copied; exchange them after).
  /// Rows come from the ranks that held them, with Job::sendrecv.
  template <class T, int Rank>
  Array<T, Rank> redistribute(const Array<T, Rank>& old, std::int64_t halo) {
    const int rank = job_.rank(), size = job_.size();
    const std::vector<std::int64_t>& from = last_.before;
    const std::vector<std::int64_t>& to = last_.after;
    const auto bounds = static_cast<std::size_t>(size) + 1;
    if (from.size() != bounds || to.size() != bounds)
      throw Error(
          "Partition::redistribute: no rebalance() has moved rows yet; call it after a rebalance() that "
          "returned true");
    if (!old || old.extent(0) != from[rank + 1] - from[rank] + 2 * halo)
      throw Error("Partition::redistribute: the array has " + std::to_string(old ? old.extent(0) : 0) +
                  " rows, but this rank's block before the move was " + std::to_string(from[rank + 1] - from[rank]) +
                  " rows and 2 x " + std::to_string(halo) +
                  " halo rows; pass the array of the block before the move and the halo it was made with");
    Shape shape = old.shape();
    const std::int64_t rows_now = to[rank + 1] - to[rank] + 2 * halo;
    const Shape fresh_shape = Rank == 1   ? Shape(rows_now)
                              : Rank == 2 ? Shape(rows_now, shape[1])
                                          : Shape(rows_now, shape[1], shape[2]);
    Array<T, Rank> fresh = job_.runtime().array<T, Rank>(fresh_shape, old.storage()->traits());
    const auto start = std::chrono::steady_clock::now();
    // Every shift d at once on every rank: each sends to one rank and
    // receives from one, so no exchange waits on another. d = 0 is the rows
    // a rank keeps (sent to itself).
    for (int d = 0; d < size; ++d) {
      const int dest = (rank + d) % size, source = (rank - d + size) % size;
      const auto [s0, s1] = overlap(from[rank], from[rank + 1], to[dest], to[dest + 1]);
      const auto [r0, r1] = overlap(from[source], from[source + 1], to[rank], to[rank + 1]);
      const bool sends = s0 < s1, receives = r0 < r1;
      auto out = sends ? old.slice(s0 - from[rank] + halo, s1 - from[rank] + halo) : old.slice(0, 0);
      auto in = receives ? fresh.slice(r0 - to[rank] + halo, r1 - to[rank] + halo) : fresh.slice(0, 0);
      job_.sendrecv(out, sends ? dest : no_rank, in, receives ? source : no_rank, kTag);
    }
    note_move(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    return fresh;
  }

 private:
  static constexpr int kTag = 7301;
  static std::pair<std::int64_t, std::int64_t> overlap(std::int64_t a0, std::int64_t a1, std::int64_t b0,
                                                       std::int64_t b1);
  /// Adds the seconds one redistribute() took (the slowest rank's) to the
  /// cost of the last move, which the next rebalance() learns from.
  void note_move(double seconds);

  Job& job_;
  std::int64_t rows_;
  Options options_;
  std::vector<std::int64_t> bounds_;
  /// Seconds per step recorded at each block size this rank has held.
  std::map<std::int64_t, std::vector<double>> samples_;
  double seconds_per_row_moved_ = 5e-6;
  double last_move_seconds_ = 0;
  std::map<std::string, double> busy_before_;  ///< per leaf, at the last record_regions()
  bool busy_started_ = false;
  Report last_;
};

}  // namespace canopy::mpi
