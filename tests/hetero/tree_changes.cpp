// Devices leave the tree while regions run on the leaves that stay: what
// only a leaving device held comes back to the host, and nothing a running
// region writes is overwritten by it.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <thread>

#include "hetero_support.hpp"

using namespace canopy;
using namespace canopy::hetero_tests;

namespace {

// Every point runs a loop of `rounds` steps before it stores `value`.
const Kernel<void(Out<std::int32_t>, Val<std::int32_t>, Val<std::int32_t>)>& slow_fill() {
  static const Kernel kernel("tree_slow_fill",
                             [](Out<std::int32_t> x, Val<std::int32_t> value, Val<std::int32_t> rounds) {
                               Idx i = index(0);
                               Var<std::int32_t> v = cast<std::int32_t>(i);
                               For(0, rounds, [&](Value<std::int32_t>) { v = (v * 5 + value) & 0xffff; });
                               // v stays below 2^16, so the sum adds 0; the compiler cannot know that
                               // (rounds is not known), so the loop stays.
                               x[i] = value + cast<std::int32_t>(v == rounds + 70000);
                             },
                             {"x", "value", "rounds"});
  return kernel;
}

}  // namespace

TEST_CASE("hetero: a device leaving the tree gives its data back without overwriting a running region's writes" *
          doctest::test_suite("opencl")) {
  Runtime rt;
  const Hierarchy discovered = rt.hierarchy();
  if (!has_leaves(discovered, {"cpu0", accelerator(0), accelerator(1)})) return;
  constexpr std::int64_t n = 200000;
  for (int round = 0; round < 3; ++round) {
    CAPTURE(round);
    use_leaves(rt, discovered, {"cpu0", accelerator(0), accelerator(1)});
    auto x = rt.array<std::int32_t>(n, at("numa0") | named("x"));
    auto kept = rt.array<std::int32_t>(n, at("numa0") | named("kept"));
    // x and kept are current on opencl1 only.
    rt.region(slow_fill()).over(n).at(accelerator(1)).launch(x, 1, 1);
    rt.region(slow_fill()).over(n).at(accelerator(1)).launch(kept, 7, 1);
    rt.pause();
    // cpu0 overwrites x slowly; meanwhile opencl1 leaves the tree and its
    // copies go back to the host: kept's must arrive, x's must not land on
    // what cpu0 wrote.
    rt.region(slow_fill()).over(n).at("cpu0").launch(x, 2, 500);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));  // cpu0 has written some of x
    rt.remove_location(accelerator(1));
    rt.pause();
    std::int64_t wrong_x = 0, wrong_kept = 0;
    for (auto v : x.host_read()) wrong_x += v != 2;
    for (auto v : kept.host_read()) wrong_kept += v != 7;
    CHECK(wrong_x == 0);
    CHECK(wrong_kept == 0);
  }
}
