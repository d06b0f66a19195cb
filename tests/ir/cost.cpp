// Tests of the kernel cost model (ir/analysis/cost.hpp): flops, integer ops
// and DRAM bytes per point against hand-computed values for triad, strided
// copies, stencils, gathers, reductions, loops and conditionals, and the
// options that change them (line size, write-allocate, streaming stores,
// trip counts, known extents, cache size).
#include <doctest/doctest.h>

#include <canopy/ir/analysis/cost.hpp>
#include <canopy/ir/parser.hpp>
#include <cmath>
#include <string>

using namespace canopy::ir;

namespace {

KernelCost cost(const std::string& text, const CostOptions& options = {}) { return cost_of(parse(text), options); }

const ArrayCost& array(const KernelCost& c, const std::string& name) {
  for (const auto& a : c.arrays)
    if (a.name == name) return a;
  FAIL("no array named " << name);
  return c.arrays.front();
}

const char* kTriad =
    "kernel triad(out f64[1] a, in f64[1] b, in f64[1] c, val f64 s) dims 1 {\n"
    "  a[index(0)] = (b[index(0)] + (s * c[index(0)]))\n"
    "}\n";

std::string strided_copy(int stride, const char* type = "f64") {
  return std::string("kernel copy(out ") + type + "[1] b, in " + type + "[1] a) dims 1 {\n  b[index(0)] = a[(" +
         std::to_string(stride) + ":i64 * index(0))]\n}\n";
}

const char* kStencil5 =
    "kernel jacobi(out f64[2] dst, in f64[2] a) dims 2 {\n"
    "  dst[index(0), index(1)] = (0.25:f64 * (((a[(index(0) - 1:i64), index(1)] + a[(index(0) + 1:i64), index(1)]) + "
    "a[index(0), (index(1) - 1:i64)]) + a[index(0), (index(1) + 1:i64)]))\n"
    "}\n";

const char* kGather =
    "kernel gather(out f64[1] dst, in f64[1] a, in i32[1] idx) dims 1 {\n"
    "  dst[index(0)] = a[i64(idx[index(0)])]\n"
    "}\n";

}  // namespace

TEST_CASE("cost: triad moves 24 bytes a point plus the allocating read of a, for 2 flops") {
  const KernelCost c = cost(kTriad);
  CHECK(c.flops == 2);
  CHECK(c.flops_f64 == 2);
  CHECK(c.flops_f32 == 0);
  CHECK(c.int_ops == 0);
  CHECK(c.loads == 2);
  CHECK(c.stores == 1);
  CHECK(c.accesses() == 3);
  CHECK(c.bytes_read == 24);  // b, c, and a's lines read before they are written
  CHECK(c.bytes_written == 8);
  CHECK(c.bytes() == 32);
  CHECK(c.intensity() == doctest::Approx(2.0 / 32));
  REQUIRE(c.arrays.size() == 3);
  CHECK(array(c, "a").write_pattern == AccessPattern::Streaming);
  CHECK(array(c, "a").read_pattern == AccessPattern::None);
  CHECK(array(c, "a").allocating_read == 8);
  CHECK(array(c, "b").read_pattern == AccessPattern::Streaming);
  CHECK(array(c, "b").bytes_read == 8);

  CostOptions streaming;
  streaming.streaming_stores = true;
  CHECK(cost(kTriad, streaming).bytes() == 24);
  CostOptions no_allocate;
  no_allocate.write_allocate = false;
  CHECK(cost(kTriad, no_allocate).bytes_read == 16);

  const KernelCost f32 = cost(
      "kernel triad(out f32[1] a, in f32[1] b, in f32[1] c, val f32 s) dims 1 {\n"
      "  a[index(0)] = (b[index(0)] + (s * c[index(0)]))\n"
      "}\n");
  CHECK(f32.flops_f32 == 2);
  CHECK(f32.flops_f64 == 0);
  CHECK(f32.bytes() == 16);
}

TEST_CASE("cost: a strided read costs stride*element up to a line, then a line per access") {
  // b[i] = a[2*i]: a's lines are all touched, 16 bytes per point; b 8 + 8 allocating.
  KernelCost c = cost(strided_copy(2));
  CHECK(array(c, "a").read_pattern == AccessPattern::Strided);
  CHECK(array(c, "a").bytes_read == 16);
  CHECK(c.bytes_read == 24);
  CHECK(c.bytes_written == 8);
  CHECK(c.int_ops == 1);  // 2*i
  CHECK(c.flops == 0);

  // Streaming stores skip the allocating read of a streamed array only.
  CostOptions streaming;
  streaming.streaming_stores = true;
  CHECK(array(cost(strided_copy(2), streaming), "b").allocating_read == 0);
  CHECK(array(cost("kernel scatter(out f64[1] b, in f64[1] a) dims 1 {\n"
                   "  b[(2:i64 * index(0))] = a[index(0)]\n"
                   "}\n",
                   streaming),
              "b")
            .allocating_read == 16);

  // b[i] = a[16*i]: 128 bytes apart, one 64-byte line per access.
  c = cost(strided_copy(16));
  CHECK(array(c, "a").bytes_read == 64);
  CHECK(c.bytes() == 64 + 8 + 8);

  // The line size decides: with 128-byte lines a stride of 16 doubles is contiguous again.
  CostOptions wide;
  wide.line_bytes = 128;
  CHECK(array(cost(strided_copy(16), wide), "a").bytes_read == 128);
  CHECK(array(cost(strided_copy(32), wide), "a").bytes_read == 128);

  // On floats a stride of 16 is exactly one line (64 bytes), 32 is a line per access.
  CHECK(array(cost(strided_copy(16, "f32")), "a").bytes_read == 64);
  CHECK(array(cost(strided_copy(32, "f32")), "a").bytes_read == 64);
  CHECK(array(cost(strided_copy(4, "f32")), "a").bytes_read == 16);
}

TEST_CASE("cost: a 5-point stencil reads its input once per point") {
  const KernelCost c = cost(kStencil5);
  CHECK(c.flops == 4);    // three adds, one multiply
  CHECK(c.int_ops == 4);  // i-1, i+1, j-1, j+1
  CHECK(c.loads == 4);    // each neighbour is loaded, though the bytes come from DRAM once
  CHECK(c.stores == 1);
  const ArrayCost& a = array(c, "a");
  CHECK(a.read_pattern == AccessPattern::Stencil);
  CHECK(a.bytes_read == 8);
  CHECK(array(c, "dst").bytes_written == 8);
  CHECK(array(c, "dst").allocating_read == 8);
  CHECK(c.bytes() == 24);

  // When the three live rows do not fit in the cache, each is read again.
  CostOptions tiny;
  tiny.range = {1000, 1000, 0};
  tiny.cache_bytes = 1000;
  CHECK(array(cost(kStencil5, tiny), "a").bytes_read == 24);
  CostOptions roomy = tiny;
  roomy.cache_bytes = 1 << 20;  // 3 rows of 8000 bytes fit
  CHECK(array(cost(kStencil5, roomy), "a").bytes_read == 8);

  // One dimension: a[i-1] + a[i] + a[i+1] is one stream.
  const KernelCost one = cost(
      "kernel s(out f64[1] b, in f64[1] a) dims 1 {\n"
      "  b[index(0)] = ((a[(index(0) - 1:i64)] + a[index(0)]) + a[(index(0) + 1:i64)])\n"
      "}\n");
  CHECK(array(one, "a").bytes_read == 8);
  CHECK(array(one, "a").read_pattern == AccessPattern::Stencil);
  CHECK(one.flops == 2);

  // Seven points in three dimensions: still one read per point.
  const KernelCost three = cost(
      "kernel s(out f32[3] b, in f32[3] a) dims 3 {\n"
      "  b[index(0), index(1), index(2)] = ((((a[(index(0) - 1:i64), index(1), index(2)] + "
      "a[(index(0) + 1:i64), index(1), index(2)]) + (a[index(0), (index(1) - 1:i64), index(2)] + "
      "a[index(0), (index(1) + 1:i64), index(2)])) + (a[index(0), index(1), (index(2) - 1:i64)] + "
      "a[index(0), index(1), (index(2) + 1:i64)])) + a[index(0), index(1), index(2)])\n"
      "}\n");
  CHECK(array(three, "a").bytes_read == 4);
  CHECK(three.flops_f32 == 6);
  CHECK(three.bytes() == 12);
}

TEST_CASE("cost: a gather costs a line per access; the index array streams") {
  const KernelCost c = cost(kGather);
  CHECK(array(c, "idx").bytes_read == 4);
  CHECK(array(c, "idx").read_pattern == AccessPattern::Streaming);
  CHECK(array(c, "a").read_pattern == AccessPattern::Gather);
  CHECK(array(c, "a").bytes_read == 64);
  CHECK(c.bytes_read == 4 + 64 + 8);
  CHECK(c.bytes_written == 8);
  CHECK(c.flops == 0);

  // A gathered array that fits in the cache is read once per launch.
  CostOptions known;
  known.range = {1000000, 0, 0};
  known.array_extents[1] = {1000};
  known.cache_bytes = 1 << 20;
  CHECK(array(cost(kGather, known), "a").bytes_read == doctest::Approx(8000.0 / 1000000));

  // An atomic scatter reads and writes a line per access.
  const KernelCost histogram = cost(
      "kernel h(inout f64[1] hist, in i64[1] key) dims 1 {\n"
      "  atomic hist[key[index(0)]] += 1:f64\n"
      "}\n");
  CHECK(array(histogram, "hist").write_pattern == AccessPattern::Gather);
  CHECK(array(histogram, "hist").bytes_written == 64);
  CHECK(array(histogram, "hist").allocating_read == 64);
  CHECK(histogram.flops == 1);
  CHECK(histogram.bytes() == 8 + 64 + 64);
}

TEST_CASE("cost: reductions count their combine and move no bytes of their own") {
  const KernelCost dot = cost(
      "kernel dot(in f64[1] a, in f64[1] b, sum f64 s) dims 1 {\n"
      "  reduce s <- (a[index(0)] * b[index(0)])\n"
      "}\n");
  CHECK(dot.flops == 2);
  CHECK(dot.bytes_read == 16);
  CHECK(dot.bytes_written == 0);
  CHECK(dot.intensity() == doctest::Approx(0.125));

  const KernelCost lowest = cost(
      "kernel m(in f32[1] a, min f32 m, max i64 k) dims 1 {\n"
      "  reduce m <- a[index(0)]\n"
      "  reduce k <- index(0)\n"
      "}\n");
  CHECK(lowest.flops_f32 == 1);
  CHECK(lowest.int_ops == 1);
  CHECK(lowest.bytes() == 4);

  const KernelCost nothing = cost(
      "kernel n(sum f64 s) dims 1 {\n"
      "  reduce s <- 1:f64\n"
      "}\n");
  CHECK(nothing.bytes() == 0);
  CHECK(std::isinf(nothing.intensity()));
}

TEST_CASE("cost: loops multiply by their trip counts, known or guessed") {
  // A 4-tap filter: the window a[i..i+3] is one stream, the taps w are the same for every point.
  const std::string filter =
      "kernel f(out f64[1] dst, in f64[1] a, in f64[1] w) dims 1 {\n"
      "  var acc: f64 = 0:f64\n"
      "  for k in 0:i64 .. 4:i64 {\n"
      "    acc = (acc + (w[k] * a[(index(0) + k)]))\n"
      "  }\n"
      "  dst[index(0)] = acc\n"
      "}\n";
  KernelCost c = cost(filter);
  CHECK(c.flops == 8);
  CHECK(c.loads == 8);  // w[k] and a[i+k], four times
  CHECK(c.stores == 1);
  CHECK(c.int_ops == 4 * (1 + 2));  // i+k and the loop's increment and test, 4 times
  CHECK(array(c, "a").bytes_read == 8);
  CHECK(array(c, "a").read_pattern == AccessPattern::Stencil);
  CHECK(array(c, "w").read_pattern == AccessPattern::Reused);
  CHECK(array(c, "w").bytes_read == 0);  // extents unknown: amortised over many points
  CostOptions known;
  known.range = {1000, 0, 0};
  CHECK(array(cost(filter, known), "w").bytes_read == doctest::Approx(64.0 / 1000));  // one line per launch

  // A bound from a scalar: the default, the caller's value, or the trip count by name.
  const std::string rows =
      "kernel r(out f64[1] dst, in f64[1] a, val i64 n) dims 1 {\n"
      "  var acc: f64 = 0:f64\n"
      "  for k in 0:i64 .. n {\n"
      "    acc = (acc + a[index(0)])\n"
      "  }\n"
      "  dst[index(0)] = acc\n"
      "}\n";
  CHECK(cost(rows).flops == 16);
  CostOptions with_n;
  with_n.scalar_values[2] = 100;
  CHECK(cost(rows, with_n).flops == 100);
  CostOptions by_name;
  by_name.trip_counts["k"] = 10;
  CHECK(cost(rows, by_name).flops == 10);
  CostOptions default_guess;
  default_guess.default_trip_count = 3;
  CHECK(cost(rows, default_guess).flops == 3);

  // A triangular loop counts its average trip count; a loop that never runs counts nothing.
  const std::string triangle =
      "kernel t(out f64[1] dst, in f64[1] a) dims 1 {\n"
      "  var acc: f64 = 0:f64\n"
      "  for k in 0:i64 .. index(0) {\n"
      "    acc = (acc + a[k])\n"
      "  }\n"
      "  for k2 in 5:i64 .. 2:i64 {\n"
      "    acc = (acc * 2:f64)\n"
      "  }\n"
      "  dst[index(0)] = acc\n"
      "}\n";
  CostOptions range;
  range.range = {101, 0, 0};
  CHECK(cost(triangle, range).flops == 50);
  // A step counts too: 0, 3, 6, 9 is four trips.
  CHECK(cost("kernel s(out f64[1] dst) dims 1 {\n"
             "  var acc: f64 = 0:f64\n"
             "  for k in 0:i64 .. 10:i64 step 3:i64 {\n"
             "    acc = (acc + 1:f64)\n"
             "  }\n"
             "  dst[index(0)] = acc\n"
             "}\n")
            .flops == 4);

  // Matrix-vector: row i of A streams, x is read whole by every point unless it fits in cache.
  const std::string matvec =
      "kernel mv(out f64[1] y, in f64[2] A, in f64[1] x, val i64 n) dims 1 {\n"
      "  var acc: f64 = 0:f64\n"
      "  for k in 0:i64 .. n {\n"
      "    acc = (acc + (A[index(0), k] * x[k]))\n"
      "  }\n"
      "  y[index(0)] = acc\n"
      "}\n";
  CostOptions mv;
  mv.scalar_values[3] = 1000;
  const KernelCost m = cost(matvec, mv);
  CHECK(m.flops == 2000);
  CHECK(array(m, "A").bytes_read == 8000);
  CHECK(array(m, "x").bytes_read == 8000);
  mv.range = {1000, 0, 0};
  mv.array_extents[1] = {1000, 1000};
  mv.array_extents[2] = {1000};
  mv.cache_bytes = 1 << 20;
  const KernelCost cached = cost(matvec, mv);
  CHECK(array(cached, "A").bytes_read == 8000);  // 8 MB: does not fit
  CHECK(array(cached, "x").bytes_read == 8);     // 8 kB: once per launch
}

TEST_CASE("cost: an If costs its condition and the costlier branch") {
  const KernelCost c = cost(
      "kernel k(out f64[1] a, in f64[1] b) dims 1 {\n"
      "  if (index(0) > 0:i64) {\n"
      "    a[index(0)] = (b[index(0)] * 2:f64)\n"
      "  } else {\n"
      "    a[index(0)] = sqrt(b[index(0)])\n"
      "  }\n"
      "}\n");
  CHECK(c.flops == 4);  // sqrt weighs 4; the multiply (1) is the cheaper branch
  CHECK(c.loads == 1);
  CHECK(c.stores == 1);
  CHECK(c.int_ops == 1);
  CHECK(c.bytes() == 24);  // both branches write the same element once

  // Without else the body is counted: a guard is usually taken.
  const KernelCost guarded = cost(
      "kernel k(out f64[1] a, in f64[1] b, val f64 s) dims 1 {\n"
      "  if (b[index(0)] > s) {\n"
      "    a[index(0)] = exp((b[index(0)] / s))\n"
      "  }\n"
      "}\n");
  CHECK(guarded.flops == 1 + 4 + 10);  // compare, divide, exp
  CHECK(guarded.bytes() == 24);

  // The weights are the caller's.
  CostOptions plain;
  plain.weights.div = 1;
  plain.weights.exp = 1;
  CHECK(cost("kernel k(out f64[1] a, in f64[1] b, val f64 s) dims 1 {\n"
             "  a[index(0)] = exp((b[index(0)] / s))\n"
             "}\n",
             plain)
            .flops == 2);
}

TEST_CASE("cost: accesses along slower dimensions: columns, broadcasts, rows of a loop") {
  // A transpose reads a column: a new line for every point.
  const KernelCost t = cost(
      "kernel t(out f64[2] dst, in f64[2] a) dims 2 {\n"
      "  dst[index(0), index(1)] = a[index(1), index(0)]\n"
      "}\n");
  CHECK(array(t, "a").read_pattern == AccessPattern::Column);
  CHECK(array(t, "a").bytes_read == 64);

  // v[i] in a 2-D kernel is the same for a whole row of points.
  const std::string scale =
      "kernel s(out f64[2] dst, in f64[1] v, in f64[2] m) dims 2 {\n"
      "  dst[index(0), index(1)] = (v[index(0)] * m[index(0), index(1)])\n"
      "}\n";
  CHECK(array(cost(scale), "v").bytes_read == 0);
  CHECK(array(cost(scale), "v").read_pattern == AccessPattern::Reused);
  CostOptions rows;
  rows.range = {100, 1000, 0};
  CHECK(array(cost(scale, rows), "v").bytes_read == doctest::Approx(8.0 / 1000));
  CHECK(array(cost(scale, rows), "m").bytes_read == 8);

  // b[k][j] for k in 0..3: three row streams.
  const KernelCost k3 = cost(
      "kernel r(out f64[2] dst, in f64[2] b) dims 2 {\n"
      "  var acc: f64 = 0:f64\n"
      "  for k in 0:i64 .. 3:i64 {\n"
      "    acc = (acc + b[k, index(1)])\n"
      "  }\n"
      "  dst[index(0), index(1)] = acc\n"
      "}\n");
  CHECK(array(k3, "b").bytes_read == 24);
}

TEST_CASE("cost: describe() and describe_cost() say it in one line and one line per array") {
  const Kernel triad = parse(kTriad);
  const KernelCost c = cost_of(triad);
  CHECK(c.describe() ==
        "per point: 2 flops (f64), 0 int ops, 2 loads, 1 stores, 32 bytes (read 24, written 8); intensity 0.0625 "
        "flop/byte\n"
        "  a: written streaming 8 B + allocating read 8 B\n"
        "  b: read streaming 8 B\n"
        "  c: read streaming 8 B");
  CHECK(describe_cost(triad, c) == "kernel triad (dims 1): " + c.describe() + "\n");
  CHECK(name_of(AccessPattern::Gather) == "gather");
}
