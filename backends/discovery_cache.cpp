#include "discovery_cache.hpp"

#include <dirent.h>
#include <dlfcn.h>
#include <sched.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <sstream>

#include <canopy/ir/error.hpp>
#include <canopy/ir/settings.hpp>
#include <canopy/jit/checked_file.hpp>
#include <canopy/jit/disk_cache.hpp>
#include <canopy/jit/hash.hpp>

#include "discover.hpp"

#ifndef CANOPY_VERSION_STRING
#define CANOPY_VERSION_STRING "unknown"
#endif

namespace canopy::backends {

namespace {

// ---- the key ----

std::string file_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

/// "size mtime" of a file, or "missing".
std::string stamp(const std::string& path) {
  struct stat s {};
  if (stat(path.c_str(), &s) != 0) return "missing";
  return std::to_string(s.st_size) + " " + std::to_string(s.st_mtim.tv_sec) + "." + std::to_string(s.st_mtim.tv_nsec);
}

std::string own_library() {
  Dl_info info{};
  if (!dladdr(reinterpret_cast<void*>(&discovery_key), &info) || !info.dli_fname) return "";
  return info.dli_fname;
}

/// Every absolute path of a regular file in `value` (separated by ':' or
/// ','), stamped. Folders are not: the cache folder itself changes with
/// every file written into it.
std::string stamps_of_paths(std::string_view value) {
  std::string text;
  std::size_t start = 0;
  while (start <= value.size()) {
    std::size_t end = value.find_first_of(":,", start);
    if (end == std::string_view::npos) end = value.size();
    const std::string part(value.substr(start, end - start));
    struct stat s {};
    if (!part.empty() && part[0] == '/' && stat(part.c_str(), &s) == 0 && S_ISREG(s.st_mode))
      text += " [" + part + " " + stamp(part) + "]";
    start = end + 1;
  }
  return text;
}

std::string icd_files() {
  std::vector<std::string> names;
  if (DIR* dir = opendir("/etc/OpenCL/vendors")) {
    while (const dirent* entry = readdir(dir))
      if (entry->d_name[0] != '.') names.emplace_back(entry->d_name);
    closedir(dir);
  }
  std::sort(names.begin(), names.end());
  std::string text;
  for (const std::string& name : names) text += "icd " + name + ": " + file_text("/etc/OpenCL/vendors/" + name) + "\n";
  return text;
}

std::string affinity() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return "unknown";
  std::string text;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
    if (CPU_ISSET(cpu, &set)) text += std::to_string(cpu) + " ";
  return text;
}

// ---- the file ----

std::string escaped(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '\n')
      out += "\\n";
    else if (c == '\t')
      out += "\\t";
    else
      out += c;
  }
  return out;
}

std::string unescaped(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\\' || i + 1 == text.size()) {
      out += text[i];
      continue;
    }
    const char c = text[++i];
    out += c == 'n' ? '\n' : c == 't' ? '\t' : c;
  }
  return out;
}

/// DeviceInfo's fields as name/text pairs, for writing and reading alike.
template <class Info, class Visit>
void fields_of(Info& d, Visit&& visit) {
  visit("id", d.id);
  visit("name", d.name);
  visit("vendor", d.vendor);
  visit("driver_version", d.driver_version);
  visit("fingerprint", d.fingerprint);
  visit("pci_bus_id", d.pci_bus_id);
  visit("compute_units", d.compute_units);
  visit("global_memory", d.global_memory);
  visit("max_allocation", d.max_allocation);
  visit("max_work_group", d.max_work_group);
  visit("preferred_vector_width", d.preferred_vector_width);
  visit("fp64", d.fp64);
  visit("host_memory", d.host_memory);
  visit("on_host_cores", d.on_host_cores);
  visit("streaming_threshold", d.streaming_threshold);
  visit("emulated", d.emulated);
}

template <class T>
std::string text_of(const T& value) {
  if constexpr (std::is_same_v<T, std::string>)
    return escaped(value);
  else
    return std::to_string(value);
}

template <class T>
bool read_into(const std::string& text, T& value) {
  if constexpr (std::is_same_v<T, std::string>) {
    value = unescaped(text);
    return true;
  } else {
    try {
      std::size_t used = 0;
      const long long number = std::stoll(text, &used);
      value = static_cast<T>(number);
      return used == text.size();
    } catch (const std::exception&) {
      return false;
    }
  }
}

/// One backend as remembered: its devices' information, or why it had none.
struct Remembered {
  std::string backend;
  std::string absent_reason;
  std::vector<DeviceInfo> devices;
};

std::string encode(const std::vector<Remembered>& backends) {
  std::string text = "canopy discovery 1\n";
  for (const Remembered& b : backends) {
    text += "backend\t" + escaped(b.backend) + "\nabsent\t" + escaped(b.absent_reason) + "\n";
    for (const DeviceInfo& d : b.devices) {
      text += "device\n";
      fields_of(d,
                [&](const char* name, const auto& value) { text += std::string(name) + "\t" + text_of(value) + "\n"; });
    }
  }
  return text;
}

/// The backends in `text`, or nothing when it is not a whole, known file.
std::optional<std::vector<Remembered>> decode(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  if (!std::getline(in, line) || line != "canopy discovery 1") return std::nullopt;
  std::vector<Remembered> backends;
  while (std::getline(in, line)) {
    const auto tab = line.find('\t');
    const std::string name = line.substr(0, tab), value = tab == std::string::npos ? "" : line.substr(tab + 1);
    if (name == "backend") {
      backends.push_back({unescaped(value), "", {}});
    } else if (backends.empty()) {
      return std::nullopt;
    } else if (name == "absent") {
      backends.back().absent_reason = unescaped(value);
    } else if (name == "device") {
      backends.back().devices.emplace_back();
      backends.back().devices.back().backend = backends.back().backend;
    } else {
      if (backends.back().devices.empty()) return std::nullopt;
      bool known = false, good = true;
      fields_of(backends.back().devices.back(), [&](const char* field, auto& slot) {
        if (name != field) return;
        known = true;
        good = read_into(value, slot);
      });
      if (!known || !good) return std::nullopt;
    }
  }
  return backends;
}

// ---- stand-ins ----

/// One backend, started at most once, by the first stand-in that needs it.
class BackendStart {
 public:
  BackendStart(std::string backend, std::string cache_file)
      : backend_(std::move(backend)), cache_file_(std::move(cache_file)) {}

  std::shared_ptr<Device> device(const DeviceInfo& expected) {
    std::call_once(once_, [&] { found_ = discover_backend(backend_); });
    for (const auto& device : found_.devices)
      if (device->info().id == expected.id && device->info().fingerprint == expected.fingerprint) return device;
    std::remove(cache_file_.c_str());
    throw Error("the " + backend_ + " device " + expected.id + " (" + expected.name +
                ") that Canopy remembered from an earlier run on this node (" + cache_file_ + ") is not there now" +
                (found_.absent_reason.empty() ? "" : ": " + found_.absent_reason) +
                "; the file is removed, so the next run discovers the node afresh");
  }

 private:
  const std::string backend_, cache_file_;
  std::once_flag once_;
  BackendDevices found_;
};

class StandIn final : public Device {
 public:
  StandIn(DeviceInfo info, std::shared_ptr<BackendStart> start) : info_(std::move(info)), start_(std::move(start)) {}

  Device& real() {
    std::call_once(once_, [&] {
      held_ = start_->device(info_);
      real_.store(held_.get(), std::memory_order_release);
    });
    return *real_.load(std::memory_order_acquire);
  }

  const DeviceInfo& info() const override { return info_; }
  const jit::DiskCache* disk_cache() const override { return const_cast<StandIn*>(this)->real().disk_cache(); }
  Buffer allocate(std::size_t bytes) override { return real().allocate(bytes); }
  void free(Buffer buffer) noexcept override {
    // A buffer came from allocate(), so the device has started.
    if (Device* device = real_.load(std::memory_order_acquire)) device->free(buffer);
  }
  void copy_in(Buffer buffer, std::size_t offset, const void* source, std::size_t bytes) override {
    real().copy_in(buffer, offset, source, bytes);
  }
  void copy_out(Buffer buffer, std::size_t offset, void* destination, std::size_t bytes) override {
    real().copy_out(buffer, offset, destination, bytes);
  }
  void fill(Buffer buffer, std::size_t first, std::size_t count, const ScalarArg& value) override {
    real().fill(buffer, first, count, value);
  }
  std::shared_ptr<Program> compile(std::shared_ptr<const ir::Kernel> optimized) override {
    return real().compile(std::move(optimized));
  }
  std::vector<ReductionValue> run(const Program& program, const std::vector<KernelArg>& args,
                                  const Range& range) override {
    return real().run(program, args, range);
  }

 private:
  const DeviceInfo info_;
  const std::shared_ptr<BackendStart> start_;
  std::once_flag once_;
  std::shared_ptr<Device> held_;
  std::atomic<Device*> real_{nullptr};
};

}  // namespace

std::string discovery_key() {
  std::string text = "canopy device discovery 1\ncanopy " CANOPY_VERSION_STRING "\n";
  const std::string library = own_library();
  text += "build " + library + " " + stamp(library) + "\n";
  text += "boot " + file_text("/proc/sys/kernel/random/boot_id");
  text += "loader cache " + stamp("/etc/ld.so.cache") + "\n";
  text += icd_files();
  text += "affinity " + affinity() + "\n";
  const auto variables =
      environment_starting_with({"CANOPY_", "POCL_", "OCL_", "OPENCL_", "CUDA_", "ZE_", "NEO_", "LD_LIBRARY_PATH="});
  for (const std::string& v : variables) text += "env " + v + stamps_of_paths(v.substr(v.find('=') + 1)) + "\n";
  return jit::hash_hex(text);
}

Device& started(Device& device) {
  auto* stand_in = dynamic_cast<StandIn*>(&device);
  return stand_in ? stand_in->real() : device;
}

std::vector<BackendDevices> discover_devices_cached(const std::function<bool(std::string_view)>& wanted,
                                                    const std::string& why_not, const std::string& cache_dir,
                                                    const std::string& discovery) {
  const bool any = std::any_of(backend_names().begin(), backend_names().end(), wanted);
  if (!any || cache_dir.empty() || cache_dir == "off") return discover_devices(wanted, why_not);
  std::optional<jit::DiskCache> cache;
  std::string key;
  try {
    cache.emplace(cache_dir);
    key = "devices-" + (discovery.empty() ? discovery_key() : discovery);
  } catch (const std::exception&) {
    return discover_devices(wanted, why_not);  // CANOPY_CACHE_SHARED is bad: the runtime says so elsewhere
  }
  const std::string file = cache->path_of(key);
  std::vector<BackendDevices> found;
  if (auto text = cache->get(key)) {
    if (auto remembered = decode(*text)) {
      for (const Remembered& r : *remembered) {
        BackendDevices devices{r.backend, {}, r.absent_reason};
        auto start = std::make_shared<BackendStart>(r.backend, file);
        for (const DeviceInfo& info : r.devices) devices.devices.push_back(std::make_shared<StandIn>(info, start));
        found.push_back(std::move(devices));
      }
      if (found.size() == backend_names().size()) return found;
      found.clear();
    }
  }
  found = discover_devices(wanted, why_not);
  std::vector<Remembered> remembered;
  for (const BackendDevices& b : found) {
    Remembered r{b.backend, b.absent_reason, {}};
    for (const auto& device : b.devices) r.devices.push_back(device->info());
    remembered.push_back(std::move(r));
  }
  cache->put(key, encode(remembered));
  return found;
}

}  // namespace canopy::backends
