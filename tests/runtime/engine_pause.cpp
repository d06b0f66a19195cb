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

#include "engine_trees.hpp"

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

/// Sets an environment variable for one scope and puts back what was there.
class ScopedEnvironment {
 public:
  ScopedEnvironment(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value)
      setenv(name, value, 1);
    else
      unsetenv(name);
  }
  ~ScopedEnvironment() {
    if (old_)
      setenv(name_, old_->c_str(), 1);
    else
      unsetenv(name_);
  }
  ScopedEnvironment(const ScopedEnvironment&) = delete;
  ScopedEnvironment& operator=(const ScopedEnvironment&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

}  // namespace

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

TEST_CASE("engine: policy 'runtime' reads CANOPY_POLICY when each region is launched") {
  Runtime rt;
  use_tree(rt, two_leaf_tree());
  auto x = rt.array<std::int64_t>(1000, at("numa0"));
  {
    ScopedEnvironment policy("CANOPY_POLICY", "percentage:[25,75]");
    rt.region(fill_scaled()).over(1000).policy("runtime").launch(x, 2);
    rt.pause();
    CHECK(last_region(rt).policy == "percentage:[25,75]");
    CHECK(pieces_of(last_region(rt)) == std::vector<std::string>{"cpuA[0,250)", "cpuB[250,1000)"});
  }
  {
    ScopedEnvironment policy("CANOPY_POLICY", " range:[10, 20, 30, 940] ");
    rt.region(fill_scaled()).over(1000).policy("runtime").launch(x, 3);
    rt.pause();
    CHECK(last_region(rt).policy == "range:[10,20,30,940]");
    CHECK(pieces_of(last_region(rt)) ==
          std::vector<std::string>{"cpuA[0,10)", "cpuB[10,30)", "cpuA[30,60)", "cpuB[60,1000)"});
  }
  {
    ScopedEnvironment policy("CANOPY_POLICY", nullptr);
    CHECK(error_of([&] { rt.region(fill_scaled()).over(1000).policy("runtime").launch(x, 4); }) ==
          "policy 'runtime' takes the policy from CANOPY_POLICY, which is not set; set CANOPY_POLICY to one of "
          "static, flatten, percentage:[...], range:[...], any or adaptive");
  }
  {
    ScopedEnvironment policy("CANOPY_POLICY", "evenly");
    CHECK(error_of([&] { rt.region(fill_scaled()).over(1000).policy("runtime").launch(x, 4); }) ==
          "CANOPY_POLICY: invalid policy \"evenly\" at character 1: expected a policy name (static, flatten, "
          "percentage, range, any, runtime or adaptive), found 'evenly'");
  }
  {
    ScopedEnvironment policy("CANOPY_POLICY", "range:[10,20]");
    CHECK(error_of([&] { rt.region(fill_scaled()).over(1000).policy("runtime").launch(x, 4); }) ==
          "region of kernel 'fill_scaled': policy range:[10,20] lists 30 iterations but the region's range has 1000; "
          "make the numbers sum to the "
          "range's length");
  }
  // The refused launches changed nothing.
  auto h = x.host();
  CHECK(h[999] == 999 * 3);
  CHECK(rt.stats().regions == 2);
}
