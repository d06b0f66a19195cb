// The location tree: a name -> location hash map owns the nodes (Gecko's
// reversed hash table), the nodes link to parent and children. Every walk is
// iterative, so a tree as deep as a configuration file can make it never
// exhausts the stack.
#include "hierarchy.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include <canopy/ir/error.hpp>

namespace canopy {

std::string_view name_of(LocationKind kind) {
  switch (kind) {
    case LocationKind::Virtual: return "virtual";
    case LocationKind::HostMemory: return "host_memory";
    case LocationKind::UnifiedMemory: return "unified_memory";
    case LocationKind::FileMemory: return "file_memory";
    case LocationKind::Cpu: return "cpu";
    case LocationKind::OpenCL: return "opencl";
    case LocationKind::Cuda: return "cuda";
    case LocationKind::LevelZero: return "level_zero";
  }
  return "unknown";
}

bool is_device(LocationKind kind) {
  return kind == LocationKind::OpenCL || kind == LocationKind::Cuda || kind == LocationKind::LevelZero;
}

bool executes(LocationKind kind) { return kind == LocationKind::Cpu || is_device(kind); }

bool is_memory(LocationKind kind) {
  return kind == LocationKind::HostMemory || kind == LocationKind::UnifiedMemory || kind == LocationKind::FileMemory;
}

std::ostream& operator<<(std::ostream& out, LocationKind kind) { return out << name_of(kind); }

bool is_valid_location_name(std::string_view name) {
  auto allowed = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
           c == '.';
  };
  return !name.empty() && name.size() <= 128 && std::all_of(name.begin(), name.end(), allowed);
}

int Location::depth() const {
  int depth = 0;
  for (const Location* up = parent_; up != nullptr; up = up->parent_) ++depth;
  return depth;
}

namespace {

/// Calls enter(location, depth) for every location below and including `top`
/// in pre-order, and leave(location, depth) after its subtree; no recursion.
template <typename Enter, typename Leave>
void walk(const Location* top, Enter&& enter, Leave&& leave) {
  if (top == nullptr) return;
  std::vector<std::pair<const Location*, std::size_t>> stack{{top, 0}};
  enter(*top, 0);
  while (!stack.empty()) {
    auto& [location, next] = stack.back();
    if (next < location->children().size()) {
      const Location* child = location->children()[next++];
      enter(*child, static_cast<int>(stack.size()));
      stack.emplace_back(child, 0);
    } else {
      const Location* done = location;
      stack.pop_back();
      leave(*done, static_cast<int>(stack.size()));
    }
  }
}

template <typename Enter>
void walk(const Location* top, Enter&& enter) {
  walk(top, std::forward<Enter>(enter), [](const Location&, int) {});
}

/// "a, b, c" in tree order, at most 20 names then "and N more".
std::string known_names(const Hierarchy& hierarchy) {
  if (hierarchy.empty()) return "the hierarchy is empty";
  std::string list = "known locations: ";
  std::size_t shown = 0;
  for (const Location* location : hierarchy.all()) {
    if (shown == 20) return list + fmt::format(", and {} more", hierarchy.size() - shown);
    if (shown++ != 0) list += ", ";
    list += location->name();
  }
  return list;
}

}  // namespace

Hierarchy::Hierarchy() = default;
Hierarchy::~Hierarchy() = default;
Hierarchy::Hierarchy(const Hierarchy& other) { copy_from(other); }

Hierarchy::Hierarchy(Hierarchy&& other) noexcept
    : by_name_(std::move(other.by_name_)),
      root_(std::exchange(other.root_, nullptr)),
      version_(std::exchange(other.version_, other.version_ + 1)) {
  other.by_name_.clear();
}

// An assignment is a change of this tree: its version moves past both.
Hierarchy& Hierarchy::operator=(Hierarchy&& other) noexcept {
  if (this == &other) return *this;
  std::uint64_t next = std::max(version_, other.version_) + 1;
  by_name_ = std::move(other.by_name_);
  other.by_name_.clear();
  root_ = std::exchange(other.root_, nullptr);
  ++other.version_;
  version_ = next;
  return *this;
}

Hierarchy& Hierarchy::operator=(const Hierarchy& other) {
  if (this != &other) *this = Hierarchy(other);
  return *this;
}

void Hierarchy::copy_from(const Hierarchy& other) {
  walk(other.root_, [this](const Location& location, int) {
    auto parent = location.parent() != nullptr ? std::string_view(location.parent()->name()) : std::string_view();
    add(location.name(), location.kind(), location.traits(), parent);
  });
  version_ = other.version_;
}

Location* Hierarchy::mutable_at(std::string_view name) {
  auto found = by_name_.find(name);
  return found == by_name_.end() ? nullptr : found->second.get();
}

const Location* Hierarchy::find(std::string_view name) const {
  auto found = by_name_.find(name);
  return found == by_name_.end() ? nullptr : found->second.get();
}

const Location& Hierarchy::at(std::string_view name) const {
  if (const Location* location = find(name)) return *location;
  throw Error(fmt::format("no location '{}' in the hierarchy; {}", name, known_names(*this)));
}

namespace {

// A name as an error message shows it: at most 64 characters (a 1 MB name
// had been echoed whole).
std::string shown(std::string_view name) {
  return name.size() <= 64 ? std::string(name)
                           : std::string(name.substr(0, 64)) + "... (" + std::to_string(name.size()) + " characters)";
}

// Traits no location can have: a negative size, cores or bandwidth.
void check_traits(std::string_view what, std::string_view name, const LocationTraits& traits) {
  auto refuse = [&](const std::string& why) {
    throw Error(fmt::format("cannot {} location '{}': {}; give 0 where it is not known", what, shown(name), why));
  };
  if (traits.capacity < 0) refuse("its capacity, " + std::to_string(traits.capacity) + " bytes, is negative");
  if (traits.cores < 0) refuse("its cores, " + std::to_string(traits.cores) + ", are negative");
  if (!(traits.bandwidth >= 0))
    refuse("its bandwidth, " + std::to_string(traits.bandwidth) + " GB/s, is not 0 or more");
}

}  // namespace

const Location& Hierarchy::add(std::string name, LocationKind kind, LocationTraits traits, std::string_view parent) {
  if (!is_valid_location_name(name))
    throw Error(
        fmt::format("cannot add location '{}': a name is 1 to 128 letters, digits, '_', '-' or '.'", shown(name)));
  check_traits("add", name, traits);
  if (find(name) != nullptr)
    throw Error(
        fmt::format("cannot add location '{}': a location with that name exists already; choose another name", name));
  Location* above = nullptr;
  if (parent.empty() && root_ != nullptr)
    throw Error(fmt::format("cannot add location '{}' as the root: the hierarchy has root '{}' already; name a parent",
                            name, root_->name()));
  if (!parent.empty()) {
    above = mutable_at(parent);
    if (above == nullptr)
      throw Error(
          fmt::format("cannot add location '{}' below '{}': no such location; {}", name, parent, known_names(*this)));
    if (above->executes())
      throw Error(
          fmt::format("cannot add location '{}' below '{}': locations of kind {} run regions and have no "
                      "children; add it below a memory or virtual location",
                      name, parent, name_of(above->kind())));
  }
  auto location = std::make_unique<Location>();
  location->name_ = name;
  location->kind_ = kind;
  location->traits_ = std::move(traits);
  location->parent_ = above;
  Location* added = location.get();
  by_name_.emplace(std::move(name), std::move(location));
  if (above != nullptr) above->children_.push_back(added);
  if (above == nullptr) root_ = added;
  ++version_;
  return *added;
}

namespace {

void unlink(Location* child, std::vector<Location*>& siblings) {
  siblings.erase(std::find(siblings.begin(), siblings.end(), child));
}

}  // namespace

void Hierarchy::remove(std::string_view name) {
  Location* location = mutable_at(name);
  if (location == nullptr)
    throw Error(fmt::format("cannot remove location '{}': no such location; {}", name, known_names(*this)));
  std::vector<std::string> doomed;
  walk(location, [&](const Location& below, int) { doomed.push_back(below.name()); });
  if (location->parent_ != nullptr) unlink(location, location->parent_->children_);
  if (location == root_) root_ = nullptr;
  for (const std::string& gone : doomed) by_name_.erase(gone);
  ++version_;
}

void Hierarchy::move(std::string_view name, std::string_view new_parent) {
  Location* location = mutable_at(name);
  if (location == nullptr)
    throw Error(fmt::format("cannot move location '{}': no such location; {}", name, known_names(*this)));
  Location* above = mutable_at(new_parent);
  if (above == nullptr)
    throw Error(fmt::format("cannot move location '{}' below '{}': no such location; {}", name, new_parent,
                            known_names(*this)));
  if (location == root_)
    throw Error(fmt::format("cannot move location '{}': it is the root; add a new root above it instead", name));
  if (is_above_or_same(*location, *above))
    throw Error(fmt::format("cannot move location '{}' below '{}': that is inside its own subtree", name, new_parent));
  if (above->executes())
    throw Error(
        fmt::format("cannot move location '{}' below '{}': locations of kind {} run regions and have no children", name,
                    new_parent, name_of(above->kind())));
  if (location->parent_ == above) return;
  unlink(location, location->parent_->children_);
  above->children_.push_back(location);
  location->parent_ = above;
  ++version_;
}

void Hierarchy::set_traits(std::string_view name, LocationTraits traits) {
  Location* location = mutable_at(name);
  if (location == nullptr)
    throw Error(fmt::format("cannot set the traits of location '{}': no such location; {}", name, known_names(*this)));
  check_traits("set the traits of", name, traits);
  location->traits_ = std::move(traits);
  ++version_;
}

bool Hierarchy::is_above_or_same(const Location& upper, const Location& lower) {
  for (const Location* up = &lower; up != nullptr; up = up->parent()) {
    if (up == &upper) return true;
  }
  return false;
}

std::vector<const Location*> Hierarchy::leaves(const Location& under) const {
  std::vector<const Location*> found;
  walk(&under, [&](const Location& location, int) {
    if (location.executes()) found.push_back(&location);
  });
  return found;
}

std::vector<const Location*> Hierarchy::all() const {
  std::vector<const Location*> found;
  found.reserve(size());
  walk(root_, [&](const Location& location, int) { found.push_back(&location); });
  return found;
}

bool Hierarchy::operator==(const Hierarchy& other) const {
  if (size() != other.size()) return false;
  auto mine = all();
  auto theirs = other.all();
  auto same = [](const Location* a, const Location* b) {
    bool same_parent = (a->parent() == nullptr) == (b->parent() == nullptr) &&
                       (a->parent() == nullptr || a->parent()->name() == b->parent()->name());
    return a->name() == b->name() && a->kind() == b->kind() && a->traits() == b->traits() && same_parent &&
           a->children().size() == b->children().size();
  };
  return std::equal(mine.begin(), mine.end(), theirs.begin(), theirs.end(), same);
}

// ---------------------------------------------------------------- printing

namespace {

/// "0-3,8,10-11" for a list of processing units.
std::string pu_ranges(const std::vector<unsigned>& pus) {
  std::string text;
  for (std::size_t i = 0; i < pus.size();) {
    std::size_t j = i;
    while (j + 1 < pus.size() && pus[j + 1] == pus[j] + 1) ++j;
    if (!text.empty()) text += ',';
    text += j == i ? fmt::format("{}", pus[i]) : fmt::format("{}-{}", pus[i], pus[j]);
    i = j + 1;
  }
  return text;
}

/// "16GiB", "512MiB", "3000B": the largest binary unit that divides exactly.
std::string bytes_text(std::int64_t bytes) {
  static constexpr std::pair<std::int64_t, const char*> units[] = {
      {std::int64_t{1} << 40, "TiB"}, {std::int64_t{1} << 30, "GiB"}, {1 << 20, "MiB"}, {1 << 10, "KiB"}};
  for (auto [size, unit] : units) {
    if (bytes != 0 && bytes % size == 0) return fmt::format("{}{}", bytes / size, unit);
  }
  return fmt::format("{}B", bytes);
}

/// The traits that are known, as "key=value" words.
std::string traits_text(const LocationTraits& traits) {
  std::string text;
  auto put = [&](const std::string& word) { text += " " + word; };
  if (traits.cores != 0) put(fmt::format("cores={}", traits.cores));
  if (!traits.pus.empty()) put("pus=" + pu_ranges(traits.pus));
  if (traits.capacity != 0) put("capacity=" + bytes_text(traits.capacity));
  if (traits.bandwidth != 0) put(fmt::format("bandwidth={}GB/s", traits.bandwidth));
  if (traits.vector_width != 0) put(fmt::format("vector={}B", traits.vector_width));
  if (traits.numa_node >= 0) put(fmt::format("numa={}", traits.numa_node));
  if (!traits.device.empty()) put("device=" + traits.device);
  if (!traits.model.empty()) put(fmt::format("model=\"{}\"", traits.model));
  if (traits.optional) put("optional");
  return text;
}

/// `text` as a JSON string literal.
std::string json_string(std::string_view text) {
  std::string quoted = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') {
      quoted += '\\';
      quoted += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      quoted += fmt::format("\\u{:04x}", static_cast<unsigned char>(c));
    } else {
      quoted += c;
    }
  }
  return quoted + "\"";
}

std::string traits_json(const LocationTraits& t) {
  std::string pus;
  for (unsigned pu : t.pus) pus += fmt::format("{}{}", pus.empty() ? "" : ",", pu);
  return fmt::format(
      "{{\"cores\":{},\"capacity\":{},\"bandwidth\":{},\"vector_width\":{},\"pus\":[{}],\"numa_node\":{},"
      "\"device\":{},\"model\":{},\"optional\":{}}}",
      t.cores, t.capacity, t.bandwidth, t.vector_width, pus, t.numa_node, json_string(t.device), json_string(t.model),
      t.optional);
}

}  // namespace

std::string Hierarchy::to_text() const {
  // Two spaces per level up to kDeepest levels; deeper lines say their depth
  // instead, so that a very deep tree prints in linear, not quadratic, size
  // (a chain of 100,000 locations would otherwise take 10 GB of spaces).
  constexpr int kDeepest = 32;
  std::string text;
  walk(root_, [&](const Location& location, int depth) {
    const std::string deep = depth > kDeepest ? fmt::format("(depth {}) ", depth) : "";
    text += fmt::format("{:{}}{}{} [{}]{}\n", "", 2 * std::min(depth, kDeepest), deep, location.name(),
                        name_of(location.kind()), traits_text(location.traits()));
  });
  return text;
}

std::string Hierarchy::to_json() const {
  std::string json;
  auto enter = [&](const Location& location, int) {
    if (!json.empty() && json.back() == '}') json += ',';
    json += fmt::format("{{\"name\":{},\"kind\":\"{}\",\"traits\":{},\"children\":[", json_string(location.name()),
                        name_of(location.kind()), traits_json(location.traits()));
  };
  walk(root_, enter, [&](const Location&, int) { json += "]}"; });
  return json.empty() ? "null" : json;
}

std::string Hierarchy::to_dot() const {
  std::string dot = "digraph hierarchy {\n  node [shape=box];\n";
  walk(root_, [&](const Location& location, int) {
    std::string label = location.name() + "\\n" + std::string(name_of(location.kind()));
    dot += fmt::format("  \"{}\" [label=\"{}\"{}];\n", location.name(), label,
                       location.executes() ? ", style=filled, fillcolor=lightgrey" : "");
    if (location.parent() != nullptr)
      dot += fmt::format("  \"{}\" -> \"{}\";\n", location.parent()->name(), location.name());
  });
  return dot + "}\n";
}

std::ostream& operator<<(std::ostream& out, const Hierarchy& hierarchy) { return out << hierarchy.to_text(); }

}  // namespace canopy
