// libcanopy_llvm's entry point: the LlvmPlugin (jit/internal/llvm_plugin.hpp)
// over the host target, the process-wide JIT and the SPIR-V translation.
#include <canopy/jit/internal/llvm_plugin.hpp>

#include "internal/cpu_jit.hpp"
#include "internal/cpu_target.hpp"
#include "internal/spir_lowering.hpp"

namespace canopy::jit {
namespace {

class Plugin final : public LlvmPlugin {
 public:
  std::string host_description() override { return HostTarget::get().description(); }

  std::string compile_for_host(const std::vector<HostKernel>& kernels) override {
    return jit::compile_for_host(kernels);
  }

  void* create_library(const std::string& name_hint) override { return &CpuJit::instance().create_library(name_hint); }

  void* link(void* library, std::string_view object, const std::string& symbol) override {
    return CpuJit::instance().link(*static_cast<llvm::orc::JITDylib*>(library), object, symbol);
  }

  void* lookup(void* library, const std::string& symbol) override {
    return CpuJit::instance().lookup(*static_cast<llvm::orc::JITDylib*>(library), symbol);
  }

  SpirvKernel spirv_of(const ir::Kernel& kernel, const SpirvOptions& options) override {
    return lower_to_spirv(kernel, options);
  }
};

}  // namespace
}  // namespace canopy::jit

extern "C" canopy::jit::LlvmPlugin* canopy_llvm_plugin() {
  // Never destroyed, like the JIT behind it.
  static auto* const plugin = new canopy::jit::Plugin();
  return plugin;
}
