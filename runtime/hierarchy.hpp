// The location hierarchy (the Gecko model): a tree of named locations, real
// or virtual, where memory placed at a location is visible to it and to every
// location below it, and where regions run on the leaves.
//
// Locations are found by name in O(1). The tree can change while the program
// runs (add, remove, move); every change bumps version(), so whoever caches
// something derived from the tree (worker bindings, splits) knows to redo it.
#pragma once

#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace canopy {

/// What a location is.
enum class LocationKind : std::uint8_t {
  Virtual,        ///< a grouping with no memory or processors of its own
  HostMemory,     ///< host (NUMA node) memory
  UnifiedMemory,  ///< memory shared by host and devices
  FileMemory,     ///< file-backed memory (Gecko's Permanent_Storage)
  Cpu,            ///< a CPU leaf: a set of cores with a thread each
  OpenCL,         ///< an OpenCL device
  Cuda,           ///< an NVIDIA GPU through CUDA
  LevelZero,      ///< an Intel GPU through Level Zero
};

/// "virtual", "host_memory", "unified_memory", "file_memory", "cpu", "opencl", "cuda", "level_zero".
std::string_view name_of(LocationKind kind);
/// True for the kinds that run regions (CPU leaves and devices).
bool executes(LocationKind kind);
/// True for the device kinds (OpenCL, CUDA, Level Zero).
bool is_device(LocationKind kind);

/// What is known of a location; zero or empty means unknown.
struct LocationTraits {
  int cores = 0;                ///< CPU leaf: cores (one thread each); device: compute units
  std::int64_t capacity = 0;    ///< bytes of memory
  double bandwidth = 0;         ///< memory bandwidth, GB/s
  int vector_width = 0;         ///< bytes of the widest vector register (CPU), or the device's preferred width
  std::vector<unsigned> pus;    ///< CPU leaf: hwloc OS indexes of the processing units its threads run on
  int numa_node = -1;           ///< hwloc logical index of the nearest NUMA node, -1 unknown
  std::string device;           ///< device leaf: the discovered device it is bound to ("opencl:0"), else empty
  std::string model;            ///< CPU model or device name
  bool optional = false;        ///< from a configuration: may be absent on this node
  bool operator==(const LocationTraits&) const = default;
};

class Hierarchy;

/// One node of the tree. Owned by its Hierarchy; pointers stay valid until
/// the location is removed.
class Location {
 public:
  const std::string& name() const { return name_; }
  LocationKind kind() const { return kind_; }
  const LocationTraits& traits() const { return traits_; }
  const Location* parent() const { return parent_; }
  const std::vector<Location*>& children() const { return children_; }
  /// 0 for the root.
  int depth() const;
  bool is_leaf() const { return children_.empty(); }
  bool executes() const { return canopy::executes(kind_); }

 private:
  friend class Hierarchy;
  std::string name_;
  LocationKind kind_ = LocationKind::Virtual;
  LocationTraits traits_;
  Location* parent_ = nullptr;
  std::vector<Location*> children_;
};

class Hierarchy {
 public:
  Hierarchy();
  ~Hierarchy();
  Hierarchy(const Hierarchy& other);
  Hierarchy& operator=(const Hierarchy& other);
  Hierarchy(Hierarchy&&) noexcept;
  Hierarchy& operator=(Hierarchy&&) noexcept;

  /// Adds a location below `parent`; with an empty `parent` it becomes the
  /// root (the tree must have none yet). Throws canopy::Error for a duplicate
  /// or invalid name, an unknown parent, a second root, or a child below an
  /// executing leaf (CPU and device locations have no children).
  const Location& add(std::string name, LocationKind kind, LocationTraits traits, std::string_view parent);
  /// Removes `name` and everything below it. Throws for an unknown name.
  void remove(std::string_view name);
  /// Makes `name` (with its subtree) a child of `new_parent`. Throws for
  /// unknown names, for moving the root, and for moving a location below itself.
  void move(std::string_view name, std::string_view new_parent);
  /// Replaces a location's traits.
  void set_traits(std::string_view name, LocationTraits traits);

  /// The location called `name`, or null.
  const Location* find(std::string_view name) const;
  /// The location called `name`; throws canopy::Error naming it and listing the known names.
  const Location& at(std::string_view name) const;
  /// The root, or null for an empty tree.
  const Location* root() const { return root_; }
  bool empty() const { return root_ == nullptr; }
  std::size_t size() const { return by_name_.size(); }

  /// True when `upper` is `lower` or one of its ancestors (memory at `upper`
  /// is visible from `lower`).
  static bool is_above_or_same(const Location& upper, const Location& lower);
  /// The executing leaves in the subtree of `under` (itself if it is one), in
  /// tree order (children in the order they were added).
  std::vector<const Location*> leaves(const Location& under) const;
  /// Every location in tree order (pre-order, root first).
  std::vector<const Location*> all() const;

  /// Bumped by every change; equal versions mean the same tree.
  std::uint64_t version() const { return version_; }

  /// The tree indented, one location per line with its kind and traits.
  std::string to_text() const;
  /// The tree in Gecko's configuration format (loctype/location/hierarchy
  /// lines); loading it gives this same tree.
  std::string to_config() const;
  /// {"name":..,"kind":..,"traits":{..},"children":[..]}.
  std::string to_json() const;
  /// A Graphviz digraph.
  std::string to_dot() const;

  bool operator==(const Hierarchy& other) const;

 private:
  Location* mutable_at(std::string_view name);
  void copy_from(const Hierarchy& other);

  std::unordered_map<std::string, std::unique_ptr<Location>> by_name_;
  Location* root_ = nullptr;
  std::uint64_t version_ = 0;
};

std::ostream& operator<<(std::ostream& out, const Hierarchy& hierarchy);

}  // namespace canopy
