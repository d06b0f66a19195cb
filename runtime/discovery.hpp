// Discovery: what this node has (cores, NUMA nodes, caches, devices) and the
// default location hierarchy built from it. The inventory is plain data so
// that tests can build one from hwloc's synthetic or XML topologies, or by
// hand, and so that a configuration file can be bound against it.
//
//   NodeInventory node = discover_node();
//   Hierarchy tree = default_hierarchy(node, DiscoveryOptions::from_environment());
//
// The default tree: a root "node" (virtual), a host-memory location per NUMA
// node ("numa0", ...), CPU leaves below each NUMA node (one per NUMA node, L3
// domain or core: CANOPY_CPU_LEAVES), and every device below the NUMA node
// nearest to it, named by its id without the ':' ("opencl0").
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include <canopy/backends/device.hpp>

#include "hierarchy.hpp"

namespace canopy {

/// One core of the node; a CPU leaf runs one thread per core, on its first PU.
struct CoreInfo {
  unsigned pu = 0;     ///< hwloc OS index of the core's first processing unit
  int numa_node = -1;  ///< hwloc logical index of its NUMA node, -1 unknown
  int l3 = -1;         ///< hwloc logical index of its L3 cache, -1 when there is none
  bool operator==(const CoreInfo&) const = default;
};

/// One NUMA node (a host memory).
struct NumaInfo {
  int index = 0;              ///< hwloc logical index
  std::int64_t capacity = 0;  ///< bytes of local memory
  int os_index = 0;           ///< the operating system's number for it (what mbind and numactl take)
  bool operator==(const NumaInfo&) const = default;
};

/// A device a backend found. The OpenCL, CUDA and Level Zero backends fill
/// these in; the hierarchy and the configuration loader bind locations to them.
struct DiscoveredDevice {
  LocationKind kind = LocationKind::OpenCL;  ///< the backend (a device kind)
  int index = 0;                             ///< its number within that backend
  std::string id;                            ///< "opencl:0": backend name, ':', index
  std::string name;                          ///< what the driver calls it
  int numa_node = -1;                        ///< the nearest NUMA node (logical index), -1 unknown
  LocationTraits traits;                     ///< compute units, memory, vector width, as known
  std::string pci_bus_id;                    ///< normalized, empty when not on PCI
  /// It computes on the host's cores (an OpenCL CPU device): "all" leaves it
  /// out when the node has CPU cores; name its backend or id to use it.
  bool on_host_cores = false;
  /// A test device of Canopy's emulated drivers (backends::DeviceInfo::emulated).
  bool emulated = false;
  bool operator==(const DiscoveredDevice&) const = default;
};

/// A backend that found nothing, and why ("no OpenCL ICD loader: ...").
struct AbsentBackend {
  std::string backend;  ///< "opencl", "cuda", "level_zero"
  std::string reason;   ///< a sentence a user can act on
  bool operator==(const AbsentBackend&) const = default;
};

/// One level of the data caches a core sees, from hwloc (data and unified
/// caches; instruction caches are left out). The machine model
/// (machine_model.hpp) reads cache sizes and the line size from these.
struct CacheLevel {
  int level = 0;           ///< 1 for L1, 2 for L2, ...
  std::int64_t bytes = 0;  ///< size of one cache of this level
  int line_bytes = 0;      ///< its line size, 0 when hwloc does not say
  int cores_sharing = 0;   ///< cores below one cache of this level (1: private)
  bool operator==(const CacheLevel&) const = default;
};

/// What this node has.
struct NodeInventory {
  std::vector<CoreInfo> cores;            ///< in hwloc's logical order
  std::vector<NumaInfo> numa_nodes;       ///< in hwloc's logical order; at least one after discovery
  std::string cpu_model;                  ///< hwloc's CPUModel, else empty
  int vector_width = 0;                   ///< bytes: 64 (AVX-512), 32 (AVX2), 16 (SSE), 0 unknown
  std::vector<DiscoveredDevice> devices;  ///< accelerators, in backend order
  std::vector<AbsentBackend> absent;      ///< backends that found nothing, with the reason
  std::string source;                     ///< "hwloc", "hwloc synthetic: ...", "hwloc XML: PATH"
  /// The first core's data caches, L1 first; empty when hwloc shows none.
  std::vector<CacheLevel> caches;
  bool operator==(const NodeInventory&) const = default;
};

/// This machine, from hwloc. Throws canopy::Error when hwloc cannot load the topology.
NodeInventory discover_node();

/// discover_node() remembered in the cache folder `cache_dir` ("off" or
/// empty: hwloc every time) as the file node-<key>, the key being device
/// discovery's (backends/discovery_cache.hpp: the boot, the thread's affinity,
/// Canopy's build, ...) with the CPUs and NUMA nodes online. A later process
/// with the same key reads the file and never starts hwloc, whose plugins
/// (XML, OpenCL, X11, PCI) and scan of sysfs cost about 2 ms and 1.5 MB.
/// Throws as discover_node() does when there is no usable file. `key` is
/// backends::discovery_key(), computed here when empty.
NodeInventory discover_node_cached(const std::string& cache_dir, const std::string& key = {});

/// Reads each NUMA node's memory size again from `sys`
/// (devices/system/node/node<os_index>/meminfo, as hwloc does), keeping the
/// old value where it cannot. discover_node_cached() calls it on what it
/// reads from a file: a virtual machine's memory grows and shrinks without
/// a boot (memory hot-plug), and a remembered size refused arrays the node
/// could hold (14938 MiB remembered, 24105 MiB there).
void refresh_capacities(NodeInventory& node, const std::string& sys = "/sys");

/// The processing units (OS indexes) the calling thread may run on: its
/// affinity mask, as taskset, numactl --physcpubind, mpirun's or a batch
/// system's binding left it. Empty when it cannot be read.
std::vector<unsigned> thread_affinity();

/// The processing units of the places of the OpenMP runtime loaded in this
/// process (libgomp, libomp), when it binds threads (OMP_PROC_BIND,
/// OMP_PLACES); empty when none is loaded or it binds none. Such a runtime
/// binds the program's initial thread to the first place as it starts, so
/// that thread's mask no longer says what the process was given; the places
/// still do (they are made from the mask the process started with).
std::vector<unsigned> openmp_places();

/// The processing units a Runtime made on the calling thread may use: its
/// affinity mask (thread_affinity) with the OpenMP places (openmp_places)
/// added. Empty when the mask cannot be read.
std::vector<unsigned> process_affinity();

/// Keeps the cores of `node` whose processing unit is one of `pus`; returns
/// how many it removed.
std::size_t keep_cores(NodeInventory& node, const std::vector<unsigned>& pus);

/// Adds what one backend found to `node`: each device as a DiscoveredDevice
/// (placed at the NUMA node nearest its PCI bus id, by hwloc; the first NUMA
/// node when it reports none), or the reason it has none, replacing that
/// backend's entry in `node.absent`.
void add_backend_devices(NodeInventory& node, const backends::BackendDevices& found);

/// The PCI bus id in one spelling ("0000:3b:00.0": domain, bus, device,
/// function, lower case), or empty when `bus_id` is empty or not one.
std::string normalized_pci_bus_id(std::string_view bus_id);

/// For each device of `found`, whether it is one of `known` seen through
/// another API: a GPU seen by CUDA and OpenCL, or by Level Zero and OpenCL,
/// is the same PCI device (same bus id), and the runtime uses it once,
/// through the backend discovered first (the engine asks CUDA, then Level
/// Zero, then OpenCL). Devices without a bus id are never duplicates.
std::vector<bool> duplicates(const std::vector<backends::DeviceInfo>& found,
                             const std::vector<backends::DeviceInfo>& known);

/// `found` without its duplicates of `known` (see duplicates()).
backends::BackendDevices without_duplicates(backends::BackendDevices found,
                                            const std::vector<backends::DeviceInfo>& known);
/// A made-up machine in hwloc's synthetic syntax ("pack:2 numa:2 core:4 pu:1"),
/// for tests. Throws canopy::Error naming the description when hwloc rejects it.
NodeInventory discover_node_synthetic(std::string_view hwloc_synthetic_description);
/// A machine exported by `lstopo file.xml`, for tests. Throws canopy::Error naming the file.
NodeInventory discover_node_xml(const std::string& path);

/// The vector width in bytes a CPU with these /proc/cpuinfo-style flags has:
/// 64 with avx512f, 32 with avx2 (or avx), 16 with any sse, else 0.
int vector_width_from_flags(std::string_view flags);

/// How finely CPU leaves divide the cores of a NUMA node.
enum class CpuGrain : std::uint8_t {
  Numa,  ///< one leaf per NUMA node (the default)
  L3,    ///< one leaf per L3 cache domain
  Core,  ///< one leaf per core
};

/// The choices that shape the default hierarchy.
struct DiscoveryOptions {
  CpuGrain cpu_grain = CpuGrain::Numa;
  /// What to use, comma-separated: "all" (default), "cpu", a backend
  /// ("opencl", "cuda", "level_zero"), or one device by id ("opencl:0").
  std::string devices = "all";

  /// CANOPY_CPU_LEAVES (numa|l3|core) and CANOPY_DEVICES; unset or empty
  /// variables keep the defaults. Throws canopy::Error naming the variable,
  /// its value and what is accepted.
  static DiscoveryOptions from_environment();
};

/// Parses a CANOPY_CPU_LEAVES value ("numa", "l3", "core"; case-insensitive).
/// Throws canopy::Error naming the value and what is accepted.
CpuGrain parse_cpu_grain(std::string_view text);

/// Every device backend's discovery (backends::discover_devices), except the
/// backends CANOPY_DEVICES cannot select, which are not started at all: with
/// "cpu" alone no GPU or OpenCL library is opened, and a backend left out is
/// reported absent as "not started". A GPU that CUDA or Level Zero drives is
/// told apart from the same GPU seen through OpenCL only when those backends
/// run too, so a selection that may pick OpenCL devices starts all three; with
/// CANOPY_CONFIG every backend starts, since a file may bind any device.
/// What they found is remembered in the cache folder (jit::cache_directory):
/// a later run on the same node gets stand-ins that start their backend at
/// first use (backends/discovery_cache.hpp); `key` as for discover_node_cached.
std::vector<backends::BackendDevices> discover_selected_backends(const std::string& key = {});

/// The inventory with only what `devices` (see DiscoveryOptions::devices)
/// selects: without "cpu" or "all" the cores are dropped; devices not named
/// (by backend or id) are dropped. Throws canopy::Error for a word that
/// matches nothing, naming it and listing what this node has.
NodeInventory select_devices(const NodeInventory& node, std::string_view devices);

/// The NUMA node (logical index) a core or device reporting `numa_node` is
/// placed under: that node when the inventory has it, else the first one;
/// -1 for an inventory without NUMA nodes.
int nearest_numa_node(const NodeInventory& node, int numa_node);

/// The traits of a CPU leaf running on `cores`: their count and first PUs,
/// the node's vector width and CPU model, and their NUMA node (nearest, as
/// above) when they share one, else -1.
LocationTraits cpu_leaf_traits(const NodeInventory& node, const std::vector<CoreInfo>& cores);

/// The traits of a device leaf: the device's own, with its id, its nearest
/// NUMA node, and its name as the model when it has none.
LocationTraits device_leaf_traits(const NodeInventory& node, const DiscoveredDevice& device);

/// The default hierarchy (see the top of this file). Throws canopy::Error
/// for a bad device selection, or when nothing is left to run regions on.
Hierarchy default_hierarchy(const NodeInventory& node, const DiscoveryOptions& options = {});

/// One line for error messages: "8 cores on 2 NUMA nodes; devices: opencl:0
/// (pocl)" or "devices: none", then each absent backend with its reason.
std::string inventory_summary(const NodeInventory& node);

/// A few lines for people: cores, NUMA nodes, CPU model and vector width,
/// each device, and each absent backend with its reason.
std::string describe_inventory(const NodeInventory& node);

/// Writes describe_inventory(node).
std::ostream& operator<<(std::ostream& out, const NodeInventory& node);

}  // namespace canopy

/// fmt::format("{}", node) gives describe_inventory(node).
template <>
struct fmt::formatter<canopy::NodeInventory> : fmt::ostream_formatter {};
