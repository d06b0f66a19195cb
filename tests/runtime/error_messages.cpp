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
#include <memory>
#include <optional>
#include <string>

#include <canopy/backends/level_zero/level_zero_device.hpp>
#include <canopy/backends/opencl/opencl_device.hpp>
#include <canopy/ir/parser.hpp>
#include <canopy/ir/verifier.hpp>
#include <canopy/runtime/config.hpp>
#include <canopy/runtime/policy.hpp>

#include "engine_trees.hpp"

using namespace canopy;
using namespace canopy::engine_tests;

namespace {

/// Sets an environment variable for the life of the object, then restores it.
/// Only used while no Runtime is alive, so no worker reads the environment meanwhile.
class ScopedVariable {
 public:
  ScopedVariable(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    value ? setenv(name, value, 1) : unsetenv(name);
  }
  ~ScopedVariable() { old_ ? setenv(name_, old_->c_str(), 1) : unsetenv(name_); }
  ScopedVariable(const ScopedVariable&) = delete;
  ScopedVariable& operator=(const ScopedVariable&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

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

std::string config_error(const std::string& text) {
  return error_of([&] { load_config(text, "site.conf", made_up_node()); });
}

const Kernel<void(Out<double>, In<double>, Val<double>)>& scale() {
  static const Kernel kernel("scale",
                             [](Out<double> y, In<double> x, Val<double> factor) { y[index(0)] = x[index(0)] * factor; },
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

TEST_CASE("error messages: probe") {
  auto show = [](const char* what, const std::string& message) { MESSAGE(what << " => " << message); };
  // configuration
  show("config kind", config_error("loctype;name,gpu;kind,fpga\n"));
  show("config no type", config_error("location;name,LocA\n"));
  show("config unknown child", config_error("location;name,top;type,virtual\nhierarchy;children,+,LocX;parent,top\n"));
  show("config missing gpu", config_error("location;name,top;type,virtual\nlocation;name,g;type,cuda;total_count,3\nhierarchy;children,+,g;parent,top\n"));
  show("config two roots", config_error("location;name,a;type,virtual\nlocation;name,b;type,virtual\n"));
  show("config size", config_error("loctype;name,big;kind,cpu;mem,4XB\n"));
  show("config file", error_of([] { load_config_file("/nonexistent/site.conf", made_up_node()); }));
  // policies
  show("policy sum", error_of([] { parse_policy("percentage:[25,70]"); }));
  show("policy name", error_of([] { parse_policy("statik"); }));
  show("policy whole", error_of([] { parse_policy("range:[1.5,2]"); }));
  show("policy list", error_of([] { parse_policy("flatten:[1]"); }));
  // environment
  {
    ScopedVariable v("CANOPY_DEVICES", "cpu,fpga");
    show("CANOPY_DEVICES", error_of([] { DiscoveryOptions::from_environment(); }));
  }
  {
    ScopedVariable v("CANOPY_CPU_LEAVES", "socket");
    show("CANOPY_CPU_LEAVES", error_of([] { DiscoveryOptions::from_environment(); }));
  }
  {
    ScopedVariable v("CANOPY_STREAMING_STORES", "maybe");
    show("CANOPY_STREAMING_STORES", error_of([] { Runtime rt; }));
  }
  {
    ScopedVariable v("CANOPY_CONFIG", "/nonexistent/site.conf");
    show("CANOPY_CONFIG", error_of([] { Runtime rt; }));
  }
  {
    ScopedVariable v("CANOPY_POLICY", "percentage:[60,30]");
    Runtime rt;
    use_tree(rt, two_leaf_tree());
    auto x = rt.array<std::int64_t>(10, at("numa0") | named("counts"));
    show("CANOPY_POLICY bad", error_of([&] { rt.region(increment()).over(10).policy("runtime").launch(x); }));
  }
  {
    ScopedVariable v("CANOPY_POLICY", nullptr);
    Runtime rt;
    use_tree(rt, two_leaf_tree());
    auto x = rt.array<std::int64_t>(10, at("numa0") | named("counts"));
    show("CANOPY_POLICY unset", error_of([&] { rt.region(increment()).over(10).policy("runtime").launch(x); }));
  }
  Runtime rt;
  use_tree(rt, two_leaf_tree());
  show("unknown array location", error_of([&] { rt.array<double>(10, at("gpu7")); }));
  auto left = rt.array<std::int64_t>(10, at("cpuA") | named("left"));
  auto right = rt.array<std::int64_t>(10, at("cpuB") | named("right"));
  auto x = rt.array<double>(100, at("numa0") | named("x"));
  auto y = rt.array<double>(100, at("numa0") | named("y"));
  show("region at unknown", error_of([&] { rt.region(increment()).over(10).at("gpu7").launch(left); }));
  show("move unknown", error_of([&] { rt.move(left, "gpu7"); }));
  show("pause unknown", error_of([&] { rt.pause("gpu7"); }));
  show("policy in region", error_of([&] { rt.region(increment()).over(10).policy("percentage:[100]").launch(right); }));
  show("range sum", error_of([&] { rt.region(scale()).over(100).policy("range:[10,20]").launch(y, x, 2.0); }));
  show("percentage count", error_of([&] { rt.region(scale()).over(100).policy("percentage:[100]").at("numa0").launch(y, x, 2.0); }));
  Kernel pair("pair", [](InOut<std::int64_t> a, In<std::int64_t> b) { a[index(0)] += b[index(0)]; }, {"a", "b"});
  show("no mcd", error_of([&] { rt.region(pair).over(10).launch(left, right); }));
  show("not visible", error_of([&] { rt.region(increment()).over(10).at("cpuB").launch(left); }));
  auto& engine = rt.engine();
  show("too few", error_of([&] { engine.submit(scale_request({y.storage(), x.storage()})); }));
  auto f32 = rt.array<float>(100, at("numa0") | named("single"));
  show("wrong type", error_of([&] { engine.submit(scale_request({y.storage(), f32.storage(), backends::scalar_arg<double>(2.0)})); }));
  show("scalar for array", error_of([&] { engine.submit(scale_request({y.storage(), backends::scalar_arg<double>(1.0), backends::scalar_arg<double>(2.0)})); }));
  auto grid = rt.array<double, 2>(Shape(10, 10), at("numa0") | named("grid"));
  show("rank", error_of([&] { engine.submit(scale_request({y.storage(), grid.storage(), backends::scalar_arg<double>(2.0)})); }));
  show("array for scalar", error_of([&] { engine.submit(scale_request({y.storage(), x.storage(), x.storage()})); }));
  show("int scalar", error_of([&] { engine.submit(scale_request({y.storage(), x.storage(), backends::scalar_arg<std::int64_t>(2)})); }));
  show("region rank", error_of([&] { rt.region(scale()).over(10, 10).launch(y, x, 2.0); }));
  show("region negative", error_of([&] { rt.region(scale()).over(-5).launch(y, x, 2.0); }));
  show("array rank", error_of([&] { rt.array<double, 2>(Shape(10)); }));
  show("array negative", error_of([&] { rt.array<double>(-5); }));
  show("array huge", error_of([&] { rt.array<double>(std::int64_t{1} << 62); }));
  show("array too large for host", error_of([&] { rt.array<double>(std::int64_t{1} << 55); }));
  auto table = rt.array<double>(100, at("numa0") | named("table") | read_only());
  show("read only", error_of([&] { rt.region(scale()).over(100).launch(table, x, 2.0); }));
  show("copy read only", error_of([&] { rt.copy(table, x); }));
  auto short_x = rt.array<double>(10, at("numa0") | named("short"));
  show("copy shape", error_of([&] { rt.copy(x, short_x); }));
  show("far", error_of([&] { far(-1); }));
  show("wrap null", error_of([&] { rt.wrap<double>(nullptr, 10); }));
  rt.pause();
  // kernels
  show("parse", error_of([] { ir::parse("kernel k(in f64 a) dims 1 {}", "k.ir"); }));
  show("parse 2", error_of([] { ir::parse("kernel k(out f64[1] a) dims 1 {\n  a[index(0)] = b[index(0)]\n}\n", "k.ir"); }));
  show("verify", error_of([] { ir::parse("kernel k(in f64[1] a) dims 1 {\n  a[index(0)] = 1:f64\n}\n", "k.ir"); }));
  ir::Kernel bad;
  bad.name = "mixed";
  bad.params = {ir::Param::array("a", ir::ScalarType::F64, 1, ir::Access::Out)};
  bad.body = ir::make_block({ir::make_store(0, {ir::make_index(0)}, ir::make_int(ir::ScalarType::I32, 1))});
  show("verify built", error_of([&] { ir::verify(bad); }));
  // fp64
  ir::Kernel doubles = ir::parse("kernel twice(inout f64[1] a) dims 1 {\n  a[index(0)] = (a[index(0)] * 2:f64)\n}\n");
  backends::DeviceInfo info;
  info.id = "opencl:3";
  info.name = "Small GPU";
  info.fp64 = false;
  show("fp64 opencl", error_of([&] { backends::opencl::check_device_supports(doubles, info, {}); }));
  info.id = "level_zero:0";
  show("fp64 l0", error_of([&] { backends::level_zero::check_device_supports(doubles, info, {}); }));
}
