// Discovery: inventories from hwloc's synthetic and XML topologies and from
// this machine, the default hierarchy at each CPU grain, device placement
// below the nearest NUMA node, CANOPY_DEVICES / CANOPY_CPU_LEAVES, and the
// runtime keeping to its thread's affinity mask.
#include <doctest/doctest.h>

#include <sched.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <canopy/canopy.hpp>
#include <canopy/ir/error.hpp>
#include <canopy/jit/disk_cache.hpp>
#include <canopy/runtime/discovery.hpp>
#include "scoped_setting.hpp"
#include "temporary_folder.hpp"

#include "common/skip.hpp"

using namespace canopy;

namespace {

std::string error_of(auto&& action) {
  try {
    action();
  } catch (const canopy::Error& error) {
    return error.what();
  }
  return "no error";
}

using ScopedEnv = canopy::testing::ScopedSetting;

std::vector<std::string> leaf_names(const Hierarchy& tree) {
  std::vector<std::string> names;
  for (const Location* leaf : tree.leaves(*tree.root())) names.push_back(leaf->name());
  return names;
}

DiscoveredDevice fake_device(LocationKind kind, int index, int numa, std::string name) {
  DiscoveredDevice device;
  device.kind = kind;
  device.index = index;
  device.id = fmt::format("{}:{}", name_of(kind), index);
  device.name = std::move(name);
  device.numa_node = numa;
  device.traits.cores = 16;
  device.traits.capacity = std::int64_t{4} << 30;
  return device;
}

/// 2 packages x 2 NUMA nodes x 4 cores, with five made-up devices: opencl:0
/// near NUMA 1, opencl:1 near NUMA 3, cuda:0 near NUMA 0, cuda:1 with no
/// NUMA node known, level_zero:0 near a NUMA node the inventory lacks.
NodeInventory node_with_devices() {
  NodeInventory node = discover_node_synthetic("pack:2 numa:2 core:4 pu:1");
  node.devices = {fake_device(LocationKind::OpenCL, 0, 1, "Portable CL"),
                  fake_device(LocationKind::OpenCL, 1, 3, "Other CL"), fake_device(LocationKind::Cuda, 0, 0, "A100"),
                  fake_device(LocationKind::Cuda, 1, -1, "H100"), fake_device(LocationKind::LevelZero, 0, 9, "Arc")};
  return node;
}

}  // namespace

TEST_CASE("discovery: a synthetic 2 packages x 2 NUMA nodes x 4 cores") {
  NodeInventory node = discover_node_synthetic("pack:2 numa:2 core:4 pu:1");
  CHECK(node.source == "hwloc synthetic: pack:2 numa:2 core:4 pu:1");
  REQUIRE(node.cores.size() == 16);
  REQUIRE(node.numa_nodes.size() == 4);
  for (unsigned i = 0; i < 16; ++i) {
    CHECK(node.cores[i].pu == i);
    CHECK(node.cores[i].numa_node == static_cast<int>(i / 4));
    CHECK(node.cores[i].l3 == -1);
  }
  for (int n = 0; n < 4; ++n) {
    CHECK(node.numa_nodes[n].index == n);
    CHECK(node.numa_nodes[n].capacity > 0);
  }
  CHECK(node.devices.empty());
  CHECK(node.vector_width == 0);  // synthetic machines have no CPU flags
}

TEST_CASE("discovery: the default tree of 2x2x4 at the NUMA grain") {
  NodeInventory node = discover_node_synthetic("pack:2 numa:2 core:4 pu:1");
  node.vector_width = 32;
  node.cpu_model = "Made Up";
  node.numa_nodes[2].capacity = std::int64_t{3} << 30;
  Hierarchy tree = default_hierarchy(node);
  CHECK(tree.to_text() ==
        "node [virtual]\n"
        "  numa0 [host_memory] capacity=1GiB numa=0\n"
        "    cpu0 [cpu] cores=4 pus=0-3 vector=32B numa=0 model=\"Made Up\"\n"
        "  numa1 [host_memory] capacity=1GiB numa=1\n"
        "    cpu1 [cpu] cores=4 pus=4-7 vector=32B numa=1 model=\"Made Up\"\n"
        "  numa2 [host_memory] capacity=3GiB numa=2\n"
        "    cpu2 [cpu] cores=4 pus=8-11 vector=32B numa=2 model=\"Made Up\"\n"
        "  numa3 [host_memory] capacity=1GiB numa=3\n"
        "    cpu3 [cpu] cores=4 pus=12-15 vector=32B numa=3 model=\"Made Up\"\n");
  CHECK(tree.at("numa2").kind() == LocationKind::HostMemory);
  CHECK(tree.at("cpu2").traits().pus == std::vector<unsigned>{8, 9, 10, 11});
}

TEST_CASE("discovery: 2x2x4 at the L3 and core grains") {
  NodeInventory node = discover_node_synthetic("pack:2 numa:2 core:4 pu:1");
  // No L3 caches: one L3 domain per NUMA node, as at the NUMA grain.
  CHECK(default_hierarchy(node, {CpuGrain::L3, "all"}) == default_hierarchy(node, {CpuGrain::Numa, "all"}));
  Hierarchy cores = default_hierarchy(node, {CpuGrain::Core, "all"});
  CHECK(cores.size() == 1 + 4 + 16);
  auto leaves = cores.leaves(*cores.root());
  REQUIRE(leaves.size() == 16);
  for (unsigned i = 0; i < 16; ++i) {
    CHECK(leaves[i]->name() == fmt::format("cpu{}", i));
    CHECK(leaves[i]->traits().pus == std::vector<unsigned>{i});
    CHECK(leaves[i]->traits().cores == 1);
    CHECK(leaves[i]->parent()->name() == fmt::format("numa{}", i / 4));
    CHECK(leaves[i]->traits().numa_node == static_cast<int>(i / 4));
  }
}

TEST_CASE("discovery: 1 NUMA node x 8 cores in 2 L3 domains, 2 PUs per core") {
  NodeInventory node = discover_node_synthetic("pack:1 numa:1 l3:2 core:4 pu:2");
  REQUIRE(node.cores.size() == 8);
  REQUIRE(node.numa_nodes.size() == 1);
  for (unsigned i = 0; i < 8; ++i) {
    CHECK(node.cores[i].pu == 2 * i);  // the first PU of each core
    CHECK(node.cores[i].l3 == static_cast<int>(i / 4));
    CHECK(node.cores[i].numa_node == 0);
  }
  Hierarchy numa = default_hierarchy(node, {CpuGrain::Numa, "all"});
  CHECK(leaf_names(numa) == std::vector<std::string>{"cpu0"});
  CHECK(numa.at("cpu0").traits().pus == std::vector<unsigned>{0, 2, 4, 6, 8, 10, 12, 14});
  CHECK(numa.at("cpu0").traits().cores == 8);

  Hierarchy l3 = default_hierarchy(node, {CpuGrain::L3, "all"});
  CHECK(l3.to_text() ==
        "node [virtual]\n"
        "  numa0 [host_memory] capacity=1GiB numa=0\n"
        "    cpu0 [cpu] cores=4 pus=0,2,4,6 numa=0\n"
        "    cpu1 [cpu] cores=4 pus=8,10,12,14 numa=0\n");

  Hierarchy core = default_hierarchy(node, {CpuGrain::Core, "all"});
  CHECK(leaf_names(core) == std::vector<std::string>{"cpu0", "cpu1", "cpu2", "cpu3", "cpu4", "cpu5", "cpu6", "cpu7"});
  CHECK(core.at("cpu5").traits().pus == std::vector<unsigned>{10});
}

TEST_CASE("discovery: an XML topology gives the CPU model and each core's first PU") {
  auto path = std::filesystem::temp_directory_path() / "canopy-test-discovery.xml";
  std::ofstream(path) << R"(<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE topology SYSTEM "hwloc2.dtd">
<topology version="2.0">
 <object type="Machine" os_index="0" cpuset="0x0000000f" complete_cpuset="0x0000000f" nodeset="0x1" complete_nodeset="0x1">
  <object type="Package" os_index="0" cpuset="0x0000000f" complete_cpuset="0x0000000f" nodeset="0x1" complete_nodeset="0x1">
   <info name="CPUModel" value="Test CPU 9000"/>
   <object type="NUMANode" os_index="0" cpuset="0x0000000f" complete_cpuset="0x0000000f" nodeset="0x1" complete_nodeset="0x1" local_memory="2147483648"/>
   <object type="Core" os_index="0" cpuset="0x00000005" complete_cpuset="0x00000005" nodeset="0x1" complete_nodeset="0x1">
    <object type="PU" os_index="0" cpuset="0x00000001" complete_cpuset="0x00000001" nodeset="0x1" complete_nodeset="0x1"/>
    <object type="PU" os_index="2" cpuset="0x00000004" complete_cpuset="0x00000004" nodeset="0x1" complete_nodeset="0x1"/>
   </object>
   <object type="Core" os_index="1" cpuset="0x0000000a" complete_cpuset="0x0000000a" nodeset="0x1" complete_nodeset="0x1">
    <object type="PU" os_index="1" cpuset="0x00000002" complete_cpuset="0x00000002" nodeset="0x1" complete_nodeset="0x1"/>
    <object type="PU" os_index="3" cpuset="0x00000008" complete_cpuset="0x00000008" nodeset="0x1" complete_nodeset="0x1"/>
   </object>
  </object>
 </object>
</topology>
)";
  NodeInventory node = discover_node_xml(path.string());
  std::filesystem::remove(path);
  CHECK(node.source == "hwloc XML: " + path.string());
  CHECK(node.cpu_model == "Test CPU 9000");
  REQUIRE(node.cores.size() == 2);
  CHECK(node.cores[0] == CoreInfo{0, 0, -1});
  CHECK(node.cores[1] == CoreInfo{1, 0, -1});
  REQUIRE(node.numa_nodes.size() == 1);
  CHECK(node.numa_nodes[0] == NumaInfo{0, std::int64_t{2} << 30});
  Hierarchy tree = default_hierarchy(node);
  CHECK(tree.at("cpu0").traits().model == "Test CPU 9000");
  CHECK(tree.at("cpu0").traits().pus == std::vector<unsigned>{0, 1});
}

TEST_CASE("discovery: hwloc's refusals are errors naming the input") {
  CHECK(error_of([] { discover_node_synthetic("pack:2 bogus:3"); }) ==
        "hwloc rejects the synthetic topology \"pack:2 bogus:3\"; expected a description such as \"pack:2 numa:2 "
        "core:4 pu:1\"");
  CHECK(error_of([] { discover_node_xml("/nonexistent/topology.xml"); }) ==
        "hwloc cannot read the XML topology '/nonexistent/topology.xml'; expected a file written by `lstopo "
        "FILE.xml`");
}

TEST_CASE("discovery: vector widths from CPU flags") {
  CHECK(vector_width_from_flags(" fpu sse sse2 avx avx2 avx512f avx512bw") == 64);
  CHECK(vector_width_from_flags("fpu sse sse2 avx2 fma") == 32);
  CHECK(vector_width_from_flags("sse sse2 avx") == 32);
  CHECK(vector_width_from_flags("sse4_2") == 16);
  CHECK(vector_width_from_flags("fp asimd evtstrm") == 16);
  CHECK(vector_width_from_flags("avx512bw avx512vl sse2") == 16);  // no avx512f, no avx2
  CHECK(vector_width_from_flags("xavx2 avx2x") == 0);              // whole words only
  CHECK(vector_width_from_flags("") == 0);
}

TEST_CASE("discovery: devices go below the NUMA node nearest to them") {
  NodeInventory node = node_with_devices();
  Hierarchy tree = default_hierarchy(node);
  CHECK(tree.at("opencl0").parent()->name() == "numa1");
  CHECK(tree.at("opencl1").parent()->name() == "numa3");
  CHECK(tree.at("cuda0").parent()->name() == "numa0");
  CHECK(tree.at("cuda1").parent()->name() == "numa0");        // NUMA node unknown: the first
  CHECK(tree.at("level_zero0").parent()->name() == "numa0");  // a NUMA node the node lacks: the first
  const LocationTraits& cl = tree.at("opencl1").traits();
  CHECK(tree.at("opencl1").kind() == LocationKind::OpenCL);
  CHECK(cl.device == "opencl:1");
  CHECK(cl.model == "Other CL");
  CHECK(cl.numa_node == 3);
  CHECK(cl.cores == 16);
  CHECK(cl.capacity == std::int64_t{4} << 30);
  CHECK(tree.at("cuda1").traits().numa_node == 0);
  CHECK(leaf_names(tree) == std::vector<std::string>{"cpu0", "cuda0", "cuda1", "level_zero0", "cpu1", "opencl0", "cpu2",
                                                     "cpu3", "opencl1"});
}

TEST_CASE("discovery: CANOPY_DEVICES selections") {
  NodeInventory node = node_with_devices();
  auto leaves_for = [&](const char* devices) { return leaf_names(default_hierarchy(node, {CpuGrain::Numa, devices})); };
  CHECK(leaves_for("cpu") == std::vector<std::string>{"cpu0", "cpu1", "cpu2", "cpu3"});
  CHECK(leaves_for("cpu,opencl:0") == std::vector<std::string>{"cpu0", "cpu1", "opencl0", "cpu2", "cpu3"});
  CHECK(leaves_for(" CPU , Cuda:1 ") == std::vector<std::string>{"cpu0", "cuda1", "cpu1", "cpu2", "cpu3"});
  CHECK(leaves_for("opencl") == std::vector<std::string>{"opencl0", "opencl1"});
  CHECK(leaves_for("cuda,level_zero") == std::vector<std::string>{"cuda0", "cuda1", "level_zero0"});
  CHECK(leaves_for("gpu") == std::vector<std::string>{"cuda0", "cuda1", "level_zero0", "opencl0", "opencl1"});
  CHECK(leaves_for("all").size() == 9);
  CHECK(leaves_for("").size() == 9);
  // Without CPU leaves the memories stay: devices still sit below their NUMA node.
  Hierarchy opencl = default_hierarchy(node, {CpuGrain::Numa, "opencl:1"});
  CHECK(opencl.size() == 1 + 4 + 1);
  CHECK(opencl.at("opencl1").parent()->name() == "numa3");
}

TEST_CASE("discovery: a selection that matches nothing names it and lists what exists") {
  NodeInventory node = node_with_devices();
  node.absent = {{"level_zero", "no driver"}};
  CHECK(error_of([&] {
          default_hierarchy(node, {CpuGrain::Numa, "cpu,cuda:5"});
        }) ==
        "device selection \"cpu,cuda:5\": \"cuda:5\" matches nothing on this node (16 cores on 4 NUMA nodes; devices: "
        "opencl:0 (Portable CL), opencl:1 (Other CL), cuda:0 (A100), cuda:1 (H100), level_zero:0 (Arc); "
        "level_zero: no driver); expected cpu, all, or a backend or device id it has");
  CHECK(error_of([&] { select_devices(node, "cpu,tpu"); }) ==
        "device selection \"cpu,tpu\": \"tpu\" is not a device word; expected a comma-separated list of all, cpu, "
        "gpu, opencl, cuda, level_zero, or a device id such as opencl:0");
  NodeInventory plain = discover_node_synthetic("pack:1 numa:1 core:2 pu:1");
  CHECK(error_of([&] {
          default_hierarchy(plain, {CpuGrain::Numa, "opencl"});
        }) ==
        "device selection \"opencl\": \"opencl\" matches nothing on this node (2 cores on 1 NUMA nodes; devices: "
        "none); expected cpu, all, or a backend or device id it has");
  NodeInventory empty = plain;
  empty.cores.clear();
  CHECK(error_of([&] {
          default_hierarchy(empty, {CpuGrain::Numa, "all"});
        }) ==
        "device selection \"all\" leaves nothing to run regions on (0 cores on 1 NUMA nodes; devices: none); "
        "expected cpu or a device");
}

TEST_CASE("discovery: select_devices keeps what is named") {
  NodeInventory node = node_with_devices();
  NodeInventory cpu_only = select_devices(node, "cpu");
  CHECK(cpu_only.cores == node.cores);
  CHECK(cpu_only.devices.empty());
  NodeInventory two = select_devices(node, "opencl:1,cuda");
  CHECK(two.cores.empty());
  REQUIRE(two.devices.size() == 3);
  CHECK(two.devices[0].id == "opencl:1");
  CHECK(two.devices[1].id == "cuda:0");
  CHECK(two.devices[2].id == "cuda:1");
  CHECK(two.numa_nodes == node.numa_nodes);
}

TEST_CASE("discovery: options from the environment") {
  {
    ScopedEnv grain("CANOPY_CPU_LEAVES", nullptr);
    ScopedEnv devices("CANOPY_DEVICES", nullptr);
    DiscoveryOptions options = DiscoveryOptions::from_environment();
    CHECK(options.cpu_grain == CpuGrain::Numa);
    CHECK(options.devices == "all");
  }
  {
    ScopedEnv grain("CANOPY_CPU_LEAVES", "Core");
    ScopedEnv devices("CANOPY_DEVICES", "cpu,opencl:0");
    DiscoveryOptions options = DiscoveryOptions::from_environment();
    CHECK(options.cpu_grain == CpuGrain::Core);
    CHECK(options.devices == "cpu,opencl:0");
  }
  {
    ScopedEnv grain("CANOPY_CPU_LEAVES", "l3");
    ScopedEnv devices("CANOPY_DEVICES", "");
    DiscoveryOptions options = DiscoveryOptions::from_environment();
    CHECK(options.cpu_grain == CpuGrain::L3);
    CHECK(options.devices == "all");
  }
  {
    ScopedEnv grain("CANOPY_CPU_LEAVES", "socket");
    CHECK(error_of([] { DiscoveryOptions::from_environment(); }) ==
          "CANOPY_CPU_LEAVES='socket' is not allowed; use numa, l3 or core");
  }
  {
    ScopedEnv devices("CANOPY_DEVICES", "cpu,opencl:x");
    CHECK(error_of([] { DiscoveryOptions::from_environment(); }) ==
          "CANOPY_DEVICES='cpu,opencl:x' is not allowed; use a comma-separated list of all, cpu, gpu, opencl, cuda, "
          "level_zero, or a device id such as opencl:0 ('opencl:x' is none of them)");
  }
  CHECK(parse_cpu_grain(" NUMA ") == CpuGrain::Numa);
  CHECK_THROWS_AS(parse_cpu_grain(""), canopy::Error);
}

TEST_CASE("discovery: leaf traits shared by the default tree and the configuration loader") {
  NodeInventory node = discover_node_synthetic("pack:2 numa:2 core:4 pu:1");
  CHECK(nearest_numa_node(node, 2) == 2);
  CHECK(nearest_numa_node(node, -1) == 0);
  CHECK(nearest_numa_node(node, 17) == 0);
  CHECK(nearest_numa_node(NodeInventory{}, 1) == -1);
  LocationTraits same = cpu_leaf_traits(node, {node.cores[4], node.cores[5]});
  CHECK(same.cores == 2);
  CHECK(same.pus == std::vector<unsigned>{4, 5});
  CHECK(same.numa_node == 1);
  LocationTraits mixed = cpu_leaf_traits(node, {node.cores[3], node.cores[4]});
  CHECK(mixed.numa_node == -1);
  DiscoveredDevice device = fake_device(LocationKind::Cuda, 2, 3, "Named");
  device.traits.model = "Own model";
  LocationTraits traits = device_leaf_traits(node, device);
  CHECK(traits.model == "Own model");
  CHECK(traits.device == "cuda:2");
  CHECK(traits.numa_node == 3);
}

TEST_CASE("discovery: the inventory described for people") {
  NodeInventory node = node_with_devices();
  node.cpu_model = "Made Up";
  node.vector_width = 64;
  node.absent = {{"level_zero", "no driver"}};
  std::string text = describe_inventory(node);
  CHECK(text.rfind("node (hwloc synthetic: pack:2 numa:2 core:4 pu:1): 16 cores on 4 NUMA nodes, CPU \"Made Up\", "
                   "64-byte vectors\n  numa0: 1024 MiB\n",
                   0) == 0);
  CHECK(text.find("  device opencl:1 (opencl): Other CL, NUMA node 3\n") != std::string::npos);
  CHECK(text.find("  level_zero: no driver\n") != std::string::npos);
  CHECK(fmt::format("{}", node) == text);
}

TEST_CASE("discovery: this machine, whatever it is") {
  NodeInventory node = discover_node();
  CHECK(node.source == "hwloc");
  REQUIRE_FALSE(node.cores.empty());
  REQUIRE_FALSE(node.numa_nodes.empty());
  CHECK((node.vector_width == 0 || node.vector_width == 16 || node.vector_width == 32 || node.vector_width == 64));
  std::set<std::string> accounted;  // every backend either found devices or says why not
  for (const AbsentBackend& backend : node.absent) accounted.insert(backend.backend);
  for (const DiscoveredDevice& device : node.devices) accounted.insert(std::string(name_of(device.kind)));
  CHECK(accounted == std::set<std::string>{"cuda", "level_zero", "opencl"});
  std::set<unsigned> core_pus;
  for (const CoreInfo& core : node.cores) core_pus.insert(core.pu);
  CHECK(core_pus.size() == node.cores.size());
  for (CpuGrain grain : {CpuGrain::Numa, CpuGrain::L3, CpuGrain::Core}) {
    CAPTURE(static_cast<int>(grain));
    Hierarchy tree = default_hierarchy(node, {grain, "cpu"});
    CHECK(tree.root()->name() == "node");
    std::multiset<unsigned> placed;
    for (const Location* leaf : tree.leaves(*tree.root())) {
      CHECK(leaf->kind() == LocationKind::Cpu);
      CHECK(leaf->traits().cores == static_cast<int>(leaf->traits().pus.size()));
      CHECK(leaf->parent()->kind() == LocationKind::HostMemory);
      CHECK(leaf->traits().numa_node == leaf->parent()->traits().numa_node);
      CHECK(leaf->traits().vector_width == node.vector_width);
      placed.insert(leaf->traits().pus.begin(), leaf->traits().pus.end());
    }
    CHECK(placed == std::multiset<unsigned>(core_pus.begin(), core_pus.end()));  // each core in exactly one leaf
    for (const Location* numa : tree.root()->children()) CHECK(numa->traits().capacity > 0);
  }
}

TEST_CASE("discovery: this machine's inventory is remembered in the cache folder, and read back whole") {
  char pattern[] = "/tmp/canopy-test-node-XXXXXX";
  REQUIRE(::mkdtemp(pattern));
  const std::filesystem::path folder(pattern);
  auto node_files = [&] {
    std::vector<std::filesystem::path> files;
    for (const auto& entry : std::filesystem::directory_iterator(folder))
      if (entry.path().filename().string().starts_with("node-")) files.push_back(entry.path());
    return files;
  };
  const NodeInventory fresh = discover_node();
  CHECK(discover_node_cached("off") == fresh);
  CHECK(node_files().empty());
  CHECK(discover_node_cached(folder.string()) == fresh);  // from hwloc, then written
  REQUIRE(node_files().size() == 1);
  CHECK(discover_node_cached(folder.string()) == fresh);  // from the file: every field back
  // A damaged file is hwloc's inventory again, written afresh.
  const auto file = node_files().front();
  std::ofstream(file, std::ios::trunc) << "canopy node 1\ncore 0 zero\n";
  CHECK(discover_node_cached(folder.string()) == fresh);
  std::ifstream written(file);
  const std::string text((std::istreambuf_iterator<char>(written)), std::istreambuf_iterator<char>());
  CHECK(text.find("model " + fresh.cpu_model + "\n") != std::string::npos);
  // A memory size remembered before the machine's memory grew (hot-plug in
  // a virtual machine) is read again: the entry says one byte per node.
  jit::DiskCache cache(folder.string());
  const std::string key = node_files().front().stem().string();
  std::string remembered = cache.get(key).value_or("");
  for (const NumaInfo& numa : fresh.numa_nodes) {
    const std::string line = fmt::format("numa {} {} {}\n", numa.index, numa.capacity, numa.os_index);
    const auto at = remembered.find(line);
    REQUIRE(at != std::string::npos);
    remembered.replace(at, line.size(), fmt::format("numa {} 1 {}\n", numa.index, numa.os_index));
  }
  cache.put(key, remembered);
  CHECK(discover_node_cached(folder.string()) == fresh);
  std::filesystem::remove_all(folder);
}

TEST_CASE("discovery: NUMA memory sizes are read again from sysfs, each kept where its file is unreadable") {
  const testing::TemporaryFolder sys("fake-sys");
  std::filesystem::create_directories(sys.path() / "devices/system/node/node3");
  std::ofstream(sys.path() / "devices/system/node/node3/meminfo")
      << "\nNode 3 MemTotal:       2048 kB\nNode 3 MemFree:        1024 kB\n";
  NodeInventory node;
  node.numa_nodes = {NumaInfo{0, 777, 3}, NumaInfo{1, 888, 5}};
  refresh_capacities(node, sys.path().string());
  CHECK(node.numa_nodes[0].capacity == 2048 * 1024);
  CHECK(node.numa_nodes[1].capacity == 888);  // no node5 there
}

TEST_CASE("discovery: a runtime keeps to the cores its thread may run on (taskset), unless given processing units") {
  const NodeInventory node = discover_node();
  if (node.cores.size() < 2) CANOPY_TEST_SKIP(Other, "one core here: no affinity mask leaves some cores out");
  ScopedEnv devices("CANOPY_DEVICES", "cpu");
  ScopedEnv grain("CANOPY_CPU_LEAVES", "core");
  ScopedEnv config("CANOPY_CONFIG", nullptr);
  const unsigned last = node.cores.back().pu;
  std::vector<unsigned> all;
  for (const CoreInfo& core : node.cores) all.push_back(core.pu);
  std::vector<unsigned> mask, narrowed_pus, given_pus;
  std::vector<double> values;
  bool narrowed = false;
  // A thread of its own, narrowed to the last core as `taskset -c` would.
  std::thread([&] {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(last, &one);
    narrowed = sched_setaffinity(0, sizeof one, &one) == 0;
    if (!narrowed) return;
    mask = thread_affinity();
    Runtime rt;
    const Hierarchy tree = rt.hierarchy();
    for (const Location* leaf : tree.leaves(*tree.root()))
      narrowed_pus.insert(narrowed_pus.end(), leaf->traits().pus.begin(), leaf->traits().pus.end());
    // Regions run there as anywhere.
    const Kernel triple("triple", [](Out<double> x) { x[index(0)] = 3.0 * cast<double>(index(0)); });
    auto x = rt.array<double>(100);
    rt.region(triple).over(100).launch(x);
    auto host = x.host();
    values.assign(host.data(), host.data() + 100);
    // Processing units given explicitly are taken as they are.
    runtime::RuntimeOptions options;
    options.pus = all;
    Runtime wide(options);
    const Hierarchy wide_tree = wide.hierarchy();
    for (const Location* leaf : wide_tree.leaves(*wide_tree.root()))
      given_pus.insert(given_pus.end(), leaf->traits().pus.begin(), leaf->traits().pus.end());
  }).join();
  REQUIRE(narrowed);
  CHECK(mask == std::vector<unsigned>{last});
  CHECK(narrowed_pus == std::vector<unsigned>{last});
  REQUIRE(values.size() == 100);
  for (int i = 0; i < 100; ++i) CHECK(values[static_cast<std::size_t>(i)] == 3.0 * i);
  std::sort(given_pus.begin(), given_pus.end());
  std::sort(all.begin(), all.end());
  CHECK(given_pus == all);
  // This thread's mask is its own: every core.
  const std::vector<unsigned> here = thread_affinity();
  for (unsigned pu : all) CHECK(std::find(here.begin(), here.end(), pu) != here.end());
}
