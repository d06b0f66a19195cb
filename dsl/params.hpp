// The parameter types of a kernel's lambda: arrays (In, Out, InOut), scalars
// (Val) and reduction accumulators (Sum, Min, Max). The lambda's signature
// says what a kernel takes; C++ rejects what the access mode forbids (reading
// an Out array, writing an In array) at compile time.
//
//   Kernel k("saxpy", [](InOut<float> y, In<float> x, Val<float> a) {
//     Idx i = index(0);
//     y[i] += a * x[i];
//   });
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include <canopy/ir/kernel.hpp>

#include "tracer.hpp"
#include "value.hpp"

namespace canopy {

namespace dsl {

/// Tag for the constructors only a tracing Kernel calls.
struct Traced {
  int param;
};

/// An index operand: an i64 value, an i32 value (widened) or an integer literal.
template <class X>
concept IndexOperand = (Symbolic<X> && Integer<typename X::value_type>) || std::is_integral_v<X>;

template <class X>
ir::Expr index_expr(const X& x) {
  if constexpr (Symbolic<X>) {
    if constexpr (std::is_same_v<typename X::value_type, std::int64_t>)
      return x.value().expr();
    else
      return ir::make_cast(ir::ScalarType::I64, x.value().expr());
  } else {
    return ir::make_int(ir::ScalarType::I64, static_cast<std::int64_t>(x));
  }
}

/// One element of an array parameter, as an operand (it loads) or as the
/// target of an assignment (it stores).
template <class T, ir::Access A>
class Element {
 public:
  using value_type = T;
  static constexpr bool readable = A != ir::Access::Out;
  static constexpr bool writable = A != ir::Access::In;

  Element(int param, std::vector<ir::Expr> indices) : param_(param), indices_(std::move(indices)) {}

  /// The element's value at this point of the kernel (In and InOut arrays):
  /// a Value read from it keeps it when the element is stored to later, as
  /// in C++, also through another parameter (one array passed twice, as In
  /// and InOut).
  Value<T> value() const requires readable {
    return Value<T>(Tracer::current("array read").snapshot(ir::make_load(ir::scalar_type_of<T>(), param_, indices_)));
  }

  /// Stores a value (Out and InOut arrays).
  template <class X>
  requires writable &&(Symbolic<X> || LiteralFor<X, T>)&&std::is_same_v<common_value_t<Value<T>, X>, T> const Element&
  operator=(const X& x) const {
    Tracer::current("array store").emit(ir::make_store(param_, indices_, expr_of<T>(x)));
    return *this;
  }
  const Element& operator=(const Element& other) const requires writable && readable {
    Tracer::current("array store").emit(ir::make_store(param_, indices_, other.value().expr()));
    return *this;
  }
  /// A store to an In parameter's element: the compiler says "use of deleted
  /// function" and shows this line (instead of "no match for operator=").
  template <class X>
  requires(!writable) void operator=(const X&) const = delete;  // In<> is read only: use Out<> or InOut<> to store

#define CANOPY_DSL_UPDATE(OPERATOR, OP)                                                                            \
  template <class X>                                                                                               \
  requires readable && writable && Operands<Value<T>, X> && Numeric<T>                                             \
  const Element& operator OPERATOR(const X& x) const {                                                             \
    Tracer::current("array update")                                                                                \
        .emit(ir::make_store(param_, indices_, ir::make_binary(ir::BinaryOp::OP, value().expr(), expr_of<T>(x)))); \
    return *this;                                                                                                  \
  }
  CANOPY_DSL_UPDATE(+=, Add)
  CANOPY_DSL_UPDATE(-=, Sub)
  CANOPY_DSL_UPDATE(*=, Mul)
  CANOPY_DSL_UPDATE(/=, Div)
#undef CANOPY_DSL_UPDATE

  int param() const { return param_; }
  const std::vector<ir::Expr>& indices() const { return indices_; }

 private:
  int param_;
  std::vector<ir::Expr> indices_;
};

/// Common part of In, Out and InOut.
template <class T, int Rank, ir::Access A>
class ArrayParam {
  static_assert(ir::is_kernel_scalar_v<T>, "array elements are bool, int32_t, int64_t, float or double");
  static_assert(Rank >= 1 && Rank <= 3, "arrays have 1, 2 or 3 dimensions");

 public:
  using element_type = T;
  static constexpr int rank = Rank;
  static constexpr ir::Access access = A;

  explicit ArrayParam(Traced traced) : param_(traced.param) {}
  static ir::Param describe() { return ir::Param::array("", ir::scalar_type_of<T>(), Rank, A); }

  /// a[i] for a 1-D array.
  template <IndexOperand I>
  requires(Rank == 1) Element<T, A>
  operator[](const I& i) const { return Element<T, A>(param_, {index_expr(i)}); }
  /// a(i), a(i, j), a(i, j, k): one index per dimension, the last fastest.
  template <IndexOperand... I>
  requires(sizeof...(I) == Rank) Element<T, A>
  operator()(const I&... i) const { return Element<T, A>(param_, {index_expr(i)...}); }
  /// The number of elements along dimension `dim`.
  Value<std::int64_t> extent(int dim) const {
    if (dim < 0 || dim >= Rank)
      Tracer::current("extent").fail("extent(" + std::to_string(dim) + ")",
                                     "the array has " + std::to_string(Rank) + " dimension(s)");
    return Value<std::int64_t>(ir::make_extent(param_, dim));
  }
  int param() const { return param_; }

 private:
  int param_;
};

}  // namespace dsl

/// An array the kernel reads.
template <class T, int Rank = 1>
class In : public dsl::ArrayParam<T, Rank, ir::Access::In> {
  using dsl::ArrayParam<T, Rank, ir::Access::In>::ArrayParam;
};
/// An array the kernel writes (every element it reads must be written first by
/// the same point: Out arrays cannot be read, use InOut).
template <class T, int Rank = 1>
class Out : public dsl::ArrayParam<T, Rank, ir::Access::Out> {
  using dsl::ArrayParam<T, Rank, ir::Access::Out>::ArrayParam;
};
/// An array the kernel reads and writes.
template <class T, int Rank = 1>
class InOut : public dsl::ArrayParam<T, Rank, ir::Access::InOut> {
  using dsl::ArrayParam<T, Rank, ir::Access::InOut>::ArrayParam;
};

/// A scalar argument, the same for every point.
template <class T>
class Val : public Value<T> {
 public:
  explicit Val(dsl::Traced traced) : Value<T>(ir::make_param(ir::scalar_type_of<T>(), traced.param)) {}
  static ir::Param describe() { return ir::Param::scalar("", ir::scalar_type_of<T>()); }
};

namespace dsl {

/// Common part of Sum, Min and Max.
template <class T, ir::ReduceOp Op>
class Reduction {
  static_assert(ir::is_kernel_scalar_v<T> && !std::is_same_v<T, bool>, "reductions are over numbers");

 public:
  using result_type = T;
  static constexpr ir::ReduceOp op = Op;

  explicit Reduction(Traced traced) : param_(traced.param) {}
  static ir::Param describe() { return ir::Param::reduction("", ir::scalar_type_of<T>(), Op); }

  /// Combines `x` into the result with the reduction's operator.
  template <class X>
  requires Operands<Value<T>, X>
  void combine(const X& x) const { Tracer::current("reduction").emit(ir::make_reduce(param_, expr_of<T>(x))); }

 private:
  int param_;
};

}  // namespace dsl

/// A sum over all points: `s += x`. The launch returns the total.
template <class T>
class Sum : public dsl::Reduction<T, ir::ReduceOp::Sum> {
 public:
  using dsl::Reduction<T, ir::ReduceOp::Sum>::Reduction;
  template <class X>
  requires dsl::Operands<Value<T>, X>
  const Sum& operator+=(const X& x) const {
    this->combine(x);
    return *this;
  }
};
/// The minimum over all points: `m.combine(x)`.
template <class T>
class Min : public dsl::Reduction<T, ir::ReduceOp::Min> {
 public:
  using dsl::Reduction<T, ir::ReduceOp::Min>::Reduction;
};
/// The maximum over all points: `m.combine(x)`.
template <class T>
class Max : public dsl::Reduction<T, ir::ReduceOp::Max> {
 public:
  using dsl::Reduction<T, ir::ReduceOp::Max>::Reduction;
};

namespace dsl {

template <class P>
inline constexpr bool is_array_param_v = requires {
  P::rank;
  P::access;
  typename P::element_type;
};
template <class P>
inline constexpr bool is_reduction_param_v = requires {
  P::op;
  typename P::result_type;
};
template <class P>
inline constexpr bool is_scalar_param_v = !is_array_param_v<P> && !is_reduction_param_v<P>;

}  // namespace dsl

/// Atomically adds `x` to an element of an Out or InOut array (several points
/// may add to the same element).
template <class T, ir::Access A, class X>
requires(A != ir::Access::In) && dsl::Operands<Value<T>, X>&& dsl::Numeric<T> void atomic_add(
                                     const dsl::Element<T, A>& element, const X& x) {
  dsl::Tracer::current("atomic_add").emit(ir::make_atomic_add(element.param(), element.indices(), dsl::expr_of<T>(x)));
}

}  // namespace canopy
