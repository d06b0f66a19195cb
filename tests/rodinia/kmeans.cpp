// Rodinia's kmeans (examples/rodinia/kmeans) at a small size against a
// serial reference written here: on cpu0, on opencl0, and split over both
// (numa0 with percentage:[50,50]). Memberships and the number of rounds must
// be equal; centres agree to a relative 1e-4, since they are means of float
// sums taken in another order (per block, then merged with atomic adds).
#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "hetero/hetero_support.hpp"
#include "rodinia/kmeans/kmeans.hpp"

using namespace canopy;
using namespace canopy::hetero_tests;
namespace km = rodinia::kmeans;

namespace {

// Lloyd's rounds, plainly: the first k points as centres, each point to the
// first nearest centre, until no more than `threshold` points move (or the
// round limit).
km::Clusters reference(const km::Points& points, int k, float threshold) {
  const auto nf = static_cast<std::size_t>(points.features);
  const auto n = static_cast<std::size_t>(points.count);
  km::Clusters out;
  out.centres.assign(points.values.begin(), points.values.begin() + static_cast<std::ptrdiff_t>(k * nf));
  out.membership.assign(n, -1);
  int round = 0;
  double moved = 0;
  do {
    std::vector<float> sums(k * nf, 0.0f);
    std::vector<int> sizes(static_cast<std::size_t>(k), 0);
    moved = 0;
    for (std::size_t p = 0; p < n; ++p) {
      int nearest = 0;
      float nearest_distance = std::numeric_limits<float>::max();
      for (int c = 0; c < k; ++c) {
        float distance = 0;
        for (std::size_t f = 0; f < nf; ++f) {
          const float d = points.values[p * nf + f] - out.centres[c * nf + f];
          distance += d * d;
        }
        if (distance < nearest_distance) nearest_distance = distance, nearest = c;
      }
      moved += out.membership[p] != nearest;
      out.membership[p] = nearest;
      sizes[static_cast<std::size_t>(nearest)] += 1;
      for (std::size_t f = 0; f < nf; ++f) sums[nearest * nf + f] += points.values[p * nf + f];
    }
    ++out.rounds;
    for (int c = 0; c < k; ++c)
      if (sizes[static_cast<std::size_t>(c)] > 0)
        for (std::size_t f = 0; f < nf; ++f) out.centres[c * nf + f] = sums[c * nf + f] / float(sizes[c]);
  } while (moved > threshold && round++ < km::kRoundLimit);
  return out;
}

void check_same(const km::Clusters& got, const km::Clusters& want) {
  CHECK(got.rounds == want.rounds);
  REQUIRE(got.membership.size() == want.membership.size());
  std::int64_t moved = 0;
  for (std::size_t p = 0; p < want.membership.size(); ++p) moved += got.membership[p] != want.membership[p];
  CHECK(moved == 0);
  REQUIRE(got.centres.size() == want.centres.size());
  double worst = 0;
  for (std::size_t i = 0; i < want.centres.size(); ++i)
    worst =
        std::max(worst, std::fabs(double(got.centres[i]) - want.centres[i]) / std::max(1.0, double(want.centres[i])));
  CHECK(worst <= 1e-4);
}

// 3001 points: the last block of the range is short.
const km::Points& small_points() {
  static const km::Points points = km::generate(3001, 6);
  return points;
}

}  // namespace

TEST_CASE("rodinia kmeans: on cpu0 the clusters equal a serial reference for several numbers of clusters") {
  Runtime rt;
  if (!has_leaves(rt.hierarchy(), {"cpu0"})) return;
  km::Clustering clustering(rt, "cpu0");
  for (int k : {1, 3, 5, 8}) {
    CAPTURE(k);
    const km::Clusters want = reference(small_points(), k, 0.001f);
    CHECK(want.rounds >= 2);
    check_same(clustering.run(small_points(), k, 0.001f), want);
  }
}

TEST_CASE("rodinia kmeans: more points than blocks, a threshold that stops early, and bad cluster counts") {
  Runtime rt;
  if (!has_leaves(rt.hierarchy(), {"cpu0"})) return;
  km::Clustering clustering(rt, "cpu0");
  const km::Points points = km::generate(300000, 3, 11);
  CHECK(km::Clustering::block_count(points.count) == 512);
  check_same(clustering.run(points, 5, 0.001f), reference(points, 5, 0.001f));
  // In the first round every point moves (from no cluster); a threshold
  // above the number of points ends the rounds there.
  const km::Clusters early = clustering.run(small_points(), 5, 5000.0f);
  CHECK(early.rounds == 1);
  check_same(early, reference(small_points(), 5, 5000.0f));
  CHECK_THROWS_AS(clustering.run(small_points(), 0, 0.001f), Error);
  CHECK_THROWS_AS(clustering.run(small_points(), 3002, 0.001f), Error);
}

TEST_CASE("rodinia kmeans: on opencl0 the clusters equal a serial reference, and only the centres move in each round") {
  Runtime rt;
  const Hierarchy discovered = rt.hierarchy();
  if (!has_leaves(discovered, {"opencl0"})) return;
  km::Clustering clustering(rt, "opencl0");
  const km::Points& points = small_points();
  const int k = 5;
  const km::Clusters want = reference(points, k, 0.001f);
  const Moved before = moved(rt);
  const km::Clusters got = clustering.run(points, k, 0.001f);
  check_same(got, want);
  // In: the points, the scratch rows and the memberships once, the centres
  // every round. Out: the merged sums every round, the memberships once.
  const std::int64_t n = points.count, nf = points.features, rounds = got.rounds;
  const std::int64_t blocks = km::Clustering::block_count(n);
  const std::int64_t word = 4;
  const Moved run = moved(rt) - before;
  CHECK(run.host_to_device == word * (n * nf + n + blocks * k * nf + blocks * k + rounds * k * nf));
  CHECK(run.device_to_host == word * (rounds * (k * nf + k) + n));
}

TEST_CASE(
    "rodinia kmeans: split over cpu0 and opencl0 (numa0, percentage:[50,50]) the clusters equal a serial "
    "reference") {
  Runtime rt;
  const Hierarchy discovered = rt.hierarchy();
  if (!has_leaves(discovered, {"cpu0", "opencl0"})) return;
  use_leaves(rt, discovered, {"cpu0", "opencl0"});
  km::Clustering clustering(rt, "numa0", "percentage:[50,50]");
  for (int k : {2, 5}) {
    CAPTURE(k);
    check_same(clustering.run(small_points(), k, 0.001f), reference(small_points(), k, 0.001f));
    const RegionStats region = last_region(rt);
    CHECK(region.pieces.size() == 2);
  }
}

TEST_CASE("rodinia kmeans: a binary file whose header disagrees with its size is refused before allocating") {
  const std::string path = "kmeans_test_binary.bin";
  {
    std::ofstream text(path);
    text << "1 0.5 0.25\n2 0.75 0.5\n";  // a text file read as binary: its header asks for 1e18 bytes
  }
  CHECK_THROWS_WITH_AS(km::read_binary(path),
                       ("'" + path + "' is not a kmeans binary file (int32 points, int32 features, floats)").c_str(),
                       std::runtime_error);
  km::Points points;
  points.count = 3;
  points.features = 2;
  points.values.assign({1, 2, 3, 4, 5, 6});
  km::write_binary(path, points);
  const km::Points back = km::read_binary(path);
  CHECK(back.count == 3);
  CHECK(back.features == 2);
  CHECK(std::vector<float>(back.values.begin(), back.values.end()) == std::vector<float>{1, 2, 3, 4, 5, 6});
  std::remove(path.c_str());
}

TEST_CASE("rodinia kmeans: the text reader reads dense and sparse files alike, past the room it takes at first") {
  // One-digit values two bytes apart (denser than the reader's first guess
  // of four bytes a value) and long ones: the values, in order, either way.
  const std::string path =
      std::filesystem::temp_directory_path() / ("canopy-kmeans-read-" + std::to_string(::getpid()));
  for (const bool dense : {true, false}) {
    CAPTURE(dense);
    std::vector<float> expected;
    {
      std::ofstream out(path);
      for (int p = 0; p < 5000; ++p) {
        out << p;
        for (int f = 0; f < 6; ++f) {
          const float v = dense ? float((p + f) % 10) : float((p * 6 + f) % 1000) + 0.125f;
          expected.push_back(v);
          out << (dense ? "," : "    ") << v;
        }
        out << '\n';
      }
    }
    const auto points = rodinia::kmeans::read_text(path);
    CHECK(points.count == 5000);
    CHECK(points.features == 6);
    REQUIRE(points.values.size() == expected.size());
    CHECK(std::equal(points.values.begin(), points.values.end(), expected.begin()));
  }
  std::filesystem::remove(path);
}
