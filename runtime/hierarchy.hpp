// The location hierarchy (the Gecko model): a tree of named locations, real
// or virtual, where memory placed at a location is visible to it and to every
// location below it, and where regions run on the leaves.
//
// Locations are found by name in O(1). The tree can change while the program
// runs (add, remove, move); every change bumps version(), so whoever caches
// something derived from the tree (worker bindings, splits) knows to redo it.
#pragma once

#include <fmt/ostream.h>

#include <cstdint>
#include <functional>
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
  FileMemory,     ///< Gecko's Permanent_Storage; Canopy holds its arrays in the host's memory, not in a file
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
/// True for the memory kinds (host, unified, file-backed).
bool is_memory(LocationKind kind);
/// Writes name_of(kind).
std::ostream& operator<<(std::ostream& out, LocationKind kind);

/// True when `name` can name a location: 1 to 128 characters, each an ASCII
/// letter, digit, '_', '-' or '.' (so that it survives the configuration
/// format, where ',', ';', '#' and spaces separate things).
bool is_valid_location_name(std::string_view name);

/// What is known of a location; zero or empty means unknown.
struct LocationTraits {
  int cores = 0;              ///< CPU leaf: cores (one thread each); device: compute units
  std::int64_t capacity = 0;  ///< bytes of memory
  double bandwidth = 0;       ///< memory bandwidth, GB/s
  int vector_width = 0;       ///< bytes of the widest vector register (CPU), or the device's preferred width
  std::vector<unsigned> pus;  ///< CPU leaf: hwloc OS indexes of the processing units its threads run on
  int numa_node = -1;         ///< hwloc logical index of the nearest NUMA node, -1 unknown
  std::string device;         ///< device leaf: the discovered device it is bound to ("opencl:0"), else empty
  std::string model;          ///< CPU model or device name
  bool optional = false;      ///< from a configuration: may be absent on this node
  bool operator==(const LocationTraits&) const = default;
};

class Hierarchy;

/// One node of the tree. Owned by its Hierarchy; pointers stay valid until
/// the location is removed.
class Location {
 public:
  /// The unique name it is found by.
  const std::string& name() const { return name_; }
  /// What it is.
  LocationKind kind() const { return kind_; }
  /// What is known of it.
  const LocationTraits& traits() const { return traits_; }
  /// The location above it; null for the root.
  const Location* parent() const { return parent_; }
  /// The locations directly below it, in the order they were added or moved there.
  const std::vector<Location*>& children() const { return children_; }
  /// 0 for the root.
  int depth() const;
  /// True when nothing is below it.
  bool is_leaf() const { return children_.empty(); }
  /// True for CPU leaves and devices (the locations that run regions).
  bool executes() const { return canopy::executes(kind_); }

 private:
  friend class Hierarchy;
  std::string name_;
  LocationKind kind_ = LocationKind::Virtual;
  LocationTraits traits_;
  Location* parent_ = nullptr;
  std::vector<Location*> children_;
};

/// The tree of locations. A value type: copies are deep and compare equal
/// (operator== compares names, kinds, traits and the order of children, not
/// versions). Not thread-safe: whoever shares one guards it.
class Hierarchy {
 public:
  /// An empty tree (no root).
  Hierarchy();
  ~Hierarchy();
  /// A deep copy with the same version.
  Hierarchy(const Hierarchy& other);
  /// Assignments are changes of this tree: afterwards version() is greater
  /// than both trees' versions before, so a cached version never matches a
  /// different tree. A moved-from tree is empty.
  Hierarchy& operator=(const Hierarchy& other);
  /// Takes `other`'s locations and version; `other` is left empty.
  Hierarchy(Hierarchy&& other) noexcept;
  /// See the copy assignment.
  Hierarchy& operator=(Hierarchy&& other) noexcept;

  /// Adds a location below `parent`; with an empty `parent` it becomes the
  /// root (the tree must have none yet). Throws canopy::Error for a duplicate
  /// or invalid name, an unknown parent, a second root, or a child below an
  /// executing leaf (CPU and device locations have no children).
  const Location& add(std::string name, LocationKind kind, LocationTraits traits, std::string_view parent);
  /// Removes `name` and everything below it (the root: the whole tree).
  /// Throws for an unknown name.
  void remove(std::string_view name);
  /// Makes `name` (with its subtree) the last child of `new_parent`; nothing
  /// changes when it is its parent already. Throws for unknown names, for
  /// moving the root, for moving a location below itself, and for a CPU or
  /// device parent.
  void move(std::string_view name, std::string_view new_parent);
  /// Replaces a location's traits. Throws for an unknown name.
  void set_traits(std::string_view name, LocationTraits traits);

  /// The location called `name`, or null.
  const Location* find(std::string_view name) const;
  /// The location called `name`; throws canopy::Error naming it and listing the known names.
  const Location& at(std::string_view name) const;
  /// The root, or null for an empty tree.
  const Location* root() const { return root_; }
  /// True for a tree with no locations.
  bool empty() const { return root_ == nullptr; }
  /// How many locations the tree holds.
  std::size_t size() const { return by_name_.size(); }

  /// True when `upper` is `lower` or one of its ancestors (memory at `upper`
  /// is visible from `lower`).
  static bool is_above_or_same(const Location& upper, const Location& lower);
  /// The executing leaves in the subtree of `under` (itself if it is one), in
  /// tree order (children in the order they were added or moved there).
  /// Virtual or memory locations without children are not among them.
  std::vector<const Location*> leaves(const Location& under) const;
  /// Every location in tree order (pre-order, root first).
  std::vector<const Location*> all() const;

  /// Bumped by every change of this tree (failed calls change nothing);
  /// while a tree's version stays the same, so does the tree.
  std::uint64_t version() const { return version_; }

  /// The tree indented, one location per line with its kind and traits.
  std::string to_text() const;
  /// The tree in Gecko's configuration format (config.hpp): one loctype line
  /// per distinct kind, num_cores, mem and bandwidth, one location line per
  /// location (CPU leaves bound by `pus`, NUMA memories and devices by
  /// `start`), one hierarchy line per edge. Loading it on the same node gives
  /// this same tree for every tree discovered or loaded there.
  std::string to_config() const;
  /// {"name":..,"kind":..,"traits":{..},"children":[..]}.
  std::string to_json() const;
  /// A Graphviz digraph.
  std::string to_dot() const;

  /// Same names, kinds, traits, parents and order of children.
  bool operator==(const Hierarchy& other) const;

 private:
  /// Lets find() look a std::string_view up without building a std::string.
  struct NameHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view name) const { return std::hash<std::string_view>{}(name); }
  };

  Location* mutable_at(std::string_view name);
  void copy_from(const Hierarchy& other);

  std::unordered_map<std::string, std::unique_ptr<Location>, NameHash, std::equal_to<>> by_name_;
  Location* root_ = nullptr;
  std::uint64_t version_ = 0;
};

/// Writes hierarchy.to_text().
std::ostream& operator<<(std::ostream& out, const Hierarchy& hierarchy);

}  // namespace canopy

/// fmt::format("{}", hierarchy) gives hierarchy.to_text().
template <>
struct fmt::formatter<canopy::Hierarchy> : fmt::ostream_formatter {};
/// fmt::format("{}", kind) gives name_of(kind).
template <>
struct fmt::formatter<canopy::LocationKind> : fmt::ostream_formatter {};
