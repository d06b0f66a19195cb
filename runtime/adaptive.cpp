#include "adaptive.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include <canopy/ir/error.hpp>
#include <canopy/ir/settings.hpp>
#include <canopy/jit/checked_file.hpp>
#include <canopy/jit/hash.hpp>

namespace canopy {

namespace {

constexpr std::string_view kMagic = "canopy-adaptive 2";  // 2: checked_file's checksum
/// Weight of a new measurement in a leaf's seconds per point (the rest is the old value).
constexpr double kHistoryWeight = 0.5;
/// The least time between two writes of one split's file.
constexpr std::chrono::seconds kSaveInterval{1};
/// Launches whose rates the feedback takes the median of.
constexpr std::size_t kRecentLaunches = 3;
/// How often one probe starts again because the machine changed during it.
constexpr int kProbeRestarts = 2;
/// How far a share must move from the split last probed for a new probe:
/// noise moves a settled split by a point or two, which cannot turn the
/// even split's loss into a win, and each probe runs the loser twice or more.
constexpr double kProbeMove = 0.05;

double median_of(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

std::string hex64(std::uint64_t value) { return fmt::format("{:016x}", value); }

// The key of a kernel's rate on one leaf (the history's, and the model's cache of rates).
std::string rate_key(std::uint64_t kernel_hash, std::string_view leaf, const std::string& extents_class) {
  return fmt::format("{} {} {}", hex64(kernel_hash), leaf, extents_class);
}

/// A leaf as part of a key: what makes two trees' leaves the same.
std::string leaf_signature(const Location& leaf) {
  const LocationTraits& traits = leaf.traits();
  std::string text = fmt::format("{}:{}:{}:", leaf.name(), name_of(leaf.kind()), traits.cores);
  for (std::size_t i = 0; i < traits.pus.size(); ++i) text += (i ? "," : "") + std::to_string(traits.pus[i]);
  if (!traits.device.empty()) text += ":" + traits.device;
  return text;
}

/// Piece rows per leaf of `plan`, and each leaf's summed run time, from the record.
struct Measured {
  std::vector<std::int64_t> rows;
  std::vector<double> seconds;      // when each leaf finished, from the launch
  std::vector<double> run_seconds;  // each leaf's kernel runs alone (no copies, no waiting)
  std::int64_t total_rows = 0;
};

Measured measured_of(const AdaptivePlan& plan, const RegionStats& record,
                     const std::function<double(const PieceStats&)>& time_source) {
  Measured m;
  m.rows.assign(plan.leaves.size(), 0);
  m.seconds.assign(plan.leaves.size(), 0.0);
  m.run_seconds.assign(plan.leaves.size(), 0.0);
  for (const PieceStats& piece : record.pieces) {
    const auto it = std::find(plan.leaves.begin(), plan.leaves.end(), piece.leaf);
    if (it == plan.leaves.end()) continue;
    const auto index = static_cast<std::size_t>(it - plan.leaves.begin());
    m.rows[index] += piece.end - piece.begin;
    const double own = piece.finished_seconds > 0 ? piece.finished_seconds : piece.run_seconds;
    m.seconds[index] = std::max(m.seconds[index], time_source ? time_source(piece) : own);
    m.run_seconds[index] += time_source ? time_source(piece) : piece.run_seconds;
    m.total_rows += piece.end - piece.begin;
  }
  return m;
}

/// Shares made non-negative and summing to 1; nothing when they cannot be.
std::optional<std::vector<double>> normalized(std::vector<double> shares) {
  double sum = 0;
  for (double& s : shares) {
    if (!std::isfinite(s) || s < 0) return std::nullopt;
    sum += s;
  }
  if (!(sum > 0)) return std::nullopt;
  for (double& s : shares) s /= sum;
  return shares;
}

/// Points per leaf that make `latency_i + points_i / rate_i` equal for all
/// leaves that take part; a leaf whose latency alone exceeds that time takes
/// none (the slowest to start is left out first).
std::vector<double> balanced_points(const std::vector<double>& rate, const std::vector<double>& latency,
                                    double points) {
  const std::size_t n = rate.size();
  std::vector<bool> active(n, true);
  std::vector<double> shares(n, 0.0);
  for (;;) {
    double rates = 0, weighted = 0;
    for (std::size_t i = 0; i < n; ++i)
      if (active[i]) rates += rate[i], weighted += latency[i] * rate[i];
    const double t = (points + weighted) / rates;
    std::size_t worst = n;
    for (std::size_t i = 0; i < n; ++i)
      if (active[i] && latency[i] >= t && (worst == n || latency[i] > latency[worst])) worst = i;
    if (worst == n || std::count(active.begin(), active.end(), true) == 1) {
      for (std::size_t i = 0; i < n; ++i) shares[i] = active[i] ? std::max(0.0, (t - latency[i]) * rate[i]) : 0.0;
      return shares;
    }
    active[worst] = false;
  }
}

}  // namespace

FeedbackOptions FeedbackOptions::from_environment() {
  FeedbackOptions options;
  const Settings& s = settings();
  options.dead_band = s.adaptive_dead_band.value_or(options.dead_band);
  options.damping = s.adaptive_damping.value_or(options.damping);
  options.probe = s.adaptive_probe.value_or(options.probe);
  return options;
}

Feedback rebalance(const std::vector<double>& shares, const std::vector<double>& seconds,
                   const FeedbackOptions& options) {
  Feedback feedback;
  feedback.shares = shares;
  if (shares.size() != seconds.size()) {
    feedback.imbalance = std::numeric_limits<double>::quiet_NaN();
    return feedback;
  }
  double fastest = std::numeric_limits<double>::infinity(), slowest = 0, rates = 0;
  std::size_t ran = 0;
  for (std::size_t i = 0; i < shares.size(); ++i) {
    if (!(shares[i] > 0)) continue;
    if (!std::isfinite(seconds[i]) || !(seconds[i] > 0)) {
      feedback.imbalance = std::numeric_limits<double>::quiet_NaN();
      return feedback;
    }
    fastest = std::min(fastest, seconds[i]);
    slowest = std::max(slowest, seconds[i]);
    rates += shares[i] / seconds[i];
    ++ran;
  }
  if (ran < 2) return feedback;
  feedback.imbalance = slowest / fastest - 1;
  if (feedback.imbalance <= options.dead_band) return feedback;
  std::vector<double> next(shares.size(), 0.0);
  double largest_move = 0, sum = 0;
  for (std::size_t i = 0; i < shares.size(); ++i) {
    if (!(shares[i] > 0)) continue;
    const double balanced = shares[i] / seconds[i] / rates;
    next[i] = shares[i] + options.damping * (balanced - shares[i]);
    largest_move = std::max(largest_move, std::abs(next[i] - shares[i]));
    sum += next[i];
  }
  if (largest_move < options.min_change || !(sum > 0)) return feedback;
  for (double& s : next) s /= sum;
  feedback.shares = std::move(next);
  feedback.changed = true;
  return feedback;
}

std::string extents_class_of(const Shape& range) {
  std::string text = "b";
  for (int d = 0; d < range.rank(); ++d) {
    const auto extent = static_cast<std::uint64_t>(std::max<std::int64_t>(range[d], 0));
    text += (d ? "x" : "") + std::to_string(std::bit_width(extent));
  }
  return text;
}

// ---- AdaptivePlan ---------------------------------------------------------------

void AdaptivePlan::annotate(RegionStats& record) const {
  const std::int64_t rows = record.range.rank() > 0 ? record.range[0] : 0;
  for (PieceStats& piece : record.pieces) {
    const auto it = std::find(leaves.begin(), leaves.end(), piece.leaf);
    if (it == leaves.end() || rows <= 0) continue;
    const auto index = static_cast<std::size_t>(it - leaves.begin());
    piece.share = static_cast<double>(piece.end - piece.begin) / static_cast<double>(rows);
    if (rates[index] > 0)
      piece.predicted_seconds = latency[index] + static_cast<double>(piece.end - piece.begin) *
                                                     static_cast<double>(inner_points) / rates[index];
  }
}

void AdaptivePlan::finished(const RegionStats& record) const {
  if (placement) placement->learn(*this, record);
}

// ---- AdaptivePlacement ----------------------------------------------------------

AdaptivePlacement::AdaptivePlacement(FeedbackOptions options, std::string cache_dir)
    : options_(options), directory_(machine_model_directory(cache_dir)) {}

AdaptivePlacement::~AdaptivePlacement() {
  for (auto& [key, entry] : entries_)
    if (entry.dirty) save(entry);
}

void AdaptivePlacement::set_model(std::optional<MachineModel> model, std::string node_fingerprint) {
  std::lock_guard lock(mutex_);
  model_ = std::move(model);
  node_ = std::move(node_fingerprint);
  model_rates_.clear();
}

const MachineModel* AdaptivePlacement::model() const {
  std::lock_guard lock(mutex_);
  return model_ ? &*model_ : nullptr;
}

AdaptivePlacement::LeafRate AdaptivePlacement::model_rate(const AdaptiveKernel& kernel, const Location& leaf,
                                                          const Shape& range, const std::string& extents_class) {
  const std::string key = rate_key(kernel.hash, leaf.name(), extents_class);
  if (auto it = model_rates_.find(key); it != model_rates_.end()) return it->second;
  LeafRate rate;
  const LeafModel* known = model_ ? model_->find(leaf.name()) : nullptr;
  if (known && known->calibrated && kernel.kernel) {
    try {
      std::array<std::int64_t, 3> extents{};
      for (int d = 0; d < range.rank() && d < 3; ++d) extents[static_cast<std::size_t>(d)] = range[d];
      const ir::KernelCost cost = model_->cost_of(*kernel.kernel, leaf.name(), extents);
      rate.rate = model_->throughput(cost, leaf.name());
      if (!std::isfinite(rate.rate)) rate.rate = 0;
      rate.latency = known->launch_seconds;
    } catch (const Error&) {
      rate = LeafRate{};
    }
  }
  model_rates_.emplace(key, rate);
  return rate;
}

std::shared_ptr<const AdaptivePlan> AdaptivePlacement::plan(const AdaptiveKernel& kernel, const Location& at,
                                                            const std::vector<const Location*>& leaves,
                                                            const Shape& range) {
  auto plan = std::make_shared<AdaptivePlan>();
  plan->placement = this;
  plan->kernel = kernel.kernel ? kernel.kernel->name : std::string();
  plan->kernel_hash = kernel.hash;
  plan->extents_class = extents_class_of(range);
  for (int d = 1; d < range.rank(); ++d) plan->inner_points *= std::max<std::int64_t>(range[d], 0);
  std::string signature;
  for (const Location* leaf : leaves) {
    plan->leaves.push_back(leaf->name());
    signature += (signature.empty() ? "" : " ") + leaf_signature(*leaf);
  }
  std::lock_guard lock(mutex_);
  plan->key = fmt::format("{} | at {} | leaves {} | kernel {} {} | extents {}", node_, at.name(), signature,
                          plan->kernel, hex64(kernel.hash), plan->extents_class);
  for (const Location* leaf : leaves) {
    const LeafRate rate = model_rate(kernel, *leaf, range, plan->extents_class);
    plan->rates.push_back(rate.rate);
    plan->latency.push_back(rate.latency);
  }
  auto found = entries_.find(plan->key);
  if (found == entries_.end()) {
    Entry entry;
    entry.split.key = plan->key;
    entry.split.kernel = plan->kernel;
    entry.split.leaves = plan->leaves;
    // The model's split: balanced finishing times with each leaf's latency;
    // leaves it cannot rate run at the mean rate of the others.
    const std::size_t n = leaves.size();
    double known_sum = 0;
    std::size_t known = 0;
    for (double r : plan->rates)
      if (r > 0) known_sum += r, ++known;
    std::vector<double> model_shares(n, 1.0 / static_cast<double>(std::max<std::size_t>(n, 1)));
    if (known > 0) {
      const double mean = known_sum / static_cast<double>(known);
      std::vector<double> rate(n), latency(n);
      for (std::size_t i = 0; i < n; ++i) {
        rate[i] = plan->rates[i] > 0 ? plan->rates[i] : mean;
        latency[i] = plan->rates[i] > 0 ? plan->latency[i] : 0.0;
      }
      const double points = static_cast<double>(std::max<std::int64_t>(range.rank() > 0 ? range[0] : 0, 0)) *
                            static_cast<double>(plan->inner_points);
      model_shares = balanced_points(rate, latency, points);
      if (auto shares = normalized(model_shares)) {
        model_shares = *shares;
      } else {
        for (std::size_t i = 0; i < n; ++i) model_shares[i] = rate[i];
        model_shares = normalized(model_shares).value_or(std::vector<double>(n, 1.0 / static_cast<double>(n)));
      }
      entry.split.model_shares = model_shares;
    }
    entry.split.shares = model_shares;
    if (auto stored = load(plan->key, plan->leaves)) {
      entry.split.shares = *stored;
      entry.split.from_file = true;
      entry.saved = true;
    }
    found = entries_.emplace(plan->key, std::move(entry)).first;
  }
  plan->shares = found->second.split.shares;
  return plan;
}

std::shared_ptr<const AdaptivePlan> AdaptivePlacement::plan_any(const AdaptiveKernel& kernel, const Location& leaf,
                                                                const Shape& range) {
  auto plan = std::make_shared<AdaptivePlan>();
  plan->placement = this;
  plan->kernel = kernel.kernel ? kernel.kernel->name : std::string();
  plan->kernel_hash = kernel.hash;
  plan->extents_class = extents_class_of(range);
  plan->learns_split = false;
  for (int d = 1; d < range.rank(); ++d) plan->inner_points *= std::max<std::int64_t>(range[d], 0);
  plan->leaves = {leaf.name()};
  plan->shares = {1.0};
  std::lock_guard lock(mutex_);
  const std::string history_key = rate_key(kernel.hash, leaf.name(), plan->extents_class);
  if (auto it = history_.find(history_key); it != history_.end()) {
    plan->rates = {1.0 / it->second};
    plan->latency = {0.0};
  } else {
    const LeafRate rate = model_rate(kernel, leaf, range, plan->extents_class);
    plan->rates = {rate.rate};
    plan->latency = {rate.latency};
  }
  return plan;
}

std::vector<double> AdaptivePlacement::row_seconds(const AdaptivePlan& plan) const {
  std::lock_guard lock(mutex_);
  std::vector<double> seconds(plan.leaves.size(), std::numeric_limits<double>::quiet_NaN());
  const auto points = static_cast<double>(plan.inner_points);
  for (std::size_t i = 0; i < plan.leaves.size(); ++i) {
    const std::string history_key = rate_key(plan.kernel_hash, plan.leaves[i], plan.extents_class);
    if (auto it = run_history_.find(history_key); it != run_history_.end())
      seconds[i] = it->second * points;
    else if (i < plan.rates.size() && plan.rates[i] > 0)
      seconds[i] = points / plan.rates[i];
  }
  return seconds;
}

double AdaptivePlacement::predict_seconds(const AdaptiveKernel& kernel, const Location& leaf, const Shape& range) {
  double points = 1;
  for (int d = 0; d < range.rank(); ++d) points *= static_cast<double>(std::max<std::int64_t>(range[d], 0));
  const std::string extents_class = extents_class_of(range);
  std::lock_guard lock(mutex_);
  const std::string history_key = rate_key(kernel.hash, leaf.name(), extents_class);
  if (auto it = history_.find(history_key); it != history_.end()) return points * it->second;
  const LeafRate rate = model_rate(kernel, leaf, range, extents_class);
  if (!(rate.rate > 0)) return std::numeric_limits<double>::quiet_NaN();
  return rate.latency + points / rate.rate;
}

void AdaptivePlacement::learn(const AdaptivePlan& plan, const RegionStats& record) {
  std::lock_guard lock(mutex_);
  const Measured m = measured_of(plan, record, time_source_);
  if (m.total_rows <= 0) return;
  for (std::size_t i = 0; i < plan.leaves.size(); ++i) {
    if (m.rows[i] <= 0 || !(m.seconds[i] > 0)) continue;
    const double points = static_cast<double>(m.rows[i]) * static_cast<double>(plan.inner_points);
    const std::string key = rate_key(plan.kernel_hash, plan.leaves[i], plan.extents_class);
    // Seconds per point, blended into what earlier launches measured.
    auto blend = [&](std::map<std::string, double>& into, double seconds) {
      auto [it, fresh] = into.emplace(key, seconds / points);
      if (!fresh) it->second = kHistoryWeight * seconds / points + (1 - kHistoryWeight) * it->second;
    };
    blend(history_, m.seconds[i]);
    if (m.run_seconds[i] > 0) blend(run_history_, m.run_seconds[i]);
  }
  if (!plan.learns_split || plan.leaves.size() < 2) return;
  auto found = entries_.find(plan.key);
  if (found == entries_.end()) return;
  Entry& entry = found->second;
  // A launch that followed its inputs' split moves the kernel's own split
  // only while it balances: a probe compares launch times of its two splits.
  if (plan.followed && entry.phase != Entry::Phase::Balancing) return;
  const std::size_t n = plan.leaves.size();
  // A probe's launch of the even split says nothing of the rates at the split being balanced.
  const bool trial = entry.phase == Entry::Phase::Probing && plan.shares != entry.candidates.front();
  std::vector<double> ran(n), seconds = m.seconds, rates(n, 0.0);
  double launch_seconds = 0;  // when the last leaf finished
  entry.recent_rates.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    ran[i] = static_cast<double>(m.rows[i]) / static_cast<double>(m.total_rows);
    if (m.rows[i] <= 0 || !(m.seconds[i] > 0) || !std::isfinite(m.seconds[i])) continue;
    launch_seconds = std::max(launch_seconds, m.seconds[i]);
    auto& recent = entry.recent_rates[i];
    if (!trial) recent.push_back(static_cast<double>(m.rows[i]) / m.seconds[i]);
    if (recent.size() > kRecentLaunches) recent.erase(recent.begin());
    if (recent.empty()) continue;
    rates[i] = median_of(recent);
    seconds[i] = static_cast<double>(m.rows[i]) / rates[i];
  }
  if (!trial && !plan.followed && launch_seconds > 0) {
    entry.recent_seconds.push_back(launch_seconds);
    if (entry.recent_seconds.size() > kRecentLaunches) entry.recent_seconds.erase(entry.recent_seconds.begin());
  }
  const std::vector<double> kept = entry.keeps();
  const Feedback feedback = rebalance(ran, seconds, options_);
  entry.split.launches += 1;
  entry.split.last_imbalance = feedback.imbalance;
  switch (entry.phase) {
    case Entry::Phase::Balancing:
      if (feedback.changed) {
        entry.split.shares = feedback.shares;
        entry.split.changes += 1;
        entry.recent_seconds.clear();
        break;
      }
      if (!probe_due(entry) && drifted(entry)) entry.probed.clear();  // the machine changed
      if (probe_due(entry) && options_.probe && !plan.followed && entry.split.launches >= 2 &&
          std::isfinite(feedback.imbalance))
        start_probe(entry, rates);
      break;
    case Entry::Phase::Probing: probe_step(entry, plan.shares, launch_seconds); break;
    case Entry::Phase::Holding:
      if (drifted(entry)) {
        // The machine is not what it was when the even split won: balance, and probe again.
        entry.phase = Entry::Phase::Balancing;
        entry.split.held = false;
        entry.probed.clear();
      }
      break;
  }
  // Written after the first launch, then at most once a second while it
  // moves (a file write would otherwise delay every launch that changes the
  // split), and by the destructor.
  entry.dirty = entry.dirty || entry.keeps() != kept || !entry.saved;
  const auto now = std::chrono::steady_clock::now();
  if (entry.dirty && (!entry.saved || now - entry.saved_at >= kSaveInterval)) {
    entry.saved = true;
    entry.dirty = false;
    entry.saved_at = now;
    save(entry);
  }
}

void AdaptivePlacement::start_probe(Entry& entry, const std::vector<double>& rates) const {
  entry.probed = entry.split.shares;
  entry.reference_seconds = 0;  // a declined probe: the next three launches give it
  const std::vector<double>& settled = entry.split.shares;
  const std::vector<double> even(settled.size(), 1.0 / static_cast<double>(settled.size()));
  if (even == settled || rates.size() != settled.size()) return;
  // Predicted times (in units of the whole range) of both splits at the rates measured.
  double now = 0, then = 0;
  for (std::size_t i = 0; i < settled.size(); ++i) {
    if (!(rates[i] > 0)) return;  // a leaf without a piece: no rate to predict from
    now = std::max(now, settled[i] / rates[i]);
    then = std::max(then, even[i] / rates[i]);
  }
  if (!(then <= (1 + options_.probe_margin) * now)) return;
  // What the settled split took before the probe: its launches in the probe are checked against it.
  entry.reference_seconds = entry.recent_seconds.empty() ? 0.0 : median_of(entry.recent_seconds);
  entry.candidates = {settled, even};
  entry.candidate_seconds.assign(entry.candidates.size(), {});
  entry.probe_restarts = 0;
  entry.schedule = {1, 0, 1, 0};  // alternating, so that a change of the machine's speed hits both
  entry.phase = Entry::Phase::Probing;
  entry.split.shares = entry.candidates[entry.schedule.front()];
}

void AdaptivePlacement::probe_step(Entry& entry, const std::vector<double>& ran_shares, double seconds) const {
  if (entry.schedule.empty()) return;
  const std::size_t expected = entry.schedule.front();
  // A launch planned before the probe (regions can be queued ahead), or one without a time, is no sample.
  if (ran_shares != entry.candidates[expected] || !(seconds > 0) || !std::isfinite(seconds)) return;
  if (expected == 0 && outside_band(seconds, entry.reference_seconds) && entry.probe_restarts < kProbeRestarts) {
    // The settled split no longer takes the time it took before the probe:
    // the machine changed during it, and the even split's launches so far
    // saw another machine. Start again from here.
    entry.probe_restarts += 1;
    entry.reference_seconds = 0;  // the next launch of the settled split gives it: this one may be a one-off
    entry.candidate_seconds.assign(entry.candidates.size(), {});
    entry.schedule = {1, 0, 1, 0};
    entry.split.shares = entry.candidates[entry.schedule.front()];
    return;
  }
  if (expected == 0 && !(entry.reference_seconds > 0)) entry.reference_seconds = seconds;
  entry.candidate_seconds[expected].push_back(seconds);
  entry.schedule.erase(entry.schedule.begin());
  const auto& settled_seconds = entry.candidate_seconds[0];
  const auto& even_seconds = entry.candidate_seconds[1];
  if (!entry.schedule.empty() && settled_seconds.size() != even_seconds.size()) {
    entry.split.shares = entry.candidates[entry.schedule.front()];
    return;
  }
  // After each pair: a gap of twice the gain decides at once, else the last pair does.
  const double settled = median_of(settled_seconds), even = median_of(even_seconds);
  const double gain = entry.schedule.empty() ? options_.probe_gain : 2 * options_.probe_gain;
  const bool even_wins = even < settled * (1 - gain);
  if (!entry.schedule.empty() && !even_wins && !(settled < even * (1 - gain))) {
    entry.split.shares = entry.candidates[entry.schedule.front()];
    return;
  }
  entry.schedule.clear();
  entry.split.probes += 1;
  entry.split.shares = entry.candidates[even_wins ? 1 : 0];
  entry.phase = even_wins ? Entry::Phase::Holding : Entry::Phase::Balancing;
  entry.split.held = even_wins;
  // The next three launches give the time later ones are compared with: one
  // pair of probe launches is too few (the even split's times can be bimodal).
  entry.reference_seconds = 0;
  entry.recent_seconds.clear();
  if (even_wins) {
    entry.split.changes += 1;
    entry.recent_rates.assign(entry.recent_rates.size(), {});  // the rates at the settled split no longer apply
  }
  entry.candidates.clear();
  entry.candidate_seconds.clear();
}

bool AdaptivePlacement::probe_due(const Entry& entry) {
  if (entry.probed.size() != entry.split.shares.size()) return true;
  for (std::size_t i = 0; i < entry.probed.size(); ++i)
    if (std::abs(entry.split.shares[i] - entry.probed[i]) >= kProbeMove) return true;
  return false;
}

bool AdaptivePlacement::outside_band(double seconds, double reference) const {
  // Twice the dead band: one launch in a few can take 15% longer than the
  // others at the same split (seen at the even split on a busy memory bus),
  // while other work coming or going moved the times by 1.5-2x.
  const double band = 1 + 2 * options_.dead_band;
  return reference > 0 && (seconds > reference * band || seconds * band < reference);
}

bool AdaptivePlacement::drifted(Entry& entry) const {
  if (entry.recent_seconds.size() < kRecentLaunches) return false;
  const double recent = median_of(entry.recent_seconds);
  if (!(entry.reference_seconds > 0)) {
    entry.reference_seconds = recent;
    return false;
  }
  return outside_band(recent, entry.reference_seconds);
}

std::vector<AdaptiveSplit> AdaptivePlacement::splits() const {
  std::lock_guard lock(mutex_);
  std::vector<AdaptiveSplit> all;
  for (const auto& [key, entry] : entries_) all.push_back(entry.split);
  return all;
}

void AdaptivePlacement::set_time_source(std::function<double(const PieceStats&)> source) {
  std::lock_guard lock(mutex_);
  time_source_ = std::move(source);
}

std::string AdaptivePlacement::path_of(const std::string& key) const {
  return (std::filesystem::path(directory_) / ("adaptive-" + hex64(jit::hash64(key)) + ".txt")).string();
}

void AdaptivePlacement::save(const Entry& entry) const {
  if (directory_ == "off") return;
  try {
    write_adaptive_file(path_of(entry.split.key), entry.split.key, entry.split.leaves, entry.keeps());
  } catch (const Error& e) {
    std::fprintf(stderr, "canopy: the adaptive split is not kept between runs: %s\n", e.what());
  }
}

std::optional<std::vector<double>> AdaptivePlacement::load(const std::string& key,
                                                           const std::vector<std::string>& leaves) const {
  if (directory_ == "off") return std::nullopt;
  return read_adaptive_file(path_of(key), key, leaves);
}

// ---- the file ---------------------------------------------------------------------

std::optional<std::vector<double>> read_adaptive_file(const std::string& path, const std::string& key,
                                                      const std::vector<std::string>& leaves) {
  const jit::CheckedRead read = jit::read_checked_file(path, jit::cache_sharing_from_environment());
  if (read.state != jit::FileState::Whole) return std::nullopt;
  std::stringstream lines(read.payload);
  std::string line;
  if (!std::getline(lines, line) || line != kMagic) return std::nullopt;
  if (!std::getline(lines, line) || line != "key\t" + key) return std::nullopt;
  std::vector<double> shares;
  for (const std::string& leaf : leaves) {
    if (!std::getline(lines, line)) return std::nullopt;
    const std::string prefix = "leaf\t" + leaf + "\t";
    if (line.rfind(prefix, 0) != 0) return std::nullopt;
    const std::string number = line.substr(prefix.size());
    char* end = nullptr;
    const double share = std::strtod(number.c_str(), &end);
    if (number.empty() || *end != '\0') return std::nullopt;
    shares.push_back(share);
  }
  if (!std::getline(lines, line) || line != "end\t" + std::to_string(leaves.size())) return std::nullopt;
  if (std::getline(lines, line)) return std::nullopt;
  auto sound = normalized(shares);
  if (!sound) return std::nullopt;
  double sum = 0;
  for (double s : shares) sum += s;
  if (std::abs(sum - 1) > 1e-9) return std::nullopt;
  return shares;
}

void write_adaptive_file(const std::string& path, const std::string& key, const std::vector<std::string>& leaves,
                         const std::vector<double>& shares) {
  std::string text = std::string(kMagic) + "\nkey\t" + key + "\n";
  for (std::size_t i = 0; i < leaves.size() && i < shares.size(); ++i)
    text += fmt::format("leaf\t{}\t{:.17g}\n", leaves[i], shares[i]);
  text += "end\t" + std::to_string(leaves.size()) + "\n";
  const jit::CheckedWrite wrote = jit::write_checked_file(path, text, jit::cache_sharing_from_environment());
  if (!wrote.written && !wrote.untrusted)  // an untrusted directory has been warned about
    throw Error("cannot keep the adaptive split in '" + path + "': " + wrote.why +
                "; set CANOPY_CACHE_DIR to a writable directory with free space");
}

}  // namespace canopy
