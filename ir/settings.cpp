#include "settings.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <mutex>

#include "error.hpp"

extern char** environ;

namespace canopy {

namespace {

constexpr std::string_view kDumpKinds[] = {"ir", "llvm", "asm", "cost", "program", "opencl", "cuda", "spirv", "all"};

// The variable's value; nothing when it is unset (set but empty is "").
std::optional<std::string> value_if_set(const char* name) {
  const char* value = std::getenv(name);  // the library's only getenv
  return value ? std::optional<std::string>(value) : std::nullopt;
}

std::string variable(const char* name) { return value_if_set(name).value_or(""); }

// `value` when it is one of `words` (or empty), else bad_setting.
std::string word_of(const char* name, std::initializer_list<std::string_view> words, std::string_view allowed) {
  std::string value = variable(name);
  if (value.empty()) return value;
  for (auto word : words)
    if (value == word) return value;
  bad_setting(name, value, allowed);
}

// The number in `name` within [low, high] (low excluded when `open_low`).
std::optional<double> fraction_of(const char* name, double low, double high, bool open_low, std::string_view allowed) {
  const std::string text = variable(name);
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (*end != '\0' || !std::isfinite(value) || value > high || (open_low ? value <= low : value < low))
    bad_setting(name, text, allowed);
  return value;
}

std::string dump_list() {
  std::string value = variable("CANOPY_DUMP");
  std::string_view list = value;
  while (!list.empty()) {
    const auto comma = list.find(',');
    const std::string_view word = list.substr(0, comma);
    if (!word.empty() && std::find(std::begin(kDumpKinds), std::end(kDumpKinds), word) == std::end(kDumpKinds))
      bad_setting("CANOPY_DUMP", value,
                  "a comma-separated list of ir, llvm, asm, cost, program, opencl, cuda, spirv, or all ('" +
                      std::string(word) + "' is none of them)");
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return value;
}

// Snapshots are never freed (settings() hands out references); a new one is
// kept only when the environment changed.
std::mutex snapshots_mutex;
std::vector<std::unique_ptr<const Settings>> snapshots;
std::atomic<const Settings*> current{nullptr};

}  // namespace

Settings Settings::from_environment() {
  Settings s;
  s.cache_dir = variable("CANOPY_CACHE_DIR");
  s.cache_shared = word_of("CANOPY_CACHE_SHARED", {"group"},
                           "'group' to trust a cache directory your group may write, or leave it unset");
  s.dump = dump_list();
  s.dump_dir = variable("CANOPY_DUMP_DIR");
  s.streaming_stores = word_of("CANOPY_STREAMING_STORES", {"auto", "on", "off"}, "auto, on or off");
  s.simd = word_of("CANOPY_SIMD", {"auto", "on", "off"}, "auto, on or off");
  s.fuse = word_of("CANOPY_FUSE", {"on", "off", "eager"}, "on, off or eager");
  s.prefetch = word_of("CANOPY_PREFETCH", {"auto", "off"}, "auto or off");
  s.huge_pages = word_of("CANOPY_HUGE_PAGES", {"auto", "on", "off"}, "auto, on or off");
  s.device_memory = variable("CANOPY_DEVICE_MEMORY");
  if (const std::string width = variable("CANOPY_SIMD_WIDTH"); !width.empty()) {
    const std::string allowed = "a power of two from 2 to 64";
    if (width.size() > 2 || width.find_first_not_of("0123456789") != std::string::npos)
      bad_setting("CANOPY_SIMD_WIDTH", width, allowed);
    s.simd_width = std::stoi(width);
    if (s.simd_width < 2 || s.simd_width > 64 || (s.simd_width & (s.simd_width - 1)) != 0)
      bad_setting("CANOPY_SIMD_WIDTH", width, allowed);
  }
  s.config = variable("CANOPY_CONFIG");
  s.config_strict = word_of("CANOPY_CONFIG_STRICT", {"0", "1"}, "0 or 1") == "1";
  s.cpu_leaves = variable("CANOPY_CPU_LEAVES");  // any case: discovery checks it
  s.devices = variable("CANOPY_DEVICES");
  s.policy = variable("CANOPY_POLICY");
  if (s.policy.empty() && !variable("GECKO_POLICY").empty()) {  // Gecko's name; Canopy's wins when not empty
    s.policy = variable("GECKO_POLICY");
    s.policy_variable = "GECKO_POLICY";
  }
  s.adaptive_dead_band = fraction_of("CANOPY_ADAPTIVE_DEAD_BAND", 0, 1, false, "a number in [0, 1]");
  s.adaptive_damping = fraction_of("CANOPY_ADAPTIVE_DAMPING", 0, 1, true, "a number in (0, 1]");
  if (const std::string probe = word_of("CANOPY_ADAPTIVE_PROBE", {"0", "1"}, "0 or 1"); !probe.empty())
    s.adaptive_probe = probe == "1";
  s.lib_opencl = variable("CANOPY_LIBOPENCL");
  s.lib_cuda = variable("CANOPY_LIBCUDA");
  s.nvrtc = variable("CANOPY_NVRTC");
  s.lib_ze = variable("CANOPY_LIBZE");
  s.cuda_home = variable("CUDA_HOME");
  s.home = variable("HOME");
  s.temp_dir = variable("TMPDIR");
  s.search_path = variable("PATH");
  s.check = word_of("CANOPY_CHECK", {"off", "bounds"}, "bounds (check every array index of generated code) or off");
  s.split_writes = word_of("CANOPY_SPLIT_WRITES", {"auto", "merge", "one"},
                           "auto (merge where it pays), merge (always merge what each memory wrote) or one (run such "
                           "regions on one memory)");
  s.sequence_placement = word_of("CANOPY_SEQUENCE_PLACEMENT", {"on", "off", "always"},
                                 "on, off or always (follow wherever the inputs' split differs: for tests)");
  s.fault = variable("CANOPY_FAULT");
  s.test_rank_time = variable("CANOPY_TEST_RANK_TIME");
  s.trace = value_if_set("CANOPY_TRACE");
  s.mpi_rank = variable("OMPI_COMM_WORLD_RANK");
  if (s.mpi_rank.empty()) s.mpi_rank = variable("PMI_RANK");
  return s;
}

bool Settings::dumps(std::string_view kind) const {
  std::string_view list = dump;
  while (!list.empty()) {
    const auto comma = list.find(',');
    const std::string_view word = list.substr(0, comma);
    if (word == kind || word == "all") return true;
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return false;
}

const Settings& settings() {
  if (const Settings* s = current.load(std::memory_order_acquire)) return *s;
  try {
    return reload_settings();
  } catch (const Error&) {
    // Code that runs before any Runtime: a bad value is reported when the
    // Runtime is made; until then every variable counts as unset.
    std::lock_guard lock(snapshots_mutex);
    if (const Settings* s = current.load(std::memory_order_acquire)) return *s;
    snapshots.push_back(std::make_unique<const Settings>());
    current.store(snapshots.back().get(), std::memory_order_release);
    return *snapshots.back();
  }
}

const Settings& reload_settings() {
  Settings read = Settings::from_environment();
  std::lock_guard lock(snapshots_mutex);
  if (const Settings* s = current.load(std::memory_order_acquire); s && *s == read) return *s;
  snapshots.push_back(std::make_unique<const Settings>(std::move(read)));
  current.store(snapshots.back().get(), std::memory_order_release);
  return *snapshots.back();
}

const std::vector<std::string_view>& setting_names() {
  static const std::vector<std::string_view> names = {"CANOPY_CACHE_DIR",
                                                      "CANOPY_CACHE_SHARED",
                                                      "CANOPY_DUMP",
                                                      "CANOPY_DUMP_DIR",
                                                      "CANOPY_TRACE",
                                                      "CANOPY_STREAMING_STORES",
                                                      "CANOPY_SIMD",
                                                      "CANOPY_SIMD_WIDTH",
                                                      "CANOPY_FUSE",
                                                      "CANOPY_PREFETCH",
                                                      "CANOPY_HUGE_PAGES",
                                                      "CANOPY_DEVICE_MEMORY",
                                                      "CANOPY_CONFIG",
                                                      "CANOPY_CONFIG_STRICT",
                                                      "CANOPY_CPU_LEAVES",
                                                      "CANOPY_DEVICES",
                                                      "CANOPY_POLICY",
                                                      "GECKO_POLICY",
                                                      "CANOPY_ADAPTIVE_DEAD_BAND",
                                                      "CANOPY_ADAPTIVE_DAMPING",
                                                      "CANOPY_ADAPTIVE_PROBE",
                                                      "CANOPY_LIBOPENCL",
                                                      "CANOPY_LIBCUDA",
                                                      "CANOPY_NVRTC",
                                                      "CANOPY_LIBZE",
                                                      "CUDA_HOME",
                                                      "HOME",
                                                      "CANOPY_CHECK",
                                                      "CANOPY_SPLIT_WRITES",
                                                      "CANOPY_SEQUENCE_PLACEMENT",
                                                      "CANOPY_FAULT",
                                                      "CANOPY_TEST_RANK_TIME",
                                                      "OMPI_COMM_WORLD_RANK",
                                                      "PMI_RANK"};
  return names;
}

void bad_setting(std::string_view name, std::string_view value, std::string_view allowed) {
  throw Error(std::string(name) + "='" + std::string(value) + "' is not allowed; use " + std::string(allowed));
}

std::vector<std::string> environment_starting_with(const std::vector<std::string_view>& prefixes) {
  std::vector<std::string> found;
  for (char** entry = environ; *entry; ++entry) {
    const std::string_view variable(*entry);
    for (std::string_view prefix : prefixes)
      if (variable.substr(0, prefix.size()) == prefix) {
        found.emplace_back(variable);
        break;
      }
  }
  std::sort(found.begin(), found.end());
  return found;
}

}  // namespace canopy
