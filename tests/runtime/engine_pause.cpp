// Waiting on part of the tree, and the policy read at run time:
// pause(location) waits for the leaves below that location only (a region
// held on another leaf keeps running), and policy "runtime" takes
// CANOPY_POLICY, or fails saying the variable is not set.
#include <doctest/doctest.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include <canopy/runtime/completion.hpp>

#include "engine_trees.hpp"
#include "scoped_setting.hpp"

using namespace canopy;
using namespace canopy::engine_tests;

namespace {

constexpr std::int64_t kOuter = 20000, kInner = 100000;
// Enough points that a region is queued on its leaf's worker, not run by the launching thread.
constexpr std::int64_t kQueued = 100000;

// Spins while gate[0] is 0, counting its steps in steps[i]: up to kOuter *
// kInner atomic adds (many seconds) with the gate shut, a few microseconds
// once it opens. The host opens it by writing the wrapped memory directly.
const Kernel<void(In<std::int64_t>, InOut<std::int64_t>)>& hold() {
  static const Kernel kernel("hold",
                             [](In<std::int64_t> gate, InOut<std::int64_t> steps) {
                               Idx i = index(0);
                               For(0, kOuter, [&](auto) {
                                 If(gate[0] == 0, [&] { For(0, kInner, [&](auto) { atomic_add(steps[i], 1); }); });
                               });
                             },
                             {"gate", "steps"});
  return kernel;
}

const Kernel<void(Out<std::int64_t>, Val<std::int64_t>)>& fill_scaled() {
  static const Kernel kernel("fill_scaled",
                             [](Out<std::int64_t> x, Val<std::int64_t> k) { x[index(0)] = index(0) * k; }, {"x", "k"});
  return kernel;
}

using ScopedEnvironment = canopy::testing::ScopedSetting;

// next = from + shift, over every point.
const Kernel<void(Out<std::int64_t>, In<std::int64_t>, In<std::int64_t>)>& add_shift() {
  static const Kernel kernel("add_shift",
                             [](Out<std::int64_t> next, In<std::int64_t> from, In<std::int64_t> shift) {
                               next[index(0)] = from[index(0)] + shift[index(0)];
                             },
                             {"next", "from", "shift"});
  return kernel;
}

}  // namespace

TEST_CASE("prune_when_doubled: finished entries go once the list has doubled, unfinished ones never") {
  // Entries are numbers; the even ones are finished.
  std::vector<int> list;
  std::size_t next_prune = 0;
  const auto finished = [](int v) { return v % 2 == 0; };
  std::size_t largest = 0;
  for (int v = 1; v <= 1001; ++v) {
    runtime::prune_when_doubled(list, next_prune, finished);
    list.push_back(v);
    largest = std::max(largest, list.size());
  }
  // 501 odd numbers were pushed and none was dropped, in their order.
  std::vector<int> odd;
  for (int v : list)
    if (v % 2) odd.push_back(v);
  REQUIRE(odd.size() == 501);
  for (std::size_t k = 0; k < odd.size(); ++k) CHECK(odd[k] == int(2 * k + 1));
  // At most twice the unfinished entries, and 16 more, at any time.
  CHECK(largest <= 2 * 501 + 16);
  CHECK(list.size() < 1001);
}

TEST_CASE("engine: a thousand queued regions reading one array, then a region elsewhere that writes it") {
  // A thousand regions on cpuB and then twenty on cpuA read `shift`, so its
  // readers pile up while the workers are behind; the region on cpuA that
  // rewrites it must wait for every one of them, the old ones on cpuB too
  // (cpuA's queue orders it after cpuA's readers only).
  Runtime rt;
  use_tree(rt, two_leaf_tree());
  rt.fuse(false);  // fused, a chain of these regions is one region and one reader
  constexpr int kSteps = 1000, kOthers = 20;
  std::vector<std::int64_t> a(kQueued), b(kQueued, -1), c(kQueued, 0), d(kQueued, -1), shift(kQueued);
  for (std::int64_t i = 0; i < kQueued; ++i) a[std::size_t(i)] = i, shift[std::size_t(i)] = i % 7 + 1;
  auto a_array = rt.wrap(a.data(), kQueued), b_array = rt.wrap(b.data(), kQueued);
  auto c_array = rt.wrap(c.data(), kQueued), d_array = rt.wrap(d.data(), kQueued);
  auto shift_array = rt.wrap(shift.data(), kQueued);
  auto step = [&](const std::string& leaf, Array<std::int64_t>& x, Array<std::int64_t>& y, int k) {
    rt.region(add_shift()).over(kQueued).at(leaf).launch(k % 2 ? x : y, k % 2 ? y : x, shift_array);
  };
  for (int k = 0; k < kSteps; ++k) step("cpuB", a_array, b_array, k);
  for (int k = 0; k < kOthers; ++k) step("cpuA", c_array, d_array, k);
  rt.region(fill_scaled()).over(kQueued).at("cpuA").launch(shift_array, 0);
  rt.pause();
  // After an even number of steps the values are back in a and c: each
  // point grew by its shift once per step.
  bool right = true;
  for (std::int64_t i = 0; i < kQueued; ++i) right = right && a[std::size_t(i)] == i + kSteps * (i % 7 + 1);
  CHECK(right);
  for (std::int64_t i = 0; i < kQueued; ++i) right = right && c[std::size_t(i)] == kOthers * (i % 7 + 1);
  CHECK(right);
  for (std::int64_t i = 0; i < kQueued; ++i) right = right && shift[std::size_t(i)] == 0;
  CHECK(right);
}

TEST_CASE("engine: pause(location) waits for that subtree only") {
  Runtime rt;
  use_tree(rt, two_leaf_tree());
  std::vector<std::int64_t> gate(1, 0), steps(1, 0), out(kQueued, -1);
  auto gate_array = rt.wrap(gate.data(), 1, named("gate"));
  auto steps_array = rt.wrap(steps.data(), 1, named("steps"));
  auto out_array = rt.wrap(out.data(), kQueued, named("out"));

  rt.region(hold()).over(1).at("cpuA").launch(gate_array, steps_array);
  rt.region(fill_scaled()).over(kQueued).at("cpuB").launch(out_array, 3);
  rt.pause("cpuB");
  // cpuB's region is done (read straight from the program's memory, without host()).
  bool filled = true;
  for (std::int64_t i = 0; i < kQueued; ++i) filled = filled && out[std::size_t(i)] == 3 * i;
  CHECK(filled);
  // cpuA's region is still held: open the gate, and it ends before running all its steps.
  std::atomic_ref<std::int64_t>(gate[0]).store(1);
  rt.pause("cpuA");
  CHECK(steps[0] % kInner == 0);
  CHECK(steps[0] < kOuter * kInner);
  const Stats stats = rt.stats();
  REQUIRE(stats.recent.size() == 2);
  CHECK(pieces_of(stats.recent[0]) == std::vector<std::string>{"cpuA[0,1)"});
  CHECK(pieces_of(stats.recent[1]) == std::vector<std::string>{"cpuB[0,100000)"});
  rt.pause();
  CHECK(error_of([&] { rt.pause("moon"); }) ==
        "no location 'moon' in the hierarchy; known locations: node, numa0, cpuA, cpuB");
}

TEST_CASE("engine: pause(location) above both leaves waits for both") {
  Runtime rt;
  use_tree(rt, two_leaf_tree());
  std::vector<std::int64_t> left(kQueued, 0), right(kQueued, 0);
  auto left_array = rt.wrap(left.data(), kQueued);
  auto right_array = rt.wrap(right.data(), kQueued);
  for (int k = 1; k <= 30; ++k) {
    rt.region(fill_scaled()).over(kQueued).at("cpuA").launch(left_array, k);
    rt.region(fill_scaled()).over(kQueued).at("cpuB").launch(right_array, k);
  }
  rt.pause("numa0");
  CHECK(left[kQueued - 1] == (kQueued - 1) * 30);
  CHECK(right[kQueued - 1] == (kQueued - 1) * 30);
}

TEST_CASE("engine: policy 'runtime' takes CANOPY_POLICY as it was when the Runtime was made") {
  // The pieces of one launch of policy 'runtime' on a runtime made with CANOPY_POLICY = `policy`.
  auto pieces_with = [](const char* policy) {
    ScopedEnvironment setting("CANOPY_POLICY", policy);
    Runtime rt;
    use_tree(rt, two_leaf_tree());
    auto x = rt.array<std::int64_t>(1000, at("numa0"));
    rt.region(fill_scaled()).over(1000).policy("runtime").launch(x, 2);
    rt.pause();
    CHECK(x.host()[999] == 999 * 2);
    std::string text = last_region(rt).policy;
    for (const std::string& piece : pieces_of(last_region(rt))) text += " " + piece;
    return text;
  };
  CHECK(pieces_with("percentage:[25,75]") == "percentage:[25,75] cpuA[0,250) cpuB[250,1000)");
  {
    // Gecko's name for the variable, read when CANOPY_POLICY is not set.
    ScopedEnvironment gecko("GECKO_POLICY", "percentage:[40,60]");
    CHECK(pieces_with(nullptr) == "percentage:[40,60] cpuA[0,400) cpuB[400,1000)");
    CHECK(pieces_with("percentage:[25,75]") == "percentage:[25,75] cpuA[0,250) cpuB[250,1000)");  // Canopy's wins
  }
  CHECK(pieces_with(" range:[10, 20, 30, 940] ") ==
        "range:[10,20,30,940] cpuA[0,10) cpuB[10,30) cpuA[30,60) cpuB[60,1000)");

  Runtime rt;
  use_tree(rt, two_leaf_tree());
  auto x = rt.array<std::int64_t>(1000, at("numa0"));
  {
    // Read once: changing the variable later does not change this runtime's regions.
    ScopedEnvironment later("CANOPY_POLICY", "percentage:[25,75]");
    CHECK(error_of([&] { rt.region(fill_scaled()).over(1000).policy("runtime").launch(x, 4); }) ==
          "policy 'runtime' takes the policy from CANOPY_POLICY (or GECKO_POLICY) as it was when the Runtime "
          "was made, and neither was set then; set CANOPY_POLICY to one of static, flatten, percentage:[...], "
          "range:[...], any or adaptive before making the Runtime");
  }
  {
    ScopedEnvironment policy("CANOPY_POLICY", "evenly");
    CHECK(error_of([] { Runtime bad; }) ==
          "CANOPY_POLICY='evenly' is not allowed; use static, flatten, percentage:[...], range:[...], any or adaptive "
          "(CANOPY_POLICY: invalid policy \"evenly\" at character 1: expected a policy name (static, flatten, "
          "percentage, range, any, runtime or adaptive), found 'evenly')");
  }
  {
    ScopedEnvironment policy("CANOPY_POLICY", "range:[10,20]");
    Runtime short_range;
    use_tree(short_range, two_leaf_tree());
    auto y = short_range.array<std::int64_t>(1000, at("numa0"));
    CHECK(error_of([&] { short_range.region(fill_scaled()).over(1000).policy("runtime").launch(y, 4); }) ==
          "region of kernel 'fill_scaled': policy range:[10,20] lists 30 iterations but the region's range has 1000; "
          "make the numbers sum to the range's length");
    CHECK(short_range.stats().regions == 0);  // the refused launch changed nothing
  }
  CHECK(rt.stats().regions == 0);
}
