// The configuration loader's state, shared by the files that read a
// configuration text (config.cpp: loctype, location and hierarchy lines) and
// bind what it declares to this node's cores, memories and devices
// (config_binding.cpp).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "../discovery.hpp"
#include "../hierarchy.hpp"
#include "config_syntax.hpp"

namespace canopy::config_loader {

using config_syntax::Line;
using config_syntax::Where;

/// A location type: a kind and the traits its locations get.
struct LocType {
  LocationKind kind = LocationKind::Virtual;
  bool any_accelerator = false;  ///< "gpu": binds to any device kind
  int cores = 0;                 ///< num_cores; 0: not given
  std::int64_t capacity = 0;     ///< mem; 0: not given
  double bandwidth = 0;          ///< GB/s; 0: not given
  bool optional = false;
};

/// A location while the text is read: declared, linked, then bound.
struct Staged {
  std::string name;
  LocType type;           ///< for locations of the tree being changed: only the kind
  int line = 0;           ///< the declaring line; 0 for a location of the tree being changed
  bool existing = false;  ///< of the tree being changed (keeps its traits)
  bool alive = true;      ///< false once removed or left out
  bool optional = false;  ///< may be left out when the node lacks it
  std::optional<long long> start;
  std::vector<unsigned> pus;                  ///< CPU locations bound by PU
  int cores_wanted = 0;                       ///< CPU locations: cores to take, 0 for all that are left
  LocationKind kind = LocationKind::Virtual;  ///< after binding
  LocationTraits traits;                      ///< after binding
  int parent = -1;
  std::vector<int> children;
};

/// Reads a configuration text into staged locations, binds them to the node,
/// and builds the tree.
class Loader {
 public:
  Loader(std::string_view source, const NodeInventory& node)
      : source_(source),
        node_(node),
        core_used_(node.cores.size()),
        numa_used_(node.numa_nodes.size()),
        device_used_(node.devices.size()) {}

  void adopt(const Hierarchy& tree);
  /// Makes the types of earlier texts' loctype lines known (a type this text
  /// declares again is this text's).
  void know(const std::vector<std::string>& loctype_lines);
  void read(std::string_view text);
  /// Gecko's files as they are (the default for whole files; not with
  /// CANOPY_CONFIG_STRICT=1): a location the node cannot give all it asks
  /// for loads with what there is (fewer cores, or as an empty virtual
  /// location), and locations attached to no parent are left out but for
  /// the largest tree; each such change is a warning.
  void set_lenient(bool lenient) { lenient_ = lenient; }
  Hierarchy finish();
  /// What the lenient loading changed, one message per location ("SOURCE:LINE: ...").
  const std::vector<std::string>& warnings() const { return warnings_; }
  /// The loctype lines this text declared, as written.
  const std::vector<std::string>& loctype_lines() const { return loctype_lines_; }

 private:
  void read_line(const Line& line);
  void read_loctype(const Line& line);
  void read_location(const Line& line);
  void read_hierarchy(const Line& line);
  LocType type_named(const Where& where, const std::string& name) const;
  int all_count(const Where& where, const LocType& type, long long start) const;
  void declare(const Where& where, std::string name, const LocType& type, const Staged& pattern);
  std::vector<int> children_named(const Where& where, const std::string& name) const;
  void attach(const Where& where, int child, int parent);
  void detach(const Where& where, int child, int parent);
  void kill(int index);
  void mark_existing_units();
  bool bind(Staged& location);
  bool bind_memory(Staged& location);
  bool bind_device(Staged& location);
  bool bind_cpu(Staged& location);
  std::string need_of(const Staged& location) const;
  /// "; held by location 'cpu0'": the living locations that hold what
  /// `location` asked for and did not get (empty when none is known).
  std::string holders_of(const Staged& location) const;
  void bind_all(bool cpus);
  void bind_leniently(Staged& location);
  void drop_unattached();
  int root() const;
  Hierarchy build(int root) const;

  std::string_view source_;
  const NodeInventory& node_;
  int last_line_ = 1;
  std::map<std::string, std::pair<LocType, int>, std::less<>> types_;            // name -> type, line
  std::map<std::string, LocType, std::less<>> earlier_types_;                    // of earlier texts
  std::vector<std::string> loctype_lines_;                                       // this text's
  std::map<std::string, std::pair<std::vector<int>, int>, std::less<>> groups_;  // name -> members, line
  std::vector<Staged> locations_;
  std::unordered_map<std::string, int> index_of_;  // living locations only
  std::vector<bool> core_used_, numa_used_, device_used_;
  bool lenient_ = false;
  std::vector<std::string> warnings_;
};

}  // namespace canopy::config_loader
