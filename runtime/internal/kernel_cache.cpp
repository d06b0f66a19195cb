#include "kernel_cache.hpp"

#include <canopy/ir/analysis/cost.hpp>
#include <canopy/ir/dump.hpp>
#include <canopy/ir/passes/bounds_check.hpp>
#include <canopy/ir/passes/optimize.hpp>
#include <canopy/ir/printer.hpp>
#include <canopy/ir/visitor.hpp>
#include <canopy/jit/hash.hpp>

#include "trace.hpp"

namespace canopy::runtime {

std::shared_ptr<backends::Program> CompiledKernel::program_for(backends::Device& device) const {
  std::lock_guard lock(programs_mutex);
  if (device.info().host_memory) {
    if (!cpu)  // it failed before (see compile())
      cpu = trace::compiling(optimized->name, "cpu", "cpu",
                             [&] { return backends::cpu::CpuDevice::compile_program(optimized); });
    return cpu;
  }
  auto& slot = programs[device.info().id];
  if (!slot)
    slot = trace::compiling(optimized->name, device.info().backend, device.info().id,
                            [&] { return device.compile(optimized); });
  return slot;
}

std::shared_ptr<const CompiledKernel> KernelCache::compiled(const std::shared_ptr<const ir::Kernel>& traced) {
  std::lock_guard lock(mutex_);
  auto& slot = kernels_[traced.get()];
  if (!slot) slot = compile(traced);
  return slot;
}

std::shared_ptr<CompiledKernel> KernelCache::compile(const std::shared_ptr<const ir::Kernel>& traced) {
  auto compiled = std::make_shared<CompiledKernel>();
  compiled->traced = traced;
  compiled->optimized = std::make_shared<const ir::Kernel>(
      checked_ ? ir::optimize(ir::check_bounds(ir::optimize(*traced))) : ir::optimize(*traced));
  const std::string text = ir::print(*compiled->optimized);
  dump("ir", traced->name, text);
  const ir::KernelCost cost = ir::cost_of(*compiled->optimized);
  if (dump_enabled("cost")) dump("cost", traced->name, ir::describe_cost(*compiled->optimized, cost));
  compiled->adaptive = AdaptiveKernel{compiled->optimized.get(), jit::hash64(text)};
  try {
    compiled->cpu = trace::compiling(traced->name, "cpu", "cpu",
                                     [&] { return backends::cpu::CpuDevice::compile_program(compiled->optimized); });
  } catch (const Error& e) {
    // Compiled again when a CPU leaf needs it; the devices may run it meanwhile.
    recoveries_.recovered(RecoveryKind::Compile, "cpu", std::string(e.what()) + "; compiling again where needed");
  }
  compiled->has_loops = ir::has_loops(*compiled->optimized);
  compiled->footprint = ir::footprint_of(*compiled->optimized);
  compiled->ops_per_point = cost.flops + cost.int_ops + cost.accesses();
  // Checked kernels guard every access; the refusal reads the unguarded form.
  compiled->sure_accesses = sure_accesses_of(checked_ ? ir::footprint_of(ir::optimize(*traced)) : compiled->footprint);
  return compiled;
}

}  // namespace canopy::runtime
