// Runs this test program again as a child process, for what one process
// cannot show: what a fresh process loads, finds in a cache, or prints.
// The child gets this process's environment with `extra` variables added
// (replacing those of the same name) and runs the doctest cases `filter`
// names, skipped ones included (--no-skip). Its output is returned.
#pragma once

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern char** environ;

namespace canopy_test {

struct ChildResult {
  int status = -1;     ///< the exit status, or -1 when it did not exit normally
  std::string output;  ///< stdout and stderr together
};

inline ChildResult run_this_test(const std::string& filter, const std::vector<std::string>& extra) {
  std::vector<std::string> environment;
  for (char** entry = environ; *entry; ++entry) {
    const std::string variable(*entry);
    bool replaced = false;
    for (const std::string& e : extra)
      replaced = replaced || variable.substr(0, variable.find('=') + 1) == e.substr(0, e.find('=') + 1);
    if (!replaced) environment.push_back(variable);
  }
  environment.insert(environment.end(), extra.begin(), extra.end());
  std::vector<char*> envp;
  for (std::string& v : environment) envp.push_back(v.data());
  envp.push_back(nullptr);
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  std::string program = self, test = "-tc=" + filter, no_skip = "--no-skip";
  char* argv[] = {program.data(), test.data(), no_skip.data(), nullptr};
  char name[] = "/tmp/canopy-child-XXXXXX";
  const int fd = ::mkstemp(name);
  ChildResult result;
  if (fd < 0) return result;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fd, STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, fd, STDERR_FILENO);
  pid_t pid = 0;
  const bool spawned = ::posix_spawn(&pid, self.c_str(), &actions, nullptr, argv, envp.data()) == 0;
  posix_spawn_file_actions_destroy(&actions);
  ::close(fd);
  int status = 0;
  if (spawned && ::waitpid(pid, &status, 0) == pid && WIFEXITED(status)) result.status = WEXITSTATUS(status);
  std::ifstream in(name);
  result.output.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  std::filesystem::remove(name);
  return result;
}

}  // namespace canopy_test
