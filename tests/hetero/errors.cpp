// Errors of regions on OpenCL devices reach the program as canopy::Error
// naming what is at fault: a kernel the device cannot build fails the launch
// and names the device (with the build log), a kernel that writes a
// read-only array fails the launch naming the array, and an array larger
// than the device's largest buffer fails the region naming the device.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <utility>

#include <sys/wait.h>
#include <string>

#include <canopy/backends/opencl/opencl_device.hpp>

#include "hetero_support.hpp"

using namespace canopy;
using namespace canopy::hetero_tests;

namespace {

const Kernel<void(Out<std::int32_t>, In<std::int32_t>)>& increment() {
  static const Kernel kernel("increment",
                             [](Out<std::int32_t> out, In<std::int32_t> in) {
                               Idx i = index(0);
                               out[i] = in[i] + 1;
                             },
                             {"out", "in"});
  return kernel;
}

// The platform of the first OpenCL device, asked of OpenCL directly ("" when none).
std::string first_platform() {
  const auto found = backends::opencl::discover_opencl({"", "off"});
  if (found.devices.empty()) return "";
  return static_cast<const backends::opencl::OpenCLDevice&>(*found.devices[0]).traits().platform_name;
}

// Runs `command`, returning its exit status and what it wrote (stdout and stderr).
std::pair<int, std::string> run_command(const std::string& command) {
  std::string output;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (!pipe) return {-1, "popen failed"};
  char buffer[4096];
  while (std::size_t got = std::fread(buffer, 1, sizeof buffer, pipe)) output.append(buffer, got);
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

}  // namespace

TEST_CASE("hetero: a kernel the OpenCL device cannot build fails the launch, naming the device" *
          doctest::test_suite("opencl")) {
  // Canopy generates valid OpenCL C, so the build is broken from outside:
  // PoCL adds POCL_EXTRA_BUILD_FLAGS to every clBuildProgram, here a macro
  // that turns the kernel's name into a number (a syntax error). PoCL reads it once per process,
  // so the test runs in a child process (this program, running only the
  // test case below), without disk caches so that the compiler runs.
  if (accelerator_backend() != "opencl") {
    CANOPY_TEST_SKIP(Other, "the devices are " << accelerator_backend() << "'s: this test breaks PoCL's builds");
  }
  Runtime rt;
  if (!has_leaves(rt.hierarchy(), {"cpu0", accelerator(0)})) return;
  if (first_platform() != "Portable Computing Language") {
    CANOPY_TEST_SKIP(Other, "opencl:0 is not a PoCL device, so POCL_EXTRA_BUILD_FLAGS cannot break its builds");
  }
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  const auto [status, output] =
      run_command("CANOPY_CACHE_DIR=off POCL_KERNEL_CACHE=0 POCL_EXTRA_BUILD_FLAGS=-Dbuild_probe=1 '" + self +
                  "' --no-skip --no-version -tc='hetero child: *'");
  CAPTURE(output);
  CHECK(status == 0);
  CHECK(output.find("Status: SUCCESS!") != std::string::npos);
}

TEST_CASE("hetero child: a broken OpenCL build moves the piece, or fails the launch where nothing else compiles" *
          doctest::test_suite("opencl") * doctest::skip()) {
  Runtime rt;
  const Hierarchy discovered = rt.hierarchy();
  REQUIRE(has_leaves(discovered, {"cpu0", accelerator(0)}));
  use_leaves(rt, discovered, {"cpu0", accelerator(0)});
  auto in = rt.array<std::int32_t>(1000, at("numa0"));
  auto out = rt.array<std::int32_t>(1000, at("numa0"));
  for (auto& v : in.host()) v = 5;

  Kernel probe("build_probe",
               [](Out<std::int32_t> out, In<std::int32_t> in) {
                 Idx i = index(0);
                 out[i] = in[i] + 1;
               },
               {"out", "in"});
  // The split gives opencl0 a piece; the CPU leaf, which compiles the
  // kernel, runs that piece too (a compile recovery, counted).
  rt.region(probe).over(1000).launch(out, in);
  CHECK(error_of([&] { rt.pause(); }) == "no error");
  std::int64_t wrong = 0;
  for (auto v : out.host_read()) wrong += v != 6;
  CHECK(wrong == 0);
  CHECK(rt.stats().recoveries.compiles == 1);

  // With opencl0 alone there is nowhere else to run it: launch() itself
  // throws (nothing is queued), naming the device, with the build log.
  use_leaves(rt, discovered, {accelerator(0)});
  for (auto& v : in.host()) v = 9;
  const std::string message = error_of([&] { rt.region(probe).over(1000).launch(out, in); });
  CAPTURE(message);
  CHECK(message.find("opencl:0") != std::string::npos);
  CHECK(message.find("could not build kernel 'build_probe'") != std::string::npos);
  CHECK(message.find("Build log") != std::string::npos);
  CHECK(message.find("error:") != std::string::npos);                 // the compiler's words
  CHECK(message.find("out[i - out_first] = ") != std::string::npos);  // the numbered source
  rt.pause();                                                         // nothing failed in flight
  // The arrays are intact: out keeps the first region's values.
  wrong = 0;
  for (auto v : out.host_read()) wrong += v != 6;
  CHECK(wrong == 0);
}

TEST_CASE("hetero: a read-only array is read on the devices and refused as an output" * doctest::test_suite("opencl")) {
  Runtime rt;
  const Hierarchy discovered = rt.hierarchy();
  if (!has_leaves(discovered, {"cpu0", accelerator(0), accelerator(1)})) return;
  auto table = rt.array<std::int32_t>(3000, at("numa0") | read_only() | named("table"));
  auto out = rt.array<std::int32_t>(3000, at("numa0") | named("out"));
  {
    auto view = table.host();  // the host may fill a read-only array
    for (std::int64_t i = 0; i < view.size(); ++i) view[i] = std::int32_t(i * 5);
  }
  rt.region(increment()).over(3000).launch(out, table);  // cpu0, opencl0, opencl1 read it
  rt.pause();
  CHECK(last_region(rt).pieces.size() == 3);
  std::int64_t wrong = 0;
  auto result = out.host_read();
  for (std::int64_t i = 0; i < result.size(); ++i) wrong += result[i] != std::int32_t(i * 5 + 1);
  CHECK(wrong == 0);

  const std::string message = error_of([&] { rt.region(increment()).over(3000).launch(table, out); });
  CAPTURE(message);
  CHECK(message.find("kernel 'increment' writes parameter 'out'") != std::string::npos);
  CHECK(message.find("'table'") != std::string::npos);
  CHECK(message.find("read-only") != std::string::npos);
  // Nothing ran: the table is as the host left it.
  std::int64_t changed = 0;
  auto kept = table.host_read();
  for (std::int64_t i = 0; i < kept.size(); ++i) changed += kept[i] != std::int32_t(i * 5);
  CHECK(changed == 0);
}

TEST_CASE("hetero: an array larger than the device's largest buffer fails the region, naming the device" *
          doctest::test_suite("opencl")) {
  Runtime rt;
  const Hierarchy discovered = rt.hierarchy();
  if (accelerator_backend() != "opencl") {
    CANOPY_TEST_SKIP(Other,
                     "the devices are " << accelerator_backend() << "'s: this test asks OpenCL its largest buffer");
  }
  if (!has_leaves(discovered, {accelerator(0)})) return;
  // The largest buffer opencl0 takes, asked of OpenCL directly.
  const auto found = backends::opencl::discover_opencl({"", "off"});
  REQUIRE(!found.devices.empty());
  const std::int64_t largest = found.devices[0]->info().max_allocation;
  REQUIRE(largest > 0);
  // One element more than that. Host memory for arrays is reserved lazily
  // (pages come when touched), so the host side costs nothing as long as the
  // host never touches it; the array is placed at opencl0, where only the
  // device runs.
  const std::int64_t elements = largest / std::int64_t(sizeof(std::int32_t)) + 1;
  auto huge = rt.array<std::int32_t>(elements, at(accelerator(0)) | named("huge"));
  auto small = rt.array<std::int32_t>(16, at(accelerator(0)) | named("small"));
  auto picks = rt.array<std::int32_t>(16, at(accelerator(0)) | named("picks"));
  // Elements of `huge` picked by data: the device needs all of it (a piece
  // that reads rows of its own holds only those).
  static const Kernel<void(Out<std::int32_t>, In<std::int32_t>, In<std::int32_t>)> gather(
      "gather_huge",
      [](Out<std::int32_t> out, In<std::int32_t> table, In<std::int32_t> pick) {
        Idx i = index(0);
        out[i] = table[pick[i]];
      },
      {"out", "table", "pick"});
  rt.region(gather).over(16).launch(small, huge, picks);
  std::string message;
  try {
    rt.pause();
    message = "no error";
  } catch (const Error& e) {
    message = e.what();
  }
  CAPTURE(message);
  CHECK(message.find("opencl:0") != std::string::npos);
  CHECK(message.find("cannot allocate") != std::string::npos);
  CHECK(message.find("largest buffer") != std::string::npos);
  CHECK(last_region(rt).location == accelerator(0));

  // The runtime goes on: a region that fits runs on the same device.
  auto fits = rt.array<std::int32_t>(16, at(accelerator(0)));
  rt.region(increment()).over(16).launch(fits, small);
  rt.pause();
  for (auto v : fits.host_read()) CHECK(v == 1);
}
