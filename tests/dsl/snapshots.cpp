// Reading a Var takes its value at that point, as reading a C++ variable
// does (ir/passes/snapshots.hpp): kernels that compute a Value from a Var and
// assign the Var afterwards, run by the reference interpreter and compared
// with the same steps in plain C++.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include <canopy/dsl/dsl.hpp>
#include <canopy/ir/interpreter.hpp>
#include <canopy/ir/passes/optimize.hpp>
#include <canopy/ir/printer.hpp>

using namespace canopy;

namespace {

// Runs a 1-D kernel with one out f64 array of `n` elements and one f64
// scalar through the reference interpreter; returns the array.
std::vector<double> run(const KernelBase& kernel, std::int64_t n, double scalar) {
  ir::RefArray out = ir::RefArray::zeros(ir::ScalarType::F64, {n});
  std::vector<ir::RefArgument> args{&out, ir::RefValue::f64(scalar)};
  ir::interpret(kernel.ir(), {n}, args);
  std::vector<double> values;
  for (const auto& e : out.elements) values.push_back(e.f);
  return values;
}

}  // namespace

TEST_CASE("dsl snapshots: a Value keeps the Var's value from when it was read") {
  // One step of z = z^2 + c in two locals: t must use the old zi.
  Kernel step("complex_step", [](Out<double> out, Val<double> c) {
    Idx i = index(0);
    Var<double> zr = cast<double>(i) * 0.25, zi = 0.5;
    For(0, 3, [&](Idx) {
      const Value<double> t = zr * zr - zi * zi + c;
      zi = 2.0 * zr * zi + c;
      zr = t;
    });
    out[i] = zr * 10.0 + zi;
  });
  const auto got = run(step, 8, 0.125);
  for (int i = 0; i < 8; ++i) {
    double zr = i * 0.25, zi = 0.5;
    for (int k = 0; k < 3; ++k) {
      const double t = zr * zr - zi * zi + 0.125;
      zi = 2.0 * zr * zi + 0.125;
      zr = t;
    }
    CHECK(got[static_cast<std::size_t>(i)] == doctest::Approx(zr * 10.0 + zi).epsilon(1e-12));
  }
}

TEST_CASE("dsl snapshots: a swap through a Value, and a read in an ElseIf condition after an assignment") {
  Kernel swap("swap", [](Out<double> out, Val<double> c) {
    Idx i = index(0);
    Var<double> a = cast<double>(i), b = c;
    const Value<double> old_a = a;
    a = b;
    b = old_a;
    Var<double> r = 0.0;
    If(a > 100.0, [&] { r = 1.0; }).ElseIf(b > 3.0, [&] { r = b; }).Else([&] { r = -b; });
    out[i] = a * 100.0 + r;
  });
  const auto got = run(swap, 6, 7.0);
  for (int i = 0; i < 6; ++i) {
    double a = i, b = 7.0;
    const double old_a = a;
    a = b;
    b = old_a;
    const double r = a > 100.0 ? 1.0 : b > 3.0 ? b : -b;
    CHECK(got[static_cast<std::size_t>(i)] == a * 100.0 + r);
  }
}

TEST_CASE("dsl snapshots: kept only where a later assignment could change what they read") {
  Kernel kernel("accumulate", [](Out<double> out, Val<double> c) {
    Idx i = index(0);
    Var<double> acc("acc", c);
    acc += 1.0;  // reads acc in its own assignment: no snapshot needed
    If(acc > 2.0, [&] { acc = acc * 2.0; });
    const Value<double> before = acc;  // read, then acc assigned: this one stays
    acc = 0.0;
    out[i] = before + acc;
  });
  const std::string text = ir::print(kernel.ir());
  CHECK(text.find("acc = (acc + 1:f64)") != std::string::npos);
  CHECK(text.find("acc = (acc * 2:f64)") != std::string::npos);
  std::size_t snapshots = 0;
  for (std::size_t at = text.find("var snap_"); at != std::string::npos; at = text.find("var snap_", at + 1))
    ++snapshots;
  CHECK(snapshots == 1);
  const auto got = run(kernel, 2, 1.5);
  CHECK(got[0] == 5.0);  // (1.5 + 1) * 2 + 0
}

TEST_CASE("dsl snapshots: an InOut element read before a store to it keeps the old value") {
  Kernel kernel("rotate", [](InOut<double> a, Val<double> c) {
    Idx i = index(0);
    const Value<double> old = a[i];
    a[i] = c;
    a[i] += old * 2.0;  // reads the stored c, adds the old value twice
  });
  ir::RefArray a = ir::RefArray::zeros(ir::ScalarType::F64, {4});
  for (int k = 0; k < 4; ++k) a.elements[static_cast<std::size_t>(k)] = ir::RefValue::f64(k + 0.5);
  std::vector<ir::RefArgument> args{&a, ir::RefValue::f64(10.0)};
  ir::interpret(kernel.ir(), {4}, args);
  for (int k = 0; k < 4; ++k) CHECK(a.elements[static_cast<std::size_t>(k)].f == 10.0 + (k + 0.5) * 2.0);
  // The update's own read needs no snapshot: only `old` keeps one.
  const std::string text = ir::print(kernel.ir());
  std::size_t snapshots = 0;
  for (std::size_t at = text.find("var snap_"); at != std::string::npos; at = text.find("var snap_", at + 1))
    ++snapshots;
  CHECK(snapshots == 1);
}

TEST_CASE("dsl snapshots: an In element read before a store to another array of its type keeps its value") {
  // One array passed twice, as In and InOut, reversed in place by swaps: a
  // Value read from the In side must not be read again after the store
  // (found by a new user's program: 9 8 7 6 5 5 6 7 8 9).
  Kernel kernel("swap_ends", [](In<std::int32_t> in, InOut<std::int32_t> out) {
    Idx i = index(0);
    const Idx last = in.extent(0) - 1;
    const Value<std::int32_t> kept = in[i];
    out[i] = in[last - i];
    out[last - i] = kept;
  });
  const int n = 10;
  ir::RefArray a = ir::RefArray::zeros(ir::ScalarType::I32, {n});
  for (int k = 0; k < n; ++k) a.elements[static_cast<std::size_t>(k)] = ir::RefValue::i32(k);
  std::vector<ir::RefArgument> args{&a, &a};
  ir::interpret(kernel.ir(), {n / 2}, args);
  for (int k = 0; k < n; ++k) CHECK(a.elements[static_cast<std::size_t>(k)].i == n - 1 - k);
  // A store to an array of another type changes nothing an i32 array reads:
  // the snapshot goes.
  Kernel other("other_type", [](In<std::int32_t> in, Out<double> out, Out<std::int32_t> copy) {
    Idx i = index(0);
    const Value<std::int32_t> kept = in[i];
    out[i] = 1.0;
    copy[i] = kept;
  });
  CHECK(ir::print(other.ir()).find("var snap_") == std::string::npos);
}

TEST_CASE("dsl snapshots: optimized, a load after a store to another array of its type is read again") {
  // One array passed as In and InOut: x[i] read after y[i] is stored reads
  // the stored value, as in C++. The common-subexpression pass had shared
  // the two reads of x[i] across the store (found by a new user: 3 old + 1
  // where C++ gives 3 old + 2).
  Kernel kernel("alias_reads", [](In<double> x, InOut<double> y) {
    Idx i = index(0);
    const Value<double> before = x[i];
    y[i] = y[i] + 1.0;
    y[i] = y[i] + before + x[i];
  });
  // And as Out and InOut: c[i] read after a[i] is stored.
  Kernel second("alias_out", [](Out<double> a, InOut<double> c) {
    Idx i = index(0);
    const Value<double> t = c[i];
    a[i] = 5.0;
    c[i] = c[i] + t;
  });
  const int n = 6;
  auto run = [&](const ir::Kernel& traced) {
    ir::RefArray d = ir::RefArray::zeros(ir::ScalarType::F64, {n});
    for (int k = 0; k < n; ++k) d.elements[static_cast<std::size_t>(k)] = ir::RefValue::f64(10.0 * k);
    std::vector<ir::RefArgument> args{&d, &d};
    ir::interpret(ir::optimize(traced), {n}, args);
    return d;
  };
  const ir::RefArray first = run(kernel.ir()), other = run(second.ir());
  for (int k = 0; k < n; ++k) {
    CAPTURE(k);
    CHECK(first.elements[static_cast<std::size_t>(k)].f == 3 * (10.0 * k) + 2);
    CHECK(other.elements[static_cast<std::size_t>(k)].f == 5.0 + 10.0 * k);
  }
}

TEST_CASE("dsl snapshots: a kernel of thousands of updates of one Var traces with none left") {
  // A C++ loop unrolled into 4000 updates: each reads the Var in its own
  // assignment, so no snapshot stays. (Naming and forwarding are linear in
  // the statements: this took 17 s when each new name was searched from the
  // first.)
  Kernel kernel("unrolled", [](Out<double> out, In<double> in) {
    Idx i = index(0);
    Var<double> acc = 0.0;
    const Value<double> x = in[i];
    for (int c = 0; c < 4000; ++c) acc += x * double(c);
    out[i] = acc;
  });
  const auto& body = kernel.ir().body->as<ir::Block>().stmts;
  CHECK(body.size() == 4002);  // the Var, 4000 updates, the store
  CHECK(ir::print(kernel.ir()).find("snap_") == std::string::npos);
}
