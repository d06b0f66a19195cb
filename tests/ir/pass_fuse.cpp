// fuse_kernels: a fused chain computes, on the reference interpreter, what
// the chain's kernels compute run one after the other; intermediates become
// locals and loads of a value stored earlier at the point come from the store.
#include <doctest/doctest.h>
#include <canopy/ir/analysis/footprint.hpp>
#include <canopy/ir/error.hpp>
#include <canopy/ir/interpreter.hpp>
#include <canopy/ir/parser.hpp>
#include <canopy/ir/passes/fuse.hpp>
#include <canopy/ir/printer.hpp>
#include <canopy/ir/verifier.hpp>

#include <string>
#include <vector>

using namespace canopy::ir;

namespace {

const char* kInit =
    "kernel init(out f64[1] a, out f64[1] b, out f64[1] c) dims 1 {\n"
    "  a[index(0)] = 1:f64\n"
    "  b[index(0)] = f64(index(0))\n"
    "  c[index(0)] = (f64(index(0)) * 0.5:f64)\n"
    "}\n";
const char* kTriad =
    "kernel triad(out f64[1] a, in f64[1] b, in f64[1] c, val f64 s) dims 1 {\n"
    "  a[index(0)] = (b[index(0)] + (s * c[index(0)]))\n"
    "}\n";
const char* kDot =
    "kernel dot(in f64[1] a, in f64[1] b, sum f64 total) dims 1 {\n"
    "  reduce total <- (a[index(0)] * b[index(0)])\n"
    "}\n";
const char* kScale =
    "kernel scale(in f64[1] x, out f64[1] y, val f64 s) dims 1 {\n"
    "  if (index(0) > 2:i64) {\n"
    "    y[index(0)] = (x[index(0)] * s)\n"
    "  } else {\n"
    "    y[index(0)] = x[index(0)]\n"
    "  }\n"
    "}\n";

FusedSlot array_slot(const std::string& name, Access access, bool local = false) {
  return {Param::array(name, ScalarType::F64, 1, access), local};
}

std::vector<double> values(const RefArray& a) {
  std::vector<double> v;
  for (const auto& e : a.elements) v.push_back(e.f);
  return v;
}

}  // namespace

TEST_CASE("fuse: init -> triad -> dot equals the chain, with the triad's loads taken from init's stores") {
  const Kernel init = parse(kInit), triad = parse(kTriad), dot = parse(kDot);
  const std::int64_t n = 37;
  // The chain, one kernel after the other.
  RefArray a = RefArray::zeros(ScalarType::F64, {n}), b = a, c = a;
  std::vector<RefArgument> init_args{&a, &b, &c};
  interpret(init, {n}, init_args);
  std::vector<RefArgument> triad_args{&a, &b, &c, RefValue::f64(3.0)};
  interpret(triad, {n}, triad_args);
  std::vector<RefArgument> dot_args{&a, &b, RefReduction{}};
  const RefOutcome chain = interpret(dot, {n}, dot_args);

  const std::vector<FusedSlot> slots{array_slot("a", Access::InOut),
                                     array_slot("b", Access::InOut),
                                     array_slot("c", Access::InOut),
                                     {Param::scalar("s", ScalarType::F64), false},
                                     {Param::reduction("total", ScalarType::F64, ReduceOp::Sum), false}};
  const Kernel fused =
      fuse_kernels("init.triad.dot", slots, {{&init, {0, 1, 2}}, {&triad, {0, 1, 2, 3}}, {&dot, {0, 1, 4}}});
  verify(fused);
  const std::string text = print(fused);
  // Every value the later kernels read was stored on every path by an earlier one.
  CHECK(text.find("b[index(0)] +") == std::string::npos);
  CHECK(text.find("(a[index(0)] *") == std::string::npos);
  CHECK(fused.params[0].access == Access::Out);
  CHECK(fused.params[1].access == Access::Out);
  CHECK(fused.params[2].access == Access::Out);

  RefArray fa = RefArray::zeros(ScalarType::F64, {n}), fb = fa, fc = fa;
  std::vector<RefArgument> fused_args{&fa, &fb, &fc, RefValue::f64(3.0), RefReduction{}};
  const RefOutcome one = interpret(fused, {n}, fused_args);
  CHECK(values(fa) == values(a));
  CHECK(values(fb) == values(b));
  CHECK(values(fc) == values(c));
  REQUIRE(one.reductions.size() == 1);
  CHECK(conforms(chain.reductions[0], one.reductions[0]));
  CHECK(one.reductions[0].f == chain.reductions[0].f);
}

TEST_CASE("fuse: intermediates become locals, conditional stores included, and leave the parameters") {
  const Kernel scale = parse(kScale);
  const std::int64_t n = 9;
  RefArray x = RefArray::zeros(ScalarType::F64, {n});
  for (std::int64_t i = 0; i < n; ++i) x.elements[static_cast<std::size_t>(i)] = RefValue::f64(double(i) + 0.25);
  RefArray t1 = RefArray::zeros(ScalarType::F64, {n}), t2 = t1, y = t1;
  // x -> t1 -> t2 -> y, each step the same kernel with its own factor.
  std::vector<RefArgument> step1{&x, &t1, RefValue::f64(2.0)}, step2{&t1, &t2, RefValue::f64(-3.0)},
      step3{&t2, &y, RefValue::f64(0.5)};
  interpret(scale, {n}, step1);
  interpret(scale, {n}, step2);
  interpret(scale, {n}, step3);

  const std::vector<FusedSlot> slots{array_slot("x", Access::In),
                                     array_slot("t1", Access::InOut, true),
                                     array_slot("t2", Access::InOut, true),
                                     array_slot("y", Access::Out),
                                     {Param::scalar("s1", ScalarType::F64), false},
                                     {Param::scalar("s2", ScalarType::F64), false},
                                     {Param::scalar("s3", ScalarType::F64), false}};
  const Kernel fused = fuse_kernels("chain", slots, {{&scale, {0, 1, 4}}, {&scale, {1, 2, 5}}, {&scale, {2, 3, 6}}});
  verify(fused);
  REQUIRE(fused.params.size() == 5);
  CHECK(fused.params[0].name == "x");
  CHECK(fused.params[0].access == Access::In);
  CHECK(fused.params[1].name == "y");
  CHECK(fused.params[1].access == Access::Out);

  RefArray fy = RefArray::zeros(ScalarType::F64, {n});
  std::vector<RefArgument> args{&x, &fy, RefValue::f64(2.0), RefValue::f64(-3.0), RefValue::f64(0.5)};
  interpret(fused, {n}, args);
  CHECK(values(fy) == values(y));
}

TEST_CASE("fuse: a value stored only under a condition is read from memory, not forwarded") {
  const Kernel scale = parse(kScale);
  const Kernel copy = parse(
      "kernel copy(in f64[1] y, out f64[1] z) dims 1 {\n"
      "  z[index(0)] = y[index(0)]\n"
      "}\n");
  const std::vector<FusedSlot> slots{array_slot("x", Access::In),
                                     array_slot("y", Access::InOut),
                                     array_slot("z", Access::Out),
                                     {Param::scalar("s", ScalarType::F64), false}};
  const Kernel fused = fuse_kernels("scale.copy", slots, {{&scale, {0, 1, 3}}, {&copy, {1, 2}}});
  verify(fused);
  CHECK(fused.params[1].access == Access::InOut);
  CHECK(print(fused).find("y[index(0)]\n") != std::string::npos);
}

TEST_CASE("fuse: only kernels whose every access is at their own point take part in a chain") {
  CHECK(accesses_only_own_point(parse(kTriad), footprint_of(parse(kTriad))));
  CHECK(accesses_only_own_point(parse(kScale), footprint_of(parse(kScale))));
  const Kernel stencil = parse(
      "kernel s(in f64[1] x, out f64[1] y) dims 1 {\n"
      "  y[index(0)] = x[(index(0) + 1:i64)]\n"
      "}\n");
  CHECK_FALSE(accesses_only_own_point(stencil, footprint_of(stencil)));
  const Kernel gather = parse(
      "kernel g(in i64[1] idx, in f64[1] x, out f64[1] y) dims 1 {\n"
      "  y[index(0)] = x[idx[index(0)]]\n"
      "}\n");
  CHECK_FALSE(accesses_only_own_point(gather, footprint_of(gather)));
  const Kernel atomic = parse(
      "kernel h(inout f64[1] y) dims 1 {\n"
      "  atomic y[index(0)] += 1:f64\n"
      "}\n");
  CHECK_FALSE(accesses_only_own_point(atomic, footprint_of(atomic)));
  const Kernel transpose = parse(
      "kernel t(in f64[2] x, out f64[2] y) dims 2 {\n"
      "  y[index(0), index(1)] = x[index(1), index(0)]\n"
      "}\n");
  CHECK_FALSE(accesses_only_own_point(transpose, footprint_of(transpose)));
}

TEST_CASE("fuse: a local slot whose extent is read, or slots that do not match, are refused") {
  const Kernel sized = parse(
      "kernel k(in f64[1] x, out f64[1] y) dims 1 {\n"
      "  y[index(0)] = (x[index(0)] + f64(extent(x, 0)))\n"
      "}\n");
  CHECK(reads_extent_of(sized, 0));
  CHECK_FALSE(reads_extent_of(sized, 1));
  const std::vector<FusedSlot> slots{array_slot("x", Access::In, true), array_slot("y", Access::Out)};
  CHECK_THROWS_AS(fuse_kernels("f", slots, {{&sized, {0, 1}}}), canopy::Error);
  const std::vector<FusedSlot> wrong{{Param::array("x", ScalarType::F32, 1, Access::In), false},
                                     array_slot("y", Access::Out)};
  CHECK_THROWS_AS(fuse_kernels("f", wrong, {{&sized, {0, 1}}}), canopy::Error);
}

TEST_CASE("fuse: a part whose every output a later part overwrites before anything reads it is left out") {
  const Kernel fill = parse(
      "kernel fill(out f64[1] y, val f64 v) dims 1 {\n"
      "  y[index(0)] = v\n"
      "}\n");
  const Kernel scale = parse(kScale);
  const std::vector<FusedSlot> slots{array_slot("x", Access::In),
                                     array_slot("y", Access::InOut),
                                     {Param::scalar("v", ScalarType::F64), false},
                                     {Param::scalar("s", ScalarType::F64), false},
                                     {Param::scalar("w", ScalarType::F64), false}};
  // fill(y, v) then scale(x -> y): the fill is dead; fill(y, w) after it is not.
  const Kernel fused = fuse_kernels("fill.scale.fill", slots, {{&fill, {1, 2}}, {&scale, {0, 1, 3}}, {&fill, {1, 4}}});
  verify(fused);
  const std::string text = print(fused);
  CHECK(text.find("= v\n") == std::string::npos);
  CHECK(text.find("= w\n") != std::string::npos);
  const std::int64_t n = 6;
  RefArray x = RefArray::zeros(ScalarType::F64, {n}), y = x, fy = x;
  for (std::int64_t i = 0; i < n; ++i) x.elements[static_cast<std::size_t>(i)] = RefValue::f64(double(i));
  std::vector<RefArgument> a1{&y, RefValue::f64(9.0)}, a2{&x, &y, RefValue::f64(2.0)};
  interpret(fill, {n}, a1);
  interpret(scale, {n}, a2);
  std::vector<RefArgument> both{&x, &fy, RefValue::f64(9.0), RefValue::f64(2.0), RefValue::f64(5.0)};
  interpret(fused, {n}, both);
  for (std::int64_t i = 0; i < n; ++i) CHECK(fy.elements[static_cast<std::size_t>(i)].f == 5.0);
  // Read in between: kept.
  const Kernel copy = parse(
      "kernel copy(in f64[1] y, out f64[1] z) dims 1 {\n"
      "  z[index(0)] = y[index(0)]\n"
      "}\n");
  const std::vector<FusedSlot> slots2{array_slot("y", Access::InOut),
                                      array_slot("z", Access::Out),
                                      {Param::scalar("v", ScalarType::F64), false},
                                      {Param::scalar("w", ScalarType::F64), false}};
  const Kernel kept = fuse_kernels("fill.copy.fill", slots2, {{&fill, {0, 2}}, {&copy, {0, 1}}, {&fill, {0, 3}}});
  CHECK(print(kept).find("= v\n") != std::string::npos);
  RefArray y2 = RefArray::zeros(ScalarType::F64, {n}), z2 = y2;
  std::vector<RefArgument> args2{&y2, &z2, RefValue::f64(7.0), RefValue::f64(1.0)};
  interpret(kept, {n}, args2);
  for (std::int64_t i = 0; i < n; ++i) {
    CHECK(z2.elements[static_cast<std::size_t>(i)].f == 7.0);
    CHECK(y2.elements[static_cast<std::size_t>(i)].f == 1.0);
  }
}
