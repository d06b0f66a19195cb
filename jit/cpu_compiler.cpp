#include "cpu_compiler.hpp"

#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <future>
#include <mutex>
#include <thread>
#include <unordered_map>

#include <canopy/ir/analysis/footprint.hpp>
#include <canopy/ir/error.hpp>
#include <canopy/ir/printer.hpp>
#include <canopy/ir/settings.hpp>
#include <canopy/ir/verifier.hpp>

#include "checked_file.hpp"
#include "cpu_codegen_hash.hpp"
#include "hash.hpp"
#include "internal/llvm_plugin.hpp"
#include "internal/shared_kernel.hpp"

#ifndef CANOPY_VERSION_STRING
#define CANOPY_VERSION_STRING "unknown"
#endif
// Set by jit/CMakeLists.txt: the version of the LLVM that jit/llvm/ is built with.
#ifndef CANOPY_LLVM_VERSION
#define CANOPY_LLVM_VERSION "unknown"
#endif

namespace canopy::jit {

namespace {

/// Changes whenever what a cached entry holds changes (the ArgSlot layout,
/// the entry's format): cached entries of older versions are then ignored.
/// A change of the code generator itself changes CANOPY_CPU_CODEGEN_HASH, the
/// hash of its sources, which is part of the key too. 2: entries are shared
/// objects where a system linker was found.
constexpr int kCpuAbiVersion = 2;

/// `canopy_<name>_<16 hex of key>`, with every character a C identifier may
/// not hold replaced by '_'.
std::string symbol_name(const std::string& kernel_name, const std::string& key) {
  std::string symbol = "canopy_";
  for (char c : kernel_name) symbol += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return symbol + "_" + key.substr(0, 16);
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

struct CpuCompiler::State {
  std::unique_ptr<DiskCache> disk;
  std::once_flag key_prefix_once;
  std::string key_prefix_text;

  std::mutex mutex;
  void* library = nullptr;  ///< the JIT library, created on the first compile; guarded by mutex
  /// Every kernel this compiler returned or is compiling, by key; guarded by mutex.
  std::unordered_map<std::string, std::shared_future<CpuEntry>> entries;
  /// Kernels compile_together found or compiled that no compile() has
  /// returned yet: where they came from; guarded by mutex.
  std::unordered_map<std::string, Source> unreturned;

  /// The key's fixed part: LLVM's version and the CPU (from /proc/cpuinfo,
  /// so that a run whose kernels are all cached never loads LLVM).
  const std::string& key_prefix() {
    std::call_once(key_prefix_once, [&] {
      key_prefix_text = "canopy cpu kernel\nabi " + std::to_string(kCpuAbiVersion) + "\ncanopy " +
                        CANOPY_VERSION_STRING + "\ncode generator " + CANOPY_CPU_CODEGEN_HASH + "\nllvm " +
                        CANOPY_LLVM_VERSION + "\nhost\n" + host_identity();
    });
    return key_prefix_text;
  }

  /// Disk writes waiting for the writer thread (store_in_background).
  struct Store {
    std::string key, object;
    bool unloadable = false;
  };
  bool in_background = false;
  std::mutex store_mutex;
  std::condition_variable store_changed;
  std::deque<Store> stores;              ///< guarded by store_mutex
  int storing = 0;                       ///< stores taken by the writer and not done; guarded by store_mutex
  bool stopping = false;                 ///< guarded by store_mutex
  std::thread writer;                    ///< started by the first store
  std::atomic<pid_t> writer_process{0};  ///< the process that started it, or 0 (a forked child has no writer)

  /// Keeps `object` on disk: as a shared object where the system linker
  /// makes one that loads, else as the object file.
  void store(const Store& entry) {
    std::string why;
    const auto shared = entry.unloadable ? std::nullopt : link_shared_object(entry.object, why);
    if (shared)
      disk->put_loadable(entry.key, *shared);
    else
      disk->put(entry.key, entry.object);
  }

  void store_soon(Store entry) {
    // A forked child has the parent's writer in its memory but not its thread.
    const pid_t started_by = writer_process;
    if (!in_background || (started_by != 0 && started_by != ::getpid())) {
      store(entry);
      return;
    }
    std::lock_guard lock(store_mutex);
    if (writer_process == 0) {
      writer_process = ::getpid();
      writer = std::thread([this] { write_stores(); });
      pthread_setname_np(writer.native_handle(), "canopy:cache");
    }
    stores.push_back(std::move(entry));
    store_changed.notify_all();
  }

  void write_stores() {
    // Once per process that writes the cache, off the program's path: what
    // writers killed before they published an entry left behind.
    disk->remove_abandoned_temporaries();
    std::unique_lock lock(store_mutex);
    for (;;) {
      store_changed.wait(lock, [&] { return stopping || !stores.empty(); });
      if (stores.empty()) return;  // stopping, and nothing left
      Store entry = std::move(stores.front());
      stores.pop_front();
      ++storing;
      lock.unlock();
      store(entry);  // DiskCache is safe to use from several threads
      lock.lock();
      --storing;
      store_changed.notify_all();
    }
  }

  void flush() {
    std::unique_lock lock(store_mutex);
    if (writer_process != ::getpid()) return;  // none started, or a forked child's copy
    store_changed.wait(lock, [&] { return stores.empty() && storing == 0; });
  }

  ~State() {
    {
      std::lock_guard lock(store_mutex);
      stopping = true;
      store_changed.notify_all();
    }
    if (!writer.joinable()) return;
    if (writer_process == ::getpid())
      writer.join();
    else
      writer.detach();  // a forked child's copy: no thread behind it
  }

  void* jit_library() {
    std::lock_guard lock(mutex);
    if (!library) library = llvm_plugin().create_library("canopy.cpu");
    return library;
  }

  CpuEntry link(std::string_view object, const std::string& symbol) {
    return reinterpret_cast<CpuEntry>(llvm_plugin().link(jit_library(), object, symbol));
  }

  /// The entry of a cached kernel, or null. A shared object is opened by
  /// the system's loader (no LLVM); an object file (where no system linker
  /// was found when it was compiled, or the shared object does not load) is
  /// linked by the JIT.
  CpuEntry load(const std::string& key, const std::string& symbol, bool& unloadable) {
    if (const auto path = disk->get_loadable(key)) {
      std::string why;
      if (void* entry = load_shared_object(*path, symbol, why)) return reinterpret_cast<CpuEntry>(entry);
      unloadable = true;  // say, a folder mounted noexec: keep the object file instead
    }
    const auto object = disk->get(key);
    if (!object || !is_relocatable_object(*object)) return nullptr;
    try {
      // An object compiled together with other kernels (compile_together)
      // may be linked already, by one of them.
      if (llvm_plugin_loaded())
        if (void* linked = llvm_plugin().lookup(jit_library(), symbol)) return reinterpret_cast<CpuEntry>(linked);
      return link(*object, symbol);
    } catch (const Error&) {
      return nullptr;  // an object that passed the checksum but does not load: compile afresh
    }
  }

  /// Whether entries may come from the disk cache: not while CANOPY_DUMP
  /// asks for what compiling writes (ir's `<kernel>.cpu.ir`, llvm, asm),
  /// which a cached kernel would not write. What is compiled is still kept.
  bool loads_from_disk() const {
    const auto& s = settings();
    return disk && !s.dumps("ir") && !s.dumps("llvm") && !s.dumps("asm");
  }

  /// The entry of a kernel this compiler has not seen: from disk, else
  /// compiled, linked by the JIT and kept on disk as a shared object.
  CpuEntry load_or_compile(const ir::Kernel& kernel, const CodeOptions& code, const std::string& key, Source& source) {
    const std::string symbol = symbol_name(kernel.name, key);
    bool unloadable = false;
    if (loads_from_disk()) {
      if (CpuEntry entry = load(key, symbol, unloadable)) {
        source = Source::Disk;
        return entry;
      }
    }
    source = Source::Compiled;
    return compile_and_keep(kernel, code, key, symbol, unloadable);
  }

  /// Compiles `kernel` alone, links it and keeps it on disk.
  CpuEntry compile_and_keep(const ir::Kernel& kernel, const CodeOptions& code, const std::string& key,
                            const std::string& symbol, bool unloadable) {
    const std::string object =
        llvm_plugin().compile_for_host({HostKernel{&kernel, symbol, code.streaming_stores, code.plain_adds}});
    CpuEntry entry = link(object, symbol);
    if (disk) store_soon({key, object, unloadable});
    return entry;
  }
};

CpuCompiler::CpuCompiler() : CpuCompiler(Options{}) {}

CpuCompiler::CpuCompiler(Options options) : state_(std::make_unique<State>()) {
  const std::string dir = cache_directory(options.cache_dir);
  if (dir != "off") state_->disk = std::make_unique<DiskCache>(dir);
  state_->in_background = options.store_in_background;
}

void CpuCompiler::flush_disk_cache() { state_->flush(); }

CpuCompiler::~CpuCompiler() = default;

std::string CpuCompiler::cache_key(const ir::Kernel& kernel, const CodeOptions& code) const {
  std::string variant = "streaming stores";
  for (int p : code.streaming_stores) variant += " " + std::to_string(p);
  if (!code.plain_adds.empty()) variant += "\nplain adds";
  for (int p : code.plain_adds) variant += " " + std::to_string(p);
  // The settings that change the code, as they are now (a later Runtime may
  // have read others).
  variant += "\nsimd " + settings().simd + " width " + std::to_string(settings().simd_width);
  variant += "\nprefetch " + settings().prefetch;
  return hash_hex(state_->key_prefix() + variant + "\n" + ir::print(kernel));
}

std::string CpuCompiler::target_description() const { return llvm_plugin().host_description(); }

const DiskCache* CpuCompiler::disk_cache() const { return state_->disk.get(); }

CpuCompiler::Compiled CpuCompiler::compile(const ir::Kernel& kernel, const CodeOptions& code) {
  const auto start = std::chrono::steady_clock::now();
  ir::verify(kernel);
  Compiled result;
  result.key = cache_key(kernel, code);

  std::promise<CpuEntry> promise;
  std::shared_future<CpuEntry> known;
  {
    std::lock_guard lock(state_->mutex);
    auto [slot, inserted] = state_->entries.try_emplace(result.key);
    if (inserted)
      slot->second = promise.get_future().share();
    else
      known = slot->second;
  }
  if (known.valid()) {
    result.entry = known.get();  // waits while another thread compiles it; rethrows its error
    result.source = Source::Memory;
    std::lock_guard lock(state_->mutex);
    if (auto first = state_->unreturned.find(result.key); first != state_->unreturned.end()) {
      result.source = first->second;  // compile_together made it: this is its first compile()
      state_->unreturned.erase(first);
    }
    result.seconds = seconds_since(start);
    return result;
  }
  try {
    result.entry = state_->load_or_compile(kernel, code, result.key, result.source);
    promise.set_value(result.entry);
  } catch (...) {
    {
      std::lock_guard lock(state_->mutex);
      state_->entries.erase(result.key);  // a later call tries again
    }
    promise.set_exception(std::current_exception());
    throw;
  }
  result.seconds = seconds_since(start);
  return result;
}

void CpuCompiler::compile_together(const std::vector<const ir::Kernel*>& kernels, const CodeOptions& code) {
  // The kernels to make: not returned, not being compiled, each with the promise its compile() waits on.
  struct Pending {
    const ir::Kernel* kernel;
    std::string key, symbol;
    std::promise<CpuEntry> promise;
    bool unloadable = false;
  };
  std::vector<Pending> pending;
  for (const ir::Kernel* kernel : kernels) {
    std::string key;
    try {
      ir::verify(*kernel);
      key = cache_key(*kernel, code);
    } catch (const Error&) {
      continue;  // compile() reports it
    }
    std::lock_guard lock(state_->mutex);
    auto [slot, inserted] = state_->entries.try_emplace(key);
    if (!inserted) continue;
    Pending p{kernel, key, symbol_name(kernel->name, key), {}, false};
    slot->second = p.promise.get_future().share();
    pending.push_back(std::move(p));
  }
  auto settle = [&](Pending& p, CpuEntry entry, Source source) {
    {
      std::lock_guard lock(state_->mutex);
      state_->unreturned[p.key] = source;
    }
    p.promise.set_value(entry);
  };
  // Alone, as compile() would (the disk cache was asked already): a
  // compile() waiting for it gets its entry or its error.
  auto alone = [&](Pending& p) {
    try {
      settle(p, state_->compile_and_keep(*p.kernel, code, p.key, p.symbol, p.unloadable), Source::Compiled);
    } catch (...) {
      {
        std::lock_guard lock(state_->mutex);
        state_->entries.erase(p.key);  // a later compile() tries again
      }
      p.promise.set_exception(std::current_exception());
    }
  };
  // The disk cache first.
  std::vector<Pending*> to_compile;
  for (Pending& p : pending) {
    CpuEntry entry = nullptr;
    if (state_->loads_from_disk()) {
      try {
        entry = state_->load(p.key, p.symbol, p.unloadable);
      } catch (const Error&) {
      }
    }
    if (entry)
      settle(p, entry, Source::Disk);
    else
      to_compile.push_back(&p);
  }
  if (to_compile.empty()) return;
  if (to_compile.size() == 1) {
    alone(*to_compile.front());
    return;
  }
  std::vector<HostKernel> host;
  for (Pending* p : to_compile) host.push_back({p->kernel, p->symbol, code.streaming_stores, code.plain_adds});
  std::string object;
  std::vector<CpuEntry> linked;
  try {
    object = llvm_plugin().compile_for_host(host);
    linked.push_back(state_->link(object, to_compile.front()->symbol));
    for (std::size_t i = 1; i < to_compile.size(); ++i) {
      void* entry = llvm_plugin().lookup(state_->jit_library(), to_compile[i]->symbol);
      if (!entry) throw Error("Canopy's JIT cannot find " + to_compile[i]->symbol + " after loading it");
      linked.push_back(reinterpret_cast<CpuEntry>(entry));
    }
  } catch (...) {
    // One of them does not compile, or the object does not link: each alone.
    for (Pending* p : to_compile) alone(*p);
    return;
  }
  for (std::size_t i = 0; i < to_compile.size(); ++i) {
    // Each key keeps the whole object: a later run loads it for whichever kernel it meets first.
    if (state_->disk) {
      try {
        state_->store_soon({to_compile[i]->key, object, to_compile[i]->unloadable});
      } catch (const std::exception&) {  // the kernel runs all the same; a later run compiles it again
      }
    }
    settle(*to_compile[i], linked[i], Source::Compiled);
  }
}

std::vector<int> streaming_candidates(const ir::Kernel& kernel) {
  std::vector<int> candidates;
#if defined(__x86_64__)
  const auto footprint = ir::footprint_of(kernel);
  for (const auto& array : footprint.arrays) {
    const auto& param = kernel.params[static_cast<std::size_t>(array.param)];
    const auto& w = array.writes;
    if (param.rank != kernel.dims || array.reads.present || !w.present || !w.unconditional || w.atomic) continue;
    // Dimension d at exactly index(d): the points of the innermost range
    // dimension, the SIMD lanes, store consecutive elements.
    bool own_point = true;
    for (int d = 0; d < param.rank; ++d) {
      const auto& dim = w.dims.at(static_cast<std::size_t>(d));
      std::array<std::int64_t, 3> coeff{};
      coeff[static_cast<std::size_t>(d)] = 1;
      own_point = own_point && dim.is_affine() && dim.coeff == coeff && dim.lo == 0 && dim.hi == 0;
    }
    if (own_point) candidates.push_back(array.param);
  }
#endif
  return candidates;
}

CpuCompiler& CpuCompiler::shared() {
  // Never destroyed, like the JIT it feeds: kernels may run until the process ends.
  static CpuCompiler* const compiler = [] {
    Options options;
    options.store_in_background = true;
    auto* made = new CpuCompiler(options);
    // The kernels compiled last are on disk before the process ends.
    std::atexit([] { shared().flush_disk_cache(); });
    return made;
  }();
  return *compiler;
}

std::string_view name_of(CpuCompiler::Source source) {
  switch (source) {
    case CpuCompiler::Source::Memory: return "memory";
    case CpuCompiler::Source::Disk: return "disk";
    case CpuCompiler::Source::Compiled: return "compiled";
  }
  return "?";
}

}  // namespace canopy::jit
