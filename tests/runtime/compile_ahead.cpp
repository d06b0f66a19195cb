// Runtime::compile: kernels compiled ahead of their first launch on the
// runtime's background thread, so that the launch finds them ready; the
// trace (CANOPY_TRACE) says on which thread each compile ran. And compile()
// followed at once by a launch (the launch waits for, or does, the compile,
// never twice), and a compile that fails in the background (the launch
// compiles again).
#include <doctest/doctest.h>

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <set>
#include <string>
#include <thread>

#include <canopy/backends/fault_injection.hpp>

#include "engine_trees.hpp"
#include "temporary_folder.hpp"
#include "trace_json.hpp"

using namespace canopy;
using namespace canopy::engine_tests;
using namespace canopy::trace_tests;

namespace {

constexpr std::int64_t kPoints = 10000;

// CANOPY_FAULT's plan for the scope.
class FaultPlanFor {
 public:
  explicit FaultPlanFor(const char* plan) { backends::set_fault_plan(plan); }
  ~FaultPlanFor() { backends::set_fault_plan(""); }
};

}  // namespace

TEST_CASE(
    "compile ahead: compile(k1, k2).wait() compiles both off the launching thread; their launches compile "
    "nothing") {
  const testing::TemporaryFolder folder("compile-ahead");
  const std::string path = folder / "run.json";
  // Kernels of their own: no runtime of this process has compiled them.
  static const Kernel<void(Out<double>, In<double>)> scale(
      "ahead_scale", [](Out<double> out, In<double> in) { out[index(0)] = in[index(0)] * 3.0; }, {"out", "in"});
  static const Kernel<void(Out<double>, In<double>)> shift(
      "ahead_shift", [](Out<double> out, In<double> in) { out[index(0)] = in[index(0)] - 1.0; }, {"out", "in"});
  {
    EnvironmentFor trace("CANOPY_TRACE", path.c_str());
    EnvironmentFor no_cache("CANOPY_CACHE_DIR", "off");
    Runtime rt;
    rt.fuse(false);  // a fused scale.shift would compile in the background too (tests/runtime/fusion.cpp)
    use_tree(rt, one_leaf_tree());
    const Compilation compiling = rt.compile(scale, shift);
    compiling.wait();
    CHECK(compiling.ready());
    auto in = rt.array<double>(kPoints), mid = rt.array<double>(kPoints), out = rt.array<double>(kPoints);
    {
      auto v = in.host();
      for (std::int64_t i = 0; i < kPoints; ++i) v[i] = double(i);
    }
    rt.region(scale).over(kPoints).launch(mid, in);
    rt.region(shift).over(kPoints).launch(out, mid);
    rt.pause();
    const auto v = out.host();
    for (std::int64_t i = 0; i < kPoints; i += 997) CHECK(v[i] == 3.0 * double(i) - 1.0);
  }
  const Trace trace = read_trace(path);
  std::set<std::string> compiled;
  for (const auto& compile : trace.of("compile")) {
    INFO(compile.text("kernel") << " on " << compile.track);
    CHECK(compile.track != "host thread 1");  // not the thread that launched
    compiled.insert(compile.text("kernel"));
  }
  CHECK(compiled == std::set<std::string>{"ahead_scale", "ahead_shift"});
  CHECK(trace.of("compile").size() == 2);
}

TEST_CASE("compile ahead: a launch right after compile() is right, and each kernel is compiled once") {
  const testing::TemporaryFolder folder("compile-race");
  const std::string path = folder / "run.json";
  static const Kernel<void(Out<double>, In<double>)> square(
      "race_square", [](Out<double> out, In<double> in) { out[index(0)] = in[index(0)] * in[index(0)]; },
      {"out", "in"});
  {
    EnvironmentFor trace("CANOPY_TRACE", path.c_str());
    EnvironmentFor no_cache("CANOPY_CACHE_DIR", "off");
    Runtime rt;
    use_tree(rt, one_leaf_tree());
    auto in = rt.array<double>(kPoints), out = rt.array<double>(kPoints);
    {
      auto v = in.host();
      for (std::int64_t i = 0; i < kPoints; ++i) v[i] = double(i % 100);
    }
    rt.compile(square);  // not waited for
    rt.region(square).over(kPoints).launch(out, in);
    rt.pause();
    const auto v = out.host();
    for (std::int64_t i = 0; i < kPoints; i += 101) CHECK(v[i] == double((i % 100) * (i % 100)));
  }
  CHECK(read_trace(path).of("compile").size() == 1);
}

TEST_CASE("compile ahead: a compile that fails in the background is done again by the launch") {
  static const Kernel<void(Out<double>, In<double>)> negate(
      "ahead_negate", [](Out<double> out, In<double> in) { out[index(0)] = -in[index(0)]; }, {"out", "in"});
  Runtime rt;
  use_tree(rt, one_leaf_tree());
  {
    FaultPlanFor plan("cpu.compile:1");
    rt.compile(negate).wait();  // the one injected failure is spent here
  }
  auto in = rt.array<double>(100), out = rt.array<double>(100);
  {
    auto v = in.host();
    for (std::int64_t i = 0; i < 100; ++i) v[i] = double(i);
  }
  rt.region(negate).over(100).launch(out, in);
  CHECK(error_of([&] { rt.pause(); }) == "no error");
  CHECK(out.host()[42] == -42.0);
}

TEST_CASE(
    "compile ahead: compile() also makes the CPU's streaming variant, in the background, so a large launch compiles "
    "nothing") {
  const testing::TemporaryFolder folder("compile-variants");
  // A kernel of its own, with an array it only writes at each point: a
  // candidate for streaming stores. With dumps on, each compile of it,
  // plain or streaming, leaves its file. Its name is new to every process,
  // so that no disk cache holds it (the process's compiler keeps the cache
  // it started with, whatever CANOPY_CACHE_DIR says later).
  const std::string name = "ahead_variant_" + std::to_string(::getpid()) + "_" +
                           std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
  const Kernel<void(Out<float>, In<float>)> halve(
      name, [](Out<float> out, In<float> in) { out[index(0)] = in[index(0)] * 0.5f; }, {"out", "in"});
  const std::filesystem::path streaming = folder / (name + ".streaming.llvm");
  EnvironmentFor no_cache("CANOPY_CACHE_DIR", "off"), stream("CANOPY_STREAMING_STORES", "on"),
      dump("CANOPY_DUMP", "llvm"), dump_dir("CANOPY_DUMP_DIR", folder.path().c_str());
  Runtime rt;
  use_tree(rt, one_leaf_tree());
  rt.compile(halve).wait();
  CHECK(std::filesystem::exists(folder / (name + ".llvm")));
  // The variant comes after, on a thread of the lowest priority that wait()
  // does not wait for: seconds at most on an idle machine.
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!std::filesystem::exists(streaming) && std::chrono::steady_clock::now() < give_up)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  REQUIRE(std::filesystem::exists(streaming));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the dump is written before the compile ends
  std::filesystem::remove(streaming);
  auto in = rt.array<float>(kPoints), out = rt.array<float>(kPoints);
  {
    auto v = in.host();
    for (std::int64_t i = 0; i < kPoints; ++i) v[i] = float(i % 1000);
  }
  rt.region(halve).over(kPoints).launch(out, in);  // streams (CANOPY_STREAMING_STORES=on)
  rt.pause();
  CHECK_FALSE(std::filesystem::exists(streaming));  // not compiled again
  const auto v = out.host();
  bool right = true;
  for (std::int64_t i = 0; i < kPoints; ++i) right = right && v[i] == float(i % 1000) * 0.5f;
  CHECK(right);
}
