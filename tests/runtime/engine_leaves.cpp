// The same regions on one CPU leaf and on two: a stencil, integer and
// floating-point sums and an atomic histogram give the same results with
// every policy, and rt.stats() shows each region's pieces on the leaves and
// rows the policy says.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "engine_trees.hpp"

using namespace canopy;
using namespace canopy::engine_tests;

namespace {

constexpr std::int64_t kRows = 1000;  // the outermost dimension every region splits
constexpr std::int64_t kCols = 64;
constexpr std::int32_t kBins = 37;

// Interior points of a (kRows+2) x (kCols+2) grid. The inputs are small whole
// numbers and the weights powers of two, so every result is exact whatever
// the order of operations.
const Kernel<void(Out<double, 2>, In<double, 2>)>& stencil() {
  static const Kernel kernel("stencil",
                             [](Out<double, 2> out, In<double, 2> in) {
                               Idx i = index(0), j = index(1);
                               out(i + 1, j + 1) =
                                   0.25 * (in(i, j + 1) + in(i + 2, j + 1) + in(i + 1, j) + in(i + 1, j + 2)) -
                                   in(i + 1, j + 1);
                             },
                             {"out", "in"});
  return kernel;
}

const Kernel<void(In<std::int32_t, 2>, Sum<std::int64_t>)>& integer_sum() {
  static const Kernel kernel(
      "integer_sum",
      [](In<std::int32_t, 2> keys, Sum<std::int64_t> total) { total += cast<std::int64_t>(keys(index(0), index(1))); },
      {"keys", "total"});
  return kernel;
}

const Kernel<void(In<double, 2>, Sum<double>)>& double_sum() {
  static const Kernel kernel("double_sum",
                             [](In<double, 2> values, Sum<double> total) { total += values(index(0), index(1)); },
                             {"values", "total"});
  return kernel;
}

const Kernel<void(InOut<std::int64_t>, In<std::int32_t, 2>)>& histogram() {
  static const Kernel kernel(
      "histogram",
      [](InOut<std::int64_t> bins, In<std::int32_t, 2> keys) { atomic_add(bins[keys(index(0), index(1))], 1); },
      {"bins", "keys"});
  return kernel;
}

struct Inputs {
  Array<double, 2> grid, smoothed, values;
  Array<std::int32_t, 2> keys;
  Array<std::int64_t> bins;
};

struct Outcome {
  std::vector<double> smoothed;
  std::int64_t integer_total = 0;
  double double_total = 0;
  std::vector<std::int64_t> bins;
  std::map<std::string, RegionStats> regions;  ///< by kernel name
};

Inputs make_inputs(Runtime& rt) {
  Inputs in;
  in.grid = rt.array<double, 2>(Shape(kRows + 2, kCols + 2), at("numa0") | named("grid"));
  in.smoothed = rt.array<double, 2>(Shape(kRows + 2, kCols + 2), at("numa0") | named("smoothed"));
  in.values = rt.array<double, 2>(Shape(kRows, kCols), at("numa0") | named("values"));
  in.keys = rt.array<std::int32_t, 2>(Shape(kRows, kCols), at("numa0") | named("keys"));
  in.bins = rt.array<std::int64_t>(kBins, at("numa0") | named("bins"));
  auto grid = in.grid.host();
  for (std::int64_t i = 0; i < kRows + 2; ++i)
    for (std::int64_t j = 0; j < kCols + 2; ++j) grid(i, j) = double((i * 7 + j * 3) % 101);
  auto values = in.values.host();
  auto keys = in.keys.host();
  for (std::int64_t i = 0; i < kRows; ++i)
    for (std::int64_t j = 0; j < kCols; ++j) {
      values(i, j) = std::sin(double(i * kCols + j)) * 1e3;
      keys(i, j) = static_cast<std::int32_t>((i * 31 + j * 17) % kBins);
    }
  return in;
}

// Runs the four regions with `policy` on whatever tree the runtime has now.
Outcome run_all(Runtime& rt, Inputs& in, const std::string& policy) {
  for (auto& b : in.bins.host()) b = 0;
  for (auto& s : in.smoothed.host()) s = -1;
  Outcome out;
  rt.region(stencil()).over(kRows, kCols).policy(policy).launch(in.smoothed, in.grid);
  rt.region(histogram()).over(kRows, kCols).policy(policy).launch(in.bins, in.keys);
  rt.pause();
  out.integer_total = rt.region(integer_sum()).over(kRows, kCols).policy(policy).reduce(in.keys);
  out.double_total = rt.region(double_sum()).over(kRows, kCols).policy(policy).reduce(in.values);
  auto smoothed = in.smoothed.host();
  out.smoothed.assign(smoothed.begin(), smoothed.end());
  auto bins = in.bins.host();
  out.bins.assign(bins.begin(), bins.end());
  for (const RegionStats& region : rt.stats().recent) out.regions[region.kernel] = region;
  return out;
}

// What the host computes for the same inputs.
Outcome expected(Inputs& in) {
  Outcome out;
  auto grid = in.grid.host();
  out.smoothed.assign(std::size_t((kRows + 2) * (kCols + 2)), -1.0);
  for (std::int64_t i = 0; i < kRows; ++i)
    for (std::int64_t j = 0; j < kCols; ++j)
      out.smoothed[std::size_t((i + 1) * (kCols + 2) + j + 1)] =
          0.25 * (grid(i, j + 1) + grid(i + 2, j + 1) + grid(i + 1, j) + grid(i + 1, j + 2)) - grid(i + 1, j + 1);
  auto keys = in.keys.host();
  auto values = in.values.host();
  out.bins.assign(kBins, 0);
  for (std::int64_t i = 0; i < kRows; ++i)
    for (std::int64_t j = 0; j < kCols; ++j) {
      out.integer_total += keys(i, j);
      out.double_total += values(i, j);
      out.bins[std::size_t(keys(i, j))] += 1;
    }
  return out;
}

void check_same_results(const Outcome& got, const Outcome& want) {
  CHECK(got.smoothed == want.smoothed);
  CHECK(got.integer_total == want.integer_total);
  CHECK(got.double_total == doctest::Approx(want.double_total).epsilon(1e-12));
  CHECK(got.bins == want.bins);
}

// Where each policy puts 1000 rows when numa0 holds cpuA and cpuB.
std::vector<std::string> two_leaf_pieces(const std::string& policy) {
  if (policy == "percentage:[30,70]") return {"cpuA[0,300)", "cpuB[300,1000)"};
  if (policy == "range:[100,250,300,350]")  // four chunks fold over two leaves
    return {"cpuA[0,100)", "cpuB[100,350)", "cpuA[350,650)", "cpuB[650,1000)"};
  return {"cpuA[0,500)", "cpuB[500,1000)"};  // static, flatten
}

const std::vector<std::string> kPolicies = {"static", "flatten", "percentage:[30,70]", "range:[100,250,300,350]",
                                            "any",    "adaptive"};

}  // namespace

TEST_CASE("engine: one CPU leaf and two give the same stencil, sums and histogram with every policy") {
  Runtime rt;
  use_tree(rt, one_leaf_tree());
  Inputs in = make_inputs(rt);
  const Outcome want = expected(in);

  std::map<std::string, Outcome> on_one;
  for (const auto& policy : kPolicies) {
    CAPTURE(policy);
    on_one[policy] = run_all(rt, in, policy);
    check_same_results(on_one[policy], want);
    REQUIRE(on_one[policy].regions.size() == 4);
    for (const auto& [kernel, region] : on_one[policy].regions) {
      CAPTURE(kernel);
      CHECK(region.location == "numa0");
      CHECK(region.range == Shape(kRows, kCols));
      CHECK(pieces_of(region) == std::vector<std::string>{"cpu0[0,1000)"});
    }
  }

  // Split the node's leaf in two one-core leaves, with the arrays in place.
  rt.remove_location("cpu0");
  rt.add_location("cpuA", LocationKind::Cpu, cpu_on({core(0)}), "numa0");
  rt.add_location("cpuB", LocationKind::Cpu, cpu_on({core(1)}), "numa0");
  CHECK(rt.hierarchy() == two_leaf_tree());
  CHECK(in.grid.location() == "numa0");

  for (const auto& policy : kPolicies) {
    CAPTURE(policy);
    const Outcome on_two = run_all(rt, in, policy);
    check_same_results(on_two, want);
    CHECK(on_two.smoothed == on_one[policy].smoothed);
    CHECK(on_two.integer_total == on_one[policy].integer_total);
    CHECK(on_two.bins == on_one[policy].bins);
    CHECK(on_two.double_total == doctest::Approx(on_one[policy].double_total).epsilon(1e-12));
    REQUIRE(on_two.regions.size() == 4);
    for (const auto& [kernel, region] : on_two.regions) {
      CAPTURE(kernel);
      CHECK(region.location == "numa0");
      CHECK(region.policy == policy);
      if (policy == "any") {
        const auto pieces = pieces_of(region);
        CHECK(
            (pieces == std::vector<std::string>{"cpuA[0,1000)"} || pieces == std::vector<std::string>{"cpuB[0,1000)"}));
      } else if (policy == "adaptive") {  // split as learned: consecutive pieces covering every row once
        std::int64_t next = 0;
        for (const PieceStats& piece : region.pieces) {
          CHECK(piece.begin == next);
          CHECK(piece.end > piece.begin);
          next = piece.end;
        }
        CHECK(next == kRows);
      } else {
        CHECK(pieces_of(region) == two_leaf_pieces(policy));
      }
    }
  }

  // Every leaf's totals add up to the points its pieces ran.
  std::int64_t on_a = 0, on_b = 0;
  for (const LeafStats& leaf : rt.stats().leaves) {
    if (leaf.leaf == "cpuA") on_a = leaf.iterations;
    if (leaf.leaf == "cpuB") on_b = leaf.iterations;
  }
  CHECK(on_a + on_b == std::int64_t(kPolicies.size()) * 4 * kRows * kCols);
  CHECK(on_a > 0);
  CHECK(on_b > 0);
}
