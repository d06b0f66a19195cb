// Runtime: what a program creates first. It discovers this node, keeps the
// arrays, and runs regions on the devices it found.
//
//   Runtime rt;
//   auto a = rt.array<double>(n);
//   rt.region(kernel).over(n).launch(a, ...);
//   rt.pause();
#pragma once

#include <memory>
#include <string>

#include <canopy/dsl/kernel.hpp>
#include <canopy/ir/error.hpp>

#include "array.hpp"
#include "engine.hpp"
#include "region.hpp"
#include "shape.hpp"
#include "traits.hpp"

namespace canopy {

class Runtime {
 public:
  /// Discovers this node's cores and devices and starts a worker per leaf.
  Runtime();
  /// Waits for the regions still running, then stops the workers.
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  /// A new array of T with `shape` (n, or Shape(n0, n1), or Shape(n0, n1, n2)
  /// for Rank 2 and 3), zero-filled, placed as `traits` say (default: the
  /// node's root). Throws canopy::Error for an unknown location.
  template <class T, int Rank = 1>
  Array<T, Rank> array(Shape shape, MemoryTraits traits = {}) {
    if (shape.rank() != Rank)
      throw Error("array<" + std::string(ir::name_of(ir::scalar_type_of<T>())) + ", " + std::to_string(Rank) +
                  "> was given a shape of rank " + std::to_string(shape.rank()) + " (" + shape.to_string() + ")");
    return Array<T, Rank>(engine_->allocate(ir::scalar_type_of<T>(), shape, traits));
  }

  /// A region of `kernel`; see region.hpp.
  template <class Signature>
  Region<Signature> region(const Kernel<Signature>& kernel) {
    return Region<Signature>(*engine_, kernel);
  }

  /// Waits for every region launched so far; rethrows the first that failed.
  void pause();

  /// What Canopy found on this node and will use, as text.
  std::string describe() const;

  runtime::Engine& engine() { return *engine_; }

 private:
  std::unique_ptr<runtime::Engine> engine_;
};

}  // namespace canopy
