#include "engine.hpp"

#include <hwloc.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>
#include <unordered_map>

#include <canopy/backends/cpu/cpu_device.hpp>
#include <canopy/ir/dump.hpp>
#include <canopy/ir/error.hpp>
#include <canopy/ir/passes/optimize.hpp>
#include <canopy/ir/printer.hpp>
#include <canopy/jit/cpu_compiler.hpp>

namespace canopy::runtime {

namespace {

// What hwloc says of this node: the first processing unit of every core, and the CPU's name.
struct NodeTopology {
  std::vector<unsigned> core_pus;
  std::string cpu_model;
  int numa_nodes = 1;
};

NodeTopology discover_topology() {
  NodeTopology node;
  hwloc_topology_t topology;
  if (hwloc_topology_init(&topology) != 0) return node;
  if (hwloc_topology_load(topology) == 0) {
    const int cores = hwloc_get_nbobjs_by_type(topology, HWLOC_OBJ_CORE);
    for (int c = 0; c < cores; ++c) {
      auto core = hwloc_get_obj_by_type(topology, HWLOC_OBJ_CORE, static_cast<unsigned>(c));
      auto pu = hwloc_get_obj_inside_cpuset_by_type(topology, core->cpuset, HWLOC_OBJ_PU, 0);
      if (pu) node.core_pus.push_back(pu->os_index);
    }
    if (auto root = hwloc_get_root_obj(topology))
      if (const char* model = hwloc_obj_get_info_by_name(root, "CPUModel")) node.cpu_model = model;
    if (node.cpu_model.empty())
      if (auto package = hwloc_get_obj_by_type(topology, HWLOC_OBJ_PACKAGE, 0))
        if (const char* model = hwloc_obj_get_info_by_name(package, "CPUModel")) node.cpu_model = model;
    node.numa_nodes = std::max(1, hwloc_get_nbobjs_by_type(topology, HWLOC_OBJ_NUMANODE));
  }
  hwloc_topology_destroy(topology);
  if (node.core_pus.empty()) {
    for (unsigned i = 0; i < std::max(1u, std::thread::hardware_concurrency()); ++i) node.core_pus.push_back(i);
  }
  return node;
}

// A kernel as the engine keeps it: the traced IR (kept alive so the map's key
// stays valid), the optimized IR and its CPU program.
struct CompiledKernel {
  std::shared_ptr<const ir::Kernel> traced;
  std::shared_ptr<const ir::Kernel> optimized;
  backends::cpu::CpuProgram cpu;
};

// One piece of a region queued on a leaf.
struct Job {
  std::shared_ptr<const CompiledKernel> kernel;
  std::vector<ArgRef> args;
  backends::Range range;
  std::vector<CompletionPtr> deps;
  CompletionPtr completion;
  std::shared_ptr<std::vector<backends::ReductionValue>> results;
};

// A leaf: a device and the worker thread that runs its queue in order.
class Leaf {
 public:
  Leaf(std::string name, std::vector<unsigned> pus) : device_(std::move(name), pus) {
    worker_ = std::thread([this, pu = pus.empty() ? 0u : pus.front(), bind = !pus.empty()] {
      if (bind) backends::cpu::bind_current_thread(pu);
      run();
    });
  }
  ~Leaf() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    cv_.notify_all();
    worker_.join();
  }
  void push(Job job) {
    {
      std::lock_guard lock(mutex_);
      queue_.push_back(std::move(job));
    }
    cv_.notify_one();
  }
  backends::cpu::CpuDevice& device() { return device_; }

 private:
  void run() {
    for (;;) {
      Job job;
      {
        std::unique_lock lock(mutex_);
        cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return;
        job = std::move(queue_.front());
        queue_.pop_front();
      }
      execute(job);
    }
  }

  void execute(Job& job) {
    try {
      for (auto& dep : job.deps) dep->wait(false);
      std::vector<backends::KernelArg> args;
      args.reserve(job.args.size());
      for (auto& a : job.args) {
        if (auto* storage = std::get_if<std::shared_ptr<ArrayStorage>>(&a)) {
          backends::ArrayArg array;
          array.data = (*storage)->host_data();
          array.extents = (*storage)->shape().extents();
          args.emplace_back(array);
        } else if (auto* scalar = std::get_if<backends::ScalarArg>(&a)) {
          args.emplace_back(*scalar);
        } else {
          args.emplace_back(backends::ReductionArg{});
        }
      }
      *job.results = device_.run(job.kernel->cpu, args, job.range);
      job.completion->finish();
    } catch (...) {
      job.completion->finish(std::current_exception());
    }
  }

  backends::cpu::CpuDevice device_;
  std::thread worker_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Job> queue_;
  bool stopping_ = false;
};

std::string join(const std::vector<std::string>& items) {
  std::string s;
  for (const auto& i : items) s += (s.empty() ? "" : ", ") + i;
  return s;
}

// "x86_64-pc-linux-gnu, znver4, AVX-512" from the JIT's long target description
// ("triple;cpu;+feature,-feature,...").
std::string short_target(const std::string& description) {
  auto first = description.find(';');
  auto second = description.find(';', first == std::string::npos ? first : first + 1);
  if (first == std::string::npos || second == std::string::npos) return description;
  const std::string features = description.substr(second) + ",";
  std::string vector_isa = features.find("+avx512f,") != std::string::npos ? "AVX-512"
                           : features.find("+avx2,") != std::string::npos  ? "AVX2"
                                                                           : "SSE";
  return description.substr(0, first) + ", " + description.substr(first + 1, second - first - 1) + ", " + vector_isa;
}

}  // namespace

struct Engine::State {
  NodeTopology node;
  std::unique_ptr<Leaf> cpu;
  std::vector<std::string> locations{"node", "cpu0"};

  std::mutex kernels_mutex;
  std::unordered_map<const ir::Kernel*, std::shared_ptr<const CompiledKernel>> kernels;

  std::mutex flight_mutex;
  std::vector<CompletionPtr> in_flight;

  std::shared_ptr<const CompiledKernel> compiled(const std::shared_ptr<const ir::Kernel>& traced) {
    std::lock_guard lock(kernels_mutex);
    auto& slot = kernels[traced.get()];
    if (!slot) {
      auto compiled = std::make_shared<CompiledKernel>();
      compiled->traced = traced;
      compiled->optimized = std::make_shared<const ir::Kernel>(ir::optimize(*traced));
      dump("ir", traced->name, ir::print(*compiled->optimized));
      compiled->cpu = backends::cpu::CpuDevice::compile(compiled->optimized);
      slot = std::move(compiled);
    }
    return slot;
  }
};

Engine::Engine() : state_(std::make_unique<State>()) {
  state_->node = discover_topology();
  state_->cpu = std::make_unique<Leaf>("cpu0", state_->node.core_pus);
}

Engine::~Engine() {
  try {
    pause();
  } catch (...) {
    // A region failed and nobody paused to hear it; the program is ending anyway.
  }
}

std::shared_ptr<ArrayStorage> Engine::allocate(ir::ScalarType type, const Shape& shape, const MemoryTraits& traits) {
  std::string location = traits.location.empty() ? "node" : traits.location;
  if (!traits.distance &&
      std::find(state_->locations.begin(), state_->locations.end(), location) == state_->locations.end())
    throw Error("unknown location '" + location + "'; this node has: " + join(state_->locations));
  if (traits.distance) location = "node";
  return std::make_shared<ArrayStorage>(type, shape, traits, location);
}

RegionHandle Engine::submit(RegionRequest request) {
  const auto& kernel = *request.kernel;
  if (request.range.rank() != kernel.dims)
    throw Error("kernel '" + kernel.name + "' has " + std::to_string(kernel.dims) +
                " index dimension(s) but the region is over " + std::to_string(request.range.rank()) + " (" +
                request.range.to_string() + ")");
  for (int d = 0; d < request.range.rank(); ++d)
    if (request.range[d] < 0)
      throw Error("kernel '" + kernel.name + "': the region's extents cannot be negative (" +
                  request.range.to_string() + ")");
  if (request.args.size() != kernel.params.size())
    throw Error("kernel '" + kernel.name + "' takes " + std::to_string(kernel.params.size()) + " arguments, " +
                std::to_string(request.args.size()) + " were given");
  if (!request.location.empty() &&
      std::find(state_->locations.begin(), state_->locations.end(), request.location) == state_->locations.end())
    throw Error("region of kernel '" + kernel.name + "': unknown location '" + request.location +
                "'; this node has: " + join(state_->locations));

  Job job;
  job.kernel = state_->compiled(request.kernel);
  job.range.dims = request.range.rank();
  for (int d = 0; d < job.range.dims; ++d) job.range.end[static_cast<std::size_t>(d)] = request.range[d];
  job.completion = std::make_shared<Completion>();
  job.results = std::make_shared<std::vector<backends::ReductionValue>>();
  for (std::size_t p = 0; p < kernel.params.size(); ++p) {
    const auto& param = kernel.params[p];
    if (auto* storage = std::get_if<std::shared_ptr<ArrayStorage>>(&request.args[p])) {
      if (!param.is_array() || (*storage)->type() != param.type || (*storage)->shape().rank() != param.rank)
        throw Error("kernel '" + kernel.name + "': argument " + std::to_string(p) + " does not match parameter '" +
                    param.name + "'");
      auto deps = (*storage)->add_use(job.completion, param.reads(), param.writes());
      job.deps.insert(job.deps.end(), deps.begin(), deps.end());
    }
  }
  job.args = std::move(request.args);
  RegionHandle handle{job.completion, job.results};
  {
    std::lock_guard lock(state_->flight_mutex);
    std::erase_if(state_->in_flight, [](const CompletionPtr& c) { return c->done() && !c->error(); });
    state_->in_flight.push_back(job.completion);
  }
  state_->cpu->push(std::move(job));
  return handle;
}

void Engine::pause() {
  std::vector<CompletionPtr> pending;
  {
    std::lock_guard lock(state_->flight_mutex);
    pending.swap(state_->in_flight);
  }
  std::exception_ptr first;
  for (auto& c : pending) {
    c->wait(false);
    if (!first && c->error()) first = c->error();
  }
  if (first) std::rethrow_exception(first);
}

std::string Engine::describe() const {
  std::ostringstream out;
  const auto& node = state_->node;
  out << "node: " << node.core_pus.size() << " core(s)";
  if (!node.cpu_model.empty()) out << ", " << node.cpu_model;
  out << ", " << node.numa_nodes << " NUMA node(s)\n";
  out << "  cpu0: CPU leaf, " << state_->cpu->device().threads() << " thread(s) on PUs";
  for (auto pu : state_->cpu->device().pus()) out << ' ' << pu;
  out << "\n  JIT target: " << short_target(jit::CpuCompiler::shared().target_description()) << "\n";
  return out.str();
}

}  // namespace canopy::runtime
