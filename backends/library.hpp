// Vendor libraries (the OpenCL ICD loader, the CUDA driver and NVRTC, the
// Level Zero loader) opened at run time, so one binary runs on nodes that
// have any subset of them. What every backend's api.cpp does alike lives
// here: opening a library, filling a table of function pointers from it
// while noting the first symbol missing, and opening each library once per
// process.
#pragma once

#include <map>
#include <mutex>
#include <string>

namespace canopy::backends {

/// A library opened with dlopen(RTLD_NOW | RTLD_LOCAL): its symbols stay out
/// of the process's namespace. It is never closed: function pointers into it
/// live as long as the process.
struct OpenedLibrary {
  void* handle = nullptr;
  std::string error;  ///< dlerror()'s reason when handle is null
};
OpenedLibrary open_library(const std::string& path);

/// Fills function pointers from an opened library.
class SymbolTable {
 public:
  explicit SymbolTable(void* handle) : handle_(handle) {}
  /// A symbol the backend cannot work without; the first one absent is kept.
  template <class Function>
  void required(Function& slot, const char* symbol) {
    slot = reinterpret_cast<Function>(find(symbol));
    if (!slot && missing_.empty()) missing_ = symbol;
  }
  /// A symbol of a later version of the API, used when present.
  template <class Function>
  void optional(Function& slot, const char* symbol) {
    slot = reinterpret_cast<Function>(find(symbol));
  }
  /// The first required symbol that was absent; empty when none was.
  const std::string& missing() const { return missing_; }

 private:
  void* find(const char* symbol) const;
  void* handle_;
  std::string missing_;
};

/// What `open(library)` returned the first time it was asked for `library`,
/// kept for the life of the process, so references to it stay valid.
template <class Loaded>
const Loaded& load_once(const std::string& library, Loaded (*open)(const std::string&)) {
  static std::mutex mutex;
  static std::map<std::string, Loaded> loaded;  // never erased
  std::lock_guard lock(mutex);
  auto found = loaded.find(library);
  if (found == loaded.end()) found = loaded.emplace(library, open(library)).first;
  return found->second;
}

}  // namespace canopy::backends
