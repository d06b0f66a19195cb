// Binding a configuration to this node: each declared location takes the
// cores, the NUMA memory or the device it asks for (or the next free one),
// optional locations the node lacks are left out, and the tree is built from
// what remains.
#include <fmt/format.h>

#include <algorithm>

#include <canopy/ir/error.hpp>

#include "internal/config_loader.hpp"

namespace canopy::config_loader {

using namespace config_syntax;

/// The units the tree being changed uses already.
void Loader::mark_existing_units() {
  for (const Staged& location : locations_) {
    if (!location.alive || !location.existing) continue;
    const LocationTraits& t = location.traits;
    for (std::size_t i = 0; i < node_.cores.size(); ++i) {
      if (std::find(t.pus.begin(), t.pus.end(), node_.cores[i].pu) != t.pus.end()) core_used_[i] = true;
    }
    for (std::size_t i = 0; i < node_.numa_nodes.size(); ++i) {
      if (location.kind == LocationKind::HostMemory && node_.numa_nodes[i].index == t.numa_node) numa_used_[i] = true;
    }
    for (std::size_t i = 0; i < node_.devices.size(); ++i) {
      if (!t.device.empty() && node_.devices[i].id == t.device) device_used_[i] = true;
    }
  }
}

/// The type's own traits over what binding found.
void apply_type(LocationTraits& traits, const LocType& type) {
  if (type.cores != 0 && type.kind != LocationKind::Cpu) traits.cores = type.cores;
  if (type.capacity != 0) traits.capacity = type.capacity;
  if (type.bandwidth != 0) traits.bandwidth = type.bandwidth;
}

bool Loader::bind(Staged& location) {
  bool bound = true;
  if (location.kind == LocationKind::HostMemory) bound = bind_memory(location);
  if (executes(location.kind) && location.kind != LocationKind::Cpu) bound = bind_device(location);
  if (location.kind == LocationKind::Cpu) bound = bind_cpu(location);
  if (bound) apply_type(location.traits, location.type);
  location.traits.optional = location.optional;
  return bound;
}

bool Loader::bind_memory(Staged& location) {
  for (std::size_t i = 0; i < node_.numa_nodes.size(); ++i) {
    const NumaInfo& numa = node_.numa_nodes[i];
    if (numa_used_[i] || (location.start && numa.index != *location.start)) continue;
    numa_used_[i] = true;
    location.traits.capacity = numa.capacity;
    location.traits.numa_node = numa.index;
    return true;
  }
  return false;
}

bool Loader::bind_device(Staged& location) {
  long long candidate = 0;
  for (std::size_t i = 0; i < node_.devices.size(); ++i) {
    const DiscoveredDevice& device = node_.devices[i];
    bool kind = location.type.any_accelerator ? is_device(device.kind) : device.kind == location.kind;
    if (!kind) continue;
    long long number = location.type.any_accelerator ? candidate++ : device.index;
    if (device_used_[i] || (location.start && number != *location.start)) continue;
    device_used_[i] = true;
    location.kind = device.kind;
    location.traits = device_leaf_traits(node_, device);
    return true;
  }
  return false;
}

bool Loader::bind_cpu(Staged& location) {
  std::vector<std::size_t> chosen;
  if (!location.pus.empty()) {
    for (unsigned pu : location.pus) {
      auto core = std::find_if(node_.cores.begin(), node_.cores.end(), [&](const CoreInfo& c) { return c.pu == pu; });
      std::size_t i = static_cast<std::size_t>(core - node_.cores.begin());
      if (core == node_.cores.end() || core_used_[i] || std::count(chosen.begin(), chosen.end(), i)) return false;
      chosen.push_back(i);
    }
  } else {
    std::size_t first = static_cast<std::size_t>(location.start.value_or(0));
    for (std::size_t i = first; i < node_.cores.size(); ++i) {
      if (location.cores_wanted != 0 && chosen.size() == static_cast<std::size_t>(location.cores_wanted)) break;
      if (core_used_[i] && location.start) return false;
      if (!core_used_[i]) chosen.push_back(i);
    }
    if (chosen.empty() ||
        (location.cores_wanted != 0 && chosen.size() < static_cast<std::size_t>(location.cores_wanted)))
      return false;
  }
  std::vector<CoreInfo> cores;
  for (std::size_t i : chosen) {
    core_used_[i] = true;
    cores.push_back(node_.cores[i]);
  }
  location.traits = cpu_leaf_traits(node_, cores);
  return true;
}

/// "a cuda device", "NUMA node 1", "4 cores from core 0": what binding looked for.
std::string Loader::need_of(const Staged& location) const {
  std::string from = location.start ? fmt::format(" {}", *location.start) : std::string();
  if (location.kind == LocationKind::HostMemory) return location.start ? "NUMA node" + from : "a NUMA node";
  if (location.kind == LocationKind::Cpu && !location.pus.empty()) {
    std::string pus;
    for (unsigned pu : location.pus) pus += fmt::format("{}{}", pus.empty() ? "" : ",", pu);
    return "the cores of PUs " + pus;
  }
  if (location.kind == LocationKind::Cpu) {
    std::string count = location.cores_wanted > 1 ? fmt::format("{} cores", location.cores_wanted) : "a core";
    return count + (location.start ? " from core" + from : std::string());
  }
  if (location.type.any_accelerator) return location.start ? "accelerator" + from : "an accelerator";
  return location.start ? fmt::format("{} device{}", name_of(location.kind), from)
                        : fmt::format("a {} device", name_of(location.kind));
}

std::string Loader::holders_of(const Staged& location) const {
  std::vector<std::string> names;
  for (const Staged& other : locations_) {
    if (&other == &location || !other.alive || other.kind != location.kind) continue;
    const LocationTraits& t = other.traits;
    bool holds = false;
    if (location.kind == LocationKind::Cpu)
      holds = location.pus.empty() ? !t.pus.empty()
                                   : std::any_of(location.pus.begin(), location.pus.end(), [&](unsigned pu) {
                                       return std::find(t.pus.begin(), t.pus.end(), pu) != t.pus.end();
                                     });
    else
      holds = is_device(location.kind) && !t.device.empty();
    if (holds) names.push_back("'" + other.name + "'");
  }
  if (names.empty()) return "";
  std::string list;
  for (std::size_t i = 0; i < names.size(); ++i)
    list += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
  return fmt::format("; held by {} {}", names.size() == 1 ? "location" : "locations", list);
}

/// Binds every living new location (CPU ones, or the others); leaves out the
/// optional ones the node cannot serve, with their subtrees.
void Loader::bind_all(bool cpus) {
  for (std::size_t i = 0; i < locations_.size(); ++i) {
    Staged& location = locations_[i];
    if (!location.alive || location.existing || (location.kind == LocationKind::Cpu) != cpus) continue;
    if (bind(location)) continue;
    if (!location.optional && lenient_) {
      bind_leniently(location);
      continue;
    }
    if (!location.optional)
      fail(Where{source_, location.line},
           fmt::format("location '{}' needs {}, which this node does not have free{} (discovered: {})", location.name,
                       need_of(location), holders_of(location), inventory_summary(node_)),
           "fewer such locations, one of them removed first, or 'optional' on its location line");
    kill(static_cast<int>(i));
  }
}

/// A location the node cannot give all it asks for: a CPU location takes the
/// cores that are free, anything else becomes an empty virtual location.
void Loader::bind_leniently(Staged& location) {
  const std::string need = need_of(location);
  if (location.kind == LocationKind::Cpu && location.pus.empty() && location.cores_wanted > 0 && !location.start) {
    const int wanted = location.cores_wanted;
    location.cores_wanted = 0;  // all that are left
    if (bind(location)) {
      warnings_.push_back(fmt::format("{}:{}: location '{}' asked for {} cores and this node has {} free: it has {}",
                                      source_, location.line, location.name, wanted, location.traits.cores,
                                      location.traits.cores));
      return;
    }
  }
  warnings_.push_back(fmt::format(
      "{}:{}: location '{}' needs {}, which this node does not have free (discovered: {}): it is an empty virtual "
      "location",
      source_, location.line, location.name, need, inventory_summary(node_)));
  location.kind = LocationKind::Virtual;
  location.traits = LocationTraits{};
}

/// Leaves out every location without a parent but the root of the largest
/// tree (the first declared among equals), with their subtrees.
void Loader::drop_unattached() {
  auto size_of = [&](int index) {
    int count = 0;
    std::vector<int> stack{index};
    while (!stack.empty()) {
      const int at = stack.back();
      stack.pop_back();
      ++count;
      stack.insert(stack.end(), locations_[at].children.begin(), locations_[at].children.end());
    }
    return count;
  };
  std::vector<std::pair<int, int>> roots;  // index, locations in its tree
  for (std::size_t i = 0; i < locations_.size(); ++i)
    if (locations_[i].alive && locations_[i].parent == -1)
      roots.emplace_back(static_cast<int>(i), size_of(static_cast<int>(i)));
  if (roots.size() < 2) return;
  int keep = roots.front().first, largest = roots.front().second;
  for (auto [index, count] : roots)
    if (count > largest) keep = index, largest = count;
  for (auto [index, count] : roots) {
    if (index == keep || locations_[index].existing) continue;
    warnings_.push_back(fmt::format("{}:{}: location '{}' is attached to no parent: left out{} (the root is '{}')",
                                    source_, locations_[index].line, locations_[index].name,
                                    count > 1 ? fmt::format(" with the {} below it", count - 1) : std::string(),
                                    locations_[keep].name));
    kill(index);
  }
}

int Loader::root() const {
  std::vector<int> roots;
  for (std::size_t i = 0; i < locations_.size(); ++i) {
    if (locations_[i].alive && locations_[i].parent == -1) roots.push_back(static_cast<int>(i));
  }
  if (roots.empty())
    fail(Where{source_, last_line_}, "no location is left to be the root",
         "at least one location line (and not all of them optional and absent)");
  if (roots.size() == 1) return roots.front();
  std::string names;
  int line = 0;
  for (int index : roots) {
    const Staged& location = locations_[index];
    std::string where = location.line == 0 ? "in the hierarchy" : fmt::format("line {}", location.line);
    names += fmt::format("{}'{}' ({})", names.empty() ? "" : ", ", location.name, where);
    line = std::max(line, location.line);
  }
  fail(Where{source_, line == 0 ? last_line_ : line}, "several locations have no parent: " + names,
       "exactly one root; attach the others with hierarchy lines");
}

Hierarchy Loader::build(int root) const {
  Hierarchy tree;
  std::vector<int> stack{root};
  while (!stack.empty()) {
    const Staged& location = locations_[stack.back()];
    stack.pop_back();
    std::string_view parent = location.parent == -1 ? std::string_view() : locations_[location.parent].name;
    tree.add(location.name, location.kind, location.traits, parent);
    stack.insert(stack.end(), location.children.rbegin(), location.children.rend());
  }
  return tree;
}

Hierarchy Loader::finish() {
  mark_existing_units();
  if (lenient_) drop_unattached();
  bind_all(false);
  bind_all(true);
  return build(root());
}

}  // namespace canopy::config_loader
