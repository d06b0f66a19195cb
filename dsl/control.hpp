// Local variables and control flow inside a kernel body.
//
//   Var<double> acc = 0.0;                       // a mutable local
//   For(0, n, [&](Idx k) { acc += a(i, k); });   // a counted loop
//   If(acc > 1.0, [&] { out[i] = acc; })         // a branch
//       .Else([&] { out[i] = 0.0; });
//
// Bodies are C++ lambdas run once while tracing; what they emit becomes the
// body of the IR's If or For.
#pragma once

#include <limits>
#include <string>
#include <type_traits>
#include <utility>

#include "tracer.hpp"
#include "value.hpp"

namespace canopy {

/// A mutable local variable of kernel type T.
template <class T>
class Var {
 public:
  using value_type = T;

  /// A local that starts at zero.
  Var() : Var(T{}) {}
  /// A local that starts at `init`.
  template <class X>
  requires dsl::Operands<Value<T>, X> Var(const X& init) : Var("", init) {}
  /// A local with a chosen name (it shows in generated code).
  template <class X>
  requires dsl::Operands<Value<T>, X> Var(std::string_view name, const X& init) {
    auto& tracer = dsl::Tracer::current("Var");
    auto value = dsl::expr_of<T>(init);
    name_ = tracer.fresh_name(name);
    tracer.emit(ir::make_decl(name_, value));
  }
  /// A new local starting at `other`'s current value.
  Var(const Var& other) : Var("", other) {}

  /// Assigns a new value (in the kernel, under the enclosing If/For).
  template <class X>
  requires dsl::Operands<Value<T>, X> Var& operator=(const X& x) {
    dsl::Tracer::current("Var assignment").emit(ir::make_assign(name_, dsl::expr_of<T>(x)));
    return *this;
  }
  Var& operator=(const Var& other) { return operator=<Var>(other); }

#define CANOPY_DSL_VAR_UPDATE(OPERATOR, OP, CONSTRAINT)                                             \
  template <class X>                                                                                \
  requires dsl::Operands<Value<T>, X> && CONSTRAINT<T> Var& operator OPERATOR(const X& x) {         \
    return *this = Value<T>(ir::make_binary(ir::BinaryOp::OP, value().expr(), dsl::expr_of<T>(x))); \
  }
  CANOPY_DSL_VAR_UPDATE(+=, Add, dsl::Numeric)
  CANOPY_DSL_VAR_UPDATE(-=, Sub, dsl::Numeric)
  CANOPY_DSL_VAR_UPDATE(*=, Mul, dsl::Numeric)
  CANOPY_DSL_VAR_UPDATE(/=, Div, dsl::Numeric)
  CANOPY_DSL_VAR_UPDATE(%=, Rem, dsl::Numeric)
  CANOPY_DSL_VAR_UPDATE(&=, And, dsl::Bitwise)
  CANOPY_DSL_VAR_UPDATE(|=, Or, dsl::Bitwise)
  CANOPY_DSL_VAR_UPDATE(^=, Xor, dsl::Bitwise)
#undef CANOPY_DSL_VAR_UPDATE

  /// The variable's value at this point of the kernel, as reading a C++
  /// variable gives it: a Value computed from it keeps it when the variable
  /// is assigned later.
  Value<T> value() const {
    return Value<T>(dsl::Tracer::current("Var").snapshot(ir::make_var(ir::scalar_type_of<T>(), name_)));
  }
  /// The local's name in the kernel's IR (as CANOPY_DUMP=ir prints it).
  const std::string& name() const { return name_; }

 private:
  std::string name_;
};

namespace dsl {

/// A condition of If / ElseIf: a bool value or a C++ bool.
template <class X>
concept Condition = std::is_same_v<X, bool> ||(Symbolic<X>&& std::is_same_v<typename X::value_type, bool>);

/// What If(...) returns: attaches Else / ElseIf branches to the If just emitted.
class IfChain {
 public:
  IfChain(Tracer& tracer, Tracer::Place place, ir::Expr cond, ir::Stmt then_body)
      : tracer_(&tracer), place_(place), cond_(std::move(cond)), then_(std::move(then_body)) {}

  /// The branch taken when every condition before it was false.
  template <class F>
  requires std::is_invocable_v<F>
  void Else(F&& body) {
    auto else_body = tracer_->trace_block(std::forward<F>(body));
    attach(std::move(else_body));
  }
  /// Another condition, tested when every condition before it was false.
  template <Condition C, class F>
  requires std::is_invocable_v<F> IfChain& ElseIf(const C& cond, F&& body) {
    // The condition is read only when the ones before it were false: what
    // reading it declared (snapshots of locals, emitted after the If while
    // C++ evaluated the argument) goes in that else branch.
    auto before = tracer_->take_snapshots_after(place_);
    auto c = expr_of<bool>(cond);
    auto inner_then = tracer_->trace_block(std::forward<F>(body));
    branches_.push_back({std::move(before), std::move(c), std::move(inner_then)});
    rebuild(nullptr);
    return *this;
  }

 private:
  void attach(ir::Stmt else_body) { rebuild(std::move(else_body)); }
  // Re-emits the whole chain (if / else if ... / else) at the If's place.
  void rebuild(ir::Stmt final_else) {
    ir::Stmt tail = std::move(final_else);
    for (auto it = branches_.rbegin(); it != branches_.rend(); ++it) {
      std::vector<ir::Stmt> stmts = it->before;
      stmts.push_back(ir::make_if(it->cond, it->then_body, tail));
      tail = ir::make_block(std::move(stmts));
    }
    tracer_->replace(place_, ir::make_if(cond_, then_, tail));
  }

  Tracer* tracer_;
  Tracer::Place place_;
  ir::Expr cond_;
  ir::Stmt then_;
  struct Branch {
    std::vector<ir::Stmt> before;  ///< what reading the condition declared
    ir::Expr cond;
    ir::Stmt then_body;
  };
  std::vector<Branch> branches_;
};

template <class X>
concept LoopBound = (Symbolic<X> && Integer<typename X::value_type>) || std::is_integral_v<X>;

/// The kernel type of a loop over [begin, end): i32 only when both bounds are i32 values.
template <class B, class E>
using loop_type_t = std::conditional_t<(Symbolic<B> || Symbolic<E>)&&std::is_same_v<common_value_t<B, E>, std::int32_t>,
                                       std::int32_t, std::int64_t>;

template <class T, class X>
ir::Expr bound_expr(const X& x) {
  if constexpr (Symbolic<X>) {
    auto e = x.value().expr();
    return e->type == ir::scalar_type_of<T>() ? e : ir::make_cast(ir::scalar_type_of<T>(), e);
  } else {
    return literal_expr<T>(x);
  }
}

}  // namespace dsl

/// if (cond) { body }; chain .ElseIf(cond, body) and .Else(body) on the result.
template <dsl::Condition C, class F>
requires std::is_invocable_v<F> dsl::IfChain If(const C& cond, F&& body) {
  auto& tracer = dsl::Tracer::current("If");
  auto c = dsl::expr_of<bool>(cond);
  auto then_body = tracer.trace_block(std::forward<F>(body));
  auto place = tracer.next_place();
  tracer.emit(ir::make_if(c, then_body, nullptr));
  return dsl::IfChain(tracer, place, std::move(c), std::move(then_body));
}

/// for (k = begin; k < end; k += step) { body(k) }, with step a positive constant.
template <dsl::LoopBound B, dsl::LoopBound E, class F>
requires std::is_invocable_v<F, Value<dsl::loop_type_t<B, E>>>
void For(const B& begin, const E& end, std::int64_t step, F&& body) {
  using T = dsl::loop_type_t<B, E>;
  auto& tracer = dsl::Tracer::current("For");
  if (step <= 0) tracer.fail("For", "the step must be a positive constant, got " + std::to_string(step));
  if (step > std::numeric_limits<T>::max())
    tracer.fail("For", "the step " + std::to_string(step) + " does not fit the loop counter's type " +
                           std::string(ir::name_of(ir::scalar_type_of<T>())));
  auto name = tracer.fresh_name("k");
  Value<T> counter(ir::make_var(ir::scalar_type_of<T>(), name));
  auto block = tracer.trace_block([&] { body(counter); });
  tracer.emit(ir::make_for(name, dsl::bound_expr<T>(begin), dsl::bound_expr<T>(end),
                           ir::make_int(ir::scalar_type_of<T>(), step), block));
}
/// for (k = begin; k < end; ++k) { body(k) }.
template <dsl::LoopBound B, dsl::LoopBound E, class F>
requires std::is_invocable_v<F, Value<dsl::loop_type_t<B, E>>>
void For(const B& begin, const E& end, F&& body) { For(begin, end, 1, std::forward<F>(body)); }
/// for (k = begin; k < end; ++k) { body() } with a counter declared beforehand
/// (`Idx k; For(k, 0, n, [&] { ... k ... });`); k is unset again afterwards.
template <class T, dsl::LoopBound B, dsl::LoopBound E, class F>
requires std::is_invocable_v<F>
void For(Value<T>& counter, const B& begin, const E& end, F&& body) {
  static_assert(dsl::Integer<T>, "a loop counter is an int32_t or int64_t value");
  auto& tracer = dsl::Tracer::current("For");
  auto name = tracer.fresh_name("k");
  counter.bind_counter(ir::make_var(ir::scalar_type_of<T>(), name));
  ir::Stmt block;
  try {
    block = tracer.trace_block(std::forward<F>(body));
  } catch (...) {
    counter.bind_counter(nullptr);
    throw;
  }
  counter.bind_counter(nullptr);
  tracer.emit(ir::make_for(name, dsl::bound_expr<T>(begin), dsl::bound_expr<T>(end),
                           ir::make_int(ir::scalar_type_of<T>(), 1), block));
}

}  // namespace canopy
