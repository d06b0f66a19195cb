// Configuration files in Gecko's format: the paper's Figure 6, Gecko's and
// Canopy's kinds, binding to cores, NUMA nodes and devices, optional
// locations, rejected files with their exact messages, changes applied to a
// running tree, and round trips through Hierarchy::to_config().
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <canopy/ir/error.hpp>
#include <canopy/runtime/config.hpp>

#include "scoped_setting.hpp"

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

/// 8 cores (PUs 0-7), NUMA node 0 with cores 0-3 and NUMA node 1 with 4-7.
NodeInventory two_numa() { return discover_node_synthetic("pack:1 numa:2 core:4 pu:1"); }

/// 8 cores with 2 PUs each (first PUs 0, 2, ... 14), one NUMA node, two L3 domains.
NodeInventory one_numa() { return discover_node_synthetic("pack:1 numa:1 l3:2 core:4 pu:2"); }

DiscoveredDevice fake_device(LocationKind kind, int index, int numa) {
  DiscoveredDevice device;
  device.kind = kind;
  device.index = index;
  device.id = fmt::format("{}:{}", name_of(kind), index);
  device.name = fmt::format("Fake {} {}", name_of(kind), index);
  device.numa_node = numa;
  device.traits.cores = 80;
  device.traits.capacity = std::int64_t{16} << 30;
  return device;
}

/// two_numa() with cuda:0 and cuda:1 near NUMA node 1 and opencl:0 near node 0.
NodeInventory with_devices() {
  NodeInventory node = two_numa();
  node.devices = {fake_device(LocationKind::Cuda, 0, 1), fake_device(LocationKind::Cuda, 1, 1),
                  fake_device(LocationKind::OpenCL, 0, 0)};
  return node;
}

/// The message loading `text` (as "t.conf") on `node` fails with.
std::string rejected(std::string_view text, const NodeInventory& node = two_numa()) {
  canopy::testing::ScopedSetting strict("CANOPY_CONFIG_STRICT", "1");
  return error_of([&] { load_config(text, "t.conf", node); });
}

/// The Gecko paper's Figure 6, configuration (a), as printed (lines 1-18 of
/// its listing), with the third loctype's name as its location line spells it
/// (the text extraction split NODE_MEMORY at the underscore).
constexpr const char* kFigure6AsPrinted = R"(# Content of 'gecko.conf' file that represents
# Configuration (a)

loctype;name,host;kind,x64,Skylake;num_cores,4;mem,4MB;
loctype;name,tesla;kind,NVIDIA,CC7.0;mem,4GB
loctype;name,NODE_MEMORY;kind,Unified_Memory;size,16GB

location;name,LocA;type,NODE_MEMORY;
location;name,LocN,LocG;type,virtual
location;name,LocN1;type,host;
location;name,LocG1,LocG2;type,tesla

location;name,LocH;type,virtual

hierarchy;children,+,LocH,LocG;parent,LocA
hierarchy;children,+,LocN;parent,LocH
hierarchy;children,+,LocG1;parent,LocG
hierarchy;children,+,LocN1;parent,LocN
)";

/// The same with one change: the tesla type is optional, since the node may
/// have no GPU.
const std::string kFigure6 = [] {
  std::string text = kFigure6AsPrinted;
  text.replace(text.find("mem,4GB\n"), 8, "mem,4GB;optional\n");
  return text;
}();

void check_round_trip(const Hierarchy& tree, const NodeInventory& node) {
  std::string text = tree.to_config();
  CAPTURE(text);
  Hierarchy again = load_config(text, "round-trip", node);
  CHECK(again == tree);
  CHECK(again.to_config() == text);
}

}  // namespace

// ----------------------------------------------------------------- accepted

TEST_CASE("config: the Gecko paper's Figure 6 (a) loads on a node without GPUs") {
  Hierarchy tree = load_config(kFigure6, "fig6.conf", one_numa());
  CHECK(tree.to_text() ==
        "LocA [unified_memory] capacity=16GiB\n"
        "  LocH [virtual]\n"
        "    LocN [virtual]\n"
        "      LocN1 [cpu] cores=4 pus=0,2,4,6 capacity=4MiB numa=0\n"
        "  LocG [virtual]\n");
  CHECK(tree.find("LocG1") == nullptr);  // optional and absent
  CHECK(tree.leaves(tree.at("LocH")).size() == 1);
}

// The paper's file on a node it was not written for: two cores where it asks
// for four, no GPU, and LocG2 declared but never attached.
TEST_CASE("config: the paper's Figure 6 (a) unchanged loads on a smaller node, each change a warning") {
  canopy::testing::ScopedSetting lenient("CANOPY_CONFIG_STRICT", nullptr);
  const NodeInventory node = discover_node_synthetic("pack:1 numa:1 core:2 pu:1");
  std::vector<std::string> warnings;
  Hierarchy tree = load_config(kFigure6AsPrinted, "fig6.conf", node, nullptr, &warnings);
  CHECK(tree.to_text() ==
        "LocA [unified_memory] capacity=16GiB\n"
        "  LocH [virtual]\n"
        "    LocN [virtual]\n"
        "      LocN1 [cpu] cores=2 pus=0-1 capacity=4MiB numa=0\n"
        "  LocG [virtual]\n"
        "    LocG1 [virtual]\n");
  CHECK(tree.find("LocG2") == nullptr);
  REQUIRE(warnings.size() == 3);
  CHECK(warnings[0] == "fig6.conf:11: location 'LocG2' is attached to no parent: left out (the root is 'LocA')");
  CHECK(warnings[1].rfind("fig6.conf:11: location 'LocG1' needs a cuda device, which this node does not have free "
                          "(discovered: 2 cores on 1 NUMA nodes; devices: none",
                          0) == 0);
  CHECK(warnings[1].find("): it is an empty virtual location") != std::string::npos);
  CHECK(warnings[2] == "fig6.conf:10: location 'LocN1' asked for 4 cores and this node has 2 free: it has 2");
  // Strict, the same file is refused at its first problem, as before.
  canopy::testing::ScopedSetting strict("CANOPY_CONFIG_STRICT", "1");
  CHECK(error_of([&] {
          load_config(kFigure6AsPrinted, "fig6.conf", node);
        }).rfind("fig6.conf:11: location 'LocG1' needs a cuda device", 0) == 0);
  // Without `warnings`, they go to stderr; the tree is the same.
  canopy::testing::ScopedSetting lenient_again("CANOPY_CONFIG_STRICT", "0");
  CHECK(load_config(kFigure6AsPrinted, "fig6.conf", node) == tree);
}

TEST_CASE("config: leniently, CPU locations with no core left and a missing NUMA node become virtual") {
  canopy::testing::ScopedSetting lenient("CANOPY_CONFIG_STRICT", nullptr);
  const NodeInventory node = discover_node_synthetic("pack:1 numa:1 core:2 pu:1");
  std::vector<std::string> warnings;
  Hierarchy tree = load_config(
      "location;name,top;type,virtual\nlocation;name,a,b,c;type,cpu\nlocation;name,m;type,host_memory;start,3\n"
      "hierarchy;children,+,a,b,c,m;parent,top",
      "t.conf", node, nullptr, &warnings);
  CHECK(tree.at("a").kind() == LocationKind::Cpu);  // every core (no num_cores)
  CHECK(tree.at("a").traits().cores == 2);
  CHECK(tree.at("b").kind() == LocationKind::Virtual);
  CHECK(tree.at("c").kind() == LocationKind::Virtual);
  CHECK(tree.at("m").kind() == LocationKind::Virtual);
  REQUIRE(warnings.size() == 3);
  CHECK(warnings[0].rfind("t.conf:3: location 'm' needs NUMA node 3, which this node does not have free", 0) == 0);
  CHECK(warnings[1].rfind("t.conf:2: location 'b' needs a core, which this node does not have free", 0) == 0);
  CHECK(warnings[2].rfind("t.conf:2: location 'c' needs a core, which this node does not have free", 0) == 0);
}

TEST_CASE("config: Figure 6 (a) with two GPUs: LocG2 has no parent, as in the paper") {
  NodeInventory node = one_numa();
  node.devices = {fake_device(LocationKind::Cuda, 0, 0), fake_device(LocationKind::Cuda, 1, 0)};
  CHECK(rejected(kFigure6, node) ==
        "t.conf:11: several locations have no parent: 'LocA' (line 8), 'LocG2' (line 11); expected exactly one "
        "root; attach the others with hierarchy lines");
  std::string fixed = std::string(kFigure6) + "hierarchy;children,+,LocG2;parent,LocG\n";
  Hierarchy tree = load_config(fixed, "fig6.conf", node);
  CHECK(tree.at("LocG1").kind() == LocationKind::Cuda);
  CHECK(tree.at("LocG1").traits().device == "cuda:0");
  CHECK(tree.at("LocG2").traits().device == "cuda:1");
  CHECK(tree.at("LocG2").traits().capacity == std::int64_t{4} << 30);  // the loctype's mem
  CHECK(tree.at("LocG2").traits().cores == 80);                        // the device's own
  CHECK(tree.at("LocG2").traits().model == "Fake cuda 1");
  CHECK(tree.at("LocG2").traits().optional);
  std::vector<std::string> leaves;
  for (const Location* leaf : tree.leaves(*tree.root())) leaves.push_back(leaf->name());
  CHECK(leaves == std::vector<std::string>{"LocN1", "LocG1", "LocG2"});
}

TEST_CASE("config: Figure 6 (a) adapted to this machine (the host takes every core)") {
  NodeInventory node = discover_node();
  std::string text = kFigure6;
  text.replace(text.find("num_cores,4;"), 12, "");
  Hierarchy tree = load_config(text, "fig6-here.conf", node);
  const LocationTraits& host = tree.at("LocN1").traits();
  CHECK(host.cores == static_cast<int>(node.cores.size()));
  REQUIRE(host.pus.size() == node.cores.size());
  for (std::size_t i = 0; i < node.cores.size(); ++i) CHECK(host.pus[i] == node.cores[i].pu);
  CHECK(host.vector_width == node.vector_width);
  CHECK(host.model == node.cpu_model);
  check_round_trip(tree, node);
}

TEST_CASE("config: Gecko's and Canopy's kinds, in any case") {
  NodeInventory node = with_devices();
  Hierarchy tree = load_config(
      "location;name,root;type,VIRTUAL\n"
      "location;name,um;type,Unified_Memory\n"
      "location;name,disk;type,permanent_storage\n"
      "location;name,files;type,file_memory\n"
      "location;name,mem;type,host_memory\n"
      "location;name,a;type,X32;pus,0\n"
      "location;name,b;type,x64;pus,1\n"
      "location;name,c;type,Cpu;pus,2\n"
      "location;name,g;type,nvidia\n"
      "location;name,h;type,CUDA\n"
      "location;name,o;type,OpenCL\n"
      "hierarchy;children,+,um,disk,files,mem;parent,root\n"
      "hierarchy;children,+,a,b,c,g,h,o;parent,mem\n",
      "kinds.conf", node);
  CHECK(tree.at("um").kind() == LocationKind::UnifiedMemory);
  CHECK(tree.at("disk").kind() == LocationKind::FileMemory);
  CHECK(tree.at("files").kind() == LocationKind::FileMemory);
  CHECK(tree.at("mem").kind() == LocationKind::HostMemory);
  CHECK(tree.at("mem").traits().numa_node == 0);
  CHECK(tree.at("a").kind() == LocationKind::Cpu);
  CHECK(tree.at("b").kind() == LocationKind::Cpu);
  CHECK(tree.at("c").traits().pus == std::vector<unsigned>{2});
  CHECK(tree.at("g").kind() == LocationKind::Cuda);
  CHECK(tree.at("g").traits().device == "cuda:0");
  CHECK(tree.at("h").traits().device == "cuda:1");
  CHECK(tree.at("o").traits().device == "opencl:0");
  CHECK(tree.at("o").traits().numa_node == 0);
  CHECK(tree.at("h").traits().numa_node == 1);
}

TEST_CASE(
    "config: the layout is forgiving: a byte order mark, comments, blanks, spaces, CRLF, any field order, trailing "
    "';'") {
  Hierarchy tree = load_config(
      "\xEF\xBB\xBF   # a comment\r\n"
      "\r\n"
      "loctype ; kind , cpu ; num_cores , 2 ; name , pair ;  # two cores\r\n"
      "location;type,virtual;name,top;;\r\n"
      "\t location ; name , left , right ; type , pair ;\r\n"
      "hierarchy;parent,top;children,+,left,right;",
      "layout.conf", two_numa());
  CHECK(tree.root()->name() == "top");
  CHECK(tree.at("left").traits().pus == std::vector<unsigned>{0, 1});
  CHECK(tree.at("right").traits().pus == std::vector<unsigned>{2, 3});
}

TEST_CASE("config: CPU locations take cores in order; without num_cores all that are left") {
  Hierarchy tree = load_config(
      "loctype;name,two;kind,cpu;num_cores,2\n"
      "location;name,top;type,virtual\n"
      "location;name,small;type,two\n"
      "location;name,rest;type,cpu\n"
      "hierarchy;children,+,small,rest;parent,top\n",
      "cores.conf", two_numa());
  CHECK(tree.at("small").traits().pus == std::vector<unsigned>{0, 1});
  CHECK(tree.at("small").traits().numa_node == 0);
  CHECK(tree.at("rest").traits().pus == std::vector<unsigned>{2, 3, 4, 5, 6, 7});
  CHECK(tree.at("rest").traits().cores == 6);
  CHECK(tree.at("rest").traits().numa_node == -1);  // spans two NUMA nodes
}

TEST_CASE("config: start, pus and explicit cores") {
  Hierarchy tree = load_config(
      "loctype;name,two;kind,cpu;num_cores,2\n"
      "location;name,top;type,virtual\n"
      "location;name,late;type,two;start,6\n"
      "location;name,picked;type,cpu;pus,5,3\n"
      "location;name,first;type,two\n"
      "hierarchy;children,+,late,picked,first;parent,top\n",
      "start.conf", two_numa());
  CHECK(tree.at("late").traits().pus == std::vector<unsigned>{6, 7});
  CHECK(tree.at("picked").traits().pus == std::vector<unsigned>{5, 3});
  CHECK(tree.at("picked").traits().cores == 2);
  CHECK(tree.at("first").traits().pus == std::vector<unsigned>{0, 1});
}

TEST_CASE("config: total_count and all make numbered locations; a group name stands for them") {
  NodeInventory node = with_devices();
  Hierarchy tree = load_config(
      "location;name,top;type,virtual\n"
      "location;name,mem;type,host_memory;all\n"
      "location;name,core;type,cpu;total_count,3;start,2\n"
      "location;name,gpu;type,cuda;all\n"
      "hierarchy;children,+,mem;parent,top;all\n"
      "hierarchy;children,+,core;parent,mem0\n"
      "hierarchy;children,+,gpu;parent,mem1\n",
      "groups.conf", node);
  CHECK(tree.to_text() ==
        "top [virtual]\n"
        "  mem0 [host_memory] capacity=1GiB numa=0\n"
        "    core0 [cpu] cores=1 pus=2 numa=0\n"
        "    core1 [cpu] cores=1 pus=3 numa=0\n"
        "    core2 [cpu] cores=1 pus=4 numa=1\n"
        "  mem1 [host_memory] capacity=1GiB numa=1\n"
        "    gpu0 [cuda] cores=80 capacity=16GiB numa=1 device=cuda:0 model=\"Fake cuda 0\"\n"
        "    gpu1 [cuda] cores=80 capacity=16GiB numa=1 device=cuda:1 model=\"Fake cuda 1\"\n");
}

TEST_CASE("config: all counts from start; devices bind by their index; gpu takes any accelerator") {
  NodeInventory node = with_devices();
  Hierarchy tree = load_config(
      "location;name,top;type,virtual\n"
      "location;name,late;type,cuda;all;start,1\n"
      "location;name,any;type,gpu;total_count,2\n"
      "location;name,cores;type,cpu;all;start,6\n"
      "hierarchy;children,+,late,any,cores;parent,top\n",
      "start.conf", node);
  CHECK(tree.find("late0")->traits().device == "cuda:1");
  CHECK(tree.find("late1") == nullptr);
  CHECK(tree.at("any0").traits().device == "cuda:0");
  CHECK(tree.at("any1").kind() == LocationKind::OpenCL);
  CHECK(tree.at("any1").traits().device == "opencl:0");
  CHECK(tree.at("cores0").traits().pus == std::vector<unsigned>{6});
  CHECK(tree.at("cores1").traits().pus == std::vector<unsigned>{7});
  CHECK(tree.find("cores2") == nullptr);
}

TEST_CASE("config: all with nothing to count makes an empty group") {
  Hierarchy tree = load_config(
      "location;name,top;type,virtual\n"
      "location;name,gpu;type,gpu;all\n"
      "hierarchy;children,+,gpu;parent,top\n",
      "empty-group.conf", two_numa());
  CHECK(tree.size() == 1);
}

TEST_CASE("config: optional locations the node lacks are left out with their subtrees") {
  Hierarchy tree = load_config(
      "location;name,top;type,virtual\n"
      "location;name,far;type,host_memory;start,5;optional\n"
      "location;name,below;type,virtual\n"
      "location;name,fast;type,cuda;optional\n"
      "location;name,cpus;type,cpu\n"
      "hierarchy;children,+,far,fast,cpus;parent,top\n"
      "hierarchy;children,+,below;parent,far\n",
      "optional.conf", two_numa());
  CHECK(tree.find("far") == nullptr);
  CHECK(tree.find("below") == nullptr);
  CHECK(tree.find("fast") == nullptr);
  CHECK(tree.at("cpus").traits().cores == 8);
  CHECK_FALSE(tree.at("cpus").traits().optional);
  Hierarchy present = load_config("location;name,solo;type,cpu;optional\n", "present.conf", two_numa());
  CHECK(present.at("solo").traits().optional);
}

TEST_CASE("config: '+' moves a location that has a parent; '-' removes a subtree") {
  Hierarchy tree = load_config(
      "location;name,top,a,b,c;type,virtual\n"
      "location;name,cpus;type,cpu\n"
      "hierarchy;children,+,a,b;parent,top\n"
      "hierarchy;children,+,c;parent,a\n"
      "hierarchy;children,+,cpus;parent,c\n"
      "hierarchy;children,+,c;parent,b\n"
      "location;name,gone;type,virtual\n"
      "hierarchy;children,+,gone;parent,a\n"
      "hierarchy;children,-,a;parent,top\n",
      "edit.conf", two_numa());
  CHECK(tree.to_text() ==
        "top [virtual]\n"
        "  b [virtual]\n"
        "    c [virtual]\n"
        "      cpus [cpu] cores=8 pus=0-7\n");
}

TEST_CASE("config: sizes") {
  CHECK(parse_size("4MB") == 4 << 20);
  CHECK(parse_size("16GB") == std::int64_t{16} << 30);
  CHECK(parse_size("16 gib") == std::int64_t{16} << 30);
  CHECK(parse_size("1.5KB") == 1536);
  CHECK(parse_size("512") == 512);
  CHECK(parse_size("512B") == 512);
  CHECK(parse_size("2T") == std::int64_t{2} << 40);
  CHECK(parse_size("0") == 0);
  CHECK(parse_size("0.3B") == -1);
  CHECK(parse_size("4XB") == -1);
  CHECK(parse_size("") == -1);
  CHECK(parse_size("GB") == -1);
  CHECK(parse_size("-4GB") == -1);
  CHECK(parse_size("1.2.3MB") == -1);
  CHECK(parse_size("99999999999TB") == -1);
}

TEST_CASE("config: loading a file") {
  auto path = std::filesystem::temp_directory_path() / "canopy-test-config.conf";
  std::ofstream(path) << kFigure6;
  Hierarchy tree = load_config_file(path.string(), one_numa());
  CHECK(tree.root()->name() == "LocA");
  std::ofstream(path) << "location;name,x;type,virtual\nlocation;name,y;type,nothing\n";
  CHECK(error_of([&] { load_config_file(path.string(), one_numa()); }) ==
        path.string() + ":2: unknown type 'nothing'; expected a kind: " +
            "x32, x64, NVIDIA, Unified_Memory, Permanent_Storage, virtual, cpu, opencl, cuda, level_zero, gpu, "
            "host_memory, unified_memory or file_memory");
  std::filesystem::remove(path);
  CHECK(error_of([&] { load_config_file(path.string(), one_numa()); }) ==
        "cannot read the configuration file '" + path.string() + "'; expected a readable file in Gecko's format");
  CHECK(error_of([&] {
          load_config_file(std::filesystem::temp_directory_path().string(), one_numa());
        }).rfind("cannot read the configuration file", 0) == 0);
}

// ----------------------------------------------------------------- rejected

TEST_CASE("config: malformed lines are rejected with the line and what was expected") {
  CHECK(rejected("loctypes;name,a;kind,cpu") ==
        "t.conf:1: unknown line kind 'loctypes'; expected loctype, location or hierarchy");
  CHECK(rejected("\n\nlocation,name,a;type,cpu") ==
        "t.conf:3: 'location' is followed by ',' where ';' belongs; expected location;FIELD,VALUE;...");
  CHECK(rejected(" ; ;") == "t.conf:1: the line holds only ';'; expected a loctype, location or hierarchy line");
  CHECK(rejected("loctype;name,a;kind,cpu;cores,4") ==
        "t.conf:1: unknown field 'cores' in a loctype line; expected name, kind, num_cores, mem, size, bandwidth or "
        "optional");
  CHECK(rejected("loctype;kind,cpu") == "t.conf:1: the loctype has no name; expected name,NAME");
  CHECK(rejected("loctype;name,host;num_cores,2") == "t.conf:1: loctype 'host' has no kind; expected kind,KIND");
  CHECK(rejected("loctype;name,a;kind,fpga") ==
        "t.conf:1: unknown kind 'fpga'; expected x32, x64, NVIDIA, Unified_Memory, Permanent_Storage, virtual, cpu, "
        "opencl, cuda, level_zero, gpu, host_memory, unified_memory or file_memory");
  CHECK(rejected("loctype;name,a;kind,cpu;num_cores,four") ==
        "t.conf:1: 'four' is not a valid num_cores; expected a whole number from 1 to 1048576");
  CHECK(rejected("loctype;name,a;kind,cpu;num_cores,0") ==
        "t.conf:1: '0' is not a valid num_cores; expected a whole number from 1 to 1048576");
  CHECK(rejected("loctype;name,a;kind,cpu;num_cores,2,3") ==
        "t.conf:1: the field 'num_cores' has 2 values; expected num_cores,N");
  CHECK(rejected("loctype;name,a;kind,cpu;mem,4XB") ==
        "t.conf:1: '4XB' is not a size; expected bytes, or a number with B, KB, MB, GB or TB (such as 16GB)");
  CHECK(rejected("loctype;name,a;kind,cpu;bandwidth,-3") ==
        "t.conf:1: '-3' is not a bandwidth; expected a number of GB/s such as 100 or 12.5");
  CHECK(rejected("loctype;name,a;kind,cpu\nloctype;name,a;kind,cuda") ==
        "t.conf:2: loctype 'a' is declared twice (first on line 1); expected one loctype line per name");
  CHECK(rejected("loctype;name,a;kind,cpu;name,b") ==
        "t.conf:1: the field 'name' is given twice; expected each field once per line");
  CHECK(rejected("loctype;name,a;kind,cpu;optional,yes") ==
        "t.conf:1: the field 'optional' takes no value but has 'yes'; expected 'optional' alone between ';'");
  CHECK(rejected("loctype;name,;kind,cpu") == "t.conf:1: the field 'name' has an empty value; expected name,NAME");
  CHECK(rejected("loctype;name;kind,cpu") == "t.conf:1: the field 'name' has no value; expected name,NAME");
  // A NUL once ended the message where the line was quoted; control bytes
  // are refused before any field is read.
  CHECK(rejected(std::string("loctype;name,a\0b;kind,cpu", 25)) ==
        "t.conf:1: control byte 0x00 at column 15; expected text: a configuration file holds no control bytes but "
        "tabs and line ends");
  CHECK(rejected("\nloctype;name,a;kind,cpu\x1b[2J") ==
        "t.conf:2: control byte 0x1b at column 24; expected text: a configuration file holds no control bytes but "
        "tabs and line ends");
  CHECK(rejected("loctype;\tname,a;kind,cpu\r\n").find("control byte") == std::string::npos);
}

TEST_CASE("config: bad location lines") {
  CHECK(rejected("location;type,cpu") == "t.conf:1: the location line has no name; expected name,NAME[,NAME...]");
  CHECK(rejected("location;name,a") == "t.conf:1: location 'a' has no type; expected type,LOCTYPE or type,KIND");
  CHECK(rejected("loctype;name,host;kind,cpu\nlocation;name,a;type,hots") ==
        "t.conf:2: unknown type 'hots'; expected a loctype declared above (host) or a kind: x32, x64, NVIDIA, "
        "Unified_Memory, Permanent_Storage, virtual, cpu, opencl, cuda, level_zero, gpu, host_memory, "
        "unified_memory or file_memory");
  CHECK(rejected("location;name,a,,b;type,virtual") ==
        "t.conf:1: the field 'name' has an empty or missing value; expected name,NAME[,NAME...]");
  CHECK(rejected("location;name,a b;type,virtual") ==
        "t.conf:1: 'a b' is not a location name; expected 1 to 128 letters, digits, '_', '-' or '.'");
  CHECK(rejected("location;name,a;type,virtual\n# note\nlocation;name,b,a;type,virtual") ==
        "t.conf:3: location 'a' is declared twice (first on line 1); expected one declaration per name");
  CHECK(rejected("location;name,a;type,virtual;shape,round") ==
        "t.conf:1: unknown field 'shape' in a location line; expected name, type, all, start, total_count, pus or "
        "optional");
  CHECK(rejected("location;name,g;type,cuda;all;total_count,2") ==
        "t.conf:1: 'all' and 'total_count' are both given; expected one of them");
  CHECK(rejected("location;name,g;type,cpu;total_count,5000") ==
        "t.conf:1: '5000' is not a valid total_count; expected a whole number from 1 to 4096");
  CHECK(rejected("location;name,g;type,cpu;start,-1") ==
        "t.conf:1: '-1' is not a valid start; expected a whole number from 0 to 1048576");
  CHECK(rejected("location;name,v;type,virtual;all") ==
        "t.conf:1: 'all' given for virtual locations, which this node does not count; expected all on cpu, "
        "host_memory or device locations");
  CHECK(rejected("location;name,m;type,host_memory;pus,0") ==
        "t.conf:1: 'pus' given for 'm', which is a host_memory location; expected pus on cpu locations only");
  CHECK(rejected("location;name,c,d;type,cpu;pus,0") ==
        "t.conf:1: 'pus' given on a line that makes several locations or has a start; expected pus for one location "
        "alone");
  CHECK(rejected("loctype;name,two;kind,cpu;num_cores,2\nlocation;name,c;type,two;pus,0,1,2") ==
        "t.conf:2: location 'c' lists 3 PUs but its type has num_cores 2; expected as many PUs as num_cores");
  CHECK(rejected("location;name,c;type,cpu;pus,0,x") ==
        "t.conf:1: 'x' is not a valid pus; expected a whole number from 0 to 16777216");
  CHECK(rejected("location;name,c;type,cpu;total_count,2\nlocation;name,c;type,cpu;total_count,2") ==
        "t.conf:2: the group 'c' is declared twice (first on line 1); expected one location line per group name");
  CHECK(rejected("location;name," + std::string(127, 'n') + ";type,cpu;total_count,11") ==
        "t.conf:1: '" + std::string(127, 'n') +
            "10' is not a location name; expected 1 to 128 letters, digits, '_', '-' or '.'");
}

TEST_CASE("config: bad hierarchy lines") {
  const std::string two = "location;name,top,mid;type,virtual\nlocation;name,leaf;type,cpu\n";
  CHECK(rejected(two + "hierarchy;children,+,nobody;parent,top") ==
        "t.conf:3: no location or group 'nobody' is declared; expected a child declared by a location line above");
  CHECK(rejected(two + "hierarchy;children,+,mid;parent,nowhere") ==
        "t.conf:3: no location 'nowhere' is declared; expected a parent declared by a location line above");
  CHECK(rejected(two + "hierarchy;children,*,mid;parent,top") ==
        "t.conf:3: '*' is not an operation; expected + (attach) or - (remove) after children,");
  CHECK(rejected(two + "hierarchy;children,+;parent,top") ==
        "t.conf:3: the children field names no location; expected children,+,NAME[,NAME...] or "
        "children,-,NAME[,NAME...]");
  CHECK(rejected(two + "hierarchy;parent,top") ==
        "t.conf:3: the hierarchy line has no children; expected children,+,NAME[,NAME...] or "
        "children,-,NAME[,NAME...]");
  CHECK(rejected(two + "hierarchy;children,+,mid") ==
        "t.conf:3: the hierarchy line has no parent; expected parent,NAME");
  CHECK(rejected(two + "hierarchy;children,+,mid;parent,top;weight,3") ==
        "t.conf:3: unknown field 'weight' in a hierarchy line; expected children, parent or all");
  CHECK(rejected(two + "hierarchy;children,+,mid;parent,top\nhierarchy;children,+,top;parent,mid") ==
        "t.conf:4: attaching 'top' below 'mid' makes a cycle; expected a parent outside the child's own subtree");
  CHECK(rejected(two + "hierarchy;children,+,mid;parent,mid") ==
        "t.conf:3: attaching 'mid' below 'mid' makes a cycle; expected a parent outside the child's own subtree");
  CHECK(rejected(two + "hierarchy;children,+,mid;parent,leaf") ==
        "t.conf:3: 'leaf' is of kind cpu, which runs regions and has no children; expected a memory or virtual parent");
  CHECK(rejected(two + "hierarchy;children,-,mid;parent,top") ==
        "t.conf:3: 'mid' is not a child of 'top'; expected a child of the parent named");
  CHECK(rejected(two + "hierarchy;children,+,mid;parent,top\nhierarchy;children,-,mid;parent,top\n"
                       "hierarchy;children,+,mid;parent,top") ==
        "t.conf:5: no location or group 'mid' is declared; expected a child declared by a location line above");
}

TEST_CASE("config: trees without one root, and nodes without what a location needs") {
  CHECK(rejected("location;name,a;type,virtual\nlocation;name,b;type,virtual\nlocation;name,c;type,virtual\n"
                 "hierarchy;children,+,b;parent,a") ==
        "t.conf:3: several locations have no parent: 'a' (line 1), 'c' (line 3); expected exactly one root; attach "
        "the others with hierarchy lines");
  CHECK(rejected("# nothing\n\n") ==
        "t.conf:3: no location is left to be the root; expected at least one location line (and not all of them "
        "optional and absent)");
  CHECK(rejected("location;name,g;type,cuda;optional") ==
        "t.conf:1: no location is left to be the root; expected at least one location line (and not all of them "
        "optional and absent)");
  NodeInventory node = with_devices();
  node.absent = {{"level_zero", "no driver"}};
  CHECK(rejected("location;name,top;type,virtual\nlocation;name,g;type,cuda;total_count,3\n"
                 "hierarchy;children,+,g;parent,top",
                 node) ==
        "t.conf:2: location 'g2' needs a cuda device, which this node does not have free; held by locations 'g0' and "
        "'g1' (discovered: 8 cores on 2 NUMA nodes; devices: cuda:0 (Fake cuda 0), cuda:1 (Fake cuda 1), opencl:0 "
        "(Fake opencl 0); level_zero: no driver); expected fewer such locations, one of them removed first, or "
        "'optional' on its location line");
  CHECK(rejected("location;name,top;type,virtual\nlocation;name,z;type,level_zero\nhierarchy;children,+,z;parent,top",
                 node)
            .rfind("t.conf:2: location 'z' needs a level_zero device, which this node does not have free", 0) == 0);
  CHECK(rejected("location;name,a;type,gpu;start,7").rfind("t.conf:1: location 'a' needs accelerator 7, which", 0) ==
        0);
  CHECK(rejected("location;name,m;type,host_memory;start,2")
            .rfind("t.conf:1: location 'm' needs NUMA node 2, which this node does not have free", 0) == 0);
  CHECK(rejected("location;name,top;type,virtual\nlocation;name,a,b,c;type,host_memory\n"
                 "hierarchy;children,+,a,b,c;parent,top")
            .rfind("t.conf:2: location 'c' needs a NUMA node, which", 0) == 0);
  CHECK(rejected("loctype;name,big;kind,x64;num_cores,64\nlocation;name,a;type,big")
            .rfind("t.conf:2: location 'a' needs 64 cores, which this node does not have free", 0) == 0);
  CHECK(rejected("location;name,top;type,virtual\nlocation;name,a;type,cpu\nlocation;name,b;type,cpu\n"
                 "hierarchy;children,+,a,b;parent,top")
            .rfind("t.conf:3: location 'b' needs a core, which this node does not have free", 0) == 0);
  CHECK(rejected("location;name,top;type,virtual\nlocation;name,a;type,cpu;pus,0\nlocation;name,b;type,cpu;pus,1,0\n"
                 "hierarchy;children,+,a,b;parent,top")
            .rfind("t.conf:3: location 'b' needs the cores of PUs 1,0, which this node does not have free", 0) == 0);
  CHECK(rejected("location;name,a;type,cpu;pus,1", one_numa())
            .rfind("t.conf:1: location 'a' needs the cores of PUs 1, which", 0) == 0);  // PU 1 is no core's first
  CHECK(rejected("loctype;name,two;kind,cpu;num_cores,2\nlocation;name,top;type,virtual\n"
                 "location;name,a;type,cpu;pus,3\nlocation;name,b;type,two;start,2\n"
                 "hierarchy;children,+,a,b;parent,top")
            .rfind("t.conf:4: location 'b' needs 2 cores from core 2, which", 0) == 0);
}

TEST_CASE("config: no input crashes the loader") {
  std::mt19937 random(12345);
  std::string base = kFigure6;
  base +=
      "location;name,more;type,cpu;all;start,4\nlocation;name,g;type,gpu;total_count,1;optional\n"
      "hierarchy;children,+,g,LocG2;parent,LocG\nhierarchy;children,+,more;parent,LocN;all\n"
      "hierarchy;children,-,LocG;parent,LocA\n";
  const std::string alphabet = ";,#+-\n 0123456789abcdefghijklmnopqrstuvwxyzLoc_.:\t\r\x01\xff";
  NodeInventory node = with_devices();
  CHECK(load_config(base, "base", node).size() == 8);
  int loaded = 0, refused = 0;
  for (int round = 0; round < 20000; ++round) {
    std::string text = base;
    int edits = 1 + static_cast<int>(random() % 8);
    for (int e = 0; e < edits && !text.empty(); ++e) {
      std::size_t at = random() % text.size();
      switch (random() % 3) {
        case 0: text[at] = alphabet[random() % alphabet.size()]; break;
        case 1: text.erase(at, 1 + random() % 12); break;
        default: text.insert(at, text.substr(random() % text.size(), random() % 30)); break;
      }
    }
    try {
      Hierarchy tree = load_config(text, "fuzz", node);
      Hierarchy again = load_config(tree.to_config(), "fuzz-again", node);
      CHECK(again == tree);
      ++loaded;
    } catch (const canopy::Error& error) {
      CHECK(std::string(error.what()).rfind("fuzz", 0) == 0);
      ++refused;
    }
  }
  CHECK(loaded > 0);
  CHECK(refused > 0);
}

// ------------------------------------------------------------ a running tree

TEST_CASE("config: lines applied to a running tree add, move and remove") {
  NodeInventory node = two_numa();
  Hierarchy tree = load_config(
      "loctype;name,two;kind,cpu;num_cores,2\n"
      "location;name,node;type,virtual\n"
      "location;name,mem;type,host_memory;all\n"
      "location;name,a;type,two\n"
      "hierarchy;children,+,mem;parent,node\n"
      "hierarchy;children,+,a;parent,mem0\n",
      "start.conf", node);
  std::uint64_t version = tree.version();
  apply_config_text(tree,
                    "loctype;name,two;kind,cpu;num_cores,2\n"
                    "location;name,b;type,two\n"
                    "location;name,c;type,cpu;pus,7\n"
                    "hierarchy;children,+,b,c;parent,mem1\n"
                    "hierarchy;children,+,a;parent,mem1\n",
                    "change-1", node);
  CHECK(tree.version() > version);
  CHECK(tree.at("a").traits().pus == std::vector<unsigned>{0, 1});  // kept its cores
  CHECK(tree.at("b").traits().pus == std::vector<unsigned>{2, 3});  // the next free ones
  CHECK(tree.at("c").traits().pus == std::vector<unsigned>{7});
  std::vector<std::string> under_mem1;
  for (const Location* child : tree.at("mem1").children()) under_mem1.push_back(child->name());
  CHECK(under_mem1 == std::vector<std::string>{"b", "c", "a"});

  apply_config_text(tree,
                    "hierarchy;children,-,a;parent,mem1\nlocation;name,d;type,cpu;pus,0\n"
                    "hierarchy;children,+,d;parent,mem0\n",
                    "change-2", node);
  CHECK(tree.find("a") == nullptr);
  CHECK(tree.at("d").traits().pus == std::vector<unsigned>{0});  // freed by the removal of a

  Hierarchy before = tree;
  version = tree.version();
  CHECK(error_of([&] { apply_config_text(tree, "location;name,e;type,cpu;pus,7\n", "change-3", node); }) ==
        "change-3:1: location 'e' needs the cores of PUs 7, which this node does not have free; held by location 'c' "
        "(discovered: 8 cores on 2 NUMA nodes; devices: none); expected fewer such locations, one of them removed "
        "first, or 'optional' on its location line");
  CHECK(error_of([&] { apply_config_text(tree, "location;name,x;type,virtual\n", "change-4", node); }) ==
        "change-4:1: several locations have no parent: 'node' (in the hierarchy), 'x' (line 1); expected exactly one "
        "root; attach the others with hierarchy lines");
  CHECK(error_of([&] { apply_config_text(tree, "location;name,d;type,virtual\n", "change-5", node); }) ==
        "change-5:1: location 'd' is declared twice (in the hierarchy already); expected one declaration per name");
  CHECK(tree == before);
  CHECK(tree.version() == version);
  apply_config_text(tree, "# nothing changes\n", "change-6", node);
  CHECK(tree.version() == version);
}

// --------------------------------------------------------------- round trips

TEST_CASE("config: to_config writes loctypes, locations and hierarchy lines") {
  NodeInventory node = with_devices();
  Hierarchy tree = default_hierarchy(node, {CpuGrain::Numa, "cpu,cuda:1"});
  CHECK(tree.to_config() ==
        "# Canopy location hierarchy (Gecko configuration format)\n"
        "loctype;name,host_memory_type0;kind,host_memory;mem,1GB\n"
        "loctype;name,cpu_type0;kind,cpu;num_cores,4\n"
        "loctype;name,cuda_type0;kind,cuda;num_cores,80;mem,16GB\n"
        "location;name,node;type,virtual\n"
        "location;name,numa0;type,host_memory_type0;start,0\n"
        "location;name,cpu0;type,cpu_type0;pus,0,1,2,3\n"
        "location;name,numa1;type,host_memory_type0;start,1\n"
        "location;name,cpu1;type,cpu_type0;pus,4,5,6,7\n"
        "location;name,cuda1;type,cuda_type0;start,1\n"
        "hierarchy;children,+,numa0;parent,node\n"
        "hierarchy;children,+,cpu0;parent,numa0\n"
        "hierarchy;children,+,numa1;parent,node\n"
        "hierarchy;children,+,cpu1;parent,numa1\n"
        "hierarchy;children,+,cuda1;parent,numa1\n");
  check_round_trip(tree, node);
}

TEST_CASE("config: discovered trees round-trip at every grain and selection") {
  NodeInventory node = with_devices();
  node.vector_width = 64;
  node.cpu_model = "Round Trip CPU";
  for (CpuGrain grain : {CpuGrain::Numa, CpuGrain::L3, CpuGrain::Core}) {
    for (const char* devices : {"all", "cpu", "cuda", "cpu,opencl:0,cuda:1"}) {
      CAPTURE(devices);
      check_round_trip(default_hierarchy(node, {grain, devices}), node);
    }
  }
  NodeInventory l3 = one_numa();
  check_round_trip(default_hierarchy(l3, {CpuGrain::L3, "all"}), l3);
  NodeInventory here = discover_node();
  for (CpuGrain grain : {CpuGrain::Numa, CpuGrain::L3, CpuGrain::Core})
    check_round_trip(default_hierarchy(here, {grain, "all"}), here);
}

TEST_CASE("config: configured trees round-trip") {
  NodeInventory node = one_numa();
  node.devices = {fake_device(LocationKind::Cuda, 0, 0), fake_device(LocationKind::Cuda, 1, 0)};
  Hierarchy figure6 = load_config(std::string(kFigure6) + "hierarchy;children,+,LocG2;parent,LocG\n", "f", node);
  check_round_trip(figure6, node);
  check_round_trip(load_config(kFigure6, "f", one_numa()), one_numa());
  Hierarchy mixed = load_config(
      "loctype;name,fast;kind,unified_memory;mem,1000;bandwidth,12.5\n"
      "loctype;name,disk;kind,Permanent_Storage;size,2TB\n"
      "location;name,top;type,virtual;optional\n"
      "location;name,um;type,fast\n"
      "location;name,store;type,disk\n"
      "location;name,any;type,gpu;all\n"
      "location;name,rest;type,x64\n"
      "hierarchy;children,+,um,store;parent,top\n"
      "hierarchy;children,+,any,rest;parent,um\n",
      "mixed", node);
  CHECK(mixed.at("um").traits().bandwidth == 12.5);
  CHECK(mixed.at("top").traits().optional);
  check_round_trip(mixed, node);
}

TEST_CASE("config: a loctype of an earlier text stays known to later ones, as in Gecko; a text that fails adds none") {
  const NodeInventory node = two_numa();
  ConfigTypes types;
  Hierarchy tree = load_config(
      "loctype;name,pair;kind,cpu;num_cores,2\n"
      "loctype;name,mem_t;kind,host_memory\n"
      "location;name,node;type,virtual\n"
      "location;name,mem;type,mem_t;all\n"
      "location;name,a;type,pair\n"
      "hierarchy;children,+,mem;parent,node\n"
      "hierarchy;children,+,a;parent,mem0\n",
      "first.conf", node, &types);
  CHECK(types.loctype_lines.size() == 2);
  // A later text names the types without declaring them.
  apply_config_text(tree, "location;name,b;type,pair\nhierarchy;children,+,b;parent,mem1\n", "later", node, &types);
  CHECK(tree.at("b").traits().pus == std::vector<unsigned>{2, 3});  // the next free cores, two as `pair` says
  // Without the kept types, the same line is refused as before.
  Hierarchy plain = tree;
  CHECK(error_of([&] { apply_config_text(plain, "location;name,c;type,pair\n", "alone", node); }) ==
        "alone:1: unknown type 'pair'; expected a kind: x32, x64, NVIDIA, Unified_Memory, Permanent_Storage, "
        "virtual, cpu, opencl, cuda, level_zero, gpu, host_memory, unified_memory or file_memory");
  // A later text may declare a type again (its own wins), and one that fails keeps nothing it declared.
  const auto before = types.loctype_lines;
  CHECK(error_of([&] {
          apply_config_text(tree, "loctype;name,solo;kind,cpu;num_cores,1\nlocation;name,bad;type,nothing\n", "failing",
                            node, &types);
        }).rfind("failing:2: unknown type 'nothing'", 0) == 0);
  CHECK(types.loctype_lines == before);
  apply_config_text(tree,
                    "loctype;name,pair;kind,cpu;num_cores,1\nlocation;name,d;type,pair\n"
                    "hierarchy;children,+,d;parent,mem1\n",
                    "redeclared", node, &types);
  CHECK(tree.at("d").traits().pus.size() == 1);
}

// The shapes of the Gecko paper's Figure 6, as files a user would write
// (examples/gecko/shapes/): each loads on a node it was not written for, with
// one warning per location that got less than it asked for, and with none on
// a node that has what they ask for.
TEST_CASE("config: the files of Figure 6's shapes load on any node, with a warning per location it lacks") {
  canopy::testing::ScopedSetting lenient("CANOPY_CONFIG_STRICT", nullptr);
  const std::string dir = std::string(CANOPY_TEST_SOURCE_DIR) + "/../examples/gecko/shapes/";
  const NodeInventory small = discover_node_synthetic("pack:1 numa:1 core:2 pu:1");
  NodeInventory big = discover_node_synthetic("pack:1 numa:2 core:8 pu:1");
  for (int k = 0; k < 4; ++k) big.devices.push_back(fake_device(LocationKind::Cuda, k, k / 2));
  struct Shape {
    const char* file;
    std::size_t warnings_small, warnings_big;
    const char* leaf_under_lock_h;  ///< a leaf below LocH on the big node
  };
  const Shape shapes[] = {{"figure6a-paper.conf", 3, 1, "LocN1"},
                          {"multicore.conf", 2, 0, "LocN2"},
                          {"one-gpu.conf", 1, 0, "LocG1"},
                          {"several-gpus.conf", 4, 0, "LocG3"},
                          {"cpu-and-gpus.conf", 2, 0, "LocG2"}};
  for (const Shape& shape : shapes) {
    CAPTURE(shape.file);
    std::vector<std::string> small_warnings, big_warnings;
    const Hierarchy on_small = load_config_file(dir + shape.file, small, nullptr, &small_warnings);
    const Hierarchy on_big = load_config_file(dir + shape.file, big, nullptr, &big_warnings);
    CAPTURE(on_small.to_text());
    CHECK(small_warnings.size() == shape.warnings_small);
    CHECK(big_warnings.size() == shape.warnings_big);
    CHECK(on_small.find("LocH") != nullptr);
    std::vector<std::string> leaves;
    for (const Location* leaf : on_big.leaves(on_big.at("LocH"))) leaves.push_back(leaf->name());
    CHECK(std::find(leaves.begin(), leaves.end(), shape.leaf_under_lock_h) != leaves.end());
  }
}
