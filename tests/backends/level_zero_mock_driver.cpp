// The Level Zero backend end to end without a GPU: a stand-in loader and
// driver (tests/backends/mock/libze_mock.c, built here with the system's C
// compiler and passed as LevelZeroOptions::library) keeps device memory in
// host memory and runs three known kernels on the host the way their SPIR-V
// runs on a GPU, while the SPIR-V is Canopy's own (LLVMSPIRVLib for real).
// Checked: discovery and traits, memory (allocations, copies at offsets,
// fills of every element size, bounds), compiling (the same program twice,
// native binaries from the disk cache on a second device, a module the
// driver refuses with its build log and the numbered LLVM IR, fp64 refused
// by name), and run(): the arguments, begins, work-group sizes (the kernel's
// own limit included) and counts of point kernels in 1-D and 2-D and of a
// reduction, checked by their results; everything freed at the end. What
// this cannot show is how a real driver compiles and runs the code.
#include <doctest/doctest.h>

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <numeric>

#include <canopy/backends/level_zero/level_zero_device.hpp>
#include <canopy/ir/error.hpp>
#include <canopy/ir/parser.hpp>

#include "level_zero_support.hpp"

using namespace canopy;
using backends::ArrayArg;
using backends::Buffer;
using backends::KernelArg;
using backends::Range;
using backends::ReductionArg;
using backends::level_zero::LevelZeroDevice;
using backends::level_zero::LevelZeroProgram;
using backends::level_zero::ProgramOrigin;

namespace {

constexpr const char* kTriad = R"(kernel triad(out f64[1] a, in f64[1] b, in f64[1] c, val f64 s) dims 1 {
  a[index(0)] = (b[index(0)] + (s * c[index(0)]))
})";

constexpr const char* kIndex2d = R"(kernel index_2d(out i64[2] values) dims 2 {
  values[index(0), index(1)] = ((index(0) * 1000:i64) + index(1))
})";

constexpr const char* kSum = R"(kernel $sum(in f64[1] x, sum f64 total) dims 1 {
  reduce total <- x[index(0)]
})";

constexpr const char* kRejected = R"(kernel mock_reject(out f32[1] y) dims 1 {
  y[index(0)] = 1:f32
})";

// The mock driver, built once per process; empty with a reason when it cannot be.
struct MockDriver {
  std::string path, problem;
  void* handle = nullptr;

  template <class F>
  F* function(const char* name) const {
    return reinterpret_cast<F*>(dlsym(handle, name));
  }
  long live_allocations() const { return function<long()>("mock_live_allocations")(); }
  long live_contexts() const { return function<long()>("mock_live_contexts")(); }
  long live_modules() const { return function<long()>("mock_live_modules")(); }
  long live_kernels() const { return function<long()>("mock_live_kernels")(); }
  int built_from_spirv() const { return function<int()>("mock_built_from_spirv")(); }
  int loaded_native() const { return function<int()>("mock_loaded_native")(); }
  int launch_count() const { return function<int()>("mock_launch_count")(); }
  void clear_launches() const { function<void()>("mock_clear_launches")(); }
  /// Launch `index` as "name sx,sy,sz cx,cy,cz" (group size, then group count).
  std::string launch(int index) const {
    std::uint32_t group[3], count[3];
    const char* name = function<const char*(int, std::uint32_t*, std::uint32_t*)>("mock_launch")(index, group, count);
    if (!name) return "";
    return std::string(name) + " " + std::to_string(group[0]) + "," + std::to_string(group[1]) + "," +
           std::to_string(group[2]) + " " + std::to_string(count[0]) + "," + std::to_string(count[1]) + "," +
           std::to_string(count[2]);
  }
};

const MockDriver& mock() {
  static const MockDriver driver = [] {
    MockDriver built;
    std::string compiler;
    if (const char* cc = std::getenv("CC"); cc && *cc) compiler = cc;
    if (compiler.empty() && level_zero_test::have_tool("cc")) compiler = "cc";
    if (compiler.empty()) {
      built.problem = "no C compiler (cc or $CC) to build the mock driver";
      return built;
    }
    static jit::testing::TempDir directory;  // lives until the process ends
    const auto source = std::filesystem::path(__FILE__).parent_path() / "mock" / "libze_mock.c";
    built.path = (directory.path() / "libze_mock.so").string();
    const auto result =
        level_zero_test::run_command(compiler + " -shared -fPIC -O1 -o '" + built.path + "' '" + source.string() + "'");
    if (result.status != 0) {
      built.problem = "the mock driver did not build: " + result.output;
      return built;
    }
    built.handle = dlopen(built.path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!built.handle) built.problem = std::string("the mock driver did not load: ") + dlerror();
    return built;
  }();
  return driver;
}

/// Declares `name` as the mock driver, or ends the test saying why there is none.
#define MOCK_DRIVER_OR_SKIP(name)                            \
  const MockDriver& name = mock();                           \
  if (!name.handle) {                                        \
    MESSAGE("skipped: " << name.problem);                    \
    return;                                                  \
  }                                                          \
  if (!jit::spirv_available()) {                             \
    MESSAGE("skipped: " << jit::spirv_unavailable_reason()); \
    return;                                                  \
  }

/// The mock's devices, with `cache` as the disk cache ("off": none).
backends::BackendDevices mock_devices(const MockDriver& driver, const std::string& cache = "off") {
  return backends::level_zero::discover_level_zero({driver.path, cache});
}

LevelZeroDevice& device_of(const backends::BackendDevices& found, std::size_t index = 0) {
  REQUIRE_MESSAGE(found.devices.size() > index, found.absent_reason);
  return static_cast<LevelZeroDevice&>(*found.devices[index]);
}

std::shared_ptr<const ir::Kernel> kernel_of(const char* text) {
  return std::make_shared<const ir::Kernel>(ir::parse(text));
}

ArrayArg array(Buffer buffer, std::int64_t n0, std::int64_t n1 = 1) { return ArrayArg{buffer.handle, {n0, n1, 1}}; }

Range range_of(std::initializer_list<std::int64_t> begin, std::initializer_list<std::int64_t> end) {
  Range range;
  range.dims = static_cast<int>(begin.size());
  std::copy(begin.begin(), begin.end(), range.begin.begin());
  std::copy(end.begin(), end.end(), range.end.begin());
  return range;
}

/// `values` in a new buffer of `device`.
template <class T>
Buffer upload(LevelZeroDevice& device, const std::vector<T>& values) {
  Buffer buffer = device.allocate(values.size() * sizeof(T));
  device.copy_in(buffer, 0, values.data(), values.size() * sizeof(T));
  return buffer;
}

template <class T>
std::vector<T> download(LevelZeroDevice& device, Buffer buffer) {
  std::vector<T> values(buffer.bytes / sizeof(T));
  device.copy_out(buffer, 0, values.data(), buffer.bytes);
  return values;
}

}  // namespace

TEST_CASE("level zero mock: discovery, traits and PCI placement of every device") {
  MOCK_DRIVER_OR_SKIP(driver);
  ::setenv("MOCK_ZE_DEVICES", "2", 1);
  const auto found = mock_devices(driver);
  ::unsetenv("MOCK_ZE_DEVICES");
  REQUIRE(found.devices.size() == 2);
  CHECK(found.absent_reason.empty());
  CHECK(found.backend == "level_zero");
  for (std::size_t k = 0; k < 2; ++k) {
    const auto& info = found.devices[k]->info();
    CHECK(info.id == "level_zero:" + std::to_string(k));
    CHECK(info.backend == "level_zero");
    CHECK(info.name == "Mock GPU " + std::to_string(k));
    CHECK(info.vendor == "Intel");
    CHECK(info.compute_units == 16);
    CHECK(info.global_memory == (std::int64_t{4} << 30));
    CHECK(info.max_allocation == (std::int64_t{1} << 30));
    CHECK(info.max_work_group == 512);
    CHECK(info.fp64);
    CHECK(info.driver_version == "driver 42, Level Zero 1.3");
  }
  CHECK(found.devices[0]->info().pci_bus_id == "0000:3a:00.0");
  CHECK(found.devices[1]->info().pci_bus_id == "0000:3b:00.0");
  // Different native-kernel UUIDs: different fingerprints.
  CHECK(found.devices[0]->info().fingerprint != found.devices[1]->info().fingerprint);
  CHECK(device_of(found).traits().compute_ordinal == 1u);
  CHECK(driver.live_contexts() == 2);

  ::setenv("MOCK_ZE_DEVICES", "0", 1);
  const auto none = mock_devices(driver);
  ::unsetenv("MOCK_ZE_DEVICES");
  CHECK(none.devices.empty());
  CHECK(none.absent_reason == "no Level Zero device: the 1 driver(s) found offer no GPU");
}

TEST_CASE("level zero mock: memory, copies at offsets, fills of every element size, and bounds") {
  MOCK_DRIVER_OR_SKIP(driver);
  const long before = driver.live_allocations();
  {
    const auto found = mock_devices(driver);
    LevelZeroDevice& device = device_of(found);
    Buffer buffer = device.allocate(64);
    CHECK(buffer.bytes == 64);
    CHECK(driver.live_allocations() == before + 1);
    std::vector<std::uint8_t> bytes(64);
    std::iota(bytes.begin(), bytes.end(), 0);
    device.copy_in(buffer, 0, bytes.data(), 64);
    const std::uint8_t patch[3] = {200, 201, 202};
    device.copy_in(buffer, 10, patch, 3);
    std::uint8_t middle[6] = {};
    device.copy_out(buffer, 8, middle, 6);
    CHECK(std::vector<std::uint8_t>(middle, middle + 6) == std::vector<std::uint8_t>{8, 9, 200, 201, 202, 13});

    device.fill(buffer, 2, 3, backends::scalar_arg(1.5));  // f64 elements 2..4
    const auto doubles = download<double>(device, buffer);
    CHECK(doubles[2] == 1.5);
    CHECK(doubles[4] == 1.5);
    CHECK(doubles[5] != 1.5);
    device.fill(buffer, 1, 2, backends::scalar_arg<std::int32_t>(-7));  // i32 elements 1, 2
    const auto ints = download<std::int32_t>(device, buffer);
    CHECK(ints[0] != -7);
    CHECK(ints[1] == -7);
    CHECK(ints[2] == -7);
    device.fill(buffer, 60, 4, backends::scalar_arg(true));  // bool elements are one byte
    CHECK(download<std::uint8_t>(device, buffer)[63] == 1);

    CHECK_THROWS_WITH_AS(device.copy_in(buffer, 60, bytes.data(), 8), doctest::Contains("reaches byte 68"),
                         canopy::Error);
    CHECK_THROWS_WITH_AS(device.fill(buffer, 7, 2, backends::scalar_arg(1.0)),
                         doctest::Contains("reaches element 7 + 2"), canopy::Error);
    CHECK_THROWS_WITH_AS(device.allocate(std::size_t{2} << 30), doctest::Contains("its largest allocation is"),
                         canopy::Error);
    device.free(buffer);
    CHECK(driver.live_allocations() == before);
  }
  CHECK(driver.live_contexts() == 0);
}

TEST_CASE("level zero mock: a triad over a piece, with the kernel's own work-group limit") {
  MOCK_DRIVER_OR_SKIP(driver);
  const auto found = mock_devices(driver);
  LevelZeroDevice& device = device_of(found);
  const auto program = device.compile(kernel_of(kTriad));
  CHECK(device.compile(kernel_of(kTriad)) == program);  // the same kernel twice: the same program
  const auto& built = static_cast<const LevelZeroProgram&>(*program);
  CHECK(built.origin() == ProgramOrigin::Built);
  CHECK(built.spirv().entry == "triad");
  CHECK(built.max_group_size() == 128);  // the mock's kernel limit, below the device's 512

  const std::int64_t n = 1000;
  std::vector<double> a(n, -1.0), b(n), c(n);
  for (std::int64_t k = 0; k < n; ++k) {
    b[k] = static_cast<double>(k);
    c[k] = static_cast<double>(2 * k);
  }
  Buffer ba = upload(device, a), bb = upload(device, b), bc = upload(device, c);
  driver.clear_launches();
  const auto reductions =
      device.run(*program, {array(ba, n), array(bb, n), array(bc, n), backends::scalar_arg(0.5)}, range_of({3}, {997}));
  CHECK(reductions.empty());
  REQUIRE(driver.launch_count() == 1);
  CHECK(driver.launch(0) == "triad 128,1,1 8,1,1");  // 994 points in whole groups of 128
  const auto result = download<double>(device, ba);
  for (std::int64_t k = 0; k < n; ++k) {
    INFO("element ", k);
    CHECK(result[k] == (k >= 3 && k < 997 ? b[k] + 0.5 * c[k] : -1.0));
  }
  // An empty piece launches nothing.
  device.run(*program, {array(ba, n), array(bb, n), array(bc, n), backends::scalar_arg(0.5)}, range_of({5}, {5}));
  CHECK(driver.launch_count() == 1);
  for (Buffer buffer : {ba, bb, bc}) device.free(buffer);
}

TEST_CASE("level zero mock: a range beyond the device's work-group count goes in several launches") {
  MOCK_DRIVER_OR_SKIP(driver);
  ::setenv("MOCK_ZE_MAX_GROUPS", "3", 1);
  const auto found = mock_devices(driver);
  ::unsetenv("MOCK_ZE_MAX_GROUPS");
  LevelZeroDevice& device = device_of(found);
  const auto program = device.compile(kernel_of(kTriad));
  const std::int64_t n = 1000;
  std::vector<double> b(n);
  std::iota(b.begin(), b.end(), 0.0);
  Buffer ba = upload(device, std::vector<double>(n, -1.0)), bb = upload(device, b);
  driver.clear_launches();
  device.run(*program, {array(ba, n), array(bb, n), array(bb, n), backends::scalar_arg(1.0)}, range_of({3}, {997}));
  // 994 points, at most 3 groups of 128 per launch: 384 + 384 + 226.
  REQUIRE(driver.launch_count() == 3);
  CHECK(driver.launch(0) == "triad 128,1,1 3,1,1");
  CHECK(driver.launch(1) == "triad 128,1,1 3,1,1");
  CHECK(driver.launch(2) == "triad 128,1,1 2,1,1");
  const auto result = download<double>(device, ba);
  for (std::int64_t k = 0; k < n; ++k) {
    INFO("element ", k);
    CHECK(result[k] == (k >= 3 && k < 997 ? 2.0 * b[k] : -1.0));
  }
  device.free(ba);
  device.free(bb);
}

TEST_CASE("level zero mock: 2-D points, device dimension 0 along the last index") {
  MOCK_DRIVER_OR_SKIP(driver);
  const auto found = mock_devices(driver);
  LevelZeroDevice& device = device_of(found);
  const auto program = device.compile(kernel_of(kIndex2d));
  const std::int64_t rows = 70, cols = 9;
  Buffer values = upload(device, std::vector<std::int64_t>(rows * cols, -1));
  driver.clear_launches();
  device.run(*program, {array(values, rows, cols)}, range_of({2, 1}, {69, 9}));
  REQUIRE(driver.launch_count() == 1);
  // X over the 8 columns of the piece, Y over its 67 rows (128 work-items in all).
  CHECK(driver.launch(0) == "index_2d 8,16,1 1,5,1");
  const auto got = download<std::int64_t>(device, values);
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < cols; ++j) {
      INFO("element (", i, ", ", j, ")");
      CHECK(got[i * cols + j] == (i >= 2 && i < 69 && j >= 1 ? i * 1000 + j : -1));
    }
  device.free(values);
}

TEST_CASE("level zero mock: a sum reduction from per-group partial results") {
  MOCK_DRIVER_OR_SKIP(driver);
  const auto found = mock_devices(driver);
  LevelZeroDevice& device = device_of(found);
  const auto program = device.compile(kernel_of(kSum));
  for (std::int64_t n : {std::int64_t{1}, std::int64_t{100}, std::int64_t{100003}}) {
    std::vector<double> x(n);
    for (std::int64_t k = 0; k < n; ++k) x[k] = static_cast<double>(k % 97) - 40;  // integers: exact in any order
    Buffer bx = upload(device, x);
    driver.clear_launches();
    const auto totals = device.run(*program, {array(bx, n), ReductionArg{}}, range_of({0}, {n}));
    REQUIRE(totals.size() == 1);
    CHECK(totals[0].type == ir::ScalarType::F64);
    CHECK(totals[0].float_value == std::accumulate(x.begin(), x.end(), 0.0));
    REQUIRE(driver.launch_count() == 1);
    // Groups of 128 (the kernel's limit), at most one per EU (16).
    const auto groups = std::min<std::int64_t>(16, (n + 127) / 128);
    CHECK(driver.launch(0) == "sum 128,1,1 " + std::to_string(groups) + ",1,1");
    device.free(bx);
  }
  // An empty piece gives the identity without launching.
  Buffer bx = upload(device, std::vector<double>{1.0});
  driver.clear_launches();
  const auto empty = device.run(*program, {array(bx, 1), ReductionArg{}}, range_of({1}, {1}));
  CHECK(empty.at(0).float_value == 0.0);
  CHECK(driver.launch_count() == 0);
  device.free(bx);
}

TEST_CASE("level zero mock: native binaries from the disk cache on a second device") {
  MOCK_DRIVER_OR_SKIP(driver);
  jit::testing::TempDir cache;
  const int built_before = driver.built_from_spirv(), native_before = driver.loaded_native();
  {
    const auto first = mock_devices(driver, cache.str());
    const auto program = device_of(first).compile(kernel_of(kTriad));
    CHECK(static_cast<const LevelZeroProgram&>(*program).origin() == ProgramOrigin::Built);
    REQUIRE(device_of(first).disk_cache() != nullptr);
    CHECK(device_of(first).disk_cache()->counters().misses == 1);
  }
  CHECK(driver.built_from_spirv() == built_before + 1);
  const auto second = mock_devices(driver, cache.str());
  const auto program = device_of(second).compile(kernel_of(kTriad));
  const auto& loaded = static_cast<const LevelZeroProgram&>(*program);
  CHECK(loaded.origin() == ProgramOrigin::Disk);
  CHECK(driver.loaded_native() == native_before + 1);
  CHECK(driver.built_from_spirv() == built_before + 1);
  CHECK(device_of(second).disk_cache()->counters().hits == 1);
  // It runs like the one built from SPIR-V.
  LevelZeroDevice& device = device_of(second);
  Buffer ba = upload(device, std::vector<double>(4, 0.0)), bb = upload(device, std::vector<double>{1, 2, 3, 4});
  device.run(*program, {array(ba, 4), array(bb, 4), array(bb, 4), backends::scalar_arg(2.0)}, range_of({0}, {4}));
  CHECK(download<double>(device, ba) == std::vector<double>{3, 6, 9, 12});
  device.free(ba);
  device.free(bb);
}

TEST_CASE("level zero mock: a module the driver refuses is an error with its build log and the LLVM IR") {
  MOCK_DRIVER_OR_SKIP(driver);
  const auto found = mock_devices(driver);
  try {
    device_of(found).compile(kernel_of(kRejected));
    FAIL("the mock driver's refusal was not reported");
  } catch (const canopy::Error& error) {
    const std::string message = error.what();
    CHECK(message.find("Level Zero device 'Mock GPU 0' (level_zero:0) could not build kernel 'mock_reject'") !=
          std::string::npos);
    CHECK(message.find("ZE_RESULT_ERROR_MODULE_BUILD_FAILURE") != std::string::npos);
    CHECK(message.find("mock: error: kernel 'mock_reject' is refused on purpose") != std::string::npos);
    CHECK(message.find("define spir_kernel void @mock_reject(") != std::string::npos);
    CHECK(message.find("   1 | ") != std::string::npos);  // numbered lines
    CHECK(message.find("CANOPY_DUMP=ir,spirv") != std::string::npos);
  }
  CHECK(driver.live_modules() == 0);
}

TEST_CASE("level zero mock: fp64 kernels are refused on a device without doubles; programs run where built") {
  MOCK_DRIVER_OR_SKIP(driver);
  ::setenv("MOCK_ZE_NO_FP64", "1", 1);
  const auto found = mock_devices(driver);
  ::unsetenv("MOCK_ZE_NO_FP64");
  LevelZeroDevice& device = device_of(found);
  CHECK_FALSE(device.info().fp64);
  CHECK_THROWS_WITH_AS(device.compile(kernel_of(kTriad)), doctest::Contains("kernel 'triad' uses f64"), canopy::Error);
  const auto other = mock_devices(driver);
  const auto program = device_of(other).compile(kernel_of(kIndex2d));
  Buffer values = device.allocate(8);
  CHECK_THROWS_WITH_AS(device.run(*program, {array(values, 1, 1)}, range_of({0, 0}, {1, 1})),
                       doctest::Contains("a program compiled for another device"), canopy::Error);
  device.free(values);
}

TEST_CASE("level zero mock: programs and devices give back everything they hold") {
  MOCK_DRIVER_OR_SKIP(driver);
  const long allocations = driver.live_allocations(), modules = driver.live_modules(), kernels = driver.live_kernels(),
             contexts = driver.live_contexts();
  {
    const auto found = mock_devices(driver);
    auto program = device_of(found).compile(kernel_of(kSum));
    CHECK(driver.live_modules() == modules + 1);
    CHECK(driver.live_kernels() == kernels + 1);
    CHECK(driver.live_allocations() == allocations + 1);  // the partial results
    program.reset();
    CHECK(driver.live_modules() == modules);
    CHECK(driver.live_kernels() == kernels);
    CHECK(driver.live_allocations() == allocations);
  }
  CHECK(driver.live_contexts() == contexts);
}
