#include "partition.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <numeric>
#include <sstream>

#include <canopy/ir/error.hpp>
#include <canopy/ir/settings.hpp>

namespace canopy::mpi {

namespace {

/// A rank's time per step: fixed + per_row * rows.
struct Model {
  double fixed = 0, per_row = 0;
  double at(std::int64_t rows) const { return fixed + per_row * static_cast<double>(rows); }
};

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t half = values.size() / 2;
  return values.size() % 2 ? values[half] : 0.5 * (values[half - 1] + values[half]);
}

/// The model through the median time at the latest block size (what the
/// rank does now, which matters most), with the slope of the least-squares
/// line through the medians of every size seen. With one size, or a slope
/// that is not positive or would make the fixed part negative, time is
/// proportional to rows through the latest point. Not measured yet at the
/// latest size (rebalance() again right after a move), the point is the
/// measured size nearest to it: the largest size's time over the latest
/// size's rows had moved rows further the wrong way at each call.
Model fit(const std::map<std::int64_t, std::vector<double>>& samples, std::int64_t latest) {
  std::vector<std::pair<double, double>> points;
  for (const auto& [rows, seconds] : samples)
    if (!seconds.empty()) points.emplace_back(static_cast<double>(rows), median(seconds));
  if (points.empty()) return {0, 1};  // as a rank that never recorded
  double x0 = static_cast<double>(std::max<std::int64_t>(latest, 1)), y0 = 0;
  if (auto it = samples.find(latest); it != samples.end() && !it->second.empty()) {
    y0 = median(it->second);
  } else {
    const auto nearest = std::min_element(points.begin(), points.end(), [&](const auto& a, const auto& b) {
      return std::abs(a.first - x0) < std::abs(b.first - x0);
    });
    x0 = std::max(nearest->first, 1.0);
    y0 = nearest->second;
  }
  if (points.size() >= 2) {
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (auto [x, y] : points) sx += x, sy += y, sxx += x * x, sxy += x * y;
    const double n = static_cast<double>(points.size());
    const double slope = (n * sxy - sx * sy) / (n * sxx - sx * sx);
    if (slope > 0 && y0 - slope * x0 >= 0) return {y0 - slope * x0, slope};
  }
  return {0, y0 / x0};
}

/// Blocks of `rows` (each at least one row) that make every model's time
/// equal: fixed_r + per_row_r * n_r = T for all r, sum n_r = rows.
std::vector<std::int64_t> balanced(std::int64_t rows, const std::vector<Model>& models) {
  const std::size_t n = models.size();
  std::vector<double> exact(n, 1.0);
  std::vector<bool> pinned(n, false);
  for (bool changed = true; changed;) {
    changed = false;
    double free_rows = static_cast<double>(rows), inverse = 0, offset = 0;
    for (std::size_t r = 0; r < n; ++r) {
      if (pinned[r]) {
        free_rows -= 1;
        continue;
      }
      inverse += 1 / models[r].per_row;
      offset += models[r].fixed / models[r].per_row;
    }
    const double time = (free_rows + offset) / inverse;
    for (std::size_t r = 0; r < n; ++r) {
      if (pinned[r]) continue;
      exact[r] = (time - models[r].fixed) / models[r].per_row;
      if (exact[r] < 1) pinned[r] = changed = true, exact[r] = 1;
    }
  }
  // Whole rows: the floors, then the rest to the largest fractions.
  std::vector<std::int64_t> counts(n);
  std::int64_t left = rows;
  for (std::size_t r = 0; r < n; ++r) {
    counts[r] = std::max<std::int64_t>(1, static_cast<std::int64_t>(std::floor(exact[r])));
    left -= counts[r];
  }
  while (left != 0) {
    std::size_t best = 0;
    for (std::size_t r = 1; r < n; ++r) {
      const double gap = exact[r] - static_cast<double>(counts[r]), best_gap = exact[best] - double(counts[best]);
      if (left > 0 ? gap > best_gap : (gap < best_gap && counts[r] > 1) || counts[best] == 1) best = r;
    }
    counts[best] += left > 0 ? 1 : -1;
    left += left > 0 ? -1 : 1;
  }
  std::vector<std::int64_t> bounds{0};
  for (std::int64_t c : counts) bounds.push_back(bounds.back() + c);
  return bounds;
}

/// CANOPY_TEST_RANK_TIME's model for `rank`, if it names one.
std::optional<Model> test_model(int rank) {
  const std::string& text = settings().test_rank_time;
  std::istringstream entries(text);
  std::string entry;
  while (std::getline(entries, entry, ',')) {
    int named = -1;
    double fixed = 0, per_row = 0;
    char colon1 = 0, colon2 = 0;
    std::istringstream in(entry);
    if (!(in >> named >> colon1 >> fixed >> colon2 >> per_row) || colon1 != ':' || colon2 != ':' || per_row <= 0 ||
        fixed < 0)
      bad_setting("CANOPY_TEST_RANK_TIME", text, "RANK:FIXED:PER_ROW[,...] with seconds, FIXED >= 0 and PER_ROW > 0");
    if (named == rank) return Model{fixed, per_row};
  }
  return std::nullopt;
}

std::string ms(double seconds) { return fmt::format("{:.3f}", seconds * 1e3); }

}  // namespace

Partition::Partition(Job& job, std::int64_t rows, Options options) : job_(job), rows_(rows), options_(options) {
  if (rows < job.size())
    throw Error(fmt::format("Partition of {} rows over {} ranks: every rank needs at least one row", rows, job.size()));
  bounds_ = balanced(rows, std::vector<Model>(static_cast<std::size_t>(job.size()), Model{0, 1}));
}

std::int64_t Partition::first() const { return bounds_[static_cast<std::size_t>(job_.rank())]; }

std::int64_t Partition::count() const {
  const auto rank = static_cast<std::size_t>(job_.rank());
  return bounds_[rank + 1] - bounds_[rank];
}

void Partition::record(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0)
    throw Error(fmt::format("Partition::record({}): the seconds of a step must be a finite number >= 0", seconds));
  if (auto model = test_model(job_.rank())) seconds = model->at(count());
  samples_[count()].push_back(seconds);
}

void Partition::record_regions() {
  const Stats stats = job_.runtime().stats();
  double busiest = 0;
  for (const LeafStats& leaf : stats.leaves) {
    double& before = busy_before_[leaf.leaf];
    busiest = std::max(busiest, leaf.busy_seconds - before);
    before = leaf.busy_seconds;
  }
  if (busy_started_) record(std::max(0.0, busiest));
  busy_started_ = true;
}

Partition::Report Partition::rebalance() {
  const int size = job_.size();
  // What the last move cost, per row moved.
  if (last_.moved && last_move_seconds_ > 0) {
    std::int64_t moved = 0;
    for (int r = 0; r < size; ++r) {
      const std::int64_t kept = std::max<std::int64_t>(
          0, std::min(last_.before[r + 1], last_.after[r + 1]) - std::max(last_.before[r], last_.after[r]));
      moved += last_.before[r + 1] - last_.before[r] - kept;
    }
    if (moved > 0) seconds_per_row_moved_ = last_move_seconds_ / static_cast<double>(moved);
  }
  last_move_seconds_ = 0;

  const Model mine = samples_.empty() ? Model{0, 1} : fit(samples_, count());
  const std::vector<double> fixed = job_.allgather(mine.fixed);
  const std::vector<double> per_row = job_.allgather(mine.per_row);
  std::vector<Model> models;
  // A rank too fast to time (0 s per row) counts as very fast, not as free.
  for (int r = 0; r < size; ++r) models.push_back(Model{fixed[r], std::max(per_row[r], 1e-12)});

  Report report;
  report.before = bounds_;
  report.after = balanced(rows_, models);
  double slowest_before = 0, slowest_after = 0;
  std::int64_t moved = 0;
  for (int r = 0; r < size; ++r) {
    report.seconds_before.push_back(models[r].at(report.before[r + 1] - report.before[r]));
    report.seconds_after.push_back(models[r].at(report.after[r + 1] - report.after[r]));
    slowest_before = std::max(slowest_before, report.seconds_before.back());
    slowest_after = std::max(slowest_after, report.seconds_after.back());
    moved += std::abs(report.after[r + 1] - report.before[r + 1]);
  }
  report.move_seconds = seconds_per_row_moved_ * static_cast<double>(moved);
  const double saving = (slowest_before - slowest_after) * options_.steps_ahead;
  if (moved == 0) {
    report.reason = "balanced already";
  } else if (slowest_after > slowest_before * (1 - options_.min_gain)) {
    report.reason = fmt::format("a gain under {:.0f}%", options_.min_gain * 100);
  } else if (saving <= report.move_seconds) {
    report.reason = fmt::format("saving {} ms over {} steps does not pay moving ({} ms)", ms(saving),
                                options_.steps_ahead, ms(report.move_seconds));
  } else {
    report.moved = true;
    report.reason = fmt::format("saving {} ms over {} steps, moving costs {} ms", ms(saving), options_.steps_ahead,
                                ms(report.move_seconds));
    bounds_ = report.after;
  }
  if (!report.moved) report.after = report.before;
  last_ = report;
  return report;
}

void Partition::note_move(double seconds) { last_move_seconds_ += job_.allreduce(seconds, Op::Max); }

std::pair<std::int64_t, std::int64_t> Partition::overlap(std::int64_t a0, std::int64_t a1, std::int64_t b0,
                                                         std::int64_t b1) {
  return {std::max(a0, b0), std::min(a1, b1)};
}

std::string Partition::Report::text() const {
  auto blocks = [](const std::vector<std::int64_t>& bounds) {
    std::string text;
    for (std::size_t r = 0; r + 1 < bounds.size(); ++r)
      text += fmt::format("{}[{},{})", r ? " " : "", bounds[r], bounds[r + 1]);
    return text;
  };
  const double slowest_before =
      seconds_before.empty() ? 0 : *std::max_element(seconds_before.begin(), seconds_before.end());
  const double slowest_after =
      seconds_after.empty() ? 0 : *std::max_element(seconds_after.begin(), seconds_after.end());
  return fmt::format("rows {} -> {}; slowest rank {} -> {} ms per step (modelled); {}: {}", blocks(before),
                     blocks(after), ms(slowest_before), ms(slowest_after), moved ? "moved" : "kept", reason);
}

}  // namespace canopy::mpi
