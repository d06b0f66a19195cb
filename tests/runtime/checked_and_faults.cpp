// Checked mode (CANOPY_CHECK=bounds) and injected faults (CANOPY_FAULT) on
// CPU leaves. An index out of bounds becomes the canopy::Error that names the
// kernel, the array, the index and the extent, raised at the next pause; an
// in-bounds kernel gives bit-identical results checked and unchecked. Each of
// the CPU backend's four operations failing once ends in the right values or
// in a clear error, never a crash, a hang or a wrong value.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include <canopy/backends/fault_injection.hpp>

#include "engine_trees.hpp"

using namespace canopy;
using namespace canopy::engine_tests;

namespace {

// A fault plan for one test; no faults once it ends.
class FaultPlanFor {
 public:
  explicit FaultPlanFor(const char* plan) { backends::set_fault_plan(plan); }
  ~FaultPlanFor() { backends::set_fault_plan(""); }
  FaultPlanFor(const FaultPlanFor&) = delete;
  FaultPlanFor& operator=(const FaultPlanFor&) = delete;
};

// out[i] = in[i + shift]: with shift 1 the last point reads one past the end
// of `in`. The shift is a parameter so that the launch is not refused before
// it runs (launch_bounds.hpp refuses constant offsets): checked mode finds it.
const Kernel<void(Out<double>, In<double>, Val<std::int64_t>)>& shift_read() {
  static const Kernel kernel(
      "shift_read",
      [](Out<double> out, In<double> in, Val<std::int64_t> shift) { out[index(0)] = in[index(0) + shift]; },
      {"out", "in", "shift"});
  return kernel;
}

// out(i, j + shift) = in(i, j): with shift 1 the last column writes one past
// the end of `out`'s rows (a parameter, as in shift_read).
const Kernel<void(Out<double, 2>, In<double, 2>, Val<std::int64_t>)>& shift_write_2d() {
  static const Kernel kernel("shift_write_2d",
                             [](Out<double, 2> out, In<double, 2> in, Val<std::int64_t> shift) {
                               Idx i = index(0), j = index(1);
                               out(i, j + shift) = in(i, j);
                             },
                             {"out", "in", "shift"});
  return kernel;
}

// In bounds everywhere: a gather through an index array, a 3-point stencil
// guarded at the ends, and a loop.
const Kernel<void(Out<double>, In<double>, In<std::int64_t>)>& mixed() {
  static const Kernel kernel("checked_mixed",
                             [](Out<double> out, In<double> in, In<std::int64_t> where) {
                               Idx i = index(0);
                               Var<double> v = in[where[i]];
                               If(i > 0 && i < in.extent(0) - 1, [&] { v = v + 0.5 * (in[i - 1] + in[i + 1]); });
                               For(0, 4, [&](Value<std::int64_t> k) { v = v * 0.75 + in[(i + k) % in.extent(0)]; });
                               out[i] = v;
                             },
                             {"out", "in", "where"});
  return kernel;
}

const Kernel<void(In<double>, Sum<double>)>& total() {
  static const Kernel kernel("checked_total", [](In<double> x, Sum<double> s) { s += x[index(0)] * x[index(0)]; },
                             {"x", "s"});
  return kernel;
}

// out[i] = 2 * in[i] + 1.
const Kernel<void(Out<double>, In<double>)>& twice_plus_one() {
  static const Kernel kernel("twice_plus_one",
                             [](Out<double> out, In<double> in) { out[index(0)] = 2.0 * in[index(0)] + 1.0; },
                             {"out", "in"});
  return kernel;
}

// out[i] = where[i + shift] added `count` times. where[i + shift] is the
// same in every iteration and the loop writes only doubles: the optimizer
// reads it once before the loop, and only when the loop runs (count > 0).
const Kernel<void(InOut<double>, In<std::int64_t>, Val<std::int64_t>, Val<std::int64_t>)>& repeated_read() {
  static const Kernel kernel(
      "repeated_read",
      [](InOut<double> out, In<std::int64_t> where, Val<std::int64_t> shift, Val<std::int64_t> count) {
        Idx i = index(0);
        out[i] = 0.0;
        For(0, count, [&](Idx) { out[i] = out[i] + cast<double>(where[i + shift]); });
      },
      {"out", "where", "shift", "count"});
  return kernel;
}

template <class T>
std::vector<T> values_of(const Array<T>& array) {
  auto view = array.host_read();
  return std::vector<T>(view.begin(), view.end());
}

// What mixed() and total() give on `n` points, in a runtime made now (so it
// reads CANOPY_CHECK as the caller set it).
struct MixedResult {
  std::vector<double> out;
  double sum = 0;
};
MixedResult run_mixed(std::int64_t n) {
  Runtime rt;
  use_tree(rt, one_leaf_tree());
  auto in = rt.array<double>(n);
  auto where = rt.array<std::int64_t>(n);
  auto out = rt.array<double>(n);
  {
    auto v = in.host();
    auto w = where.host();
    for (std::int64_t i = 0; i < n; ++i) {
      v[i] = 0.001 * double(i * i % 997) - 0.3;
      w[i] = (i * 7919) % n;
    }
  }
  rt.region(mixed()).over(n).launch(out, in, where);
  MixedResult result;
  result.sum = rt.region(total()).over(n).reduce(out);
  rt.pause();
  result.out = values_of(out);
  return result;
}

// The runtime's recoveries so far.
RecoveryStats recoveries_of(const Runtime& rt) { return rt.stats().recoveries; }

}  // namespace

TEST_CASE("checked mode: a read past the end raises kernel, array, index and extent at pause (cpu)") {
  EnvironmentFor check("CANOPY_CHECK", "bounds");
  Runtime rt;
  use_tree(rt, one_leaf_tree());
  constexpr std::int64_t n = 100;
  auto in = rt.array<double>(n);
  auto out = rt.array<double>(n);
  {
    auto v = in.host();
    for (std::int64_t i = 0; i < n; ++i) v[i] = double(i);
  }
  rt.region(shift_read()).over(n).launch(out, in, std::int64_t{1});
  CHECK(error_of([&] { rt.pause(); }) ==
        "kernel 'shift_read' read array 'in' out of bounds: index 100 in dimension 0, whose extent is 100 (found by "
        "CANOPY_CHECK=bounds; the access was skipped); keep every index in [0, extent)");
  // The points in bounds ran; the faulting load gave 0 instead of reading past the end.
  const auto result = values_of(out);
  for (std::int64_t i = 0; i + 1 < n; ++i) CHECK(result[static_cast<std::size_t>(i)] == double(i + 1));
  CHECK(result.back() == 0.0);
  // The error was raised once; the runtime goes on.
  CHECK(error_of([&] { rt.pause(); }) == "no error");
}

TEST_CASE("checked mode: pause() raises the first launched region's error, having waited for every region") {
  EnvironmentFor check("CANOPY_CHECK", "bounds");
  Runtime rt;
  use_tree(rt, one_leaf_tree());
  // pause() waits for the newest region first; the error it raises is still
  // the one of the region launched first (index 100), not the later one's (200).
  auto first_in = rt.array<double>(100), first_out = rt.array<double>(100);
  auto later_in = rt.array<double>(200), later_out = rt.array<double>(200);
  {
    auto v = later_in.host();
    for (std::int64_t i = 0; i < 200; ++i) v[i] = double(i);
  }
  rt.region(shift_read()).over(100).launch(first_out, first_in, std::int64_t{1});
  rt.region(shift_read()).over(200).launch(later_out, later_in, std::int64_t{1});
  const std::string error = error_of([&] { rt.pause(); });
  CHECK(error.find("index 100 in dimension 0, whose extent is 100") != std::string::npos);
  const auto later = values_of(later_out);  // the later region ran whole before pause() returned
  for (std::int64_t i = 0; i + 1 < 200; ++i) CHECK(later[static_cast<std::size_t>(i)] == double(i + 1));
  CHECK(error_of([&] { rt.pause(); }) == "no error");
}

TEST_CASE("checked mode: a 2-D write past a row's end names dimension 1 (cpu, split over two leaves)") {
  EnvironmentFor check("CANOPY_CHECK", "bounds");
  Runtime rt;
  use_tree(rt, two_leaf_tree());
  auto in = rt.array<double, 2>(Shape(64, 5));
  auto out = rt.array<double, 2>(Shape(64, 5));
  rt.region(shift_write_2d()).over(64, 5).at("numa0").launch(out, in, std::int64_t{1});
  CHECK(error_of([&] { rt.pause(); }) ==
        "kernel 'shift_write_2d' wrote array 'out' out of bounds: index 5 in dimension 1, whose extent is 5 (found by "
        "CANOPY_CHECK=bounds; the access was skipped); keep every index in [0, extent)");
}

TEST_CASE("checked mode: an in-bounds kernel gives the same bits checked and unchecked (cpu)") {
  MixedResult unchecked, checked;
  {
    EnvironmentFor check("CANOPY_CHECK", nullptr);
    unchecked = run_mixed(5000);
  }
  {
    EnvironmentFor check("CANOPY_CHECK", "bounds");
    checked = run_mixed(5000);
  }
  REQUIRE(checked.out.size() == unchecked.out.size());
  int differ = 0;
  for (std::size_t i = 0; i < checked.out.size(); ++i) differ += checked.out[i] != unchecked.out[i];
  CHECK(differ == 0);
  // A float sum may add in another order (the checked loop does not
  // vectorize the same way): equal to rounding, not to the bit.
  CHECK(checked.sum == doctest::Approx(unchecked.sum).epsilon(1e-12));
  CHECK(checked.sum != 0.0);
}

TEST_CASE("a load moved out of a loop is made only when the loop runs: zero iterations read nothing (cpu)") {
  for (const char* mode : {"bounds", "off"}) {
    INFO("CANOPY_CHECK=" << std::string(mode));
    EnvironmentFor check("CANOPY_CHECK", mode);
    Runtime rt;
    use_tree(rt, one_leaf_tree());
    constexpr std::int64_t n = 1000;
    auto where = rt.array<std::int64_t>(n);
    auto out = rt.array<double>(n);
    {
      auto w = where.host();
      for (std::int64_t i = 0; i < n; ++i) w[i] = (i * 37) % 101;
    }
    rt.region(repeated_read()).over(n).launch(out, where, std::int64_t{0}, std::int64_t{3});
    rt.pause();
    const auto thrice = values_of(out);
    for (std::int64_t i = 0; i < n; ++i) CHECK(thrice[static_cast<std::size_t>(i)] == 3.0 * double((i * 37) % 101));
    // Far past the end (2^40 elements: unmapped memory) with no iteration:
    // neither an error nor a fault, and every out[i] is 0.
    rt.region(repeated_read()).over(n).launch(out, where, std::int64_t{1} << 40, std::int64_t{0});
    CHECK(error_of([&] { rt.pause(); }) == "no error");
    const auto none = values_of(out);
    CHECK(std::count(none.begin(), none.end(), 0.0) == n);
  }
}

TEST_CASE("checked mode: CANOPY_CHECK takes bounds or off, and says so otherwise") {
  EnvironmentFor check("CANOPY_CHECK", "everything");
  CHECK(error_of([] { Runtime rt; }) ==
        "CANOPY_CHECK='everything' is not allowed; use bounds (check every array index of generated code) or off");
}

TEST_CASE("faults: CANOPY_FAULT entries that do not parse are refused with the fix") {
  CHECK(error_of([] { backends::set_fault_plan("opencl.launch"); }) ==
        "CANOPY_FAULT='opencl.launch': entry 'opencl.launch' is not of the form <backend>.<operation>:<n>; write "
        "<backend>.<operation>:<n> with backend cpu, opencl, cuda or level_zero, operation compile, alloc, copy or "
        "launch, and n >= 1 (e.g. opencl.launch:1)");
  CHECK(error_of([] { backends::set_fault_plan("cpu.launch:1,gpu.copy:2"); }) ==
        "CANOPY_FAULT='cpu.launch:1,gpu.copy:2': entry 'gpu.copy:2' names no backend Canopy has ('gpu'); write "
        "<backend>.<operation>:<n> with backend cpu, opencl, cuda or level_zero, operation compile, alloc, copy or "
        "launch, and n >= 1 (e.g. opencl.launch:1)");
  CHECK(error_of([] { backends::set_fault_plan("cpu.read:1"); }).find("names no operation") != std::string::npos);
  CHECK(error_of([] { backends::set_fault_plan("cpu.launch:0"); }).find("whole number from 1 up") != std::string::npos);
  // Past the range of a long long: refused, not taken as the largest one.
  CHECK(error_of([] {
          backends::set_fault_plan("cpu.launch:99999999999999999999");
        }).find("has a call number past 9223372036854775807") != std::string::npos);
  backends::set_fault_plan(" cpu.launch:2 , opencl.copy:1 ");
  CHECK(backends::fault_plan() == "cpu.launch:2,opencl.copy:1");
  backends::set_fault_plan("");
  CHECK(backends::fault_plan().empty());
}

TEST_CASE("faults: the n-th call fails, once") {
  FaultPlanFor plan("cuda.copy:3");
  CHECK_FALSE(backends::inject_fault("cuda", backends::FaultOperation::Copy));
  CHECK_FALSE(backends::inject_fault("cuda", backends::FaultOperation::Launch));
  CHECK_FALSE(backends::inject_fault("cuda", backends::FaultOperation::Copy));
  CHECK(backends::inject_fault("cuda", backends::FaultOperation::Copy));
  CHECK_FALSE(backends::inject_fault("cuda", backends::FaultOperation::Copy));
  CHECK_FALSE(backends::inject_fault("opencl", backends::FaultOperation::Copy));
}

TEST_CASE("faults: cpu.launch fails one piece; it runs on the other leaf and the values are right") {
  Runtime rt;
  use_tree(rt, two_leaf_tree());
  constexpr std::int64_t n = 200000;  // queued on the leaves, not run by the launching thread
  auto in = rt.array<double>(n);
  auto out = rt.array<double>(n);
  {
    auto v = in.host();
    for (std::int64_t i = 0; i < n; ++i) v[i] = double(i % 1000);
  }
  FaultPlanFor plan("cpu.launch:1");
  rt.region(twice_plus_one()).over(n).at("numa0").launch(out, in);
  CHECK(error_of([&] { rt.pause(); }) == "no error");
  const auto result = values_of(out);
  int wrong = 0;
  for (std::int64_t i = 0; i < n; ++i) wrong += result[static_cast<std::size_t>(i)] != 2.0 * double(i % 1000) + 1.0;
  CHECK(wrong == 0);
  CHECK(recoveries_of(rt).launches == 1);
  CHECK(recoveries_of(rt).total() == 1);
}

TEST_CASE("faults: cpu.launch on the only leaf runs the piece again there") {
  Runtime rt;
  use_tree(rt, one_leaf_tree());
  auto in = rt.array<double>(1000);
  auto out = rt.array<double>(1000);
  {
    auto v = in.host();
    for (std::int64_t i = 0; i < 1000; ++i) v[i] = double(i);
  }
  FaultPlanFor plan("cpu.launch:1");
  rt.region(twice_plus_one()).over(1000).launch(out, in);
  CHECK(error_of([&] { rt.pause(); }) == "no error");
  CHECK(values_of(out)[999] == 1999.0);
  CHECK(recoveries_of(rt).launches == 1);
}

TEST_CASE("faults: cpu.launch failing on every attempt ends in the launch's error") {
  Runtime rt;
  use_tree(rt, one_leaf_tree());
  auto in = rt.array<double>(1000);
  auto out = rt.array<double>(1000);
  FaultPlanFor plan("cpu.launch:1,cpu.launch:2");
  rt.region(twice_plus_one()).over(1000).launch(out, in);
  CHECK(error_of([&] { rt.pause(); }) ==
        "CPU device 'cpu0' could not run kernel 'twice_plus_one' [injected by CANOPY_FAULT=cpu.launch:1]");
  CHECK(recoveries_of(rt).total() == 0);
}

TEST_CASE("faults: a failed region's error reaches a host view of what it wrote, and what read it fails with it") {
  const std::string failure =
      "CPU device 'cpu0' could not run kernel 'twice_plus_one' [injected by CANOPY_FAULT=cpu.launch:1]";
  // Eager fusion: the two regions after the failure, launched over one range,
  // would run as one fused kernel; the one that reads nothing of the failed
  // region's must still run (and only the other fail).
  for (const char* fuse : {"on", "eager"}) {
    const std::string fusion_setting = fuse;
    CAPTURE(fusion_setting);
    EnvironmentFor fusion("CANOPY_FUSE", fuse);
    Runtime rt;
    use_tree(rt, one_leaf_tree());
    constexpr std::int64_t n = 1000;
    auto in = rt.array<double>(n), mid = rt.array<double>(n), out = rt.array<double>(n), other = rt.array<double>(n);
    {
      auto v = in.host();
      for (std::int64_t i = 0; i < n; ++i) v[i] = double(i);
    }
    {
      FaultPlanFor plan("cpu.launch:1,cpu.launch:2");
      rt.region(twice_plus_one()).over(n).launch(mid, in);  // fails: mid is not written
      rt.pause("cpu0");  // waits without reporting: the faults are spent before the plan ends
    }
    rt.region(twice_plus_one()).over(n).launch(out, mid);   // reads what the failed region left: fails with it
    rt.region(twice_plus_one()).over(n).launch(other, in);  // unrelated: runs
    CHECK(error_of([&] { (void)out.host_read(); }) == failure);
    // Told once: the failed region's own array, pause() and a second view say nothing more.
    CHECK(error_of([&] { (void)mid.host_read(); }) == "no error");
    CHECK(error_of([&] { (void)out.host(); }) == "no error");
    CHECK(error_of([&] { rt.pause(); }) == "no error");
    const auto others = values_of(other);
    CHECK(others[0] == 1.0);
    CHECK(others[n - 1] == 2.0 * double(n - 1) + 1.0);
    // Once told, the program may go on: a region reading mid runs again.
    rt.region(twice_plus_one()).over(n).launch(mid, in);
    rt.region(twice_plus_one()).over(n).launch(out, mid);
    CHECK(values_of(out)[10] == 2.0 * 21.0 + 1.0);
    CHECK(error_of([&] { rt.pause(); }) == "no error");
  }
}

TEST_CASE("faults: pause() reports a failure once, for the region and for those that took its failure") {
  const std::string failure =
      "CPU device 'cpu0' could not run kernel 'twice_plus_one' [injected by CANOPY_FAULT=cpu.launch:1]";
  Runtime rt;
  use_tree(rt, one_leaf_tree());
  auto in = rt.array<double>(100), mid = rt.array<double>(100), out = rt.array<double>(100);
  auto copied = rt.array<double>(100);
  {
    FaultPlanFor plan("cpu.launch:1,cpu.launch:2");
    rt.region(twice_plus_one()).over(100).launch(mid, in);
    rt.pause("cpu0");
  }
  rt.region(twice_plus_one()).over(100).launch(out, mid);
  rt.copy(copied, mid);  // a copy of what the failed region left fails with it too
  CHECK(error_of([&] { rt.pause(); }) == failure);
  CHECK(error_of([&] { (void)out.host_read(); }) == "no error");
  CHECK(error_of([&] { (void)copied.host_read(); }) == "no error");
  CHECK(error_of([&] { rt.pause(); }) == "no error");
}

TEST_CASE("faults: cpu.compile fails once; the kernel is compiled again and runs") {
  // A kernel of its own: the engine has not compiled it yet.
  static const Kernel<void(Out<double>, In<double>)> kernel(
      "compiled_twice", [](Out<double> out, In<double> in) { out[index(0)] = in[index(0)] - 3.0; }, {"out", "in"});
  Runtime rt;
  use_tree(rt, one_leaf_tree());
  auto in = rt.array<double>(100);
  auto out = rt.array<double>(100);
  {
    auto v = in.host();
    for (std::int64_t i = 0; i < 100; ++i) v[i] = double(i);
  }
  FaultPlanFor plan("cpu.compile:1");
  rt.region(kernel).over(100).launch(out, in);
  CHECK(error_of([&] { rt.pause(); }) == "no error");
  CHECK(values_of(out)[42] == 39.0);
  CHECK(recoveries_of(rt).compiles == 1);
}

TEST_CASE("faults: cpu.alloc fails an array's allocation with a clear error; every other array is intact") {
  Runtime rt;
  use_tree(rt, one_leaf_tree());
  auto in = rt.array<double>(1000);
  auto out = rt.array<double>(1000);
  {
    auto v = in.host();
    for (std::int64_t i = 0; i < 1000; ++i) v[i] = double(i);
  }
  rt.region(twice_plus_one()).over(1000).launch(out, in);
  rt.pause();
  {
    FaultPlanFor plan("cpu.alloc:1");
    CHECK(error_of([&] { (void)rt.array<double>(4096); }) ==
          "cannot allocate 32768 bytes of host memory [injected by CANOPY_FAULT=cpu.alloc:1]");
  }
  const auto before = values_of(out);
  for (std::int64_t i = 0; i < 1000; ++i) CHECK(before[static_cast<std::size_t>(i)] == 2.0 * double(i) + 1.0);
  // The runtime goes on: a new array and another region work.
  auto again = rt.array<double>(1000);
  rt.region(twice_plus_one()).over(1000).launch(again, out);
  rt.pause();
  CHECK(values_of(again)[10] == 2.0 * 21.0 + 1.0);
  CHECK(values_of(in)[10] == 10.0);
}

TEST_CASE("faults: cpu.copy never fires on CPU leaves (they compute on the host copy in place)") {
  Runtime rt;
  use_tree(rt, two_leaf_tree());
  constexpr std::int64_t n = 200000;
  auto in = rt.array<double>(n);
  auto out = rt.array<double>(n);
  auto copy = rt.array<double>(n);
  {
    auto v = in.host();
    for (std::int64_t i = 0; i < n; ++i) v[i] = double(i % 77);
  }
  FaultPlanFor plan("cpu.copy:1");
  rt.region(twice_plus_one()).over(n).at("numa0").launch(out, in);
  rt.copy(copy, out);
  rt.pause();
  const auto result = values_of(copy);
  int wrong = 0;
  for (std::int64_t i = 0; i < n; ++i) wrong += result[static_cast<std::size_t>(i)] != 2.0 * double(i % 77) + 1.0;
  CHECK(wrong == 0);
  CHECK(recoveries_of(rt).total() == 0);
}
