// Regions split over memories whose pieces may write the same elements,
// without a merge trait: a histogram (atomic adds at colliding indices), a
// permutation scatter, a scatter that reads what it updates, a transposed
// 2-D write and a float histogram give what a serial loop gives under every
// policy, over cpu0 + opencl0, over two PoCL devices and over all three. A
// kernel that both reads and atomically adds to one array runs on one memory,
// and rt.stats() says so once.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "hetero_support.hpp"

using namespace canopy;
using namespace canopy::hetero_tests;
using canopy::engine_tests::EnvironmentFor;

namespace {

constexpr std::int64_t kN = 1 << 16;
constexpr std::int64_t kBins = 64;

const Kernel<void(In<std::int32_t>, InOut<std::int32_t>)>& histogram() {
  static const Kernel kernel(
      "sw_histogram",
      [](In<std::int32_t> key, InOut<std::int32_t> bins) { atomic_add(bins[cast<std::int64_t>(key[index(0)])], 1); },
      {"key", "bins"});
  return kernel;
}

const Kernel<void(In<std::int32_t>, In<double>, Out<double>)>& float_histogram() {
  static const Kernel kernel("sw_float_histogram",
                             [](In<std::int32_t> key, In<double> x, Out<double> bins) {
                               Idx i = index(0);
                               atomic_add(bins[cast<std::int64_t>(key[i])], x[i]);
                             },
                             {"key", "x", "bins"});
  return kernel;
}

const Kernel<void(In<std::int64_t>, Out<std::int64_t>)>& scatter() {
  static const Kernel kernel(
      "sw_scatter", [](In<std::int64_t> to, Out<std::int64_t> o) { o[to[index(0)]] = index(0) * 3 + 1; }, {"to", "o"});
  return kernel;
}

// Each point reads and rewrites the one element it scatters to.
const Kernel<void(In<std::int64_t>, InOut<std::int64_t>)>& scatter_update() {
  static const Kernel kernel("sw_scatter_update",
                             [](In<std::int64_t> to, InOut<std::int64_t> o) {
                               Value<std::int64_t> k = to[index(0)];
                               o[k] = o[k] * 2 + index(0);
                             },
                             {"to", "o"});
  return kernel;
}

// A scatter after real work per point (a loop of multiply-adds): merging
// what each memory changed costs less than the split saves.
const Kernel<void(In<std::int64_t>, Out<double>)>& heavy_scatter() {
  static const Kernel kernel("sw_heavy_scatter",
                             [](In<std::int64_t> to, Out<double> o) {
                               Var<double> x = cast<double>(index(0));
                               For(0, 400, [&](Idx) { x = x * 0.999 + 0.5; });
                               o[to[index(0)]] = x;
                             },
                             {"to", "o"});
  return kernel;
}

const Kernel<void(Out<std::int32_t, 2>, In<std::int32_t, 2>)>& transpose() {
  static const Kernel kernel("sw_transpose",
                             [](Out<std::int32_t, 2> t, In<std::int32_t, 2> m) {
                               Idx i = index(0), j = index(1);
                               t(j, i) = m(i, j) + 1;
                             },
                             {"t", "m"});
  return kernel;
}

// Adds to bins 1.. and reads bin 0 (which no point adds to): not racy, but
// the pieces cannot keep private copies of an array the kernel reads.
const Kernel<void(In<std::int32_t>, InOut<std::int32_t>)>& histogram_reading() {
  static const Kernel kernel("sw_histogram_reading",
                             [](In<std::int32_t> key, InOut<std::int32_t> bins) {
                               atomic_add(bins[cast<std::int64_t>(key[index(0)]) + 1], bins[0]);
                             },
                             {"key", "bins"});
  return kernel;
}

std::vector<std::int32_t> random_keys(std::uint32_t seed, std::int64_t below) {
  std::mt19937 rng(seed);
  std::vector<std::int32_t> keys(kN);
  // Skewed so that bins differ: the smaller of two uniform draws.
  for (auto& k : keys) k = std::int32_t(std::min(rng() % below, rng() % below));
  return keys;
}

std::vector<std::int64_t> random_permutation(std::uint32_t seed) {
  std::vector<std::int64_t> p(kN);
  std::iota(p.begin(), p.end(), 0);
  std::shuffle(p.begin(), p.end(), std::mt19937(seed));
  return p;
}

template <class T, int Rank>
std::vector<std::remove_const_t<T>> contents(const HostView<T, Rank>& view) {
  return std::vector<std::remove_const_t<T>>(view.begin(), view.end());
}

// The leaf sets each test runs on; those this node lacks say so and are left out.
const std::vector<std::vector<std::string>>& leaf_sets() {
  static const std::vector<std::vector<std::string>> sets{
      {"cpu0", accelerator(0)}, {accelerator(0), accelerator(1)}, {"cpu0", accelerator(0), accelerator(1)}};
  return sets;
}

// Every policy for a region of `rows` rows over `leaves` leaves: static,
// flatten, an uneven percentage and a range that gives each leaf two pieces,
// any and adaptive.
std::vector<std::string> policies_for(std::int64_t rows, std::size_t leaves) {
  std::string percentages, ranges;
  std::int64_t left = rows;
  for (std::size_t k = 0; k < 2 * leaves; ++k) {
    if (k < leaves) percentages += (k ? "," : "") + std::to_string(k + 1 < leaves ? 20 + 10 * k : 0);
    const std::int64_t part = k + 1 < 2 * leaves ? rows / std::int64_t(3 * leaves) + std::int64_t(k) : left;
    ranges += (k ? "," : "") + std::to_string(part);
    left -= part;
  }
  const std::int64_t last = 100 - (leaves == 2 ? 20 : 50);
  percentages = percentages.substr(0, percentages.rfind(',') + 1) + std::to_string(last);
  return {"static", "flatten", "percentage:[" + percentages + "]", "range:[" + ranges + "]", "any", "adaptive"};
}

// How many of the last `launches` regions ran in two or more non-empty
// pieces. adaptive and any choose their split from timings, which on a busy
// machine may put a whole region on one leaf; the other policies always split.
std::int64_t split_among_last(Runtime& rt, std::size_t launches) {
  const auto recent = rt.stats().recent;
  REQUIRE(recent.size() >= launches);
  std::int64_t split = 0;
  for (std::size_t r = recent.size() - launches; r < recent.size(); ++r)
    split += std::count_if(recent[r].pieces.begin(), recent[r].pieces.end(),
                           [](const PieceStats& piece) { return piece.end > piece.begin; }) > 1;
  return split;
}

bool split_by_timings(const std::string& policy) { return policy == "any" || policy == "adaptive"; }

// Runs `check(leaf_count)` on `rt` with each leaf set this node has.
template <class Check>
void on_every_leaf_set(Runtime& rt, Check&& check) {
  const Hierarchy discovered = rt.hierarchy();
  for (const auto& leaves : leaf_sets()) {
    CAPTURE(joined(leaves));
    if (!has_leaves(discovered, leaves)) continue;
    use_leaves(rt, discovered, leaves);
    check(leaves.size());
  }
}

// Runs `check(rt, policy, merging)` on a runtime with each leaf set, under
// every policy for `rows` rows: once with every split merged
// (CANOPY_SPLIT_WRITES=merge, `merging` true), once choosing by cost.
template <class Check>
void on_every_split(std::int64_t rows, Check&& check) {
  for (const bool merging : {true, false}) {
    CAPTURE(merging);
    EnvironmentFor choice("CANOPY_SPLIT_WRITES", merging ? "merge" : "auto");
    Runtime rt;
    on_every_leaf_set(rt, [&](std::size_t leaf_count) {
      for (const auto& policy : policies_for(rows, leaf_count)) {
        CAPTURE(policy);
        check(rt, policy, merging);
      }
    });
  }
}

}  // namespace

TEST_CASE("split writes: a histogram by atomic adds gives the serial counts under every split") {
  const auto keys = random_keys(11, kBins);
  std::vector<std::int32_t> want(kBins, 0);
  for (auto k : keys) want[std::size_t(k)] += 1;
  on_every_split(kN, [&](Runtime& rt, const std::string& policy, bool) {
    auto key = rt.array<std::int32_t>(kN, at("numa0"));
    auto bins = rt.array<std::int32_t>(kBins, at("numa0") | named("bins"));
    std::copy(keys.begin(), keys.end(), key.host().begin());
    const std::int64_t summed_before = rt.stats().split_writes.sums_merged;
    rt.region(histogram()).over(kN).policy(policy).launch(key, bins);
    rt.region(histogram()).over(kN).policy(policy).launch(key, bins);  // adds onto the first's counts
    auto got = contents(bins.host_read());
    std::vector<std::int32_t> twice = want;
    for (auto& c : twice) c *= 2;
    CHECK(got == twice);
    const std::int64_t split = split_among_last(rt, 2);
    if (!split_by_timings(policy)) CHECK(split == 2);
    CHECK(rt.stats().split_writes.sums_merged == summed_before + split);
  });
}

TEST_CASE("split writes: float atomic adds sum within the order-independent bound") {
  const auto keys = random_keys(12, kBins);
  std::vector<double> x(kN);
  std::mt19937 rng(5);
  for (auto& v : x) v = std::uniform_real_distribution<double>(-1.0, 3.0)(rng);
  std::vector<long double> exact(kBins, 0.0L), magnitude(kBins, 0.0L);
  for (std::int64_t i = 0; i < kN; ++i) {
    exact[std::size_t(keys[std::size_t(i)])] += x[std::size_t(i)];
    magnitude[std::size_t(keys[std::size_t(i)])] += std::fabs(x[std::size_t(i)]);
  }
  on_every_split(kN, [&](Runtime& rt, const std::string& policy, bool merging) {
    auto key = rt.array<std::int32_t>(kN, at("numa0"));
    auto values = rt.array<double>(kN, at("numa0"));
    auto bins = rt.array<double>(kBins, at("numa0"));
    std::copy(keys.begin(), keys.end(), key.host().begin());
    std::copy(x.begin(), x.end(), values.host().begin());
    rt.region(float_histogram()).over(kN).policy(policy).launch(key, values, bins);
    auto got = bins.host_read();
    for (std::int64_t b = 0; b < kBins; ++b) {
      // Any order of n additions lies within n * 2^-53 * (sum of magnitudes) of the exact sum.
      const long double bound = (long double)kN * std::ldexp(1.0L, -53) * magnitude[std::size_t(b)];
      CHECK(std::fabs((long double)got[b] - exact[std::size_t(b)]) <= bound);
    }
  });
}

TEST_CASE("split writes: a permutation scatter leaves every element where it belongs under every split") {
  const auto to = random_permutation(21);
  std::vector<std::int64_t> want(kN);
  for (std::int64_t i = 0; i < kN; ++i) want[std::size_t(to[std::size_t(i)])] = i * 3 + 1;
  on_every_split(kN, [&](Runtime& rt, const std::string& policy, bool merging) {
    auto target = rt.array<std::int64_t>(kN, at("numa0"));
    auto o = rt.array<std::int64_t>(kN, at("numa0"));
    std::copy(to.begin(), to.end(), target.host().begin());
    std::fill(o.host().begin(), o.host().end(), -5);
    const std::int64_t changed_before = rt.stats().split_writes.changed_merged;
    rt.region(scatter()).over(kN).policy(policy).launch(target, o);
    CHECK(contents(o.host_read()) == want);
    // Memory-bound: merged when told to, else on one memory.
    const SplitWriteStats stats = rt.stats().split_writes;
    const std::int64_t split = split_among_last(rt, 1);
    if (merging && !split_by_timings(policy)) CHECK(split == 1);
    if (merging) CHECK(stats.changed_merged == changed_before + split);
    if (!merging) CHECK(stats.changed_merged == changed_before);
  });
}

TEST_CASE("split writes: a scatter over part of the array keeps the elements no point writes") {
  // Points [0, kN/2) scatter into the even positions; the odd ones keep their values,
  // whichever memory held them current before.
  std::vector<std::int64_t> to(kN / 2);
  for (std::int64_t i = 0; i < kN / 2; ++i) to[std::size_t(i)] = 2 * ((i * 7919) % (kN / 2));
  on_every_split(kN / 2, [&](Runtime& rt, const std::string& policy, bool) {
    auto target = rt.array<std::int64_t>(kN / 2, at("numa0"));
    auto o = rt.array<std::int64_t>(kN, at("numa0"));
    std::copy(to.begin(), to.end(), target.host().begin());
    std::vector<std::int64_t> want(kN);
    std::iota(want.begin(), want.end(), 100);
    std::copy(want.begin(), want.end(), o.host().begin());
    // A first scatter leaves parts of o current only on the devices.
    rt.region(scatter_update()).over(kN / 2).policy(policy).launch(target, o);
    rt.region(scatter_update()).over(kN / 2).policy(policy).launch(target, o);
    for (std::int64_t i = 0; i < kN / 2; ++i) {
      auto& e = want[std::size_t(to[std::size_t(i)])];
      e = (e * 2 + i) * 2 + i;
    }
    CHECK(contents(o.host_read()) == want);
  });
}

TEST_CASE("split writes: a transposed 2-D write under every split") {
  constexpr std::int64_t rows = 96, cols = 80;
  std::vector<std::int32_t> m(rows * cols);
  std::iota(m.begin(), m.end(), 7);
  std::vector<std::int32_t> want(rows * cols);
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < cols; ++j) want[std::size_t(j * rows + i)] = m[std::size_t(i * cols + j)] + 1;
  on_every_split(rows, [&](Runtime& rt, const std::string& policy, bool) {
    auto in = rt.array<std::int32_t, 2>(Shape(rows, cols), at("numa0"));
    auto t = rt.array<std::int32_t, 2>(Shape(cols, rows), at("numa0"));
    std::copy(m.begin(), m.end(), in.host().begin());
    rt.region(transpose()).over(rows, cols).policy(policy).launch(t, in);
    CHECK(contents(t.host_read()) == want);
  });
}

TEST_CASE("split writes: atomic adds to an array the kernel also reads run on one memory, said once" *
          doctest::test_suite("opencl")) {
  Runtime rt;
  const Hierarchy discovered = rt.hierarchy();
  if (!has_leaves(discovered, {"cpu0", accelerator(0)})) return;
  use_leaves(rt, discovered, {"cpu0", accelerator(0)});
  const auto keys = random_keys(31, kBins - 1);
  std::vector<std::int32_t> want(kBins, 0);
  want[0] = 3;
  for (auto k : keys) want[std::size_t(k) + 1] += 3;
  auto key = rt.array<std::int32_t>(kN, at("numa0"));
  auto bins = rt.array<std::int32_t>(kBins, at("numa0") | named("bins"));
  std::copy(keys.begin(), keys.end(), key.host().begin());
  bins.host()[0] = 3;
  rt.region(histogram_reading()).over(kN).policy("percentage:[40,60]").launch(key, bins);
  CHECK(joined(pieces_of(last_region(rt))) == "cpu0[0,65536)");
  CHECK(contents(bins.host_read()) == want);
  rt.region(histogram_reading()).over(kN).policy("static").launch(key, bins);
  // On fresh arrays each time, still once per kernel, parameter and reason.
  for (int k = 0; k < 3; ++k) {
    auto fresh = rt.array<std::int32_t>(kBins, at("numa0"));
    rt.region(histogram_reading()).over(kN).policy("static").launch(key, fresh);
  }
  rt.pause();
  const SplitWriteStats stats = rt.stats().split_writes;
  CHECK(stats.one_memory == 5);
  REQUIRE(stats.notes.size() == 1);
  CHECK(stats.notes[0] ==
        "kernel 'sw_histogram_reading' adds atomically to parameter 'bins', array 'bins' (i32 64 at numa0), and also "
        "reads it, so the region's pieces cannot each keep a copy of it: the region ran on one memory (keep what it "
        "reads, or what it stores, in another array to let the region split)");
}

TEST_CASE("split writes: by cost, a memory-bound scatter runs on one memory and a heavy one splits and merges" *
          doctest::test_suite("opencl")) {
  EnvironmentFor choice("CANOPY_SPLIT_WRITES", "auto");
  Runtime rt;
  const Hierarchy discovered = rt.hierarchy();
  if (!has_leaves(discovered, {"cpu0", accelerator(0)})) return;
  use_leaves(rt, discovered, {"cpu0", accelerator(0)});
  const auto order = random_permutation(41);
  auto target = rt.array<std::int64_t>(kN, at("numa0"));
  auto o = rt.array<std::int64_t>(kN, at("numa0") | named("o"));
  auto d = rt.array<double>(kN, at("numa0") | named("d"));
  std::copy(order.begin(), order.end(), target.host().begin());

  rt.region(scatter()).over(kN).policy("static").launch(target, o);
  CHECK(joined(pieces_of(last_region(rt))) == "cpu0[0,65536)");
  SplitWriteStats stats = rt.stats().split_writes;
  CHECK(stats.one_memory == 1);
  REQUIRE(stats.notes.size() == 1);
  CHECK(stats.notes[0] ==
        "kernel 'sw_scatter' may write any element of parameter 'o', array 'o' (i64 65536 at numa0), from every "
        "piece, and merging what each memory changed would cost more than splitting the region saves: the region ran "
        "on one memory (CANOPY_SPLIT_WRITES=merge splits it anyway)");
  auto got = o.host_read();
  for (std::int64_t i = 0; i < kN; ++i) CHECK(got[order[std::size_t(i)]] == i * 3 + 1);

  rt.region(heavy_scatter()).over(kN).policy("static").launch(target, d);
  CHECK(joined(pieces_of(last_region(rt))) == "cpu0[0,32768) " + accelerator(0) + "[32768,65536)");
  CHECK(rt.stats().split_writes.changed_merged == 1);
  auto values = d.host_read();
  for (std::int64_t i = 0; i < kN; i += 97) {
    double x = double(i);
    for (int k = 0; k < 400; ++k) x = x * 0.999 + 0.5;
    CHECK(values[order[std::size_t(i)]] == x);
  }
}

TEST_CASE("split writes: CANOPY_SPLIT_WRITES=one keeps such regions on one memory; a bad value says what it takes" *
          doctest::test_suite("opencl")) {
  {
    EnvironmentFor choice("CANOPY_SPLIT_WRITES", "one");
    Runtime rt;
    const Hierarchy discovered = rt.hierarchy();
    if (!has_leaves(discovered, {accelerator(0), accelerator(1)})) return;
    use_leaves(rt, discovered, {accelerator(0), accelerator(1)});
    const auto keys = random_keys(51, kBins);
    std::vector<std::int32_t> want(kBins, 0);
    for (auto k : keys) want[std::size_t(k)] += 1;
    auto key = rt.array<std::int32_t>(kN, at("numa0"));
    auto bins = rt.array<std::int32_t>(kBins, at("numa0"));
    std::copy(keys.begin(), keys.end(), key.host().begin());
    rt.region(histogram()).over(kN).policy("percentage:[30,70]").launch(key, bins);
    CHECK(joined(pieces_of(last_region(rt))) == accelerator(1) + "[0,65536)");  // the place with more points
    CHECK(contents(bins.host_read()) == want);
  }
  EnvironmentFor choice("CANOPY_SPLIT_WRITES", "sometimes");
  CHECK(error_of([] { Runtime rt; }) ==
        "CANOPY_SPLIT_WRITES='sometimes' is not allowed; use auto (merge where it pays), merge (always merge what "
        "each memory wrote) or one (run such regions on one memory)");
}

TEST_CASE("split writes: an element no piece adds to keeps its bits, -0 included (implicit and merge(Sum))") {
  // Private copies start at -0, IEEE's additive identity: starting at +0,
  // -0 + +0 turned an untouched -0 into +0 (canopy-diff seed 2001848, where
  // a later division by it gave -inf instead of +inf).
  EnvironmentFor choice("CANOPY_SPLIT_WRITES", "merge");
  Runtime rt;
  on_every_leaf_set(rt, [&](std::size_t) {
    for (const bool explicit_merge : {false, true}) {
      CAPTURE(explicit_merge);
      auto key = rt.array<std::int32_t>(kN, at("numa0"));
      auto values = rt.array<double>(kN, at("numa0"));
      auto bins = rt.array<double>(kBins, at("numa0") | (explicit_merge ? merge(MergeOp::Sum) : MemoryTraits{}));
      std::fill(key.host().begin(), key.host().end(), 3);  // every point adds to bin 3 only
      std::fill(values.host().begin(), values.host().end(), 0.5);
      std::fill(bins.host().begin(), bins.host().end(), -0.0);
      rt.region(float_histogram()).over(kN).policy("static").launch(key, values, bins);
      auto got = bins.host_read();
      CHECK(got[3] == 0.5 * double(kN));
      for (std::int64_t b = 0; b < kBins; ++b)
        if (b != 3) CHECK(std::signbit(got[b]));
    }
  });
}
