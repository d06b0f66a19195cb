// A fresh, empty folder under the system's temporary directory for one
// scope, removed with everything in it when the scope ends: the tests that
// write traces, models or caches leave nothing behind in /tmp.
#pragma once

#include <atomic>
#include <filesystem>
#include <string>
#include <system_error>

#include <unistd.h>

namespace canopy::testing {

class TemporaryFolder {
 public:
  /// "<temp>/canopy-<name>-<pid>-<n>": unique within the process and among
  /// test programs running side by side.
  explicit TemporaryFolder(const std::string& name) {
    static std::atomic<int> made{0};
    path_ = std::filesystem::temp_directory_path() /
            ("canopy-" + name + "-" + std::to_string(::getpid()) + "-" + std::to_string(made++));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TemporaryFolder() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TemporaryFolder(const TemporaryFolder&) = delete;
  TemporaryFolder& operator=(const TemporaryFolder&) = delete;

  const std::filesystem::path& path() const { return path_; }
  /// The path of `file` in the folder.
  std::string operator/(const std::string& file) const { return (path_ / file).string(); }

 private:
  std::filesystem::path path_;
};

}  // namespace canopy::testing
