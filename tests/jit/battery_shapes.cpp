// Battery, index spaces and access patterns: 1-D kernels over every length of
// the battery (empty, shorter than a vector, not a multiple of any vector
// width, large enough for several threads), 2-D and 3-D kernels over shapes
// with extents of 0, 1, odd sizes and thousands, gathers through index arrays,
// strided, reversed and scattered accesses, and 1-D, 2-D and 3-D stencils with
// their boundaries handled by If, compared element by element with plain C++.
#include <doctest/doctest.h>

#include <array>
#include <tuple>

#include "battery_support.hpp"

using namespace canopy;
using namespace battery;

namespace {

std::string length_text(i64 n) { return " over " + std::to_string(n); }
std::string shape_text(const Shape& s) { return " over " + s.to_string(); }

const std::vector<std::pair<i64, i64>> shapes_2d{{0, 0},  {0, 5},    {5, 0},    {1, 1},     {3, 17},
                                                 {17, 3}, {1, 1003}, {1003, 1}, {123, 257}, {301, 300}};
const std::vector<std::array<i64, 3>> shapes_3d{{0, 3, 3}, {3, 0, 3},  {3, 3, 0},   {1, 1, 1},   {3, 5, 7},
                                                {7, 5, 3}, {17, 1, 9}, {1, 1, 100}, {33, 34, 35}};

}  // namespace

TEST_CASE("battery: triad (f64) over every length") {
  Kernel triad("triad",
               [](Out<double> a, In<double> b, In<double> c, Val<double> s) {
                 Idx i = index(0);
                 a[i] = b[i] + s * c[i];
               },
               {"a", "b", "c", "s"});
  Random random(3131);
  for (i64 n : lengths) {
    auto b = random.values<double>(n, -1e3, 1e3), c = random.values<double>(n, -1e3, 1e3);
    auto a = shared_runtime().array<double>(n);
    const double s = 0.4;
    shared_runtime().region(triad).over(n).launch(a, upload<double>(b), upload<double>(c), s);
    std::vector<double> want(b.size());
    for (std::size_t k = 0; k < b.size(); ++k) want[k] = b[k] + s * c[k];
    check_elements(a, want, "triad" + length_text(n));
  }
}

TEST_CASE("battery: saxpy (f32, InOut) and index arithmetic (i32, i64) over every length") {
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
    auto y0 = random.values<float>(n, -10, 10), x = random.values<float>(n, -10, 10);
    auto y = upload<float>(y0);
    const float a = -1.75f;
    shared_runtime().region(saxpy).over(n).launch(y, upload<float>(x), a);
    auto squares = shared_runtime().array<i64>(n);
    auto mixed = shared_runtime().array<i32>(n);
    shared_runtime().region(index_math).over(n).launch(squares, mixed);

    std::vector<float> want(y0.size());
    for (std::size_t k = 0; k < y0.size(); ++k) {
      const float product = a * x[k];
      want[k] = product + y0[k];
    }
    std::vector<i64> want_squares(static_cast<std::size_t>(n));
    std::vector<i32> want_mixed(static_cast<std::size_t>(n));
    for (i64 k = 0; k < n; ++k) {
      want_squares[static_cast<std::size_t>(k)] = k * k - 3;
      want_mixed[static_cast<std::size_t>(k)] = (static_cast<i32>(k) ^ 0x55) * 7 - static_cast<i32>(k >> 2);
    }
    check_elements(y, want, "saxpy" + length_text(n));
    check_elements(squares, want_squares, "i*i-3" + length_text(n));
    check_elements(mixed, want_mixed, "i32 index arithmetic" + length_text(n));
  }
}

TEST_CASE("battery: gathers through i32 and i64 index arrays") {
  Kernel gather("gather",
                [](Out<double> out, Out<i64> out64, In<double> table, In<i64> table64, In<i32> idx, In<i64> idx64) {
                  Idx i = index(0);
                  out[i] = table[idx[i]] + table[idx64[i]];
                  out64[i] = table64[idx[idx[i] % 17]];
                },
                {"out", "out64", "table", "table64", "idx", "idx64"});
  Random random(3333);
  const i64 table_size = 4099;
  auto table = random.values<double>(table_size, -1, 1);
  auto table64 = random.mixed<i64>(table_size);
  auto atable = upload<double>(table);
  auto atable64 = upload<i64>(table64);
  for (i64 n : lengths) {
    auto idx = random.values<i32>(std::max<i64>(n, 17), 0, table_size - 1);
    auto idx64 = random.values<i64>(n, 0, table_size - 1);
    auto out = shared_runtime().array<double>(n);
    auto out64 = shared_runtime().array<i64>(n);
    // idx holds at least 17 elements (the kernel reads idx[idx[i] % 17]).
    auto aidx = upload<i32>(idx);
    shared_runtime().region(gather).over(n).launch(out, out64, atable, atable64, aidx, upload<i64>(idx64));
    std::vector<double> want(static_cast<std::size_t>(n));
    std::vector<i64> want64(static_cast<std::size_t>(n));
    for (std::size_t k = 0; k < want.size(); ++k) {
      want[k] = table[static_cast<std::size_t>(idx[k])] + table[static_cast<std::size_t>(idx64[k])];
      want64[k] = table64[static_cast<std::size_t>(idx[static_cast<std::size_t>(idx[k] % 17)])];
    }
    check_elements(out, want, "gather" + length_text(n));
    check_elements(out64, want64, "double gather" + length_text(n));
  }
}

TEST_CASE("battery: strided, reversed and scattered accesses") {
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
    for (auto [stride, offset] : {std::pair<i64, i64>{2, 1}, {3, 0}, {7, 5}}) {
      auto a = random.values<float>(n * stride + offset + 1, -5, 5);
      auto out = shared_runtime().array<float>(n);
      shared_runtime().region(strided).over(n).launch(out, upload<float>(a), stride, offset);
      std::vector<float> want(static_cast<std::size_t>(n));
      for (i64 k = 0; k < n; ++k) want[static_cast<std::size_t>(k)] = a[static_cast<std::size_t>(k * stride + offset)];
      check_elements(out, want, "stride " + std::to_string(stride) + length_text(n));
    }
    auto a = random.mixed<i32>(n);
    auto out = shared_runtime().array<i32>(n), scattered = shared_runtime().array<i32>(n);
    shared_runtime().region(reversed).over(n).launch(out, scattered, upload<i32>(a));
    std::vector<i32> want(a.size()), want_scattered(a.size());
    for (std::size_t k = 0; k < a.size(); ++k) {
      want[k] = a[a.size() - 1 - k];
      want_scattered[a.size() - 1 - k] = wrap_mul(a[k], 2);
    }
    check_elements(out, want, "reversed" + length_text(n));
    check_elements(scattered, want_scattered, "scattered in reverse" + length_text(n));
  }
}

TEST_CASE("battery: a 1-D three-point stencil with its boundaries under If") {
  Kernel stencil("stencil_1d",
                 [](Out<double> out, In<double> u) {
                   Idx i = index(0);
                   If(i == 0 || i == u.extent(0) - 1, [&] { out[i] = u[i]; }).Else([&] {
                     out[i] = 0.25 * u[i - 1] + 0.5 * u[i] + 0.25 * u[i + 1];
                   });
                 },
                 {"out", "u"});
  Random random(3535);
  for (i64 n : lengths) {
    auto u = random.values<double>(n, -1, 1);
    auto out = shared_runtime().array<double>(n);
    shared_runtime().region(stencil).over(n).launch(out, upload<double>(u));
    std::vector<double> want(u.size());
    for (std::size_t k = 0; k < u.size(); ++k)
      want[k] = k == 0 || k == u.size() - 1 ? u[k] : 0.25 * u[k - 1] + 0.5 * u[k] + 0.25 * u[k + 1];
    check_elements(out, want, "1-D stencil" + length_text(n));
  }
}

TEST_CASE("battery: 2-D transpose and five-point stencil") {
  Kernel transpose("transpose",
                   [](Out<i64, 2> t, In<i64, 2> m) {
                     Idx i = index(0), j = index(1);
                     t(j, i) = m(i, j);
                   },
                   {"t", "m"});
  Kernel stencil("stencil_2d",
                 [](Out<float, 2> out, In<float, 2> u) {
                   Idx i = index(0), j = index(1);
                   Idx rows = u.extent(0), cols = u.extent(1);
                   If(i > 0 && i < rows - 1 && j > 0 && j < cols - 1, [&] {
                     out(i, j) = u(i, j) * 4 - u(i - 1, j) - u(i + 1, j) - u(i, j - 1) - u(i, j + 1);
                   }).Else([&] { out(i, j) = u(i, j); });
                 },
                 {"out", "u"});
  Random random(3636);
  for (const auto& extents : shapes_2d) {
    const i64 rows = extents.first, cols = extents.second;
    const Shape shape(rows, cols);
    auto m = random.mixed<i64>(rows * cols);
    auto t = shared_runtime().array<i64, 2>(Shape(cols, rows));
    shared_runtime().region(transpose).over(rows, cols).launch(t, upload<i64, 2>(shape, m));
    std::vector<i64> want_t(m.size());
    for (i64 i = 0; i < rows; ++i)
      for (i64 j = 0; j < cols; ++j)
        want_t[static_cast<std::size_t>(j * rows + i)] = m[static_cast<std::size_t>(i * cols + j)];
    check_elements(t, want_t, "transpose" + shape_text(shape));

    auto u = random.values<float>(rows * cols, -1, 1);
    auto out = shared_runtime().array<float, 2>(shape);
    shared_runtime().region(stencil).over(rows, cols).launch(out, upload<float, 2>(shape, u));
    std::vector<float> want(u.size());
    auto at = [&](i64 i, i64 j) { return u[static_cast<std::size_t>(i * cols + j)]; };
    for (i64 i = 0; i < rows; ++i)
      for (i64 j = 0; j < cols; ++j) {
        float v = at(i, j);
        if (i > 0 && i < rows - 1 && j > 0 && j < cols - 1) {
          v = at(i, j) * 4.0f;
          v = v - at(i - 1, j);
          v = v - at(i + 1, j);
          v = v - at(i, j - 1);
          v = v - at(i, j + 1);
        }
        want[static_cast<std::size_t>(i * cols + j)] = v;
      }
    check_elements(out, want, "5-point stencil" + shape_text(shape));
  }
}

TEST_CASE("battery: 3-D index values, axis permutation and seven-point stencil") {
  Kernel iota("iota_3d",
              [](Out<i64, 3> out) {
                Idx i = index(0), j = index(1), k = index(2);
                out(i, j, k) = (i * 1000 + j) * 1000 + k;
              },
              {"out"});
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
  for (const auto& extents : shapes_3d) {
    const i64 n0 = extents[0], n1 = extents[1], n2 = extents[2];
    const Shape shape(n0, n1, n2);
    const auto points = static_cast<std::size_t>(shape.size());
    auto flat = [&](i64 i, i64 j, i64 k) { return static_cast<std::size_t>((i * n1 + j) * n2 + k); };

    auto numbers = shared_runtime().array<i64, 3>(shape);
    shared_runtime().region(iota).over(n0, n1, n2).launch(numbers);
    std::vector<i64> want_numbers(points);
    for (i64 i = 0; i < n0; ++i)
      for (i64 j = 0; j < n1; ++j)
        for (i64 k = 0; k < n2; ++k) want_numbers[flat(i, j, k)] = (i * 1000 + j) * 1000 + k;
    check_elements(numbers, want_numbers, "3-D index values" + shape_text(shape));

    // out has shape (n0, n1, n2); in has shape (n2, n0, n1).
    auto in = random.values<double>(static_cast<i64>(points), -1, 1);
    auto out = shared_runtime().array<double, 3>(shape);
    shared_runtime().region(permute).over(n0, n1, n2).launch(out, upload<double, 3>(Shape(n2, n0, n1), in));
    std::vector<double> want_out(points);
    for (i64 i = 0; i < n0; ++i)
      for (i64 j = 0; j < n1; ++j)
        for (i64 k = 0; k < n2; ++k) want_out[flat(i, j, k)] = in[static_cast<std::size_t>((k * n0 + i) * n1 + j)];
    check_elements(out, want_out, "3-D permutation" + shape_text(shape));

    auto u = random.values<double>(static_cast<i64>(points), -1, 1);
    auto lap = shared_runtime().array<double, 3>(shape);
    shared_runtime().region(stencil).over(n0, n1, n2).launch(lap, upload<double, 3>(shape, u));
    std::vector<double> want_lap(points);
    for (i64 i = 0; i < n0; ++i)
      for (i64 j = 0; j < n1; ++j)
        for (i64 k = 0; k < n2; ++k) {
          const bool inside = i > 0 && j > 0 && k > 0 && i < n0 - 1 && j < n1 - 1 && k < n2 - 1;
          if (!inside) continue;
          double v = u[flat(i - 1, j, k)] + u[flat(i + 1, j, k)];
          v += u[flat(i, j - 1, k)];
          v += u[flat(i, j + 1, k)];
          v += u[flat(i, j, k - 1)];
          v += u[flat(i, j, k + 1)];
          want_lap[flat(i, j, k)] = v - 6.0 * u[flat(i, j, k)];
        }
    check_elements(lap, want_lap, "7-point stencil" + shape_text(shape));
  }
}

TEST_CASE("battery: regions chained without pause, and one array passed twice") {
  Kernel affine("affine",
                [](Out<double> y, In<double> x, Val<double> a, Val<double> b) {
                  Idx i = index(0);
                  y[i] = a * x[i] + b;
                },
                {"y", "x", "a", "b"});
  Random random(3838);
  for (i64 n : lengths) {
    auto x0 = random.values<double>(n, -4, 4);
    auto x = upload<double>(x0);
    auto y = shared_runtime().array<double>(n), z = shared_runtime().array<double>(n);
    // x -> y -> z -> x (in place: the same array as y and x), each reading what the one before wrote.
    shared_runtime().region(affine).over(n).launch(y, x, 2.0, 1.0);
    shared_runtime().region(affine).over(n).launch(z, y, 0.5, -3.0);
    shared_runtime().region(affine).over(n).launch(x, z, -1.0, 0.25);
    shared_runtime().region(affine).over(n).launch(z, z, 4.0, 0.0);
    std::vector<double> want_x(x0.size()), want_z(x0.size());
    for (std::size_t k = 0; k < x0.size(); ++k) {
      const double y1 = 2.0 * x0[k] + 1.0;
      const double z1 = 0.5 * y1 + -3.0;
      want_x[k] = -1.0 * z1 + 0.25;
      want_z[k] = 4.0 * z1 + 0.0;
    }
    check_elements(x, want_x, "chained regions" + length_text(n));
    check_elements(z, want_z, "in-place region" + length_text(n));
  }
}
