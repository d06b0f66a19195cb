// The Level Zero backend where this machine lets it be tested: discovery
// (the loader without a driver, a missing loader, a library without Level
// Zero's symbols: zero devices, no exception, a reason naming the cause),
// describing a device from its properties (a pure function, fed here with
// properties written by hand the way a driver fills them), and the host side
// of the SPIR-V kernel ABI (argument lists, work-group geometry, partial
// results). What needs a driver (contexts, memory, module builds, launches)
// cannot run here; the SPIR-V it would build is validated and executed on
// PoCL by level_zero_spirv_*.cpp.
#include <doctest/doctest.h>

#include <cstdlib>
#include <cstring>

#include <canopy/backends/level_zero/level_zero_device.hpp>
#include <canopy/ir/error.hpp>
#include <canopy/ir/parser.hpp>
#include "scoped_setting.hpp"

#include "common/skip.hpp"

using namespace canopy;
using namespace canopy::backends;
using namespace canopy::backends::level_zero;

namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

/// The properties of a made-up discrete GPU, filled the way a driver would.
LevelZeroProperties made_up_gpu() {
  LevelZeroProperties p;
  p.driver.driverVersion = 16900;
  p.api_version = ZE_API_VERSION_1_3;
  p.device.type = ZE_DEVICE_TYPE_GPU;
  p.device.vendorId = 0x8086;
  p.device.deviceId = 0x0bd5;
  p.device.maxMemAllocSize = std::uint64_t{48} << 30;
  p.device.physicalEUSimdWidth = 16;
  p.device.numSlices = 2;
  p.device.numSubslicesPerSlice = 4;
  p.device.numEUsPerSubslice = 8;
  std::strcpy(p.device.name, "Made-up Data Center GPU");
  p.compute.maxTotalGroupSize = 1024;
  p.compute.maxGroupSizeX = 1024;
  p.compute.maxGroupSizeY = 1024;
  p.compute.maxGroupSizeZ = 64;
  p.compute.maxGroupCountX = 0xffffffffu;
  p.compute.maxGroupCountY = 0xffffffffu;
  p.compute.maxGroupCountZ = 0xffffffffu;
  p.compute.maxSharedLocalMemory = 128 * 1024;
  p.module.spirvVersionSupported = ZE_MAKE_VERSION(1, 2);
  p.module.flags = ZE_DEVICE_MODULE_FLAG_FP64 | ZE_DEVICE_MODULE_FLAG_INT64_ATOMICS;
  for (std::uint8_t k = 0; k < ZE_MAX_NATIVE_KERNEL_UUID_SIZE; ++k) p.module.nativeKernelSupported.id[k] = k;
  ze_device_memory_properties_t hbm{};
  hbm.totalSize = std::uint64_t{32} << 30;
  p.memories = {hbm, hbm};
  ze_command_queue_group_properties_t copy{}, compute{};
  copy.flags = ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COPY;
  copy.maxMemoryFillPatternSize = 4;
  compute.flags = ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COMPUTE | ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COPY;
  compute.maxMemoryFillPatternSize = 128;
  p.queue_groups = {copy, compute};
  ze_pci_ext_properties_t pci{};
  pci.address = {0, 0x3a, 0, 0};
  p.pci = pci;
  return p;
}

template <class T>
std::vector<unsigned char> bytes_of(T value) {
  std::vector<unsigned char> bytes(sizeof value);
  std::memcpy(bytes.data(), &value, sizeof value);
  return bytes;
}

Range range_of(std::initializer_list<std::int64_t> begin, std::initializer_list<std::int64_t> end) {
  Range range;
  range.dims = static_cast<int>(begin.size());
  std::copy(begin.begin(), begin.end(), range.begin.begin());
  std::copy(end.begin(), end.end(), range.end.begin());
  return range;
}

constexpr const char* kTriad = R"(kernel triad(out f64[1] a, in f64[1] b, in f64[1] c, val f64 s) dims 1 {
  a[index(0)] = (b[index(0)] + (s * c[index(0)]))
})";

}  // namespace

// ---- discovery --------------------------------------------------------------

TEST_CASE("level zero: the loader without a driver gives no devices, no exception, and zeInit's result") {
  if (!jit::spirv_available()) {
    const BackendDevices found = discover_level_zero({"", "off"});
    CHECK(found.devices.empty());
    CHECK(contains(found.absent_reason, "no SPIR-V: LLVMSPIRVLib not found"));
    return;
  }
  const LoadedApi& loaded = load_api(default_library());
  if (!loaded.api) {
    MESSAGE("the Level Zero loader is not installed here: " << loaded.absent_reason);
    const BackendDevices found = discover_level_zero({"", "off"});
    CHECK(found.devices.empty());
    CHECK(found.absent_reason == loaded.absent_reason);
    return;
  }
  BackendDevices found;
  CHECK_NOTHROW(found = discover_level_zero({"", "off"}));
  CHECK(found.backend == "level_zero");
  const ze_result_t initialized = loaded.api->zeInit(ZE_INIT_FLAG_GPU_ONLY);
  if (initialized != ZE_RESULT_SUCCESS) {
    // This machine: the loader is present and no driver is.
    CHECK(found.devices.empty());
    CHECK(contains(found.absent_reason, "zeInit(ZE_INIT_FLAG_GPU_ONLY) returned " + result_name(initialized)));
    CHECK(contains(found.absent_reason, default_library()));
    MESSAGE("Level Zero here: " << found.absent_reason);
  } else if (found.devices.empty()) {
    CHECK_FALSE(found.absent_reason.empty());
  }
}

TEST_CASE("level zero: a real device, where there is one, has sane traits" * doctest::test_suite("level-zero-device")) {
  const BackendDevices found = discover_level_zero({"", "off"});
  if (found.devices.empty()) CANOPY_TEST_SKIP(Other, "no Level Zero device (" << found.absent_reason << ")");
  for (const auto& device : found.devices) {
    CHECK(device->info().backend == "level_zero");
    CHECK(device->info().compute_units > 0);
    CHECK(contains(device->info().fingerprint, "level_zero|"));
  }
}

TEST_CASE("level zero: a missing loader or one without Level Zero's symbols is named in the reason") {
  // Without SPIR-V the reason is about SPIR-V (above).
  if (!jit::spirv_available()) CANOPY_TEST_SKIP(Other, jit::spirv_unavailable_reason());
  BackendDevices missing;
  CHECK_NOTHROW(missing = discover_level_zero({"/nonexistent/libze_loader.so.1", "off"}));
  CHECK(missing.devices.empty());
  CHECK(contains(missing.absent_reason, "'/nonexistent/libze_loader.so.1' could not be opened"));
  CHECK(contains(missing.absent_reason, "CANOPY_LIBZE"));

  // CANOPY_LIBZE chooses the library when the options do not.
  std::optional<canopy::testing::ScopedSetting> library(std::in_place, "CANOPY_LIBZE",
                                                        "/nonexistent/elsewhere/libze.so");
  CHECK(default_library() == "/nonexistent/elsewhere/libze.so");
  const BackendDevices from_environment = discover_level_zero({"", "off"});
  library.reset();
  CHECK(from_environment.devices.empty());
  CHECK(contains(from_environment.absent_reason, "/nonexistent/elsewhere/libze.so"));
  CHECK(default_library() == "libze_loader.so.1");

  // A library that opens but is not Level Zero: the first missing symbol is named.
  const BackendDevices wrong = discover_level_zero({"libm.so.6", "off"});
  CHECK(wrong.devices.empty());
  CHECK(contains(wrong.absent_reason, "'libm.so.6' has no symbol zeInit"));
}

TEST_CASE("level zero: result names") {
  CHECK(result_name(ZE_RESULT_ERROR_UNINITIALIZED) == "ZE_RESULT_ERROR_UNINITIALIZED");
  CHECK(result_name(ZE_RESULT_ERROR_MODULE_BUILD_FAILURE) == "ZE_RESULT_ERROR_MODULE_BUILD_FAILURE");
  CHECK(result_name(static_cast<ze_result_t>(0x12345)) == "ze_result_t 0x12345");
  CHECK_NOTHROW(check(ZE_RESULT_SUCCESS, "zeInit", "here"));
  try {
    check(ZE_RESULT_ERROR_DEVICE_LOST, "zeCommandListAppendLaunchKernel", "Level Zero device 'x' (level_zero:0)");
    FAIL("check did not throw");
  } catch (const canopy::Error& error) {
    CHECK(std::string(error.what()) ==
          "zeCommandListAppendLaunchKernel failed on Level Zero device 'x' (level_zero:0): "
          "ZE_RESULT_ERROR_DEVICE_LOST (0x70000001)");
  }
}

// ---- describing a device ------------------------------------------------------

TEST_CASE("level zero: a device described from its properties") {
  const auto [info, traits] = describe_device(made_up_gpu(), 2);
  CHECK(info.id == "level_zero:2");
  CHECK(info.backend == "level_zero");
  CHECK(info.name == "Made-up Data Center GPU");
  CHECK(info.vendor == "Intel");
  CHECK(info.compute_units == 64);  // 2 slices x 4 sub-slices x 8 EUs
  CHECK(info.global_memory == (std::int64_t{64} << 30));
  CHECK(info.max_allocation == (std::int64_t{48} << 30));
  CHECK(info.max_work_group == 1024);
  CHECK(info.preferred_vector_width == 64);
  CHECK(info.fp64);
  CHECK_FALSE(info.host_memory);
  CHECK_FALSE(info.on_host_cores);
  CHECK(info.pci_bus_id == "0000:3a:00.0");
  CHECK(info.driver_version == "driver 16900, Level Zero 1.3");
  CHECK(info.fingerprint == "level_zero|Made-up Data Center GPU|8086:0bd5|16900|000102030405060708090a0b0c0d0e0f");
  CHECK(traits.vendor_id == 0x8086);
  CHECK(traits.spirv_version == ZE_MAKE_VERSION(1, 2));
  CHECK(traits.int64_atomics);
  REQUIRE(traits.compute_ordinal.has_value());
  CHECK(*traits.compute_ordinal == 1);  // the first group that computes
  CHECK(traits.max_fill_pattern == 128);
  CHECK(traits.limits.max_group_size == 1024);
  CHECK(traits.limits.max_group_extent[2] == 64);
  CHECK(traits.limits.local_memory == 128 * 1024);
  CHECK(traits.limits.point_group_size == 256);
  CHECK(traits.limits.reduction_group_size == 256);
  CHECK(traits.limits.reduction_groups == 64);  // one per EU
  // Allocations beyond 4 GiB need 64-bit offsets.
  CHECK(traits.build_flags == "-ze-opt-greater-than-4GB-buffer-required");

  LevelZeroProperties small = made_up_gpu();
  small.device.maxMemAllocSize = std::uint64_t{2} << 30;
  small.module.flags = 0;
  small.pci.reset();
  small.queue_groups.resize(1);  // copy only
  small.device.vendorId = 0x1234;
  const auto [small_info, small_traits] = describe_device(small, 0);
  CHECK_FALSE(small_info.fp64);
  CHECK_FALSE(small_traits.int64_atomics);
  CHECK(small_info.pci_bus_id.empty());
  CHECK_FALSE(small_traits.compute_ordinal.has_value());
  CHECK(small_traits.build_flags.empty());
  CHECK(small_info.vendor == "PCI vendor 0x1234");
}

TEST_CASE("level zero: kernels needing fp64 or 64-bit atomics are refused by name on devices without them") {
  LevelZeroProperties properties = made_up_gpu();
  properties.module.flags = 0;
  const auto [info, traits] = describe_device(properties, 0);
  try {
    check_device_supports(ir::parse(kTriad), info, traits);
    FAIL("an f64 kernel was accepted by a device without fp64");
  } catch (const canopy::Error& error) {
    CHECK(contains(error.what(), "kernel 'triad' uses f64"));
    CHECK(contains(error.what(), "'Made-up Data Center GPU' (level_zero:0)"));
  }
  const ir::Kernel atomics = ir::parse(R"(kernel counts(inout i64[1] h, in i32[1] bin) dims 1 {
  atomic h[i64(bin[index(0)])] += 1:i64
})");
  CHECK_THROWS_WITH_AS(check_device_supports(atomics, info, traits), doctest::Contains("needs 64-bit atomics"),
                       canopy::Error);
  const auto [full_info, full_traits] = describe_device(made_up_gpu(), 0);
  CHECK_NOTHROW(check_device_supports(atomics, full_info, full_traits));
}

// ---- the host side of the kernel ABI --------------------------------------------

TEST_CASE("spirv launch: a point kernel's arguments in ABI order, and whole work-groups over the piece") {
  const ir::Kernel triad = ir::parse(kTriad);
  double a = 0, b = 0, c = 0;  // stand-ins for device buffers
  // b's buffer holds a window of it from element 64 on (a copy of part of the array).
  const std::vector<KernelArg> args{ArrayArg{&a, {1000, 1, 1}}, ArrayArg{&b, {1000, 1, 1}, 64},
                                    ArrayArg{&c, {1000, 1, 1}}, scalar_arg(0.5)};
  SpirvLaunchLimits limits;
  limits.point_group_size = 256;
  const SpirvLaunch launch = plan_spirv_launch(triad, args, range_of({100}, {900}), {}, limits, "here");
  REQUIRE(launch.arguments.size() == 12);
  using Kind = SpirvArgument::Kind;
  CHECK(launch.arguments[0].kind == Kind::Buffer);
  CHECK(launch.arguments[0].buffer == &a);
  CHECK(launch.arguments[1].bytes == bytes_of<std::int64_t>(1000));
  CHECK(launch.arguments[2].bytes == bytes_of<std::int64_t>(0));  // a's first element
  CHECK(launch.arguments[3].buffer == &b);
  CHECK(launch.arguments[5].bytes == bytes_of<std::int64_t>(64));  // b's
  CHECK(launch.arguments[6].buffer == &c);
  CHECK(launch.arguments[9].bytes == bytes_of(0.5));
  CHECK(launch.arguments[10].bytes == bytes_of<std::int64_t>(100));  // begin
  CHECK(launch.arguments[11].bytes == bytes_of<std::int64_t>(900));  // end
  CHECK_FALSE(launch.reduces);
  CHECK(launch.dims == 1);
  CHECK(launch.group_size[0] == 256);
  CHECK(launch.group_count[0] == 4);  // 800 points in whole groups of 256
}

TEST_CASE("spirv launch: scalars of every type pass as the kernel declares them") {
  CHECK(scalar_argument_bytes(ir::ScalarType::Bool, scalar_arg(true)) == bytes_of<std::int32_t>(1));
  CHECK(scalar_argument_bytes(ir::ScalarType::Bool, scalar_arg(false)) == bytes_of<std::int32_t>(0));
  CHECK(scalar_argument_bytes(ir::ScalarType::I32, scalar_arg<std::int32_t>(-7)) == bytes_of<std::int32_t>(-7));
  CHECK(scalar_argument_bytes(ir::ScalarType::I64, scalar_arg<std::int64_t>(-7)) == bytes_of<std::int64_t>(-7));
  CHECK(scalar_argument_bytes(ir::ScalarType::F32, scalar_arg(1.5)) == bytes_of(1.5f));
  CHECK(scalar_argument_bytes(ir::ScalarType::F64, scalar_arg<std::int32_t>(3)) == bytes_of(3.0));
}

TEST_CASE("spirv launch: in 2-D and 3-D, device dimension 0 is the last index, groups fit the piece") {
  const ir::Kernel stencil = ir::parse(R"(kernel copy_2d(out f32[2] v, in f32[2] u) dims 2 {
  v[index(0), index(1)] = u[index(0), index(1)]
})");
  float v = 0, u = 0;
  const std::vector<KernelArg> args{ArrayArg{&v, {300, 5, 1}}, ArrayArg{&u, {300, 5, 1}}};
  SpirvLaunchLimits limits;
  limits.point_group_size = 256;
  const SpirvLaunch launch = plan_spirv_launch(stencil, args, range_of({0, 0}, {300, 5}), {}, limits, "here");
  CHECK(launch.dims == 2);
  CHECK(launch.group_size[0] == 4);   // the 5 columns: at most a power of two no wider than them
  CHECK(launch.group_size[1] == 64);  // the rows take the rest of the 256
  CHECK(launch.group_count[0] == 2);
  CHECK(launch.group_count[1] == 5);  // 300 rows in groups of 64
  REQUIRE(launch.arguments.size() == 12);
  CHECK(launch.arguments[8].bytes == bytes_of<std::int64_t>(0));
  CHECK(launch.arguments[9].bytes == bytes_of<std::int64_t>(300));
  CHECK(launch.arguments[11].bytes == bytes_of<std::int64_t>(5));

  limits.max_group_count = {1, 1, 1};
  CHECK_THROWS_WITH_AS(plan_spirv_launch(stencil, args, range_of({0, 0}, {300, 5}), {}, limits, "the made-up GPU"),
                       doctest::Contains("more than the 1 that the made-up GPU launches at once"), canopy::Error);
}

TEST_CASE("spirv launch: ranges needing more work-groups than a launch allows go in pieces") {
  const ir::Kernel triad = ir::parse(kTriad);
  SpirvLaunchLimits limits;
  limits.point_group_size = 256;
  limits.max_group_count = {2, 2, 2};
  const auto pieces = launch_pieces(triad, range_of({0}, {1000}), limits);
  REQUIRE(pieces.size() == 2);
  CHECK(pieces[0].begin[0] == 0);
  CHECK(pieces[0].end[0] == 512);
  CHECK(pieces[1].begin[0] == 512);
  CHECK(pieces[1].end[0] == 1000);
  CHECK(launch_pieces(triad, range_of({0}, {512}), limits).size() == 1);
  CHECK(launch_pieces(triad, range_of({7}, {7}), limits).size() == 1);  // empty: as it is

  // 2-D: each dimension that needs too many groups is sliced; every piece
  // then plans without error, and together they cover the range once.
  const ir::Kernel copy = ir::parse(R"(kernel copy_2d(out f32[2] v, in f32[2] u) dims 2 {
  v[index(0), index(1)] = u[index(0), index(1)]
})");
  float v = 0, u = 0;
  const std::vector<KernelArg> args{ArrayArg{&v, {300, 5, 1}}, ArrayArg{&u, {300, 5, 1}}};
  limits.max_group_count = {1, 2, 1};
  const Range whole = range_of({0, 0}, {300, 5});
  const auto tiles = launch_pieces(copy, whole, limits);
  CHECK(tiles.size() == 6);  // rows in 128s (3 slices) x columns in 4s (2 slices)
  std::int64_t covered = 0;
  for (const Range& tile : tiles) {
    CHECK_NOTHROW(plan_spirv_launch(copy, args, tile, {}, limits, "here"));
    covered += tile.points();
  }
  CHECK(covered == whole.points());
  CHECK(tiles.front().end[0] == 128);
  CHECK(tiles.front().end[1] == 4);
  CHECK(tiles.back().begin[0] == 256);
  CHECK(tiles.back().begin[1] == 4);

  // Reductions are one launch whatever the range: their group count is bounded.
  const ir::Kernel sum = ir::parse(R"(kernel total(in f64[1] x, sum f64 s) dims 1 {
  reduce s <- x[index(0)]
})");
  CHECK(launch_pieces(sum, range_of({0}, {1000000}), limits).size() == 1);
}

TEST_CASE("spirv launch: reductions get partials, scratch sized per work-group, a bounded number of groups") {
  const ir::Kernel sum = ir::parse(R"(kernel dot(in f64[1] x, sum f64 total, max i32 top) dims 1 {
  reduce total <- x[index(0)]
  reduce top <- i32(x[index(0)])
})");
  double x = 0, total = 0, top = 0;
  const std::vector<KernelArg> args{ArrayArg{&x, {100000, 1, 1}}, ReductionArg{}, ReductionArg{}};
  SpirvLaunchLimits limits;
  limits.reduction_group_size = 256;
  limits.reduction_groups = 64;
  limits.local_memory = 1024;  // 12 bytes per work-item: at most 85, so 64
  const std::vector<void*> partials{nullptr, &total, &top};
  const SpirvLaunch launch = plan_spirv_launch(sum, args, range_of({0}, {100000}), partials, limits, "here");
  CHECK(launch.reduces);
  CHECK(launch.dims == 1);
  CHECK(launch.group_size[0] == 64);
  CHECK(launch.group_count[0] == 64);
  REQUIRE(launch.arguments.size() == 9);
  CHECK(launch.arguments[3].kind == SpirvArgument::Kind::Buffer);
  CHECK(launch.arguments[3].buffer == &total);
  CHECK(launch.arguments[4].kind == SpirvArgument::Kind::Local);
  CHECK(launch.arguments[4].local_bytes == 64 * sizeof(double));
  CHECK(launch.arguments[5].buffer == &top);
  CHECK(launch.arguments[6].local_bytes == 64 * sizeof(std::int32_t));

  // Few points: no more groups than they fill.
  CHECK(plan_spirv_launch(sum, args, range_of({0}, {100}), partials, limits, "here").group_count[0] == 2);
  // Without a partial-result buffer it is a Canopy bug, said so.
  CHECK_THROWS_AS(plan_spirv_launch(sum, args, range_of({0}, {100}), {}, limits, "here"), canopy::Error);

  // Partials combine in group order, with the IR's semantics (wrapping i32, fmax).
  std::vector<std::vector<unsigned char>> read(3);
  for (double value : {1.5, 2.25, -0.75}) {
    const auto bytes = bytes_of(value);
    read[1].insert(read[1].end(), bytes.begin(), bytes.end());
  }
  for (std::int32_t value : {3, 41, -8}) {
    const auto bytes = bytes_of(value);
    read[2].insert(read[2].end(), bytes.begin(), bytes.end());
  }
  const auto values = combine_partials(sum, read, 3);
  REQUIRE(values.size() == 2);
  CHECK(values[0].float_value == 3.0);
  CHECK(values[1].int_value == 41);
  CHECK(combine_partials(sum, read, 2)[1].int_value == 41);
  CHECK(combine_partials(sum, read, 1)[0].float_value == 1.5);
}

TEST_CASE("spirv launch: arguments that do not fit the kernel are refused by name") {
  const ir::Kernel triad = ir::parse(kTriad);
  double a = 0;
  const ArrayArg array{&a, {10, 1, 1}};
  CHECK_THROWS_WITH_AS(check_launch(triad, {array, array, array}, range_of({0}, {10}), "here"),
                       doctest::Contains("takes 4 arguments, 3 were given"), canopy::Error);
  CHECK_THROWS_WITH_AS(
      check_launch(triad, {array, array, scalar_arg(1.0), scalar_arg(1.0)}, range_of({0}, {10}), "here"),
      doctest::Contains("parameter 'c'"), canopy::Error);
  CHECK_THROWS_WITH_AS(check_launch(triad, {array, array, ArrayArg{}, scalar_arg(1.0)}, range_of({0}, {10}), "here"),
                       doctest::Contains("has no buffer"), canopy::Error);
  CHECK_THROWS_WITH_AS(check_launch(triad, {array, array, array, scalar_arg(1.0)}, range_of({-1}, {10}), "the GPU"),
                       doctest::Contains("the GPU runs index ranges from 0 up"), canopy::Error);
  CHECK_THROWS_WITH_AS(check_launch(triad, {array, array, array, scalar_arg(1.0)}, range_of({0, 0}, {10, 10}), "here"),
                       doctest::Contains("has 1 index dimensions, the range 2"), canopy::Error);
  CHECK_NOTHROW(check_launch(triad, {array, array, array, scalar_arg(1.0)}, range_of({0}, {10}), "here"));
}
