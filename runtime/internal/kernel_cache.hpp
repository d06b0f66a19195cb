// The compiled-kernel cache: what the engine learns about a traced kernel the
// first time a region launches it, kept for every later launch. The traced
// IR is optimized once (with bounds checks in checked mode), its CPU program
// is compiled at once and its device programs on first use, one per device:
// a program belongs to the context of the device that built it, so two
// devices with one fingerprint (two PoCL devices) each build their own, the
// second finding the binary in the disk cache. What the splitter, the launch
// refusal and the adaptive policy need (footprint, sure accesses, cost) is
// computed here too, so a launch only looks it up.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include <canopy/backends/cpu/cpu_device.hpp>
#include <canopy/backends/device.hpp>
#include <canopy/ir/analysis/footprint.hpp>
#include <canopy/ir/kernel.hpp>

#include "../adaptive.hpp"
#include "../launch_bounds.hpp"
#include "recovery.hpp"

namespace canopy::runtime {

/// A kernel as the engine keeps it: the traced IR (kept alive so the cache's
/// key stays valid), the optimized IR and its programs.
struct CompiledKernel {
  std::shared_ptr<const ir::Kernel> traced;
  std::shared_ptr<const ir::Kernel> optimized;
  /// What each array parameter reads and writes: which elements a piece needs.
  ir::Footprint footprint;
  /// The accesses every point makes at known positions: a launch whose range
  /// takes one outside its array is refused (launch_bounds.hpp).
  std::vector<SureAccess> sure_accesses;
  /// A point may do any amount of work (a For loop), so even a small region
  /// of it is never run in the launching thread (launch() must return at once).
  bool has_loops = false;
  /// The optimized kernel and the hash of its text: the adaptive policy's key.
  AdaptiveKernel adaptive;
  /// Simple operations per point (flops, integer operations, loads and
  /// stores, from ir::cost_of): what a split can save, against what merging
  /// what each memory wrote costs (split_writes.hpp).
  double ops_per_point = 0;

  /// The program for `device`: the CPU program on CPU devices, else the one
  /// compiled for that device (compiled on first use). Throws canopy::Error
  /// when the device cannot build it.
  std::shared_ptr<backends::Program> program_for(backends::Device& device) const;

 private:
  friend class KernelCache;
  mutable std::mutex programs_mutex;
  /// Null when compiling it failed; program_for then compiles it again.
  mutable std::shared_ptr<backends::cpu::CpuProgram> cpu;
  mutable std::unordered_map<std::string, std::shared_ptr<backends::Program>> programs;  // by device id
};

/// Every kernel the engine has seen, by its traced IR.
class KernelCache {
 public:
  /// `checked`: compile with bounds checks (CANOPY_CHECK=bounds). A CPU
  /// compile that fails is logged in `recoveries` and tried again where needed.
  KernelCache(bool checked, RecoveryLog& recoveries) : checked_(checked), recoveries_(recoveries) {}

  /// The kernel compiled from `traced`: compiled now the first time, then looked up.
  std::shared_ptr<const CompiledKernel> compiled(const std::shared_ptr<const ir::Kernel>& traced);
  /// True when kernels are compiled with bounds checks.
  bool checked() const { return checked_; }

 private:
  std::shared_ptr<CompiledKernel> compile(const std::shared_ptr<const ir::Kernel>& traced);

  const bool checked_;
  RecoveryLog& recoveries_;
  std::mutex mutex_;
  std::unordered_map<const ir::Kernel*, std::shared_ptr<const CompiledKernel>> kernels_;
};

}  // namespace canopy::runtime
