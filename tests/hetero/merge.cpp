// Arrays with a merge operator (location consistency) written by several
// leaves in one region: a histogram with merge(MergeOp::Sum) filled by
// atomic_add over opencl0 + opencl1 and over cpu0 + opencl0 gives the exact
// serial counts under every policy; merge(Min) and merge(Max) give the
// element-wise minimum and maximum of what every leaf wrote and what the
// array held; and the private copies are combined when the array is next
// used, by a region or by the host, without a pause in between.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "hetero_support.hpp"

using namespace canopy;
using namespace canopy::hetero_tests;

namespace {

constexpr std::int64_t kN = 200000;
constexpr std::int32_t kBins = 64;

const Kernel<void(InOut<std::int32_t>, In<double>)>& histogram() {
  static const Kernel kernel("histogram",
                             [](InOut<std::int32_t> hist, In<double> x) {
                               Idx i = index(0);
                               Value<std::int32_t> bin = min(cast<std::int32_t>(x[i] * double(kBins)), kBins - 1);
                               atomic_add(hist[bin], 1);
                             },
                             {"hist", "x"});
  return kernel;
}

const Kernel<void(In<std::int32_t>, Sum<std::int64_t>)>& total() {
  static const Kernel kernel(
      "total", [](In<std::int32_t> counts, Sum<std::int64_t> sum) { sum += cast<std::int64_t>(counts[index(0)]); },
      {"counts", "sum"});
  return kernel;
}

const Kernel<void(Out<std::int32_t>, In<std::int32_t>)>& copy() {
  static const Kernel kernel("copy",
                             [](Out<std::int32_t> to, In<std::int32_t> from) {
                               Idx i = index(0);
                               to[i] = from[i];
                             },
                             {"to", "from"});
  return kernel;
}

std::vector<double> skewed_data(std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  std::vector<double> data(kN);
  // Skewed, so that bins differ: the square of a uniform number.
  for (auto& v : data) {
    const double u = uniform(rng);
    v = u * u;
  }
  return data;
}

std::vector<std::int32_t> serial_counts(const std::vector<double>& data) {
  std::vector<std::int32_t> counts(kBins, 0);
  for (double v : data) counts[std::size_t(std::min(std::int32_t(v * kBins), kBins - 1))] += 1;
  return counts;
}

template <class T, int Rank>
std::vector<std::remove_const_t<T>> contents(const HostView<T, Rank>& view) {
  return std::vector<std::remove_const_t<T>>(view.begin(), view.end());
}

// The leaves of `region` that are not the CPU (each holds a private copy).
std::set<std::string> device_leaves(const RegionStats& region) {
  std::set<std::string> leaves;
  for (const PieceStats& piece : region.pieces)
    if (piece.leaf.rfind(accelerator_backend(), 0) == 0) leaves.insert(piece.leaf);
  return leaves;
}

// The histogram over `first` + `second` under every policy.
void check_histogram(const std::string& first, const std::string& second) {
  Runtime rt;
  const Hierarchy discovered = rt.hierarchy();
  if (!has_leaves(discovered, {first, second})) return;
  use_leaves(rt, discovered, {first, second});
  const std::vector<double> data = skewed_data(2024);
  const std::vector<std::int32_t> want = serial_counts(data);
  auto x = rt.array<double>(kN, at("numa0") | named("x"));
  auto hist = rt.array<std::int32_t>(kBins, at("numa0") | merge(MergeOp::Sum) | named("hist"));
  std::copy(data.begin(), data.end(), x.host().begin());

  for (const auto& policy : every_policy(kN)) {
    CAPTURE(policy);
    std::fill(hist.host().begin(), hist.host().end(), 0);
    const Moved before = moved(rt, "hist");
    rt.region(histogram()).over(kN).policy(policy).launch(hist, x);
    rt.pause();
    const RegionStats region = last_region(rt);
    if (policy != "any") CHECK(joined(pieces_of(region)) == joined(expected_pieces(policy, kN, first, second)));
    CHECK(contents(hist.host()) == want);
    // Each device's private copy starts at 0 on the device (nothing copied in)
    // and comes back once to be added into the host copy.
    const auto devices = std::int64_t(device_leaves(region).size());
    const Moved merged = moved(rt, "hist") - before;
    CHECK(merged.host_to_device == 0);
    CHECK(merged.device_to_host == devices * kBins * std::int64_t(sizeof(std::int32_t)));
  }
}

}  // namespace

TEST_CASE("hetero: a merge(sum) histogram over opencl0 and opencl1 gives the serial counts under every policy" *
          doctest::test_suite("opencl")) {
  check_histogram(accelerator(0), accelerator(1));
}

TEST_CASE("hetero: a merge(sum) histogram over cpu0 and opencl0 gives the serial counts under every policy" *
          doctest::test_suite("opencl")) {
  check_histogram("cpu0", accelerator(0));
}

TEST_CASE("hetero: merge copies are combined when the array is next used, without a pause") {
  Runtime rt;
  const Hierarchy discovered = rt.hierarchy();
  // Each set of leaves this node lacks says so and is left out.
  const std::vector<double> data = skewed_data(7);
  const std::vector<std::int32_t> want = serial_counts(data);
  std::vector<std::int32_t> twice = want;
  for (auto& c : twice) c *= 2;

  for (const auto& leaves :
       {std::vector<std::string>{accelerator(0), accelerator(1)}, std::vector<std::string>{"cpu0", accelerator(0)},
        std::vector<std::string>{"cpu0", accelerator(0), accelerator(1)}}) {
    CAPTURE(joined(leaves));
    if (!has_leaves(discovered, leaves)) continue;
    use_leaves(rt, discovered, leaves);
    auto x = rt.array<double>(kN, at("numa0") | named("x"));
    auto hist = rt.array<std::int32_t>(kBins, at("numa0") | merge(MergeOp::Sum) | named("hist"));
    auto out = rt.array<std::int32_t>(kBins, at("numa0") | named("out"));
    std::copy(data.begin(), data.end(), x.host().begin());

    // Two histograms in a row: the second region's leaves start new private
    // copies, after the first region's are added into the array.
    rt.region(histogram()).over(kN).launch(hist, x);
    rt.region(histogram()).over(kN).policy("flatten").launch(hist, x);
    // Regions that read the array see both, combined: a sum split over the
    // same leaves and a copy on one device.
    const std::int64_t sum = rt.region(total()).over(kBins).reduce(hist);
    CHECK(sum == 2 * kN);
    rt.region(copy()).over(kBins).at(leaves.back()).launch(out, hist);
    // A third histogram after readers, and a host view without a pause.
    rt.region(histogram())
        .over(kN)
        .policy("percentage:[" + std::string(leaves.size() == 2 ? "60,40" : "20,30,50") + "]")
        .launch(hist, x);
    CHECK(contents(out.host_read()) == twice);
    std::vector<std::int32_t> thrice = want;
    for (auto& c : thrice) c *= 3;
    CHECK(contents(hist.host_read()) == thrice);
    rt.pause();
    CHECK(contents(hist.host_read()) == thrice);
  }
}

namespace {

constexpr std::int64_t kWidth = 100;  // elements of the min / max arrays
constexpr std::int64_t kRows = 4 * kWidth;

// Point i updates element i % kWidth. Within a piece of at most kWidth
// points no two points touch one element; pieces of one leaf run one after
// the other; pieces on different leaves may touch the same elements, and
// their private copies are combined with the operator.
const Kernel<void(InOut<std::int32_t>, In<std::int32_t>)>& lowest() {
  static const Kernel kernel("lowest",
                             [](InOut<std::int32_t> low, In<std::int32_t> x) {
                               Idx i = index(0);
                               Idx j = i % kWidth;
                               low[j] = min(low[j], x[i]);
                             },
                             {"low", "x"});
  return kernel;
}

const Kernel<void(InOut<double>, In<double>)>& highest() {
  static const Kernel kernel("highest",
                             [](InOut<double> high, In<double> x) {
                               Idx i = index(0);
                               Idx j = i % kWidth;
                               high[j] = max(high[j], x[i]);
                             },
                             {"high", "x"});
  return kernel;
}

// Policies whose pieces are at most kWidth rows (so no two points of a
// piece collide) and whose chunks fold over the leaves.
std::vector<std::string> chunked_policies(std::size_t leaves) {
  const std::string w = std::to_string(kWidth), half = std::to_string(kWidth / 2);
  if (leaves == 3) return {"range:[" + w + "," + w + "," + w + "," + w + "]", "percentage:[25,25,25,25]"};
  return {"range:[" + w + "," + w + "," + w + "," + w + "]", "percentage:[25,25,25,25]",
          "range:[" + half + "," + w + "," + w + "," + w + "," + half + "]"};
}

}  // namespace

TEST_CASE("hetero: merge(min) and merge(max) combine every leaf's writes with what the array held") {
  Runtime rt;
  const Hierarchy discovered = rt.hierarchy();
  // Each set of leaves this node lacks says so and is left out.
  std::mt19937 rng(11);
  std::uniform_int_distribution<std::int32_t> small(-1000000, 1000000);
  std::uniform_real_distribution<double> real(-1e6, 1e6);
  std::vector<std::int32_t> xi(kRows), low0(kWidth);
  std::vector<double> xd(kRows), high0(kWidth);
  for (auto& v : xi) v = small(rng);
  for (auto& v : xd) v = real(rng);
  for (auto& v : low0) v = small(rng);
  for (auto& v : high0) v = real(rng);
  std::vector<std::int32_t> want_low = low0;
  std::vector<double> want_high = high0;
  for (std::int64_t i = 0; i < kRows; ++i) {
    auto j = std::size_t(i % kWidth);
    want_low[j] = std::min(want_low[j], xi[std::size_t(i)]);
    want_high[j] = std::max(want_high[j], xd[std::size_t(i)]);
  }

  for (const auto& leaves :
       {std::vector<std::string>{accelerator(0), accelerator(1)}, std::vector<std::string>{"cpu0", accelerator(0)},
        std::vector<std::string>{"cpu0", accelerator(0), accelerator(1)}}) {
    if (!has_leaves(discovered, leaves)) continue;
    use_leaves(rt, discovered, leaves);
    for (const auto& policy : chunked_policies(leaves.size())) {
      CAPTURE(joined(leaves));
      CAPTURE(policy);
      auto x_int = rt.array<std::int32_t>(kRows, at("numa0"));
      auto x_real = rt.array<double>(kRows, at("numa0"));
      auto low = rt.array<std::int32_t>(kWidth, at("numa0") | merge(MergeOp::Min) | named("low"));
      auto high = rt.array<double>(kWidth, at("numa0") | merge(MergeOp::Max) | named("high"));
      std::copy(xi.begin(), xi.end(), x_int.host().begin());
      std::copy(xd.begin(), xd.end(), x_real.host().begin());
      std::copy(low0.begin(), low0.end(), low.host().begin());
      std::copy(high0.begin(), high0.end(), high.host().begin());
      rt.region(lowest()).over(kRows).policy(policy).launch(low, x_int);
      rt.region(highest()).over(kRows).policy(policy).launch(high, x_real);
      rt.pause();
      // Every leaf took part (the chunks fold over all of them).
      std::set<std::string> ran;
      for (const PieceStats& piece : last_region(rt).pieces) ran.insert(piece.leaf);
      CHECK(ran.size() == leaves.size());
      CHECK(contents(low.host_read()) == want_low);
      CHECK(contents(high.host_read()) == want_high);
    }
  }
}
