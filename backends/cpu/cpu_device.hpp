// The CPU backend: runs JIT-compiled kernels on a set of cores through a
// ThreadPool. Arrays are host memory, so an ArrayArg's data is a host pointer.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <canopy/backends/launch.hpp>
#include <canopy/ir/kernel.hpp>
#include <canopy/jit/cpu_abi.hpp>

#include "thread_pool.hpp"

namespace canopy::backends::cpu {

/// A kernel compiled for the CPU, ready to run.
struct CpuProgram {
  std::shared_ptr<const ir::Kernel> kernel;  ///< the optimized IR it was compiled from
  jit::CpuEntry entry = nullptr;
  jit::CpuArgLayout layout;
  /// Below this many points a launch runs on the calling thread alone: the
  /// cost of waking the other threads would exceed the work.
  std::int64_t inline_points = 0;
};

class CpuDevice {
 public:
  /// A device over the processing units `pus` (hwloc OS indexes), one thread each.
  CpuDevice(std::string name, std::vector<unsigned> pus);

  const std::string& name() const { return name_; }
  int threads() const { return pool_.size(); }
  const std::vector<unsigned>& pus() const { return pool_.pus(); }

  /// Compiles an optimized kernel (through jit::CpuCompiler::shared(), so a
  /// kernel is compiled once per process and found in the disk cache after).
  static CpuProgram compile(std::shared_ptr<const ir::Kernel> optimized);

  /// Runs `program` over `range` with `args` (one per parameter, in order) on
  /// this device's threads; the calling thread takes part. Returns one value
  /// per reduction parameter, in parameter order, combined in a fixed order.
  std::vector<ReductionValue> run(const CpuProgram& program, const std::vector<KernelArg>& args, const Range& range);

 private:
  std::string name_;
  ThreadPool pool_;
};

}  // namespace canopy::backends::cpu
