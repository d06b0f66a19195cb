// Kernel: a C++ lambda traced once into the IR.
//
//   Kernel triad("triad", [](Out<double> a, In<double> b, In<double> c, Val<double> s) {
//     Idx i = index(0);
//     a[i] = b[i] + s * c[i];
//   });
//
// The lambda's parameter types make the kernel's signature: the runtime checks
// launch arguments against it at compile time. The index range's number of
// dimensions is the highest index(d) the body uses, plus one.
#pragma once

#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <canopy/ir/kernel.hpp>

#include "params.hpp"
#include "tracer.hpp"

namespace canopy {

/// What every kernel is once traced, whatever its signature.
class KernelBase {
 public:
  /// Wraps an IR kernel (for example one read with ir::parse); it is verified.
  explicit KernelBase(ir::Kernel kernel);

  /// The traced kernel in Canopy's IR (ir/printer.hpp prints it).
  const ir::Kernel& ir() const { return *ir_; }
  /// The name the kernel was given.
  const std::string& name() const { return ir_->name; }
  /// The shared IR; the runtime keys its compiled code by this pointer.
  const std::shared_ptr<const ir::Kernel>& ir_ptr() const { return ir_; }

 protected:
  KernelBase() = default;
  std::shared_ptr<const ir::Kernel> ir_;
};

namespace dsl {

template <class F>
struct lambda_signature : lambda_signature<decltype(&F::operator())> {};
template <class C, class R, class... Ps>
struct lambda_signature<R (C::*)(Ps...) const> {
  using type = void(std::decay_t<Ps>...);
};
template <class C, class R, class... Ps>
struct lambda_signature<R (C::*)(Ps...)> {
  using type = void(std::decay_t<Ps>...);
};
template <class R, class... Ps>
struct lambda_signature<R (*)(Ps...)> {
  using type = void(std::decay_t<Ps>...);
};

template <class P>
P traced_param(Tracer& tracer) {
  return P(Traced{tracer.add_param(P::describe())});
}

}  // namespace dsl

template <class Signature>
class Kernel;

/// A kernel whose parameters are Ps... (In/Out/InOut arrays, Val scalars,
/// Sum/Min/Max reductions).
template <class... Ps>
class Kernel<void(Ps...)> : public KernelBase {
 public:
  using parameters = std::tuple<Ps...>;

  /// Traces `body` once. `param_names` (optional) names the parameters in the
  /// IR and in generated code; by default they are p0, p1, ...
  template <class F>
  requires std::is_invocable_v<F&, Ps...> Kernel(std::string name, F&& body,
                                                 std::vector<std::string> param_names = {}) {
    dsl::Tracer tracer(std::move(name));
    tracer.reserve_names(param_names);
    // Braced initialisation evaluates the parameters left to right.
    std::tuple<Ps...> params{dsl::traced_param<Ps>(tracer)...};
    std::apply(body, params);
    ir_ = std::make_shared<const ir::Kernel>(tracer.finish(param_names));
  }
};

template <class F>
Kernel(std::string, F&&) -> Kernel<typename dsl::lambda_signature<std::decay_t<F>>::type>;
template <class F>
Kernel(std::string, F&&, std::vector<std::string>) -> Kernel<typename dsl::lambda_signature<std::decay_t<F>>::type>;

}  // namespace canopy
