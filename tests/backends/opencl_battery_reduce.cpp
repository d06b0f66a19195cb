// The JIT battery's reductions and atomics (tests/jit/battery_reduce.cpp) on
// the OpenCL device, compared with the CPU device on the same inputs: sum,
// min and max over every length (the empty range gives the identities),
// min/max ignoring NaN, conditional and several reductions in one kernel, a
// dot product in f32 and f64, 2-D reductions, and atomic adds of every
// numeric type (f32 and f64 through a compare-and-swap loop) in 1-D and 2-D.
// Integer results, min and max must match exactly; float sums are summed in
// a different order on each device, so they must agree within twice the
// summation error bound n·u·Σ|x| (each is within it of the exact sum), and
// exactly where every partial sum is an integer the type holds.
#include <doctest/doctest.h>

#include <tuple>

#include <canopy/jit/opencl_c.hpp>

#include "opencl_support.hpp"

using namespace canopy;
using namespace battery;
using namespace opencl_test;

namespace {

template <class T>
auto reduce_kernel() {
  return Kernel("reduce_" + type_name<T>(),
                [](In<T> x, Sum<T> total, Min<T> lowest, Max<T> highest) {
                  Idx i = index(0);
                  total += x[i];
                  lowest.combine(x[i]);
                  highest.combine(x[i]);
                },
                {"x", "total", "lowest", "highest"});
}

/// How far two sums of `values` in F, each in some order, may be apart.
template <class F, class V>
double sum_difference_bound(const std::vector<V>& values) {
  return static_cast<double>(2 * summation_bound<F>(values));
}

}  // namespace

TEST_CASE_TEMPLATE("opencl battery: sum, min and max over every length", T, i32, i64, float, double) {
  OPENCL_DEVICE_OR_SKIP(device);
  auto kernel = reduce_kernel<T>();
  Random random(1717 + sizeof(T) + std::is_floating_point_v<T>);
  for (i64 n : lengths) {
    std::vector<T> x = std::is_integral_v<T> ? random.mixed<T>(n) : random.values<T>(n, -1000, 1000);
    if constexpr (std::is_floating_point_v<T>)
      for (std::size_t k = 0; k < x.size(); k += 11) x[k] *= static_cast<T>(1e-4);
    Tolerance tolerance;
    if constexpr (std::is_floating_point_v<T>) tolerance.reduction.emplace_back(0, sum_difference_bound<T>(x));
    const std::vector<HostArg> args{HostArray::of<T>(x), ReductionArg{}, ReductionArg{}, ReductionArg{}};
    auto [cpu, got] = compare(*device, kernel, args, range_of(n), tolerance, "over " + std::to_string(n));
    if (n == 0) {
      const auto identity = [](ir::ReduceOp op) { return backends::identity_value(op, ir::scalar_type_of<T>()); };
      CHECK(got.reductions.at(1).int_value == identity(ir::ReduceOp::Min).int_value);
      CHECK(got.reductions.at(2).float_value == identity(ir::ReduceOp::Max).float_value);
    }
  }
}

TEST_CASE_TEMPLATE("opencl battery: float sums of integers are exact in any order", T, float, double) {
  OPENCL_DEVICE_OR_SKIP(device);
  auto kernel = reduce_kernel<T>();
  Random random(1818 + sizeof(T));
  const double limit = std::is_same_v<T, float> ? 100 : 1e6;
  for (i64 n : lengths) {
    std::vector<T> x(static_cast<std::size_t>(n));
    for (auto& v : x) v = static_cast<T>(random.integer(static_cast<i64>(-limit), static_cast<i64>(limit)));
    auto [cpu, got] = compare(*device, kernel, {HostArray::of<T>(x), ReductionArg{}, ReductionArg{}, ReductionArg{}},
                              range_of(n), {}, "over " + std::to_string(n));
    double want = 0;
    for (T v : x) want += v;
    CHECK(got.reductions.at(0).float_value == static_cast<double>(static_cast<T>(want)));
  }
}

TEST_CASE_TEMPLATE("opencl battery: min and max reductions ignore NaN", T, float, double) {
  OPENCL_DEVICE_OR_SKIP(device);
  Kernel kernel("minmax_nan_" + type_name<T>(),
                [](In<T> x, Min<T> lowest, Max<T> highest) {
                  Idx i = index(0);
                  lowest.combine(x[i]);
                  highest.combine(x[i]);
                },
                {"x", "lowest", "highest"});
  Random random(1919 + sizeof(T));
  for (i64 n : lengths) {
    auto x = random.mixed<T>(n);
    for (std::size_t k = 5; k < x.size(); k += 13) x[k] = std::numeric_limits<T>::quiet_NaN();
    compare(*device, kernel, {HostArray::of<T>(x), ReductionArg{}, ReductionArg{}}, range_of(n), {},
            "over " + std::to_string(n));
  }
  // Only NaN: the identities.
  auto [cpu, got] = compare(
      *device, kernel,
      {HostArray::of<T>(std::vector<T>(3, std::numeric_limits<T>::quiet_NaN())), ReductionArg{}, ReductionArg{}},
      range_of(3));
  CHECK(got.reductions.at(0).float_value == std::numeric_limits<double>::infinity());
  CHECK(got.reductions.at(1).float_value == -std::numeric_limits<double>::infinity());
}

TEST_CASE("opencl battery: reductions under a condition, several in one kernel") {
  OPENCL_DEVICE_OR_SKIP(device);
  Kernel kernel(
      "conditional_stats",
      [](In<double> x, Val<double> threshold, Sum<i64> count, Sum<double> above, Max<i32> last, Min<float> smallest) {
        Idx i = index(0);
        If(x[i] > threshold, [&] {
          count += 1;
          above += x[i];
          last.combine(cast<i32>(i));
        });
        smallest.combine(cast<float>(x[i]));
      },
      {"x", "threshold", "count", "above", "last", "smallest"});
  Random random(2020);
  for (i64 n : lengths) {
    auto x = random.values<double>(n, -50, 50);
    Tolerance tolerance;
    tolerance.reduction.emplace_back(1, sum_difference_bound<double>(x));
    compare(*device, kernel,
            {HostArray::of<double>(x), scalar(20.5), ReductionArg{}, ReductionArg{}, ReductionArg{}, ReductionArg{}},
            range_of(n), tolerance, "over " + std::to_string(n));
  }
}

TEST_CASE("opencl battery: a dot product in f32 and in f64") {
  OPENCL_DEVICE_OR_SKIP(device);
  Kernel kernel("dot",
                [](In<float> a, In<float> b, Sum<float> narrow, Sum<double> wide) {
                  Idx i = index(0);
                  narrow += a[i] * b[i];
                  wide += cast<double>(a[i]) * cast<double>(b[i]);
                },
                {"a", "b", "narrow", "wide"});
  Random random(2121);
  for (i64 n : lengths) {
    auto a = random.values<float>(n, -2, 2), b = random.values<float>(n, -2, 2);
    std::vector<float> products(a.size());
    std::vector<double> wide_products(a.size());
    for (std::size_t k = 0; k < a.size(); ++k) {
      products[k] = a[k] * b[k];
      wide_products[k] = static_cast<double>(a[k]) * static_cast<double>(b[k]);
    }
    Tolerance tolerance;
    tolerance.reduction.emplace_back(0, sum_difference_bound<float>(products));
    tolerance.reduction.emplace_back(1, sum_difference_bound<double>(wide_products));
    compare(*device, kernel, {HostArray::of<float>(a), HostArray::of<float>(b), ReductionArg{}, ReductionArg{}},
            range_of(n), tolerance, "over " + std::to_string(n));
  }
}

TEST_CASE("opencl battery: reductions over a 2-D range, and over 2-D and 3-D sub-ranges") {
  OPENCL_DEVICE_OR_SKIP(device);
  Kernel kernel("reduce_2d",
                [](In<double, 2> m, Sum<double> total, Max<double> peak, Min<i64> first_negative_row) {
                  Idx i = index(0), j = index(1);
                  total += m(i, j);
                  peak.combine(m(i, j));
                  If(m(i, j) < 0.0, [&] { first_negative_row.combine(i); });
                },
                {"m", "total", "peak", "first_negative_row"});
  Random random(2222);
  for (auto [rows, cols] : {std::pair<i64, i64>{0, 4}, {4, 0}, {1, 1}, {3, 17}, {1003, 3}, {257, 129}}) {
    std::vector<double> m(static_cast<std::size_t>(rows * cols));
    for (auto& v : m) v = static_cast<double>(random.integer(-1000, 1000)) * (random.integer(0, 20) == 0 ? -1 : 1);
    for (auto& v : m) v = v < 0 && random.integer(0, 30) != 0 ? -v : v;
    const auto array = HostArray::of<double>(m, {rows, cols, 1}, 2);
    const std::string what = std::to_string(rows) + "x" + std::to_string(cols);
    compare(*device, kernel, {array, ReductionArg{}, ReductionArg{}, ReductionArg{}}, range_of({0, 0}, {rows, cols}),
            {}, what);
    if (rows > 2 && cols > 2)
      compare(*device, kernel, {array, ReductionArg{}, ReductionArg{}, ReductionArg{}},
              range_of({1, 2}, {rows - 1, cols - 1}), {}, what + " inside");
  }
  Kernel cube("reduce_3d",
              [](In<i32, 3> v, Sum<i64> total, Max<i64> far) {
                Idx i = index(0), j = index(1), k = index(2);
                total += cast<i64>(v(i, j, k)) * (i + 2 * j + 3 * k);
                far.combine(i * 10000 + j * 100 + k);
              },
              {"v", "total", "far"});
  const i64 n0 = 9, n1 = 13, n2 = 21;
  const auto v = HostArray::of<i32>(random.values<i32>(n0 * n1 * n2, -1000, 1000), {n0, n1, n2}, 3);
  for (auto range : {range_of({0, 0, 0}, {n0, n1, n2}), range_of({2, 3, 4}, {7, 11, 20}),
                     range_of({8, 0, 20}, {9, n1, 21}), range_of({3, 3, 3}, {3, 9, 9})}) {
    auto [cpu, got] = compare(*device, cube, {v, ReductionArg{}, ReductionArg{}}, range);
    if (!range.empty())
      CHECK(got.reductions.at(1).int_value ==
            (range.end[0] - 1) * 10000 + (range.end[1] - 1) * 100 + (range.end[2] - 1));
  }
}

TEST_CASE("opencl battery: atomic adds from many points into a few elements, every numeric type") {
  OPENCL_DEVICE_OR_SKIP(device);
  Kernel kernel("histogram",
                [](InOut<i32> h32, InOut<i64> h64, InOut<float> hf, InOut<double> hd, InOut<double> hx, In<i32> bin,
                   In<i32> weight, In<double> x) {
                  Idx i = index(0);
                  atomic_add(h32[bin[i]], weight[i]);
                  atomic_add(h64[bin[i]], cast<i64>(weight[i]) * 1000000000);
                  atomic_add(hf[bin[i]], cast<float>(weight[i]));
                  atomic_add(hd[bin[i]], cast<double>(weight[i]) * 0.5);
                  atomic_add(hx[bin[i]], x[i]);
                },
                {"h32", "h64", "hf", "hd", "hx", "bin", "weight", "x"});
  Random random(2323);
  const i64 bins = 7;
  for (i64 n : lengths) {
    std::vector<i32> start(bins);
    for (i64 b = 0; b < bins; ++b) start[static_cast<std::size_t>(b)] = static_cast<i32>(1000 + b);
    // Multiples of 2^-10 below 2: every partial sum is exact, in any order.
    std::vector<double> x(static_cast<std::size_t>(n));
    for (auto& v : x) v = static_cast<double>(random.integer(-2048, 2048)) / 1024;
    compare(*device, kernel,
            {HostArray::of<i32>(start), HostArray::of<i64>(start), HostArray::of<float>(start),
             HostArray::of<double>(start), HostArray::of<double>(start),
             HostArray::of<i32>(random.values<i32>(n, 0, bins - 1)),
             HostArray::of<i32>(random.values<i32>(n, -100, 100)), HostArray::of<double>(x)},
            range_of(n), {}, "over " + std::to_string(n));
  }
}

TEST_CASE("opencl battery: atomic adds into a 2-D array, and from a 2-D range") {
  OPENCL_DEVICE_OR_SKIP(device);
  Kernel histogram("histogram_2d",
                   [](InOut<i64, 2> h, In<i32> a, In<i32> b) {
                     Idx i = index(0);
                     atomic_add(h(a[i], b[i]), 1);
                     atomic_add(h(0, 0), i);
                   },
                   {"h", "a", "b"});
  Kernel column_sums("column_sums",
                     [](InOut<double> sums, In<double, 2> m) {
                       Idx i = index(0), j = index(1);
                       atomic_add(sums[j], m(i, j));
                     },
                     {"sums", "m"});
  Random random(2424);
  {
    const i64 n = 100003, rows = 5, cols = 9;
    auto [cpu, got] = compare(*device, histogram,
                              {HostArray::filled<i64>(rows * cols, 0, {rows, cols, 1}, 2),
                               HostArray::of<i32>(random.values<i32>(n, 0, rows - 1)),
                               HostArray::of<i32>(random.values<i32>(n, 0, cols - 1))},
                              range_of(n));
    i64 total = 0;
    for (i64 count : values_of<i64>(got.arrays[0])) total += count;
    CHECK(total == n + n * (n - 1) / 2);
  }
  for (auto [rows, cols] : {std::pair<i64, i64>{0, 3}, {1, 1}, {1003, 7}, {3, 1003}, {20011, 5}}) {
    std::vector<double> m(static_cast<std::size_t>(rows * cols));
    for (auto& v : m) v = static_cast<double>(random.integer(-50, 50));
    compare(*device, column_sums, {HostArray::filled<double>(cols, 0), HostArray::of<double>(m, {rows, cols, 1}, 2)},
            range_of({0, 0}, {rows, cols}), {}, std::to_string(rows) + "x" + std::to_string(cols));
  }
}

TEST_CASE("opencl battery: both ways of walking a reduction's points give the CPU's results") {
  OPENCL_DEVICE_OR_SKIP(device);
  // The device runs one walk (chunked on CPUs, strided on GPUs); build the
  // other from its own source and check both, in one to three dimensions.
  Kernel stats("walk_stats",
               [](In<i64> x, Sum<i64> total, Min<i64> lowest, Max<i32> last) {
                 Idx i = index(0);
                 total += x[i] * (i + 1);
                 lowest.combine(x[i]);
                 last.combine(cast<i32>(i));
               },
               {"x", "total", "lowest", "last"});
  Kernel cube("walk_cube",
              [](In<i32, 3> v, Sum<i64> total) {
                Idx i = index(0), j = index(1), k = index(2);
                total += cast<i64>(v(i, j, k)) * (i - 2 * j + 3 * k);
              },
              {"v", "total"});
  Random random(2525);
  const auto x = HostArray::of<i64>(random.mixed<i64>(100003));
  const auto v = HostArray::of<i32>(random.values<i32>(9 * 13 * 21, -1000, 1000), {9, 13, 21}, 3);
  for (auto walk : {jit::ReductionWalk::Chunked, jit::ReductionWalk::Strided}) {
    const std::string name = walk == jit::ReductionWalk::Chunked ? "chunked" : "strided";
    for (auto [kernel, args, range] :
         {std::tuple{optimized(stats), std::vector<HostArg>{x, ReductionArg{}, ReductionArg{}, ReductionArg{}},
                     range_of({17}, {100000})},
          std::tuple{optimized(cube), std::vector<HostArg>{v, ReductionArg{}}, range_of({1, 2, 3}, {9, 12, 20})}}) {
      const Results cpu = run_on_cpu(kernel, args, range);
      auto program = device->compile_source(kernel, jit::opencl_c_source(*kernel, {walk}));
      std::vector<backends::Buffer> buffers;
      std::vector<backends::KernelArg> launch;
      for (const auto& arg : args) {
        if (const auto* array = std::get_if<HostArray>(&arg)) {
          buffers.push_back(device->allocate(array->bytes.size()));
          device->copy_in(buffers.back(), 0, array->bytes.data(), array->bytes.size());
          launch.push_back(ArrayArg{buffers.back().handle, array->extents});
        } else {
          launch.push_back(ReductionArg{});
        }
      }
      Results got;
      got.arrays.resize(args.size());
      got.reductions = device->run(*program, launch, range);
      for (auto& buffer : buffers) device->free(buffer);
      check_reductions(cpu, got, {}, kernel->name + " " + name);
    }
  }
}
