// Errors that help: bad inputs from every part of the system, each with the
// exact canopy::Error message it raises. Every message names the thing at
// fault (file and line, location, array, kernel, variable, device) and says
// what to do; this file is the list a user can read to see what Canopy says,
// and it keeps the messages from drifting.
//
// Inputs: configuration lines, policy strings, unknown locations, no common
// location for a region's arrays, kernel arguments that do not match (through
// Engine::submit with a hand-built RegionRequest, since the typed front end
// refuses them when the program compiles), wrong ranks and extents, negative
// shapes, read-only arrays, kernels that do not verify, IR text with parse
// errors, bad environment variables, f64 on a device without doubles, and an
// allocation too large for the host.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstdlib>
#include <limits>
#include <memory>
#include <optional>
#include <string>

#include <canopy/backends/level_zero/level_zero_device.hpp>
#include <canopy/backends/opencl/opencl_device.hpp>
#include <canopy/ir/dump.hpp>
#include <canopy/ir/parser.hpp>
#include <canopy/ir/verifier.hpp>
#include <canopy/runtime/config.hpp>
#include <canopy/runtime/policy.hpp>

#include <canopy/runtime/internal/engine_access.hpp>
#include "engine_trees.hpp"
#include "scoped_setting.hpp"

using namespace canopy;
using namespace canopy::engine_tests;

namespace {

using ScopedVariable = canopy::testing::ScopedSetting;

/// 8 cores on 2 NUMA nodes, two CUDA GPUs near the second, made up.
NodeInventory made_up_node() {
  NodeInventory node;
  for (unsigned core = 0; core < 8; ++core) node.cores.push_back(CoreInfo{core, int(core / 4), int(core / 4)});
  node.numa_nodes = {NumaInfo{0, std::int64_t{16} << 30}, NumaInfo{1, std::int64_t{16} << 30}};
  for (int index = 0; index < 2; ++index) {
    DiscoveredDevice gpu;
    gpu.kind = LocationKind::Cuda;
    gpu.index = index;
    gpu.id = "cuda:" + std::to_string(index);
    gpu.name = "Made-up GPU";
    gpu.numa_node = 1;
    node.devices.push_back(gpu);
  }
  node.source = "made up";
  return node;
}

/// The error a configuration text is refused with under CANOPY_CONFIG_STRICT=1
/// (without it, a node that lacks what the text asks for is a warning).
std::string config_error(const std::string& text) {
  ScopedVariable strict("CANOPY_CONFIG_STRICT", "1");
  return error_of([&] { load_config(text, "site.conf", made_up_node()); });
}

const Kernel<void(Out<double>, In<double>, Val<double>)>& scale() {
  static const Kernel kernel(
      "scale", [](Out<double> y, In<double> x, Val<double> factor) { y[index(0)] = x[index(0)] * factor; },
      {"y", "x", "factor"});
  return kernel;
}

const Kernel<void(InOut<std::int64_t>)>& increment() {
  static const Kernel kernel("increment", [](InOut<std::int64_t> x) { x[index(0)] += 1; }, {"x"});
  return kernel;
}

/// A request for scale() over 100 points with `args`, as Region would build it.
runtime::RegionRequest scale_request(std::vector<runtime::ArgRef> args) {
  runtime::RegionRequest request;
  request.kernel = scale().ir_ptr();
  request.range = Shape(100);
  request.args = std::move(args);
  return request;
}

}  // namespace

TEST_CASE("error messages: configuration lines and files name the file, the line and what is expected") {
  CHECK(config_error("loctype;name,gpu;kind,fpga\n") ==
        "site.conf:1: unknown kind 'fpga'; expected x32, x64, NVIDIA, Unified_Memory, Permanent_Storage, virtual, cpu, "
        "opencl, cuda, level_zero, gpu, host_memory, unified_memory or file_memory");
  CHECK(config_error("location;name,LocA\n") ==
        "site.conf:1: location 'LocA' has no type; expected type,LOCTYPE or type,KIND");
  CHECK(config_error("location;name,top;type,virtual\nhierarchy;children,+,LocX;parent,top\n") ==
        "site.conf:2: no location or group 'LocX' is declared; expected a child declared by a location line above");
  CHECK(config_error("location;name,top;type,virtual\nlocation;name,g;type,cuda;total_count,3\n"
                     "hierarchy;children,+,g;parent,top\n") ==
        "site.conf:2: location 'g2' needs a cuda device, which this node does not have free; held by locations 'g0' "
        "and 'g1' (discovered: 8 cores on 2 NUMA nodes; devices: cuda:0 (Made-up GPU), cuda:1 (Made-up GPU)); "
        "expected fewer such locations, one of them removed first, or 'optional' on its location line");
  CHECK(config_error("location;name,a;type,virtual\nlocation;name,b;type,virtual\n") ==
        "site.conf:2: several locations have no parent: 'a' (line 1), 'b' (line 2); expected exactly one root; "
        "attach the others with hierarchy lines");
  CHECK(config_error("loctype;name,big;kind,cpu;mem,4XB\n") ==
        "site.conf:1: '4XB' is not a size; expected bytes, or a number with B, KB, MB, GB or TB (such as 16GB)");
  CHECK(error_of([] { load_config_file("/nonexistent/site.conf", made_up_node()); }) ==
        "cannot read the configuration file '/nonexistent/site.conf'; expected a readable file in Gecko's format");
  // An endless source is read no further than 16 MiB (it had filled memory).
  CHECK(error_of([] { load_config_file("/dev/zero", made_up_node()); }) ==
        "the configuration file '/dev/zero' is longer than 16 MiB; expected a file in Gecko's format (a few lines "
        "per location)");
}

TEST_CASE("error messages: policy strings name the text, the character and what is expected") {
  CHECK(error_of([] { parse_policy("percentage:[25,70]"); }) ==
        "invalid policy \"percentage:[25,70]\" at character 12: the percentages sum to 95, not 100; make them sum to "
        "100 (within 0.01)");
  CHECK(error_of([] { parse_policy("statik"); }) ==
        "invalid policy \"statik\" at character 1: expected a policy name (static, flatten, percentage, range, any, "
        "runtime or adaptive), found 'statik'");
  CHECK(error_of([] { parse_policy("range:[1.5,2]"); }) ==
        "invalid policy \"range:[1.5,2]\" at character 8: expected a whole number of iterations, found '1.5'");
  CHECK(error_of([] { parse_policy("flatten:[1]"); }) ==
        "invalid policy \"flatten:[1]\" at character 8: expected the end of the text ('flatten' takes no list), "
        "found ':'");
}

TEST_CASE("error messages: environment variables name the variable, its value and the values it takes") {
  {
    ScopedVariable v("CANOPY_DEVICES", "cpu,fpga");
    CHECK(error_of([] { Runtime rt; }) ==
          "CANOPY_DEVICES='cpu,fpga' is not allowed; use a comma-separated list of all, cpu, gpu, opencl, cuda, "
          "level_zero, or a device id such as opencl:0 ('fpga' is none of them)");
  }
  {
    ScopedVariable v("CANOPY_CPU_LEAVES", "socket");
    CHECK(error_of([] { Runtime rt; }) == "CANOPY_CPU_LEAVES='socket' is not allowed; use numa, l3 or core");
  }
  {
    ScopedVariable v("CANOPY_STREAMING_STORES", "maybe");
    CHECK(error_of([] { Runtime rt; }) == "CANOPY_STREAMING_STORES='maybe' is not allowed; use auto, on or off");
  }
  {
    ScopedVariable v("CANOPY_CONFIG", "/nonexistent/site.conf");
    CHECK(error_of([] { Runtime rt; }) ==
          "cannot read the configuration file '/nonexistent/site.conf'; expected a readable file in Gecko's format");
  }
  {
    ScopedVariable v("CANOPY_POLICY", "percentage:[60,30]");
    CHECK(error_of([] { Runtime rt; }) ==
          "CANOPY_POLICY='percentage:[60,30]' is not allowed; use static, flatten, percentage:[...], range:[...], any "
          "or adaptive (CANOPY_POLICY: invalid policy \"percentage:[60,30]\" at character 12: the percentages sum "
          "to 90, not 100; make them sum to 100 (within 0.01))");
  }
  {
    ScopedVariable v("CANOPY_POLICY", nullptr);
    Runtime rt;
    use_tree(rt, two_leaf_tree());
    auto x = rt.array<std::int64_t>(10, at("numa0") | named("counts"));
    CHECK(error_of([&] { rt.region(increment()).over(10).policy("runtime").launch(x); }) ==
          "policy 'runtime' takes the policy from CANOPY_POLICY (or GECKO_POLICY) as it was when the Runtime "
          "was made, and neither was set then; set CANOPY_POLICY to one of static, flatten, percentage:[...], "
          "range:[...], any or adaptive before making the Runtime");
  }
}

TEST_CASE("error messages: locations, placement and policies at run time") {
  Runtime rt;
  use_tree(rt, two_leaf_tree());
  const std::string unknown = "no location 'gpu7' in the hierarchy; known locations: node, numa0, cpuA, cpuB";
  CHECK(error_of([&] { rt.array<double>(10, at("gpu7")); }) == unknown);
  auto left = rt.array<std::int64_t>(10, at("cpuA") | named("left"));
  auto right = rt.array<std::int64_t>(10, at("cpuB") | named("right"));
  auto x = rt.array<double>(100, at("numa0") | named("x"));
  auto y = rt.array<double>(100, at("numa0") | named("y"));
  CHECK(error_of([&] { rt.region(increment()).over(10).at("gpu7").launch(left); }) ==
        "region of kernel 'increment': " + unknown);
  CHECK(error_of([&] { rt.move(left, "gpu7"); }) == unknown);
  CHECK(error_of([&] { rt.pause("gpu7"); }) == unknown);
  CHECK(error_of([&] { rt.region(scale()).over(100).policy("range:[10,20]").launch(y, x, 2.0); }) ==
        "region of kernel 'scale': policy range:[10,20] lists 30 iterations but the region's range has 100; make the "
        "numbers sum to the range's length");
  CHECK(error_of([&] { rt.region(scale()).over(100).policy("percentage:[100]").at("numa0").launch(y, x, 2.0); }) ==
        "region of kernel 'scale': policy percentage:[100] gives 1 number but location 'numa0' has 2 children with "
        "executing leaves below them; give at least one number per child (more fold over them in turn)");
  // MCD with no answer: the arrays are on different branches.
  Kernel pair("pair", [](InOut<std::int64_t> a, In<std::int64_t> b) { a[index(0)] += b[index(0)]; }, {"a", "b"});
  CHECK(error_of([&] { rt.region(pair).over(10).launch(left, right); }) ==
        "region of kernel 'pair': no location sees the memory of every argument (argument 'a', array 'left' (i64 10 "
        "at cpuA), at 'cpuA', argument 'b', array 'right' (i64 10 at cpuB), at 'cpuB'): argument 'a', array 'left' "
        "(i64 10 at cpuA), at 'cpuA' and argument 'b', array 'right' (i64 10 at cpuB), at 'cpuB' are on different "
        "branches, which part at 'numa0'; move one of them (rt.move) onto the other's path to the root, for example "
        "to 'numa0'");
  CHECK(error_of([&] { rt.region(increment()).over(10).at("cpuB").launch(left); }) ==
        "region of kernel 'increment' at 'cpuB': argument 'x', array 'left' (i64 10 at cpuA), is not visible there; "
        "memory is visible at its location and below it; move the array or run the region below 'cpuA'");
  CHECK(error_of([&] { far(-1); }) == "far(-1): the distance must be 0 or more levels");
  // A leaf with nothing to run on is refused when it is added, and the tree
  // stays as it was: one had made every region above it fail.
  const std::string before = rt.hierarchy().to_text();
  LocationTraits ghost;
  ghost.device = "opencl:7";
  CHECK(error_of([&] { rt.add_location("ghost", LocationKind::OpenCL, ghost, "numa0"); })
            .find("location 'ghost' (opencl) names device 'opencl:7', which this Runtime did not start (this "
                  "Runtime's opencl devices: ") == 0);
  CHECK(error_of([&] { rt.add_location("ghost", LocationKind::Cuda, {}, "numa0"); })
            .find("location 'ghost' (cuda) names no device (its traits' device is empty; this Runtime's cuda "
                  "devices: ") == 0);
  LocationTraits far_core;
  far_core.pus = {1u << 20};
  CHECK(error_of([&] {
          rt.add_location("ghost", LocationKind::Cpu, far_core, "numa0");
        }).find("location 'ghost' (cpu) is bound to processing unit 1048576, which this node does not have") == 0);
  LocationTraits twice;
  twice.pus = {core(0), core(0)};
  CHECK(error_of([&] { rt.add_location("ghost", LocationKind::Cpu, twice, "numa0"); }) ==
        "location 'ghost' (cpu) lists processing unit " + std::to_string(core(0)) +
            " twice; a CPU leaf runs one thread per processing unit it lists");
  CHECK(rt.hierarchy().to_text() == before);
  rt.region(increment()).over(10).launch(left);  // the tree still runs
  rt.pause();
}

TEST_CASE("error messages: kernel arguments that do not match the kernel's parameters") {
  Runtime rt;
  use_tree(rt, two_leaf_tree());
  auto x = rt.array<double>(100, at("numa0") | named("x"));
  auto y = rt.array<double>(100, at("numa0") | named("y"));
  auto& engine = canopy::runtime::engine_of(rt);
  CHECK(error_of([&] {
          engine.submit(scale_request({y.storage(), x.storage()}));
        }) == "kernel 'scale' takes 3 arguments, 2 were given; pass one per parameter (y, x, factor)");
  auto f32 = rt.array<float>(100, at("numa0") | named("single"));
  CHECK(error_of([&] {
          engine.submit(scale_request({y.storage(), f32.storage(), backends::scalar_arg<double>(2.0)}));
        }) ==
        "kernel 'scale': argument 2 of 3 (array 'single' (f32 100 at numa0)) does not match parameter 'x'; pass an "
        "array of f64 with 1 dimension(s)");
  CHECK(error_of([&] {
          engine.submit(
              scale_request({y.storage(), backends::scalar_arg<double>(1.0), backends::scalar_arg<double>(2.0)}));
        }) ==
        "kernel 'scale': argument 2 of 3 (a value) does not match parameter 'x'; pass an array of f64 with 1 "
        "dimension(s)");
  auto grid = rt.array<double, 2>(Shape(10, 10), at("numa0") | named("grid"));
  CHECK(error_of([&] {
          engine.submit(scale_request({y.storage(), grid.storage(), backends::scalar_arg<double>(2.0)}));
        }) ==
        "kernel 'scale': argument 2 of 3 (array 'grid' (f64 10x10 at numa0)) does not match parameter 'x'; pass an "
        "array of f64 with 1 dimension(s)");
  CHECK(
      error_of([&] {
        engine.submit(scale_request({y.storage(), x.storage(), x.storage()}));
      }) ==
      "kernel 'scale': argument 3 of 3 (array 'x' (f64 100 at numa0)) does not match parameter 'factor'; pass a value "
      "of type f64");
  auto table = rt.array<double>(100, at("numa0") | named("table") | read_only());
  CHECK(error_of([&] { rt.region(scale()).over(100).launch(table, x, 2.0); }) ==
        "kernel 'scale' writes parameter 'y' but array 'table' (f64 100 at numa0) is read-only; pass a writable array");
  // A value the parameter cannot hold is refused, where it was wrapped or
  // made infinite; one it holds, an infinity included, is taken.
  const Kernel store_int("store_int", [](Out<std::int32_t> o, Val<std::int32_t> v) { o[index(0)] = v; }, {"o", "v"});
  const Kernel store_float("store_float", [](Out<float> o, Val<float> v) { o[index(0)] = v; });
  auto ints = rt.array<std::int32_t>(4, at("numa0"));
  auto floats = rt.array<float>(4, at("numa0"));
  CHECK(error_of([&] { rt.region(store_int).over(4).launch(ints, 3000000000LL); }) ==
        "kernel 'store_int' parameter 'v' of type i32 cannot hold 3000000000; pass a value that i32 holds, or give "
        "the parameter a wider type");
  CHECK(error_of([&] { rt.region(store_int).over(4).launch(ints, 2147483648u); }) ==
        "kernel 'store_int' parameter 'v' of type i32 cannot hold 2147483648; pass a value that i32 holds, or give "
        "the parameter a wider type");
  CHECK(error_of([&] { rt.region(store_float).over(4).launch(floats, 1e300); }) ==
        "kernel 'store_float' parameter p1 (unnamed: the 2nd) of type f32 cannot hold 1e+300; pass a value that f32 "
        "holds, or give the parameter a wider type");
  // Past the largest float by more than half its last place: infinite as a float.
  CHECK(error_of([&] { rt.region(store_float).over(4).launch(floats, 3.4028236e38); }) ==
        "kernel 'store_float' parameter p1 (unnamed: the 2nd) of type f32 cannot hold 3.4028236e+38; pass a value "
        "that f32 holds, or give the parameter a wider type");
  auto largest = rt.array<float>(1, at("numa0"));
  rt.region(store_float).over(1).launch(largest, 3.4028235e38);  // rounds to the largest float
  rt.region(store_int).over(2).launch(ints, std::int64_t{-2147483648LL});
  rt.region(store_float).over(1).launch(floats, -std::numeric_limits<double>::infinity());
  rt.pause();
  CHECK(ints.host()[0] == std::numeric_limits<std::int32_t>::min());
  CHECK(ints.host()[1] == std::numeric_limits<std::int32_t>::min());
  CHECK(ints.host()[2] == 0);  // the refused launches left it alone
  CHECK(floats.host()[0] == -std::numeric_limits<float>::infinity());
  CHECK(floats.host()[1] == 0.0f);
  CHECK(largest.host()[0] == std::numeric_limits<float>::max());
  // A region kept past the end of the Runtime that made it is refused.
  std::optional<decltype(rt.region(store_int))> kept;
  {
    Runtime gone;
    kept.emplace(gone.region(store_int));
    kept->over(4);
  }
  CHECK(error_of([&] { kept->launch(ints, 5); }) ==
        "kernel 'store_int': its region was made by a Runtime that no longer exists; make the region with a live "
        "Runtime");
  CHECK(ints.host()[2] == 0);
}

TEST_CASE("error messages: wrong ranks, extents and shapes of regions and arrays") {
  Runtime rt;
  use_tree(rt, two_leaf_tree());
  auto x = rt.array<double>(100, at("numa0") | named("x"));
  auto y = rt.array<double>(100, at("numa0") | named("y"));
  CHECK(error_of([&] { rt.region(scale()).over(10, 10).launch(y, x, 2.0); }) ==
        "kernel 'scale' has 1 index dimension(s) but the region is over 2 (10x10); give over() 1 extent(s)");
  CHECK(error_of([&] { rt.region(scale()).over(-5).launch(y, x, 2.0); }) ==
        "kernel 'scale': the region's extents cannot be negative (-5); give over() extents of 0 or more");
  CHECK(error_of([&] { rt.array<double, 2>(Shape(10)); }) ==
        "array<f64, 2> was given a shape of rank 1 (10); give a Shape of 2 extent(s)");
  CHECK(error_of([&] { rt.array<double>(-5); }) ==
        "an array cannot have a negative extent (-5); give extents of 0 or more");
  CHECK(error_of([&] { rt.array<double>(std::int64_t{1} << 62); }) ==
        "an array of 4611686018427387904 f64 elements is too large to address (at most 2^62 bytes); split it into "
        "smaller arrays");
  CHECK(error_of([&] { rt.array<double>(std::int64_t{1} << 55); }) ==
        "cannot allocate 288230376151711744 bytes of host memory: Cannot allocate memory; ask for a smaller array or "
        "free memory on this node");
  auto table = rt.array<double>(100, at("numa0") | named("table") | read_only());
  CHECK(error_of([&] { rt.copy(table, x); }) ==
        "copy: array 'table' (f64 100 at numa0) is read-only; copy into a writable array");
  auto short_x = rt.array<double>(10, at("numa0") | named("short"));
  CHECK(error_of([&] { rt.copy(x, short_x); }) ==
        "copy: array 'short' (f64 10 at numa0) and array 'x' (f64 100 at numa0) differ in element type or shape; "
        "copy between arrays of one type and shape");
  CHECK(error_of([&] { rt.wrap<double>(nullptr, 10); }) ==
        "wrap() was given a null pointer for 10 elements; pass the address of the program's data");
  std::vector<double> mine(10, 1.0);
  CHECK(error_of([&] { rt.wrap(mine.data(), 10, per_region()); }) ==
        "wrap() was given per_region(), whose contents go after each region, for memory that is the program's; make "
        "the array with rt.array() instead");
  // A pointer off the elements' alignment (found by a new user: taken, and
  // UBSan flagged every read through the host view).
  std::vector<char> bytes(8 * 11);
  auto* skewed = reinterpret_cast<double*>(bytes.data() + 1);
  CHECK(error_of([&] { rt.wrap(skewed, 10); }) ==
        "wrap() was given a pointer that is not aligned to its 8-byte f64 elements; pass the address of an array of "
        "them");
  rt.pause();
}

TEST_CASE("error messages: arrays that together pass the node's memory are refused before a first touch") {
  Runtime rt;  // the discovered tree: node, then its NUMA nodes with their memory
  const Hierarchy tree = rt.hierarchy();
  std::int64_t physical = 0;
  for (const Location* numa : tree.root()->children())
    if (numa->kind() == LocationKind::HostMemory) physical += numa->traits().capacity;
  REQUIRE(physical > 0);
  // Three fifths each: the first fits (its pages are not touched), the second does not.
  const std::int64_t elements = physical / 5 * 3 / 8;
  {
    auto first = rt.array<double>(elements);
    const std::string error = error_of([&] { auto second = rt.array<double>(elements); });
    CHECK(error.find("an array of " + std::to_string(elements * 8) + " bytes does not fit this node's memory (" +
                     std::to_string(physical) + " bytes in its NUMA nodes; Canopy's other arrays hold ") == 0);
    CHECK(error.find("free arrays, or ask for smaller ones") != std::string::npos);
    // A file memory (Gecko's Permanent_Storage) of a terabyte is no way
    // around it: Canopy keeps the arrays placed there in the host's memory.
    LocationTraits disk;
    disk.capacity = std::int64_t{1} << 40;
    rt.add_location("disk", LocationKind::FileMemory, disk, tree.root()->name());
    const std::string on_disk = error_of([&] { auto second = rt.array<double>(elements, at("disk")); });
    CHECK(on_disk.find("does not fit this node's memory") != std::string::npos);
  }
  auto again = rt.array<double>(elements, at("disk"));  // the first is gone
  CHECK(again.size() == elements);
}

TEST_CASE("error messages: kernel text and kernels that do not verify") {
  CHECK(error_of([] { ir::parse("kernel k(in f64 a) dims 1 {}", "k.ir"); }) == "k.ir:1:17: expected '[', found 'a'");
  CHECK(error_of([] { ir::parse("kernel k(out f64[1] a) dims 1 {\n  a[index(0)] = b[index(0)]\n}\n", "k.ir"); }) ==
        "k.ir:2:17: unknown name 'b'");
  CHECK(error_of([] { ir::parse("kernel k(in f64[1] a) dims 1 {\n  a[index(0)] = 1:f64\n}\n", "k.ir"); }) ==
        "k.ir: kernel 'k': writes array 'a' declared in; declare it out or inout in `a[index(0)] = 1:f64`");
  ir::Kernel bad;
  bad.name = "mixed";
  bad.params = {ir::Param::array("a", ir::ScalarType::F64, 1, ir::Access::Out)};
  bad.body = ir::make_block({ir::make_store(0, {ir::make_index(0)}, ir::make_int(ir::ScalarType::I32, 1))});
  CHECK(error_of([&] { ir::verify(bad); }) ==
        "kernel 'mixed': stores i32 into array 'a' of f64 in `a[index(0)] = 1:i32`");
}

TEST_CASE("error messages: f64 on a device without double precision") {
  const ir::Kernel doubles =
      ir::parse("kernel twice(inout f64[1] a) dims 1 {\n  a[index(0)] = (a[index(0)] * 2:f64)\n}\n");
  backends::DeviceInfo info;
  info.id = "opencl:3";
  info.name = "Small GPU";
  info.fp64 = false;
  CHECK(error_of([&] { backends::opencl::check_device_supports(doubles, info, {}); }) ==
        "kernel 'twice' uses f64, but OpenCL device 'Small GPU' (opencl:3) has no double precision (cl_khr_fp64); "
        "use f32 or run the kernel on a device with fp64");
  info.id = "level_zero:0";
  CHECK(error_of([&] { backends::level_zero::check_device_supports(doubles, info, {}); }) ==
        "kernel 'twice' uses f64, but Level Zero device 'Small GPU' (level_zero:0) has no double precision; use f32 "
        "or run the kernel on a device with fp64");
}

TEST_CASE("error messages: a word CANOPY_DUMP does not know stops the Runtime from starting") {
  {
    EnvironmentFor typo("CANOPY_DUMP", "ir,opencl,asembly");
    CHECK(error_of([] { Runtime rt; }) ==
          "CANOPY_DUMP='ir,opencl,asembly' is not allowed; use a comma-separated list of ir, llvm, asm, cost, "
          "program, opencl, cuda, spirv, or all ('asembly' is none of them)");
  }
  EnvironmentFor every_kind("CANOPY_DUMP", "ir,llvm,asm,cost,program,opencl,cuda,spirv,all,");
  CHECK_NOTHROW(Settings::from_environment());
}

TEST_CASE("error messages: a merged array takes only updates that combine with its operator") {
  Runtime rt;
  use_tree(rt, one_leaf_tree());
  constexpr std::int64_t n = 64, bins = 4;
  auto keys = rt.array<std::int32_t>(n, named("keys"));
  {
    auto k = keys.host();
    for (std::int64_t i = 0; i < n; ++i) k[i] = static_cast<std::int32_t>((i * 7) % 13);
  }
  auto sums = rt.array<std::int32_t>(bins, merge(MergeOp::Sum) | named("sums"));
  auto lows = rt.array<std::int32_t>(n, merge(MergeOp::Min) | named("lows"));
  auto highs = rt.array<std::int32_t>(n, merge(MergeOp::Max) | named("highs"));
  auto out = rt.array<std::int32_t>(n, named("out"));
  {
    auto l = lows.host();
    for (std::int64_t i = 0; i < n; ++i) l[i] = 100;
    auto h = highs.host();
    for (std::int64_t i = 0; i < n; ++i) h[i] = -1;
  }
  // Combining updates run: an atomic add and `+=` under sum, min(m, x) under
  // min, and under max a store of a value that never loses (a level).
  Kernel histogram("m_histogram",
                   [](InOut<std::int32_t> m, In<std::int32_t> k) {
                     Idx i = index(0);
                     atomic_add(m[k[i] % 4], 1);
                   },
                   {"m", "k"});
  // Each point its own element: non-atomic updates of one element from two
  // threads would race, merged or not.
  Kernel lowest("m_lowest",
                [](InOut<std::int32_t> m, In<std::int32_t> k) {
                  Idx i = index(0);
                  If(k[i] > 2, [&] { m[i] = min(m[i], k[i]); });
                },
                {"m", "k"});
  Kernel level("m_level",
               [](Out<std::int32_t> m, In<std::int32_t> k) {
                 Idx i = index(0);
                 If(k[i] > 5, [&] { m[i] = 3; });
               },
               {"m", "k"});
  Kernel reads_only("m_reads", [](Out<std::int32_t> o, In<std::int32_t> m) { o[index(0)] = m[index(0)] * 2; },
                    {"o", "m"});
  rt.region(histogram).over(n).launch(sums, keys);
  rt.region(lowest).over(n).launch(lows, keys);
  rt.region(level).over(n).launch(highs, keys);
  rt.region(reads_only).over(n).launch(out, highs);
  std::vector<std::int32_t> want_sums(bins, 0);
  for (std::int64_t i = 0; i < n; ++i) ++want_sums[static_cast<std::size_t>((i * 7) % 13 % 4)];
  {
    auto s = sums.host_read();
    for (std::int64_t b = 0; b < bins; ++b) CHECK(s[b] == want_sums[static_cast<std::size_t>(b)]);
    auto l = lows.host_read();
    for (std::int64_t i = 0; i < n; ++i) {
      const std::int32_t k = static_cast<std::int32_t>((i * 7) % 13);
      CHECK(l[i] == (k > 2 ? k : 100));
    }
    auto o = out.host_read();
    for (std::int64_t i = 0; i < n; ++i) CHECK(o[i] == ((i * 7) % 13 > 5 ? 6 : -2));
  }
  // Others are refused at launch, naming what the kernel does.
  Kernel stores("m_stores", [](InOut<std::int32_t> m) { m[index(0)] = 7; }, {"m"});
  CHECK(error_of([&] { rt.region(stores).over(bins).launch(sums); }) ==
        "kernel 'm_stores' passes array 'sums' (i32 4 at node) with merge(sum) as parameter 'm' and stores to it a "
        "value that is not <it> + x of the element stored to; a merged array takes only updates that combine with "
        "its operator (atomic_add(m[e], x) or m[e] = m[e] + x), which give the same result on every leaf however "
        "the region splits");
  Kernel peeks("m_peeks",
               [](InOut<std::int32_t> m, Out<std::int32_t> o) {
                 Idx i = index(0);
                 o[i] = m[i];
                 m[i] = min(m[i], 5);
               },
               {"m", "o"});
  CHECK(error_of([&] { rt.region(peeks).over(bins).launch(lows, out); })
            .find("with merge(min) as parameter 'm' and reads it other than in a store that combines into the "
                  "element it read; a merged array takes only updates that combine with its operator (m[e] = "
                  "min(m[e], x), or m[e] = x where x never loses)") != std::string::npos);
  // A read through another parameter that passes the same array is a read of it.
  Kernel aliased("m_aliased",
                 [](InOut<std::int32_t> m, In<std::int32_t> also, Out<std::int32_t> o) {
                   Idx i = index(0);
                   o[i] = also[i];
                   m[i] = min(m[i], 5);
                 },
                 {"m", "also", "o"});
  CHECK(error_of([&] {
          rt.region(aliased).over(bins).launch(lows, lows, out);
        }).find("with merge(min) as parameter 'm' and reads it other than in a store") != std::string::npos);
  Kernel adds("m_adds", [](InOut<std::int32_t> m) { atomic_add(m[0], 1); }, {"m"});
  CHECK(error_of([&] {
          rt.region(adds).over(bins).launch(lows);
        }).find("adds to it atomically, which combines as a sum, not as its min") != std::string::npos);
  // Refused launches changed nothing.
  auto s = sums.host_read();
  for (std::int64_t b = 0; b < bins; ++b) CHECK(s[b] == want_sums[static_cast<std::size_t>(b)]);
}

TEST_CASE("error messages: an empty Array handle names what was asked of it") {
  // Found by a new user: a default-constructed Array (a member not assigned
  // yet) crashed the program on host() and size().
  const Array<double> empty;
  CHECK_FALSE(empty);
  const std::string tail =
      " on an empty handle (a default-constructed Array): assign it an array made with "
      "rt.array<T>(...) first";
  CHECK(error_of([&] { (void)empty.host(); }) == "Array::host()" + tail);
  CHECK(error_of([&] { (void)empty.host_read(); }) == "Array::host_read()" + tail);
  CHECK(error_of([&] { (void)empty.size(); }) == "Array::size()" + tail);
  CHECK(error_of([&] { (void)empty.extent(0); }) == "Array::extent()" + tail);
  CHECK(error_of([&] { (void)empty.slice(0, 0); }) == "Array::slice()" + tail);
  CHECK(error_of([&] { (void)empty.location(); }) == "Array::location()" + tail);
}
