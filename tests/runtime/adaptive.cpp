// The adaptive policy's parts that need no devices: the feedback rule with
// synthetic times, split() with learned shares, `any` with predicted times,
// the split file, and AdaptivePlacement learning from synthetic records.
#include <doctest/doctest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <canopy/canopy.hpp>
#include <canopy/runtime/adaptive.hpp>
#include <canopy/runtime/policy.hpp>
#include "scoped_setting.hpp"

namespace canopy {
namespace {

/// The time each leaf takes for its share when leaf i runs `rate[i]` of the
/// range per second, each time scaled by (1 + noise) with noise uniform in
/// [-amplitude, amplitude].
std::vector<double> synthetic_times(const std::vector<double>& shares, const std::vector<double>& rate,
                                    std::mt19937& rng, double amplitude) {
  std::uniform_real_distribution<double> noise(-amplitude, amplitude);
  std::vector<double> seconds(shares.size(), 0.0);
  for (std::size_t i = 0; i < shares.size(); ++i)
    if (shares[i] > 0) seconds[i] = shares[i] / rate[i] * (1 + noise(rng));
  return seconds;
}

double imbalance_of(const std::vector<double>& seconds) {
  double low = INFINITY, high = 0;
  for (double s : seconds)
    if (s > 0) low = std::min(low, s), high = std::max(high, s);
  return high / low - 1;
}

/// A temporary directory, removed at the end of the test.
struct TemporaryDirectory {
  std::filesystem::path path;
  TemporaryDirectory() {
    path = std::filesystem::temp_directory_path() /
           ("canopy-adaptive-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter()++));
    std::filesystem::create_directories(path);
  }
  ~TemporaryDirectory() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
  static int& counter() {
    static int value = 0;
    return value;
  }
};

/// A region's statistics as the engine records them: `leaves` ran
/// consecutive pieces of `rows` rows by `split`, each in `seconds`.
RegionStats synthetic_record(const std::vector<std::string>& leaves, const std::vector<std::int64_t>& split,
                             const std::vector<double>& seconds) {
  RegionStats record;
  std::int64_t begin = 0;
  for (std::size_t i = 0; i < leaves.size(); ++i) {
    if (split[i] == 0) continue;
    PieceStats piece{leaves[i], begin, begin + split[i], seconds[i]};
    piece.run_seconds = seconds[i];
    record.pieces.push_back(piece);
    begin += split[i];
  }
  record.range = Shape(begin);
  return record;
}

/// Rows per leaf that split() gives for `shares` over `rows` rows.
std::vector<std::int64_t> rows_of(const Hierarchy& tree, const std::vector<double>& shares, std::int64_t rows) {
  SplitContext context;
  context.shares = [&](const std::vector<const Location*>&) { return shares; };
  std::vector<std::int64_t> out(shares.size(), 0);
  const auto leaves = tree.leaves(*tree.root());
  for (const Piece& piece : split(*tree.root(), parse_policy("adaptive"), 0, rows, context))
    out[std::size_t(std::find(leaves.begin(), leaves.end(), piece.leaf) - leaves.begin())] += piece.size();
  return out;
}

Hierarchy two_leaves() {
  Hierarchy tree;
  tree.add("node", LocationKind::Virtual, {}, "");
  tree.add("slow", LocationKind::Cpu, {}, "node");
  tree.add("fast", LocationKind::Cpu, {}, "node");
  return tree;
}

/// A placement without a model or a cache directory, learning one kernel's
/// split over every leaf of `tree` from synthetic times.
struct SyntheticPlacement {
  Hierarchy tree;
  std::vector<const Location*> leaves;
  ir::Kernel kernel;
  AdaptiveKernel key;
  AdaptivePlacement placement;

  SyntheticPlacement(Hierarchy t, std::uint64_t hash, FeedbackOptions options = FeedbackOptions{})
      : tree(std::move(t)), leaves(tree.leaves(*tree.root())), key{&kernel, hash}, placement(options, "off") {
    placement.set_model(std::nullopt, "node fingerprint");
  }
  SyntheticPlacement(const SyntheticPlacement&) = delete;
  SyntheticPlacement& operator=(const SyntheticPlacement&) = delete;

  std::shared_ptr<const AdaptivePlan> plan(std::int64_t rows) {
    return placement.plan(key, *tree.root(), leaves, Shape(rows));
  }
  /// Runs `planned` over `rows` rows with the seconds each leaf takes from
  /// `times(rows per leaf)`, and returns the shares it ran.
  template <class Times>
  std::vector<double> run(const std::shared_ptr<const AdaptivePlan>& planned, std::int64_t rows, Times&& times) {
    const auto split_rows = rows_of(tree, planned->shares, rows);
    RegionStats record = synthetic_record(planned->leaves, split_rows, times(split_rows));
    planned->annotate(record);
    planned->finished(record);
    return planned->shares;
  }
  /// Plans a launch of `rows` rows and runs it (run()).
  template <class Times>
  std::vector<double> launch(std::int64_t rows, Times&& times) {
    return run(plan(rows), rows, times);
  }
  AdaptiveSplit learned() const { return placement.splits().at(0); }
};

}  // namespace

TEST_CASE("rebalance: from an even split over leaves 1x and 3x as fast it converges in a few launches") {
  const std::vector<double> rate = {1.0, 3.0};
  std::mt19937 rng(7);
  std::vector<double> shares = {0.5, 0.5};
  int launches_to_band = -1;
  for (int launch = 1; launch <= 10; ++launch) {
    const auto seconds = synthetic_times(shares, rate, rng, 0.0);
    const Feedback feedback = rebalance(shares, seconds);
    CHECK(feedback.imbalance == doctest::Approx(imbalance_of(seconds)));
    if (launches_to_band < 0 && feedback.imbalance <= FeedbackOptions{}.dead_band) launches_to_band = launch;
    double sum = 0;
    for (double s : feedback.shares) sum += s;
    CHECK(sum == doctest::Approx(1.0));
    shares = feedback.shares;
  }
  // Balanced: 1/4 and 3/4. Each launch takes 70% of the way: 0.25 -> 0.075 -> 0.0225 off.
  CHECK(launches_to_band >= 2);
  CHECK(launches_to_band <= 4);
  CHECK(shares[0] == doctest::Approx(0.25).epsilon(0.03));
  CHECK(shares[1] == doctest::Approx(0.75).epsilon(0.01));
}

TEST_CASE("rebalance: the first step moves damping of the way to the balanced split") {
  const Feedback feedback = rebalance({0.5, 0.5}, {0.5, 0.5 / 3});
  REQUIRE(feedback.changed);
  CHECK(feedback.imbalance == doctest::Approx(2.0));
  CHECK(feedback.shares[0] == doctest::Approx(0.5 + 0.7 * (0.25 - 0.5)));
  CHECK(feedback.shares[1] == doctest::Approx(0.5 + 0.7 * (0.75 - 0.5)));
  FeedbackOptions full;
  full.damping = 1;
  const Feedback at_once = rebalance({0.5, 0.5}, {0.5, 0.5 / 3}, full);
  CHECK(at_once.shares[0] == doctest::Approx(0.25));
  CHECK(at_once.shares[1] == doctest::Approx(0.75));
}

TEST_CASE("rebalance: the dead band holds the balanced split under +-3% noise for 1000 launches") {
  const std::vector<double> rate = {1.0, 2.5, 0.5};
  std::vector<double> shares = {1.0 / 4, 2.5 / 4, 0.5 / 4};
  const std::vector<double> balanced = shares;
  std::mt19937 rng(11);
  int changes = 0;
  for (int launch = 0; launch < 1000; ++launch) {
    const Feedback feedback = rebalance(shares, synthetic_times(shares, rate, rng, 0.03));
    CHECK(feedback.imbalance <= 1.03 / 0.97 - 1 + 1e-12);
    changes += feedback.changed ? 1 : 0;
    shares = feedback.shares;
  }
  CHECK(changes == 0);
  CHECK(shares == balanced);
}

TEST_CASE("rebalance: converging under +-3% noise, it settles; later noise moves it rarely and only a little") {
  const std::vector<double> rate = {1.0, 4.0};
  std::vector<double> shares = {0.6, 0.4};
  std::mt19937 rng(3);
  int late_changes = 0;
  double largest_late_move = 0;
  for (int launch = 1; launch <= 200; ++launch) {
    const Feedback feedback = rebalance(shares, synthetic_times(shares, rate, rng, 0.03));
    if (feedback.changed && launch > 6) {
      ++late_changes;
      largest_late_move = std::max(largest_late_move, std::abs(feedback.shares[0] - shares[0]));
    }
    shares = feedback.shares;
  }
  // Near the balance a change needs the noise to add up past the dead band,
  // and then moves the split by a fraction of the noise, toward balance.
  CHECK(late_changes <= 10);
  CHECK(largest_late_move < 0.02);
  CHECK(shares[0] == doctest::Approx(0.2).epsilon(0.1));
  const double worst = std::max(shares[0] / rate[0], shares[1] / rate[1]);
  const double best = 1.0 / (rate[0] + rate[1]);
  CHECK(worst / best - 1 < 0.08);
}

TEST_CASE("rebalance: leaves without a share keep none; a missing time or one leaf changes nothing") {
  const Feedback zero = rebalance({0.0, 0.5, 0.5}, {0.0, 1.0, 2.0});
  REQUIRE(zero.changed);
  CHECK(zero.shares[0] == 0);
  CHECK(zero.shares[1] + zero.shares[2] == doctest::Approx(1.0));
  CHECK(zero.shares[1] > 0.5);

  const Feedback missing = rebalance({0.5, 0.5}, {1.0, 0.0});
  CHECK_FALSE(missing.changed);
  CHECK(std::isnan(missing.imbalance));
  CHECK(missing.shares == std::vector<double>{0.5, 0.5});

  const Feedback alone = rebalance({1.0, 0.0}, {3.0, 0.0});
  CHECK_FALSE(alone.changed);
  CHECK(alone.imbalance == 0);

  CHECK_FALSE(rebalance({0.5, 0.5}, {1.0}).changed);
  // Within the dead band: 7% apart.
  CHECK_FALSE(rebalance({0.5, 0.5}, {1.0, 1.07}).changed);
  // Beyond it, but a move under min_change is not made.
  FeedbackOptions wide_steps;
  wide_steps.min_change = 0.1;
  CHECK_FALSE(rebalance({0.5, 0.5}, {1.0, 1.2}, wide_steps).changed);
  CHECK(rebalance({0.5, 0.5}, {1.0, 1.2}).changed);
}

TEST_CASE("FeedbackOptions::from_environment reads the dead band, damping and probe; bad values are errors") {
  using canopy::testing::ScopedSetting;
  {
    ScopedSetting band("CANOPY_ADAPTIVE_DEAD_BAND", "0.2"), damping("CANOPY_ADAPTIVE_DAMPING", "1"),
        probe("CANOPY_ADAPTIVE_PROBE", "0");
    const FeedbackOptions options = FeedbackOptions::from_environment();
    CHECK(options.dead_band == 0.2);
    CHECK(options.damping == 1.0);
    CHECK_FALSE(options.probe);
  }
  const FeedbackOptions defaults = FeedbackOptions::from_environment();
  CHECK(defaults.dead_band == FeedbackOptions{}.dead_band);
  CHECK(defaults.damping == FeedbackOptions{}.damping);
  CHECK(defaults.probe);
  const std::pair<const char*, const char*> bad[] = {{"CANOPY_ADAPTIVE_DEAD_BAND", "-1"},
                                                     {"CANOPY_ADAPTIVE_DEAD_BAND", "0.1x"},
                                                     {"CANOPY_ADAPTIVE_DAMPING", "0"},
                                                     {"CANOPY_ADAPTIVE_DAMPING", "nan"},
                                                     {"CANOPY_ADAPTIVE_PROBE", "no"}};
  for (const auto& [name, value] : bad) {
    ScopedSetting setting(name, value);
    const std::string named = std::string(name) + "='" + value + "' is not allowed; use ";
    std::string message;  // what a Runtime made now would say: it reads the settings first
    try {
      canopy::reload_settings();
    } catch (const canopy::Error& e) {
      message = e.what();
    }
    CHECK(message.rfind(named, 0) == 0);
    CHECK(FeedbackOptions::from_environment().dead_band == FeedbackOptions{}.dead_band);  // the last good settings
  }
}

TEST_CASE("split: adaptive cuts the range by the context's shares over every leaf, never dropping a row") {
  Hierarchy tree;
  tree.add("node", LocationKind::Virtual, {}, "");
  tree.add("a", LocationKind::Cpu, {}, "node");
  tree.add("mem", LocationKind::HostMemory, {}, "node");
  tree.add("b", LocationKind::Cpu, {}, "mem");
  tree.add("c", LocationKind::Cpu, {}, "mem");
  std::vector<std::string> asked;
  SplitContext context;
  std::vector<double> shares = {0.2, 0.3, 0.5};
  context.shares = [&](const std::vector<const Location*>& leaves) {
    asked.clear();
    for (const Location* leaf : leaves) asked.push_back(leaf->name());
    return shares;
  };
  auto pieces = split(*tree.root(), parse_policy("adaptive"), 10, 1010, context);
  CHECK(asked == std::vector<std::string>{"a", "b", "c"});
  CHECK(pieces ==
        std::vector<Piece>{{tree.find("a"), 10, 210}, {tree.find("b"), 210, 510}, {tree.find("c"), 510, 1010}});
  // A zero share gives no piece; rounding is cumulative.
  shares = {0.0, 1.0 / 3, 2.0 / 3};
  pieces = split(*tree.root(), parse_policy("adaptive"), 0, 7, context);
  CHECK(pieces == std::vector<Piece>{{tree.find("b"), 0, 2}, {tree.find("c"), 2, 7}});
  // Random shares and lengths: the pieces always cover the range once, in order.
  std::mt19937 rng(5);
  for (int trial = 0; trial < 500; ++trial) {
    std::uniform_real_distribution<double> share(0, 1);
    shares = {share(rng), share(rng) * (trial % 3 == 0 ? 0 : 1), share(rng)};
    const std::int64_t length = std::uniform_int_distribution<std::int64_t>(0, 5000)(rng);
    pieces = split(*tree.root(), parse_policy("adaptive"), -3, length - 3, context);
    std::int64_t next = -3;
    for (const Piece& piece : pieces) {
      CHECK(piece.begin == next);
      CHECK(piece.end > piece.begin);
      next = piece.end;
    }
    CHECK(next == length - 3);
  }
  // Shares that cannot be used split like static.
  for (const auto& bad : std::vector<std::vector<double>>{{}, {1, 1}, {0, 0, 0}, {NAN, 1, 1}, {-1, 1, 1}}) {
    shares = bad;
    CHECK(split(*tree.root(), parse_policy("adaptive"), 0, 8, context) ==
          split(*tree.root(), parse_policy("static"), 0, 8));
  }
}

TEST_CASE("split: any takes the idle leaf predicted fastest; ties and busy leaves as before") {
  Hierarchy tree;
  tree.add("node", LocationKind::Virtual, {}, "");
  for (const char* name : {"l0", "l1", "l2", "l3"}) tree.add(name, LocationKind::Cpu, {}, "node");
  std::map<std::string, double> predicted = {{"l0", 3.0}, {"l1", 1.0}, {"l2", 1.0}, {"l3", 0.5}};
  std::set<std::string> busy = {"l3"};
  SplitContext context;
  context.idle = [&](const Location& leaf) { return busy.count(leaf.name()) == 0; };
  context.load = [&](const Location& leaf) { return busy.count(leaf.name()) ? 1.0 : 0.0; };
  context.predicted_seconds = [&](const Location& leaf) { return predicted.at(leaf.name()); };
  auto chosen = [&] { return split(*tree.root(), parse_policy("any"), 0, 100, context).front().leaf->name(); };
  CHECK(chosen() == "l1");  // l3 is faster but busy; l1 and l2 tie: tree order
  busy.clear();
  CHECK(chosen() == "l3");
  predicted["l3"] = NAN;  // unknown counts as slowest
  CHECK(chosen() == "l1");
  // Nothing idle: the least loaded, then the fastest.
  busy = {"l0", "l1", "l2", "l3"};
  context.load = [&](const Location& leaf) { return leaf.name() == "l1" ? 5.0 : 2.0; };
  predicted = {{"l0", 3.0}, {"l1", 0.1}, {"l2", 1.0}, {"l3", 2.0}};
  CHECK(chosen() == "l2");
}

TEST_CASE("adaptive split file: written atomically, read back only for its key and leaves, damage ignored") {
  TemporaryDirectory dir;
  const std::string path = (dir.path / "adaptive-test.txt").string();
  const std::vector<std::string> leaves = {"cpu0", "opencl0"};
  write_adaptive_file(path, "key one", leaves, {0.25, 0.75});
  auto read = read_adaptive_file(path, "key one", leaves);
  REQUIRE(read);
  CHECK(*read == std::vector<double>{0.25, 0.75});
  CHECK_FALSE(read_adaptive_file(path, "key two", leaves));
  CHECK_FALSE(read_adaptive_file(path, "key one", {"cpu0", "opencl1"}));
  CHECK_FALSE(read_adaptive_file(path, "key one", {"cpu0"}));
  CHECK_FALSE(read_adaptive_file((dir.path / "missing.txt").string(), "key one", leaves));
  std::string text;
  {
    std::ifstream in(path);
    text.assign(std::istreambuf_iterator<char>(in), {});
  }
  for (std::size_t cut : {std::size_t(0), text.size() / 2, text.size() - 1}) {
    std::ofstream(path, std::ios::trunc) << text.substr(0, cut);
    CHECK_FALSE(read_adaptive_file(path, "key one", leaves));
  }
  std::string flipped = text;
  flipped[flipped.find("0.25")] = '9';
  std::ofstream(path, std::ios::trunc) << flipped;
  CHECK_FALSE(read_adaptive_file(path, "key one", leaves));
  // No temporary files are left behind.
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path)) files += entry.is_regular_file() ? 1 : 0;
  CHECK(files == 1);
}

TEST_CASE("AdaptivePlacement: even without a model, learns from synthetic times and a new placement reads it") {
  TemporaryDirectory dir;
  const Hierarchy tree = two_leaves();
  const auto leaves = tree.leaves(*tree.root());
  const ir::Kernel kernel;
  const AdaptiveKernel key{&kernel, 42};
  const std::vector<double> rate = {1.0, 3.0};  // rows per second of `slow` and `fast`
  const std::int64_t rows = 10000;
  std::vector<double> learned;
  {
    AdaptivePlacement placement(FeedbackOptions{}, dir.path.string());
    placement.set_model(std::nullopt, "node fingerprint");
    auto plan = placement.plan(key, *tree.root(), leaves, Shape(rows));
    CHECK(plan->shares == std::vector<double>{0.5, 0.5});  // no model: even
    for (int launch = 0; launch < 8; ++launch) {
      plan = placement.plan(key, *tree.root(), leaves, Shape(rows));
      const auto split_rows = rows_of(tree, plan->shares, rows);
      std::vector<double> seconds(2);
      for (std::size_t i = 0; i < 2; ++i) seconds[i] = double(split_rows[i]) / rows / rate[i];
      RegionStats record = synthetic_record(plan->leaves, split_rows, seconds);
      plan->annotate(record);
      CHECK(record.pieces[0].share == doctest::Approx(double(split_rows[0]) / rows));
      plan->finished(record);
    }
    const auto splits = placement.splits();
    REQUIRE(splits.size() == 1);
    CHECK(splits[0].launches == 8);
    CHECK(splits[0].changes >= 2);
    CHECK(splits[0].probes == 0);  // the even split, predicted twice as slow, is never probed
    CHECK_FALSE(splits[0].from_file);
    learned = splits[0].shares;
    CHECK(learned[0] == doctest::Approx(0.25).epsilon(0.05));
    // History: `any` now predicts from what was measured.
    const double fast = placement.predict_seconds(key, *tree.find("fast"), Shape(rows));
    const double slow = placement.predict_seconds(key, *tree.find("slow"), Shape(rows));
    CHECK(fast == doctest::Approx(1.0 / 3).epsilon(0.01));
    CHECK(slow == doctest::Approx(1.0).epsilon(0.01));
  }
  AdaptivePlacement restarted(FeedbackOptions{}, dir.path.string());
  restarted.set_model(std::nullopt, "node fingerprint");
  auto plan = restarted.plan(key, *tree.root(), leaves, Shape(rows + 5));  // the same extents class
  CHECK(plan->shares == learned);
  REQUIRE(restarted.splits().size() == 1);
  CHECK(restarted.splits()[0].from_file);
  // Another node, kernel or extents class learns apart.
  CHECK(restarted.plan(AdaptiveKernel{&kernel, 43}, *tree.root(), leaves, Shape(rows))->shares ==
        std::vector<double>{0.5, 0.5});
  CHECK(restarted.plan(key, *tree.root(), leaves, Shape(rows * 4))->shares == std::vector<double>{0.5, 0.5});
  AdaptivePlacement elsewhere(FeedbackOptions{}, dir.path.string());
  elsewhere.set_model(std::nullopt, "another node");
  CHECK(elsewhere.plan(key, *tree.root(), leaves, Shape(rows))->shares == std::vector<double>{0.5, 0.5});
  // "off" keeps nothing.
  AdaptivePlacement off(FeedbackOptions{}, "off");
  off.set_model(std::nullopt, "node fingerprint");
  CHECK(off.plan(key, *tree.root(), leaves, Shape(rows))->shares == std::vector<double>{0.5, 0.5});
}

TEST_CASE("AdaptivePlacement: on a saturated bus a probe finds the even split faster and holds it, while it lasts") {
  // Leaves that run 0.45 and 0.55 of the range per second: balancing
  // settles near 0.45 : 0.55 in about 1 s, where the even split takes 1.11 s.
  // Then the bus saturates: every split takes 1.5 times as long, except the
  // even one, whose leaves run in step and finish together in 1.4 s. Then
  // the bus is free again.
  SyntheticPlacement s(two_leaves(), 7);
  const std::int64_t rows = 100000;
  const std::vector<double> rate = {0.45, 0.55}, even = {0.5, 0.5};
  bool saturated = false;
  auto times = [&](const std::vector<std::int64_t>& split_rows) {
    std::vector<double> seconds(2);
    for (std::size_t i = 0; i < 2; ++i)
      seconds[i] = saturated && split_rows[0] == split_rows[1]
                       ? 1.4
                       : double(split_rows[i]) / rows / rate[i] * (saturated ? 1.5 : 1.0);
    return seconds;
  };
  std::vector<std::shared_ptr<const AdaptivePlan>> queued;  // planned, not yet run
  auto plan = [&] { queued.push_back(s.plan(rows)); };
  auto run = [&] {
    const auto next = queued.front();
    queued.erase(queued.begin());
    return s.run(next, rows, times);
  };
  auto launch = [&] { return s.launch(rows, times); };

  // A free bus: the probe finds the even split slower and goes back.
  for (int i = 0; i < 12; ++i) launch();
  CHECK(s.learned().probes == 1);
  CHECK_FALSE(s.learned().held);
  const std::vector<double> settled = s.learned().shares;
  CHECK(settled[0] == doctest::Approx(0.45).epsilon(0.05));
  // It stays there, without probing again, while the times stay.
  for (int i = 0; i < 20; ++i) CHECK(launch() == settled);
  CHECK(s.learned().probes == 1);

  // Saturated: the times drift up, a probe runs, the even split wins and holds.
  saturated = true;
  for (int i = 0; i < 10; ++i) launch();
  CHECK(s.learned().probes == 2);
  CHECK(s.learned().held);
  CHECK(s.learned().shares == even);
  for (int i = 0; i < 20; ++i) CHECK(launch() == even);
  CHECK(s.learned().probes == 2);

  // Free again: the held split's times drift down; balancing resumes and the
  // next probe keeps the balanced split.
  saturated = false;
  for (int i = 0; i < 20; ++i) launch();
  CHECK_FALSE(s.learned().held);
  CHECK(s.learned().probes == 3);
  CHECK(s.learned().shares[0] == doctest::Approx(0.45).epsilon(0.05));

  // A launch planned before a probe began is not taken for one of its launches.
  saturated = true;
  launch();
  plan();
  plan();
  run();  // the second slow launch: the probe begins, the next launch is to take the even split...
  CHECK(s.learned().shares == even);
  CHECK(run() == settled);            // ...but this one was planned before and took the settled split
  CHECK(s.learned().shares == even);  // the probe still waits for its first even launch
  for (int i = 0; i < 10; ++i) launch();
  CHECK(s.learned().probes == 4);
  CHECK(s.learned().held);

  // With probing off, the balanced split stays whatever the bus does.
  FeedbackOptions off;
  off.probe = false;
  SyntheticPlacement balancing_only(two_leaves(), 7, off);
  for (int round = 0; round < 30; ++round)
    balancing_only.launch(rows, [&](const std::vector<std::int64_t>& split_rows) {
      std::vector<double> seconds(2);
      for (std::size_t i = 0; i < 2; ++i) seconds[i] = double(split_rows[i]) / rows / rate[i] * 1.5;
      return seconds;
    });
  CHECK(balancing_only.learned().probes == 0);
  CHECK(balancing_only.learned().shares[0] == doctest::Approx(0.45).epsilon(0.05));
}

TEST_CASE("AdaptivePlacement: a probe that the machine changes under starts again") {
  // Leaves at 0.45 and 0.55 of the range per second. For the first three
  // launches the machine is twice as slow (other work), and the even split
  // no better than its rates say; from the fourth on it is as fast as the
  // rates say, except the even split, which takes 0.9 s. The probe begins
  // at the third launch (the even split, slow machine); its first launch of
  // the settled split (fast machine) takes half the time it took before the
  // probe, so the probe starts again, and then finds the even split faster.
  SyntheticPlacement s(two_leaves(), 11);
  const std::int64_t rows = 100000;
  const std::vector<double> rate = {0.45, 0.55};
  for (int launch = 1; launch <= 10; ++launch) {
    const bool slow = launch <= 3;
    const auto shares = s.launch(rows, [&](const std::vector<std::int64_t>& split_rows) {
      const bool even = split_rows[0] == split_rows[1];
      std::vector<double> seconds(2);
      for (std::size_t i = 0; i < 2; ++i)
        seconds[i] = !slow && even ? 0.9 : double(split_rows[i]) / rows / rate[i] * (slow ? 2.0 : 1.0);
      return seconds;
    });
    if (launch == 3) CHECK(shares == std::vector<double>{0.5, 0.5});  // the probe's first launch
  }
  CHECK(s.learned().probes == 1);
  CHECK(s.learned().held);
  CHECK(s.learned().shares == std::vector<double>{0.5, 0.5});
}

TEST_CASE("AdaptivePlacement: one slow launch during a probe starts it again but is not what later ones are held to") {
  // Leaves at 0.4 and 0.6 of the range per second, a free bus: the even
  // split takes 1.25 s, the balanced one 1 s (at most 1.08 s within the dead
  // band). The first launch of the balanced split in the probe is slowed 3x
  // by other work, once: the probe starts again, and its next pair decides.
  // Were the slow launch the reference, the next one would start it again.
  SyntheticPlacement s(two_leaves(), 13);
  const std::int64_t rows = 100000;
  const std::vector<double> rate = {0.4, 0.6};
  int launches = 0, probe_even_launches = 0;
  bool slowed = false;
  while ((launches == 0 || s.learned().probes == 0) && launches < 40) {
    launches += 1;
    s.launch(rows, [&](const std::vector<std::int64_t>& split_rows) {
      const bool even = split_rows[0] == split_rows[1];
      if (even && launches > 1) probe_even_launches += 1;
      const bool slow = !even && probe_even_launches == 1 && !slowed;
      slowed = slowed || slow;
      std::vector<double> seconds(2);
      for (std::size_t i = 0; i < 2; ++i) seconds[i] = double(split_rows[i]) / rows / rate[i] * (slow ? 3.0 : 1.0);
      return seconds;
    });
  }
  CHECK(slowed);
  CHECK(s.learned().probes == 1);
  CHECK_FALSE(s.learned().held);
  CHECK(probe_even_launches == 2);
}

TEST_CASE("AdaptivePlacement: a split that moves a few points is not probed again; one that moves further is") {
  // Leaves whose rates always add up to the whole range a second, so the
  // balanced split always takes 1 s and the launch time never drifts: only
  // the split's moves can call for a probe.
  SyntheticPlacement s(two_leaves(), 15);
  const std::int64_t rows = 100000;
  std::vector<double> rate = {0.4, 0.6};
  auto launches = [&](int count) {
    for (int launch = 0; launch < count; ++launch)
      s.launch(rows, [&](const std::vector<std::int64_t>& split_rows) {
        std::vector<double> seconds(2);
        for (std::size_t i = 0; i < 2; ++i) seconds[i] = double(split_rows[i]) / rows / rate[i];
        return seconds;
      });
  };
  launches(16);
  CHECK(s.learned().probes == 1);
  const int changes = s.learned().changes;
  rate = {0.43, 0.57};  // the split moves about three points
  launches(16);
  CHECK(s.learned().changes > changes);
  CHECK(s.learned().shares[0] == doctest::Approx(0.43).epsilon(0.05));
  CHECK(s.learned().probes == 1);
  rate = {0.35, 0.65};  // eight points: the even split may have changed sides
  launches(16);
  CHECK(s.learned().shares[0] == doctest::Approx(0.35).epsilon(0.08));
  CHECK(s.learned().probes == 2);
  CHECK_FALSE(s.learned().held);
}

TEST_CASE("AdaptivePlacement: three leaves on a saturated bus: the probe compares thirds with the balanced split") {
  // Leaves at 0.3, 0.3 and 0.4 of the range per second balance at 0.3 :
  // 0.3 : 0.4 in 1 s; thirds take 1.11 s, except on a saturated bus, where
  // the leaves of an even split run in step and finish in 0.9 s.
  Hierarchy tree = two_leaves();
  tree.add("third", LocationKind::Cpu, {}, "node");
  SyntheticPlacement s(std::move(tree), 9);
  const std::int64_t rows = 90000;
  const std::vector<double> rate = {0.3, 0.3, 0.4}, thirds(3, 1.0 / 3);
  for (const bool saturated : {false, true}) {
    CAPTURE(saturated);
    for (int launch = 0; launch < 16; ++launch)
      s.launch(rows, [&](const std::vector<std::int64_t>& split_rows) {
        const bool even = split_rows[0] == split_rows[1] && split_rows[1] == split_rows[2];
        std::vector<double> seconds(3);
        for (std::size_t i = 0; i < 3; ++i)
          seconds[i] = saturated && even ? 0.9 : double(split_rows[i]) / rows / rate[i] * (saturated ? 1.5 : 1.0);
        return seconds;
      });
    // Free: from thirds (no model) to balanced, one probe finds thirds slower.
    // Saturated: the times drift, a second probe finds thirds faster.
    const AdaptiveSplit learned = s.learned();
    CHECK(learned.probes == (saturated ? 2 : 1));
    CHECK(learned.held == saturated);
    if (saturated) {
      CHECK(learned.shares == thirds);
    } else {
      for (std::size_t i = 0; i < 3; ++i) CHECK(learned.shares[i] == doctest::Approx(rate[i]).epsilon(0.08));
    }
  }
}

TEST_CASE("extents_class_of: the bit width of each extent") {
  CHECK(extents_class_of(Shape(0)) == "b0");
  CHECK(extents_class_of(Shape(1)) == "b1");
  CHECK(extents_class_of(Shape(1 << 20)) == "b21");
  CHECK(extents_class_of(Shape((1 << 21) - 1)) == "b21");
  CHECK(extents_class_of(Shape(1000, 3)) == "b10x2");
}

}  // namespace canopy

namespace canopy {

TEST_CASE("CANOPY_DUMP=cost writes each kernel's cost per point when it is first compiled") {
  const auto dir = std::filesystem::temp_directory_path() / ("canopy-dump-cost-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  {
    canopy::testing::ScopedSetting dump("CANOPY_DUMP", "cost"), dump_dir("CANOPY_DUMP_DIR", dir.c_str());
    Runtime rt;
    Kernel scale("dump_cost_scale",
                 [](Out<double> a, In<double> b) {
                   Idx i = index(0);
                   a[i] = 2.0 * b[i];
                 },
                 {"a", "b"});
    auto a = rt.array<double>(1000), b = rt.array<double>(1000);
    rt.region(scale).over(1000).launch(a, b);
    rt.pause();
  }
  std::ifstream in(dir / "dump_cost_scale.cost");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::filesystem::remove_all(dir);
  CHECK(text.rfind("kernel dump_cost_scale", 0) == 0);
  CHECK(text.find("intensity") != std::string::npos);
}

}  // namespace canopy
