// Discovery: hwloc's view of the node turned into a NodeInventory, and the
// default hierarchy built from an inventory. hwloc is used only here.
#include "discovery.hpp"

#include <dlfcn.h>
#include <hwloc.h>
#include <sched.h>

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>

#include <canopy/backends/discover.hpp>
#include <canopy/backends/discovery_cache.hpp>
#include <canopy/ir/error.hpp>
#include <canopy/ir/settings.hpp>
#include <canopy/jit/checked_file.hpp>
#include <canopy/jit/disk_cache.hpp>
#include <canopy/jit/hash.hpp>
#include "internal/config_syntax.hpp"

namespace canopy {

namespace {

// ------------------------------------------------------------------ hwloc

/// Owns an hwloc topology.
struct Topology {
  hwloc_topology_t handle = nullptr;
  Topology() {
    if (hwloc_topology_init(&handle) != 0) throw Error("hwloc could not initialise a topology");
  }
  ~Topology() { hwloc_topology_destroy(handle); }
  Topology(const Topology&) = delete;
  Topology& operator=(const Topology&) = delete;
};

/// The cores, or the PUs when the topology has no cores.
hwloc_obj_type_t core_type(hwloc_topology_t topology) {
  return hwloc_get_nbobjs_by_type(topology, HWLOC_OBJ_CORE) > 0 ? HWLOC_OBJ_CORE : HWLOC_OBJ_PU;
}

/// hwloc logical index of the NUMA node whose CPUs include `cpuset`'s first, or -1.
int numa_of(hwloc_topology_t topology, hwloc_const_cpuset_t cpuset) {
  int numa_count = hwloc_get_nbobjs_by_type(topology, HWLOC_OBJ_NUMANODE);
  for (int n = 0; n < numa_count; ++n) {
    hwloc_obj_t numa = hwloc_get_obj_by_type(topology, HWLOC_OBJ_NUMANODE, static_cast<unsigned>(n));
    if (numa->cpuset != nullptr && hwloc_bitmap_intersects(numa->cpuset, cpuset))
      return static_cast<int>(numa->logical_index);
  }
  return -1;
}

CoreInfo core_info(hwloc_topology_t topology, hwloc_obj_t core) {
  CoreInfo info;
  hwloc_obj_t pu =
      core->type == HWLOC_OBJ_PU ? core : hwloc_get_obj_inside_cpuset_by_type(topology, core->cpuset, HWLOC_OBJ_PU, 0);
  info.pu = pu != nullptr ? pu->os_index : core->os_index;
  info.numa_node = numa_of(topology, core->cpuset);
  hwloc_obj_t l3 = hwloc_get_ancestor_obj_by_type(topology, HWLOC_OBJ_L3CACHE, core);
  info.l3 = l3 != nullptr ? static_cast<int>(l3->logical_index) : -1;
  return info;
}

/// hwloc's CPUModel of the first package, else of the root, else empty.
std::string cpu_model(hwloc_topology_t topology) {
  for (hwloc_obj_t obj : {hwloc_get_obj_by_type(topology, HWLOC_OBJ_PACKAGE, 0), hwloc_get_root_obj(topology)}) {
    const char* model = obj != nullptr ? hwloc_obj_get_info_by_name(obj, "CPUModel") : nullptr;
    if (model != nullptr) return model;
  }
  return {};
}

/// The data and unified caches above `core`, innermost first.
std::vector<CacheLevel> caches_of(hwloc_topology_t topology, hwloc_obj_t core) {
  std::vector<CacheLevel> caches;
  for (hwloc_obj_t obj = core; obj != nullptr; obj = obj->parent) {
    if (!hwloc_obj_type_is_dcache(obj->type) || obj->attr == nullptr) continue;
    CacheLevel cache;
    cache.level = static_cast<int>(obj->attr->cache.depth);
    cache.bytes = static_cast<std::int64_t>(obj->attr->cache.size);
    cache.line_bytes = static_cast<int>(obj->attr->cache.linesize);
    cache.cores_sharing =
        std::max(1, hwloc_get_nbobjs_inside_cpuset_by_type(topology, obj->cpuset, core_type(topology)));
    caches.push_back(cache);
  }
  return caches;
}

NodeInventory inventory_of(hwloc_topology_t topology) {
  NodeInventory node;
  hwloc_obj_type_t type = core_type(topology);
  int core_count = hwloc_get_nbobjs_by_type(topology, type);
  for (int c = 0; c < core_count; ++c)
    node.cores.push_back(core_info(topology, hwloc_get_obj_by_type(topology, type, static_cast<unsigned>(c))));
  int numa_count = hwloc_get_nbobjs_by_type(topology, HWLOC_OBJ_NUMANODE);
  for (int n = 0; n < numa_count; ++n) {
    hwloc_obj_t numa = hwloc_get_obj_by_type(topology, HWLOC_OBJ_NUMANODE, static_cast<unsigned>(n));
    node.numa_nodes.push_back({static_cast<int>(numa->logical_index),
                               static_cast<std::int64_t>(numa->attr->numanode.local_memory),
                               static_cast<int>(numa->os_index)});
  }
  node.cpu_model = cpu_model(topology);
  if (core_count > 0) node.caches = caches_of(topology, hwloc_get_obj_by_type(topology, type, 0));
  return node;
}

/// The backends that have not reported devices; their issues fill this in.
std::vector<AbsentBackend> absent_backends() {
  const char* reason = "this build of Canopy has no {} backend yet; its devices are not used";
  return {{"opencl", fmt::format(fmt::runtime(reason), "OpenCL")},
          {"cuda", fmt::format(fmt::runtime(reason), "CUDA")},
          {"level_zero", fmt::format(fmt::runtime(reason), "Level Zero")}};
}

/// The "flags" line of /proc/cpuinfo, or empty where there is none.
std::string cpuinfo_flags() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("flags", 0) == 0 || line.rfind("Features", 0) == 0) return line.substr(line.find(':') + 1);
  }
  return {};
}

/// This CPU's vector width: from /proc/cpuinfo, else from cpuid.
int host_vector_width() {
  if (int width = vector_width_from_flags(cpuinfo_flags()); width != 0) return width;
#if defined(__x86_64__) || defined(__i386__)
  if (__builtin_cpu_supports("avx512f")) return 64;
  if (__builtin_cpu_supports("avx2") || __builtin_cpu_supports("avx")) return 32;
  if (__builtin_cpu_supports("sse2")) return 16;
#endif
  return 0;
}

/// A made-up or exported topology, loaded; `what` names it in errors.
NodeInventory load_inventory(Topology& topology, const std::string& what) {
  if (hwloc_topology_load(topology.handle) != 0) throw Error(fmt::format("hwloc could not load {}", what));
  NodeInventory node = inventory_of(topology.handle);
  node.source = "hwloc " + what;
  return node;
}

}  // namespace

int vector_width_from_flags(std::string_view flags) {
  auto has = [&](std::string_view flag) {
    for (std::size_t at = flags.find(flag); at != std::string_view::npos; at = flags.find(flag, at + 1)) {
      bool starts = at == 0 || std::isspace(static_cast<unsigned char>(flags[at - 1]));
      std::size_t end = at + flag.size();
      if (starts && (end == flags.size() || std::isspace(static_cast<unsigned char>(flags[end])))) return true;
    }
    return false;
  };
  if (has("avx512f")) return 64;
  if (has("avx2") || has("avx")) return 32;
  for (std::string_view sse : {"sse", "sse2", "sse3", "ssse3", "sse4_1", "sse4_2", "asimd", "neon"}) {
    if (has(sse)) return 16;
  }
  return 0;
}

NodeInventory discover_node() {
  Topology topology;
  if (hwloc_topology_load(topology.handle) != 0) throw Error("hwloc could not load this node's topology");
  NodeInventory node = inventory_of(topology.handle);
  node.vector_width = host_vector_width();
  node.absent = absent_backends();
  node.source = "hwloc";
  if (node.numa_nodes.empty()) node.numa_nodes.push_back({0, 0, 0});
  return node;
}

namespace {

// The hwloc part of an inventory (cores, NUMA nodes, CPU model, vector
// width, caches) as lines of text, and back; nullopt for text that is not
// such an inventory.
std::string node_text(const NodeInventory& node) {
  std::string text = "canopy node 2\nvector " + std::to_string(node.vector_width) + "\n";
  for (const CoreInfo& c : node.cores) text += fmt::format("core {} {} {}\n", c.pu, c.numa_node, c.l3);
  for (const NumaInfo& n : node.numa_nodes) text += fmt::format("numa {} {} {}\n", n.index, n.capacity, n.os_index);
  for (const CacheLevel& c : node.caches)
    text += fmt::format("cache {} {} {} {}\n", c.level, c.bytes, c.line_bytes, c.cores_sharing);
  return text + "model " + node.cpu_model + "\n";
}

std::optional<NodeInventory> node_of_text(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  if (!std::getline(in, line) || line != "canopy node 2") return std::nullopt;
  NodeInventory node;
  bool model = false;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string kind;
    fields >> kind;
    if (kind == "model") {
      node.cpu_model = line.size() > 6 ? line.substr(6) : std::string();
      model = true;
      continue;
    }
    bool read = false;
    if (kind == "vector") {
      read = static_cast<bool>(fields >> node.vector_width);
    } else if (kind == "core") {
      CoreInfo c;
      read = static_cast<bool>(fields >> c.pu >> c.numa_node >> c.l3);
      node.cores.push_back(c);
    } else if (kind == "numa") {
      NumaInfo n;
      read = static_cast<bool>(fields >> n.index >> n.capacity >> n.os_index);
      node.numa_nodes.push_back(n);
    } else if (kind == "cache") {
      CacheLevel c;
      read = static_cast<bool>(fields >> c.level >> c.bytes >> c.line_bytes >> c.cores_sharing);
      node.caches.push_back(c);
    }
    if (!read) return std::nullopt;
  }
  if (!model || node.cores.empty() || node.numa_nodes.empty()) return std::nullopt;
  return node;
}

std::string first_line_of(const char* path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

}  // namespace

void refresh_capacities(NodeInventory& node, const std::string& sys) {
  // What hwloc reads too: "Node 0 MemTotal:       24684084 kB".
  for (NumaInfo& numa : node.numa_nodes) {
    std::ifstream meminfo(sys + "/devices/system/node/node" + std::to_string(numa.os_index) + "/meminfo");
    for (std::string line; std::getline(meminfo, line);) {
      const std::size_t at = line.find("MemTotal:");
      if (at == std::string::npos) continue;
      const long long kib = std::strtoll(line.c_str() + at + 9, nullptr, 10);
      if (kib > 0) numa.capacity = static_cast<std::int64_t>(kib) * 1024;
      break;
    }
  }
}

NodeInventory discover_node_cached(const std::string& cache_dir, const std::string& discovery) {
  if (cache_dir.empty() || cache_dir == "off") return discover_node();
  std::optional<jit::DiskCache> cache;
  std::string key;
  try {
    cache.emplace(cache_dir);
    // Device discovery's key (the boot, the affinity, the build, ...) and the
    // CPUs and NUMA nodes online, which hot-plugging changes without a boot.
    key = "node-" + jit::hash_hex((discovery.empty() ? backends::discovery_key() : discovery) + "\ncpus " +
                                  first_line_of("/sys/devices/system/cpu/online") + "\nnodes " +
                                  first_line_of("/sys/devices/system/node/online"));
  } catch (const std::exception&) {
    return discover_node();  // a bad CANOPY_CACHE_SHARED: the runtime says so elsewhere
  }
  if (auto text = cache->get(key)) {
    if (auto node = node_of_text(*text)) {
      node->absent = absent_backends();
      node->source = "hwloc";
      refresh_capacities(*node);
      return *node;
    }
  }
  NodeInventory node = discover_node();
  cache->put(key, node_text(node));
  return node;
}

std::vector<unsigned> thread_affinity() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return {};
  std::vector<unsigned> pus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
    if (CPU_ISSET(cpu, &set)) pus.push_back(static_cast<unsigned>(cpu));
  return pus;
}

std::vector<unsigned> openmp_places() {
  // Looked up, not linked: the runtime needs no OpenMP, and a program that
  // loads one (libgomp, libomp) offers these names to the whole process.
  using Count = int (*)();
  using PlaceCount = int (*)(int);
  using PlaceIds = void (*)(int, int*);
  const auto proc_bind = reinterpret_cast<Count>(dlsym(RTLD_DEFAULT, "omp_get_proc_bind"));
  const auto num_places = reinterpret_cast<Count>(dlsym(RTLD_DEFAULT, "omp_get_num_places"));
  const auto place_num_procs = reinterpret_cast<PlaceCount>(dlsym(RTLD_DEFAULT, "omp_get_place_num_procs"));
  const auto place_proc_ids = reinterpret_cast<PlaceIds>(dlsym(RTLD_DEFAULT, "omp_get_place_proc_ids"));
  if (!proc_bind || !num_places || !place_num_procs || !place_proc_ids) return {};
  if (proc_bind() == 0) return {};  // omp_proc_bind_false: no thread was bound
  std::vector<unsigned> pus;
  for (int place = 0, places = num_places(); place < places; ++place) {
    std::vector<int> ids(static_cast<std::size_t>(std::max(0, place_num_procs(place))));
    if (!ids.empty()) place_proc_ids(place, ids.data());
    for (int id : ids)
      if (id >= 0) pus.push_back(static_cast<unsigned>(id));
  }
  std::sort(pus.begin(), pus.end());
  pus.erase(std::unique(pus.begin(), pus.end()), pus.end());
  return pus;
}

std::vector<unsigned> process_affinity() {
  std::vector<unsigned> pus = thread_affinity();
  if (pus.empty()) return pus;
  const std::vector<unsigned> places = openmp_places();
  pus.insert(pus.end(), places.begin(), places.end());
  std::sort(pus.begin(), pus.end());
  pus.erase(std::unique(pus.begin(), pus.end()), pus.end());
  return pus;
}

std::size_t keep_cores(NodeInventory& node, const std::vector<unsigned>& pus) {
  return std::erase_if(node.cores,
                       [&](const CoreInfo& core) { return std::find(pus.begin(), pus.end(), core.pu) == pus.end(); });
}

namespace {

/// The NUMA node (logical index) nearest the PCI device `bus_id`, -1 when unknown.
int numa_node_of_pci(const std::string& bus_id) {
  if (bus_id.empty()) return -1;
  Topology topology;
  hwloc_topology_set_io_types_filter(topology.handle, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
  if (hwloc_topology_load(topology.handle) != 0) return -1;
  hwloc_obj_t pci = hwloc_get_pcidev_by_busidstring(topology.handle, bus_id.c_str());
  hwloc_obj_t ancestor = pci ? hwloc_get_non_io_ancestor_obj(topology.handle, pci) : nullptr;
  if (!ancestor) return -1;
  hwloc_obj_t numa = nullptr;
  if (ancestor->memory_arity > 0) numa = ancestor->memory_first_child;
  for (hwloc_obj_t up = ancestor; !numa && up; up = up->parent)
    if (up->memory_arity > 0) numa = up->memory_first_child;
  return numa ? static_cast<int>(numa->logical_index) : -1;
}

LocationKind kind_of_backend(const std::string& backend) {
  if (backend == "cuda") return LocationKind::Cuda;
  if (backend == "level_zero") return LocationKind::LevelZero;
  return LocationKind::OpenCL;
}

}  // namespace

std::string normalized_pci_bus_id(std::string_view bus_id) {
  // domain:bus:device.function, the domain optional (0000 when absent).
  unsigned domain = 0, bus = 0, device = 0, function = 0;
  const std::string text(bus_id);
  char tail = 0;
  if (std::sscanf(text.c_str(), "%x:%x:%x.%x%c", &domain, &bus, &device, &function, &tail) != 4) {
    domain = 0;
    if (std::sscanf(text.c_str(), "%x:%x.%x%c", &bus, &device, &function, &tail) != 3) return {};
  }
  return fmt::format("{:04x}:{:02x}:{:02x}.{:x}", domain, bus, device, function);
}

std::vector<bool> duplicates(const std::vector<backends::DeviceInfo>& found,
                             const std::vector<backends::DeviceInfo>& known) {
  std::vector<bool> result;
  for (const auto& device : found) {
    const auto id = normalized_pci_bus_id(device.pci_bus_id);
    result.push_back(!id.empty() && std::any_of(known.begin(), known.end(), [&](const backends::DeviceInfo& k) {
      return normalized_pci_bus_id(k.pci_bus_id) == id;
    }));
  }
  return result;
}

backends::BackendDevices without_duplicates(backends::BackendDevices found,
                                            const std::vector<backends::DeviceInfo>& known) {
  std::vector<backends::DeviceInfo> infos;
  for (const auto& device : found.devices) infos.push_back(device->info());
  const auto duplicate = duplicates(infos, known);
  std::vector<std::shared_ptr<backends::Device>> kept;
  for (std::size_t i = 0; i < found.devices.size(); ++i)
    if (!duplicate[i]) kept.push_back(found.devices[i]);
  found.devices = std::move(kept);
  return found;
}

void add_backend_devices(NodeInventory& node, const backends::BackendDevices& found) {
  std::erase_if(node.absent, [&](const AbsentBackend& a) { return a.backend == found.backend; });
  if (found.devices.empty()) {
    node.absent.push_back({found.backend, found.absent_reason.empty() ? "no device found" : found.absent_reason});
    return;
  }
  int index = 0;
  for (const auto& device : found.devices) {
    const auto& info = device->info();
    DiscoveredDevice d;
    d.kind = kind_of_backend(found.backend);
    d.index = index++;
    d.id = info.id;
    d.name = info.name;
    d.pci_bus_id = normalized_pci_bus_id(info.pci_bus_id);
    d.numa_node = numa_node_of_pci(d.pci_bus_id);
    d.on_host_cores = info.on_host_cores;
    d.emulated = info.emulated;
    d.traits.cores = info.compute_units;
    d.traits.capacity = info.global_memory;
    d.traits.vector_width = info.preferred_vector_width;
    d.traits.model = info.name;
    node.devices.push_back(std::move(d));
  }
}

NodeInventory discover_node_synthetic(std::string_view description) {
  Topology topology;
  std::string text(description);
  if (hwloc_topology_set_synthetic(topology.handle, text.c_str()) != 0)
    throw Error(
        fmt::format("hwloc rejects the synthetic topology \"{}\"; expected a description such as "
                    "\"pack:2 numa:2 core:4 pu:1\"",
                    text));
  return load_inventory(topology, "synthetic: " + text);
}

NodeInventory discover_node_xml(const std::string& path) {
  Topology topology;
  if (hwloc_topology_set_xml(topology.handle, path.c_str()) != 0)
    throw Error(
        fmt::format("hwloc cannot read the XML topology '{}'; expected a file written by `lstopo FILE.xml`", path));
  return load_inventory(topology, "XML: " + path);
}

// -------------------------------------------------------- device selection

namespace {

using config_syntax::lowercase;
using config_syntax::trim;

/// The non-empty, trimmed, lower-case words of a comma-separated list.
std::vector<std::string> words_of(std::string_view list) {
  std::vector<std::string> words;
  while (!list.empty()) {
    std::size_t comma = list.find(',');
    std::string_view word = trim(list.substr(0, comma));
    if (!word.empty()) words.push_back(lowercase(word));
    list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
  }
  return words;
}

bool is_backend_word(std::string_view word) { return word == "opencl" || word == "cuda" || word == "level_zero"; }

/// True for the words a selection may hold: all, cpu, gpu, a backend, or BACKEND:N.
bool is_selection_word(std::string_view word) {
  if (word == "all" || word == "cpu" || word == "gpu" || is_backend_word(word)) return true;
  std::size_t colon = word.find(':');
  if (colon == std::string_view::npos || !is_backend_word(word.substr(0, colon))) return false;
  std::string_view number = word.substr(colon + 1);
  return !number.empty() && number.size() <= 9 && number.find_first_not_of("0123456789") == std::string_view::npos;
}

constexpr const char* kSelectionWords =
    "a comma-separated list of all, cpu, gpu, opencl, cuda, level_zero, or a device id such as opencl:0";

/// Does `word` select `device`? "all" and "gpu" leave out devices that
/// compute on the host's cores (they would compete with the CPU leaves).
bool selects(std::string_view word, const DiscoveredDevice& device) {
  if (word == "all" || word == "gpu") return !device.on_host_cores;
  return word == name_of(device.kind) || word == device.id;
}

}  // namespace

CpuGrain parse_cpu_grain(std::string_view text) {
  std::string word = lowercase(trim(text));
  if (word == "numa") return CpuGrain::Numa;
  if (word == "l3") return CpuGrain::L3;
  if (word == "core") return CpuGrain::Core;
  bad_setting("CANOPY_CPU_LEAVES", text, "numa, l3 or core");
}

DiscoveryOptions DiscoveryOptions::from_environment() {
  DiscoveryOptions options;
  const Settings& s = settings();
  if (!s.cpu_leaves.empty()) options.cpu_grain = parse_cpu_grain(s.cpu_leaves);
  if (!s.devices.empty()) {
    for (const std::string& word : words_of(s.devices))
      if (!is_selection_word(word))
        bad_setting("CANOPY_DEVICES", s.devices, fmt::format("{} ('{}' is none of them)", kSelectionWords, word));
    options.devices = s.devices;
  }
  return options;
}

std::vector<backends::BackendDevices> discover_selected_backends(const std::string& key) {
  const std::string& selection = settings().config.empty() ? settings().devices : std::string();
  auto picks = [&](std::string_view backend) {
    for (const std::string& word : words_of(selection))
      if (word == "all" || word == "gpu" || word == backend || word.rfind(std::string(backend) + ":", 0) == 0)
        return true;
    return false;
  };
  auto wanted = [&](std::string_view backend) {
    return selection.empty() || picks(backend) || (backend != "opencl" && picks("opencl"));
  };
  return backends::discover_devices_cached(wanted, "not started: CANOPY_DEVICES=" + selection + " does not ask for it",
                                           jit::cache_directory(), key);
}

NodeInventory select_devices(const NodeInventory& node, std::string_view devices) {
  std::vector<std::string> words = words_of(devices);
  if (words.empty()) words.push_back("all");
  NodeInventory selected = node;
  selected.devices.clear();
  bool keep_cores = false;
  for (const std::string& word : words) {
    if (!is_selection_word(word))
      throw Error(fmt::format("device selection \"{}\": \"{}\" is not a device word; expected {}", devices, word,
                              kSelectionWords));
    bool matched = word == "all" || (word == "cpu" && !node.cores.empty());
    keep_cores = keep_cores || word == "all" || word == "cpu";
    for (const DiscoveredDevice& device : node.devices) matched = selects(word, device) || matched;
    if (!matched)
      throw Error(
          fmt::format("device selection \"{}\": \"{}\" matches nothing on this node ({}); expected cpu, all, "
                      "or a backend or device id it has",
                      devices, word, inventory_summary(node)));
  }
  for (const DiscoveredDevice& device : node.devices) {
    auto chosen = [&](const std::string& word) { return selects(word, device); };
    if (std::any_of(words.begin(), words.end(), chosen)) selected.devices.push_back(device);
  }
  if (!keep_cores) selected.cores.clear();
  return selected;
}

// ------------------------------------------------------- default hierarchy

namespace {

/// The position in node.numa_nodes of NUMA node `index`, or 0 when it is unknown.
std::size_t numa_slot(const NodeInventory& node, int index) {
  for (std::size_t slot = 0; slot < node.numa_nodes.size(); ++slot) {
    if (node.numa_nodes[slot].index == index) return slot;
  }
  return 0;
}

/// The cores of NUMA slot `slot`, cut into CPU leaves at the grain asked for.
std::vector<std::vector<CoreInfo>> cpu_groups(const NodeInventory& node, std::size_t slot, CpuGrain grain) {
  std::vector<std::vector<CoreInfo>> groups;
  for (const CoreInfo& core : node.cores) {
    if (numa_slot(node, core.numa_node) != slot) continue;
    bool same =
        !groups.empty() && (grain == CpuGrain::Numa || (grain == CpuGrain::L3 && groups.back().back().l3 == core.l3));
    if (!same) groups.emplace_back();
    groups.back().push_back(core);
  }
  return groups;
}

/// "opencl:0" -> "opencl0"; any other character a name cannot hold becomes '_'.
std::string device_location_name(std::string_view id) {
  std::string name;
  for (char c : id) {
    if (c == ':') continue;
    name += is_valid_location_name(std::string_view(&c, 1)) ? c : '_';
  }
  return name.empty() ? "device" : name.substr(0, 128);
}

/// Adds numaN, its CPU leaves and its devices below "node".
void add_numa_subtree(Hierarchy& tree, const NodeInventory& node, std::size_t slot, CpuGrain grain, int& next_cpu) {
  const NumaInfo& numa = node.numa_nodes[slot];
  std::string numa_name = fmt::format("numa{}", numa.index);
  LocationTraits memory;
  memory.capacity = numa.capacity;
  memory.numa_node = numa.index;
  tree.add(numa_name, LocationKind::HostMemory, memory, "node");
  for (const auto& cores : cpu_groups(node, slot, grain))
    tree.add(fmt::format("cpu{}", next_cpu++), LocationKind::Cpu, cpu_leaf_traits(node, cores), numa_name);
  for (const DiscoveredDevice& device : node.devices) {
    if (numa_slot(node, device.numa_node) == slot)
      tree.add(device_location_name(device.id), device.kind, device_leaf_traits(node, device), numa_name);
  }
}

}  // namespace

int nearest_numa_node(const NodeInventory& node, int numa_node) {
  return node.numa_nodes.empty() ? -1 : node.numa_nodes[numa_slot(node, numa_node)].index;
}

LocationTraits cpu_leaf_traits(const NodeInventory& node, const std::vector<CoreInfo>& cores) {
  LocationTraits traits;
  traits.cores = static_cast<int>(cores.size());
  for (const CoreInfo& core : cores) traits.pus.push_back(core.pu);
  traits.vector_width = node.vector_width;
  traits.model = node.cpu_model;
  auto other_numa = [&](const CoreInfo& core) {
    return nearest_numa_node(node, core.numa_node) != nearest_numa_node(node, cores.front().numa_node);
  };
  bool shared = !cores.empty() && std::none_of(cores.begin(), cores.end(), other_numa);
  traits.numa_node = shared ? nearest_numa_node(node, cores.front().numa_node) : -1;
  return traits;
}

LocationTraits device_leaf_traits(const NodeInventory& node, const DiscoveredDevice& device) {
  LocationTraits traits = device.traits;
  traits.device = device.id;
  traits.numa_node = nearest_numa_node(node, device.numa_node);
  if (traits.model.empty()) traits.model = device.name;
  return traits;
}

Hierarchy default_hierarchy(const NodeInventory& discovered, const DiscoveryOptions& options) {
  NodeInventory node = select_devices(discovered, options.devices);
  if (node.numa_nodes.empty()) node.numa_nodes.push_back({0, 0, 0});
  if (node.cores.empty() && node.devices.empty())
    throw Error(fmt::format("device selection \"{}\" leaves nothing to run regions on ({}); expected cpu or a device",
                            options.devices, inventory_summary(discovered)));
  Hierarchy tree;
  tree.add("node", LocationKind::Virtual, {}, "");
  int next_cpu = 0;
  for (std::size_t slot = 0; slot < node.numa_nodes.size(); ++slot)
    add_numa_subtree(tree, node, slot, options.cpu_grain, next_cpu);
  return tree;
}

std::string inventory_summary(const NodeInventory& node) {
  std::string text = fmt::format("{} cores on {} NUMA nodes; devices: ", node.cores.size(), node.numa_nodes.size());
  for (const DiscoveredDevice& device : node.devices)
    text += fmt::format("{}{} ({})", &device == node.devices.data() ? "" : ", ", device.id, device.name);
  if (node.devices.empty()) text += "none";
  for (const AbsentBackend& absent : node.absent) text += fmt::format("; {}: {}", absent.backend, absent.reason);
  return text;
}

std::string describe_inventory(const NodeInventory& node) {
  std::string text = fmt::format("node ({}): {} cores on {} NUMA nodes, CPU \"{}\", {}-byte vectors\n", node.source,
                                 node.cores.size(), node.numa_nodes.size(), node.cpu_model, node.vector_width);
  for (const NumaInfo& numa : node.numa_nodes)
    text += fmt::format("  numa{}: {} MiB\n", numa.index, numa.capacity >> 20);
  for (const DiscoveredDevice& device : node.devices) {
    text += fmt::format("  device {} ({}): {}", device.id, name_of(device.kind), device.name);
    text +=
        device.numa_node >= 0 ? fmt::format(", NUMA node {}", device.numa_node) : std::string(", NUMA node unknown");
    if (device.on_host_cores)
      text += fmt::format("; computes on the host's cores, so used only when named (CANOPY_DEVICES=cpu,{})", device.id);
    if (device.emulated) text += "; emulated: a test device of Canopy's (tests/emulate/) run on the host, not a GPU";
    text += "\n";
  }
  for (const AbsentBackend& absent : node.absent) text += fmt::format("  {}: {}\n", absent.backend, absent.reason);
  return text;
}

std::ostream& operator<<(std::ostream& out, const NodeInventory& node) { return out << describe_inventory(node); }

}  // namespace canopy
