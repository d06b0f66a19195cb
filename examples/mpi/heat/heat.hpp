// A 2-D heat solver over the ranks of an MPI job: each rank owns a block of
// rows of the grid (plus one halo row above and below), exchanges its edge
// rows with its neighbours every iteration (Job::sendrecv of array slices),
// and advances its block on whatever its node gave it (a CPU leaf, an OpenCL
// device, both). After a few iterations the ranks measure how fast each
// advanced its rows and move rows between neighbours so that each rank's
// share is proportional to its speed.
//
// The step is Rodinia hotspot's 5-point update, in double precision, with the
// grid's edges clamped (a point on the edge reads itself for its missing
// neighbour). Every point's new value depends only on its own operands,
// computed in the same order on every device (no contraction into FMAs), so
// the result does not depend on how the rows are split: the MPI run equals
// the single-process run bit for bit, which run_heat checks on rank 0.
//
// Used by examples/mpi/heat/main.cpp and by `canopy-bench mpi`.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <canopy/canopy.hpp>
#include <canopy/runtime/mpi/job.hpp>
#include <canopy/runtime/mpi/partition.hpp>

namespace heat {

/// What to run.
struct Options {
  std::int64_t rows = 256;
  std::int64_t cols = 256;
  int iterations = 40;
  /// Rebalance after this many iterations (0: never; keep the even split),
  /// and again after as many more, `rebalances` times in all.
  int rebalance_after = 6;
  int rebalances = 1;
  /// A rebalancing moves rows only when the slowest rank's modelled time per
  /// step drops by more than this fraction (and the saving over the
  /// iterations left beats the cost of moving: see mpi::Partition).
  double min_gain = 0.02;
  /// Rank 0 also runs the whole grid alone and compares the results.
  bool check = false;
  /// How each rank splits its block over its own leaves.
  std::string policy = "static";
  /// Where each rank runs its regions (empty: where its arrays are, the root).
  std::string location;
};

/// One rank's part of a run.
struct RankResult {
  std::int64_t rows_before = 0;  ///< rows it held before rebalancing
  std::int64_t rows_after = 0;   ///< rows it held at the end
  /// Compute seconds per iteration before rebalancing: the median over the
  /// iterations (the first left out), which a busy machine's preemptions
  /// do not move as they move a mean.
  double seconds_before = 0;
  double seconds_after = 0;  ///< the same after the last rebalancing (its first iteration left out)
};

/// What a run did, the same on every rank.
struct Result {
  std::vector<RankResult> ranks;        ///< per rank
  double seconds = 0;                   ///< wall time of all iterations (the slowest rank)
  double checksum = 0;                  ///< the sum of the final temperatures
  bool checked = false;                 ///< rank 0 compared with its single-process run
  bool identical = false;               ///< ... and every value was equal, bit for bit
  std::int64_t differing = 0;           ///< values that differed
  std::vector<std::string> rebalances;  ///< what each rebalancing did (mpi::Partition::Report::text)
};

/// The coefficients of the update: a time step over the heat capacity
/// (cap_1), the conductances to the row and column neighbours and to the
/// ambient air (rx_1, ry_1, rz_1), and the ambient temperature. These keep
/// the explicit update stable (a point keeps 0.795 of its own value).
struct Coefficients {
  double cap_1 = 0.05, rx_1 = 1.0, ry_1 = 1.0, rz_1 = 0.1, ambient = 80.0;
};

/// The starting temperature and the power of point (row, col) of the grid.
inline double initial_temperature(std::int64_t row, std::int64_t col) {
  return 320.0 + static_cast<double>((row * 37 + col * 11) % 101) * 0.25;
}
inline double power_at(std::int64_t row, std::int64_t col) {
  return static_cast<double>((row * 7 + col * 13) % 19) * 0.002;
}

using StepKernel =
    canopy::Kernel<void(canopy::Out<double, 2>, canopy::In<double, 2>, canopy::In<double, 2>, canopy::Val<std::int64_t>,
                        canopy::Val<std::int64_t>, canopy::Val<double>, canopy::Val<double>, canopy::Val<double>,
                        canopy::Val<double>, canopy::Val<double>)>;

/// One step over a block: local row r = index(0) + 1 of `next` from rows
/// r-1, r, r+1 of `temperature` (rows 0 and n+1 are the halos); `power` has
/// the block's n rows. `first_row` is the block's first row in the grid,
/// `total_rows` the grid's rows: the grid's own top and bottom rows read
/// themselves instead of a halo.
inline const StepKernel& step_kernel() {
  using namespace canopy;
  static const StepKernel kernel(
      "heat_step",
      [](Out<double, 2> next, In<double, 2> temperature, In<double, 2> power, Val<std::int64_t> first_row,
         Val<std::int64_t> total_rows, Val<double> cap_1, Val<double> rx_1, Val<double> ry_1, Val<double> rz_1,
         Val<double> ambient) {
        Idx i = index(0), j = index(1);
        const Idx cols = temperature.extent(1);
        const Idx row = i + 1;
        const Idx global = first_row + i;
        const Value<double> t = temperature(row, j);
        const Value<double> north = temperature(select(global > 0, i, row), j);
        const Value<double> south = temperature(select(global < total_rows - 1, row + 1, row), j);
        Var<double> west = t, east = t;
        If(j > 0, [&] { west = temperature(row, j - 1); });
        If(j < cols - 1, [&] { east = temperature(row, j + 1); });
        const Value<double> sum_rows = (south + north - 2.0 * t) * ry_1;
        const Value<double> sum_cols = (east.value() + west.value() - 2.0 * t) * rx_1;
        next(row, j) = t + cap_1 * (power(i, j).value() + sum_rows + sum_cols + (ambient - t) * rz_1);
      },
      {"next", "temperature", "power", "first_row", "total_rows", "cap_1", "rx_1", "ry_1", "rz_1", "ambient"});
  return kernel;
}

/// A rank's rows [first, first + rows) of the grid, with halo rows.
struct Block {
  std::int64_t first = 0, rows = 0;
  canopy::Array<double, 2> temperature, next, power;

  Block(canopy::Runtime& rt, std::int64_t first_row, std::int64_t row_count, std::int64_t cols)
      : first(first_row),
        rows(row_count),
        temperature(rt.array<double, 2>(canopy::Shape(row_count + 2, cols), canopy::named("heat_temperature"))),
        next(rt.array<double, 2>(canopy::Shape(row_count + 2, cols), canopy::named("heat_next"))),
        power(rt.array<double, 2>(canopy::Shape(row_count, cols), canopy::named("heat_power"))) {
    auto p = power.host();
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t c = 0; c < cols; ++c) p(r, c) = power_at(first + r, c);
  }
  /// Fills rows with the starting temperatures.
  void start(std::int64_t cols) {
    auto t = temperature.host();
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t c = 0; c < cols; ++c) t(r + 1, c) = initial_temperature(first + r, c);
  }
};

/// Sends the block's edge rows to its neighbours and receives their halos.
inline void exchange_halos(canopy::mpi::Job& job, Block& block) {
  const int up = job.rank() > 0 ? job.rank() - 1 : canopy::mpi::no_rank;
  const int down = job.rank() + 1 < job.size() ? job.rank() + 1 : canopy::mpi::no_rank;
  auto& t = block.temperature;
  const std::int64_t n = block.rows;
  job.sendrecv(t.slice(1, 2), up, t.slice(n + 1, n + 2), down, 1);
  job.sendrecv(t.slice(n, n + 1), down, t.slice(0, 1), up, 2);
}

/// The block of `partition` after it moved rows: the temperatures travel
/// with their rows; the power is computed again for the new rows.
inline Block moved(canopy::mpi::Partition& partition, canopy::Runtime& rt, const Block& old, std::int64_t cols) {
  Block fresh(rt, partition.first(), partition.count(), cols);
  fresh.temperature = partition.redistribute(old.temperature, 1);
  return fresh;
}

/// Advances `block` one step on `rt` and returns the seconds it took.
inline double step(canopy::Runtime& rt, Block& block, std::int64_t total_rows, std::int64_t cols, const Coefficients& c,
                   const Options& options) {
  const auto start = std::chrono::steady_clock::now();
  rt.region(step_kernel())
      .over(block.rows, cols)
      .at(options.location)
      .policy(options.policy)
      .launch(block.next, block.temperature, block.power, block.first, total_rows, c.cap_1, c.rx_1, c.ry_1, c.rz_1,
              c.ambient);
  rt.pause();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::swap(block.temperature, block.next);
  return seconds;
}

/// The whole grid after `options.iterations` steps on rank 0's runtime alone.
inline std::vector<double> single_process(canopy::Runtime& rt, const Options& options) {
  const Coefficients c;
  Block block(rt, 0, options.rows, options.cols);
  block.start(options.cols);
  for (int it = 0; it < options.iterations; ++it) step(rt, block, options.rows, options.cols, c, options);
  auto t = block.temperature.host_read();
  return std::vector<double>(&t(1, 0), &t(1, 0) + options.rows * options.cols);
}

/// Runs the solver over every rank of `job` (collective).
inline Result run(canopy::mpi::Job& job, const Options& options) {
  canopy::Runtime& rt = job.runtime();
  const int rank = job.rank(), size = job.size();
  const Coefficients c;
  if (options.rows < size) throw canopy::Error("heat: the grid has fewer rows than there are ranks");
  job.compile(step_kernel());
  canopy::mpi::Partition partition(
      job, options.rows,
      {.steps_ahead = std::max(1, options.iterations - options.rebalance_after), .min_gain = options.min_gain});
  Block block(rt, partition.first(), partition.count(), options.cols);
  block.start(options.cols);
  RankResult mine;
  mine.rows_before = block.rows;
  std::vector<std::string> reports;
  // Compute seconds of each iteration of the current phase (between
  // rebalancings), its first iteration left out.
  std::vector<double> phase;
  double first_phase = 0;
  int phase_start = 0, rebalanced = 0;
  auto phase_median = [&] {
    if (phase.empty()) return 0.0;
    std::vector<double> sorted = phase;
    std::sort(sorted.begin(), sorted.end());
    const std::size_t half = sorted.size() / 2;
    return sorted.size() % 2 ? sorted[half] : 0.5 * (sorted[half - 1] + sorted[half]);
  };
  job.barrier();
  const auto start = std::chrono::steady_clock::now();
  for (int it = 0; it < options.iterations; ++it) {
    exchange_halos(job, block);
    const double seconds = step(rt, block, options.rows, options.cols, c, options);
    if (it > phase_start) {
      phase.push_back(seconds);
      partition.record(seconds);  // the first iteration of a block size warms caches and is left out
    }
    if (size > 1 && options.rebalance_after > 0 && rebalanced < options.rebalances &&
        it + 1 == options.rebalance_after * (rebalanced + 1)) {
      if (rebalanced == 0) first_phase = phase.empty() ? seconds : phase_median();
      const auto report = partition.rebalance();
      if (report.moved || reports.empty()) reports.push_back(report.text());
      ++rebalanced;
      if (report.moved) {  // a new phase: the times of the old block size say nothing of the new
        block = moved(partition, rt, block, options.cols);
        phase.clear();
        phase_start = it + 1;
      }
    }
  }
  job.barrier();
  Result result;
  result.rebalances = reports;
  result.seconds = job.allreduce(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
                                 canopy::mpi::Op::Max);
  mine.rows_after = block.rows;
  mine.seconds_before = rebalanced ? first_phase : phase_median();
  mine.seconds_after = phase_median();
  const auto rows_before = job.allgather(static_cast<double>(mine.rows_before));
  const auto rows_after = job.allgather(static_cast<double>(mine.rows_after));
  const auto seconds_before = job.allgather(mine.seconds_before);
  const auto seconds_after = job.allgather(mine.seconds_after);
  for (int r = 0; r < size; ++r)
    result.ranks.push_back(RankResult{static_cast<std::int64_t>(rows_before[r]),
                                      static_cast<std::int64_t>(rows_after[r]), seconds_before[r], seconds_after[r]});

  // Rank 0 gathers the grid.
  if (rank == 0) {
    auto grid = rt.array<double, 2>(canopy::Shape(options.rows, options.cols), canopy::named("heat_grid"));
    {
      auto t = block.temperature.host_read();
      auto g = grid.host();
      std::memcpy(&g(0, 0), &t(1, 0), static_cast<std::size_t>(block.rows * options.cols) * sizeof(double));
    }
    const auto& bounds = partition.bounds();
    for (int r = 1; r < size; ++r) job.recv(grid.slice(bounds[r], bounds[r + 1]), r, 4);
    auto g = grid.host_read();
    double sum = 0;
    for (double v : g) sum += v;
    result.checksum = sum;
    if (options.check) {
      const auto reference = single_process(rt, options);
      result.checked = true;
      for (std::int64_t k = 0; k < options.rows * options.cols; ++k)
        if (std::memcmp(&reference[static_cast<std::size_t>(k)], g.data() + k, sizeof(double)) != 0) ++result.differing;
      result.identical = result.differing == 0;
    }
  } else {
    job.send(block.temperature.slice(1, block.rows + 1), 0, 4);
  }
  double flags[3] = {result.checksum, result.checked ? 1.0 : 0.0, static_cast<double>(result.differing)};
  for (double& f : flags) f = job.allreduce(f, canopy::mpi::Op::Sum);
  result.checksum = flags[0];
  result.checked = flags[1] > 0;
  result.differing = static_cast<std::int64_t>(flags[2]);
  result.identical = result.checked && result.differing == 0;
  return result;
}

}  // namespace heat
