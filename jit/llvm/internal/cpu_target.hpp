// The host CPU as an LLVM target: what it is (triple, CPU name, features),
// and the three steps from an LLVM module to machine code for it: the O3
// pipeline, optional text dumps, and an object file in memory. The object
// file is what the disk cache stores and what CpuJit links.
//
// Math functions stay calls to the scalar C library (sin, exp, ...): glibc's
// vector library (libmvec) would let loops that call them vectorize, but its
// results may differ from the scalar functions in the last bits, and a kernel's
// results must match plain C++ element by element.
//
// LLVM 15 names only the CPUs it knows; on a newer one (e.g. AMD Zen 4) the
// CPU is "generic" with every feature of the host enabled (AVX2, AVX-512).
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <llvm/IR/Module.h>
#include <llvm/Target/TargetMachine.h>

#include <canopy/ir/kernel.hpp>
#include <canopy/jit/internal/llvm_plugin.hpp>

namespace canopy::jit {

/// The host CPU, detected once per process.
class HostTarget {
 public:
  /// The host (initializes LLVM's native target on first use).
  static const HostTarget& get();

  /// "triple;cpu;features", e.g. "x86_64-pc-linux-gnu;sapphirerapids;+avx2,+avx512f,...".
  const std::string& description() const { return description_; }
  const std::string& triple() const { return triple_; }
  const std::string& cpu() const { return cpu_; }
  const std::string& features() const { return features_; }
  /// The width of the widest vector registers the features enable: 512 with
  /// AVX-512, 256 with AVX, else 128.
  int vector_bits() const;
  /// True when the CPU converts vectors of int64 to double in one
  /// instruction (AVX-512DQ, or any CPU that is not x86); AVX2 has none, and
  /// LLVM converts such a vector one lane at a time.
  bool converts_int64_lanes() const;
  /// True when the CPU has a fused multiply-add (FMA on x86, where CPUs
  /// before 2013 lack it; every other target Canopy runs on has one).
  bool fuses_multiply_add() const;

  /// A TargetMachine lent to one compile and given back when the lease ends.
  /// A TargetMachine is not safe to share between threads that generate code
  /// at once, and making one (with its subtarget's lowering tables, about
  /// 5 ms) is a fixed cost of every compile otherwise; so the machines wait
  /// in a pool, and a new one is made only when every one is lent. Any thread
  /// may take one that another thread used: a kernel compiled in the
  /// background right after the program's first one does not pay for a
  /// machine of its own.
  class Lease {
   public:
    explicit Lease(const HostTarget& host);
    ~Lease();
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    llvm::TargetMachine& machine() const { return *machine_; }

   private:
    const HostTarget& host_;
    std::unique_ptr<llvm::TargetMachine> machine_;
  };

 private:
  HostTarget();
  /// A new TargetMachine for the host at the aggressive codegen level.
  std::unique_ptr<llvm::TargetMachine> create_target_machine() const;
  /// Whether `feature` (as LLVM names it, without the +) is enabled.
  bool has(const char* feature) const;
  bool is_x86() const;
  std::string triple_, cpu_, features_, description_;
  mutable std::mutex pool_mutex_;
  mutable std::vector<std::unique_ptr<llvm::TargetMachine>> pool_;  ///< machines not lent; guarded by pool_mutex_
};

/// Lowers each kernel into a function named by its symbol, optimizes it for
/// the host (in a module of its own, with the pipeline its shape calls for,
/// the host's TargetLibraryInfo) and returns one object file that defines
/// them all: the modules are linked into one, whose machine code is emitted
/// once. The vector stores into the array parameters listed in a kernel's
/// `streaming_stores` become aligned non-temporal stores, followed by a store
/// fence before the function returns (see CpuCompiler::CodeOptions). Writes
/// CANOPY_DUMP=llvm (optimized IR) and CANOPY_DUMP=asm (assembly) dumps named
/// after each kernel.
std::string compile_for_host(const std::vector<HostKernel>& kernels);

}  // namespace canopy::jit
