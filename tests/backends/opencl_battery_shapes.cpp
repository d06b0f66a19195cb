// The JIT battery's shapes and access patterns (tests/jit/battery_shapes.cpp)
// on the OpenCL device, compared exactly with the CPU device on the same
// inputs: 1-D kernels over every length, gathers, strided, reversed and
// scattered accesses, 1-D, 2-D and 3-D stencils and permutations, an array
// passed twice; and pieces of a range (sub-ranges reaching the device through
// the global work offset) in one, two and three dimensions, where the points
// outside the piece must keep what they held.
#include <doctest/doctest.h>

#include "opencl_support.hpp"

using namespace canopy;
using namespace battery;
using namespace opencl_test;

namespace {

const std::vector<std::pair<i64, i64>> shapes_2d{{0, 0},  {0, 5},    {5, 0},    {1, 1},     {3, 17},
                                                 {17, 3}, {1, 1003}, {1003, 1}, {123, 257}, {301, 300}};
const std::vector<std::array<i64, 3>> shapes_3d{{0, 3, 3}, {3, 0, 3},  {3, 3, 0},   {1, 1, 1},   {3, 5, 7},
                                                {7, 5, 3}, {17, 1, 9}, {1, 1, 100}, {33, 34, 35}};

Kernel<void(Out<double>, In<double>, In<double>, Val<double>)> triad_kernel() {
  return Kernel("triad",
                [](Out<double> a, In<double> b, In<double> c, Val<double> s) {
                  Idx i = index(0);
                  a[i] = b[i] + s * c[i];
                },
                {"a", "b", "c", "s"});
}

Kernel<void(Out<i64, 3>)> iota_kernel() {
  return Kernel("iota_3d",
                [](Out<i64, 3> out) {
                  Idx i = index(0), j = index(1), k = index(2);
                  out(i, j, k) = (i * 1000 + j) * 1000 + k;
                },
                {"out"});
}

Kernel<void(Out<float, 2>, In<float, 2>)> stencil_2d_kernel() {
  return Kernel("stencil_2d",
                [](Out<float, 2> out, In<float, 2> u) {
                  Idx i = index(0), j = index(1);
                  Idx rows = u.extent(0), cols = u.extent(1);
                  If(i > 0 && i < rows - 1 && j > 0 && j < cols - 1, [&] {
                    out(i, j) = u(i, j) * 4 - u(i - 1, j) - u(i + 1, j) - u(i, j - 1) - u(i, j + 1);
                  }).Else([&] { out(i, j) = u(i, j); });
                },
                {"out", "u"});
}

// True when point `flat` of an array of `extents` lies in `range`.
bool inside(const Range& range, std::array<i64, 3> extents, i64 flat) {
  const std::array<i64, 3> at{flat / (extents[1] * extents[2]), flat / extents[2] % extents[1], flat % extents[2]};
  for (int d = 0; d < range.dims; ++d)
    if (at[static_cast<std::size_t>(d)] < range.begin[static_cast<std::size_t>(d)] ||
        at[static_cast<std::size_t>(d)] >= range.end[static_cast<std::size_t>(d)])
      return false;
  return true;
}

}  // namespace

TEST_CASE("opencl battery: triad (f64) over every length") {
  OPENCL_DEVICE_OR_SKIP(device);
  Random random(3131);
  for (i64 n : lengths) {
    compare(*device, triad_kernel(),
            {HostArray::filled<double>(n, 0), HostArray::of<double>(random.values<double>(n, -1e3, 1e3)),
             HostArray::of<double>(random.values<double>(n, -1e3, 1e3)), scalar(0.4)},
            range_of(n), {}, "over " + std::to_string(n));
  }
}

TEST_CASE("opencl battery: saxpy (f32, InOut) and index arithmetic (i32, i64) over every length") {
  OPENCL_DEVICE_OR_SKIP(device);
  Kernel saxpy("saxpy",
               [](InOut<float> y, In<float> x, Val<float> a) {
                 Idx i = index(0);
                 y[i] = a * x[i] + y[i];
               },
               {"y", "x", "a"});
  Kernel index_math("index_math",
                    [](Out<i64> squares, Out<i32> mixed) {
                      Idx i = index(0);
                      squares[i] = i * i - 3;
                      mixed[i] = (cast<i32>(i) ^ 0x55) * 7 - cast<i32>(i >> 2);
                    },
                    {"squares", "mixed"});
  Random random(3232);
  for (i64 n : lengths) {
    const std::string what = "over " + std::to_string(n);
    compare(*device, saxpy,
            {HostArray::of<float>(random.values<float>(n, -10, 10)),
             HostArray::of<float>(random.values<float>(n, -10, 10)), scalar(2.5f)},
            range_of(n), {}, what);
    compare(*device, index_math, {HostArray::filled<i64>(n, 0), HostArray::filled<i32>(n, 0)}, range_of(n), {}, what);
  }
}

TEST_CASE("opencl battery: gathers through i32 and i64 index arrays") {
  OPENCL_DEVICE_OR_SKIP(device);
  Kernel gather("gather",
                [](Out<double> out, Out<i64> out64, In<double> table, In<i64> table64, In<i32> idx, In<i64> idx64) {
                  Idx i = index(0);
                  out[i] = table[idx[i]] + table[idx64[i]];
                  out64[i] = table64[idx[idx[i] % 17]];
                },
                {"out", "out64", "table", "table64", "idx", "idx64"});
  Random random(3333);
  const i64 table_size = 4099;
  const auto table = HostArray::of<double>(random.values<double>(table_size, -1, 1));
  const auto table64 = HostArray::of<i64>(random.mixed<i64>(table_size));
  for (i64 n : lengths) {
    compare(*device, gather,
            {HostArray::filled<double>(n, 0), HostArray::filled<i64>(n, 0), table, table64,
             HostArray::of<i32>(random.values<i32>(std::max<i64>(n, 17), 0, table_size - 1)),
             HostArray::of<i64>(random.values<i64>(n, 0, table_size - 1))},
            range_of(n), {}, "over " + std::to_string(n));
  }
}

TEST_CASE("opencl battery: strided, reversed and scattered accesses") {
  OPENCL_DEVICE_OR_SKIP(device);
  Kernel strided("strided",
                 [](Out<float> out, In<float> a, Val<i64> stride, Val<i64> offset) {
                   Idx i = index(0);
                   out[i] = a[i * stride + offset];
                 },
                 {"out", "a", "stride", "offset"});
  Kernel reversed("reversed",
                  [](Out<i32> out, Out<i32> scattered, In<i32> a) {
                    Idx i = index(0);
                    Idx last = a.extent(0) - 1;
                    out[i] = a[last - i];
                    scattered[last - i] = a[i] * 2;
                  },
                  {"out", "scattered", "a"});
  Random random(3434);
  for (i64 n : lengths) {
    const std::string what = "over " + std::to_string(n);
    for (auto [stride, offset] : {std::pair<i64, i64>{2, 1}, {3, 0}, {7, 5}})
      compare(
          *device, strided,
          {HostArray::filled<float>(n, 0), HostArray::of<float>(random.values<float>(n * stride + offset + 1, -5, 5)),
           scalar(stride), scalar(offset)},
          range_of(n), {}, what);
    compare(*device, reversed,
            {HostArray::filled<i32>(n, 0), HostArray::filled<i32>(n, 0),
             HostArray::of<i32>(random.values<i32>(n, -1000, 1000))},
            range_of(n), {}, what);
  }
}

TEST_CASE("opencl battery: a 1-D three-point stencil with its boundaries under If") {
  OPENCL_DEVICE_OR_SKIP(device);
  Kernel stencil("stencil_1d",
                 [](Out<double> out, In<double> u) {
                   Idx i = index(0);
                   If(i == 0 || i == u.extent(0) - 1, [&] { out[i] = u[i]; }).Else([&] {
                     out[i] = 0.25 * u[i - 1] + 0.5 * u[i] + 0.25 * u[i + 1];
                   });
                 },
                 {"out", "u"});
  Random random(3535);
  for (i64 n : lengths)
    compare(*device, stencil, {HostArray::filled<double>(n, 0), HostArray::of<double>(random.values<double>(n, -1, 1))},
            range_of(n), {}, "over " + std::to_string(n));
}

TEST_CASE("opencl battery: 2-D transpose and five-point stencil") {
  OPENCL_DEVICE_OR_SKIP(device);
  Kernel transpose("transpose",
                   [](Out<i64, 2> t, In<i64, 2> m) {
                     Idx i = index(0), j = index(1);
                     t(j, i) = m(i, j);
                   },
                   {"t", "m"});
  Random random(3636);
  for (auto [rows, cols] : shapes_2d) {
    const std::string what = std::to_string(rows) + "x" + std::to_string(cols);
    compare(*device, transpose,
            {HostArray::filled<i64>(rows * cols, 0, {cols, rows, 1}, 2),
             HostArray::of<i64>(random.mixed<i64>(rows * cols), {rows, cols, 1}, 2)},
            range_of({0, 0}, {rows, cols}), {}, what);
    compare(*device, stencil_2d_kernel(),
            {HostArray::filled<float>(rows * cols, 0, {rows, cols, 1}, 2),
             HostArray::of<float>(random.values<float>(rows * cols, -1, 1), {rows, cols, 1}, 2)},
            range_of({0, 0}, {rows, cols}), {}, what);
  }
}

TEST_CASE("opencl battery: 3-D index values, axis permutation and seven-point stencil") {
  OPENCL_DEVICE_OR_SKIP(device);
  Kernel permute("permute_3d",
                 [](Out<double, 3> out, In<double, 3> in) {
                   Idx i = index(0), j = index(1), k = index(2);
                   out(i, j, k) = in(k, i, j);
                 },
                 {"out", "src"});
  Kernel stencil("stencil_3d",
                 [](Out<double, 3> out, In<double, 3> u) {
                   Idx i = index(0), j = index(1), k = index(2);
                   Value<bool> inside =
                       i > 0 && j > 0 && k > 0 && i < u.extent(0) - 1 && j < u.extent(1) - 1 && k < u.extent(2) - 1;
                   If(inside, [&] {
                     out(i, j, k) = u(i - 1, j, k) + u(i + 1, j, k) + u(i, j - 1, k) + u(i, j + 1, k) + u(i, j, k - 1) +
                                    u(i, j, k + 1) - 6.0 * u(i, j, k);
                   }).Else([&] { out(i, j, k) = 0.0; });
                 },
                 {"out", "u"});
  Random random(3737);
  for (const auto& [n0, n1, n2] : shapes_3d) {
    const i64 points = n0 * n1 * n2;
    const auto range = range_of({0, 0, 0}, {n0, n1, n2});
    const std::string what = std::to_string(n0) + "x" + std::to_string(n1) + "x" + std::to_string(n2);
    auto [cpu, got] =
        compare(*device, iota_kernel(), {HostArray::filled<i64>(points, -1, {n0, n1, n2}, 3)}, range, {}, what);
    if (points > 0) CHECK(values_of<i64>(got.arrays[0]).back() == ((n0 - 1) * 1000 + n1 - 1) * 1000 + n2 - 1);
    compare(*device, permute,
            {HostArray::filled<double>(points, 0, {n0, n1, n2}, 3),
             HostArray::of<double>(random.values<double>(points, -1, 1), {n2, n0, n1}, 3)},
            range, {}, what);
    compare(*device, stencil,
            {HostArray::filled<double>(points, 0, {n0, n1, n2}, 3),
             HostArray::of<double>(random.values<double>(points, -1, 1), {n0, n1, n2}, 3)},
            range, {}, what);
  }
}

TEST_CASE("opencl battery: one array passed twice, as Out and In") {
  OPENCL_DEVICE_OR_SKIP(device);
  Kernel affine("affine",
                [](Out<double> y, In<double> x, Val<double> a, Val<double> b) {
                  Idx i = index(0);
                  y[i] = a * x[i] + b;
                },
                {"y", "x", "a", "b"});
  Random random(3838);
  for (i64 n : lengths) {
    auto x = random.values<double>(n, -4, 4);
    auto [cpu, got] = compare(*device, affine, {HostArray::of<double>(x), SameArrayAs{0}, scalar(4.0), scalar(0.5)},
                              range_of(n), {}, "over " + std::to_string(n));
    const auto y = values_of<double>(got.arrays[0]);
    for (std::size_t k = 0; k < x.size(); ++k) REQUIRE(y[k] == 4.0 * x[k] + 0.5);
  }
}

TEST_CASE("opencl battery: pieces of a 1-D range run only their points (global offset)") {
  OPENCL_DEVICE_OR_SKIP(device);
  Random random(3939);
  const i64 n = 100003;
  const auto b = HostArray::of<double>(random.values<double>(n, -1e3, 1e3));
  const auto c = HostArray::of<double>(random.values<double>(n, -1e3, 1e3));
  for (auto [begin, end] : {std::pair<i64, i64>{0, n},
                            {1, n},
                            {0, n - 1},
                            {1023, 1025},
                            {1024, 2048},
                            {5, 6},
                            {4097, 99999},
                            {n - 1, n},
                            {50000, 50000},
                            {77, 3}}) {
    const Range range = range_of({begin}, {end});
    auto [cpu, got] = compare(*device, triad_kernel(), {HostArray::filled<double>(n, -7.0), b, c, scalar(0.4)}, range,
                              {}, "over [" + std::to_string(begin) + ", " + std::to_string(end) + ")");
    const auto a = values_of<double>(got.arrays[0]);
    const auto bv = values_of<double>(b), cv = values_of<double>(c);
    i64 wrong = 0;
    for (i64 k = 0; k < n; ++k) {
      const auto at = static_cast<std::size_t>(k);
      const double want = k >= begin && k < end ? bv[at] + 0.4 * cv[at] : -7.0;
      wrong += a[at] != want;
    }
    CHECK(wrong == 0);
  }
}

TEST_CASE("opencl battery: pieces of 2-D and 3-D ranges run only their points") {
  OPENCL_DEVICE_OR_SKIP(device);
  Random random(4040);
  const i64 rows = 301, cols = 300;
  const auto u = HostArray::of<float>(random.values<float>(rows * cols, -1, 1), {rows, cols, 1}, 2);
  for (const Range& range :
       {range_of({0, 0}, {rows, cols}), range_of({1, 1}, {rows - 1, cols - 1}), range_of({150, 0}, {rows, cols}),
        range_of({0, 64}, {rows, 129}), range_of({17, 3}, {18, 297}), range_of({100, 100}, {100, 200})}) {
    auto [cpu, got] = compare(*device, stencil_2d_kernel(),
                              {HostArray::filled<float>(rows * cols, 9.0f, {rows, cols, 1}, 2), u}, range);
    const auto out = values_of<float>(got.arrays[0]);
    i64 untouched = 0;
    for (i64 k = 0; k < rows * cols; ++k) untouched += out[static_cast<std::size_t>(k)] == 9.0f;
    CHECK(untouched == rows * cols - range.points());
  }
  const std::array<i64, 3> extents{33, 34, 35};
  const i64 points = extents[0] * extents[1] * extents[2];
  for (const Range& range : {range_of({1, 2, 3}, {32, 33, 34}), range_of({0, 0, 17}, {33, 34, 35}),
                             range_of({16, 0, 0}, {17, 34, 35}), range_of({5, 5, 5}, {6, 6, 6})}) {
    auto [cpu, got] = compare(*device, iota_kernel(), {HostArray::filled<i64>(points, -1, extents, 3)}, range);
    const auto out = values_of<i64>(got.arrays[0]);
    i64 wrong = 0;
    for (i64 k = 0; k < points; ++k) {
      const i64 want =
          inside(range, extents, k)
              ? (k / (extents[1] * extents[2]) * 1000 + k / extents[2] % extents[1]) * 1000 + k % extents[2]
              : -1;
      wrong += out[static_cast<std::size_t>(k)] != want;
    }
    CHECK(wrong == 0);
  }
}
