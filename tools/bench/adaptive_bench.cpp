// canopy-bench adaptive: how the adaptive policy's split converges on two
// leaves of different speed, beside the best fixed split. For a STREAM triad
// and a 2-D 5-point stencil, in one run, --launches rounds (20) of
//  - one launch of each split percentage:[p, 100-p], p = 0, 10, ..., 100 (p is
//    the first leaf's share), and
//  - the split the next adaptive launch will take, as a fixed percentage (a
//    control: the same split without the policy), and
//  - the next adaptive launch (from the model's split, then learning),
// interleaved so that other work on the machine disturbs both alike (the
// adaptive launch and its control take a different place among the sweep's
// launches each round). It
// prints each split's median time, each adaptive launch's split, each leaf's
// predicted time, kernel time (ran) and finishing time from the launch
// (done, what the policy balances), the launch's wall time and the sweep's
// time at its split; then the best sweep time, the adaptive steady state
// (the median of the launches after the fifth: the issue allows five to get
// there), their ratio (the issue asks for at most 1.10), judged round by
// round: the median over those rounds of the adaptive launch's time over the
// time of the split that is best over them, in the same round. The VM's
// memory bandwidth doubles or halves within seconds as other guests come and
// go, so a median over rounds mixes fast and slow ones in proportions that
// differ between the two sides; within a round (about 25 launches, a fraction
// of a second) both see the same machine. The unpaired ratios (steady state
// over the best split's median over the same rounds, and over the whole
// run's) are printed too. Then the first launch from which the adaptive
// launches take at most 10% longer than the fastest split of their own round
// (the median of that launch's ratio and the next two's; the issue asks for
// launch 5 at the latest). Each round's own best is the yardstick because the
// machine's speed moves between rounds (other virtual machines' memory
// traffic halved the triad's speed for several rounds at a time here), and
// the sweep's median interpolated at the adaptive split, printed beside it,
// overstates the time near the best split, where the curve has a kink.
//
//   canopy-bench adaptive                 # cpu0 (one core) and opencl0 (PoCL, one thread)
//   canopy-bench adaptive --resume        # start from the split learned by an earlier run
//
// Without CANOPY_DEVICES, CANOPY_CPU_LEAVES and POCL_MAX_PTHREAD_COUNT it sets
// CANOPY_DEVICES=cpu,opencl, CANOPY_CPU_LEAVES=core and POCL_MAX_PTHREAD_COUNT=1
// (cpu0 is one core, opencl0 PoCL on one thread of its own, kept off cpu0's
// core). The tree is cut down to the two leaves, below
// their common parent. Unless --resume is given, learned splits go to a fresh
// temporary cache directory (the machine model is copied there from the
// usual one when it has it), so that every run starts from the model.
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <canopy/canopy.hpp>
#include <canopy/runtime/adaptive.hpp>
#include <canopy/runtime/machine_model.hpp>

#include <canopy/runtime/internal/engine_access.hpp>
#include "report.hpp"

namespace canopy::bench {

namespace {

/// Wall seconds of one launch + pause.
double seconds_of(Runtime& rt, const std::function<void()>& launch) {
  const auto start = std::chrono::steady_clock::now();
  launch();
  rt.pause();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n == 0 ? 0.0 : n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

struct Outcome {
  std::string kernel;
  double best_sweep = 0;  ///< the best split's median over all rounds
  int best_percent = 0;
  double best_sweep_tail = 0;  ///< the best split's median over the steady rounds
  int best_percent_tail = 0;
  double steady = 0;  ///< the adaptive launches' median over the steady rounds
  /// The median over the steady rounds of the adaptive launch's time over the
  /// best split's (best_percent_tail) in the same round: what is judged.
  double paired = 0;
  /// The first launch (1-based; -1: never) from which the adaptive launch's
  /// time is within 10% of its round's best split: the median ratio over it
  /// and the next two launches, so that one lucky launch does not count.
  int within_launch = -1;
};

/// "percentage:[p,100-p]" for the first leaf's percentage p.
std::string percentage_policy(double p) {
  char text[96];
  std::snprintf(text, sizeof text, "percentage:[%.6f,%.6f]", p, 100.0 - p);
  return text;
}

/// The best sweep time interpolated at the first leaf's percentage p.
double sweep_time_at(const std::vector<double>& sweep, double p) {
  const double position = std::clamp(p / 10.0, 0.0, static_cast<double>(sweep.size() - 1));
  const auto low = static_cast<std::size_t>(std::floor(position));
  const std::size_t high = std::min(low + 1, sweep.size() - 1);
  return sweep[low] + (sweep[high] - sweep[low]) * (position - static_cast<double>(low));
}

/// One kernel: `launches` rounds, each timing one launch of every sweep split
/// and then the next adaptive launch, so that other work on the machine
/// disturbs both alike. Every timed launch follows an untimed one with the
/// same split (the adaptive launch: a percentage launch with the split it is
/// about to take), so that no timed launch pays for moving data between
/// splits. `launch(policy)` queues one region.
Outcome compare(Runtime& rt, const std::string& name, const std::pair<std::string, std::string>& leaves, int launches,
                const std::function<void(const std::string&)>& launch, std::vector<Row>& rows) {
  Outcome outcome;
  outcome.kernel = name;
  std::printf("\n== %s over %s and %s: %d rounds of 11 sweep launches and one adaptive launch\n", name.c_str(),
              leaves.first.c_str(), leaves.second.c_str(), launches);
  std::vector<std::vector<double>> sweep_times(11);
  std::vector<double> walls, shares, fixed_times, round_best;
  std::vector<std::array<double, 6>> pieces;  // predicted, ran and finished, per leaf
  for (int k = 1; k <= launches; ++k) {
    double best_of_round = INFINITY;
    auto sweep_launch = [&](int p) {
      const std::string policy = percentage_policy(p);
      seconds_of(rt, [&] { launch(policy); });
      const double seconds = seconds_of(rt, [&] { launch(policy); });
      sweep_times[static_cast<std::size_t>(p / 10)].push_back(seconds);
      best_of_round = std::min(best_of_round, seconds);
    };
    auto adaptive_launch = [&] {
      double same_split = NAN;  // the split the adaptive launch is about to take, as a fixed percentage
      for (const AdaptiveSplit& split : canopy::runtime::engine_of(rt).adaptive().splits())
        if (split.kernel == name) {
          const std::string fixed = percentage_policy(split.shares[0] * 100);
          seconds_of(rt, [&] { launch(fixed); });
          same_split = seconds_of(rt, [&] { launch(fixed); });
        }
      fixed_times.push_back(same_split);
      walls.push_back(seconds_of(rt, [&] { launch("adaptive"); }));
      const RegionStats region = rt.stats().recent.back();
      double share = 0;
      std::array<double, 6> piece{};
      for (const PieceStats& stats : region.pieces) {
        const std::size_t which = stats.leaf == leaves.first ? 0 : 3;
        if (which == 0) share += stats.share;
        piece[which] += stats.predicted_seconds;
        piece[which + 1] += stats.run_seconds;
        piece[which + 2] = std::max(piece[which + 2], stats.finished_seconds);
      }
      shares.push_back(share * 100);
      pieces.push_back(piece);
    };
    // The adaptive launch takes a different place among the sweep's each
    // round (7 and 12 are coprime), so that a slow stretch of the machine
    // within a round does not always fall on it, or never.
    const int adaptive_slot = (k * 7) % 12;
    for (int slot = 0; slot < 12; ++slot) {
      if (slot == adaptive_slot)
        adaptive_launch();
      else
        sweep_launch(10 * (slot < adaptive_slot ? slot : slot - 1));
    }
    round_best.push_back(best_of_round);
  }
  std::vector<double> sweep;
  std::printf("%-10s %12s\n", ("% " + leaves.first).c_str(), "median ms");
  outcome.best_sweep = INFINITY;
  for (int p = 0; p <= 100; p += 10) {
    const double time = median(sweep_times[static_cast<std::size_t>(p / 10)]);
    sweep.push_back(time);
    std::printf("%-10d %12.3f\n", p, time * 1e3);
    rows.push_back(
        Row().set("kernel", name).set("phase", "sweep").set("first_percent", double(p)).set("seconds", time));
    if (time < outcome.best_sweep) {
      outcome.best_sweep = time;
      outcome.best_percent = p;
    }
  }
  std::printf("%-6s %8s %12s %7s %7s %12s %7s %7s %8s %12s %13s %13s\n", "launch", ("% " + leaves.first).c_str(),
              (leaves.first + " pred ms").c_str(), "ran", "done", (leaves.second + " pred ms").c_str(), "ran", "done",
              "wall ms", "sweep there", "same fixed ms", "round best ms");
  for (std::size_t k = 0; k < walls.size(); ++k) {
    const double there = sweep_time_at(sweep, shares[k]);
    std::printf("%-6zu %8.1f %12.3f %7.3f %7.3f %12.3f %7.3f %7.3f %8.3f %12.3f %13.3f %13.3f\n", k + 1, shares[k],
                pieces[k][0] * 1e3, pieces[k][1] * 1e3, pieces[k][2] * 1e3, pieces[k][3] * 1e3, pieces[k][4] * 1e3,
                pieces[k][5] * 1e3, walls[k] * 1e3, there * 1e3, fixed_times[k] * 1e3, round_best[k] * 1e3);
    rows.push_back(Row()
                       .set("kernel", name)
                       .set("phase", "adaptive")
                       .set("launch", double(k + 1))
                       .set("first_percent", shares[k])
                       .set("predicted_first", pieces[k][0])
                       .set("ran_first", pieces[k][1])
                       .set("finished_first", pieces[k][2])
                       .set("predicted_second", pieces[k][3])
                       .set("ran_second", pieces[k][4])
                       .set("finished_second", pieces[k][5])
                       .set("seconds", walls[k])
                       .set("sweep_seconds_there", there)
                       .set("round_best_seconds", round_best[k]));
  }
  for (std::size_t k = 0; k < walls.size() && outcome.within_launch < 0; ++k) {
    std::vector<double> ratios;
    for (std::size_t j = k; j < std::min(k + 3, walls.size()); ++j) ratios.push_back(walls[j] / round_best[j]);
    if (median(ratios) <= 1.10) outcome.within_launch = int(k + 1);
  }
  // The steady rounds: those after the five the issue allows to get there.
  const std::size_t tail = walls.size() > 5 ? walls.size() - 5 : walls.size();
  auto last = [&](const std::vector<double>& times) {
    return median(std::vector<double>(times.end() - static_cast<std::ptrdiff_t>(tail), times.end()));
  };
  outcome.steady = last(walls);
  // The same comparison within the last rounds only: the machine's other
  // work changes over a run, and these launches ran side by side.
  outcome.best_sweep_tail = INFINITY;
  for (int p = 0; p <= 100; p += 10) {
    const double time = last(sweep_times[static_cast<std::size_t>(p / 10)]);
    if (time < outcome.best_sweep_tail) {
      outcome.best_sweep_tail = time;
      outcome.best_percent_tail = p;
    }
  }
  std::vector<double> paired;
  const auto& best_times = sweep_times[static_cast<std::size_t>(outcome.best_percent_tail / 10)];
  for (std::size_t k = walls.size() - tail; k < walls.size(); ++k) paired.push_back(walls[k] / best_times[k]);
  outcome.paired = median(paired);
  std::vector<double> fixed_tail(fixed_times.end() - static_cast<std::ptrdiff_t>(tail), fixed_times.end());
  std::erase_if(fixed_tail, [](double t) { return std::isnan(t); });
  std::printf(
      "last %zu rounds: best sweep %.3f ms (%d%% on %s), adaptive %.3f ms, the same split fixed %.3f ms: "
      "ratio %.3f; round by round %.3f (%s)\n",
      tail, outcome.best_sweep_tail * 1e3, outcome.best_percent_tail, leaves.first.c_str(), outcome.steady * 1e3,
      median(fixed_tail) * 1e3, outcome.steady / outcome.best_sweep_tail, outcome.paired,
      outcome.paired <= 1.10 ? "within 10%" : "NOT within 10%");
  for (const AdaptiveSplit& split : canopy::runtime::engine_of(rt).adaptive().splits())
    if (split.kernel == name)
      std::printf("learned split: %s %.1f%%, %s %.1f%% (model: %.1f%%, %d changes in %d launches, %d probes%s)\n",
                  split.leaves[0].c_str(), split.shares[0] * 100, split.leaves[1].c_str(), split.shares[1] * 100,
                  split.model_shares.empty() ? NAN : split.model_shares[0] * 100, split.changes, split.launches,
                  split.probes, split.held ? ", holding the even split" : "");
  rows.push_back(Row()
                     .set("kernel", name)
                     .set("phase", "summary")
                     .set("steady_rounds", double(tail))
                     .set("steady_seconds", outcome.steady)
                     .set("best_first_percent", double(outcome.best_percent_tail))
                     .set("best_seconds", outcome.best_sweep_tail)
                     .set("round_by_round_ratio", outcome.paired)
                     .set("within_launch", double(outcome.within_launch)));
  const double ratio = outcome.steady / outcome.best_sweep;
  std::printf(
      "%s: best sweep %.3f ms (%d%% on %s); adaptive steady state %.3f ms (median of the last %zu); "
      "ratio %.3f; round by round %.3f (%s); within 10%% of its round's best split from launch %d (%s)\n",
      name.c_str(), outcome.best_sweep * 1e3, outcome.best_percent, leaves.first.c_str(), outcome.steady * 1e3, tail,
      ratio, outcome.paired, outcome.paired <= 1.10 ? "within 10%" : "NOT within 10%", outcome.within_launch,
      outcome.within_launch >= 1 && outcome.within_launch <= 5 ? "<= 5" : "NOT <= 5");
  return outcome;
}

}  // namespace

int adaptive_command(int argc, char** argv) {
  Args args(argc, argv, {"--resume"});
  const std::int64_t n = args.count("--size", std::int64_t{1} << 24);
  const std::int64_t rows = args.count("--rows", 2048), cols = args.count("--cols", 4096);
  const int launches = static_cast<int>(args.count("--launches", 20));
  setenv("CANOPY_DEVICES", "cpu,opencl", 0);
  setenv("CANOPY_CPU_LEAVES", "core", 0);
  // PoCL on one thread, so that the two leaves run on different cores: with
  // a thread per core, PoCL shares cpu0's core and no split of a memory-bound
  // kernel beats cpu0 alone on a two-core machine (set it to see that).
  setenv("POCL_MAX_PTHREAD_COUNT", "1", 0);
  const std::string usual_cache = machine_model_directory();
  std::filesystem::path fresh;
  if (!args.has("--resume")) {
    fresh = std::filesystem::temp_directory_path() / ("canopy-bench-adaptive-" + std::to_string(::getpid()));
    std::filesystem::create_directories(fresh);
    setenv("CANOPY_CACHE_DIR", fresh.c_str(), 1);
  }

  // PoCL's thread kept off cpu0's core (report.hpp).
  Runtime rt = runtime_off_first_core();
  const auto leaves = pick_cpu_and_device(rt.hierarchy(), args.get("--leaves", ""), "adaptive");
  keep_only_leaves(rt, leaves);
  const std::string at = common_parent(rt.hierarchy(), leaves);
  std::printf("%sregions run at %s\n", rt.hierarchy().to_text().c_str(), at.c_str());
  if (!fresh.empty() && usual_cache != "off") {
    // The machine model, if the usual cache directory has it for this tree.
    const std::string fingerprint = fingerprint_of(rt);
    std::error_code ignored;
    std::filesystem::copy_file(machine_model_path(usual_cache, fingerprint),
                               machine_model_path(fresh.string(), fingerprint), ignored);
  }
  const MachineModel model = MachineModel::load_or_calibrate(rt);  // the runtime reads the same file
  std::printf("%s", model.describe().c_str());

  Kernel triad("triad",
               [](Out<double> a, In<double> b, In<double> c, Val<double> s) {
                 Idx i = index(0);
                 a[i] = b[i] + s * c[i];
               },
               {"a", "b", "c", "s"});
  Kernel stencil("stencil",
                 [](Out<double, 2> out, In<double, 2> in) {
                   Idx i = index(0), j = index(1);
                   out(i + 1, j + 1) =
                       0.25 * (in(i, j + 1) + in(i + 2, j + 1) + in(i + 1, j) + in(i + 1, j + 2)) - in(i + 1, j + 1);
                 },
                 {"out", "in"});
  auto a = rt.array<double>(n, named("a")), b = rt.array<double>(n, named("b")), c = rt.array<double>(n, named("c"));
  auto grid_in = rt.array<double, 2>(Shape(rows, cols), named("in"));
  auto grid_out = rt.array<double, 2>(Shape(rows, cols), named("out"));
  {
    auto hb = b.host(), hc = c.host(), ha = a.host();
    for (std::int64_t i = 0; i < n; ++i) ha[i] = hb[i] = hc[i] = 1.0 + static_cast<double>(i % 7);
    auto hin = grid_in.host(), hout = grid_out.host();
    for (std::int64_t i = 0; i < rows; ++i)
      for (std::int64_t j = 0; j < cols; ++j) hin(i, j) = hout(i, j) = static_cast<double>((i * 31 + j * 17) % 101);
  }

  std::vector<Row> results;
  std::vector<Outcome> outcomes;
  outcomes.push_back(compare(
      rt, "triad", leaves, launches,
      [&](const std::string& policy) { rt.region(triad).over(n).at(at).policy(policy).launch(a, b, c, 0.4); },
      results));
  outcomes.push_back(compare(
      rt, "stencil", leaves, launches,
      [&](const std::string& policy) {
        rt.region(stencil).over(rows - 2, cols - 2).at(at).policy(policy).launch(grid_out, grid_in);
      },
      results));

  std::printf("\n%-8s %14s %14s %8s %16s %8s %14s %14s\n", "kernel", "best sweep ms", "adaptive ms", "ratio",
              "best steady ms", "ratio", "round by round", "within 10% at");
  bool met = true;
  for (const Outcome& o : outcomes) {
    std::printf("%-8s %14.3f %14.3f %8.3f %16.3f %8.3f %14.3f %14d\n", o.kernel.c_str(), o.best_sweep * 1e3,
                o.steady * 1e3, o.steady / o.best_sweep, o.best_sweep_tail * 1e3, o.steady / o.best_sweep_tail,
                o.paired, o.within_launch);
    met = met && o.paired <= 1.10 && o.within_launch >= 1 && o.within_launch <= 5;
  }
  std::printf("%s\n", met ? "adaptive: within 10% of the best split, by launch 5, for both kernels"
                          : "adaptive: NOT within 10% of the best split by launch 5 for every kernel");
  if (args.has("--json")) write_json(args.get("--json", ""), results);
  if (!fresh.empty()) {
    std::error_code ignored;
    std::filesystem::remove_all(fresh, ignored);
  }
  return met ? 0 : 1;
}

}  // namespace canopy::bench
