#include "library.hpp"

#include <dlfcn.h>

namespace canopy::backends {

OpenedLibrary open_library(const std::string& path) {
  OpenedLibrary opened;
  opened.handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!opened.handle) {
    const char* why = ::dlerror();
    opened.error = why ? why : "unknown reason";
  }
  return opened;
}

void* SymbolTable::find(const char* symbol) const { return ::dlsym(handle_, symbol); }

}  // namespace canopy::backends
