// Tests of the machine model (runtime/machine_model.hpp): calibration on
// this machine gives positive, plausible numbers; the file round-trips, and
// a missing, truncated or corrupt one is ignored and replaced; the
// fingerprint follows the node and the tree; predictions follow the
// roofline (linear in points and bytes, compute-bound when flops dominate);
// balanced shares equalise predicted times; caches come from hwloc.
#include <doctest/doctest.h>
#include <unistd.h>

#include <canopy/backends/cpu/cpu_device.hpp>
#include <canopy/canopy.hpp>
#include <canopy/ir/parser.hpp>
#include <canopy/runtime/machine_model.hpp>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "scoped_setting.hpp"

using namespace canopy;
namespace fs = std::filesystem;

namespace {

/// A directory of its own, removed afterwards.
struct TempDir {
  fs::path path;
  TempDir() {
    static int counter = 0;
    path = fs::temp_directory_path() /
           ("canopy-machine-model-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
};

/// One runtime for the tests that calibrate (discovery and workers cost time).
Runtime& shared_runtime() {
  static Runtime rt;
  return rt;
}

/// A calibration small enough to repeat in tests.
CalibrationOptions quick(const fs::path& dir) {
  CalibrationOptions options;
  options.triad_points = 1 << 18;
  options.repeats = 1;
  options.latency_repeats = 3;
  options.cache_dir = dir.string();
  return options;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

void write_file(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

LeafModel leaf(std::string name, double bandwidth_gbs, double gflops_f64, double gflops_f32, double latency) {
  LeafModel m;
  m.leaf = std::move(name);
  m.bandwidth_gbs = bandwidth_gbs;
  m.gflops_f64 = gflops_f64;
  m.gflops_f32 = gflops_f32;
  m.launch_seconds = latency;
  m.calibrated = true;
  return m;
}

/// Leaf "a": 10 GB/s, 100 GF/s (f64), 200 (f32), 10 us; leaf "b": 30 GB/s, 50 GF/s, 100 us.
MachineModel hand_made() {
  MachineModel model;
  model.fingerprint = "test";
  model.leaves = {leaf("a", 10, 100, 200, 1e-5), leaf("b", 30, 50, 100, 1e-4)};
  return model;
}

ir::KernelCost triad_cost() {
  return ir::cost_of(
      ir::parse("kernel triad(out f64[1] a, in f64[1] b, in f64[1] c, val f64 s) dims 1 {\n"
                "  a[index(0)] = (b[index(0)] + (s * c[index(0)]))\n"
                "}\n"));
}

}  // namespace

TEST_CASE("machine model: calibration on this machine gives positive, plausible numbers for every leaf") {
  Runtime& rt = shared_runtime();
  const auto start = std::chrono::steady_clock::now();
  const MachineModel model = MachineModel::calibrate(rt);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  MESSAGE(model.describe());
  CHECK(model.source == "calibrated");
  CHECK(model.fingerprint == fingerprint_of(rt));
  CHECK(model.calibration_seconds > 0);
  CHECK(model.calibration_seconds <= seconds);
  CHECK(model.calibration_seconds < 10);  // well under a second on a quiet node; loaded build machines are slower

  const Hierarchy tree = rt.hierarchy();
  const auto leaves = tree.leaves(*tree.root());
  REQUIRE(model.leaves.size() == leaves.size());
  for (std::size_t i = 0; i < leaves.size(); ++i) {
    const LeafModel& m = model.leaves[i];
    INFO("leaf " << m.leaf);
    CHECK(m.leaf == leaves[i]->name());
    CHECK(m.kind == leaves[i]->kind());
    CHECK(m.calibrated);
    CHECK(m.note.empty());
    CHECK(m.cores >= 1);
    CHECK((m.line_bytes == 32 || m.line_bytes == 64 || m.line_bytes == 128));
    CHECK(m.bandwidth_gbs > 0.1);  // a DRAM stream, GB/s
    CHECK(m.bandwidth_gbs < 20000);
    CHECK(m.gflops_f64 > 0.01);
    CHECK(m.gflops_f64 < 1e6);
    CHECK(m.gflops_f32 > 0.01);
    CHECK(m.launch_seconds > 0);
    CHECK(m.launch_seconds < 0.05);
    if (m.kind == LocationKind::Cpu) {
      CHECK(m.cores == leaves[i]->traits().cores);
      CHECK(m.caches == rt.node().caches);
      if (!m.caches.empty()) CHECK(m.cache_bytes >= m.caches.back().bytes);
      if (m.clock_ghz > 0 && m.vector_bytes > 0)
        CHECK(m.peak_gflops == doctest::Approx(m.cores * (m.vector_bytes / 8.0) * 2 * m.clock_ghz));
    }
  }
  // This node (hwloc sees its caches): the CPU leaves know them.
  if (!rt.node().caches.empty()) {
    CHECK(rt.node().caches.front().level == 1);
    CHECK(rt.node().caches.front().bytes > 0);
  }
}

TEST_CASE("machine model: load_or_calibrate keeps the model in the cache directory and reads it back") {
  TempDir dir;
  Runtime& rt = shared_runtime();
  const MachineModel first = MachineModel::load_or_calibrate(rt, quick(dir.path));
  CHECK(first.source == "calibrated");
  const std::string path = machine_model_path(dir.path.string(), fingerprint_of(rt));
  REQUIRE(fs::exists(path));
  CHECK(path.find(dir.path.string()) == 0);

  // Read back, not calibrated again: the source names the file and no
  // calibration time is counted. (Not timed: a quick calibration takes a few
  // milliseconds, which a descheduled read of the file can exceed.)
  const MachineModel second = MachineModel::load_or_calibrate(rt, quick(dir.path));
  CHECK(second.source == path);
  CHECK(second.calibration_seconds == 0);
  CHECK(second == first);  // every number exactly

  // "off": no file, a calibration every time.
  CalibrationOptions off = quick(dir.path);
  off.cache_dir = "off";
  CHECK(MachineModel::load_or_calibrate(rt, off).source == "calibrated");
  CHECK(machine_model_directory("off") == "off");
  CHECK(machine_model_directory("/somewhere") == "/somewhere");
}

TEST_CASE("machine model: the file round-trips every field") {
  TempDir dir;
  MachineModel model = hand_made();
  model.fingerprint = "canopy 0.1.0; cpu Test CPU; leaf a cpu";
  model.leaves[0].kind = LocationKind::Cpu;
  model.leaves[0].model = "Test CPU with spaces";
  model.leaves[0].cores = 16;
  model.leaves[0].vector_bytes = 64;
  model.leaves[0].caches = {{1, 49152, 64, 1}, {2, 1 << 20, 64, 1}, {3, 32 << 20, 64, 8}};
  model.leaves[0].cache_bytes = 64 << 20;
  model.leaves[0].clock_ghz = 2.6;
  model.leaves[0].peak_gflops = 665.6;
  model.leaves[1].kind = LocationKind::OpenCL;
  model.leaves[1].device = "opencl:0";
  model.leaves[1].gflops_f64 = 1.0 / 3.0;  // needs all 17 digits
  model.leaves[1].stencil_bandwidth_gbs = 12.5;
  model.leaves[1].streaming_threshold = std::int64_t{64} << 20;
  model.leaves.push_back(leaf("c", 0, 0, 0, 0));
  model.leaves.back().calibrated = false;
  model.leaves.back().note = "calibration failed: no\tdevice\nhere";
  const std::string path = (dir.path / "sub" / "model.txt").string();
  model.save(path);  // creates the directory

  const auto loaded = MachineModel::load(path);
  REQUIRE(loaded);
  CHECK(loaded->source == path);
  CHECK(loaded->fingerprint == model.fingerprint);
  REQUIRE(loaded->leaves.size() == 3);
  CHECK(loaded->leaves[0] == model.leaves[0]);
  CHECK(loaded->leaves[1] == model.leaves[1]);
  CHECK(loaded->leaves[1].gflops_f64 == 1.0 / 3.0);
  CHECK(loaded->leaves[2].note == "calibration failed: no device here");  // one line in the file
  CHECK_FALSE(loaded->leaves[2].calibrated);
  CHECK(read_file(path).rfind("canopy-machine-model 4\n", 0) == 0);
  // No temporary file is left behind.
  int files = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator(dir.path / "sub")) ++files;
  CHECK(files == 1);
}

TEST_CASE("machine model: a missing, truncated, corrupt or foreign file is ignored, then replaced") {
  TempDir dir;
  const std::string path = (dir.path / "model.txt").string();
  CHECK_FALSE(MachineModel::load(path));               // missing
  CHECK_FALSE(MachineModel::load(dir.path.string()));  // a directory
  hand_made().save(path);
  const std::string good = read_file(path);
  REQUIRE(MachineModel::load(path));

  write_file(path, "");
  CHECK_FALSE(MachineModel::load(path));
  write_file(path, good.substr(0, good.size() / 2));
  CHECK_FALSE(MachineModel::load(path));
  write_file(path, good.substr(0, good.size() - 2));
  CHECK_FALSE(MachineModel::load(path));
  std::string flipped = good;
  flipped[good.find("bandwidth_gbs=") + 14] ^= 1;  // one digit of a number
  write_file(path, flipped);
  CHECK_FALSE(MachineModel::load(path));
  write_file(path, "not a model\nchecksum\t0000000000000000\n");
  CHECK_FALSE(MachineModel::load(path));
  write_file(path, std::string(1000, '\0'));
  CHECK_FALSE(MachineModel::load(path));

  // load_or_calibrate finds the damaged file where it looks, calibrates again and replaces it.
  Runtime& rt = shared_runtime();
  const std::string expected = machine_model_path(dir.path.string(), fingerprint_of(rt));
  write_file(expected, good.substr(0, good.size() - 5));
  const MachineModel fresh = MachineModel::load_or_calibrate(rt, quick(dir.path));
  CHECK(fresh.source == "calibrated");
  const auto reread = MachineModel::load(expected);
  REQUIRE(reread);
  CHECK(*reread == fresh);

  // A sound file for another fingerprint (a hash collision, a copied file) is not used.
  MachineModel foreign = hand_made();
  foreign.fingerprint = "another node";
  foreign.save(expected);
  CHECK(MachineModel::load_or_calibrate(rt, quick(dir.path)).source == "calibrated");
  CHECK(MachineModel::load(expected)->fingerprint == fingerprint_of(rt));
}

TEST_CASE("machine model: the fingerprint follows the node, the devices' drivers and the tree") {
  const NodeInventory node = discover_node_synthetic("pack:1 numa:1 core:4 pu:1");
  DiscoveryOptions per_numa, per_core;
  per_numa.cpu_grain = CpuGrain::Numa;
  per_core.cpu_grain = CpuGrain::Core;
  const Hierarchy one_leaf = default_hierarchy(node, per_numa);
  const Hierarchy four_leaves = default_hierarchy(node, per_core);
  const std::string base = fingerprint_of(node, one_leaf);
  CHECK(base == fingerprint_of(node, Hierarchy(one_leaf)));
  CHECK(base.find('\n') == std::string::npos);
  CHECK(base.find("canopy ") == 0);
  CHECK(fingerprint_of(node, four_leaves) != base);

  Hierarchy renamed = one_leaf;
  const std::string leaf_name = renamed.leaves(*renamed.root()).front()->name();
  const Location& leaf = renamed.at(leaf_name);
  const LocationTraits traits = leaf.traits();
  const std::string parent = leaf.parent()->name();
  renamed.remove(leaf_name);
  renamed.add("other", LocationKind::Cpu, traits, parent);
  CHECK(fingerprint_of(node, renamed) != base);

  NodeInventory other_cpu = node;
  other_cpu.cpu_model = "another CPU";
  CHECK(fingerprint_of(other_cpu, one_leaf) != base);

  // A NUMA node's memory is left out: it can change under a running program
  // (a virtual machine's balloon grew between two Runtimes of one process on
  // a GPU VM), and learned splits and models must still be found.
  NodeInventory more_memory = node;
  REQUIRE(!more_memory.numa_nodes.empty());
  more_memory.numa_nodes[0].capacity += std::int64_t{1536} << 20;
  CHECK(fingerprint_of(more_memory, one_leaf) == base);
  NodeInventory two_numa = node;
  two_numa.numa_nodes.push_back(two_numa.numa_nodes[0]);
  two_numa.numa_nodes.back().index = 1;
  CHECK(fingerprint_of(two_numa, one_leaf) != base);

  NodeInventory with_device = node;
  DiscoveredDevice device;
  device.id = "opencl:0";
  device.name = "a device";
  with_device.devices.push_back(device);
  const std::string driver1 = fingerprint_of(with_device, one_leaf, {{"opencl:0", "driver 1"}});
  CHECK(driver1 != base);
  CHECK(driver1 != fingerprint_of(with_device, one_leaf, {{"opencl:0", "driver 2"}}));

  CHECK(fingerprint_of(shared_runtime()) == fingerprint_of(shared_runtime()));
  CHECK(machine_model_path("/d", base) != machine_model_path("/d", fingerprint_of(node, four_leaves)));
}

TEST_CASE("machine model: predictions follow the roofline, scale with points and bytes") {
  const MachineModel model = hand_made();
  const ir::KernelCost triad = triad_cost();
  REQUIRE(triad.bytes() == 32);
  // Leaf a: 10 us + 1e6 points x 32 bytes / 10 GB/s.
  CHECK(model.predict_seconds(triad, "a", 1000000) == doctest::Approx(1e-5 + 32e6 / 10e9));
  CHECK(model.predict_seconds(triad, "b", 1000000) == doctest::Approx(1e-4 + 32e6 / 30e9));
  // Twice the points: twice the work, the same latency.
  const double one = model.predict_seconds(triad, "a", 1 << 20) - 1e-5;
  const double two = model.predict_seconds(triad, "a", 1 << 21) - 1e-5;
  CHECK(two == doctest::Approx(2 * one));
  // Twice the bytes: twice the work.
  ir::KernelCost heavier = triad;
  heavier.bytes_read *= 2;
  heavier.bytes_written *= 2;
  CHECK(model.predict_seconds(heavier, "a", 1 << 20) - 1e-5 == doctest::Approx(2 * one));
  CHECK(model.predict_seconds(triad, "a", 0) == doctest::Approx(1e-5));

  // Compute-bound: 1000 f64 flops and 8 bytes a point go at the flop rate.
  ir::KernelCost compute;
  compute.flops = compute.flops_f64 = 1000;
  compute.bytes_read = 8;
  CHECK(model.throughput(compute, "a") == doctest::Approx(100e9 / 1000));
  CHECK(model.throughput(compute, "b") == doctest::Approx(50e9 / 1000));
  ir::KernelCost single = compute;
  single.flops_f64 = 0;
  single.flops_f32 = 1000;
  CHECK(model.throughput(single, "a") == doctest::Approx(200e9 / 1000));
  CHECK(model.throughput(triad, "a") == doctest::Approx(10e9 / 32));
  CHECK(std::isinf(model.throughput(ir::KernelCost{}, "a")));

  // The Location overload names the leaf.
  Hierarchy tree;
  tree.add("node", LocationKind::Virtual, {}, "");
  const Location& a = tree.add("a", LocationKind::Cpu, {}, "node");
  CHECK(model.predict_seconds(triad, a, 12345) == model.predict_seconds(triad, "a", 12345));
  CHECK(model.throughput(triad, a) == model.throughput(triad, "a"));

  // Unknown and uncalibrated leaves are refused, by name.
  CHECK_THROWS_WITH(model.predict_seconds(triad, "gpu7", 10), doctest::Contains("no leaf 'gpu7'"));
  MachineModel partial = hand_made();
  partial.leaves[1].calibrated = false;
  partial.leaves[1].note = "calibration failed: x";
  CHECK_THROWS_WITH(partial.predict_seconds(triad, "b", 10), doctest::Contains("'b'"));
  CHECK(partial.find("b") != nullptr);
  CHECK(partial.find("z") == nullptr);
}

TEST_CASE(
    "machine model: stencil reads go at the stencil bandwidth, device streaming stores skip the allocating read") {
  MachineModel model = hand_made();
  model.leaves[1].kind = LocationKind::OpenCL;
  model.leaves[1].device = "opencl:0";
  model.leaves[1].stencil_bandwidth_gbs = 15;
  const ir::Kernel stencil = ir::parse(
      "kernel stencil(out f64[2] o, in f64[2] g) dims 2 {\n"
      "  o[index(0), index(1)] = (g[(index(0) - 1:i64), index(1)] + g[(index(0) + 1:i64), index(1)])\n"
      "}\n");
  const ir::KernelCost cost = model.cost_of(stencil, "b", {1000, 1000, 0});
  // b's stencil bandwidth, half its triad's; a has none measured and keeps its triad's.
  CHECK(model.throughput(cost, "b") == doctest::Approx(15e9 / cost.bytes()));
  CHECK(model.throughput(cost, "a") == doctest::Approx(10e9 / cost.bytes()));

  // A device that streams launches writing 1 MB or more: a triad of 1 Mi
  // points (8 MB written) skips the allocating read of a, one of 1000 points
  // does not; a device without streaming never skips it.
  const ir::Kernel triad = ir::parse(
      "kernel triad(out f64[1] a, in f64[1] b, in f64[1] c, val f64 s) dims 1 {\n"
      "  a[index(0)] = (b[index(0)] + (s * c[index(0)]))\n"
      "}\n");
  model.leaves[1].streaming_threshold = 1 << 20;
  CHECK(model.cost_of(triad, "b", {1 << 20, 0, 0}).bytes() == 24);
  CHECK(model.cost_of(triad, "b", {1000, 0, 0}).bytes() == 32);
  model.leaves[1].streaming_threshold = -1;
  CHECK(model.cost_of(triad, "b", {1 << 20, 0, 0}).bytes() == 32);
}

// The CPU backend reads the caches from sysfs; hwloc, which the model's
// cache_bytes come from, may say otherwise (a virtual machine here: 508 MiB
// of L3 a core to hwloc, nothing in sysfs, so the backend streamed above
// 64 MiB while the model predicted it would not below 2 GB). A CPU leaf now
// keeps the backend's own threshold.
TEST_CASE("machine model: a CPU leaf predicts streaming stores where the CPU backend makes them") {
  canopy::testing::ScopedSetting automatic("CANOPY_STREAMING_STORES", nullptr);
  const ir::Kernel triad = ir::parse(
      "kernel triad(out f64[1] a, in f64[1] b, in f64[1] c, val f64 s) dims 1 {\n"
      "  a[index(0)] = (b[index(0)] + (s * c[index(0)]))\n"
      "}\n");
  MachineModel model = hand_made();
  REQUIRE(model.leaves[0].kind == LocationKind::Cpu);
  model.leaves[0].cache_bytes = std::int64_t{1} << 30;
  // 8 MiB written: the leaf's threshold (4 MiB) decides, not twice its cache.
  model.leaves[0].streaming_threshold = std::int64_t{4} << 20;
  CHECK(model.cost_of(triad, "a", {1 << 20, 0, 0}).bytes() == 24);
  // 2 MiB written but 6 MiB passed through the three arrays: streamed too,
  // as the backend does (backends::takes_streaming_stores); 1.5 MiB passed is not.
  CHECK(model.cost_of(triad, "a", {1 << 18, 0, 0}).bytes() == 24);
  CHECK(model.cost_of(triad, "a", {1 << 16, 0, 0}).bytes() == 32);
  {
    canopy::testing::ScopedSetting off("CANOPY_STREAMING_STORES", "off");
    CHECK(model.cost_of(triad, "a", {1 << 20, 0, 0}).bytes() == 32);
  }
  // A model from before CPU leaves kept it: twice cache_bytes, as before.
  model.leaves[0].streaming_threshold = -1;
  CHECK(model.cost_of(triad, "a", {1 << 20, 0, 0}).bytes() == 32);
  model.leaves[0].cache_bytes = std::int64_t{1} << 20;
  CHECK(model.cost_of(triad, "a", {1 << 20, 0, 0}).bytes() == 24);

  // Calibration keeps, for each CPU leaf, the threshold a CPU device over the
  // leaf's cores uses.
  Runtime& rt = shared_runtime();
  const MachineModel calibrated = MachineModel::calibrate(rt, quick(fs::temp_directory_path()));
  const Hierarchy tree = rt.hierarchy();
  for (const Location* leaf : tree.leaves(*tree.root())) {
    if (leaf->kind() != LocationKind::Cpu) continue;
    INFO("leaf " << leaf->name());
    const backends::cpu::CpuDevice device("probe", leaf->traits().pus);
    CHECK(calibrated.at(leaf->name()).streaming_threshold == static_cast<std::int64_t>(device.streaming_threshold()));
  }
}

TEST_CASE("machine model: balanced shares give the leaves equal predicted times") {
  const MachineModel model = hand_made();
  const ir::KernelCost triad = triad_cost();
  // Large ranges: in proportion to bandwidth (10 : 30).
  auto shares = model.balanced_shares(triad, {"a", "b"}, 1'000'000'000);
  REQUIRE(shares.size() == 2);
  CHECK(shares[0] + shares[1] == doctest::Approx(1.0));
  CHECK(shares[0] == doctest::Approx(0.25).epsilon(0.001));
  // Equal finishing times, latency included.
  const std::int64_t n = 1'000'000;
  shares = model.balanced_shares(triad, {"a", "b"}, n);
  const double ta = model.predict_seconds(triad, "a", std::llround(shares[0] * n));
  const double tb = model.predict_seconds(triad, "b", std::llround(shares[1] * n));
  CHECK(ta == doctest::Approx(tb).epsilon(0.001));
  CHECK(shares[0] > 0.25);  // b's larger latency shifts work to a
  // A tiny range goes to the leaf that starts first.
  shares = model.balanced_shares(triad, {"a", "b"}, 10);
  CHECK(shares[0] == 1.0);
  CHECK(shares[1] == 0.0);
  CHECK(model.balanced_shares(triad, {"b"}, 10) == std::vector<double>{1.0});
  CHECK(model.balanced_shares(triad, {}, 10).empty());
}

TEST_CASE("machine model: check_ratio compares predicted and measured ratios") {
  const RatioCheck check = check_ratio(2.0, 1.0, 2.2, 1.0);
  CHECK(check.predicted_ratio() == 2.0);
  CHECK(check.measured_ratio() == doctest::Approx(2.2));
  CHECK(check.difference() == doctest::Approx(1 - 2.0 / 2.2));
  CHECK(check.within(0.25));
  CHECK_FALSE(check_ratio(1.0, 1.0, 2.0, 1.0).within(0.25));
  CHECK(check_ratio(1.0, 1.0, 2.0, 1.0).difference() == doctest::Approx(0.5));
  CHECK(std::isnan(check_ratio(1.0, 0.0, 1.0, 1.0).difference()));
}

TEST_CASE("machine model: cost options carry the leaf's line size and cache share") {
  MachineModel model = hand_made();
  model.leaves[0].line_bytes = 128;
  model.leaves[0].caches = {{1, 48 << 10, 64, 1}, {2, 1 << 20, 64, 1}, {3, 32 << 20, 64, 2}};
  ir::CostOptions base;
  base.default_trip_count = 7;
  const ir::CostOptions options = model.cost_options("a", base);
  CHECK(options.line_bytes == 128);
  CHECK(options.cache_bytes == doctest::Approx((16.0 * (1 << 20) + (1 << 20)) / 2));
  CHECK(options.default_trip_count == 7);           // the rest is the caller's
  CHECK(model.cost_options("b").cache_bytes == 0);  // no caches known
}

TEST_CASE("machine model: caches come from hwloc, innermost first, with the cores that share them") {
  const NodeInventory node =
      discover_node_synthetic("pack:1 l3:1(size=33554432) l2:2(size=1048576) l1d:1(size=49152) core:1 pu:1");
  REQUIRE(node.caches.size() == 3);
  CHECK(node.caches[0] == CacheLevel{1, 49152, 64, 1});
  CHECK(node.caches[1] == CacheLevel{2, 1048576, 64, 1});
  CHECK(node.caches[2] == CacheLevel{3, 33554432, 64, 2});
  CHECK(discover_node_synthetic("pack:1 numa:1 core:2 pu:1").caches.empty());
}

TEST_CASE("machine model: describe() shows every leaf and what the numbers mean") {
  MachineModel model = hand_made();
  model.source = "calibrated";
  const std::string text = model.describe();
  CHECK(text.find("machine model: 2 leaves (calibrated)") == 0);
  CHECK(text.find("\na ") != std::string::npos);
  CHECK(text.find("\nb ") != std::string::npos);
  CHECK(text.find("10 GB/s") != std::string::npos);
  CHECK(text.find("100 us") != std::string::npos);
  CHECK(fmt::format("{}", model) == text);
}
