// Fuzz target "config": configuration text in Gecko's format
// (runtime/config.hpp), bound against a fixed made-up node so that every run
// sees the same machine: 8 cores on 2 NUMA nodes (two L3 domains), two CUDA
// GPUs, an OpenCL GPU, an OpenCL device on the host's cores and a Level Zero
// GPU.
//
// Properties checked on every input:
//  - load_config() returns a tree or throws canopy::Error whose message
//    starts with the source name (no crash, hang, other exception or
//    sanitizer report);
//  - a loaded tree has one root, prints in every form, and its to_config()
//    text loads back to the same tree (and the same text);
//  - apply_config_text() on the node's default tree either changes it to a
//    tree that round-trips the same way, or throws and leaves it as it was.
#include <cstdint>
#include <string>

#include <fmt/format.h>

#include <canopy/ir/error.hpp>
#include <canopy/runtime/config.hpp>

#include "fuzz_support.hpp"

namespace {

using canopy::fuzz::check;
using namespace canopy;

constexpr std::string_view kSource = "fuzz.conf";

DiscoveredDevice device(LocationKind kind, int index, int numa_node, bool on_host_cores) {
  DiscoveredDevice found;
  found.kind = kind;
  found.index = index;
  found.id = fmt::format("{}:{}", name_of(kind), index);
  found.name = fmt::format("Fuzz {} {}", name_of(kind), index);
  found.numa_node = numa_node;
  found.traits.cores = on_host_cores ? 8 : 80;
  found.traits.capacity = std::int64_t{16} << 30;
  found.traits.vector_width = 16;
  found.on_host_cores = on_host_cores;
  return found;
}

const NodeInventory& fuzz_node() {
  static const NodeInventory node = [] {
    NodeInventory made;
    for (unsigned core = 0; core < 8; ++core)
      made.cores.push_back(CoreInfo{core * 2, static_cast<int>(core / 4), static_cast<int>(core / 4)});
    made.numa_nodes = {NumaInfo{0, std::int64_t{32} << 30}, NumaInfo{1, std::int64_t{32} << 30}};
    made.cpu_model = "Fuzz CPU";
    made.vector_width = 32;
    made.devices = {device(LocationKind::Cuda, 0, 1, false), device(LocationKind::Cuda, 1, 1, false),
                    device(LocationKind::OpenCL, 0, 0, false), device(LocationKind::OpenCL, 1, 0, true),
                    device(LocationKind::LevelZero, 0, -1, false)};
    made.source = "fuzz";
    return made;
  }();
  return node;
}

// The tree prints, and its configuration text loads back to it.
void check_tree(const Hierarchy& tree, std::string_view what) {
  check(tree.root() != nullptr, std::string(what) + " has no root");
  tree.to_text();
  tree.to_json();
  tree.to_dot();
  const std::string text = tree.to_config();
  Hierarchy again;
  try {
    again = load_config(text, "round-trip", fuzz_node());
  } catch (const Error& error) {
    canopy::fuzz::fail(std::string(what) + ": to_config() does not load back", text + "\nerror: " + error.what());
  }
  check(again == tree, std::string(what) + ": to_config() loads back to another tree",
        text + "\nfirst:\n" + tree.to_text() + "second:\n" + again.to_text());
  check(again.to_config() == text, std::string(what) + ": to_config() changes after a round trip",
        text + "\nsecond:\n" + again.to_config());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = canopy::fuzz::text_of(data, size);
  try {
    const Hierarchy tree = load_config(text, kSource, fuzz_node());
    check_tree(tree, "a loaded tree");
  } catch (const Error& error) {
    const std::string_view message = error.what();
    check(message.starts_with(kSource), "a load error does not name the source", message);
  }

  static const Hierarchy base = default_hierarchy(fuzz_node(), DiscoveryOptions{CpuGrain::Core, "all"});
  Hierarchy tree = base;
  try {
    apply_config_text(tree, text, kSource, fuzz_node());
    check_tree(tree, "a changed tree");
  } catch (const Error& error) {
    const std::string_view message = error.what();
    check(message.starts_with(kSource), "an error applying a change does not name the source", message);
    check(tree == base, "a change that failed left the tree changed", std::string(message));
  }
  return 0;
}
