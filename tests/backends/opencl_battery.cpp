// The kernel battery (tests/battery/) on the OpenCL device: every case of the
// table as OpenCL C, built and run by the device's platform (PoCL here),
// checked against the reference interpreter. Also both ways the OpenCL C of
// a reduction can walk its points (chunked for CPUs, strided for GPUs): the
// device builds one, the test builds the other from its own source.
#include <doctest/doctest.h>

#include <canopy/canopy.hpp>
#include <canopy/jit/opencl_c.hpp>

#include "opencl_support.hpp"

using namespace canopy;
using namespace battery;

namespace {

void run_group(const std::string& group) {
  OPENCL_DEVICE_OR_SKIP(device);
  battery::run_group(group, "OpenCL", [device](const Case& c) { return run_on(*device, c); });
}

}  // namespace

TEST_CASE("battery on OpenCL: operators" * doctest::test_suite("opencl")) { run_group("operators"); }
TEST_CASE("battery on OpenCL: conversions and math functions" * doctest::test_suite("opencl")) { run_group("math"); }
TEST_CASE("battery on OpenCL: control flow, loops and scalars" * doctest::test_suite("opencl")) {
  run_group("control");
}
TEST_CASE("battery on OpenCL: reductions and atomics" * doctest::test_suite("opencl")) { run_group("reductions"); }
TEST_CASE("battery on OpenCL: 1-D, 2-D and 3-D shapes and pieces" * doctest::test_suite("opencl")) {
  run_group("shapes");
}

TEST_CASE("battery on OpenCL: both ways of walking a reduction's points" * doctest::test_suite("opencl")) {
  OPENCL_DEVICE_OR_SKIP(device);
  Kernel stats("walk_stats",
               [](In<i64> x, Sum<i64> total, Min<i64> lowest, Max<i32> last) {
                 Idx i = index(0);
                 total += x[i] * (i + 1);
                 lowest.combine(x[i]);
                 last.combine(cast<i32>(i));
               },
               {"x", "total", "lowest", "last"});
  Kernel cube("walk_cube",
              [](In<i32, 3> v, Sum<i64> total) {
                Idx i = index(0), j = index(1), k = index(2);
                total += cast<i64>(v(i, j, k)) * (i - 2 * j + 3 * k);
              },
              {"v", "total"});
  Random random(2525);
  static const std::vector<Case> walks{
      {"reductions",
       "walk_stats over [17,100000)",
       optimized(stats),
       {HostArray::of<i64>(random.mixed<i64>(100003)), ReductionArg{}, ReductionArg{}, ReductionArg{}},
       range_of({17}, {100000}),
       {}},
      {"reductions",
       "walk_cube over [1,9)x[2,12)x[3,20)",
       optimized(cube),
       {HostArray::of<i32>(random.values<i32>(9 * 13 * 21, -1000, 1000), {9, 13, 21}, 3), ReductionArg{}},
       range_of({1, 2, 3}, {9, 12, 20}),
       {}}};
  for (auto walk : {jit::ReductionWalk::Chunked, jit::ReductionWalk::Strided}) {
    const std::string name = walk == jit::ReductionWalk::Chunked ? "chunked" : "strided";
    for (const Case& c : walks) {
      const auto program = device->compile_source(c.kernel, jit::opencl_c_source(*c.kernel, {walk}));
      CHECK(check(c, run_program(*device, *program, c.args, c.range), "OpenCL " + name) > 0);
    }
  }
}
