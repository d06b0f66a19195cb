// canopy-bench startup: what a program pays before its first kernel, timed as
// users time it, a whole process from exec to exit. The child is this same
// binary (linked as a Canopy program is) run with a hidden flag: once doing
// nothing, once making `Runtime rt;`, each with every device and with
// CANOPY_DEVICES=cpu. Wall time from spawn to exit and peak memory from the
// OS's accounting of the finished child (ru_maxrss), medians of N runs.
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <canopy/canopy.hpp>

#include "report.hpp"

extern char** environ;

namespace canopy::bench {

namespace {

struct Sample {
  double seconds = 0;
  double megabytes = 0;
};

// Runs this binary with `args` and `extra` added to the environment.
Sample run_child(const std::vector<std::string>& args, const std::vector<std::string>& extra) {
  std::vector<std::string> environment;
  for (char** e = environ; *e; ++e) {
    const std::string entry = *e;
    bool replaced = false;
    for (const std::string& x : extra)
      replaced = replaced || entry.substr(0, entry.find('=')) == x.substr(0, x.find('='));
    if (!replaced) environment.push_back(entry);
  }
  environment.insert(environment.end(), extra.begin(), extra.end());
  std::vector<char*> argv{const_cast<char*>("/proc/self/exe")}, envp;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (const std::string& e : environment) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  char self[4096];
  const ssize_t length = readlink("/proc/self/exe", self, sizeof self - 1);
  if (length <= 0) throw Error("startup: cannot find this program's path");
  self[length] = '\0';
  const auto start = std::chrono::steady_clock::now();
  pid_t child = 0;
  if (posix_spawn(&child, self, nullptr, nullptr, argv.data(), envp.data()) != 0)
    throw Error("startup: cannot start a child process");
  int status = 0;
  rusage usage{};
  wait4(child, &status, 0, &usage);
  Sample sample;
  sample.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  sample.megabytes = static_cast<double>(usage.ru_maxrss) / 1024.0;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) throw Error("startup: a child process failed");
  return sample;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

}  // namespace

int startup_command(int argc, char** argv) {
  if (argc >= 1 && !std::strcmp(argv[0], "--child-empty")) return 0;
  if (argc >= 1 && !std::strcmp(argv[0], "--child-runtime")) {
    Runtime rt;
    return 0;
  }
  Args args(argc, argv, {});
  const int runs = static_cast<int>(args.count("--runs", 10));
  std::printf("startup: whole processes from spawn to exit, median of %d runs each (peak memory: ru_maxrss)\n", runs);
  std::printf("%-44s %10s %10s\n", "program", "wall ms", "peak MB");
  struct Case {
    const char* name;
    const char* flag;
    std::vector<std::string> environment;
  };
  const Case cases[] = {
      {"main() returns at once (Canopy's libraries loaded)", "--child-empty", {}},
      {"Runtime rt; (every device)", "--child-runtime", {}},
      {"Runtime rt; with CANOPY_DEVICES=cpu", "--child-runtime", {"CANOPY_DEVICES=cpu"}},
  };
  for (const Case& c : cases) {
    std::vector<double> seconds, megabytes;
    run_child({"startup", c.flag}, c.environment);  // warms the page cache and Canopy's disk cache
    for (int k = 0; k < runs; ++k) {
      const Sample s = run_child({"startup", c.flag}, c.environment);
      seconds.push_back(s.seconds);
      megabytes.push_back(s.megabytes);
    }
    std::printf("%-44s %10.1f %10.1f\n", c.name, median(seconds) * 1e3, median(megabytes));
  }
  return 0;
}

}  // namespace canopy::bench
