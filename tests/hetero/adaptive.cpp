// The adaptive and any policies through the real runtime, on a CPU leaf and
// a PoCL device: every launch runs every row once while the split moves;
// the split settles; rt.stats() shows each piece's share, predicted and
// measured time; a new Runtime on the same cache directory starts from the
// learned split; `any` picks the leaf the model predicts fastest. Timings
// on a shared machine are noisy, so the bounds on convergence are generous;
// the feedback rule itself is tested with synthetic times in
// tests/runtime/adaptive.cpp.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <tuple>
#include <vector>

#include <canopy/canopy.hpp>
#include <canopy/ir/passes/optimize.hpp>
#include <canopy/jit/cpu_compiler.hpp>
#include <canopy/runtime/adaptive.hpp>
#include <canopy/runtime/machine_model.hpp>

#include <canopy/runtime/internal/engine_access.hpp>
#include "hetero_support.hpp"
#include "scoped_setting.hpp"
#include "temporary_folder.hpp"

namespace canopy::hetero_tests {
namespace {

/// CANOPY_CACHE_DIR set to a fresh directory for the test's lifetime (then
/// restored and the directory removed). The process's CPU compiler keeps
/// the cache directory it found first (jit::CpuCompiler::shared): it is
/// made before the setting (members are made in order), so that it keeps
/// the suite's, not this one.
struct CacheDirectory {
  const jit::CpuCompiler& compiler = jit::CpuCompiler::shared();
  canopy::testing::TemporaryFolder folder{"adaptive-hetero"};
  const std::filesystem::path& path = folder.path();
  canopy::testing::ScopedSetting setting{"CANOPY_CACHE_DIR", path.c_str()};
};

using Accumulate = Kernel<void(InOut<double>, In<double>)>;

Accumulate accumulate_kernel() {
  return Accumulate("adaptive_accumulate",
                    [](InOut<double> a, In<double> b) {
                      Idx i = index(0);
                      a[i] = a[i] + b[i];
                    },
                    {"a", "b"});
}

constexpr std::int64_t kRows = std::int64_t{1} << 20;

/// The rows `shares` give each of two leaves (as split() rounds them).
std::int64_t first_rows(const std::vector<double>& shares, std::int64_t rows) {
  return static_cast<std::int64_t>(std::llround(static_cast<double>(rows) * shares[0] / (shares[0] + shares[1])));
}

/// Runs `launches` adaptive launches of accumulate over a and b (b all ones,
/// a adding up), checking each launch's pieces and statistics; returns cpu0's
/// share launch by launch. Afterwards every element of `a` must have grown by
/// `launches`: no row dropped or run twice while the split moved.
std::vector<double> run_adaptive(Runtime& rt, int launches) {
  auto a = rt.array<double>(kRows, named("a"));
  auto b = rt.array<double>(kRows, named("b"));
  {
    auto hb = b.host();
    for (std::int64_t i = 0; i < kRows; ++i) hb[i] = 1.0;
  }
  const Accumulate accumulate = accumulate_kernel();
  std::vector<double> cpu_share;
  for (int launch = 0; launch < launches; ++launch) {
    rt.region(accumulate).over(kRows).policy("adaptive").launch(a, b);
    rt.pause();
    const RegionStats region = last_region(rt);
    REQUIRE(region.pieces.size() >= 1);
    std::int64_t next = 0;
    double shares = 0;
    for (const PieceStats& piece : region.pieces) {
      CHECK(piece.begin == next);
      next = piece.end;
      shares += piece.share;
      CHECK(piece.share == doctest::Approx(double(piece.end - piece.begin) / kRows));
      CHECK(piece.predicted_seconds > 0);
      CHECK(piece.run_seconds > 0);
      CHECK(piece.run_seconds <= piece.seconds);
      CHECK(piece.seconds <= piece.finished_seconds);
    }
    CHECK(next == kRows);
    CHECK(shares == doctest::Approx(1.0));
    cpu_share.push_back(region.pieces.front().leaf == "cpu0" ? region.pieces.front().share : 0.0);
  }
  auto ha = a.host();
  std::int64_t wrong = 0;
  for (std::int64_t i = 0; i < kRows; ++i) wrong += ha[i] == double(launches) ? 0 : 1;
  CHECK(wrong == 0);
  return cpu_share;
}

std::string shares_text(const std::vector<double>& shares) {
  std::string text;
  for (double s : shares) text += std::to_string(s).substr(0, 5) + " ";
  return text;
}

/// A machine model in which `leaves` are alike: every kernel's first split
/// is even, and what the splits become is learned from the time source
/// alone. A calibrated model would make the test depend on the node: here
/// cpu0 streams the test's 2 MiB arrays from its caches faster than PoCL
/// starts a launch, and the model rightly puts every region on cpu0.
MachineModel even_model(const Hierarchy& tree, const std::vector<std::string>& leaves) {
  MachineModel model;
  model.source = "the test's";
  for (const auto& name : leaves) {
    LeafModel leaf;
    leaf.leaf = name;
    leaf.kind = tree.find(name)->kind();
    leaf.cores = 2;
    leaf.vector_bytes = leaf.line_bytes = 64;
    leaf.gflops_f64 = leaf.gflops_f32 = 10;
    leaf.bandwidth_gbs = leaf.stencil_bandwidth_gbs = 10;
    leaf.access_gps = 10;
    leaf.launch_seconds = 1e-5;
    leaf.calibrated = true;
    model.leaves.push_back(leaf);
  }
  return model;
}

}  // namespace

TEST_CASE("hetero: adaptive over cpu0 and opencl0 converges on leaves of known speed; a restart starts learned" *
          doctest::test_suite("opencl")) {
  CacheDirectory cache;
  // Noiseless leaves: cpu0 runs a row in 1 ns, opencl0 in 3 ns, so the
  // balanced split gives cpu0 3/4 of the rows.
  auto synthetic = [](const PieceStats& piece) {
    return double(piece.end - piece.begin) * (piece.leaf == "cpu0" ? 1e-9 : 3e-9);
  };
  std::vector<double> learned;
  std::string key;
  {
    Runtime rt;
    const Hierarchy discovered = rt.hierarchy();
    if (!has_leaves(discovered, {"cpu0", accelerator(0)})) return;
    use_leaves(rt, discovered, {"cpu0", accelerator(0)});
    // The test's model: one calibrated under the suite's load once rated the
    // emulated CUDA device's launches so slow that adaptive gave it no rows,
    // and with no time of its own it never learned otherwise.
    canopy::runtime::engine_of(rt).set_machine_model_source([tree = rt.hierarchy()] {
      return even_model(tree, {"cpu0", accelerator(0)});
    });
    canopy::runtime::engine_of(rt).adaptive().set_time_source(synthetic);
    constexpr int kLaunches = 12;
    const std::vector<double> cpu_share = run_adaptive(rt, kLaunches);
    CHECK(rt.stats().to_text().find("(share ") != std::string::npos);
    // The regions of the model's source (a calibration, where there is one)
    // are the runtime's and stay out of the statistics.
    CHECK(rt.stats().regions == kLaunches);
    for (const RegionStats& region : rt.stats().recent) CHECK(region.kernel == "adaptive_accumulate");
    const std::vector<AdaptiveSplit> splits = canopy::runtime::engine_of(rt).adaptive().splits();
    REQUIRE(splits.size() == 1);
    CHECK(splits[0].leaves == std::vector<std::string>{"cpu0", accelerator(0)});
    CHECK(splits[0].launches == kLaunches);
    CHECK_FALSE(splits[0].from_file);
    CHECK(splits[0].probes == 0);  // the even split would take twice as long: never probed
    REQUIRE(splits[0].model_shares.size() == 2);
    CHECK(cpu_share[0] == doctest::Approx(splits[0].model_shares[0]).epsilon(1e-5));  // the model's split first
    MESSAGE("cpu0's share launch by launch: " << shares_text(cpu_share) << "; changes " << splits[0].changes);
    // Within the dead band (times within 8%) by the fifth launch, and then it stays put.
    int settled = -1;
    for (std::size_t launch = 0; launch < cpu_share.size() && settled < 0; ++launch) {
      const double cpu_time = cpu_share[launch] * 1e-9, device_time = (1 - cpu_share[launch]) * 3e-9;
      if (std::max(cpu_time, device_time) / std::min(cpu_time, device_time) - 1 <= 0.08) settled = int(launch);
    }
    CHECK(settled >= 0);
    CHECK(settled <= 4);
    for (std::size_t launch = std::size_t(std::max(settled, 0)) + 1; launch < cpu_share.size(); ++launch)
      CHECK(cpu_share[launch] == cpu_share[launch - 1]);
    CHECK(cpu_share.back() == doctest::Approx(0.75).epsilon(0.03));
    learned = splits[0].shares;
    key = splits[0].key;
  }
  // The learned split is in the cache directory...
  bool found = false;
  for (const auto& entry : std::filesystem::directory_iterator(cache.path))
    found = found || entry.path().filename().string().rfind("adaptive-", 0) == 0;
  CHECK(found);
  // ...and a new Runtime's first launch takes it.
  Runtime rt;
  use_leaves(rt, rt.hierarchy(), {"cpu0", accelerator(0)});
  auto a = rt.array<double>(kRows, named("a"));
  auto b = rt.array<double>(kRows, named("b"));
  rt.region(accumulate_kernel()).over(kRows).policy("adaptive").launch(a, b);
  rt.pause();
  const std::vector<AdaptiveSplit> splits = canopy::runtime::engine_of(rt).adaptive().splits();
  REQUIRE(splits.size() == 1);
  CHECK(splits[0].key == key);
  CHECK(splits[0].from_file);
  const RegionStats first = last_region(rt);
  const std::int64_t cut = first_rows(learned, kRows);
  REQUIRE(first.pieces.size() == 2);
  CHECK(pieces_of(first) ==
        std::vector<std::string>{"cpu0[0," + std::to_string(cut) + ")",
                                 accelerator(0) + "[" + std::to_string(cut) + "," + std::to_string(kRows) + ")"});
  CHECK(first.pieces[0].share == doctest::Approx(learned[0]).epsilon(1e-5));
}

TEST_CASE("hetero: adaptive with measured times keeps every row once while the split moves" *
          doctest::test_suite("opencl")) {
  CacheDirectory cache;
  Runtime rt;
  const Hierarchy discovered = rt.hierarchy();
  if (!has_leaves(discovered, {"cpu0", accelerator(0)})) return;
  use_leaves(rt, discovered, {"cpu0", accelerator(0)});
  const std::vector<double> cpu_share = run_adaptive(rt, 10);
  const std::vector<AdaptiveSplit> splits = canopy::runtime::engine_of(rt).adaptive().splits();
  REQUIRE(splits.size() == 1);
  CHECK(splits[0].launches == 10);
  // Timings on a shared machine (or under TSan, which slows one leaf far
  // more than the other) are noisy: only what the damped rule guarantees.
  // The rule never gives a leaf everything, and the last launch's times were
  // measured (the imbalance is a number). The model may: a calibration on a
  // loaded machine can find a leaf's launch latency longer than the whole
  // region takes on the other, and a leaf that runs nothing is never
  // measured, so the split then stays as the model put it.
  CHECK(cpu_share.back() >= 0.0);
  CHECK(cpu_share.back() <= 1.0);
  if (cpu_share.back() == 0.0 || cpu_share.back() == 1.0) {
    REQUIRE(splits[0].model_shares.size() == 2);
    CHECK(splits[0].changes == 0);
    CHECK(cpu_share.back() == splits[0].model_shares[0]);
  }
  CHECK(std::isfinite(splits[0].last_imbalance));
  MESSAGE("measured: cpu0's share launch by launch: " << shares_text(cpu_share) << "; changes " << splits[0].changes
                                                      << ", last imbalance " << splits[0].last_imbalance);
}

TEST_CASE("hetero: any puts a region on the idle leaf the machine model predicts fastest" *
          doctest::test_suite("opencl")) {
  Runtime rt;
  const Hierarchy discovered = rt.hierarchy();
  if (!has_leaves(discovered, {"cpu0", accelerator(0)})) return;
  use_leaves(rt, discovered, {"cpu0", accelerator(0)});
  const Hierarchy tree = rt.hierarchy();
  const MachineModel model = MachineModel::load_or_calibrate(rt);  // the file the runtime reads too
  const Accumulate accumulate = accumulate_kernel();
  const ir::Kernel optimized = ir::optimize(accumulate.ir());
  AdaptivePlacement mirror(FeedbackOptions{}, "off");
  mirror.set_model(model, "mirror");
  const AdaptiveKernel kernel{&optimized, 1};
  const double on_cpu = mirror.predict_seconds(kernel, *tree.find("cpu0"), Shape(kRows));
  const double on_device = mirror.predict_seconds(kernel, *tree.find(accelerator(0)), Shape(kRows));
  MESSAGE("predicted: cpu0 " << on_cpu << " s, " << accelerator(0) << " " << on_device << " s");
  // A leaf whose calibration failed (on a loaded machine, say) has no
  // prediction (NaN) and counts as the slowest: any then takes the other.
  if (!(on_cpu > 0) || !(on_device > 0)) MESSAGE("a leaf has no prediction; the model:\n" << model.describe());
  REQUIRE((on_cpu > 0 || on_device > 0));
  CHECK((std::isnan(on_cpu) || on_cpu > 0));
  CHECK((std::isnan(on_device) || on_device > 0));
  const bool device_faster = !(on_cpu > 0) || on_device < on_cpu;
  const std::string fastest = device_faster ? accelerator(0) : "cpu0";

  auto a = rt.array<double>(kRows, named("a"));
  auto b = rt.array<double>(kRows, named("b"));
  rt.region(accumulate).over(kRows).policy("any").launch(a, b);
  rt.pause();
  const RegionStats region = last_region(rt);
  REQUIRE(region.pieces.size() == 1);
  CHECK(region.pieces[0].leaf == fastest);
  CHECK(region.pieces[0].share == 1.0);
  CHECK(region.pieces[0].predicted_seconds == doctest::Approx(fastest == "cpu0" ? on_cpu : on_device));
  CHECK(region.pieces[0].run_seconds > 0);
}

namespace {

using Step = Kernel<void(Out<double>, In<double>)>;

/// out = in / 2 + 1: one step of a two-kernel loop, named `name`.
Step half_step(const std::string& name) {
  return Step(name,
              [](Out<double> out, In<double> in) {
                Idx i = index(0);
                out[i] = in[i] * 0.5 + 1.0;
              },
              {"out", "in"});
}

/// Which kernel the synthetic time source is timing (the test pauses after
/// each launch, so the region that finishes is the one launched last).
std::string timed_kernel;

/// Seconds per row on cpu0 and on the device, per kernel: `ahead` learns
/// cpu0 3/4 of the rows, `behind` 3/5, `far` nearly all.
double synthetic_seconds(const PieceStats& piece) {
  const double rows = double(piece.end - piece.begin);
  const bool cpu = piece.leaf == "cpu0";
  if (timed_kernel == "ahead") return rows * (cpu ? 1e-10 : 3e-10);
  if (timed_kernel == "behind") return rows * (cpu ? 1e-10 : 1.5e-10);
  return rows * (cpu ? 1e-10 : 1e-8);
}

struct SequenceRun {
  std::vector<RegionStats> last;  ///< the last iteration's regions: ahead, behind, far
  Moved per_iteration;            ///< bytes moved by the last iteration
  int followed = 0;               ///< regions that took their inputs' split
};

/// `iterations` times: ahead (a from b), behind (b from a), far (c from a),
/// each adaptive and paused; b starts at 0. Checks every value of the last
/// iteration against a serial loop.
SequenceRun run_sequence(int iterations) {
  Runtime rt;
  SequenceRun result;
  const Hierarchy discovered = rt.hierarchy();
  if (!has_leaves(discovered, {"cpu0", accelerator(0)})) return result;
  use_leaves(rt, discovered, {"cpu0", accelerator(0)});
  canopy::runtime::engine_of(rt).set_machine_model_source([tree = rt.hierarchy()] {
    return even_model(tree, {"cpu0", accelerator(0)});
  });
  canopy::runtime::engine_of(rt).adaptive().set_time_source(synthetic_seconds);
  constexpr std::int64_t n = std::int64_t{1} << 18;
  auto a = rt.array<double>(n, named("a"));
  auto b = rt.array<double>(n, named("b"));
  auto c = rt.array<double>(n, named("c"));
  const Step ahead = half_step("ahead"), behind = half_step("behind"), far = half_step("far");
  Moved before;
  for (int iteration = 0; iteration < iterations; ++iteration) {
    before = moved(rt);
    for (const auto& [kernel, out, in] : {std::tuple{&ahead, &a, &b}, {&behind, &b, &a}, {&far, &c, &a}}) {
      timed_kernel = kernel->name();
      rt.region(*kernel).over(n).policy("adaptive").launch(*out, *in);
      rt.pause();
    }
  }
  result.per_iteration = moved(rt) - before;
  const Stats stats = rt.stats();
  result.followed = int(stats.followed_regions);
  result.last.assign(stats.recent.end() - 3, stats.recent.end());
  // b_k = a_k / 2 + 1 with a_k = b_{k-1} / 2 + 1, from b_0 = 0; c = a / 2 + 1.
  double want_a = 0, want_b = 0;
  for (int iteration = 0; iteration < iterations; ++iteration) {
    want_a = want_b * 0.5 + 1.0;
    want_b = want_a * 0.5 + 1.0;
  }
  const double want_c = want_a * 0.5 + 1.0;
  auto ha = a.host_read();
  auto hb = b.host_read();
  auto hc = c.host_read();
  std::int64_t wrong = 0;
  for (std::int64_t i = 0; i < n; ++i) wrong += (ha[i] != want_a) + (hb[i] != want_b) + (hc[i] != want_c);
  CHECK(wrong == 0);
  return result;
}

}  // namespace

TEST_CASE("hetero: a region reading what another left split takes that split when moving rows costs more" *
          doctest::test_suite("opencl")) {
  CacheDirectory cache;
  constexpr int kIterations = 8;
  const SequenceRun run = run_sequence(kIterations);
  if (run.last.empty()) return;
  const RegionStats &ahead = run.last[0], &behind = run.last[1], &far = run.last[2];
  REQUIRE(ahead.kernel == "ahead");
  REQUIRE(ahead.pieces.size() == 2);
  // ahead has learned its split (cpu0 3/4); behind, whose own split would be
  // 3/5, takes it instead: at 1e-10 s per row its imbalance costs less than
  // moving an eighth of a's rows between memories at any copy speed of today.
  CHECK(double(ahead.pieces[0].end) / double(ahead.pieces[1].end) == doctest::Approx(0.75).epsilon(0.03));
  CHECK(ahead.follows.empty());
  CHECK(behind.follows == "ahead");
  CHECK(pieces_of(behind) == pieces_of(ahead));
  // far's own split (cpu0 nearly all) is 100 times faster on cpu0 than on the
  // device: it keeps it, and moves what it must.
  CHECK(far.follows.empty());
  REQUIRE(far.pieces.size() >= 1);
  CHECK(far.pieces[0].end > ahead.pieces[0].end);
  CHECK(run.followed >= kIterations - 2);
  MESSAGE("with sequence placement: " << joined(pieces_of(ahead)) << " | " << joined(pieces_of(behind)) << " | "
                                      << joined(pieces_of(far)) << "; last iteration moved " << run.per_iteration);
  // With it off, behind runs its own split and rows of a and b change memory
  // every iteration.
  canopy::testing::ScopedSetting off{"CANOPY_SEQUENCE_PLACEMENT", "off"};
  const SequenceRun own = run_sequence(kIterations);
  REQUIRE(own.last.size() == 3);
  CHECK(own.followed == 0);
  CHECK(own.last[1].follows.empty());
  CHECK(pieces_of(own.last[1]) != pieces_of(own.last[0]));
  const auto total = [](const Moved& m) { return m.host_to_device + m.device_to_host + m.device_to_device; };
  CHECK(total(own.per_iteration) > total(run.per_iteration));
  MESSAGE("without: " << joined(pieces_of(own.last[0])) << " | " << joined(pieces_of(own.last[1])) << " | "
                      << joined(pieces_of(own.last[2])) << "; last iteration moved " << own.per_iteration);
}

}  // namespace canopy::hetero_tests
