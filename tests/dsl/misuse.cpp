// Misuse of the DSL that must not compile: reading an Out array, writing an
// In array, mixing value types, a floating-point literal for an integer value,
// the wrong number of indices, and so on. Each is a concept over the misused
// expression, asserted false at compile time (so this file not compiling is
// the failure), with the well-typed counterpart asserted true beside it so
// that a concept that could never hold does not pass by accident. The same
// facts are checked again at run time to give the suite a test case.
#include <doctest/doctest.h>

#include <cstdint>
#include <type_traits>

#include <canopy/dsl/dsl.hpp>

using namespace canopy;

namespace {

using ElemIn = dsl::Element<double, ir::Access::In>;
using ElemOut = dsl::Element<double, ir::Access::Out>;
using ElemInOut = dsl::Element<double, ir::Access::InOut>;

template <class A, class B>
concept CanAdd = requires(const A& a, const B& b) {
  a + b;
};
template <class A, class B>
concept CanMultiply = requires(const A& a, const B& b) {
  a* b;
};
template <class A, class B>
concept CanShift = requires(const A& a, const B& b) {
  a << b;
};
template <class A, class B>
concept CanAnd = requires(const A& a, const B& b) {
  a& b;
};
template <class A, class B>
concept CanLogicalAnd = requires(const A& a, const B& b) {
  a&& b;
};
template <class A, class B>
concept CanCompare = requires(const A& a, const B& b) {
  a < b;
};
template <class A, class V>
concept CanStore = requires(const A& a, const V& v) {
  a = v;
};
template <class A, class V>
concept CanAddTo = requires(const A& a, const V& v) {
  a += v;
};
template <class E, class V>
concept CanAtomicAdd = requires(const E& e, const V& v) {
  atomic_add(e, v);
};
template <class X>
concept CanNegate = requires(const X& x) {
  -x;
};
template <class X>
concept CanNot = requires(const X& x) {
  !x;
};
template <class X>
concept CanComplement = requires(const X& x) {
  ~x;
};
template <class X>
concept CanSqrt = requires(const X& x) {
  sqrt(x);
};
template <class X>
concept CanAbs = requires(const X& x) {
  abs(x);
};
template <class A, class B>
concept CanPow = requires(const A& a, const B& b) {
  pow(a, b);
};
template <class A, class B, class C>
concept CanFma = requires(const A& a, const B& b, const C& c) {
  fma(a, b, c);
};
template <class A, class B>
concept CanMin = requires(const A& a, const B& b) {
  min(a, b);
};
template <class C, class A, class B>
concept CanSelect = requires(const C& c, const A& a, const B& b) {
  select(c, a, b);
};
template <class R, class X>
concept CanSum = requires(const R& r, const X& x) {
  r += x;
};
template <class R, class X>
concept CanCombine = requires(const R& r, const X& x) {
  r.combine(x);
};
template <class A, class... I>
concept CanIndex = requires(const A& a, const I&... i) {
  a(i...);
};
template <class A, class I>
concept CanSubscript = requires(const A& a, const I& i) {
  a[i];
};
template <class V, class X>
concept CanAssignVar = requires(V& v, const X& x) {
  v = x;
};
template <class V, class X>
concept CanRemAssign = requires(V& v, const X& x) {
  v %= x;
};
template <class V, class X>
concept CanOrAssign = requires(V& v, const X& x) {
  v |= x;
};
template <class C, class F>
concept CanIf = requires(const C& c, F f) {
  If(c, f);
};
template <class C, class F>
concept CanElseIf = requires(dsl::IfChain& chain, const C& c, F f) {
  chain.ElseIf(c, f);
};
template <class B, class E, class F>
concept CanFor = requires(const B& b, const E& e, F f) {
  For(b, e, f);
};

using Body = void (*)();
using LoopBody = void (*)(Idx);

// ---- reading an Out array, writing an In array
static_assert(!std::is_constructible_v<Value<double>, ElemOut>, "an Out array cannot be read");
static_assert(std::is_constructible_v<Value<double>, ElemIn>);
static_assert(std::is_constructible_v<Value<double>, ElemInOut>);
static_assert(!CanAdd<ElemOut, double>, "an Out element is not an operand");
static_assert(CanAdd<ElemInOut, double>);
static_assert(!CanStore<ElemIn, double>, "an In array cannot be written");
static_assert(!CanStore<ElemIn, Value<double>>);
static_assert(CanStore<ElemOut, Value<double>>);
static_assert(CanStore<ElemOut, ElemIn>);
static_assert(!CanStore<ElemOut, ElemOut>, "copying one Out element to another reads an Out array");
static_assert(!CanAddTo<ElemOut, double>, "a[i] += x reads a[i]: Out arrays cannot");
static_assert(!CanAddTo<ElemIn, double>);
static_assert(CanAddTo<ElemInOut, double>);
static_assert(!CanAtomicAdd<ElemIn, double>, "atomic_add writes");
static_assert(CanAtomicAdd<ElemOut, double>);
static_assert(!CanAtomicAdd<dsl::Element<bool, ir::Access::Out>, bool>, "atomic adds are on numbers");

// ---- mixing value types: float and double, i32 and i64, numbers and bools
static_assert(!CanAdd<Value<float>, Value<double>>, "float and double values do not mix; cast one");
static_assert(CanAdd<Value<float>, Value<float>>);
static_assert(!CanAdd<Value<std::int32_t>, Value<std::int64_t>>, "i32 and i64 values do not mix");
static_assert(!CanAdd<Value<float>, Value<std::int32_t>>);
static_assert(!CanCompare<Value<float>, Value<double>>);
static_assert(!CanStore<dsl::Element<float, ir::Access::Out>, Value<double>>, "storing a double into a float array");
static_assert(!CanMin<Value<float>, Value<double>>);
static_assert(!CanPow<Value<float>, Value<double>>);
static_assert(!CanSelect<Value<bool>, Value<float>, Value<double>>);
// Two literals of one kernel type select a value of that type; of two types, nothing.
static_assert(CanSelect<Value<bool>, double, double>);
static_assert(CanSelect<Value<bool>, std::int32_t, std::int32_t>);
static_assert(!CanSelect<Value<bool>, double, float>);
static_assert(!CanSelect<Value<bool>, long long, long long>);
static_assert(!CanSelect<bool, double, double>);
static_assert(!CanSum<Sum<float>, Value<double>>);
static_assert(CanSum<Sum<float>, double>, "a literal adapts");
static_assert(!CanCombine<Min<std::int32_t>, Value<std::int64_t>>);
static_assert(!CanAssignVar<Var<float>, Value<double>>);
static_assert(!CanAdd<Value<bool>, Value<bool>>, "bools are not numbers");
static_assert(!CanAdd<Value<bool>, bool>);

// ---- literals: a floating-point literal for an integer value, a number for a bool
static_assert(!std::is_constructible_v<Value<std::int32_t>, double>, "2.5 is not an i32");
static_assert(!std::is_constructible_v<Value<std::int64_t>, float>);
static_assert(std::is_constructible_v<Value<std::int32_t>, int>);
static_assert(std::is_constructible_v<Value<double>, int>, "an integer literal is fine for a float value");
static_assert(!CanMultiply<Value<std::int32_t>, double>, "x * 2.5 with x an i32 value");
static_assert(CanMultiply<Value<std::int32_t>, int>);
static_assert(!CanStore<dsl::Element<std::int64_t, ir::Access::Out>, double>);
static_assert(!std::is_constructible_v<Value<bool>, int>, "1 is not a bool");
static_assert(!std::is_constructible_v<Value<double>, bool>, "true is not a number");
static_assert(!CanAdd<Value<double>, bool>);

// ---- operators on the wrong types
static_assert(!CanShift<Value<double>, Value<double>>, "shifts are on integers");
static_assert(CanShift<Value<std::int64_t>, int>);
static_assert(!CanAnd<Value<float>, Value<float>>, "bitwise operators are on integers and bools");
static_assert(CanAnd<Value<bool>, Value<bool>>);
static_assert(!CanLogicalAnd<Value<std::int32_t>, Value<std::int32_t>>, "&& and || are on bools");
static_assert(!CanNegate<Value<bool>>);
static_assert(!CanNot<Value<std::int32_t>>, "! is on bools; ~ complements integers");
static_assert(CanComplement<Value<std::int32_t>>);
static_assert(!CanComplement<Value<double>>);
static_assert(!CanSqrt<Value<std::int32_t>>, "sqrt, exp, log, sin, cos, floor, pow are on floats");
static_assert(CanAbs<Value<std::int32_t>>);
static_assert(!CanFma<Value<std::int32_t>, Value<std::int32_t>, Value<std::int32_t>>, "fma is on floats");
static_assert(!CanFma<Value<float>, Value<double>, Value<float>>, "fma's operands share one type");
static_assert(CanFma<Value<float>, double, Value<float>>);
static_assert(CanFma<double, double, Value<double>>);
static_assert(!CanAbs<Value<bool>>);
static_assert(!CanRemAssign<Var<bool>, bool>, "%= is on numbers");
static_assert(!CanOrAssign<Var<double>, double>, "|= is on integers and bools");
static_assert(!CanSum<Sum<double>, Value<bool>>);

// ---- indices: their number and type
static_assert(!CanIndex<In<double, 2>, Idx>, "a 2-D array takes two indices");
static_assert(!CanIndex<In<double, 2>, Idx, Idx, Idx>);
static_assert(CanIndex<In<double, 2>, Idx, Idx>);
static_assert(CanIndex<In<double, 3>, Idx, int, Value<std::int32_t>>);
static_assert(!CanSubscript<In<double, 2>, Idx>, "[] is for 1-D arrays");
static_assert(CanSubscript<In<double>, Value<std::int32_t>>, "an i32 index is widened");
static_assert(!CanSubscript<In<double>, Value<double>>, "indices are integers");
static_assert(!CanSubscript<In<double>, double>);
static_assert(!CanSubscript<In<double>, Value<bool>>);

// ---- control flow: conditions are bools, loop bounds integers
static_assert(!CanIf<Value<std::int32_t>, Body>, "an If condition is a bool");
static_assert(CanIf<Value<bool>, Body>);
static_assert(!CanElseIf<Value<std::int32_t>, Body>, "an ElseIf condition is a bool too");
static_assert(CanElseIf<Value<bool>, Body>);
static_assert(!CanFor<Value<double>, int, LoopBody>, "loop bounds are integers");
static_assert(CanFor<int, Value<std::int64_t>, LoopBody>);

}  // namespace

TEST_CASE("dsl misuse: what must not compile is rejected by the type system") {
  CHECK_FALSE(std::is_constructible_v<Value<double>, ElemOut>);
  CHECK_FALSE(CanStore<ElemIn, Value<double>>);
  CHECK_FALSE(CanAdd<Value<float>, Value<double>>);
  CHECK_FALSE(std::is_constructible_v<Value<std::int32_t>, double>);
  CHECK_FALSE(CanIndex<In<double, 2>, Idx>);
  CHECK_FALSE(CanElseIf<Value<std::int32_t>, Body>);
  CHECK(CanIndex<In<double, 2>, Idx, Idx>);
}
