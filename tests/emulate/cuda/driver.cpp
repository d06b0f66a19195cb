// A stand-in for the CUDA driver library (libcuda.so.1), so that Canopy's
// CUDA backend runs unchanged on a machine without a GPU: Canopy opens it
// through CANOPY_LIBCUDA exactly as it opens the real driver, and it exports
// every function of Canopy's driver table (backends/cuda/api.hpp) under the
// driver's symbols, with the driver's signatures, status codes and error
// semantics: calls before cuInit, unknown devices, contexts, streams,
// events, modules and functions, and device pointers that are not an
// allocation's are refused as the driver refuses them; allocations past
// the emulated memory give CUDA_ERROR_OUT_OF_MEMORY; launches past the
// block and grid limits CUDA_ERROR_INVALID_VALUE.
//
// Modules are what the emulated NVRTC (nvrtc.cpp) makes: host shared
// objects, given as their ELF image (a "cubin") or that image in
// hexadecimal (its "PTX"). cuModuleLoadDataEx writes the image to a
// temporary file and opens it with dlopen; anything else (real PTX or a
// real cubin) is CUDA_ERROR_INVALID_IMAGE. A launch runs the kernel the
// module exports with cuLaunchKernel's own arguments, grid and block: block
// after block, on the calling thread. The threads of a block run one after
// another when the kernel has no barrier, else as fibers that switch at
// __syncthreads and warp shuffles; a barrier that not every thread of the
// block (or warp) reaches fails the launch with CUDA_ERROR_LAUNCH_FAILED,
// which, as on a GPU, sticks to the context: later calls there return it.
// Each allocation is mapped with a page that may not be touched right after
// its end (its size rounded up to 256 bytes) and one before: a kernel that
// touches them, or any address no allocation has, fails its launch with
// CUDA_ERROR_ILLEGAL_ADDRESS (SIGSEGV and SIGBUS are caught while a kernel
// runs; outside a launch they go to the handler installed before). A
// launch that runs longer than CANOPY_EMULATED_CUDA_TIMEOUT (a kernel that
// never ends) fails with CUDA_ERROR_LAUNCH_TIMEOUT.
//
// Work is done when it is submitted, in call order: every stream's order,
// and events (complete when recorded), hold trivially.
//
// Device properties come from the environment when cuInit runs (the
// emulator's own variables, not Canopy's settings):
//   CANOPY_EMULATED_CUDA_DEVICES      how many devices (default 1)
//   CANOPY_EMULATED_CUDA_MEMORY       bytes of memory per device; K, M, G suffixes (default 2G)
//   CANOPY_EMULATED_CUDA_MAX_THREADS  most threads per block (default 1024)
//   CANOPY_EMULATED_CUDA_WARP_SIZE    threads per warp (default 32)
//   CANOPY_EMULATED_CUDA_CAPABILITY   compute capability, "8.0" (default)
//   CANOPY_EMULATED_CUDA_SMS          multiprocessors (default 4)
//   CANOPY_EMULATED_CUDA_SHARED       shared memory per block in bytes; suffixes as above (default 48K)
//   CANOPY_EMULATED_CUDA_TIMEOUT      seconds a launch may run (default 120; 0: no limit), read
//                                     at each launch; past it, CUDA_ERROR_LAUNCH_TIMEOUT
// Each device has a PCI address of its own, 0000:e0:<ordinal>.0.
//
// A test-only library: nothing in Canopy's product opens it unless told to.
#include <dlfcn.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "kernel_abi.hpp"

struct CUctx_st;
struct CUmod_st;
struct CUfunc_st;
struct CUstream_st;
struct CUevent_st;

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = CUctx_st*;
using CUmodule = CUmod_st*;
using CUfunction = CUfunc_st*;
using CUstream = CUstream_st*;
using CUevent = CUevent_st*;

namespace {

// The driver's status codes (cuda.h) this emulator returns.
constexpr CUresult kSuccess = 0;
constexpr CUresult kInvalidValue = 1;
constexpr CUresult kOutOfMemory = 2;
constexpr CUresult kNotInitialized = 3;
constexpr CUresult kNoDevice = 100;
constexpr CUresult kInvalidDevice = 101;
constexpr CUresult kInvalidImage = 200;
constexpr CUresult kInvalidContext = 201;
constexpr CUresult kInvalidHandle = 400;
constexpr CUresult kNotFound = 500;
constexpr CUresult kIllegalAddress = 700;
constexpr CUresult kLaunchTimeout = 702;
constexpr CUresult kLaunchFailed = 719;
constexpr CUresult kNotSupported = 801;

constexpr int kDriverVersion = 12040;  // what cuDriverGetVersion says: CUDA 12.4

// ---- the devices --------------------------------------------------------------------

struct Device {
  int ordinal = 0;
  std::size_t memory = 0, used = 0;
  int max_threads = 1024, warp_size = 32, major = 8, minor = 0, multiprocessors = 4;
  std::size_t shared_memory = 48 * 1024;
};

// The contexts (one primary context per device), with the error that
// sticks to one after a launch failed.
struct Context {
  Device* device = nullptr;
  int retained = 0;
  CUresult sticky = kSuccess;
};

// An allocation ends where a page that may not be touched begins, and one
// such page is before its mapping: a kernel's access just past either end
// faults, and the launch fails with CUDA_ERROR_ILLEGAL_ADDRESS.
struct Allocation {
  std::size_t bytes = 0;    // what the kernel may touch: the size asked, in 256-byte steps
  std::size_t counted = 0;  // what the device's memory counts: in 512-byte steps, as the driver hands it out
  void* mapping = nullptr;
  std::size_t mapping_bytes = 0;
  Context* context = nullptr;
};

struct Module;
struct Function {
  Module* module = nullptr;
  std::string name;
  canopy_emulated::Entry entry = nullptr;
};

struct Module {
  Context* context = nullptr;
  void* library = nullptr;
  bool cooperates = false;
  std::mutex launching;  // the kernel library's built-in variables serve one launch at a time
  std::map<std::string, std::unique_ptr<Function>> functions;
  // The kernel library's variables (kernel_abi.hpp).
  unsigned int *thread_index = nullptr, *block_index = nullptr, *block_dim = nullptr, *grid_dim = nullptr;
  int* warp_size = nullptr;
  unsigned long long** warp_slots = nullptr;
  canopy_emulated::Barrier* barrier = nullptr;
  canopy_emulated::Barrier* warp_barrier = nullptr;
};

struct Stream {
  Context* context = nullptr;
};
struct Event {
  Context* context = nullptr;
};

// Everything the driver knows, under one lock (launches run outside it).
struct Driver {
  std::mutex mutex;
  bool initialized = false;
  std::vector<std::unique_ptr<Device>> devices;
  std::vector<std::unique_ptr<Context>> contexts;  // one per device
  std::map<CUdeviceptr, Allocation> allocations;
  std::set<Module*> modules;
  std::set<Function*> functions;
  std::set<Stream*> streams;
  std::set<Event*> events;
};

Driver& driver() {
  static Driver* instance = new Driver;  // never destroyed: kernels may still run at exit
  return *instance;
}

thread_local std::vector<Context*> current_contexts;

std::size_t size_from_environment(const char* name, std::size_t fallback) {
  const char* text = std::getenv(name);
  if (!text || !*text) return fallback;
  char* end = nullptr;
  const double value = std::strtod(text, &end);
  std::size_t scale = 1;
  if (end && (*end == 'K' || *end == 'k')) scale = std::size_t{1} << 10;
  if (end && (*end == 'M' || *end == 'm')) scale = std::size_t{1} << 20;
  if (end && (*end == 'G' || *end == 'g')) scale = std::size_t{1} << 30;
  return value > 0 ? static_cast<std::size_t>(value * static_cast<double>(scale)) : fallback;
}

int int_from_environment(const char* name, int fallback) {
  const char* text = std::getenv(name);
  if (!text || !*text) return fallback;
  const int value = std::atoi(text);
  return value > 0 ? value : fallback;
}

void make_devices(Driver& state) {
  const int count = int_from_environment("CANOPY_EMULATED_CUDA_DEVICES", 1);
  for (int ordinal = 0; ordinal < count; ++ordinal) {
    auto device = std::make_unique<Device>();
    device->ordinal = ordinal;
    device->memory = size_from_environment("CANOPY_EMULATED_CUDA_MEMORY", std::size_t{2} << 30);
    device->max_threads = int_from_environment("CANOPY_EMULATED_CUDA_MAX_THREADS", 1024);
    device->warp_size = int_from_environment("CANOPY_EMULATED_CUDA_WARP_SIZE", 32);
    device->multiprocessors = int_from_environment("CANOPY_EMULATED_CUDA_SMS", 4);
    device->shared_memory = size_from_environment("CANOPY_EMULATED_CUDA_SHARED", 48 * 1024);
    if (const char* capability = std::getenv("CANOPY_EMULATED_CUDA_CAPABILITY"); capability && *capability)
      std::sscanf(capability, "%d.%d", &device->major, &device->minor);
    auto context = std::make_unique<Context>();
    context->device = device.get();
    state.devices.push_back(std::move(device));
    state.contexts.push_back(std::move(context));
  }
}

// The context current on this thread, or null.
Context* current() { return current_contexts.empty() ? nullptr : current_contexts.back(); }

// The first check of most calls: initialized, and a context current and
// not failed. Returns kSuccess or the code to return. Call with the lock held.
CUresult usable_context(Driver& state, Context*& context) {
  if (!state.initialized) return kNotInitialized;
  context = current();
  if (!context || context->retained == 0) return kInvalidContext;
  return context->sticky;
}

// Whether `stream` (null: the default stream) may be used in `context`.
bool usable_stream(const Driver& state, CUstream stream, const Context* context) {
  if (!stream) return true;
  auto* known = reinterpret_cast<Stream*>(stream);
  return state.streams.count(known) && known->context == context;
}

// Whether [address, address + bytes) lies in one allocation of `context`.
bool inside_allocation(const Driver& state, CUdeviceptr address, std::size_t bytes, const Context* context) {
  auto after = state.allocations.upper_bound(address);
  if (after == state.allocations.begin()) return false;
  const auto& [start, allocation] = *std::prev(after);
  return allocation.context == context && address - start <= allocation.bytes &&
         bytes <= allocation.bytes - (address - start);
}

// ---- modules ----------------------------------------------------------------------------

// The size of an ELF64 image: the end of its section header table or of
// its last segment, whichever is further (the driver, too, reads a cubin's
// size from its headers).
std::size_t elf_size(const unsigned char* image) {
  if (std::memcmp(image,
                  "\x7f"
                  "ELF",
                  4) != 0 ||
      image[4] != 2)
    return 0;  // ELFCLASS64
  auto read = [&](std::size_t offset, std::size_t bytes) {
    std::uint64_t value = 0;
    std::memcpy(&value, image + offset, bytes);
    return value;
  };
  const std::uint64_t phoff = read(32, 8), shoff = read(40, 8);
  const std::uint64_t phentsize = read(54, 2), phnum = read(56, 2), shentsize = read(58, 2), shnum = read(60, 2);
  std::uint64_t end = shoff + shentsize * shnum;
  for (std::uint64_t k = 0; k < phnum; ++k) {
    const std::uint64_t header = phoff + k * phentsize;
    end = std::max(end, read(header + 8, 8) + read(header + 32, 8));  // p_offset + p_filesz
  }
  return static_cast<std::size_t>(end);
}

// The image's shared object bytes: the ELF image itself, or decoded from
// the emulated NVRTC's "PTX"; empty when it is neither.
std::string library_bytes(const void* image) {
  const auto* bytes = static_cast<const unsigned char*>(image);
  if (const std::size_t size = elf_size(bytes); size > 0)
    return std::string(reinterpret_cast<const char*>(bytes), size);
  const auto* text = static_cast<const char*>(image);
  const std::size_t header = std::strlen(canopy_emulated::kPtxHeader);
  if (std::strncmp(text, canopy_emulated::kPtxHeader, header) != 0) return "";
  std::string library;
  int high = -1;
  for (const char* c = text + header; *c; ++c) {
    int digit = -1;
    if (*c >= '0' && *c <= '9') digit = *c - '0';
    if (*c >= 'a' && *c <= 'f') digit = *c - 'a' + 10;
    if (digit < 0) continue;
    if (high < 0) {
      high = digit;
    } else {
      library += static_cast<char>(high * 16 + digit);
      high = -1;
    }
  }
  return elf_size(reinterpret_cast<const unsigned char*>(library.data())) > 0 ? library : "";
}

// Writes a message into the JIT log buffer cuModuleLoadDataEx was given, if any.
void write_log(unsigned int count, const int* options, void** values, int buffer_option, int size_option,
               const std::string& message) {
  char* buffer = nullptr;
  std::size_t size = 0;
  for (unsigned int k = 0; k < count; ++k) {
    if (options[k] == buffer_option) buffer = static_cast<char*>(values[k]);
    if (options[k] == size_option) size = static_cast<std::size_t>(reinterpret_cast<std::uintptr_t>(values[k]));
  }
  if (!buffer || size == 0) return;
  const std::size_t n = std::min(size - 1, message.size());
  std::memcpy(buffer, message.data(), n);
  buffer[n] = '\0';
}

template <class T>
T* symbol(void* library, const char* name) {
  return reinterpret_cast<T*>(dlsym(library, name));
}

// Opens the image's shared object; null with `error` set when it is not one.
std::unique_ptr<Module> open_module(const void* image, std::string& error) {
  const std::string bytes = library_bytes(image);
  if (bytes.empty()) {
    error = "the image is not a module of Canopy's emulated NVRTC (real PTX and cubins do not run here)";
    return nullptr;
  }
  char path[] = "/tmp/canopy-emulated-module-XXXXXX";
  const int file = mkstemp(path);
  if (file < 0) {
    error = "cannot write the module to /tmp";
    return nullptr;
  }
  const bool written = write(file, bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size());
  close(file);
  void* library = written ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : nullptr;
  if (!library) error = written ? dlerror() : "cannot write the module to /tmp";
  unlink(path);
  if (!library) return nullptr;
  auto module = std::make_unique<Module>();
  module->library = library;
  module->thread_index = symbol<unsigned int>(library, "threadIdx");
  module->block_index = symbol<unsigned int>(library, "blockIdx");
  module->block_dim = symbol<unsigned int>(library, "blockDim");
  module->grid_dim = symbol<unsigned int>(library, "gridDim");
  module->warp_size = symbol<int>(library, "canopy_emulated_warp_size");
  module->warp_slots = symbol<unsigned long long*>(library, "canopy_emulated_warp_slots");
  module->barrier = symbol<canopy_emulated::Barrier>(library, "canopy_emulated_barrier");
  module->warp_barrier = symbol<canopy_emulated::Barrier>(library, "canopy_emulated_warp_barrier");
  const int* cooperates = symbol<const int>(library, "canopy_emulated_uses_barrier");
  if (!module->thread_index || !module->block_index || !module->block_dim || !module->grid_dim || !module->warp_size ||
      !module->warp_slots || !module->barrier || !module->warp_barrier || !cooperates) {
    error = "the shared object lacks the emulated kernel ABI (kernel_abi.hpp)";
    dlclose(library);
    return nullptr;
  }
  module->cooperates = *cooperates != 0;
  return module;
}

// ---- running a block ----------------------------------------------------------------------

// The threads of one block as fibers: each runs the kernel's entry until it
// returns or waits at a barrier; the scheduler lets a barrier go when every
// thread it concerns (the block's, or the warp's) waits there, and fails
// the launch when the threads left can never all meet.
class BlockRun {
 public:
  static constexpr std::size_t kStackBytes = 128 * 1024;

  BlockRun(Module& module, canopy_emulated::Entry entry, void** params, const unsigned int block[3], int warp_size)
      : module_(module), entry_(entry), params_(params), warp_size_(std::max(1, warp_size)) {
    for (int d = 0; d < 3; ++d) block_[d] = block[d];
    threads_ = static_cast<std::size_t>(block[0]) * block[1] * block[2];
  }

  // Runs the block whose index the module's blockIdx holds. Returns
  // an empty string, or why the launch failed.
  std::string run() {
    running_ = this;
    *module_.barrier = &block_barrier;
    *module_.warp_barrier = &warp_barrier;
    slots_.assign(threads_, 0);
    *module_.warp_slots = slots_.data();
    fibers_.resize(threads_);
    if (stacks_.size() < threads_) stacks_.resize(threads_);
    for (std::size_t t = 0; t < threads_; ++t) {
      Fiber& fiber = fibers_[t];
      fiber = Fiber{};
      if (!stacks_[t]) stacks_[t] = std::make_unique<char[]>(kStackBytes);
      getcontext(&fiber.context);
      fiber.context.uc_stack.ss_sp = stacks_[t].get();
      fiber.context.uc_stack.ss_size = kStackBytes;
      fiber.context.uc_link = &scheduler_;
      makecontext(&fiber.context, &start, 0);
    }
    std::string failure;
    for (;;) {
      bool ran = false;
      for (std::size_t t = 0; t < threads_; ++t) {
        Fiber& fiber = fibers_[t];
        if (fiber.state != State::Ready) continue;
        resume(t);
        ran = true;
      }
      if (ran) continue;
      if (std::all_of(fibers_.begin(), fibers_.end(), [](const Fiber& f) { return f.state == State::Done; })) break;
      failure = release_barriers();
      if (!failure.empty()) break;
    }
    running_ = nullptr;
    return failure;
  }

 private:
  enum class State { Ready, AtBlockBarrier, AtWarpBarrier, Done };
  struct Fiber {
    ucontext_t context{};
    State state = State::Ready;
  };

  static thread_local BlockRun* running_;

 public:
  /// Forgets the block that ran when a fault ended it.
  static void abandon() { running_ = nullptr; }

 private:
  void resume(std::size_t t) {
    current_ = t;
    std::size_t rest = t;
    const unsigned int x = static_cast<unsigned int>(rest % block_[0]);
    rest /= block_[0];
    module_.thread_index[0] = x;
    module_.thread_index[1] = static_cast<unsigned int>(rest % block_[1]);
    module_.thread_index[2] = static_cast<unsigned int>(rest / block_[1]);
    swapcontext(&scheduler_, &fibers_[t].context);
  }

  static void start() {
    BlockRun& run = *running_;
    run.entry_(run.params_);
    run.fibers_[run.current_].state = State::Done;  // uc_link returns to the scheduler
  }

  void wait(State at) {
    Fiber& fiber = fibers_[current_];
    fiber.state = at;
    swapcontext(&fiber.context, &scheduler_);
  }
  static void block_barrier() { running_->wait(State::AtBlockBarrier); }
  static void warp_barrier() { running_->wait(State::AtWarpBarrier); }

  // Every thread is done or waiting: lets go the barriers all their threads
  // reached, or says why none can be.
  std::string release_barriers() {
    const bool block_waits =
        std::any_of(fibers_.begin(), fibers_.end(), [](const Fiber& f) { return f.state == State::AtBlockBarrier; });
    if (block_waits) {
      std::size_t waiting = 0, done = 0;
      for (const Fiber& f : fibers_) {
        waiting += f.state == State::AtBlockBarrier;
        done += f.state == State::Done;
      }
      if (waiting == threads_) {
        for (Fiber& f : fibers_) f.state = State::Ready;
        return "";
      }
      if (waiting + done == threads_)
        return std::to_string(waiting) + " of the block's " + std::to_string(threads_) +
               " threads wait at __syncthreads, which the others returned without reaching";
    }
    bool released = false;
    for (std::size_t first = 0; first < threads_; first += static_cast<std::size_t>(warp_size_)) {
      const std::size_t end = std::min(threads_, first + static_cast<std::size_t>(warp_size_));
      bool all = true, any = false;
      for (std::size_t t = first; t < end; ++t) {
        all = all && fibers_[t].state == State::AtWarpBarrier;
        any = any || fibers_[t].state == State::AtWarpBarrier;
      }
      if (all) {
        for (std::size_t t = first; t < end; ++t) fibers_[t].state = State::Ready;
        released = true;
      } else if (any) {
        const bool rest_done = std::all_of(
            fibers_.begin() + static_cast<std::ptrdiff_t>(first), fibers_.begin() + static_cast<std::ptrdiff_t>(end),
            [](const Fiber& f) { return f.state == State::Done || f.state == State::AtWarpBarrier; });
        if (rest_done)
          return "threads of warp " + std::to_string(first / static_cast<std::size_t>(warp_size_)) +
                 " wait at a warp shuffle that others of the warp returned without reaching";
      }
    }
    if (released) return "";
    return "the block's threads wait at different barriers (__syncthreads and a warp shuffle): none can go on";
  }

  Module& module_;
  canopy_emulated::Entry entry_;
  void** params_;
  int warp_size_;
  unsigned int block_[3] = {1, 1, 1};
  std::size_t threads_ = 0, current_ = 0;
  ucontext_t scheduler_{};
  std::vector<Fiber> fibers_;
  std::vector<unsigned long long> slots_;
  static thread_local std::vector<std::unique_ptr<char[]>> stacks_;
};

thread_local BlockRun* BlockRun::running_ = nullptr;
thread_local std::vector<std::unique_ptr<char[]>> BlockRun::stacks_;

void unreachable_barrier() {
  std::fprintf(stderr, "canopy emulated CUDA: a barrier was reached outside a launch\n");
  std::abort();
}

// Runs every block of the grid, the module's variables set. Returns an
// empty string, or why it failed.
std::string run_blocks(Function& function, BlockRun* cooperating, const unsigned int grid[3],
                       const unsigned int block[3], void** params) {
  Module& module = *function.module;
  for (unsigned int z = 0; z < grid[2]; ++z)
    for (unsigned int y = 0; y < grid[1]; ++y)
      for (unsigned int x = 0; x < grid[0]; ++x) {
        module.block_index[0] = x;
        module.block_index[1] = y;
        module.block_index[2] = z;
        if (cooperating) {
          if (std::string failure = cooperating->run(); !failure.empty())
            return "block (" + std::to_string(x) + ", " + std::to_string(y) + ", " + std::to_string(z) +
                   "): " + failure;
          continue;
        }
        for (unsigned int tz = 0; tz < block[2]; ++tz)
          for (unsigned int ty = 0; ty < block[1]; ++ty)
            for (unsigned int tx = 0; tx < block[0]; ++tx) {
              module.thread_index[0] = tx;
              module.thread_index[1] = ty;
              module.thread_index[2] = tz;
              function.entry(params);
            }
      }
  return "";
}

// A kernel's access outside memory it may touch (a guard page, an address
// no allocation has) raises SIGSEGV or SIGBUS on the launching thread; the
// handler, installed while any launch runs (over a test framework's own),
// jumps back to the launch, which fails. Other faults go to the handler
// that was there before. A launch that runs past its time (a kernel that
// never ends) is ended the same way by a timer's SIGALRM.
thread_local sigjmp_buf* launch_recovery = nullptr;
thread_local void* fault_address = nullptr;
thread_local bool timed_out = false;
std::mutex handler_mutex;
int launches_running = 0;
struct sigaction previous_segv, previous_bus, previous_alarm;

void on_timeout(int, siginfo_t*, void*) {
  if (sigjmp_buf* recovery = launch_recovery) {
    launch_recovery = nullptr;
    timed_out = true;
    siglongjmp(*recovery, 1);
  }
  // A timer of a launch that has just ended: nothing to do.
}

void on_fault(int signal, siginfo_t* info, void* context) {
  if (sigjmp_buf* recovery = launch_recovery) {
    launch_recovery = nullptr;
    fault_address = info->si_addr;
    siglongjmp(*recovery, 1);
  }
  const struct sigaction& before = signal == SIGSEGV ? previous_segv : previous_bus;
  if (before.sa_flags & SA_SIGINFO) {
    if (before.sa_sigaction) return before.sa_sigaction(signal, info, context);
  } else if (before.sa_handler != SIG_DFL && before.sa_handler != SIG_IGN) {
    return before.sa_handler(signal);
  }
  sigaction(signal, &before, nullptr);  // the default action when the access is made again
}

// Catches faults for as long as it lives (and any other launch's does).
class CatchFaults {
 public:
  CatchFaults() {
    std::lock_guard lock(handler_mutex);
    if (launches_running++ > 0) return;
    struct sigaction action {};
    action.sa_sigaction = &on_fault;
    action.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&action.sa_mask);
    sigaction(SIGSEGV, &action, &previous_segv);
    sigaction(SIGBUS, &action, &previous_bus);
    action.sa_sigaction = &on_timeout;
    sigaction(SIGALRM, &action, &previous_alarm);
  }
  ~CatchFaults() {
    std::lock_guard lock(handler_mutex);
    if (--launches_running > 0) return;
    sigaction(SIGSEGV, &previous_segv, nullptr);
    sigaction(SIGBUS, &previous_bus, nullptr);
    sigaction(SIGALRM, &previous_alarm, nullptr);
  }
  CatchFaults(const CatchFaults&) = delete;
  CatchFaults& operator=(const CatchFaults&) = delete;
};

// A one-shot timer that sends SIGALRM to the calling thread after
// CANOPY_EMULATED_CUDA_TIMEOUT seconds (default 120; 0: none), read at each launch.
class LaunchTimer {
 public:
  LaunchTimer() {
    const char* text = std::getenv("CANOPY_EMULATED_CUDA_TIMEOUT");
    seconds_ = text && *text ? std::atof(text) : 120.0;
    if (seconds_ <= 0) return;
    struct sigevent event {};
    event.sigev_notify = SIGEV_THREAD_ID;
    event.sigev_signo = SIGALRM;
    event._sigev_un._tid = static_cast<pid_t>(gettid());
    if (timer_create(CLOCK_MONOTONIC, &event, &timer_) != 0) return;
    armed_ = true;
    struct itimerspec when {};
    when.it_value.tv_sec = static_cast<time_t>(seconds_);
    when.it_value.tv_nsec = static_cast<long>((seconds_ - static_cast<double>(when.it_value.tv_sec)) * 1e9);
    timer_settime(timer_, 0, &when, nullptr);
  }
  ~LaunchTimer() {
    if (armed_) timer_delete(timer_);
  }
  LaunchTimer(const LaunchTimer&) = delete;
  LaunchTimer& operator=(const LaunchTimer&) = delete;
  double seconds() const { return seconds_; }

 private:
  timer_t timer_{};
  bool armed_ = false;
  double seconds_ = 0;
};

// Runs the grid. Returns an empty string, or why the launch failed; sets
// `status` to the status that sticks to the context.
std::string run_grid(Function& function, const unsigned int grid[3], const unsigned int block[3], void** params,
                     int warp_size, CUresult& status) {
  Module& module = *function.module;
  std::lock_guard lock(module.launching);
  for (int d = 0; d < 3; ++d) {
    module.block_dim[d] = block[d];
    module.grid_dim[d] = grid[d];
  }
  *module.warp_size = warp_size;
  *module.barrier = &unreachable_barrier;
  *module.warp_barrier = &unreachable_barrier;
  std::unique_ptr<BlockRun> cooperating;
  if (module.cooperates) cooperating = std::make_unique<BlockRun>(module, function.entry, params, block, warp_size);
  CatchFaults catching;
  timed_out = false;
  LaunchTimer timer;
  sigjmp_buf recovery;
  if (sigsetjmp(recovery, 1) != 0) {
    BlockRun::abandon();
    char text[128];
    if (timed_out) {
      status = kLaunchTimeout;
      std::snprintf(text, sizeof text, "still running after %g s (CANOPY_EMULATED_CUDA_TIMEOUT)", timer.seconds());
    } else {
      status = kIllegalAddress;
      std::snprintf(text, sizeof text, "an access at address %p, outside every allocation", fault_address);
    }
    return text;
  }
  launch_recovery = &recovery;
  std::string failure = run_blocks(function, cooperating.get(), grid, block, params);
  launch_recovery = nullptr;
  status = kLaunchFailed;
  return failure;
}

// The names and descriptions of the driver's status codes.
struct ErrorText {
  CUresult code;
  const char* name;
  const char* description;
};
constexpr ErrorText kErrors[] = {
    {0, "CUDA_SUCCESS", "no error"},
    {1, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {2, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {3, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {100, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {101, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {200, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {201, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {400, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {500, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {700, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
    {702, "CUDA_ERROR_LAUNCH_TIMEOUT", "the launch timed out and was terminated"},
    {719, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
    {801, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
};

const ErrorText* error_text(CUresult code) {
  for (const ErrorText& text : kErrors)
    if (text.code == code) return &text;
  return nullptr;
}

}  // namespace

extern "C" {

// ---- initialization, errors and devices ---------------------------------------------------

CUresult cuInit(unsigned int flags) {
  if (flags != 0) return kInvalidValue;
  Driver& state = driver();
  std::lock_guard lock(state.mutex);
  if (!state.initialized) make_devices(state);
  state.initialized = true;
  return state.devices.empty() ? kNoDevice : kSuccess;
}

CUresult cuDriverGetVersion(int* version) {
  if (!version) return kInvalidValue;
  *version = kDriverVersion;
  return kSuccess;
}

CUresult cuGetErrorName(CUresult code, const char** name) {
  if (!name) return kInvalidValue;
  const ErrorText* text = error_text(code);
  *name = text ? text->name : nullptr;
  return text ? kSuccess : kInvalidValue;
}

CUresult cuGetErrorString(CUresult code, const char** description) {
  if (!description) return kInvalidValue;
  const ErrorText* text = error_text(code);
  *description = text ? text->description : nullptr;
  return text ? kSuccess : kInvalidValue;
}

CUresult cuDeviceGetCount(int* count) {
  if (!count) return kInvalidValue;
  Driver& state = driver();
  std::lock_guard lock(state.mutex);
  if (!state.initialized) return kNotInitialized;
  *count = static_cast<int>(state.devices.size());
  return kSuccess;
}

CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  if (!device) return kInvalidValue;
  Driver& state = driver();
  std::lock_guard lock(state.mutex);
  if (!state.initialized) return kNotInitialized;
  if (ordinal < 0 || ordinal >= static_cast<int>(state.devices.size())) return kInvalidDevice;
  *device = ordinal;
  return kSuccess;
}

}  // extern "C"

namespace {
// The device `ordinal` names, or null; sets `status` to why not.
Device* device_at(CUdevice ordinal, CUresult& status) {
  Driver& state = driver();
  status = kSuccess;
  if (!state.initialized)
    status = kNotInitialized;
  else if (ordinal < 0 || ordinal >= static_cast<int>(state.devices.size()))
    status = kInvalidDevice;
  return status == kSuccess ? state.devices[static_cast<std::size_t>(ordinal)].get() : nullptr;
}
}  // namespace

extern "C" {

CUresult cuDeviceGetName(char* name, int length, CUdevice ordinal) {
  if (!name || length <= 0) return kInvalidValue;
  std::lock_guard lock(driver().mutex);
  CUresult status = kSuccess;
  if (!device_at(ordinal, status)) return status;
  std::snprintf(name, static_cast<std::size_t>(length), "Canopy emulated CUDA device %d", ordinal);
  return kSuccess;
}

CUresult cuDeviceGetAttribute(int* value, int attribute, CUdevice ordinal) {
  if (!value) return kInvalidValue;
  std::lock_guard lock(driver().mutex);
  CUresult status = kSuccess;
  const Device* device = device_at(ordinal, status);
  if (!device) return status;
  switch (attribute) {
    case 1: *value = device->max_threads; break;  // MAX_THREADS_PER_BLOCK
    case 2:
    case 3: *value = device->max_threads; break;                // MAX_BLOCK_DIM_X, _Y
    case 4: *value = std::min(64, device->max_threads); break;  // MAX_BLOCK_DIM_Z
    case 5: *value = 2147483647; break;                         // MAX_GRID_DIM_X
    case 6:
    case 7: *value = 65535; break;                                    // MAX_GRID_DIM_Y, _Z
    case 8: *value = static_cast<int>(device->shared_memory); break;  // MAX_SHARED_MEMORY_PER_BLOCK
    case 10: *value = device->warp_size; break;                       // WARP_SIZE
    case 16: *value = device->multiprocessors; break;                 // MULTIPROCESSOR_COUNT
    case 18: *value = 0; break;                                       // INTEGRATED
    case 33: *value = 0xe0; break;                                    // PCI_BUS_ID
    case 34: *value = ordinal; break;                                 // PCI_DEVICE_ID
    case 50: *value = 0; break;                                       // PCI_DOMAIN_ID
    case 75: *value = device->major; break;                           // COMPUTE_CAPABILITY_MAJOR
    case 76: *value = device->minor; break;                           // COMPUTE_CAPABILITY_MINOR
    default: return kInvalidValue;
  }
  return kSuccess;
}

CUresult cuDeviceTotalMem_v2(std::size_t* bytes, CUdevice ordinal) {
  if (!bytes) return kInvalidValue;
  std::lock_guard lock(driver().mutex);
  CUresult status = kSuccess;
  const Device* device = device_at(ordinal, status);
  if (!device) return status;
  *bytes = device->memory;
  return kSuccess;
}

CUresult cuDeviceGetPCIBusId(char* text, int length, CUdevice ordinal) {
  if (!text || length <= 0) return kInvalidValue;
  std::lock_guard lock(driver().mutex);
  CUresult status = kSuccess;
  if (!device_at(ordinal, status)) return status;
  std::snprintf(text, static_cast<std::size_t>(length), "0000:E0:%02X.0", static_cast<unsigned>(ordinal));
  return kSuccess;
}

// ---- contexts ----------------------------------------------------------------------------

CUresult cuDevicePrimaryCtxRetain(CUcontext* context, CUdevice ordinal) {
  if (!context) return kInvalidValue;
  Driver& state = driver();
  std::lock_guard lock(state.mutex);
  CUresult status = kSuccess;
  if (!device_at(ordinal, status)) return status;
  Context* primary = state.contexts[static_cast<std::size_t>(ordinal)].get();
  ++primary->retained;
  *context = reinterpret_cast<CUcontext>(primary);
  return kSuccess;
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice ordinal) {
  Driver& state = driver();
  std::lock_guard lock(state.mutex);
  CUresult status = kSuccess;
  if (!device_at(ordinal, status)) return status;
  Context* primary = state.contexts[static_cast<std::size_t>(ordinal)].get();
  if (primary->retained == 0) return kInvalidContext;
  if (--primary->retained == 0) primary->sticky = kSuccess;  // a context made afresh next time
  return kSuccess;
}

CUresult cuCtxPushCurrent_v2(CUcontext context) {
  Driver& state = driver();
  std::lock_guard lock(state.mutex);
  if (!state.initialized) return kNotInitialized;
  auto* pushed = reinterpret_cast<Context*>(context);
  const bool known = std::any_of(state.contexts.begin(), state.contexts.end(),
                                 [&](const auto& c) { return c.get() == pushed && c->retained > 0; });
  if (!known) return kInvalidContext;
  current_contexts.push_back(pushed);
  return kSuccess;
}

CUresult cuCtxPopCurrent_v2(CUcontext* context) {
  Driver& state = driver();
  std::lock_guard lock(state.mutex);
  if (!state.initialized) return kNotInitialized;
  if (current_contexts.empty()) return kInvalidContext;
  if (context) *context = reinterpret_cast<CUcontext>(current_contexts.back());
  current_contexts.pop_back();
  return kSuccess;
}

// ---- memory ----------------------------------------------------------------------------------

CUresult cuMemGetInfo_v2(std::size_t* free_bytes, std::size_t* total_bytes) {
  if (!free_bytes || !total_bytes) return kInvalidValue;
  Driver& state = driver();
  std::lock_guard lock(state.mutex);
  Context* context = nullptr;
  if (const CUresult status = usable_context(state, context); status != kSuccess) return status;
  *total_bytes = context->device->memory;
  *free_bytes = context->device->memory - context->device->used;
  return kSuccess;
}

CUresult cuMemAlloc_v2(CUdeviceptr* address, std::size_t bytes) {
  if (!address) return kInvalidValue;
  Driver& state = driver();
  std::lock_guard lock(state.mutex);
  Context* context = nullptr;
  if (const CUresult status = usable_context(state, context); status != kSuccess) return status;
  if (bytes == 0) return kInvalidValue;
  Device& device = *context->device;
  // The driver counts memory in pieces of 512 bytes and aligns it to 256.
  const std::size_t counted = (bytes + 511) / 512 * 512;
  if (counted > device.memory - device.used) return kOutOfMemory;
  const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  const std::size_t usable = (bytes + 255) / 256 * 256, span = (usable + page - 1) / page * page;
  void* mapping =
      mmap(nullptr, span + 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (mapping == MAP_FAILED) return kOutOfMemory;
  auto* base = static_cast<char*>(mapping);
  mprotect(base, page, PROT_NONE);
  mprotect(base + page + span, page, PROT_NONE);
  device.used += counted;
  const auto start = static_cast<CUdeviceptr>(reinterpret_cast<std::uintptr_t>(base + page + span - usable));
  state.allocations[start] = Allocation{usable, counted, mapping, span + 2 * page, context};
  *address = start;
  return kSuccess;
}

CUresult cuMemFree_v2(CUdeviceptr address) {
  Driver& state = driver();
  std::lock_guard lock(state.mutex);
  Context* context = nullptr;
  if (const CUresult status = usable_context(state, context); status != kSuccess) return status;
  if (address == 0) return kSuccess;
  auto found = state.allocations.find(address);
  if (found == state.allocations.end()) return kInvalidValue;
  found->second.context->device->used -= found->second.counted;
  munmap(found->second.mapping, found->second.mapping_bytes);
  state.allocations.erase(found);
  return kSuccess;
}

}  // extern "C"

namespace {
// The checks every copy and fill makes: a usable context and stream, and
// `bytes` at `address` inside one of its allocations.
CUresult check_device_range(CUdeviceptr address, std::size_t bytes, CUstream stream) {
  Driver& state = driver();
  std::lock_guard lock(state.mutex);
  Context* context = nullptr;
  if (const CUresult status = usable_context(state, context); status != kSuccess) return status;
  if (!usable_stream(state, stream, context)) return kInvalidHandle;
  if (bytes > 0 && !inside_allocation(state, address, bytes, context)) return kInvalidValue;
  return kSuccess;
}
void* host_address(CUdeviceptr address) { return reinterpret_cast<void*>(static_cast<std::uintptr_t>(address)); }
}  // namespace

extern "C" {

CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr destination, const void* source, std::size_t bytes, CUstream stream) {
  if (bytes > 0 && !source) return kInvalidValue;
  if (const CUresult status = check_device_range(destination, bytes, stream); status != kSuccess) return status;
  if (bytes > 0) std::memcpy(host_address(destination), source, bytes);
  return kSuccess;
}

CUresult cuMemcpyDtoHAsync_v2(void* destination, CUdeviceptr source, std::size_t bytes, CUstream stream) {
  if (bytes > 0 && !destination) return kInvalidValue;
  if (const CUresult status = check_device_range(source, bytes, stream); status != kSuccess) return status;
  if (bytes > 0) std::memcpy(destination, host_address(source), bytes);
  return kSuccess;
}

CUresult cuMemsetD8Async(CUdeviceptr destination, unsigned char value, std::size_t count, CUstream stream) {
  if (const CUresult status = check_device_range(destination, count, stream); status != kSuccess) return status;
  if (count > 0) std::memset(host_address(destination), value, count);
  return kSuccess;
}

CUresult cuMemsetD32Async(CUdeviceptr destination, unsigned int value, std::size_t count, CUstream stream) {
  if (destination % 4 != 0) return kInvalidValue;
  if (const CUresult status = check_device_range(destination, 4 * count, stream); status != kSuccess) return status;
  auto* words = static_cast<unsigned int*>(host_address(destination));
  std::fill(words, words + count, value);
  return kSuccess;
}

CUresult cuMemsetD2D32Async(CUdeviceptr destination, std::size_t pitch, unsigned int value, std::size_t width,
                            std::size_t height, CUstream stream) {
  if (destination % 4 != 0 || pitch % 4 != 0 || (height > 1 && pitch < 4 * width)) return kInvalidValue;
  const std::size_t reach = height == 0 ? 0 : (height - 1) * pitch + 4 * width;
  if (const CUresult status = check_device_range(destination, reach, stream); status != kSuccess) return status;
  for (std::size_t row = 0; row < height; ++row) {
    auto* words = static_cast<unsigned int*>(host_address(destination + row * pitch));
    std::fill(words, words + width, value);
  }
  return kSuccess;
}

// ---- streams and events: work is done when it is submitted -----------------------------------

CUresult cuStreamCreate(CUstream* stream, unsigned int flags) {
  if (!stream || flags > 1) return kInvalidValue;
  Driver& state = driver();
  std::lock_guard lock(state.mutex);
  Context* context = nullptr;
  if (const CUresult status = usable_context(state, context); status != kSuccess) return status;
  auto* created = new Stream{context};
  state.streams.insert(created);
  *stream = reinterpret_cast<CUstream>(created);
  return kSuccess;
}

CUresult cuStreamDestroy_v2(CUstream stream) {
  Driver& state = driver();
  std::lock_guard lock(state.mutex);
  if (!state.initialized) return kNotInitialized;
  auto* known = reinterpret_cast<Stream*>(stream);
  if (!state.streams.erase(known)) return kInvalidHandle;
  delete known;
  return kSuccess;
}

CUresult cuStreamSynchronize(CUstream stream) {
  Driver& state = driver();
  std::lock_guard lock(state.mutex);
  Context* context = nullptr;
  if (const CUresult status = usable_context(state, context); status != kSuccess) return status;
  return usable_stream(state, stream, context) ? kSuccess : kInvalidHandle;
}

CUresult cuEventCreate(CUevent* event, unsigned int flags) {
  if (!event || (flags & ~0x7u) != 0) return kInvalidValue;
  Driver& state = driver();
  std::lock_guard lock(state.mutex);
  Context* context = nullptr;
  if (const CUresult status = usable_context(state, context); status != kSuccess) return status;
  auto* created = new Event{context};
  state.events.insert(created);
  *event = reinterpret_cast<CUevent>(created);
  return kSuccess;
}

CUresult cuEventRecord(CUevent event, CUstream stream) {
  Driver& state = driver();
  std::lock_guard lock(state.mutex);
  Context* context = nullptr;
  if (const CUresult status = usable_context(state, context); status != kSuccess) return status;
  auto* known = reinterpret_cast<Event*>(event);
  if (!state.events.count(known) || !usable_stream(state, stream, known->context)) return kInvalidHandle;
  return kSuccess;
}

CUresult cuEventSynchronize(CUevent event) {
  Driver& state = driver();
  std::lock_guard lock(state.mutex);
  if (!state.initialized) return kNotInitialized;
  auto* known = reinterpret_cast<Event*>(event);
  if (!state.events.count(known)) return kInvalidHandle;
  return known->context->sticky;
}

CUresult cuEventDestroy_v2(CUevent event) {
  Driver& state = driver();
  std::lock_guard lock(state.mutex);
  if (!state.initialized) return kNotInitialized;
  auto* known = reinterpret_cast<Event*>(event);
  if (!state.events.erase(known)) return kInvalidHandle;
  delete known;
  return kSuccess;
}

// ---- modules and launches -----------------------------------------------------------------------

CUresult cuModuleLoadDataEx(CUmodule* module, const void* image, unsigned int count, int* options, void** values) {
  if (!module || !image || (count > 0 && (!options || !values))) return kInvalidValue;
  {
    Driver& state = driver();
    std::lock_guard lock(state.mutex);
    Context* context = nullptr;
    if (const CUresult status = usable_context(state, context); status != kSuccess) return status;
  }
  std::string error;
  std::unique_ptr<Module> opened = open_module(image, error);
  constexpr int kInfoLog = 3, kInfoLogSize = 4, kErrorLog = 5, kErrorLogSize = 6;
  write_log(count, options, values, kInfoLog, kInfoLogSize, "");
  write_log(count, options, values, kErrorLog, kErrorLogSize, error);
  if (!opened) return kInvalidImage;
  Driver& state = driver();
  std::lock_guard lock(state.mutex);
  opened->context = current();
  Module* loaded = opened.release();
  state.modules.insert(loaded);
  *module = reinterpret_cast<CUmodule>(loaded);
  return kSuccess;
}

CUresult cuModuleUnload(CUmodule module) {
  Driver& state = driver();
  std::lock_guard lock(state.mutex);
  if (!state.initialized) return kNotInitialized;
  auto* known = reinterpret_cast<Module*>(module);
  if (!state.modules.erase(known)) return kInvalidHandle;
  for (auto& [name, function] : known->functions) state.functions.erase(function.get());
  dlclose(known->library);
  delete known;
  return kSuccess;
}

CUresult cuModuleGetFunction(CUfunction* function, CUmodule module, const char* name) {
  if (!function || !name) return kInvalidValue;
  Driver& state = driver();
  std::lock_guard lock(state.mutex);
  if (!state.initialized) return kNotInitialized;
  auto* known = reinterpret_cast<Module*>(module);
  if (!state.modules.count(known)) return kInvalidHandle;
  auto& slot = known->functions[name];
  if (!slot) {
    const std::string entry_name = std::string(canopy_emulated::kEntryPrefix) + name;
    auto entry = reinterpret_cast<canopy_emulated::Entry>(dlsym(known->library, entry_name.c_str()));
    if (!entry) {
      known->functions.erase(name);
      return kNotFound;
    }
    slot = std::make_unique<Function>(Function{known, name, entry});
    state.functions.insert(slot.get());
  }
  *function = reinterpret_cast<CUfunction>(slot.get());
  return kSuccess;
}

CUresult cuFuncGetAttribute(int* value, int attribute, CUfunction function) {
  if (!value) return kInvalidValue;
  Driver& state = driver();
  std::lock_guard lock(state.mutex);
  if (!state.initialized) return kNotInitialized;
  auto* known = reinterpret_cast<Function*>(function);
  if (!state.functions.count(known)) return kInvalidHandle;
  switch (attribute) {
    case 0: *value = known->module->context->device->max_threads; return kSuccess;  // MAX_THREADS_PER_BLOCK
    case 1:
    case 2:
    case 3: *value = 0; return kSuccess;   // shared, constant and local bytes: the host's
    case 4: *value = 32; return kSuccess;  // NUM_REGS
    case 5: *value = 80; return kSuccess;  // PTX_VERSION
    case 6: *value = 80; return kSuccess;  // BINARY_VERSION
    default: return kInvalidValue;
  }
}

CUresult cuLaunchKernel(CUfunction function, unsigned int grid_x, unsigned int grid_y, unsigned int grid_z,
                        unsigned int block_x, unsigned int block_y, unsigned int block_z, unsigned int shared_bytes,
                        CUstream stream, void** params, void** extra) {
  Driver& state = driver();
  Function* known = reinterpret_cast<Function*>(function);
  int warp_size = 32;
  {
    std::lock_guard lock(state.mutex);
    Context* context = nullptr;
    if (const CUresult status = usable_context(state, context); status != kSuccess) return status;
    if (!state.functions.count(known)) return kInvalidHandle;
    if (known->module->context != context) return kInvalidContext;
    if (!usable_stream(state, stream, context)) return kInvalidHandle;
    if (extra) return kNotSupported;  // Canopy passes its arguments as kernelParams
    const Device& device = *context->device;
    const unsigned long long threads = 1ULL * block_x * block_y * block_z;
    if (grid_x == 0 || grid_y == 0 || grid_z == 0 || grid_y > 65535 || grid_z > 65535 || threads == 0 ||
        threads > static_cast<unsigned long long>(device.max_threads) || block_z > 64 ||
        shared_bytes > device.shared_memory)
      return kInvalidValue;
    warp_size = device.warp_size;
  }
  const unsigned int grid[3] = {grid_x, grid_y, grid_z}, block[3] = {block_x, block_y, block_z};
  CUresult status = kSuccess;
  const std::string failure = run_grid(*known, grid, block, params, warp_size, status);
  if (failure.empty()) return kSuccess;
  std::fprintf(stderr, "canopy emulated CUDA: kernel '%s' failed: %s\n", known->name.c_str(), failure.c_str());
  std::lock_guard lock(state.mutex);
  known->module->context->sticky = status;
  return kSuccess;  // as on a GPU, the failure shows when the stream is waited for
}

}  // extern "C"
