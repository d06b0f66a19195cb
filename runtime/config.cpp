// Reading Gecko's configuration format: load_config() and the loader that
// turns configuration text into a tree bound to this node's cores and
// devices. The line and field syntax is in internal/config_syntax.hpp; the
// writer, Hierarchy::to_config(), in config_writer.cpp.
#include "config.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <tuple>
#include <unordered_map>

#include <canopy/ir/error.hpp>
#include <canopy/ir/settings.hpp>

#include "internal/config_loader.hpp"
#include "internal/config_syntax.hpp"

namespace canopy {

namespace config_loader {

using namespace config_syntax;

constexpr long long kMaxCount = 4096;         // locations one location line may make
constexpr std::size_t kMaxLocations = 65536;  // locations one text may declare

// ----------------------------------------------------------------- kinds

constexpr const char* kKindWords =
    "x32, x64, NVIDIA, Unified_Memory, Permanent_Storage, virtual, cpu, opencl, cuda, level_zero, gpu, host_memory, "
    "unified_memory or file_memory";

/// The type a kind word means (Gecko's or Canopy's, any case), if it is one.
std::optional<LocType> kind_type(std::string_view word) {
  static const std::pair<std::string_view, LocationKind> kinds[] = {
      {"x32", LocationKind::Cpu},
      {"x64", LocationKind::Cpu},
      {"cpu", LocationKind::Cpu},
      {"nvidia", LocationKind::Cuda},
      {"cuda", LocationKind::Cuda},
      {"opencl", LocationKind::OpenCL},
      {"level_zero", LocationKind::LevelZero},
      {"unified_memory", LocationKind::UnifiedMemory},
      {"permanent_storage", LocationKind::FileMemory},
      {"file_memory", LocationKind::FileMemory},
      {"host_memory", LocationKind::HostMemory},
      {"virtual", LocationKind::Virtual},
  };
  std::string lower = lowercase(word);
  if (lower == "gpu") return LocType{LocationKind::OpenCL, true};
  for (auto [name, kind] : kinds) {
    if (lower == name) return LocType{kind};
  }
  return std::nullopt;
}

void Loader::adopt(const Hierarchy& tree) {
  for (const Location* location : tree.all()) {
    Staged staged;
    staged.name = location->name();
    staged.type.kind = staged.kind = location->kind();
    staged.existing = true;
    staged.traits = location->traits();
    if (location->parent() != nullptr) staged.parent = index_of_.at(location->parent()->name());
    int index = static_cast<int>(locations_.size());
    if (staged.parent >= 0) locations_[staged.parent].children.push_back(index);
    index_of_[staged.name] = index;
    locations_.push_back(std::move(staged));
  }
}

void Loader::know(const std::vector<std::string>& loctype_lines) {
  for (const std::string& text : loctype_lines) {
    std::optional<Line> line = split_line(text, 0);
    if (!line) continue;
    types_.clear();
    read_loctype(*line);  // read before, so it reads again
    for (auto& [name, type] : types_) earlier_types_.insert_or_assign(name, type.first);
  }
  types_.clear();
}

void Loader::read(std::string_view text) {
  // A byte order mark, as editors on Windows save UTF-8, is not part of the first line.
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);
  int number = 0;
  for (std::string_view raw : split(text, '\n')) {
    ++number;
    // A NUL would end every message that quotes the line there, and a
    // control byte has no meaning in the syntax: a file that holds one is
    // binary or damaged.
    for (std::size_t column = 0; column < raw.size(); ++column) {
      const auto byte = static_cast<unsigned char>(raw[column]);
      if ((byte < 0x20 && byte != '\t' && byte != '\r') || byte == 0x7f)
        fail(Where{source_, number}, fmt::format("control byte 0x{:02x} at column {}", byte, column + 1),
             "text: a configuration file holds no control bytes but tabs and line ends");
    }
    if (std::optional<Line> line = split_line(raw, number)) {
      read_line(*line);
      if (line->fields.front().key == "loctype") loctype_lines_.emplace_back(raw);
    }
  }
  last_line_ = std::max(number, 1);
}

void Loader::read_line(const Line& line) {
  Where where{source_, line.number};
  if (line.fields.empty()) fail(where, "the line holds only ';'", "a loctype, location or hierarchy line");
  const Field& kind = line.fields.front();
  if (kind.key != "loctype" && kind.key != "location" && kind.key != "hierarchy")
    fail(where, fmt::format("unknown line kind '{}'", kind.key), "loctype, location or hierarchy");
  if (!kind.values.empty())
    fail(where, fmt::format("'{}' is followed by ',' where ';' belongs", kind.key),
         fmt::format("{};FIELD,VALUE;...", kind.key));
  each_field_once(where, line);
  if (kind.key == "loctype") read_loctype(line);
  if (kind.key == "location") read_location(line);
  if (kind.key == "hierarchy") read_hierarchy(line);
}

void Loader::read_loctype(const Line& line) {
  Where where{source_, line.number};
  std::string name;
  std::optional<LocType> type;
  LocType traits;
  for (auto field = line.fields.begin() + 1; field != line.fields.end(); ++field) {
    if (field->key == "name") {
      name = one_value(where, *field, "NAME");
    } else if (field->key == "kind") {
      const std::string& word = list_values(where, *field, "KIND").front();
      type = kind_type(word);
      if (!type) fail(where, fmt::format("unknown kind '{}'", word), kKindWords);
    } else if (field->key == "num_cores") {
      traits.cores = static_cast<int>(integer_field(where, *field, 1, 1 << 20));
    } else if (field->key == "mem" || field->key == "size") {
      traits.capacity = size_field(where, *field);
    } else if (field->key == "bandwidth") {
      traits.bandwidth = bandwidth_field(where, *field);
    } else if (field->key == "optional") {
      no_value(where, *field);
      traits.optional = true;
    } else {
      fail(where, fmt::format("unknown field '{}' in a loctype line", field->key),
           "name, kind, num_cores, mem, size, bandwidth or optional");
    }
  }
  if (name.empty()) fail(where, "the loctype has no name", "name,NAME");
  if (!type) fail(where, fmt::format("loctype '{}' has no kind", name), "kind,KIND");
  if (auto seen = types_.find(name); seen != types_.end())
    fail(where, fmt::format("loctype '{}' is declared twice (first on line {})", name, seen->second.second),
         "one loctype line per name");
  type->cores = traits.cores;
  type->capacity = traits.capacity;
  type->bandwidth = traits.bandwidth;
  type->optional = traits.optional;
  types_.emplace(name, std::make_pair(*type, line.number));
}

LocType Loader::type_named(const Where& where, const std::string& name) const {
  if (auto found = types_.find(name); found != types_.end()) return found->second.first;
  if (auto found = earlier_types_.find(name); found != earlier_types_.end()) return found->second;
  if (std::optional<LocType> kind = kind_type(name)) return *kind;
  std::string declared;
  for (const auto& entry : types_) declared += (declared.empty() ? "" : ", ") + entry.first;
  for (const auto& entry : earlier_types_)
    if (!types_.count(entry.first)) declared += (declared.empty() ? "" : ", ") + entry.first;
  std::string types = declared.empty() ? "" : fmt::format("a loctype declared above ({}) or ", declared);
  fail(where, fmt::format("unknown type '{}'", name), fmt::format("{}a kind: {}", types, kKindWords));
}

/// What one location line asks for, before its names are expanded.
struct LocationRequest {
  std::vector<std::string> names;
  std::string type;
  bool all = false;
  bool optional = false;
  std::optional<long long> start;
  std::optional<long long> count;
  std::vector<unsigned> pus;
};

LocationRequest location_request(const Where& where, const Line& line) {
  LocationRequest request;
  for (auto field = line.fields.begin() + 1; field != line.fields.end(); ++field) {
    if (field->key == "name") {
      request.names = list_values(where, *field, "NAME");
    } else if (field->key == "type") {
      request.type = one_value(where, *field, "TYPE");
    } else if (field->key == "all" || field->key == "optional") {
      no_value(where, *field);
      (field->key == "all" ? request.all : request.optional) = true;
    } else if (field->key == "start") {
      request.start = integer_field(where, *field, 0, 1 << 20);
    } else if (field->key == "total_count") {
      request.count = integer_field(where, *field, 1, kMaxCount);
    } else if (field->key == "pus") {
      for (const std::string& pu : list_values(where, *field, "PU"))
        request.pus.push_back(static_cast<unsigned>(integer_in(where, *field, pu, 0, 1 << 24)));
    } else {
      fail(where, fmt::format("unknown field '{}' in a location line", field->key),
           "name, type, all, start, total_count, pus or optional");
    }
  }
  if (request.names.empty()) fail(where, "the location line has no name", "name,NAME[,NAME...]");
  if (request.type.empty())
    fail(where, fmt::format("location '{}' has no type", request.names.front()), "type,LOCTYPE or type,KIND");
  if (request.all && request.count) fail(where, "'all' and 'total_count' are both given", "one of them");
  return request;
}

/// Fails when `pus` cannot bind what the request makes.
void check_pus(const Where& where, const LocationRequest& request, const LocType& type) {
  if (request.pus.empty()) return;
  if (type.kind != LocationKind::Cpu)
    fail(where, fmt::format("'pus' given for '{}', which is a {} location", request.names.front(), name_of(type.kind)),
         "pus on cpu locations only");
  if (request.names.size() > 1 || request.all || request.count || request.start)
    fail(where, "'pus' given on a line that makes several locations or has a start", "pus for one location alone");
  if (type.cores != 0 && static_cast<std::size_t>(type.cores) != request.pus.size())
    fail(where,
         fmt::format("location '{}' lists {} PUs but its type has num_cores {}", request.names.front(),
                     request.pus.size(), type.cores),
         "as many PUs as num_cores");
}

void Loader::read_location(const Line& line) {
  Where where{source_, line.number};
  LocationRequest request = location_request(where, line);
  LocType type = type_named(where, request.type);
  check_pus(where, request, type);
  bool counted = request.all || request.count;
  long long made = request.all ? all_count(where, type, request.start.value_or(0)) : request.count.value_or(1);
  if (locations_.size() + request.names.size() * static_cast<std::size_t>(made) > kMaxLocations)
    fail(where, fmt::format("the configuration makes more than {} locations", kMaxLocations), "fewer locations");
  long long step = type.kind == LocationKind::Cpu ? std::max(type.cores, 1) : 1;
  for (const std::string& name : request.names) {
    if (counted && !groups_.emplace(name, std::make_pair(std::vector<int>{}, line.number)).second)
      fail(where,
           fmt::format("the group '{}' is declared twice (first on line {})", name, groups_.find(name)->second.second),
           "one location line per group name");
    for (long long i = 0; i < made; ++i) {
      Staged pattern;
      pattern.line = line.number;
      pattern.optional = request.optional || type.optional;
      if (request.start) pattern.start = *request.start + i * step;
      pattern.pus = request.pus;
      pattern.cores_wanted = type.cores != 0 ? type.cores : (counted ? 1 : 0);
      declare(where, counted ? name + std::to_string(i) : name, type, pattern);
      if (counted) groups_.find(name)->second.first.push_back(static_cast<int>(locations_.size()) - 1);
    }
  }
}

int Loader::all_count(const Where& where, const LocType& type, long long start) const {
  long long units = 0;
  if (type.kind == LocationKind::HostMemory) units = static_cast<long long>(node_.numa_nodes.size()) - start;
  if (type.kind == LocationKind::Cpu)
    units = (static_cast<long long>(node_.cores.size()) - start) / std::max(type.cores, 1);
  for (const DiscoveredDevice& device : node_.devices) {
    if (type.any_accelerator ? is_device(device.kind) : (device.kind == type.kind && device.index >= start)) ++units;
  }
  if (type.any_accelerator) units -= start;
  if (!executes(type.kind) && type.kind != LocationKind::HostMemory)
    fail(where, fmt::format("'all' given for {} locations, which this node does not count", name_of(type.kind)),
         "all on cpu, host_memory or device locations");
  return static_cast<int>(std::clamp(units, 0LL, kMaxCount));
}

void Loader::declare(const Where& where, std::string name, const LocType& type, const Staged& pattern) {
  if (!is_valid_location_name(name))
    fail(where, fmt::format("'{}' is not a location name", name), "1 to 128 letters, digits, '_', '-' or '.'");
  if (auto seen = index_of_.find(name); seen != index_of_.end()) {
    int line = locations_[seen->second].line;
    std::string first = line == 0 ? "in the hierarchy already" : fmt::format("first on line {}", line);
    fail(where, fmt::format("location '{}' is declared twice ({})", name, first), "one declaration per name");
  }
  Staged staged = pattern;
  staged.name = std::move(name);
  staged.type = type;
  staged.kind = type.kind;
  index_of_[staged.name] = static_cast<int>(locations_.size());
  locations_.push_back(std::move(staged));
}

// ------------------------------------------------------------ hierarchy

void Loader::read_hierarchy(const Line& line) {
  Where where{source_, line.number};
  const Field* children = nullptr;
  std::string parent_name;
  for (auto field = line.fields.begin() + 1; field != line.fields.end(); ++field) {
    if (field->key == "children")
      children = &*field;
    else if (field->key == "parent")
      parent_name = one_value(where, *field, "NAME");
    else if (field->key == "all")
      no_value(where, *field);
    else
      fail(where, fmt::format("unknown field '{}' in a hierarchy line", field->key), "children, parent or all");
  }
  const char* children_form = "children,+,NAME[,NAME...] or children,-,NAME[,NAME...]";
  if (children == nullptr) fail(where, "the hierarchy line has no children", children_form);
  const std::vector<std::string>& items = list_values(where, *children, "+|-,NAME");
  if (items.front() != "+" && items.front() != "-")
    fail(where, fmt::format("'{}' is not an operation", items.front()), "+ (attach) or - (remove) after children,");
  if (items.size() < 2) fail(where, "the children field names no location", children_form);
  if (parent_name.empty()) fail(where, "the hierarchy line has no parent", "parent,NAME");
  auto parent = index_of_.find(parent_name);
  if (parent == index_of_.end())
    fail(where, fmt::format("no location '{}' is declared", parent_name), "a parent declared by a location line above");
  for (auto name = items.begin() + 1; name != items.end(); ++name) {
    for (int child : children_named(where, *name))
      items.front() == "+" ? attach(where, child, parent->second) : detach(where, child, parent->second);
  }
}

std::vector<int> Loader::children_named(const Where& where, const std::string& name) const {
  if (auto found = index_of_.find(name); found != index_of_.end()) return {found->second};
  auto group = groups_.find(name);
  if (group == groups_.end())
    fail(where, fmt::format("no location or group '{}' is declared", name),
         "a child declared by a location line above");
  std::vector<int> alive;
  for (int member : group->second.first) {
    if (locations_[member].alive) alive.push_back(member);
  }
  return alive;
}

void Loader::attach(const Where& where, int child, int parent) {
  const Staged& above = locations_[parent];
  if (executes(above.kind))
    fail(where,
         fmt::format("'{}' is of kind {}, which runs regions and has no children", above.name, name_of(above.kind)),
         "a memory or virtual parent");
  for (int up = parent; up != -1; up = locations_[up].parent) {
    if (up == child)
      fail(where, fmt::format("attaching '{}' below '{}' makes a cycle", locations_[child].name, above.name),
           "a parent outside the child's own subtree");
  }
  Staged& below = locations_[child];
  if (below.parent != -1) {
    auto& siblings = locations_[below.parent].children;
    siblings.erase(std::find(siblings.begin(), siblings.end(), child));
  }
  below.parent = parent;
  locations_[parent].children.push_back(child);
}

void Loader::detach(const Where& where, int child, int parent) {
  if (locations_[child].parent != parent)
    fail(where, fmt::format("'{}' is not a child of '{}'", locations_[child].name, locations_[parent].name),
         "a child of the parent named");
  kill(child);
}

/// Removes a location and its subtree.
void Loader::kill(int index) {
  if (int parent = locations_[index].parent; parent != -1) {
    auto& siblings = locations_[parent].children;
    siblings.erase(std::find(siblings.begin(), siblings.end(), index));
  }
  std::vector<int> doomed{index};
  while (!doomed.empty()) {
    Staged& location = locations_[doomed.back()];
    doomed.pop_back();
    location.alive = false;
    location.parent = -1;
    index_of_.erase(location.name);
    doomed.insert(doomed.end(), location.children.begin(), location.children.end());
    location.children.clear();
  }
}

}  // namespace config_loader

using namespace config_syntax;
using config_loader::Loader;

std::int64_t parse_size(std::string_view text) {
  text = trim(text);
  std::size_t unit_at = std::min(text.find_first_not_of("0123456789."), text.size());
  double number = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + unit_at, number);
  if (unit_at == 0 || error != std::errc() || end != text.data() + unit_at) return -1;
  static const std::pair<std::string_view, double> units[] = {
      {"", 1.0},       {"b", 1.0},     {"k", 0x1p10},   {"kb", 0x1p10}, {"kib", 0x1p10},
      {"m", 0x1p20},   {"mb", 0x1p20}, {"mib", 0x1p20}, {"g", 0x1p30},  {"gb", 0x1p30},
      {"gib", 0x1p30}, {"t", 0x1p40},  {"tb", 0x1p40},  {"tib", 0x1p40}};
  std::string unit = lowercase(trim(text.substr(unit_at)));
  for (auto [name, scale] : units) {
    double bytes = number * scale;
    if (unit == name) return bytes <= 0x1p62 && bytes == std::floor(bytes) ? static_cast<std::int64_t>(bytes) : -1;
  }
  return -1;
}

namespace {

// The types `loader` read, added to `types` once its text has loaded.
void keep_types(const Loader& loader, ConfigTypes* types) {
  if (!types) return;
  for (const std::string& line : loader.loctype_lines()) types->loctype_lines.push_back(line);
}

}  // namespace

Hierarchy load_config(std::string_view text, std::string_view source_name, const NodeInventory& node,
                      ConfigTypes* types, std::vector<std::string>* warnings) {
  Loader loader(source_name, node);
  if (types) loader.know(types->loctype_lines);
  loader.set_lenient(!settings().config_strict);
  loader.read(text);
  Hierarchy tree = loader.finish();
  keep_types(loader, types);
  for (const std::string& warning : loader.warnings()) {
    if (warnings)
      warnings->push_back(warning);
    else
      std::fprintf(stderr, "canopy: %s (CANOPY_CONFIG_STRICT=1 makes this an error)\n", warning.c_str());
  }
  return tree;
}

Hierarchy load_config_file(const std::string& path, const NodeInventory& node, ConfigTypes* types,
                           std::vector<std::string>* warnings) {
  std::error_code ignored;
  std::ifstream file(path, std::ios::binary);
  if (!file || std::filesystem::is_directory(path, ignored))
    throw Error(
        fmt::format("cannot read the configuration file '{}'; expected a readable file in Gecko's format", path));
  // At most 16 MiB, read as it comes: an endless source (/dev/zero) had
  // filled the machine's memory.
  constexpr std::size_t limit = std::size_t{16} << 20;
  std::string text;
  std::array<char, 1 << 16> chunk;
  while (file && text.size() <= limit) {
    file.read(chunk.data(), chunk.size());
    text.append(chunk.data(), static_cast<std::size_t>(file.gcount()));
  }
  if (file.bad())
    throw Error(
        fmt::format("cannot read the configuration file '{}'; expected a readable file in Gecko's format", path));
  if (text.size() > limit)
    throw Error(
        fmt::format("the configuration file '{}' is longer than 16 MiB; expected a file in Gecko's format (a "
                    "few lines per location)",
                    path));
  return load_config(text, path, node, types, warnings);
}

void apply_config_text(Hierarchy& tree, std::string_view text, std::string_view source_name, const NodeInventory& node,
                       ConfigTypes* types) {
  Loader loader(source_name, node);
  if (types) loader.know(types->loctype_lines);
  loader.adopt(tree);
  loader.read(text);
  Hierarchy next = loader.finish();
  keep_types(loader, types);
  if (!(next == tree)) tree = std::move(next);
}

}  // namespace canopy
