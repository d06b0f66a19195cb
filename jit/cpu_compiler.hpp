// CpuCompiler: turns a kernel into a function this process can call, through
// LLVM for the host CPU. It is the CPU backend's only view of LLVM: kernel in,
// CpuEntry out (see cpu_abi.hpp for how to call it).
//
// Each compile looks for the kernel in three places, cheapest first: the
// compiler's memory (kernels it already returned), the disk cache (objects an
// earlier run compiled for this same CPU, LLVM and Canopy), and only then
// compiles: lowering to LLVM IR, the O3 pipeline tuned for this CPU, machine
// code into an object file, which goes to the disk cache and is linked into
// the process.
//
// All compilers link into the one process-wide LLVM JIT, each into a library
// of its own: two compilers (say, a second one on the same cache directory,
// standing in for a second run) never define a symbol twice. Linked code
// stays until the process exits, so an entry remains callable after the
// compiler that returned it is gone.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <canopy/ir/kernel.hpp>

#include "cpu_abi.hpp"
#include "disk_cache.hpp"

namespace canopy::jit {

class CpuCompiler {
 public:
  struct Options {
    /// Where compiled kernels are kept between runs. Empty: $CANOPY_CACHE_DIR,
    /// else $HOME/.cache/canopy (no disk cache when neither is set). "off":
    /// no disk cache.
    std::string cache_dir;
    /// Writes compiled kernels to the disk cache on a thread of its own, so
    /// that compile() returns as soon as the kernel is linked into the
    /// process, without waiting for the system linker to make its shared
    /// object (6 ms a kernel here). flush_disk_cache(), the destructor and
    /// the process's normal exit wait for the writes.
    bool store_in_background = false;
  };

  /// Where compile() found the kernel it returned.
  enum class Source {
    Memory,    ///< this compiler had already returned it (or was compiling it on another thread)
    Disk,      ///< the disk cache had its object file
    Compiled,  ///< it was compiled by this call
  };

  /// A compiled kernel.
  struct Compiled {
    CpuEntry entry = nullptr;  ///< valid until the process exits
    std::string key;           ///< the cache key: 32 hex characters
    Source source = Source::Compiled;
    double seconds = 0.0;  ///< time this compile() call took
  };

  /// How to generate one kernel's code, beyond the kernel itself.
  struct CodeOptions {
    /// Array parameters whose vector stores bypass the caches (non-temporal
    /// stores, x86 only). For write-only arrays far larger than the last-level
    /// cache this saves the read of every line before it is written. The
    /// caller promises that every chunk it runs starts 64-byte aligned in
    /// these arrays (base address and first index), since the generated
    /// stores assume it. See streaming_candidates().
    std::vector<int> streaming_stores;
    /// Array parameters whose atomic adds are plain reads, adds and stores.
    /// The caller promises that no other thread adds to the memory it
    /// passes there while a call runs (each chunk adds into a copy of its
    /// own, CpuDevice::run).
    std::vector<int> plain_adds;
  };

  /// A compiler with default Options.
  CpuCompiler();
  explicit CpuCompiler(Options options);
  ~CpuCompiler();
  CpuCompiler(const CpuCompiler&) = delete;
  CpuCompiler& operator=(const CpuCompiler&) = delete;

  /// Verifies `kernel` (ir::verify; throws canopy::Error when it is not well
  /// formed) and returns its entry. `kernel` should already be optimized by
  /// the IR passes: this compiles it as it is. Thread-safe; a kernel that
  /// several threads ask for at once is compiled once. Throws canopy::Error
  /// when LLVM cannot compile or link the kernel.
  Compiled compile(const ir::Kernel& kernel, const CodeOptions& code = {});

  /// Compiles together, as one object, every kernel of `kernels` that this
  /// compiler has not returned or started yet and the disk cache does not
  /// hold: one module, whose machine code is emitted once, and one link into
  /// the JIT (Runtime::compile's kernels, on its background thread; five
  /// small kernels: 10 to 15% less code generation than one by one). A later
  /// compile() of each finds it here and reports where it came from as the
  /// compile that made it would have (Disk or Compiled). Never throws: a
  /// kernel that does not verify or compile is left to compile(), which
  /// tries it alone and reports it.
  void compile_together(const std::vector<const ir::Kernel*>& kernels, const CodeOptions& code = {});

  /// The cache key of `kernel` on this machine: it changes with the kernel's
  /// text, the CPU, LLVM's version, Canopy's version and the CPU ABI version.
  std::string cache_key(const ir::Kernel& kernel, const CodeOptions& code = {}) const;

  /// The host CPU this compiler generates code for: target triple, CPU name
  /// and the CPU features LLVM enables (e.g. "+avx2,+avx512f,...").
  std::string target_description() const;

  /// The disk cache in use, or null when there is none.
  const DiskCache* disk_cache() const;

  /// Returns once every kernel compiled so far is in the disk cache (at once
  /// without store_in_background, or without a disk cache).
  void flush_disk_cache();

  /// The process-wide compiler the runtime uses: default Options, stores in
  /// the background.
  static CpuCompiler& shared();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

/// The array parameters of a kernel that could take streaming stores:
/// written only (never read), always at exactly the point's own element
/// (index(0), index(1), ... in the array's dimensions, as many as the range
/// has), unconditionally and not atomically. Empty when the host is not x86-64.
std::vector<int> streaming_candidates(const ir::Kernel& kernel);

/// "memory", "disk" or "compiled".
std::string_view name_of(CpuCompiler::Source source);

}  // namespace canopy::jit
