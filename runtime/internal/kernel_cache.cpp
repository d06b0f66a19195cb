#include "kernel_cache.hpp"

#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>

#include <canopy/backends/cpu/thread_pool.hpp>
#include <canopy/ir/analysis/cost.hpp>
#include <canopy/ir/dump.hpp>
#include <canopy/ir/passes/bounds_check.hpp>
#include <canopy/ir/passes/fuse.hpp>
#include <canopy/ir/passes/optimize.hpp>
#include <canopy/ir/printer.hpp>
#include <canopy/ir/visitor.hpp>
#include <canopy/jit/hash.hpp>

#include "../array.hpp"
#include "trace.hpp"

namespace canopy::runtime {

namespace {

// Every CPU device runs the one CPU program.
std::string program_key(const backends::Device& device) {
  return device.info().host_memory ? std::string("cpu") : device.info().id;
}

}  // namespace

std::shared_ptr<backends::Program> CompiledKernel::program_for(backends::Device& device) const {
  const std::string key = program_key(device);
  std::unique_lock lock(programs_mutex);
  Slot& slot = programs[key];  // unordered_map: the reference outlives other insertions
  compiled.wait(lock, [&] { return !slot.compiling; });
  if (slot.program) return slot.program;
  slot.compiling = true;
  lock.unlock();  // other devices' programs compile meanwhile
  std::shared_ptr<backends::Program> program;
  try {
    program =
        device.info().host_memory
            ? std::shared_ptr<backends::Program>(trace::compiling(
                  optimized->name, "cpu", "cpu", [&] { return backends::cpu::CpuDevice::compile_program(optimized); }))
            : trace::compiling(optimized->name, device.info().backend, device.info().id,
                               [&] { return device.compile(optimized); });
  } catch (...) {
    lock.lock();
    slot.compiling = false;
    compiled.notify_all();
    throw;
  }
  lock.lock();
  slot.program = program;
  slot.compiling = false;
  compiled.notify_all();
  return program;
}

bool CompiledKernel::has_program_for(const backends::Device& device) const {
  std::lock_guard lock(programs_mutex);
  auto found = programs.find(program_key(device));
  return found != programs.end() && (found->second.program || found->second.compiling);
}

namespace {

// Whether this process may put a thread back to the normal policy at nice 0
// (root, or an RLIMIT_NICE that allows nice 0); without CAP_SYS_NICE this
// is a guess on the side of no.
bool may_raise_priority() {
  if (::geteuid() == 0) return true;
  rlimit limit{};
  return ::getrlimit(RLIMIT_NICE, &limit) == 0 && (limit.rlim_cur == RLIM_INFINITY || limit.rlim_cur >= 20);
}

}  // namespace

BackgroundCompiler::~BackgroundCompiler() { stop(); }

void BackgroundCompiler::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    tasks_.clear();  // their futures say broken_promise: wait() returns all the same
  }
  wake_.notify_all();
  if (!thread_.joinable()) return;
  // Waited for now: back to the normal policy where this process may (a
  // thread of SCHED_IDLE on a busy machine could keep the Runtime's
  // destruction waiting for its compile).
  if (idle_only_) {
    sched_param normal{};
    pthread_setschedparam(thread_.native_handle(), SCHED_OTHER, &normal);
  }
  thread_.join();
}

std::shared_future<void> BackgroundCompiler::submit(std::function<void()> task) {
  std::packaged_task<void()> packaged(std::move(task));
  std::shared_future<void> done = packaged.get_future().share();
  std::lock_guard lock(mutex_);
  if (stopping_) return done;  // broken: nothing will run it
  tasks_.push_back(std::move(packaged));
  if (!thread_.joinable()) {
    thread_ = std::thread([this] { run(); });
    // Named, as every thread of Canopy's is: unnamed, it showed the name of
    // the thread that started it (the recorder's, in `ps -L`).
    backends::cpu::name_thread(thread_, "compile");
  }
  wake_.notify_one();
  return done;
}

void BackgroundCompiler::run() {
  // SCHED_IDLE: any other thread that wakes takes the core at once (nice 19
  // alone left the program's launches 2 ms slower now and then). But only
  // where stop() may lift it again: a thread kept at SCHED_IDLE on a machine
  // busy elsewhere took 1.5 s to finish the compile a Runtime's destruction
  // waited for. Elsewhere nice 10, which such a wait survives in tens of
  // milliseconds. Linux keeps both per thread.
  if (idle_only_) {
    sched_param none{};
    if (!may_raise_priority() || pthread_setschedparam(pthread_self(), SCHED_IDLE, &none) != 0)
      setpriority(PRIO_PROCESS, static_cast<id_t>(::syscall(SYS_gettid)), 10);
  }
  for (;;) {
    std::packaged_task<void()> task;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || !tasks_.empty(); });
      if (stopping_) return;
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    task();
  }
}

std::shared_ptr<const CompiledKernel> KernelCache::compiled(const std::shared_ptr<const ir::Kernel>& traced,
                                                            bool* fresh, ir::Arrays arrays) {
  std::lock_guard lock(mutex_);
  auto& slot = (arrays == ir::Arrays::Distinct ? kernels_ : aliased_kernels_)[traced.get()];
  if (fresh) *fresh = !slot;
  if (!slot) slot = compile(traced, arrays);
  return slot;
}

std::vector<std::shared_future<void>> KernelCache::prepare(
    const std::vector<std::shared_ptr<const CompiledKernel>>& kernels,
    const std::vector<std::shared_ptr<backends::Device>>& devices, bool variants) {
  std::vector<std::shared_future<void>> done;
  std::vector<std::string> queued;
  for (const auto& device : devices) {
    if (!device) continue;
    const std::string key = program_key(*device);
    if (std::find(queued.begin(), queued.end(), key) != queued.end()) continue;
    queued.push_back(key);
    std::vector<std::shared_ptr<const CompiledKernel>> missing;
    for (const auto& kernel : kernels)
      if (!kernel->has_program_for(*device)) missing.push_back(kernel);
    // Each program's variants, once the programs are made (never compiling a
    // program itself at the lowest priority, where a launch may wait for it).
    // One task per kernel: a Runtime that goes drops those not started.
    auto queue_variants = [this, device, kernels] {
      for (const auto& kernel : kernels)
        variants_.submit([device, kernel] {
          if (!kernel->has_program_for(*device)) return;
          try {
            device->compile_variants(*kernel->program_for(*device));
          } catch (const Error&) {  // a launch that wants it compiles it again
          }
        });
    };
    if (missing.empty()) {
      if (variants) queue_variants();
      continue;
    }
    done.push_back(background_.submit([missing, device, variants, queue_variants] {
      if (missing.size() > 1) {
        std::vector<std::shared_ptr<const ir::Kernel>> optimized;
        for (const auto& kernel : missing) optimized.push_back(kernel->optimized);
        device->compile_together(optimized);
      }
      for (const auto& kernel : missing) {
        try {
          kernel->program_for(*device);
        } catch (const Error&) {
          // The launch that needs it compiles it again and reports the failure.
        }
      }
      if (variants) queue_variants();
    }));
  }
  return done;
}

std::shared_ptr<CompiledKernel> KernelCache::compile(const std::shared_ptr<const ir::Kernel>& traced,
                                                     ir::Arrays arrays) {
  auto compiled = std::make_shared<CompiledKernel>();
  compiled->traced = traced;
  compiled->optimized = std::make_shared<const ir::Kernel>(
      checked_ ? ir::optimize(ir::check_bounds(ir::optimize(*traced, arrays)), arrays) : ir::optimize(*traced, arrays));
  const std::string text = ir::print(*compiled->optimized);
  dump("ir", traced->name, text);
  const ir::KernelCost cost = ir::cost_of(*compiled->optimized);
  if (dump_enabled("cost")) dump("cost", traced->name, ir::describe_cost(*compiled->optimized, cost));
  compiled->adaptive = AdaptiveKernel{compiled->optimized.get(), jit::hash64(text)};
  compiled->has_loops = ir::has_loops(*compiled->optimized);
  compiled->footprint = ir::footprint_of(*compiled->optimized);
  compiled->own_point_only = ir::accesses_only_own_point(*compiled->optimized, compiled->footprint);
  compiled->ops_per_point = cost.flops + cost.int_ops + cost.accesses();
  compiled->dram_bytes_per_point = cost.bytes();
  // Checked kernels guard every access; the refusal reads the unguarded form.
  compiled->sure_accesses =
      sure_accesses_of(checked_ ? ir::footprint_of(ir::optimize(*traced, arrays)) : compiled->footprint);
  compiled->checked = checked_;
  const bool unbounded = std::any_of(
      compiled->footprint.arrays.begin(), compiled->footprint.arrays.end(), [](const ir::ArrayFootprint& array) {
        auto whole = [](const ir::AccessFootprint& access) {
          return std::any_of(access.dims.begin(), access.dims.end(),
                             [](const ir::DimFootprint& dim) { return !dim.is_affine(); });
        };
        return whole(array.reads) || whole(array.writes);
      });
  if (unbounded) compiled->footprint_inputs = ir::footprint_inputs(*compiled->optimized);
  return compiled;
}

std::shared_ptr<const LaunchFootprint> CompiledKernel::footprint_at(const std::vector<ArgRef>& args,
                                                                    const Shape& range) const {
  if (footprint_inputs.empty()) return nullptr;
  ir::LaunchValues values;
  if (footprint_inputs.range) values.range.assign(range.extents().begin(), range.extents().begin() + range.rank());
  values.scalars.resize(args.size());
  values.extents.resize(args.size());
  for (int p : footprint_inputs.scalars)
    if (const auto* scalar = std::get_if<backends::ScalarArg>(&args[static_cast<std::size_t>(p)]);
        scalar && !ir::is_float(scalar->type))
      values.scalars[static_cast<std::size_t>(p)] = scalar->int_value;
  for (const auto& [p, dim] : footprint_inputs.extents)
    if (const auto* storage = std::get_if<std::shared_ptr<ArrayStorage>>(&args[static_cast<std::size_t>(p)])) {
      const Shape& shape = (*storage)->shape();
      values.extents[static_cast<std::size_t>(p)].assign(shape.extents().begin(),
                                                         shape.extents().begin() + shape.rank());
    }
  std::lock_guard lock(launch_footprints_mutex);
  for (std::size_t k = 0; k < launch_footprints.size(); ++k)
    if (launch_footprints[k].first == values) {
      std::rotate(launch_footprints.begin(), launch_footprints.begin() + static_cast<std::ptrdiff_t>(k),
                  launch_footprints.begin() + static_cast<std::ptrdiff_t>(k) + 1);
      return launch_footprints.front().second;
    }
  auto bound = std::make_shared<LaunchFootprint>();
  bound->footprint = ir::footprint_of(*optimized, values);
  bound->sure_accesses = checked ? sure_accesses : sure_accesses_of(bound->footprint);
  constexpr std::size_t kept = 8;
  if (launch_footprints.size() == kept) launch_footprints.pop_back();
  launch_footprints.insert(launch_footprints.begin(), {std::move(values), bound});
  return bound;
}

}  // namespace canopy::runtime
