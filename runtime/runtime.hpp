// Runtime: what a program creates first. It discovers this node, keeps the
// arrays, and runs regions on the devices it found.
//
//   Runtime rt;
//   auto a = rt.array<double>(n);
//   rt.region(kernel).over(n).launch(a, ...);
//   rt.pause();
#pragma once

#include <chrono>
#include <future>
#include <memory>
#include <string>

#include <canopy/dsl/kernel.hpp>
#include <canopy/ir/error.hpp>

#include "array.hpp"
#include "discovery.hpp"
#include "engine.hpp"
#include "hierarchy.hpp"
#include "host_allocator.hpp"
#include "region.hpp"
#include "shape.hpp"
#include "stats.hpp"
#include "traits.hpp"

namespace canopy {

namespace runtime {
struct EngineAccess;  // internal/engine_access.hpp
}

/// The programs Runtime::compile queued: wait() returns when every one is
/// compiled (or failed to, which the launch that needs it reports).
class Compilation {
 public:
  /// Waits for every compile.
  void wait() const {
    for (const auto& part : parts_) part.wait();
  }
  /// True when every compile is done.
  bool ready() const {
    for (const auto& part : parts_)
      if (part.wait_for(std::chrono::seconds(0)) != std::future_status::ready) return false;
    return true;
  }

 private:
  friend class Runtime;
  void add(std::vector<std::shared_future<void>> parts) {
    for (auto& part : parts) parts_.push_back(std::move(part));
  }
  std::vector<std::shared_future<void>> parts_;
};

class Runtime {
 public:
  /// Discovers this node's cores and devices and starts a worker per leaf.
  Runtime();
  /// The same within the part of the node `options` allow (the cores and
  /// devices of one rank of an MPI job on a shared node).
  explicit Runtime(const runtime::RuntimeOptions& options);
  /// Waits for the regions still running, then stops the workers.
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  /// A new array of T with `shape` (n, or Shape(n0, n1), or Shape(n0, n1, n2)
  /// for Rank 2 and 3), zero-filled, placed as `traits` say (default: the
  /// node's root). Throws canopy::Error for an unknown location.
  template <class T, int Rank = 1>
  Array<T, Rank> array(Shape shape, MemoryTraits traits = {}) {
    check_rank<T, Rank>(shape);
    return Array<T, Rank>(engine_->allocate(ir::scalar_type_of<T>(), shape, traits));
  }

  /// An array over memory the program owns (`data` must outlive every region
  /// that uses the array; Canopy never frees it).
  template <class T, int Rank = 1>
  Array<T, Rank> wrap(T* data, Shape shape, MemoryTraits traits = {}) {
    check_rank<T, Rank>(shape);
    return Array<T, Rank>(engine_->wrap(ir::scalar_type_of<T>(), shape, traits, data));
  }

  /// Places `array` at `location`, after the regions that use it.
  template <class T, int Rank>
  void move(const Array<T, Rank>& array, const std::string& location) {
    engine_->move_array(array.storage(), location);
  }
  /// Copies every element of `source` into `destination` (same shape), in
  /// order with the regions that use either.
  template <class T, int Rank>
  void copy(const Array<T, Rank>& destination, const Array<T, Rank>& source) {
    engine_->copy_array(destination.storage(), source.storage());
  }

  /// A region of `kernel`; see region.hpp.
  template <class Signature>
  Region<Signature> region(const Kernel<Signature>& kernel) {
    return Region<Signature>(engine_, kernel);
  }

  /// Compiles `kernels` ahead of their first launch: each is optimized now
  /// and its programs, for the devices of the tree's leaves, compile in the
  /// background (the CPU's together, as one object, whose machine code is
  /// emitted once), so that the first launch waits only for what is not
  /// ready yet. The CPU's variants with streaming stores, for launches
  /// larger than its caches, follow on a thread of the lowest priority: a
  /// launch never waits for them (it runs the plain code until they are
  /// ready), and neither does Compilation::wait(). Returns at once; launching a kernel before its compile is done is
  /// fine (the launch waits for it, or compiles what was not started). A
  /// program that fails to compile fails (or moves) the launch that needs it,
  /// as it would without compile(). Compilation::wait() waits for them all.
  template <class... Kernels>
  Compilation compile(const Kernels&... kernels) {
    Compilation all;
    all.add(engine_->prepare({kernels.ir_ptr()...}));
    return all;
  }

  /// Fusion of launched regions (runtime/internal/recorder.hpp): on unless
  /// CANOPY_FUSE=off. With it on, consecutive element-wise regions over the
  /// same range and placement may run as one kernel, and arrays only they
  /// use may never be allocated; results are the same either way.
  void fuse(bool on);
  /// True while launched regions may be fused.
  bool fusing() const;

  /// Waits for every region launched so far; rethrows the first that failed.
  void pause();
  /// Waits for the work queued on the leaves at or below `location`.
  void pause(const std::string& location);

  /// A copy of the location tree as it is now (it prints itself).
  Hierarchy hierarchy() const;
  /// Replaces the tree by a configuration file in Gecko's format.
  void load_config(const std::string& path);
  /// Applies configuration lines (loctype/location/hierarchy) to the tree,
  /// e.g. "hierarchy;children,-,cpu1;parent,numa0".
  void configure(const std::string& lines);
  /// Adds a location below `parent`. A leaf must have something to run on:
  /// a device leaf's `traits.device` is the id of a device this Runtime
  /// started ("opencl:0"), a CPU leaf's `traits.pus` are this node's, each
  /// listed once; else canopy::Error, and the tree stays as it was. A device
  /// runs one leaf; two CPU leaves may list one processing unit (their
  /// threads take turns on it), where a configuration file binds each core
  /// to one leaf.
  void add_location(std::string name, LocationKind kind, LocationTraits traits, const std::string& parent);
  /// Adds a location of `type` below `parent`, bound to what the tree does
  /// not use yet, as the configure() line "location;name,NAME;type,TYPE"
  /// would: `type` is a loctype of a file or configure() line read earlier
  /// (Gecko's types stay known for the program's life) or a kind ("cpu",
  /// "virtual", "host_memory", "opencl", ...).
  void add_location(const std::string& name, const std::string& type, const std::string& parent);
  /// Removes a location and its subtree; arrays placed there move to its parent.
  void remove_location(const std::string& name);
  /// Moves a location (and its subtree) below `new_parent`.
  void move_location(const std::string& name, const std::string& new_parent);

  /// What the runtime has done so far.
  Stats stats() const;
  /// What discovery found on this node: cores, NUMA nodes, devices, and the
  /// backends that are absent with the reason.
  const NodeInventory& node() const;
  /// What Canopy found on this node and will use, as text.
  std::string describe() const;

 private:
  friend struct runtime::EngineAccess;

  template <class T, int Rank>
  static void check_rank(const Shape& shape) {
    if (shape.rank() != Rank)
      throw Error("array<" + std::string(ir::name_of(ir::scalar_type_of<T>())) + ", " + std::to_string(Rank) +
                  "> was given a shape of rank " + std::to_string(shape.rank()) + " (" + shape.to_string() +
                  "); give a Shape of " + std::to_string(Rank) + " extent(s)");
  }

  // Shared with the Regions it makes only so that they can tell it is gone.
  std::shared_ptr<runtime::Engine> engine_;
};

}  // namespace canopy
