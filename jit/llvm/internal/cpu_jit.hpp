// CpuJit: the one ORC LLJIT of the process, a thin wrapper in the spirit of
// LLVM's Kaleidoscope JIT: make libraries, link object files, look symbols up.
//
// Each CpuCompiler gets its own library (an ORC JITDylib) in this one LLJIT,
// so two compilers that load the same kernel (for instance a second compiler
// on the same disk cache, standing in for a second run) never define one
// symbol twice, while the LLJIT itself is created only once. Libraries
// resolve the process's symbols (libm's sin, fmod, ...). Linked code stays
// until the process exits: entries handed out remain callable.
#pragma once

#include <string>
#include <string_view>

#include <llvm/ExecutionEngine/Orc/LLJIT.h>

namespace canopy::jit {

class CpuJit {
 public:
  /// The process's JIT, created on first use. Throws canopy::Error when LLVM
  /// cannot create it.
  static CpuJit& instance();

  /// A new, empty library named `name_hint` plus a unique suffix.
  llvm::orc::JITDylib& create_library(const std::string& name_hint);

  /// Links the object file `object` into `library` and returns the address of
  /// its function `symbol`. Throws canopy::Error when the object does not
  /// link or does not define the symbol.
  void* link(llvm::orc::JITDylib& library, std::string_view object, const std::string& symbol);
  /// The address of `symbol` in `library`, or null when it defines none.
  void* lookup(llvm::orc::JITDylib& library, const std::string& symbol);

 private:
  CpuJit();
  std::unique_ptr<llvm::orc::LLJIT> jit_;
};

}  // namespace canopy::jit
