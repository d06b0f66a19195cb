#include "process.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>

#include <canopy/ir/error.hpp>

extern char** environ;

namespace canopy::bench {

ProcessSample run_process(const ProcessRun& run) {
  std::vector<std::string> environment;
  for (char** e = environ; *e; ++e) {
    const std::string entry = *e;
    bool replaced = false;
    for (const std::string& x : run.environment)
      replaced = replaced || entry.substr(0, entry.find('=')) == x.substr(0, x.find('='));
    if (!replaced) environment.push_back(entry);
  }
  environment.insert(environment.end(), run.environment.begin(), run.environment.end());
  std::vector<char*> argv{const_cast<char*>(run.program.c_str())}, envp;
  for (const std::string& a : run.args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (const std::string& e : environment) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  const std::string output = run.output.empty() ? "/dev/null" : run.output;
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, output.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  if (!run.directory.empty()) posix_spawn_file_actions_addchdir_np(&actions, run.directory.c_str());
  const auto start = std::chrono::steady_clock::now();
  pid_t child = 0;
  const int spawned = posix_spawnp(&child, run.program.c_str(), &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) throw Error("cannot start " + run.program);
  int status = 0;
  rusage usage{};
  wait4(child, &status, 0, &usage);
  ProcessSample sample;
  sample.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  sample.megabytes = static_cast<double>(usage.ru_maxrss) / 1024.0;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw Error(run.program + " failed (status " + std::to_string(status) + ")" +
                (run.output.empty() ? "" : "; its output is in " + run.output));
  return sample;
}

std::string this_program() {
  char self[4096];
  const ssize_t length = readlink("/proc/self/exe", self, sizeof self - 1);
  if (length <= 0) throw Error("cannot find this program's path");
  return std::string(self, static_cast<std::size_t>(length));
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

}  // namespace canopy::bench
