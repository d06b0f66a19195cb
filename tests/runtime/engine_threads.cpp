// Regions launched from several host threads at once on shared arrays split
// over two leaves: every launch runs once, in an order the arrays' readers and
// writers allow, and none waits forever behind another.
#include <doctest/doctest.h>

#include <cstdint>
#include <thread>
#include <vector>

#include "engine_trees.hpp"

using namespace canopy;
using namespace canopy::engine_tests;

namespace {

const Kernel<void(InOut<std::int64_t>)>& increment() {
  static const Kernel kernel("increment", [](InOut<std::int64_t> x) { x[index(0)] += 1; }, {"x"});
  return kernel;
}

const Kernel<void(InOut<std::int64_t>, In<std::int64_t>)>& accumulate() {
  static const Kernel kernel("accumulate",
                             [](InOut<std::int64_t> x, In<std::int64_t> y) { x[index(0)] += y[index(0)]; }, {"x", "y"});
  return kernel;
}

}  // namespace

TEST_CASE("engine: four threads launch on one shared array split over two leaves") {
  Runtime rt;
  use_tree(rt, two_leaf_tree());
  const std::int64_t n = 40000;  // large enough that every launch is queued on both leaves
  const int rounds = 150;
  auto shared = rt.array<std::int64_t>(n, at("numa0") | named("shared"));
  auto ones = rt.array<std::int64_t>(n, at("numa0") | named("ones"));
  for (auto& v : ones.host()) v = 1;
  std::vector<Array<std::int64_t>> own;
  for (int t = 0; t < 4; ++t) own.push_back(rt.array<std::int64_t>(n, at("numa0")));
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      auto& mine = own[std::size_t(t)];
      for (int r = 0; r < rounds; ++r) {
        rt.region(increment()).over(n).launch(shared);       // writes the shared array
        rt.region(accumulate()).over(n).launch(mine, ones);  // reads one every thread reads
      }
    });
  for (auto& thread : threads) thread.join();
  rt.pause();
  bool exact = true;
  for (std::int64_t v : shared.host()) exact = exact && v == 4 * rounds;
  CHECK(exact);
  for (auto& mine : own) {
    auto h = mine.host();
    CHECK(h[0] == rounds);
    CHECK(h[n - 1] == rounds);
  }
  CHECK(rt.stats().regions == 4 * rounds * 2);
}

TEST_CASE("engine: threads chain through each other's arrays") {
  Runtime rt;
  use_tree(rt, two_leaf_tree());
  const std::int64_t n = 30000;
  const int rounds = 100;
  // Thread t adds array t-1 into array t: every launch reads what another thread writes.
  std::vector<Array<std::int64_t>> chain;
  for (int t = 0; t < 4; ++t) chain.push_back(rt.array<std::int64_t>(n, at("numa0")));
  auto ones = rt.array<std::int64_t>(n, at("numa0"));
  for (auto& v : ones.host()) v = 1;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int r = 0; r < rounds; ++r) {
        rt.region(accumulate()).over(n).launch(chain[std::size_t(t)], t == 0 ? ones : chain[std::size_t(t - 1)]);
        rt.region(increment()).over(n).launch(chain[std::size_t((t + 1) % 4)]);
      }
    });
  for (auto& thread : threads) thread.join();
  rt.pause();
  // The order between threads is free, so only what does not depend on it is checked: every array
  // got `rounds` increments and more, and each array's elements agree.
  for (auto& a : chain) {
    auto h = a.host();
    bool uniform = true;
    for (std::int64_t i = 1; i < n; ++i) uniform = uniform && h[i] == h[0];
    CHECK(uniform);
    CHECK(h[0] >= rounds);
  }
  CHECK(chain[0].host()[0] == 2 * rounds);  // its ones and thread 3's increments commute
  CHECK(rt.stats().regions == 4 * rounds * 2);
}
