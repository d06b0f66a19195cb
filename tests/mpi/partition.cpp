// canopy::mpi::Partition on three or four ranks whose step times follow known
// models (CANOPY_TEST_RANK_TIME): the blocks reach the balance the models
// imply within a few rebalances, the rows an array holds travel with them,
// and a balanced partition stays put. Run by the mpi-partition-3 and
// mpi-partition-4 tests.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include <canopy/canopy.hpp>
#include <canopy/runtime/mpi/partition.hpp>

#include "mpi_support.hpp"
#include "scoped_setting.hpp"

namespace {

struct Model {
  double fixed, per_row;
};

// The time T at which blocks of at least one row sum to `rows`, by bisection
// (the partition solves the same balance in closed form).
double ideal_time(const std::vector<Model>& models, std::int64_t rows) {
  auto rows_at = [&](double t) {
    double sum = 0;
    for (const Model& m : models) sum += std::max(1.0, (t - m.fixed) / m.per_row);
    return sum;
  };
  double lo = 0, hi = 1;
  while (rows_at(hi) < double(rows)) hi *= 2;
  for (int k = 0; k < 200; ++k) {
    const double mid = 0.5 * (lo + hi);
    (rows_at(mid) < double(rows) ? lo : hi) = mid;
  }
  return hi;
}

}  // namespace

TEST_CASE("mpi partition: rows converge to the balance of known step-time models, and move with their data") {
  auto& job = mpi_test::job();
  REQUIRE((job.size() == 3 || job.size() == 4));
  // Rank 1 four times as slow per row as rank 0 or 3, rank 2 twice; fixed parts as launch latencies.
  std::vector<Model> models{{0.002, 1e-5}, {0.0, 4e-5}, {0.001, 2e-5}, {0.0005, 1e-5}};
  models.resize(static_cast<std::size_t>(job.size()));
  canopy::testing::ScopedSetting timing("CANOPY_TEST_RANK_TIME", "0:0.002:1e-5,1:0:4e-5,2:0.001:2e-5,3:0.0005:1e-5");
  const std::int64_t rows = 1000, cols = 3;
  canopy::mpi::Partition partition(job, rows, {.steps_ahead = 1000, .min_gain = 0.01});
  CHECK(partition.bounds().back() == rows);
  for (int r = 0; r < job.size(); ++r)
    CHECK(std::abs(partition.bounds()[r + 1] - partition.bounds()[r] - rows / job.size()) <= 1);
  // Each row holds its global index in every column, with one halo row above and below.
  auto block = partition.make<double>(cols, 1);
  // Before any move, redistribute() is refused (it had read empty bounds and crashed).
  CHECK_THROWS_WITH_AS(partition.redistribute(block, 1), doctest::Contains("no rebalance() has moved rows yet"),
                       canopy::Error);
  auto fill = [&](canopy::Array<double, 2>& a) {
    auto h = a.host();
    for (std::int64_t r = 0; r < partition.count(); ++r)
      for (std::int64_t c = 0; c < cols; ++c) h(r + 1, c) = double(partition.first() + r) + 0.25 * double(c);
  };
  auto holds_its_rows = [&](const canopy::Array<double, 2>& a) {
    auto h = a.host_read();
    bool ok = a.extent(0) == partition.count() + 2;
    for (std::int64_t r = 0; ok && r < partition.count(); ++r)
      for (std::int64_t c = 0; c < cols; ++c)
        ok = ok && h(r + 1, c) == double(partition.first() + r) + 0.25 * double(c);
    return ok;
  };
  fill(block);
  const double ideal = ideal_time(models, rows);
  const Model& mine = models[std::size_t(job.rank())];
  const double ideal_rows = std::max(1.0, (ideal - mine.fixed) / mine.per_row);
  int rebalances = 0;
  bool balanced = false;
  for (; rebalances < 3 && !balanced; ++rebalances) {
    for (int step = 0; step < 3; ++step) partition.record(1.0);  // replaced by this rank's model
    const auto report = partition.rebalance();
    MESSAGE(report.text());
    if (report.moved) {
      // The halo the block was made with, or an error naming the rows (the
      // wrong one had moved the wrong rows silently).
      CHECK_THROWS_WITH_AS(partition.redistribute(block, 0), doctest::Contains("pass the array of the block before"),
                           canopy::Error);
      block = partition.redistribute(block, 1);
      // Again before a step at the new sizes: nothing new is known, so
      // nothing moves (it had moved rows further the wrong way each time).
      const auto moved_to = partition.bounds();
      CHECK_FALSE(partition.rebalance().moved);
      CHECK(partition.bounds() == moved_to);
    }
    CHECK(mpi_test::all_ranks(job, holds_its_rows(block)));
    balanced = mpi_test::all_ranks(job, std::abs(double(partition.count()) - ideal_rows) <= 0.05 * ideal_rows);
  }
  CHECK(balanced);  // every rank's rows within 5% of the ideal, after at most 3 rebalances
  // Balanced: the next rebalance keeps the blocks.
  for (int step = 0; step < 3; ++step) partition.record(1.0);
  const auto bounds = partition.bounds();
  const auto report = partition.rebalance();
  CHECK_FALSE(report.moved);
  CHECK(partition.bounds() == bounds);
}

TEST_CASE("mpi partition: a bad CANOPY_TEST_RANK_TIME is refused naming the variable") {
  auto& job = mpi_test::job();
  canopy::testing::ScopedSetting timing("CANOPY_TEST_RANK_TIME", "0:fast");
  canopy::mpi::Partition partition(job, 100);
  std::string message;
  try {
    partition.record(0.5);
  } catch (const canopy::Error& e) {
    message = e.what();
  }
  CHECK(message.rfind("CANOPY_TEST_RANK_TIME='0:fast' is not allowed", 0) == 0);
  canopy::testing::ScopedSetting none("CANOPY_TEST_RANK_TIME", nullptr);
  message.clear();
  try {
    partition.record(-1.0);
  } catch (const canopy::Error& e) {
    message = e.what();
  }
  CHECK(message.find("must be a finite number >= 0") != std::string::npos);
  // Ranks that measured nothing (0 s) still get blocks of at least one row.
  partition.record(0.0);
  const auto report = partition.rebalance();
  CHECK(report.after.back() == 100);
  for (int r = 0; r < job.size(); ++r) CHECK(report.after[r + 1] - report.after[r] >= 1);
}

TEST_CASE("mpi partition: step times taken from the rank's own regions") {
  auto& job = mpi_test::job();
  canopy::testing::ScopedSetting timing("CANOPY_TEST_RANK_TIME", nullptr);
  canopy::Runtime& rt = job.runtime();
  canopy::mpi::Partition partition(job, 64 * job.size());
  static const canopy::Kernel spin("partition_spin",
                                   [](canopy::Out<double> y) {
                                     canopy::Var<double> acc = 0.0;
                                     canopy::For(0, 20000,
                                                 [&](canopy::Idx k) { acc += canopy::cast<double>(k) * 1e-9; });
                                     y[canopy::index(0)] = acc;
                                   },
                                   {"y"});
  auto y = rt.array<double>(partition.count());
  partition.record_regions();  // the starting point: records nothing
  for (int step = 0; step < 3; ++step) {
    rt.region(spin).over(partition.count()).launch(y);
    rt.pause();
    partition.record_regions();
  }
  // Three steps recorded, each the time a leaf spent on one region: positive.
  const auto report = partition.rebalance();
  CHECK(report.seconds_before[std::size_t(job.rank())] > 0);
  CHECK(report.after.back() == partition.rows());
}
