#include "report.hpp"

#include <dirent.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

#include <canopy/backends/cpu/thread_pool.hpp>
#include <canopy/canopy.hpp>
#include <canopy/runtime/discovery.hpp>

namespace canopy::bench {

Args::Args(int argc, char** argv, std::vector<std::string> switches) {
  for (int i = 0; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--", 0) != 0) {
      words_.push_back(arg);
      continue;
    }
    if (auto eq = arg.find('='); eq != std::string::npos) {
      values_[arg.substr(0, eq)] = arg.substr(eq + 1);
    } else if (std::find(switches.begin(), switches.end(), arg) != switches.end()) {
      values_[arg] = "";
    } else {
      if (i + 1 >= argc) fail(arg + " needs a value");
      values_[arg] = argv[++i];
    }
  }
}

bool Args::has(const std::string& flag) const { return values_.count(flag) > 0; }

std::string Args::get(const std::string& flag, const std::string& fallback) const {
  auto it = values_.find(flag);
  return it == values_.end() ? fallback : it->second;
}

std::int64_t Args::count(const std::string& flag, std::int64_t fallback) const {
  auto it = values_.find(flag);
  if (it == values_.end()) return fallback;
  char* end = nullptr;
  long long value = std::strtoll(it->second.c_str(), &end, 10);
  if (it->second.empty() || *end || value < 1) fail(flag + " takes a positive whole number, got '" + it->second + "'");
  return value;
}

Runtime runtime_off_first_core() {
  // The Runtime keeps to its constructing thread's cores unless told which:
  // every core the thread may use before it is narrowed.
  runtime::RuntimeOptions options;
  options.pus = thread_affinity();
  // Off the first core while the Runtime is made; its cores come back after.
  backends::cpu::SavedAffinity affinity;
  if (const cpu_set_t* allowed = affinity.saved(); allowed && CPU_COUNT(allowed) >= 2) {
    cpu_set_t others = *allowed;
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
      if (CPU_ISSET(cpu, &others)) {
        CPU_CLR(cpu, &others);
        break;
      }
    affinity.narrow(others);
  }
  return options.pus.empty() ? Runtime() : Runtime(options);
}

std::pair<std::string, std::string> pick_cpu_and_device(const Hierarchy& tree, const std::string& wanted,
                                                        const std::string& command) {
  if (!wanted.empty()) {
    const auto comma = wanted.find(',');
    if (comma == std::string::npos) fail("--leaves takes two leaf names, such as cpu0,opencl0");
    std::pair<std::string, std::string> pair{wanted.substr(0, comma), wanted.substr(comma + 1)};
    for (const auto& name : {pair.first, pair.second}) {
      const Location* leaf = tree.find(name);
      if (!leaf || !leaf->executes()) fail("--leaves: '" + name + "' is not an executing leaf of\n" + tree.to_text());
    }
    if (pair.first == pair.second) fail("--leaves takes two different leaves");
    return pair;
  }
  const Location* cpu = nullptr;
  const Location* device = nullptr;
  for (const Location* leaf : tree.leaves(*tree.root())) {
    if (leaf->kind() == LocationKind::Cpu && !cpu) cpu = leaf;
    if (is_device(leaf->kind()) && !device) device = leaf;
  }
  if (!cpu || !device)
    fail(command +
         " needs a CPU leaf and a device leaf (set CANOPY_DEVICES=cpu,opencl with PoCL installed, or give "
         "--leaves); the tree is:\n" +
         tree.to_text());
  return {cpu->name(), device->name()};
}

void keep_only_leaves(Runtime& rt, const std::pair<std::string, std::string>& keep) {
  const Hierarchy tree = rt.hierarchy();
  for (const Location* leaf : tree.leaves(*tree.root()))
    if (leaf->name() != keep.first && leaf->name() != keep.second) rt.remove_location(leaf->name());
}

std::string common_parent(const Hierarchy& tree, const std::pair<std::string, std::string>& leaves) {
  for (const Location* above = tree.find(leaves.first); above; above = above->parent())
    if (Hierarchy::is_above_or_same(*above, *tree.find(leaves.second))) return above->name();
  fail("leaves " + leaves.first + " and " + leaves.second + " have no common ancestor");
}

namespace {

/// How many threads of this process, the caller aside, are running or
/// waiting for a core (state R in /proc/self/task/TID/stat); -1 when the
/// kernel does not say.
int busy_threads() {
  DIR* tasks = ::opendir("/proc/self/task");
  if (!tasks) return -1;
  const auto self = static_cast<long>(::syscall(SYS_gettid));
  int busy = 0;
  while (const dirent* entry = ::readdir(tasks)) {
    if (entry->d_name[0] == '.' || std::atol(entry->d_name) == self) continue;
    std::ifstream stat(std::string("/proc/self/task/") + entry->d_name + "/stat");
    std::string line;
    std::getline(stat, line);
    // "TID (NAME) STATE ...": NAME may hold spaces and parentheses.
    const auto close = line.rfind(')');
    if (close != std::string::npos && close + 2 < line.size() && line[close + 2] == 'R') ++busy;
  }
  ::closedir(tasks);
  return busy;
}

}  // namespace

void settle() {
  // Quiet: no other thread of the process running in two looks 1 ms apart.
  // (The process's CPU time cannot tell: the kernel adds a thread's time up
  // at its scheduler tick, every 4 ms at 250 Hz, so a thread that spins
  // without a pause shows no time at all in half of all 2 ms steps, and a
  // test on such steps let libgomp's spinning threads into Canopy's runs.)
  // Where /proc does not list the threads, steps of 10 ms, over two ticks,
  // in which the whole process used under a tenth of a core.
  using std::chrono::milliseconds;
  if (busy_threads() >= 0) {
    for (int k = 0, quiet = 0; k < 200 && quiet < 2; ++k) {
      std::this_thread::sleep_for(milliseconds(1));
      quiet = busy_threads() == 0 ? quiet + 1 : 0;
    }
    return;
  }
  auto cpu_seconds = [] {
    rusage usage{};
    ::getrusage(RUSAGE_SELF, &usage);
    return double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
           1e-6 * double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec);
  };
  constexpr auto step = milliseconds(10);
  double before = cpu_seconds();
  for (int k = 0; k < 20; ++k) {
    std::this_thread::sleep_for(step);
    const double now = cpu_seconds();
    if (now - before < 0.1 * 0.010) return;
    before = now;
  }
}

void fail(const std::string& message) {
  std::fprintf(stderr, "canopy-bench: %s\n", message.c_str());
  std::exit(2);
}

Row& Row::set(const std::string& key, std::string value) {
  fields.emplace_back(key, std::move(value));
  return *this;
}

Row& Row::set(const std::string& key, double value) {
  fields.emplace_back(key, value);
  return *this;
}

namespace {

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      char buffer[8];
      std::snprintf(buffer, sizeof buffer, "\\u%04x", c);
      out += buffer;
      continue;
    }
    out += c;
  }
  return out + "\"";
}

std::string number(double x) {
  if (!std::isfinite(x)) return "null";
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.9g", x);
  return buffer;
}

}  // namespace

void write_json(const std::string& path, const std::vector<Row>& rows,
                const std::vector<std::pair<std::string, double>>& extra) {
  std::ofstream out(path);
  if (!out) fail("cannot write " + path);
  out << "{\"results\":[";
  for (std::size_t r = 0; r < rows.size(); ++r) {
    out << (r ? ",\n  {" : "\n  {");
    for (std::size_t f = 0; f < rows[r].fields.size(); ++f) {
      const auto& [key, value] = rows[r].fields[f];
      out << (f ? "," : "") << quoted(key) << ":";
      if (auto* s = std::get_if<std::string>(&value))
        out << quoted(*s);
      else
        out << number(std::get<double>(value));
    }
    out << "}";
  }
  out << "\n]";
  for (const auto& [key, value] : extra) out << ",\n" << quoted(key) << ":" << number(value);
  out << "}\n";
  if (!out) fail("cannot write " + path);
}

}  // namespace canopy::bench
