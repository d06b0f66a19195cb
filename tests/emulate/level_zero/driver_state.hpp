// What the emulated Level Zero driver (driver.cpp) knows: its devices,
// contexts, command lists, event pools and events, allocations, modules,
// kernels and build logs. The handles it gives out are pointers to these
// objects; each is checked against the driver's sets before use, so that an
// unknown or destroyed handle is ZE_RESULT_ERROR_INVALID_NULL_HANDLE or
// ZE_RESULT_ERROR_INVALID_ARGUMENT rather than a crash.
#pragma once

#include <level_zero/ze_api.h>

#include <array>
#include <condition_variable>
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "opencl_host.hpp"
#include "spirv_module.hpp"

namespace canopy_emulated_ze {

struct Device {
  int ordinal = 0;
  std::string name;
  std::size_t memory = 0;  ///< bytes the device has
  std::size_t used = 0;    ///< bytes allocated now
  std::uint32_t max_group = 1024;
  std::uint32_t sub_group = 16;
  std::uint32_t eus = 8;
  std::uint32_t max_group_count = 0xffffffffu;
  std::size_t local_memory = 64 * 1024;
  bool fp64 = true;
  bool int64_atomics = true;
  bool lost = false;                 ///< a launch failed or ran past its time
  cl_command_queue queue = nullptr;  ///< on the OpenCL host
  std::mutex run;                    ///< one launch at a time
};

struct Context {};

struct CommandList {
  Context* context = nullptr;
  Device* device = nullptr;
};

struct Event;

struct EventPool {
  Context* context = nullptr;
  std::uint32_t count = 0;
  std::vector<Event*> events;  ///< by index; null where none was created
};

struct Event {
  EventPool* pool = nullptr;
  std::uint32_t index = 0;
  bool signaled = false;
};

/// Device memory: `bytes` at `start`, which ends right before a page that
/// may not be touched; another such page comes before it.
struct Allocation {
  Context* context = nullptr;
  Device* device = nullptr;
  char* start = nullptr;
  std::size_t bytes = 0;    ///< as asked for
  std::size_t usable = 0;   ///< rounded up to 256 bytes
  std::size_t counted = 0;  ///< what it takes of the device's memory
  void* mapping = nullptr;
  std::size_t mapping_bytes = 0;
  std::map<std::size_t, cl_mem> buffers;  ///< OpenCL buffers over it, by offset (made on first use)
};

struct Module {
  Context* context = nullptr;
  Device* device = nullptr;
  std::string spirv;
  std::string bitcode;
  SpirvModule parsed;
  cl_program program = nullptr;
};

struct Kernel {
  Module* module = nullptr;
  const SpirvEntry* entry = nullptr;
  cl_kernel kernel = nullptr;
  std::array<std::uint32_t, 3> group{0, 0, 0};  ///< 0: not set
  std::vector<bool> set;                        ///< per argument
  std::size_t max_group = 1;                    ///< what the OpenCL host runs this kernel with
};

struct BuildLog {
  std::string text;
};

struct Driver {
  std::mutex mutex;
  bool initialized = false;
  std::vector<std::unique_ptr<Device>> devices;
  std::set<Context*> contexts;
  std::set<CommandList*> lists;
  std::set<EventPool*> pools;
  std::set<Event*> events;
  std::map<const char*, Allocation> allocations;  ///< by start
  std::set<Module*> modules;
  std::set<Kernel*> kernels;
  std::set<BuildLog*> logs;
  std::condition_variable launched;
};

}  // namespace canopy_emulated_ze
