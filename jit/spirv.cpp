#include "spirv.hpp"

#include <cctype>

#include <canopy/ir/error.hpp>
#include <canopy/ir/verifier.hpp>

#include "internal/llvm_plugin.hpp"

// Set by jit/CMakeLists.txt: 1 where LLVMSPIRVLib was found.
#ifndef CANOPY_HAVE_LLVMSPIRVLIB
#define CANOPY_HAVE_LLVMSPIRVLIB 0
#endif

namespace canopy::jit {

bool spirv_available() { return CANOPY_HAVE_LLVMSPIRVLIB != 0; }

std::string spirv_unavailable_reason() {
  if (spirv_available()) return "";
  return "no SPIR-V: LLVMSPIRVLib not found when Canopy was built (install libllvmspirvlib-15-dev and rebuild)";
}

std::string spirv_entry_name(const ir::Kernel& kernel) {
  bool plain = !kernel.name.empty() && !std::isdigit(static_cast<unsigned char>(kernel.name[0])) &&
               kernel.name.rfind("_Z", 0) != 0 && kernel.name.rfind("__", 0) != 0;
  for (char c : kernel.name) plain = plain && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
  if (plain) return kernel.name;
  std::string name = "k_";
  for (char c : kernel.name) name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return name;
}

SpirvKernel spirv_of(const ir::Kernel& kernel, const SpirvOptions& options) {
  ir::verify(kernel);
  if (!spirv_available())
    throw Error("cannot compile kernel '" + kernel.name + "' to SPIR-V: " + spirv_unavailable_reason());
  return llvm_plugin().spirv_of(kernel, options);
}

}  // namespace canopy::jit
