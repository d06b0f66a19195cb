// The CPU backend: runs JIT-compiled kernels on a set of cores through a
// ThreadPool. Arrays are host memory, so an ArrayArg's data is a host pointer.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <canopy/backends/device.hpp>
#include <canopy/backends/launch.hpp>
#include <canopy/ir/kernel.hpp>
#include <canopy/jit/cpu_abi.hpp>
#include <canopy/jit/cpu_compiler.hpp>

#include "thread_pool.hpp"

namespace canopy::backends::cpu {

/// A second entry of a kernel, compiled with other code options: the one
/// whose output arrays take streaming stores, or the one whose atomic adds
/// into private copies are plain adds. Compiled the first time a launch wants
/// it, or ahead by CpuDevice::compile_variants. A launch that wants it while
/// another thread compiles it runs the plain entry instead of waiting.
struct EntryVariant {
  enum State { kNone, kCompiling, kReady };
  std::vector<int> params;  ///< the arrays the options name
  bool plain_adds = false;  ///< true: CodeOptions::plain_adds; false: streaming_stores
  std::atomic<int> state{kNone};
  jit::CpuEntry entry = nullptr;  ///< set before state becomes kReady
};

/// A kernel compiled for the CPU, ready to run. The same program runs on
/// every CPU device of the process.
struct CpuProgram final : Program {
  const ir::Kernel& kernel() const override { return *ir; }

  std::shared_ptr<const ir::Kernel> ir;  ///< the optimized IR it was compiled from
  jit::CpuEntry entry = nullptr;
  jit::CpuArgLayout layout;
  /// Below this many points a launch runs on the calling thread alone: the
  /// cost of waking the other threads would exceed the work.
  std::int64_t inline_below = 0;
  std::int64_t inline_points() const override { return inline_below; }
  /// Where the CPU JIT found it: compiled, in the disk cache, or in its
  /// memory (this process had compiled it already).
  jit::CpuCompiler::Source source = jit::CpuCompiler::Source::Compiled;
  ProgramOrigin origin() const override {
    return source == jit::CpuCompiler::Source::Disk ? ProgramOrigin::Disk : ProgramOrigin::Built;
  }
  /// Null unless the kernel writes arrays that could take streaming stores.
  std::shared_ptr<EntryVariant> streaming;
  /// Null unless the kernel only adds to some arrays atomically and never
  /// reads them (a histogram's bins): a launch's chunks may each add into a
  /// private copy, summed into the array at the end (CpuDevice::run), with
  /// this variant's plain adds.
  std::shared_ptr<EntryVariant> private_adds;
};

/// The streaming-store threshold of a CPU device over the processing units
/// `pus` before CANOPY_STREAMING_STORES: twice the last-level cache those
/// units share (last_level_cache_bytes), 64 MiB where the system does not
/// say. The machine model's CPU leaves take it from here too, so that its
/// predictions stream where the backend does.
std::size_t automatic_streaming_threshold(const std::vector<unsigned>& pus);

class CpuDevice final : public Device {
 public:
  /// A device over the processing units `pus` (hwloc OS indexes), one thread each.
  CpuDevice(std::string name, std::vector<unsigned> pus);

  /// id = name, backend "cpu", host_memory (its buffers are host memory).
  const DeviceInfo& info() const override { return info_; }

  /// The threshold of takes_streaming_stores (launch.hpp): launches that
  /// pass more bytes than this through their arrays write their streaming
  /// arrays with streaming stores (non-temporal: they do not fill the caches
  /// with data that would be evicted before it is read again). Default:
  /// twice the last level cache of the device's cores.
  /// CANOPY_STREAMING_STORES=off|on|auto forces the choice (on: every launch
  /// that can).
  std::size_t streaming_threshold() const { return streaming_threshold_; }

  const std::string& name() const { return name_; }
  int threads() const { return pool_.size(); }
  const std::vector<unsigned>& pus() const { return pool_.pus(); }

  /// Host memory, 64-byte aligned and zeroed.
  Buffer allocate(std::size_t bytes) override;
  void free(Buffer buffer) noexcept override;
  void copy_in(Buffer buffer, std::size_t offset, const void* source, std::size_t bytes) override;
  void copy_out(Buffer buffer, std::size_t offset, void* destination, std::size_t bytes) override;
  void fill(Buffer buffer, std::size_t first, std::size_t count, const ScalarArg& value) override;

  /// Compiles an optimized kernel (through jit::CpuCompiler::shared(), so a
  /// kernel is compiled once per process and found in the disk cache after).
  /// The program runs on any CPU device.
  static std::shared_ptr<CpuProgram> compile_program(std::shared_ptr<const ir::Kernel> optimized);
  /// Compiles optimized kernels together (jit::CpuCompiler::compile_together):
  /// compile_program of each then finds its code made. Never throws.
  void compile_together(const std::vector<std::shared_ptr<const ir::Kernel>>& optimized) override;
  void compile_variants(const Program& program) override;
  std::shared_ptr<Program> compile(std::shared_ptr<const ir::Kernel> optimized) override;

  /// Wakes the pool's helper threads when the launch will split over them.
  void expect_run(const Program& program, const Range& range) override;
  /// Runs `program` (a CpuProgram) over `range` with `args` (one per
  /// parameter, in order; array data are host pointers) on this device's
  /// threads; the calling thread takes part. Returns one value per reduction
  /// parameter, in parameter order, combined in a fixed order.
  std::vector<ReductionValue> run(const Program& program, const std::vector<KernelArg>& args,
                                  const Range& range) override;

 private:
  /// How many chunks run() splits `range` into (1: the calling thread alone).
  int chunk_count(const CpuProgram& program, const Range& range) const;
  std::string name_;
  ThreadPool pool_;
  std::size_t streaming_threshold_;
  DeviceInfo info_;
};

}  // namespace canopy::backends::cpu
