// What a process loads at start, as separate processes see it (this test
// program run again with CANOPY_DISCOVERY_CHILD set).
//
// CPU kernels kept as shared objects (jit/internal/shared_kernel.hpp): a
// process whose kernels are all cached runs them without loading libLLVM or
// libcanopy_llvm, with the right results; without a system linker the entry
// is an object file, which the JIT links (LLVM loaded, results right).
//
// The discovery cache (backends/discovery_cache.hpp):
// - the first process on an empty cache folder starts OpenCL (PoCL) and
//   writes one devices file;
// - the next one gets the same devices without loading PoCL or libLLVM, and
//   starts OpenCL when it first uses a device, which then computes right;
// - a different POCL_DEVICES is another key: another file, other devices;
// - a file naming a device that is not there (its fingerprint changed) gives
//   a clear error at the first use, and is removed;
// - the node's inventory (runtime/discovery.hpp) is remembered beside the
//   devices: the later process loads no hwloc plugin.
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <canopy/backends/discover.hpp>
#include <canopy/backends/discovery_cache.hpp>
#include <canopy/canopy.hpp>
#include <canopy/jit/disk_cache.hpp>
#include <canopy/runtime/internal/engine_access.hpp>

#include "common/child_process.hpp"
#include "common/skip.hpp"

using namespace canopy;
namespace fs = std::filesystem;

namespace {

bool loaded(const char* library) {
  std::ifstream maps("/proc/self/maps");
  const std::string text((std::istreambuf_iterator<char>(maps)), std::istreambuf_iterator<char>());
  return text.find(library) != std::string::npos;
}

std::vector<fs::path> devices_files(const fs::path& folder) {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(folder))
    if (entry.path().filename().string().starts_with("devices-")) files.push_back(entry.path());
  return files;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// The output of this test program run again as `filter` with `extra` in its
// environment; the test stops there, showing that output, when the child failed.
std::string child_output(const std::string& filter, const std::vector<std::string>& extra) {
  const auto run = canopy_test::run_this_test(filter, extra);
  INFO(run.output);
  REQUIRE(run.status == 0);
  return run.output;
}

}  // namespace

// Run only by the next test: one kernel, its result checked against a serial
// loop, and whether LLVM was loaded to run it.
TEST_CASE("lean start: child process running one kernel" * doctest::skip()) {
  REQUIRE(std::getenv("CANOPY_DISCOVERY_CHILD"));
  Runtime rt;
  const std::int64_t n = 5000;
  auto a = rt.array<std::int64_t>(n), b = rt.array<std::int64_t>(n);
  Kernel k("lean_start_kernel", [](Out<std::int64_t> a, In<std::int64_t> b, Val<std::int64_t> s) {
    Idx i = index(0);
    a[i] = b[i] * s + i % 7;
  });
  {
    auto bh = b.host();
    for (std::int64_t i = 0; i < n; ++i) bh[i] = 3 * i - 11;
  }
  rt.region(k).over(n).launch(a, b, std::int64_t{5});
  int wrong = 0;
  auto ah = a.host_read();
  for (std::int64_t i = 0; i < n; ++i) wrong += ah[i] != (3 * i - 11) * 5 + i % 7;
  std::printf("wrong: %d\nllvm: %d\nplugin: %d\n", wrong, loaded("libLLVM"), loaded("libcanopy_llvm"));
}

TEST_CASE("lean start: a kernel cached as a shared object runs in a process that never loads LLVM") {
  char pattern[] = "/tmp/canopy-lean-XXXXXX";
  REQUIRE(::mkdtemp(pattern));
  const fs::path folder(pattern);
  const std::string filter = "lean start: child process running one kernel";
  const std::vector<std::string> env{"CANOPY_CACHE_DIR=" + (folder / "a").string(), "CANOPY_DISCOVERY_CHILD=1",
                                     "CANOPY_DEVICES=cpu"};
  const std::string cold = child_output(filter, env);
  INFO(cold);
  CHECK(contains(cold, "wrong: 0"));
  CHECK(contains(cold, "llvm: 1"));  // it compiled
  const std::string warm = child_output(filter, env);
  INFO(warm);
  CHECK(contains(warm, "wrong: 0"));
  CHECK(contains(warm, "llvm: 0"));
  CHECK(contains(warm, "plugin: 0"));

  // No system linker: the cache keeps the object file, and a warm run links it with the JIT.
  std::vector<std::string> no_linker{"CANOPY_CACHE_DIR=" + (folder / "b").string(), "CANOPY_DISCOVERY_CHILD=1",
                                     "CANOPY_DEVICES=cpu", "PATH=/nonexistent"};
  const std::string cold_object = child_output(filter, no_linker);
  INFO(cold_object);
  CHECK(contains(cold_object, "wrong: 0"));
  const std::string warm_object = child_output(filter, no_linker);
  INFO(warm_object);
  CHECK(contains(warm_object, "wrong: 0"));
  CHECK(contains(warm_object, "llvm: 1"));
  bool object_entry = false;
  for (const auto& entry : fs::directory_iterator(folder / "b"))
    object_entry = object_entry ||
                   (entry.path().extension() == ".cnpy" && !entry.path().filename().string().starts_with("devices-"));
  CHECK(object_entry);
  fs::remove_all(folder);
}

// Run only by the next test (with CANOPY_DISCOVERY_CHILD and --no-skip).
// Prints what the process loaded, its OpenCL devices, then uses opencl:0.
TEST_CASE("discovery cache: child process" * doctest::skip()) {
  REQUIRE(std::getenv("CANOPY_DISCOVERY_CHILD"));
  Runtime rt;
  std::printf("pocl after Runtime: %d\nllvm after Runtime: %d\nhwloc plugins after Runtime: %d\n", loaded("libpocl"),
              loaded("libLLVM"), loaded("/hwloc/hwloc_"));
  for (const auto& device : rt.node().devices)
    if (device.kind == LocationKind::OpenCL) std::printf("device %s %s\n", device.id.c_str(), device.name.c_str());
  try {
    auto device = runtime::engine_of(rt).device("opencl:0");
    REQUIRE(device);
    std::vector<double> in(1000), out(1000, 0.0);
    for (std::size_t i = 0; i < in.size(); ++i) in[i] = 0.5 * static_cast<double>(i) - 7.0;
    auto buffer = device->allocate(in.size() * sizeof(double));
    device->copy_in(buffer, 0, in.data(), in.size() * sizeof(double));
    device->copy_out(buffer, 0, out.data(), out.size() * sizeof(double));
    device->free(buffer);
    std::printf("round trip: %s\n", in == out ? "equal" : "different");
  } catch (const Error& error) {
    std::printf("error: %s\n", error.what());
  }
  std::printf("pocl at the end: %d\n", loaded("libpocl"));
}

TEST_CASE("discovery cache: a later process gets the devices from the file and starts OpenCL at first use") {
  if (backends::discover_backend("opencl").devices.empty())
    canopy_test::skip("no OpenCL device", canopy_test::Needs::OpenCL);
  char pattern[] = "/tmp/canopy-discovery-XXXXXX";
  REQUIRE(::mkdtemp(pattern));
  const fs::path folder(pattern);
  const std::string filter = "discovery cache: child process";
  const std::vector<std::string> one{"CANOPY_CACHE_DIR=" + folder.string(), "CANOPY_DISCOVERY_CHILD=1",
                                     "POCL_DEVICES=pthread", "CANOPY_DEVICES="};

  const std::string first = child_output(filter, one);
  INFO(first);
  CHECK(contains(first, "pocl after Runtime: 1"));
  CHECK(contains(first, "device opencl:0"));
  CHECK_FALSE(contains(first, "device opencl:1"));
  CHECK(contains(first, "round trip: equal"));
  REQUIRE(devices_files(folder).size() == 1);

  const std::string second = child_output(filter, one);
  INFO(second);
  CHECK(contains(second, "pocl after Runtime: 0"));
  CHECK(contains(second, "llvm after Runtime: 0"));
  CHECK(contains(second, "hwloc plugins after Runtime: 0"));  // the node's inventory came from its file
  CHECK(contains(second, "device opencl:0"));
  CHECK(contains(second, "round trip: equal"));
  CHECK(contains(second, "pocl at the end: 1"));
  CHECK(devices_files(folder).size() == 1);

  // Another POCL_DEVICES is another node as far as discovery knows.
  std::vector<std::string> two = one;
  two[2] = "POCL_DEVICES=pthread pthread";
  const std::string other = child_output(filter, two);
  INFO(other);
  CHECK(contains(other, "pocl after Runtime: 1"));
  CHECK(contains(other, "device opencl:1"));
  CHECK(devices_files(folder).size() == 2);
  const std::string two_again = child_output(filter, two);
  CHECK(contains(two_again, "pocl after Runtime: 0"));
  CHECK(contains(two_again, "device opencl:1"));

  // A remembered device that is not there: every devices file now says
  // opencl:0 has a fingerprint no driver gives.
  jit::DiskCache cache(folder.string());
  for (const fs::path& file : devices_files(folder)) {
    const std::string key = file.stem().string();
    auto text = cache.get(key);
    REQUIRE(text);
    const auto at = text->find("fingerprint\t");
    REQUIRE(at != std::string::npos);
    text->insert(at + 12, "changed ");
    cache.put(key, *text);
  }
  const std::string changed = child_output(filter, one);
  INFO(changed);
  CHECK(contains(changed, "pocl after Runtime: 0"));
  CHECK(contains(changed, "error: the opencl device opencl:0"));
  CHECK(contains(changed, "is not there now"));
  CHECK(devices_files(folder).size() == 1);  // that process's file is gone; the other key's stays
  const std::string afresh = child_output(filter, one);
  CHECK(contains(afresh, "pocl after Runtime: 1"));
  CHECK(contains(afresh, "round trip: equal"));
  fs::remove_all(folder);
}

TEST_CASE("discovery cache: the key follows the variables that steer drivers, and no others") {
  const std::string base = backends::discovery_key();
  CHECK(base.size() == 32);
  CHECK(backends::discovery_key() == base);
  const char* old = std::getenv("POCL_DEVICES");
  const std::string saved = old ? old : "";
  ::setenv("POCL_DEVICES", "pthread pthread pthread", 1);
  const std::string changed = backends::discovery_key();
  CHECK(changed != base);
  ::setenv("SOME_UNRELATED_VARIABLE_FOR_CANOPY", "1", 1);
  CHECK(backends::discovery_key() == changed);
  ::unsetenv("SOME_UNRELATED_VARIABLE_FOR_CANOPY");
  if (old)
    ::setenv("POCL_DEVICES", saved.c_str(), 1);
  else
    ::unsetenv("POCL_DEVICES");
  CHECK(backends::discovery_key() == base);
}
