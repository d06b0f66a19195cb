// Rodinia's nn (examples/rodinia/nn) at a small size against a serial
// reference written here: on cpu0, on opencl0, and split over both (numa0
// with percentage:[50,50]). Canopy's CPU and OpenCL code computes each
// distance with the same float operations as the reference (no fused
// multiply-add: OpenCL code is generated with FP_CONTRACT OFF), so the
// records and distances must be equal exactly.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <numeric>
#include <string>
#include <vector>

#include "hetero/hetero_support.hpp"
#include "rodinia/nn/nn.hpp"

using namespace canopy;
using namespace canopy::hetero_tests;
namespace nn = rodinia::nn;

namespace {

// Every record's distance, then the k smallest by (distance, record).
std::vector<nn::Neighbour> reference(const nn::Records& records, int k, float latitude, float longitude,
                                     std::vector<float>* distances = nullptr) {
  std::vector<float> d(static_cast<std::size_t>(records.size()));
  for (std::size_t i = 0; i < d.size(); ++i) {
    const float dy = records.latitude[i] - latitude, dx = records.longitude[i] - longitude;
    d[i] = std::sqrt(dy * dy + dx * dx);
  }
  std::vector<std::int64_t> order(d.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::int64_t a, std::int64_t b) {
    return d[static_cast<std::size_t>(a)] < d[static_cast<std::size_t>(b)];
  });
  std::vector<nn::Neighbour> out;
  for (int i = 0; i < k && i < static_cast<int>(order.size()); ++i)
    out.push_back(
        {order[static_cast<std::size_t>(i)], d[static_cast<std::size_t>(order[static_cast<std::size_t>(i)])]});
  if (distances) *distances = d;
  return out;
}

void check_same(const std::vector<nn::Neighbour>& got, const std::vector<nn::Neighbour>& want) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    CAPTURE(i);
    CHECK(got[i].record == want[i].record);
    CHECK(got[i].distance == want[i].distance);
  }
}

// Every distance of a search equals the reference's.
void check_distances(const std::vector<float>& got, const std::vector<float>& want) {
  REQUIRE(got.size() == want.size());
  std::size_t differ = 0;
  for (std::size_t i = 0; i < want.size(); ++i) differ += got[i] != want[i];
  CHECK(differ == 0);
}

const nn::Records& records() {
  static const nn::Records generated = nn::generate(50001);
  return generated;
}

}  // namespace

TEST_CASE("rodinia nn: picking the nearest keeps ties in record order and handles k above the records") {
  const std::vector<float> d = {5, 1, 3, 1, 0.5f, 3, 9};
  const auto best = nn::pick_nearest(d.data(), 7, 4);
  REQUIRE(best.size() == 4);
  CHECK(best[0].record == 4);
  CHECK(best[1].record == 1);
  CHECK(best[2].record == 3);
  CHECK(best[3].record == 2);
  CHECK(nn::pick_nearest(d.data(), 7, 10).size() == 7);
  CHECK(nn::pick_nearest(d.data(), 7, 0).empty());
  // Runs of 64 records are skipped by a count: a nearer record late in a run is still found.
  std::vector<float> many(1000, 50.0f);
  many[700] = 1.0f;
  many[127] = 2.0f;
  const auto two = nn::pick_nearest(many.data(), 1000, 2);
  REQUIRE(two.size() == 2);
  CHECK(two[0].record == 700);
  CHECK(two[1].record == 127);
}

TEST_CASE("rodinia nn: on cpu0 the nearest records and every distance equal a serial reference") {
  Runtime rt;
  if (!has_leaves(rt.hierarchy(), {"cpu0"})) return;
  for (int k : {1, 5, 40}) {
    CAPTURE(k);
    std::vector<float> distances, want_distances;
    const auto want = reference(records(), k, 30.0f, 90.0f, &want_distances);
    check_same(nn::nearest(rt, records(), k, 30.0f, 90.0f, distances, "cpu0"), want);
    check_distances(distances, want_distances);
  }
}

TEST_CASE("rodinia nn: on opencl0 the nearest records equal a serial reference") {
  Runtime rt;
  if (!has_leaves(rt.hierarchy(), {"opencl0"})) return;
  std::vector<float> distances, want_distances;
  const auto want = reference(records(), 10, 45.5f, 12.25f, &want_distances);
  check_same(nn::nearest(rt, records(), 10, 45.5f, 12.25f, distances, "opencl0"), want);
  check_distances(distances, want_distances);
}

TEST_CASE(
    "rodinia nn: split over cpu0 and opencl0 (numa0, percentage:[50,50]) the nearest records equal a serial "
    "reference") {
  Runtime rt;
  const Hierarchy discovered = rt.hierarchy();
  if (!has_leaves(discovered, {"cpu0", "opencl0"})) return;
  use_leaves(rt, discovered, {"cpu0", "opencl0"});
  std::vector<float> distances, want_distances;
  const auto want = reference(records(), 10, 60.0f, 3.0f, &want_distances);
  check_same(nn::nearest(rt, records(), 10, 60.0f, 3.0f, distances, "numa0", "percentage:[50,50]"), want);
  check_distances(distances, want_distances);
  CHECK(joined(pieces_of(last_region(rt))) == "cpu0[0,25001) opencl0[25001,50001)");
}

TEST_CASE("rodinia nn: a database written and read back gives the same locations") {
  const std::string list = "rodinia-nn-test-list.txt";
  const nn::Records generated = nn::generate(1000, 3);
  nn::write_database(list, generated, 3);
  const nn::Records read = nn::read_database(list);
  CHECK(read.latitude == generated.latitude);
  CHECK(read.longitude == generated.longitude);
  CHECK(read.text.size() == 1000 * nn::kRecordChars);
  CHECK(read.line(999).size() == nn::kRecordChars);
  CHECK(std::stof(read.line(5).substr(28, 5)) == generated.latitude[5]);
  for (int f = 0; f < 3; ++f) std::remove((list + "_" + std::to_string(f) + ".db").c_str());
  std::remove(list.c_str());
}

TEST_CASE("rodinia nn: the files searched block by block as they are read equal a serial reference") {
  const std::string list = "rodinia-nn-blocks-list.txt";
  nn::write_database(list, nn::generate(5000, 11), 3);
  const nn::Records read = nn::read_database(list);  // the locations as the text rounds them
  Runtime rt;
  const Hierarchy discovered = rt.hierarchy();
  struct Placed {
    std::vector<std::string> leaves;
    const char* location;
    const char* policy;
  };
  for (const Placed& placed :
       {Placed{{"cpu0"}, "cpu0", "static"}, Placed{{"cpu0", "opencl0"}, "numa0", "percentage:[50,50]"}}) {
    if (!has_leaves(discovered, placed.leaves)) continue;
    use_leaves(rt, discovered, placed.leaves);
    // Blocks of 300 records: 17 of them, the last one of 200; k both below and above a block's size.
    for (int k : {1, 7, 400}) {
      CAPTURE(placed.location);
      CAPTURE(k);
      std::int64_t records = 0;
      const auto found =
          nn::nearest_in_database(rt, list, k, 30.0f, 90.0f, records, placed.location, placed.policy, 300);
      CHECK(records == 5000);
      std::vector<nn::Neighbour> got;
      for (const nn::Found& f : found) {
        got.push_back(f.neighbour);
        CHECK(f.line == read.line(f.neighbour.record));
      }
      check_same(got, reference(read, k, 30.0f, 90.0f, nullptr));
    }
  }
  for (int f = 0; f < 3; ++f) std::remove((list + "_" + std::to_string(f) + ".db").c_str());
  std::remove(list.c_str());
}
