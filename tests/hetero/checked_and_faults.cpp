// Checked mode and injected faults on OpenCL devices (PoCL here). An index
// out of bounds on opencl0 raises the same message as on the CPU; an
// in-bounds kernel split over opencl0 and opencl1 gives the CPU's bits
// checked and unchecked. The fault matrix: a launch, a copy or a compile
// failing once in a region split over the two devices ends in the right
// values with one recovery of that kind counted (failing on every OpenCL
// attempt, the piece runs on the host CPU leaf); an allocation failing ends
// the region with the device's error and every array intact.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include <canopy/backends/discovery_cache.hpp>
#include <canopy/backends/fault_injection.hpp>

#include <canopy/runtime/internal/engine_access.hpp>
#include "hetero_support.hpp"

using namespace canopy;
using namespace canopy::hetero_tests;
using canopy::engine_tests::EnvironmentFor;

namespace {

class FaultPlanFor {
 public:
  explicit FaultPlanFor(const std::string& plan) { backends::set_fault_plan(plan); }
  ~FaultPlanFor() { backends::set_fault_plan(""); }
  FaultPlanFor(const FaultPlanFor&) = delete;
  FaultPlanFor& operator=(const FaultPlanFor&) = delete;
};

// out[i] = in[i + shift]: a parameter, so that only checked mode finds that
// shift 1 reads past the end (a constant offset is refused at launch).
const Kernel<void(Out<double>, In<double>, Val<std::int64_t>)>& shift_read() {
  static const Kernel kernel(
      "hetero_shift_read",
      [](Out<double> out, In<double> in, Val<std::int64_t> shift) { out[index(0)] = in[index(0) + shift]; },
      {"out", "in", "shift"});
  return kernel;
}

// A 2-D five-point stencil guarded at the border and a gather: in bounds everywhere.
const Kernel<void(Out<double, 2>, In<double, 2>, In<std::int32_t>)>& stencil_gather() {
  static const Kernel kernel("hetero_stencil_gather",
                             [](Out<double, 2> out, In<double, 2> in, In<std::int32_t> perm) {
                               Idx i = index(0), j = index(1);
                               Var<double> v = in(i, cast<std::int64_t>(perm[j]));
                               If(i > 0 && i < in.extent(0) - 1 && j > 0 && j < in.extent(1) - 1,
                                  [&] { v = v + 0.25 * (in(i - 1, j) + in(i + 1, j) + in(i, j - 1) + in(i, j + 1)); });
                               out(i, j) = v;
                             },
                             {"out", "in", "perm"});
  return kernel;
}

// out[i] = 3 * in[i] - 2, a kernel of each test's own (so a compile fault
// meets a kernel no device has compiled yet).
Kernel<void(Out<double>, In<double>)> affine_kernel(const std::string& name) {
  return Kernel<void(Out<double>, In<double>)>(
      name, [](Out<double> out, In<double> in) { out[index(0)] = 3.0 * in[index(0)] - 2.0; }, {"out", "in"});
}

constexpr std::int64_t kRows = 96, kCols = 40;

std::vector<double> run_stencil(const std::vector<std::string>& leaves) {
  Runtime rt;
  const Hierarchy discovered = rt.hierarchy();
  use_leaves(rt, discovered, leaves);
  auto in = rt.array<double, 2>(Shape(kRows, kCols), at("numa0"));
  auto out = rt.array<double, 2>(Shape(kRows, kCols), at("numa0"));
  auto perm = rt.array<std::int32_t>(kCols, at("numa0"));
  {
    auto v = in.host();
    for (std::int64_t i = 0; i < kRows; ++i)
      for (std::int64_t j = 0; j < kCols; ++j) v(i, j) = 0.01 * double((i * 31 + j * 17) % 101) - 0.4;
    auto p = perm.host();
    for (std::int64_t j = 0; j < kCols; ++j) p[j] = static_cast<std::int32_t>((j * 7) % kCols);
  }
  rt.region(stencil_gather()).over(kRows, kCols).at("numa0").launch(out, in, perm);
  rt.pause();
  auto view = out.host_read();
  return std::vector<double>(view.begin(), view.end());
}

// The fault `plan` during one region of a fresh kernel at `location` in the
// tree of `leaves` (split by static); checks every value and returns the
// recoveries counted.
RecoveryStats survive(const std::string& plan, const std::vector<std::string>& leaves, const std::string& location,
                      const std::string& name) {
  const auto kernel = affine_kernel(name);
  Runtime rt;
  const Hierarchy discovered = rt.hierarchy();
  use_leaves(rt, discovered, leaves);
  constexpr std::int64_t n = 100000;
  auto in = rt.array<double>(n, at("numa0"));
  auto out = rt.array<double>(n, at("numa0"));
  {
    auto v = in.host();
    for (std::int64_t i = 0; i < n; ++i) v[i] = double(i % 513);
  }
  {
    FaultPlanFor faults(plan);
    rt.region(kernel).over(n).at(location).launch(out, in);
    CHECK(error_of([&] { rt.pause(); }) == "no error");
  }
  auto view = out.host_read();
  int wrong = 0;
  for (std::int64_t i = 0; i < n; ++i) wrong += view[i] != 3.0 * double(i % 513) - 2.0;
  CHECK(wrong == 0);
  return rt.stats().recoveries;
}

}  // namespace

TEST_CASE("hetero checked mode: a read past the end on opencl0 raises kernel, array, index and extent" *
          doctest::test_suite("opencl")) {
  EnvironmentFor check("CANOPY_CHECK", "bounds");
  Runtime rt;
  const Hierarchy discovered = rt.hierarchy();
  if (!has_leaves(discovered, {"cpu0", accelerator(0)})) return;
  use_leaves(rt, discovered, {"cpu0", accelerator(0)});
  constexpr std::int64_t n = 1000;
  auto in = rt.array<double>(n, at("numa0"));
  auto out = rt.array<double>(n, at("numa0"));
  {
    auto v = in.host();
    for (std::int64_t i = 0; i < n; ++i) v[i] = double(i);
  }
  rt.region(shift_read()).over(n).at(accelerator(0)).launch(out, in, std::int64_t{1});
  CHECK(error_of([&] { rt.pause(); }) ==
        "kernel 'hetero_shift_read' read array 'in' out of bounds: index 1000 in dimension 0, whose extent is 1000 "
        "(found by CANOPY_CHECK=bounds; the access was skipped); keep every index in [0, extent)");
  auto view = out.host_read();
  CHECK(view[0] == 1.0);
  CHECK(view[998] == 999.0);
  CHECK(view[999] == 0.0);
}

TEST_CASE("hetero checked mode: an in-bounds stencil split over opencl0 and opencl1 gives the CPU's bits" *
          doctest::test_suite("opencl")) {
  {
    Runtime probe;
    if (!has_leaves(probe.hierarchy(), {"cpu0", accelerator(0), accelerator(1)})) return;
  }
  std::vector<double> cpu, unchecked, checked;
  {
    EnvironmentFor check("CANOPY_CHECK", nullptr);
    cpu = run_stencil({"cpu0"});
    unchecked = run_stencil({accelerator(0), accelerator(1)});
  }
  {
    EnvironmentFor check("CANOPY_CHECK", "bounds");
    checked = run_stencil({accelerator(0), accelerator(1)});
  }
  REQUIRE(cpu.size() == static_cast<std::size_t>(kRows * kCols));
  CHECK(unchecked == cpu);
  CHECK(checked == cpu);
}

TEST_CASE("hetero faults: a launch, copy or compile failing once over opencl0 + opencl1 ends in the right values" *
          doctest::test_suite("opencl")) {
  {
    Runtime probe;
    if (!has_leaves(probe.hierarchy(), {accelerator(0), accelerator(1)})) return;
  }
  const std::vector<std::string> leaves{accelerator(0), accelerator(1)};
  SUBCASE("opencl.launch:1") {
    const auto r = survive(accelerator_backend() + ".launch:1", leaves, "numa0", "survive_launch");
    CHECK(r.launches == 1);
    CHECK(r.total() == 1);
  }
  SUBCASE("opencl.copy:1") {
    const auto r = survive(accelerator_backend() + ".copy:1", leaves, "numa0", "survive_copy");
    CHECK(r.copies == 1);
    CHECK(r.total() == 1);
  }
  SUBCASE("opencl.compile:1") {
    const auto r = survive(accelerator_backend() + ".compile:1", leaves, "numa0", "survive_compile");
    CHECK(r.compiles == 1);
    CHECK(r.total() == 1);
  }
}

TEST_CASE("hetero faults: OpenCL failing on every attempt, the piece runs on the host CPU leaf" *
          doctest::test_suite("opencl")) {
  {
    Runtime probe;
    if (!has_leaves(probe.hierarchy(), {"cpu0", accelerator(0)})) return;
  }
  // The region runs at opencl0, whose every launch fails: the host CPU leaf takes the piece.
  const auto r = survive(
      accelerator_backend() + ".launch:1," + accelerator_backend() + ".launch:2," + accelerator_backend() + ".launch:3",
      {"cpu0", accelerator(0)}, accelerator(0), "survive_on_host");
  CHECK(r.launches == 1);
}

TEST_CASE("hetero faults: a copy back to the host that fails once is retried" * doctest::test_suite("opencl")) {
  Runtime rt;
  const Hierarchy discovered = rt.hierarchy();
  if (!has_leaves(discovered, {accelerator(0)})) return;
  use_leaves(rt, discovered, {accelerator(0)});
  const auto kernel = affine_kernel("copy_back_retried");
  constexpr std::int64_t n = 5000;
  auto in = rt.array<double>(n, at("numa0"));
  auto out = rt.array<double>(n, at("numa0"));
  {
    auto v = in.host();
    for (std::int64_t i = 0; i < n; ++i) v[i] = double(i);
  }
  rt.region(kernel).over(n).at(accelerator(0)).launch(out, in);
  rt.pause();
  // The region copied `in` to the device (one copy); reading `out` back is the next.
  FaultPlanFor faults(accelerator_backend() + ".copy:1");
  auto view = out.host_read();
  CHECK(view[4999] == 3.0 * 4999.0 - 2.0);
  CHECK(view[0] == -2.0);
  CHECK(rt.stats().recoveries.copies == 1);
}

TEST_CASE("hetero faults: opencl.alloc fails the region with the device's error; every other array is intact" *
          doctest::test_suite("opencl")) {
  Runtime rt;
  const Hierarchy discovered = rt.hierarchy();
  if (!has_leaves(discovered, {"cpu0", accelerator(0)})) return;
  use_leaves(rt, discovered, {"cpu0", accelerator(0)});
  const auto kernel = affine_kernel("alloc_refused");
  constexpr std::int64_t n = 100000;
  auto in = rt.array<double>(n, at("numa0"));
  auto before = rt.array<double>(n, at("numa0"));
  auto out = rt.array<double>(n, at("numa0"));
  {
    auto v = in.host();
    for (std::int64_t i = 0; i < n; ++i) v[i] = double(i % 101);
  }
  rt.region(kernel).over(n).at(accelerator(0)).launch(before, in);
  rt.pause();
  {
    // `out` has no buffer on opencl0 yet: its allocation is the first.
    const std::string& backend = accelerator_backend();
    FaultPlanFor faults(backend + ".alloc:1");
    rt.region(kernel).over(n).at(accelerator(0)).launch(out, in);
    // The started device's own numbers: a device remembered from an earlier
    // run (backends/discovery_cache.hpp) shows the free memory PoCL reported then.
    const auto info = backends::started(*canopy::runtime::engine_of(rt).device(backend + ":0")).info();
    const std::string message = error_of([&] { rt.pause(); });
    // The region, the leaf and the arrays first, then the device's refusal.
    CHECK(message.rfind("region of kernel 'alloc_refused', its piece on leaf '" + accelerator(0) + "' (", 0) == 0);
    if (backend == "cuda") {
      // The driver's free memory follows: the arrays before this one and the device's own.
      CHECK(message.find("): CUDA device '" + info.name +
                         "' (cuda:0) could not allocate 800000 bytes (0.00 GiB) (CUDA_ERROR_OUT_OF_MEMORY (2): "
                         "out of memory [injected by CANOPY_FAULT=cuda.alloc:1]); ") != std::string::npos);
      CHECK(message.find(" are free: free arrays there or place this one elsewhere") != std::string::npos);
    } else {
      char memory[64];
      std::snprintf(memory, sizeof memory, "%lld bytes (%.2f GiB)", static_cast<long long>(info.global_memory),
                    static_cast<double>(info.global_memory) / (1 << 30));
      const std::string refusal = backend == "level_zero"
                                      ? "Level Zero device '" + info.name +
                                            "' (level_zero:0) could not allocate 800000 bytes (0.00 GiB) "
                                            "(ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY [injected by "
                                            "CANOPY_FAULT=level_zero.alloc:1])"
                                      : "OpenCL device '" + info.name +
                                            "' (opencl:0) could not allocate 800000 bytes (0.00 GiB) "
                                            "(CL_MEM_OBJECT_ALLOCATION_FAILURE [injected by "
                                            "CANOPY_FAULT=opencl.alloc:1])";
      const std::string told =
          "): " + refusal + "; it has " + memory + " in all: free arrays there or place this one elsewhere";
      CHECK(message.size() > told.size());
      CHECK(message.compare(message.size() - told.size(), told.size(), told) == 0);
    }
  }
  CHECK(rt.stats().recoveries.total() == 0);
  {
    auto v = in.host_read();
    auto b = before.host_read();
    int wrong = 0;
    for (std::int64_t i = 0; i < n; ++i) wrong += v[i] != double(i % 101) || b[i] != 3.0 * double(i % 101) - 2.0;
    CHECK(wrong == 0);
  }
  // The runtime goes on: the same region runs once the device can allocate.
  rt.region(kernel).over(n).at(accelerator(0)).launch(out, in);
  CHECK(error_of([&] { rt.pause(); }) == "no error");
  CHECK(out.host_read()[n - 1] == 3.0 * double((n - 1) % 101) - 2.0);
}

TEST_CASE(
    "hetero faults: a launch failing in the third of a piece's passes runs only the rest again; an update in "
    "place is applied once" *
    doctest::test_suite("opencl")) {
  // x = 3 x + 1 in place, over an array four times larger than the device:
  // the piece runs in passes, and the third pass's launch fails. The passes
  // done stay done; before, the whole piece ran again and its first rows
  // were updated twice.
  static const Kernel update("hetero_pass_update", [](InOut<double> x) { x[index(0)] = 3.0 * x[index(0)] + 1.0; },
                             {"x"});
  const std::int64_t capacity = 128 * 1024, n = 4 * capacity / static_cast<std::int64_t>(sizeof(double));
  EnvironmentFor limit("CANOPY_DEVICE_MEMORY", (accelerator(0) + ":" + std::to_string(capacity)).c_str());
  Runtime rt;
  const Hierarchy discovered = rt.hierarchy();
  if (!has_leaves(discovered, {"cpu0", accelerator(0)})) return;
  use_leaves(rt, discovered, {"cpu0", accelerator(0)});
  auto x = rt.array<double>(n, at("numa0"));
  {
    auto v = x.host();
    for (std::int64_t i = 0; i < n; ++i) v[i] = double(i % 1000);
  }
  {
    FaultPlanFor faults(accelerator_backend() + ".launch:3");
    rt.region(update).over(n).at(accelerator(0)).launch(x);
    CHECK(error_of([&] { rt.pause(); }) == "no error");
  }
  CHECK(last_region(rt).pieces.at(0).passes == 3);  // two done, the third failed
  CHECK(rt.stats().recoveries.launches == 1);
  auto view = x.host_read();
  std::int64_t wrong = 0;
  for (std::int64_t i = 0; i < n; ++i) wrong += view[i] != 3.0 * double(i % 1000) + 1.0;
  CHECK(wrong == 0);
}
