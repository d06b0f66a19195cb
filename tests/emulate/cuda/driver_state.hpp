// What the emulated CUDA driver (driver.cpp) knows: its devices, their
// primary contexts, allocations, modules and functions, streams and events,
// all under one lock, and the checks its entry points share. The handles
// the driver gives out are pointers to these objects, and each is checked
// against the driver's sets before use, so that an unknown or destroyed
// handle is CUDA_ERROR_INVALID_HANDLE rather than a crash.
#pragma once

#include <algorithm>
#include <cstddef>
#include <iterator>
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

namespace canopy_emulated {

// The driver's status codes (cuda.h) this emulator returns.
inline constexpr CUresult kSuccess = 0;
inline constexpr CUresult kInvalidValue = 1;
inline constexpr CUresult kOutOfMemory = 2;
inline constexpr CUresult kNotInitialized = 3;
inline constexpr CUresult kNoDevice = 100;
inline constexpr CUresult kInvalidDevice = 101;
inline constexpr CUresult kInvalidImage = 200;
inline constexpr CUresult kInvalidContext = 201;
inline constexpr CUresult kInvalidHandle = 400;
inline constexpr CUresult kNotFound = 500;
inline constexpr CUresult kIllegalAddress = 700;
inline constexpr CUresult kLaunchTimeout = 702;
inline constexpr CUresult kLaunchFailed = 719;
inline constexpr CUresult kNotSupported = 801;

inline constexpr int kDriverVersion = 12040;  // what cuDriverGetVersion says: CUDA 12.4

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

inline Driver& driver() {
  static Driver* instance = new Driver;  // never destroyed: kernels may still run at exit
  return *instance;
}

/// The contexts made current on this thread (cuCtxPushCurrent), innermost
/// last. Never destroyed, like a real driver's: the main thread's
/// thread_local objects are destroyed at exit before the program's statics,
/// whose destructors (a static list of devices, say) may still push and pop
/// contexts; a vector destroyed first was written after its free (valgrind
/// found it, and the heap's corruption aborted CTest's run at exit).
inline std::vector<Context*>& current_contexts_of_this_thread() {
  thread_local std::vector<Context*>* contexts = new std::vector<Context*>;
  return *contexts;
}

// The context current on this thread, or null.
inline Context* current() {
  const auto& contexts = current_contexts_of_this_thread();
  return contexts.empty() ? nullptr : contexts.back();
}

// The first check of most calls: initialized, and a context current and
// not failed. Returns kSuccess or the code to return. Call with the lock held.
inline CUresult usable_context(Driver& state, Context*& context) {
  if (!state.initialized) return kNotInitialized;
  context = current();
  if (!context || context->retained == 0) return kInvalidContext;
  return context->sticky;
}

// Whether `stream` (null: the default stream) may be used in `context`.
inline bool usable_stream(const Driver& state, CUstream stream, const Context* context) {
  if (!stream) return true;
  auto* known = reinterpret_cast<Stream*>(stream);
  return state.streams.count(known) && known->context == context;
}

// Whether [address, address + bytes) lies in one allocation of `context`.
inline bool inside_allocation(const Driver& state, CUdeviceptr address, std::size_t bytes, const Context* context) {
  auto after = state.allocations.upper_bound(address);
  if (after == state.allocations.begin()) return false;
  const auto& [start, allocation] = *std::prev(after);
  return allocation.context == context && address - start <= allocation.bytes &&
         bytes <= allocation.bytes - (address - start);
}

}  // namespace canopy_emulated
