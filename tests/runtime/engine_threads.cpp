// Regions launched from several host threads at once on shared arrays split
// over two leaves: every launch runs once, in an order the arrays' readers and
// writers allow, and none waits forever behind another.
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
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

TEST_CASE("engine: a child of fork() is refused the parent's Runtime instead of hanging, and can end") {
  // Found by a new user: a child that paused on regions its parent launched
  // waited forever (the Runtime's threads do not survive fork()).
  auto rt = std::make_unique<Runtime>();
  use_tree(*rt, one_leaf_tree());
  static const Kernel spin("fork_spin", [](InOut<std::int64_t> a, Val<std::int64_t> rounds) {
    Idx i = index(0);
    Var<std::int64_t> v = a[i];
    For(Value<std::int64_t>(0), rounds, [&](Value<std::int64_t>) { v = (v * 5 + 3) & 0xffff; });
    a[i] = v;
  });
  constexpr std::int64_t n = 4096;
  auto a = rt->array<std::int64_t>(n);
  rt->region(spin).over(n).launch(a, std::int64_t{20000});
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::alarm(20);  // a hang ends the child by SIGALRM, which the parent sees
    int status = 0;
    try {
      rt->pause();
      status |= 1;
    } catch (const Error& e) {
      if (std::string(e.what()).find("pause() in a child process (after fork())") == std::string::npos) status |= 2;
    }
    try {
      rt->region(spin).over(n).launch(a, std::int64_t{1});
      status |= 4;
    } catch (const Error& e) {
      if (std::string(e.what()).find("launching a region in a child process") == std::string::npos) status |= 8;
    }
    try {
      (void)a.host_read();  // waits for the parent's region, unless it ended before fork()
    } catch (const Error& e) {
      if (std::string(e.what()).find("waiting for a region in a child process") == std::string::npos) status |= 16;
    }
    rt.reset();  // must return: the parent's threads are not here to join
    std::_Exit(status);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  CHECK_FALSE(WIFSIGNALED(status));
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  // The parent's Runtime is unchanged by the child.
  rt->pause();
  const auto values = a.host_read();
  std::int64_t v = 0;
  for (int k = 0; k < 20000; ++k) v = (v * 5 + 3) & 0xffff;
  CHECK(values[0] == v);
  CHECK(values[n - 1] == v);
}
