// Writing Gecko's configuration format: Hierarchy::to_config(), the text
// load_config() (config.cpp) reads back into the same tree.
#include "config.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <tuple>
#include <unordered_map>

#include <canopy/ir/error.hpp>

namespace canopy {

namespace {

/// What a loctype line fixes: kind, num_cores, mem, bandwidth.
using LoctypeKey = std::tuple<LocationKind, int, std::int64_t, double>;

LoctypeKey loctype_key(const Location& location) {
  const LocationTraits& t = location.traits();
  return {location.kind(), t.cores, t.capacity, t.bandwidth};
}

/// "16GB", "4MB", "3000": the largest unit (of 1024) that divides exactly, as the loader reads them.
std::string size_text(std::int64_t bytes) {
  static constexpr std::pair<int, const char*> units[] = {{40, "TB"}, {30, "GB"}, {20, "MB"}, {10, "KB"}};
  for (auto [shift, unit] : units) {
    if (bytes > 0 && bytes % (std::int64_t{1} << shift) == 0) return fmt::format("{}{}", bytes >> shift, unit);
  }
  return fmt::format("{}", bytes);
}

std::string loctype_line(const LoctypeKey& key, const std::string& name) {
  auto [kind, cores, capacity, bandwidth] = key;
  std::string line = fmt::format("loctype;name,{};kind,{}", name, name_of(kind));
  if (cores != 0) line += fmt::format(";num_cores,{}", cores);
  if (capacity != 0) line += ";mem," + size_text(capacity);
  if (bandwidth != 0) line += fmt::format(";bandwidth,{}", bandwidth);
  return line + "\n";
}

/// "0,1,2": the PUs a CPU leaf is bound to.
std::string pu_list(const std::vector<unsigned>& pus) {
  std::string list;
  for (unsigned pu : pus) list += fmt::format("{}{}", list.empty() ? "" : ",", pu);
  return list;
}

/// The index after the ':' of a device id ("opencl:1" -> "1"), or empty.
std::string device_number(const std::string& device) {
  auto colon = device.rfind(':');
  if (colon == std::string::npos || colon + 1 == device.size()) return {};
  std::string number = device.substr(colon + 1);
  bool digits = number.find_first_not_of("0123456789") == std::string::npos;
  return digits ? number : std::string();
}

/// The fields of a location line after its type that bind it to what it was bound to.
std::string binding_fields(const Location& location) {
  const LocationTraits& t = location.traits();
  std::string fields;
  if (location.kind() == LocationKind::Cpu && !t.pus.empty()) fields += ";pus," + pu_list(t.pus);
  if (location.kind() == LocationKind::HostMemory && t.numa_node >= 0) fields += fmt::format(";start,{}", t.numa_node);
  if (is_device(location.kind()) && !device_number(t.device).empty()) fields += ";start," + device_number(t.device);
  if (t.optional) fields += ";optional";
  return fields;
}

}  // namespace

std::string Hierarchy::to_config() const {
  std::string types, locations, edges;
  std::map<LoctypeKey, std::string> type_names;
  std::map<LocationKind, int> types_of_kind;
  const LoctypeKey plain_virtual{LocationKind::Virtual, 0, 0, 0.0};
  for (const Location* location : all()) {
    LoctypeKey key = loctype_key(*location);
    std::string type = "virtual";
    if (key != plain_virtual) {
      auto [entry, added] = type_names.try_emplace(key);
      if (added) {
        entry->second = fmt::format("{}_type{}", name_of(location->kind()), types_of_kind[location->kind()]++);
        types += loctype_line(key, entry->second);
      }
      type = entry->second;
    }
    locations += fmt::format("location;name,{};type,{}{}\n", location->name(), type, binding_fields(*location));
    if (location->parent() != nullptr)
      edges += fmt::format("hierarchy;children,+,{};parent,{}\n", location->name(), location->parent()->name());
  }
  return "# Canopy location hierarchy (Gecko configuration format)\n" + types + locations + edges;
}

}  // namespace canopy
