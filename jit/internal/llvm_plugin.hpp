// LlvmPlugin: everything the JIT does with LLVM, behind one interface, in a
// library of its own (libcanopy_llvm, built from jit/llvm/) that is opened
// the first time a kernel is compiled for the CPU or as SPIR-V. A program
// that never compiles (or compiles only OpenCL C or CUDA C) never loads
// libLLVM: relocating it costs about 20 ms and 50 MB at start-up, more than
// the rest of Canopy together.
//
// The library is looked for beside libcanopy_jit (the build tree's lib/ or
// the installed libdir), then by name on the loader's path. A program that
// links libcanopy_llvm itself (the JIT's own tests) or a static build of
// Canopy uses the linked copy.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <canopy/ir/kernel.hpp>

#include "../spirv.hpp"

namespace canopy::jit {

/// A kernel to compile for the host: its IR (not owned), the symbol of its
/// CPU entry (cpu_abi.hpp) and the array parameters whose vector stores are
/// non-temporal (CpuCompiler::CodeOptions).
struct HostKernel {
  const ir::Kernel* kernel = nullptr;
  std::string symbol;
  std::vector<int> streaming_stores;
  std::vector<int> plain_adds;
};

class LlvmPlugin {
 public:
  virtual ~LlvmPlugin() = default;

  /// "triple;cpu;features" of the host, e.g. "x86_64-pc-linux-gnu;znver3;+avx2,...".
  virtual std::string host_description() = 0;
  /// One object file defining every kernel's symbol (their modules linked
  /// into one, whose machine code is emitted once).
  virtual std::string compile_for_host(const std::vector<HostKernel>& kernels) = 0;
  /// A new library in the process-wide JIT; an opaque handle for link().
  virtual void* create_library(const std::string& name_hint) = 0;
  /// Links `object` into `library` and returns the address of `symbol`.
  virtual void* link(void* library, std::string_view object, const std::string& symbol) = 0;
  /// The address of `symbol` in `library` (linked before), or null.
  virtual void* lookup(void* library, const std::string& symbol) = 0;
  /// The kernel as SPIR-V (spirv.hpp), already verified by the caller.
  virtual SpirvKernel spirv_of(const ir::Kernel& kernel, const SpirvOptions& options) = 0;
};

/// The plugin, loaded on the first call (thread-safe). Throws canopy::Error
/// naming the library and the loader's reason when it cannot be loaded.
LlvmPlugin& llvm_plugin();

/// True once llvm_plugin() has loaded it (for tests and canopy-info).
bool llvm_plugin_loaded();

}  // namespace canopy::jit

/// The plugin's entry point, defined by libcanopy_llvm.
extern "C" canopy::jit::LlvmPlugin* canopy_llvm_plugin();
