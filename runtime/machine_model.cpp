#include "machine_model.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include <canopy/ir/error.hpp>
#include <canopy/jit/c_source.hpp>
#include <canopy/jit/checked_file.hpp>
#include <canopy/jit/cpu_compiler.hpp>
#include <canopy/jit/hash.hpp>

#ifndef CANOPY_VERSION_STRING
#define CANOPY_VERSION_STRING "unknown"
#endif

namespace canopy {

namespace {

constexpr std::string_view kMagic = "canopy-machine-model 4";  // 4: checked_file's checksum

/// `text` on one line without tabs, for the fingerprint and the file's fields.
std::string one_line(std::string_view text) {
  std::string out(text);
  for (char& c : out)
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  return out;
}

// ---- the file ---------------------------------------------------------------

std::string number(double value) { return fmt::format("{:.17g}", value); }

std::string caches_text(const std::vector<CacheLevel>& caches) {
  std::string text;
  for (const auto& c : caches) {
    if (!text.empty()) text += ',';
    text += fmt::format("{}:{}:{}:{}", c.level, c.bytes, c.line_bytes, c.cores_sharing);
  }
  return text;
}

std::optional<std::vector<CacheLevel>> parse_caches(const std::string& text) {
  std::vector<CacheLevel> caches;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    CacheLevel c;
    long long bytes = 0;
    char tail = 0;
    if (std::sscanf(item.c_str(), "%d:%lld:%d:%d%c", &c.level, &bytes, &c.line_bytes, &c.cores_sharing, &tail) != 4)
      return std::nullopt;
    c.bytes = bytes;
    caches.push_back(c);
  }
  return caches;
}

std::optional<LocationKind> kind_named(std::string_view name) {
  for (auto kind :
       {LocationKind::Virtual, LocationKind::HostMemory, LocationKind::UnifiedMemory, LocationKind::FileMemory,
        LocationKind::Cpu, LocationKind::OpenCL, LocationKind::Cuda, LocationKind::LevelZero})
    if (name_of(kind) == name) return kind;
  return std::nullopt;
}

std::string leaf_line(const LeafModel& m) {
  std::string line = "leaf";
  auto field = [&](std::string_view key, const std::string& value) {
    line += '\t';
    line += key;
    line += '=';
    line += one_line(value);
  };
  field("name", m.leaf);
  field("kind", std::string(name_of(m.kind)));
  field("device", m.device);
  field("model", m.model);
  field("cores", std::to_string(m.cores));
  field("vector_bytes", std::to_string(m.vector_bytes));
  field("line_bytes", std::to_string(m.line_bytes));
  field("caches", caches_text(m.caches));
  field("cache_bytes", std::to_string(m.cache_bytes));
  field("clock_ghz", number(m.clock_ghz));
  field("peak_gflops", number(m.peak_gflops));
  field("gflops_f64", number(m.gflops_f64));
  field("gflops_f32", number(m.gflops_f32));
  field("bandwidth_gbs", number(m.bandwidth_gbs));
  field("access_gps", number(m.access_gps));
  field("stencil_bandwidth_gbs", number(m.stencil_bandwidth_gbs));
  field("launch_seconds", number(m.launch_seconds));
  field("streaming_threshold", std::to_string(m.streaming_threshold));
  field("calibrated", m.calibrated ? "1" : "0");
  field("note", m.note);
  return line + '\n';
}

std::optional<LeafModel> parse_leaf(const std::string& line) {
  std::map<std::string, std::string> fields;
  std::stringstream in(line);
  std::string item;
  std::getline(in, item, '\t');
  if (item != "leaf") return std::nullopt;
  while (std::getline(in, item, '\t')) {
    const auto eq = item.find('=');
    if (eq == std::string::npos) return std::nullopt;
    fields[item.substr(0, eq)] = item.substr(eq + 1);
  }
  for (const char* key : {"name",           "kind",
                          "device",         "model",
                          "cores",          "vector_bytes",
                          "line_bytes",     "caches",
                          "cache_bytes",    "clock_ghz",
                          "peak_gflops",    "gflops_f64",
                          "gflops_f32",     "bandwidth_gbs",
                          "access_gps",     "stencil_bandwidth_gbs",
                          "launch_seconds", "streaming_threshold",
                          "calibrated",     "note"})
    if (!fields.count(key)) return std::nullopt;
  LeafModel m;
  auto integer = [&](const char* key, auto& out) {
    char* end = nullptr;
    const std::string& text = fields[key];
    const long long v = std::strtoll(text.c_str(), &end, 10);
    out = static_cast<std::remove_reference_t<decltype(out)>>(v);
    return !text.empty() && *end == '\0';
  };
  auto real = [&](const char* key, double& out) {
    char* end = nullptr;
    const std::string& text = fields[key];
    out = std::strtod(text.c_str(), &end);
    return !text.empty() && *end == '\0' && std::isfinite(out) && out >= 0;
  };
  auto kind = kind_named(fields["kind"]);
  auto caches = parse_caches(fields["caches"]);
  if (!kind || !caches) return std::nullopt;
  m.leaf = fields["name"];
  m.kind = *kind;
  m.device = fields["device"];
  m.model = fields["model"];
  m.caches = std::move(*caches);
  m.note = fields["note"];
  int calibrated = 0;
  const bool ok =
      integer("cores", m.cores) && integer("vector_bytes", m.vector_bytes) && integer("line_bytes", m.line_bytes) &&
      integer("cache_bytes", m.cache_bytes) && real("clock_ghz", m.clock_ghz) && real("peak_gflops", m.peak_gflops) &&
      real("gflops_f64", m.gflops_f64) && real("gflops_f32", m.gflops_f32) && real("bandwidth_gbs", m.bandwidth_gbs) &&
      real("access_gps", m.access_gps) && real("stencil_bandwidth_gbs", m.stencil_bandwidth_gbs) &&
      real("launch_seconds", m.launch_seconds) && integer("streaming_threshold", m.streaming_threshold) &&
      m.streaming_threshold >= -1 && integer("calibrated", calibrated) && (calibrated == 0 || calibrated == 1);
  if (!ok || m.leaf.empty() || m.line_bytes <= 0) return std::nullopt;
  m.calibrated = calibrated == 1;
  return m;
}

std::string hex64(std::uint64_t value) { return fmt::format("{:016x}", value); }

std::string file_text(const MachineModel& model) {
  std::string text = std::string(kMagic) + '\n';
  text += "fingerprint\t" + one_line(model.fingerprint) + '\n';
  for (const auto& leaf : model.leaves) text += leaf_line(leaf);
  return text + "end\t" + std::to_string(model.leaves.size()) + '\n';
}

// ---- units for people ---------------------------------------------------------

std::string bytes_text(std::int64_t bytes) {
  if (bytes <= 0) return "?";
  if (bytes % (1 << 20) == 0) return fmt::format("{} MiB", bytes >> 20);
  if (bytes % (1 << 10) == 0) return fmt::format("{} KiB", bytes >> 10);
  return fmt::format("{} B", bytes);
}

std::string rate_text(double value, const char* unit) {
  if (value <= 0) return "?";
  return fmt::format("{:.4g} {}", value, unit);
}

}  // namespace

const CacheLevel* last_level(const std::vector<CacheLevel>& caches) {
  const CacheLevel* last = nullptr;
  for (const auto& c : caches)
    if (!last || c.level > last->level) last = &c;
  return last;
}

// ---- RatioCheck -------------------------------------------------------------

double RatioCheck::difference() const {
  if (!(predicted_a > 0 && predicted_b > 0 && measured_a > 0 && measured_b > 0))
    return std::numeric_limits<double>::quiet_NaN();
  return std::abs(predicted_ratio() / measured_ratio() - 1.0);
}

RatioCheck check_ratio(double predicted_a, double predicted_b, double measured_a, double measured_b) {
  return RatioCheck{predicted_a, predicted_b, measured_a, measured_b};
}

// ---- fingerprint and paths ----------------------------------------------------

std::string fingerprint_of(const NodeInventory& node, const Hierarchy& tree,
                           const std::map<std::string, std::string>& drivers) {
  std::string text = "canopy " CANOPY_VERSION_STRING "; cpu " + node.cpu_model + "; cores " +
                     std::to_string(node.cores.size()) + "; vector " + std::to_string(node.vector_width);
  // NUMA nodes by index only: a node's memory is not a property of the
  // machine's speed, and it moves under a program (memory hot-plug, a virtual
  // machine's balloon; seen on a GPU VM, where two Runtimes of one process
  // saw 7.3 and 6.1 GB and so could not find each other's learned splits).
  text += "; numa";
  for (const auto& n : node.numa_nodes) text += fmt::format(" {}", n.index);
  text += "; caches " + caches_text(node.caches);
  for (const auto& d : node.devices) {
    auto driver = drivers.find(d.id);
    text += "; device " + d.id + " " + d.name + " [" + (driver == drivers.end() ? "" : driver->second) + "]";
  }
  if (tree.root())
    for (const Location* leaf : tree.leaves(*tree.root())) {
      const auto& t = leaf->traits();
      text += fmt::format("; leaf {} {} cores={} pus=", leaf->name(), name_of(leaf->kind()), t.cores);
      for (std::size_t i = 0; i < t.pus.size(); ++i) text += (i ? "," : "") + std::to_string(t.pus[i]);
      if (!t.device.empty()) text += " device=" + t.device;
    }
  return one_line(text);
}

std::string machine_model_directory(const std::string& cache_dir) { return jit::cache_directory(cache_dir); }

std::string machine_model_path(const std::string& directory, const std::string& fingerprint) {
  return (std::filesystem::path(directory) / ("machine-model-" + hex64(jit::hash64(fingerprint)) + ".txt")).string();
}

// ---- MachineModel -------------------------------------------------------------

std::optional<MachineModel> MachineModel::load(const std::string& path) {
  const jit::CheckedRead read = jit::read_checked_file(path, jit::cache_sharing_from_environment());
  if (read.state != jit::FileState::Whole) return std::nullopt;
  std::stringstream lines(read.payload);
  std::string line;
  if (!std::getline(lines, line) || line != kMagic) return std::nullopt;
  MachineModel model;
  if (!std::getline(lines, line) || line.rfind("fingerprint\t", 0) != 0) return std::nullopt;
  model.fingerprint = line.substr(std::string_view("fingerprint\t").size());
  bool ended = false;
  while (std::getline(lines, line)) {
    if (ended) return std::nullopt;
    if (line.rfind("end\t", 0) == 0) {
      if (line != "end\t" + std::to_string(model.leaves.size())) return std::nullopt;
      ended = true;
      continue;
    }
    auto leaf = parse_leaf(line);
    if (!leaf) return std::nullopt;
    model.leaves.push_back(std::move(*leaf));
  }
  if (!ended) return std::nullopt;
  model.source = path;
  return model;
}

void MachineModel::save(const std::string& path) const {
  const jit::CheckedWrite wrote =
      jit::write_checked_file(path, file_text(*this), jit::cache_sharing_from_environment());
  if (!wrote.written && !wrote.untrusted)  // an untrusted directory has been warned about
    throw Error("cannot keep the machine model in '" + path + "': " + wrote.why +
                "; set CANOPY_CACHE_DIR to a writable directory with free space");
}

const LeafModel* MachineModel::find(std::string_view leaf) const {
  for (const auto& m : leaves)
    if (m.leaf == leaf) return &m;
  return nullptr;
}

const LeafModel& MachineModel::at(std::string_view leaf) const {
  if (const LeafModel* m = find(leaf)) return *m;
  std::string known;
  for (const auto& m : leaves) known += (known.empty() ? "" : ", ") + m.leaf;
  throw Error("the machine model has no leaf '" + std::string(leaf) +
              "' (it knows: " + (known.empty() ? std::string("none") : known) +
              "); the tree changed since it was calibrated: calibrate again (MachineModel::load_or_calibrate)");
}

ir::CostOptions MachineModel::cost_options(std::string_view leaf, ir::CostOptions base) const {
  const LeafModel& m = at(leaf);
  base.line_bytes = m.line_bytes > 0 ? m.line_bytes : base.line_bytes;
  if (const CacheLevel* llc = last_level(m.caches)) {
    double share = static_cast<double>(llc->bytes) / std::max(1, llc->cores_sharing);
    for (const auto& c : m.caches)
      if (c.level == 2 && c.level != llc->level) share += static_cast<double>(c.bytes) / std::max(1, c.cores_sharing);
    base.cache_bytes = share / 2;
  }
  return base;
}

ir::KernelCost MachineModel::cost_of(const ir::Kernel& kernel, std::string_view leaf, std::array<std::int64_t, 3> range,
                                     ir::CostOptions base) const {
  const LeafModel& m = at(leaf);
  ir::CostOptions options = cost_options(leaf, std::move(base));
  options.range = range;
  bool reduces = false;
  for (const auto& p : kernel.params) reduces = reduces || p.is_reduction();
  // The backend's rule for streaming stores: the CPU backend's threshold
  // (backends/cpu/cpu_device.cpp, kept by describe_leaf; twice cache_bytes in
  // a model that has none) as CANOPY_STREAMING_STORES now says, or the
  // threshold a device gave for the kernels that suit its streaming code.
  std::optional<std::size_t> threshold;
  if (m.kind == LocationKind::Cpu) {
    const std::size_t automatic = m.streaming_threshold >= 0
                                      ? static_cast<std::size_t>(m.streaming_threshold)
                                      : backends::streaming_threshold_for_cache(
                                            static_cast<std::size_t>(std::max<std::int64_t>(m.cache_bytes, 0)));
    threshold = backends::streaming_threshold_from_environment(automatic);
  } else if (m.streaming_threshold >= 0 && jit::streaming_entry_type(kernel)) {
    threshold = static_cast<std::size_t>(m.streaming_threshold);
  }
  double points = 1;
  for (int d = 0; d < kernel.dims; ++d) points *= static_cast<double>(std::max<std::int64_t>(range[d], 0));
  if (threshold && !options.streaming_stores && !reduces && points > 0) {
    std::size_t written = 0;
    for (int p : jit::streaming_candidates(kernel))
      written += static_cast<std::size_t>(points) * ir::size_of(kernel.params[static_cast<std::size_t>(p)].type);
    std::vector<std::int64_t> elements(kernel.params.size(), 0);
    for (const auto& [p, extents] : options.array_extents)
      if (p >= 0 && static_cast<std::size_t>(p) < elements.size()) {
        elements[static_cast<std::size_t>(p)] = 1;
        for (std::int64_t e : extents) elements[static_cast<std::size_t>(p)] *= e;
      }
    options.streaming_stores = backends::takes_streaming_stores(
        written, backends::bytes_passed(kernel, static_cast<std::int64_t>(points), elements), *threshold);
  }
  return ir::cost_of(kernel, options);
}

double MachineModel::throughput(const ir::KernelCost& cost, std::string_view leaf) const {
  const LeafModel& m = at(leaf);
  if (!m.calibrated || m.bandwidth_gbs <= 0 || m.gflops_f64 <= 0)
    throw Error("the machine model has no measurements for leaf '" + m.leaf + "'" +
                (m.note.empty() ? std::string() : " (" + m.note + ")") + "; calibrate again or leave it out");
  const double f32_rate = m.gflops_f32 > 0 ? m.gflops_f32 : m.gflops_f64;
  const double compute = cost.flops_f64 / (m.gflops_f64 * 1e9) + cost.flops_f32 / (f32_rate * 1e9);
  const bool stencil_reads = std::any_of(cost.arrays.begin(), cost.arrays.end(), [](const ir::ArrayCost& a) {
    return a.read_pattern == ir::AccessPattern::Stencil;
  });
  const double bandwidth = stencil_reads && m.stencil_bandwidth_gbs > 0 ? m.stencil_bandwidth_gbs : m.bandwidth_gbs;
  const double memory = cost.bytes() / (bandwidth * 1e9);
  const double issue = m.access_gps > 0 ? cost.accesses() / (m.access_gps * 1e9) : 0.0;
  const double per_point = std::max({compute, memory, issue});
  return per_point > 0 ? 1.0 / per_point : std::numeric_limits<double>::infinity();
}

double MachineModel::throughput(const ir::KernelCost& cost, const Location& leaf) const {
  return throughput(cost, leaf.name());
}

double MachineModel::predict_seconds(const ir::KernelCost& cost, std::string_view leaf, std::int64_t points) const {
  const double rate = throughput(cost, leaf);
  const double work = points <= 0 || std::isinf(rate) ? 0.0 : static_cast<double>(points) / rate;
  return at(leaf).launch_seconds + work;
}

double MachineModel::predict_seconds(const ir::KernelCost& cost, const Location& leaf, std::int64_t points) const {
  return predict_seconds(cost, leaf.name(), points);
}

std::vector<double> MachineModel::balanced_shares(const ir::KernelCost& cost, const std::vector<std::string>& names,
                                                  std::int64_t points) const {
  const std::size_t n = names.size();
  std::vector<double> rate(n), latency(n), shares(n, 0.0);
  for (std::size_t i = 0; i < n; ++i) {
    rate[i] = throughput(cost, names[i]);
    latency[i] = at(names[i]).launch_seconds;
  }
  if (n == 0) return shares;
  // A kernel that costs nothing: the leaf with the least latency takes it all.
  for (std::size_t i = 0; i < n; ++i)
    if (std::isinf(rate[i])) {
      std::size_t best = 0;
      for (std::size_t j = 1; j < n; ++j)
        if (latency[j] < latency[best]) best = j;
      shares[best] = 1.0;
      return shares;
    }
  // Equal finishing time t: leaf i runs (t - latency_i) * rate_i points; the
  // leaves whose latency alone reaches t are left out, slowest to start first.
  std::vector<bool> active(n, true);
  const double total = static_cast<double>(std::max<std::int64_t>(points, 0));
  for (;;) {
    double rates = 0, weighted = 0;
    for (std::size_t i = 0; i < n; ++i)
      if (active[i]) {
        rates += rate[i];
        weighted += latency[i] * rate[i];
      }
    const double t = (total + weighted) / rates;
    std::size_t worst = n;
    for (std::size_t i = 0; i < n; ++i)
      if (active[i] && latency[i] >= t && (worst == n || latency[i] > latency[worst])) worst = i;
    if (worst == n || std::count(active.begin(), active.end(), true) == 1) {
      double sum = 0;
      for (std::size_t i = 0; i < n; ++i) {
        shares[i] = active[i] ? std::max(0.0, (t - latency[i]) * rate[i]) : 0.0;
        sum += shares[i];
      }
      if (sum <= 0) {
        // An empty range: in proportion to the rates.
        sum = 0;
        for (std::size_t i = 0; i < n; ++i) sum += (shares[i] = active[i] ? rate[i] : 0.0);
      }
      for (auto& s : shares) s /= sum;
      return shares;
    }
    active[worst] = false;
  }
}

std::string MachineModel::describe() const {
  std::string text = fmt::format("machine model: {} leaves ({}", leaves.size(), source.empty() ? "?" : source);
  if (calibration_seconds > 0) text += fmt::format(", calibration took {:.3f} s", calibration_seconds);
  text += ")\n";
  text += fmt::format("{:<12} {:<7} {:>5} {:>6} {:>5} {:>9} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10}  {}\n",
                      "leaf", "kind", "cores", "vector", "line", "clock", "peak f64", "f64", "f32", "bandwidth",
                      "stencil bw", "accesses", "latency", "caches");
  for (const auto& m : leaves) {
    std::string caches;
    for (const auto& c : m.caches)
      caches += fmt::format("{}L{} {}{}", caches.empty() ? "" : ", ", c.level, bytes_text(c.bytes),
                            c.cores_sharing > 1 ? fmt::format(" (shared by {})", c.cores_sharing) : "");
    if (caches.empty()) caches = "?";
    text += fmt::format(
        "{:<12} {:<7} {:>5} {:>6} {:>5} {:>9} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10}  {}\n", m.leaf,
        name_of(m.kind), m.cores, m.vector_bytes > 0 ? fmt::format("{} B", m.vector_bytes) : "?",
        fmt::format("{} B", m.line_bytes), rate_text(m.clock_ghz, "GHz"), rate_text(m.peak_gflops, "GF/s"),
        rate_text(m.gflops_f64, "GF/s"), rate_text(m.gflops_f32, "GF/s"), rate_text(m.bandwidth_gbs, "GB/s"),
        rate_text(m.stencil_bandwidth_gbs, "GB/s"), rate_text(m.access_gps, "G/s"),
        m.launch_seconds > 0 ? fmt::format("{:.3g} us", m.launch_seconds * 1e6) : "?", caches);
    if (!m.model.empty() || !m.note.empty())
      text += fmt::format("{:<12} {}{}{}\n", "", m.model, !m.model.empty() && !m.note.empty() ? "; " : "", m.note);
  }
  text +=
      "bandwidth: STREAM triad in the cost model's bytes; stencil bw: the same for a 2-D 5-point stencil over a "
      "grid larger than the caches (used for kernels that read stencil windows); f64/f32: multiply-add chains; "
      "accesses: loads and stores issued by the stencil in cache; latency: launch + pause of one point\n";
  text += "fingerprint: " + fingerprint + "\n";
  return text;
}

std::ostream& operator<<(std::ostream& out, const MachineModel& model) { return out << model.describe(); }

}  // namespace canopy
