// Loading libcanopy_llvm (internal/llvm_plugin.hpp).
#include "internal/llvm_plugin.hpp"

#include <dlfcn.h>

#include <atomic>
#include <string>

#include <canopy/ir/error.hpp>

// Set by jit/CMakeLists.txt: the plugin's file name (its soname), and 1 where
// it is linked into libcanopy_jit (a static build).
#ifndef CANOPY_LLVM_PLUGIN_FILE
#define CANOPY_LLVM_PLUGIN_FILE "libcanopy_llvm.so"
#endif
#ifndef CANOPY_LLVM_PLUGIN_LINKED
#define CANOPY_LLVM_PLUGIN_LINKED 0
#endif

#if !CANOPY_LLVM_PLUGIN_LINKED
// Weak: defined only where the program links libcanopy_llvm itself.
extern "C" canopy::jit::LlvmPlugin* canopy_llvm_plugin() __attribute__((weak));
#endif

namespace canopy::jit {
namespace {

std::atomic<bool> loaded{false};

#if !CANOPY_LLVM_PLUGIN_LINKED
/// The folder of the library holding this code (libcanopy_jit), with a
/// trailing '/', or "" when the loader cannot say.
std::string own_folder() {
  Dl_info info{};
  if (!dladdr(reinterpret_cast<void*>(&llvm_plugin_loaded), &info) || !info.dli_fname) return "";
  const std::string path = info.dli_fname;
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash + 1);
}
#endif

LlvmPlugin* load() {
#if CANOPY_LLVM_PLUGIN_LINKED
  return canopy_llvm_plugin();
#else
  if (canopy_llvm_plugin) return canopy_llvm_plugin();
  const std::string beside = own_folder() + CANOPY_LLVM_PLUGIN_FILE;
  void* handle = dlopen(beside.c_str(), RTLD_NOW | RTLD_LOCAL);
  std::string reason = handle ? "" : dlerror();
  if (!handle) handle = dlopen(CANOPY_LLVM_PLUGIN_FILE, RTLD_NOW | RTLD_LOCAL);
  if (!handle)
    throw Error("Canopy cannot load its LLVM JIT, " + beside + ": " + reason +
                " (it is built and installed beside libcanopy_jit; without it no kernel compiles for the CPU or "
                "as SPIR-V)");
  auto* entry = reinterpret_cast<LlvmPlugin* (*)()>(dlsym(handle, "canopy_llvm_plugin"));
  if (!entry) throw Error("Canopy cannot use " + beside + ": it has no canopy_llvm_plugin (a different build?)");
  return entry();
#endif
}

}  // namespace

LlvmPlugin& llvm_plugin() {
  static LlvmPlugin* const plugin = [] {
    LlvmPlugin* p = load();
    loaded = true;
    return p;
  }();
  return *plugin;
}

bool llvm_plugin_loaded() { return loaded; }

}  // namespace canopy::jit
