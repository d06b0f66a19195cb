// Reconfiguration with live data: arrays at removed locations keep their
// values and move to the parent, subtrees move with arrays in use, new
// locations run regions, configuration lines and files replace parts or all
// of the tree, and regions launched before a change finish with the right
// results.
#include <doctest/doctest.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include "engine_trees.hpp"
#include "scoped_setting.hpp"

using namespace canopy;
using namespace canopy::engine_tests;

namespace {

const Kernel<void(Out<std::int64_t>, Val<std::int64_t>)>& fill_scaled() {
  static const Kernel kernel("fill_scaled",
                             [](Out<std::int64_t> x, Val<std::int64_t> k) { x[index(0)] = index(0) * k; }, {"x", "k"});
  return kernel;
}

const Kernel<void(InOut<std::int64_t>, In<std::int64_t>)>& accumulate() {
  static const Kernel kernel("accumulate",
                             [](InOut<std::int64_t> x, In<std::int64_t> y) { x[index(0)] += y[index(0)]; }, {"x", "y"});
  return kernel;
}

const Kernel<void(InOut<std::int64_t>)>& increment() {
  static const Kernel kernel("increment", [](InOut<std::int64_t> x) { x[index(0)] += 1; }, {"x"});
  return kernel;
}

/// two_leaf_tree() plus a second memory "m1" below the node, with cpuC (on the first core) below it.
Hierarchy tree_with_second_memory() {
  Hierarchy tree = two_leaf_tree();
  tree.add("m1", LocationKind::HostMemory, {}, "node");
  tree.add("cpuC", LocationKind::Cpu, cpu_on({core(0)}), "m1");
  return tree;
}

/// True when x[i] == i * k for every i.
bool holds_scaled(const Array<std::int64_t>& x, std::int64_t k) {
  auto h = x.host();
  for (std::int64_t i = 0; i < h.size(); ++i)
    if (h[i] != i * k) return false;
  return true;
}

bool holds_constant(const Array<std::int64_t>& x, std::int64_t value) {
  for (std::int64_t v : x.host())
    if (v != value) return false;
  return true;
}

std::vector<std::string> leaf_names(const Hierarchy& tree, const std::string& under) {
  std::vector<std::string> names;
  for (const Location* leaf : tree.leaves(tree.at(under))) names.push_back(leaf->name());
  return names;
}

// Loads `text` into `rt` through a configuration file of its own (rt.load_config).
void load_config_text(Runtime& rt, const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() / ("canopy-engine-" + std::to_string(::getpid()) + ".conf");
  {
    std::ofstream file(path);
    file << text;
  }
  rt.load_config(path.string());
  std::filesystem::remove(path);
}

}  // namespace

TEST_CASE("engine: removing the root is refused, the tree and the arrays as they were") {
  Runtime rt;
  use_tree(rt, tree_with_second_memory());
  const std::int64_t n = 100;
  auto x = rt.array<std::int64_t>(n, at("cpuB") | named("x"));
  rt.region(fill_scaled()).over(n).launch(x, 3);
  const std::string before = rt.hierarchy().to_text();
  const std::string root = rt.hierarchy().root()->name();
  const std::string error = error_of([&] { rt.remove_location(root); });
  CHECK(error.find("removes the root '" + root + "'") != std::string::npos);
  CHECK(rt.hierarchy().to_text() == before);
  CHECK(x.location() == "cpuB");
  CHECK(holds_scaled(x, 3));
  rt.region(fill_scaled()).over(n).launch(x, 4);  // still runs
  CHECK(holds_scaled(x, 4));
}

TEST_CASE("engine: arrays at a removed location keep their values and move to its parent") {
  Runtime rt;
  use_tree(rt, tree_with_second_memory());
  const std::int64_t n = 5000;
  auto x = rt.array<std::int64_t>(n, at("cpuB") | named("x"));
  auto y = rt.array<std::int64_t>(n, at("m1") | named("y"));
  // Launched and not waited for: the removals wait for them.
  rt.region(fill_scaled()).over(n).launch(x, 3);
  rt.region(fill_scaled()).over(n).launch(y, 5);
  rt.remove_location("cpuB");
  CHECK(x.location() == "numa0");
  CHECK(holds_scaled(x, 3));
  rt.remove_location("m1");  // with cpuC below it
  CHECK(y.location() == "node");
  CHECK(holds_scaled(y, 5));
  CHECK(rt.hierarchy().find("cpuC") == nullptr);

  // Both arrays keep working where they are now.
  rt.region(accumulate()).over(n).launch(x, y);
  rt.pause();
  const RegionStats region = last_region(rt);
  CHECK(region.location == "numa0");  // the deeper of numa0 and node
  CHECK(pieces_of(region) == std::vector<std::string>{"cpuA[0,5000)"});
  CHECK(holds_scaled(x, 8));
}

TEST_CASE("engine: moving a memory with arrays in use, then running where both memories are seen") {
  Runtime rt;
  use_tree(rt, tree_with_second_memory());
  const std::int64_t n = 4096;
  auto ones = rt.array<std::int64_t>(n, at("m1") | named("ones"));
  auto total = rt.array<std::int64_t>(n, at("m1") | named("total"));
  auto near = rt.array<std::int64_t>(n, at("numa0") | named("near"));
  for (auto& v : ones.host()) v = 1;
  // numa0 and m1 are on different branches: no location sees both.
  CHECK(error_of([&] { rt.region(accumulate()).over(n).launch(total, near); }) ==
        "region of kernel 'accumulate': no location sees the memory of every argument (argument 'x', array 'total' "
        "(i64 4096 at m1), at 'm1', argument 'y', array 'near' (i64 4096 at numa0), at 'numa0'): argument 'x', array "
        "'total' (i64 4096 at m1), at 'm1' and argument 'y', array 'near' (i64 4096 at numa0), at 'numa0' are on "
        "different branches, which part at 'node'; move one of them (rt.move) onto the other's path to the root, for "
        "example to 'node'");

  for (int r = 0; r < 40; ++r) rt.region(accumulate()).over(n).launch(total, ones);
  rt.move_location("m1", "numa0");  // while those regions may still run on cpuC
  for (int r = 0; r < 40; ++r) rt.region(accumulate()).over(n).launch(total, ones);
  CHECK(holds_constant(total, 80));
  CHECK(total.location() == "m1");
  CHECK(rt.hierarchy().at("m1").parent()->name() == "numa0");
  CHECK(leaf_names(rt.hierarchy(), "numa0") == std::vector<std::string>{"cpuA", "cpuB", "cpuC"});
  CHECK(pieces_of(last_region(rt)) == std::vector<std::string>{"cpuC[0,4096)"});

  // m1 is below numa0 now: a region over both runs at m1.
  rt.region(accumulate()).over(n).launch(near, total);
  rt.pause();
  CHECK(last_region(rt).location == "m1");
  CHECK(holds_constant(near, 80));
}

TEST_CASE("engine: a location added while the program runs takes regions") {
  Runtime rt;
  use_tree(rt, two_leaf_tree());
  const std::int64_t n = 300;
  auto x = rt.array<std::int64_t>(n, at("numa0"));
  rt.region(increment()).over(n).launch(x);
  rt.add_location("cpuD", LocationKind::Cpu, cpu_on({core(1)}), "numa0");
  rt.region(increment()).over(n).at("cpuD").launch(x);
  rt.pause();
  CHECK(last_region(rt).location == "cpuD");
  CHECK(pieces_of(last_region(rt)) == std::vector<std::string>{"cpuD[0,300)"});
  rt.region(increment()).over(n).launch(x);  // static at numa0: three leaves now
  rt.pause();
  CHECK(pieces_of(last_region(rt)) == std::vector<std::string>{"cpuA[0,100)", "cpuB[100,200)", "cpuD[200,300)"});
  CHECK(holds_constant(x, 3));
}

TEST_CASE("engine: configuration lines split a leaf, remove and add locations, and refuse bad lines") {
  Runtime rt;
  use_tree(rt, one_leaf_tree());
  const std::int64_t n = 1000;
  auto x = rt.array<std::int64_t>(n, at("cpu0") | named("x"));
  rt.region(fill_scaled()).over(n).launch(x, 2);
  const std::string first = std::to_string(core(0)), second = std::to_string(core(1));
  rt.configure(
      "hierarchy;children,-,cpu0;parent,numa0\n"
      "location;name,cpuA;type,cpu;pus," +
      first +
      "\n"
      "location;name,cpuB;type,cpu;pus," +
      second +
      "\n"
      "hierarchy;children,+,cpuA,cpuB;parent,numa0\n");
  Hierarchy tree = rt.hierarchy();
  CHECK(leaf_names(tree, "node") == std::vector<std::string>{"cpuA", "cpuB"});
  CHECK(tree.at("cpuA").traits().pus == std::vector<unsigned>{core(0)});
  CHECK(tree.at("cpuB").traits().pus == std::vector<unsigned>{core(1)});
  CHECK(x.location() == "numa0");
  CHECK(holds_scaled(x, 2));
  rt.region(increment()).over(n).launch(x);
  rt.pause();
  CHECK(pieces_of(last_region(rt)) == std::vector<std::string>{"cpuA[0,500)", "cpuB[500,1000)"});

  auto on_b = rt.array<std::int64_t>(n, at("cpuB") | named("on_b"));
  rt.region(fill_scaled()).over(n).launch(on_b, 7);
  rt.configure("hierarchy;children,-,cpuB;parent,numa0");
  CHECK(rt.hierarchy().find("cpuB") == nullptr);
  CHECK(on_b.location() == "numa0");
  CHECK(holds_scaled(on_b, 7));

  // The core cpuB had is free again: a new leaf binds it.
  rt.configure("location;name,cpuE;type,cpu;pus," + second + "\nhierarchy;children,+,cpuE;parent,numa0");
  CHECK(rt.hierarchy().at("cpuE").traits().pus == std::vector<unsigned>{core(1)});
  rt.region(increment()).over(n).at("cpuE").launch(on_b);
  rt.pause();
  CHECK(pieces_of(last_region(rt)) == std::vector<std::string>{"cpuE[0,1000)"});
  auto h = on_b.host();
  CHECK(h[999] == 999 * 7 + 1);

  const Hierarchy before = rt.hierarchy();
  CHECK(error_of([&] { rt.configure("hierarchy;children,+,cpuE;parent,nowhere"); }).find("nowhere") !=
        std::string::npos);
  CHECK(rt.hierarchy() == before);
}

TEST_CASE("engine: load_config replaces the whole tree; arrays go to the new root with their values") {
  Runtime rt;
  use_tree(rt, two_leaf_tree());
  const std::int64_t n = 2000;
  auto x = rt.array<std::int64_t>(n, at("cpuA") | named("x"));
  auto y = rt.array<std::int64_t>(n, at("node") | named("y"));
  rt.region(fill_scaled()).over(n).launch(x, 11);
  rt.region(fill_scaled()).over(n).launch(y, 13);

  load_config_text(rt,
                   "# two one-core leaves below one memory, below a virtual root\n"
                   "loctype;name,core;kind,x64;num_cores,1\n"
                   "location;name,top;type,virtual\n"
                   "location;name,mem;type,host_memory\n"
                   "location;name,left,right;type,core\n"
                   "hierarchy;children,+,mem;parent,top\n"
                   "hierarchy;children,+,left,right;parent,mem\n");

  const Hierarchy tree = rt.hierarchy();
  CHECK(tree.root()->name() == "top");
  CHECK(leaf_names(tree, "top") == std::vector<std::string>{"left", "right"});
  CHECK(x.location() == "top");  // none of cpuA, numa0, node is in the new tree
  CHECK(y.location() == "top");
  CHECK(holds_scaled(x, 11));
  CHECK(holds_scaled(y, 13));

  rt.region(accumulate()).over(n).launch(x, y);
  rt.pause();
  CHECK(last_region(rt).location == "top");
  CHECK(pieces_of(last_region(rt)) == std::vector<std::string>{"left[0,1000)", "right[1000,2000)"});
  CHECK(holds_scaled(x, 24));

  CHECK(error_of([] {
          Runtime other;
          other.load_config("/nonexistent/canopy.conf");
        }) ==
        "cannot read the configuration file '/nonexistent/canopy.conf'; expected a readable file in Gecko's "
        "format");
}

TEST_CASE("engine: a loctype of a loaded file stays known to later configure() lines and add_location(), as in Gecko") {
  Runtime rt;
  load_config_text(rt,
                   "loctype;name,core;kind,x64;num_cores,1\n"
                   "location;name,top;type,virtual\n"
                   "location;name,mem;type,host_memory\n"
                   "location;name,left;type,core\n"
                   "hierarchy;children,+,mem;parent,top\n"
                   "hierarchy;children,+,left;parent,mem\n");
  // `core` was declared by the file, not by this text.
  rt.configure("location;name,right;type,core\nhierarchy;children,+,right;parent,mem");
  const Hierarchy tree = rt.hierarchy();
  CHECK(leaf_names(tree, "top") == std::vector<std::string>{"left", "right"});
  CHECK(tree.at("right").traits().cores == 1);
  auto x = rt.array<std::int64_t>(100, at("mem"));
  rt.region(fill_scaled()).over(100).launch(x, 3);
  rt.pause();
  CHECK(pieces_of(last_region(rt)) == std::vector<std::string>{"left[0,50)", "right[50,100)"});
  CHECK(holds_scaled(x, 3));
  // add_location() by type name knows it too; bad names are refused before the tree changes.
  rt.configure("hierarchy;children,-,right;parent,mem");
  rt.add_location("again", "core", "mem");
  CHECK(leaf_names(rt.hierarchy(), "top") == std::vector<std::string>{"left", "again"});
  CHECK(rt.hierarchy().at("again").traits().cores == 1);
  CHECK(error_of([&] { rt.add_location("a;b", "core", "mem"); }).find("expected plain names") != std::string::npos);
  CHECK(error_of([&] { rt.add_location("other", "nothing", "mem"); }).find("unknown type 'nothing'") !=
        std::string::npos);
  CHECK(leaf_names(rt.hierarchy(), "top") == std::vector<std::string>{"left", "again"});
}

TEST_CASE("engine: regions launched before a reconfiguration finish with the right results") {
  Runtime rt;
  use_tree(rt, two_leaf_tree());
  const std::int64_t n = 10000;
  auto x = rt.array<std::int64_t>(n, at("numa0"));
  auto y = rt.array<std::int64_t>(n, at("cpuB"));
  for (int r = 0; r < 200; ++r) {
    rt.region(increment()).over(n).launch(x);
    rt.region(increment()).over(n).launch(y);
  }
  rt.remove_location("cpuB");
  CHECK(y.location() == "numa0");
  for (int r = 0; r < 100; ++r) {
    rt.region(increment()).over(n).launch(x);
    rt.region(increment()).over(n).launch(y);
  }
  CHECK(holds_constant(x, 300));
  CHECK(holds_constant(y, 300));
  CHECK(pieces_of(last_region(rt)) == std::vector<std::string>{"cpuA[0,10000)"});

  // With its last leaf moved away, numa0 runs nothing: arrays there are still read and kept.
  rt.region(increment()).over(n).launch(y);
  rt.move_location("cpuA", "node");
  CHECK(error_of([&] { rt.region(increment()).over(n).launch(y); }) ==
        "region of kernel 'increment': location 'numa0' has no executing leaf (a CPU or device location) at or below "
        "it, so no region can run "
        "there; add one below it or run the region at another location");
  CHECK(holds_constant(y, 301));
}

TEST_CASE("engine: one thread launches while another splits and joins the leaves") {
  Runtime rt;
  use_tree(rt, one_leaf_tree());
  const std::int64_t n = 20000;
  auto x = rt.array<std::int64_t>(n, at("numa0"));
  std::atomic<bool> launching{true};
  std::thread launcher([&] {
    for (int r = 0; r < 2000; ++r) rt.region(increment()).over(n).launch(x);
    launching = false;
  });
  int changes = 0;
  for (; launching || changes < 10; ++changes) use_tree(rt, changes % 2 == 0 ? two_leaf_tree() : one_leaf_tree());
  launcher.join();
  rt.pause();
  CHECK(holds_constant(x, 2000));
}

TEST_CASE("engine: a Figure 6 shape file loads on this node, runs regions, and takes a location of its own type") {
  canopy::testing::ScopedSetting lenient("CANOPY_CONFIG_STRICT", nullptr);
  Runtime rt;
  // Two 8-core groups: on a smaller node the first takes every core and the
  // second is an empty virtual location (warnings on stderr).
  rt.load_config(std::string(CANOPY_TEST_SOURCE_DIR) + "/../examples/gecko/shapes/multicore.conf");
  CHECK(rt.hierarchy().at("LocN1").kind() == LocationKind::Cpu);
  auto x = rt.array<std::int64_t>(1000, at("LocH"));
  rt.region(fill_scaled()).over(1000).launch(x, 5);
  rt.pause();
  CHECK(holds_scaled(x, 5));
  // `group` is the file's type, known to add_location() after it.
  rt.add_location("LocX", "group", "LocA");
  CHECK(rt.hierarchy().at("LocX").kind() == LocationKind::Virtual);
  CHECK(rt.hierarchy().at("LocX").parent()->name() == "LocA");
}

TEST_CASE(
    "engine: a memory location with a size holds no more than it: the least recently used array moves up to its "
    "parent, and an array larger than the memory is refused") {
  Runtime rt;
  load_config_text(rt,
                   "loctype;name,core;kind,x64;num_cores,1\n"
                   "loctype;name,small;kind,Unified_Memory;size,96KB\n"
                   "location;name,top;type,virtual\n"
                   "location;name,mem;type,small\n"
                   "location;name,left,right;type,core\n"
                   "hierarchy;children,+,mem;parent,top\n"
                   "hierarchy;children,+,left,right;parent,mem\n");
  auto memory = [&] {
    for (const auto& m : rt.stats().memory_locations)
      if (m.location == "mem") return m;
    return MemoryLocationStats{};
  };
  const std::int64_t capacity = memory().capacity_bytes;
  REQUIRE(capacity >= 96 * 1000);
  REQUIRE(capacity < 128 * 1024);
  const std::int64_t n = 4096, bytes = n * static_cast<std::int64_t>(sizeof(std::int64_t));  // 32 KiB each
  auto x = rt.array<std::int64_t>(n, at("mem") | named("x"));
  auto y = rt.array<std::int64_t>(n, at("left") | named("y"));  // below the memory: counted there too
  rt.region(fill_scaled()).over(n).launch(y, 3);                // y used after x
  rt.region(fill_scaled()).over(n).launch(x, 5);                // now x after y
  rt.pause();
  CHECK(memory().held_bytes == 2 * bytes);
  {
    auto scratch = rt.array<std::int64_t>(n / 2, at("right"));
    CHECK(memory().held_bytes == 2 * bytes + bytes / 2);
  }
  CHECK(memory().held_bytes == 2 * bytes);  // freed arrays stop counting
  CHECK(memory().peak_bytes == 2 * bytes + bytes / 2);
  auto z = rt.array<std::int64_t>(n, at("mem") | named("z"));  // fits: 96 KiB
  CHECK(memory().held_bytes == 3 * bytes);
  CHECK(y.location() == "left");
  rt.region(fill_scaled()).over(n).launch(z, 7);
  rt.pause();
  // A fourth does not fit: y, the least recently used, moves up to top with its values.
  auto w = rt.array<std::int64_t>(n, at("right") | named("w"));
  CAPTURE(rt.stats().to_text());
  CHECK(y.location() == "top");
  CHECK(x.location() == "mem");
  CHECK(z.location() == "mem");
  CHECK(holds_scaled(y, 3));
  const MemoryLocationStats after = memory();
  CHECK(after.held_bytes == 3 * bytes);
  CHECK(after.evicted_bytes == bytes);
  CHECK(after.peak_bytes <= capacity);
  // Regions still run where their arrays are seen: w and x at the memory, y above it.
  rt.region(accumulate()).over(n).launch(x, y);
  rt.pause();
  CHECK(holds_scaled(x, 8));
  // More than the whole memory: refused, naming the sizes.
  const std::string error = error_of([&] { auto big = rt.array<std::int64_t>(2 * n * 2, at("mem")); });
  CHECK(error.find("does not fit memory location 'mem'") != std::string::npos);
  CHECK(error.find("the array alone is larger") != std::string::npos);
  // Memory the program gives with wrap() is its own, not counted.
  std::vector<std::int64_t> own(std::size_t(4 * n), 1);
  auto wrapped = rt.wrap(own.data(), 4 * n, at("mem"));
  CHECK(memory().held_bytes == 3 * bytes);
  // A location moved below the memory brings its arrays: the memory moves its
  // least recently used ones up until it holds no more than its size (it
  // had held 4 x 32 KiB of 96 KiB; found by a new user).
  rt.add_location("side", "virtual", "top");
  auto v = rt.array<std::int64_t>(n, at("top") | named("v"));
  rt.region(fill_scaled()).over(n).launch(v, 9);
  rt.pause();
  rt.move(v, "side");
  rt.move_location("side", "mem");
  CAPTURE(rt.stats().to_text());
  CHECK(memory().held_bytes == 3 * bytes);
  CHECK(memory().evicted_bytes == 2 * bytes);
  CHECK(v.location() == "side");  // the most recently used stays
  CHECK(holds_scaled(v, 9));
  CHECK(holds_scaled(x, 8));
}
