// Battery, reductions and atomics: sum, min and max over i32, i64, f32 and
// f64 for every length of the battery (the empty range gives each operator's
// identity), min/max ignoring NaN, conditional reductions, several reductions
// in one kernel, a 2-D reduction, and atomic adds from many points into few
// elements (1-D and 2-D kernels and arrays). Integer results are exact (sums
// wrap); float sums are exact where every partial sum is an integer the type
// holds, and otherwise within the summation error bound n·u·Σ|x|, because the
// CPU sums per-thread partials in a fixed order that is not the sequential one.
#include <doctest/doctest.h>

#include <tuple>

#include "battery_support.hpp"

using namespace canopy;
using namespace battery;

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

// The identities of ir::identity_of: min starts at the largest value (+inf
// for floats), max at the smallest (-inf).
template <class T>
T min_identity() {
  if constexpr (std::is_floating_point_v<T>)
    return std::numeric_limits<T>::infinity();
  else
    return std::numeric_limits<T>::max();
}
template <class T>
T max_identity() {
  if constexpr (std::is_floating_point_v<T>)
    return -std::numeric_limits<T>::infinity();
  else
    return std::numeric_limits<T>::lowest();
}

template <class T>
void check_sum(T got, const std::vector<T>& x, const std::string& what) {
  long double exact = 0;
  for (T v : x) exact += v;
  const long double bound = summation_bound<T>(x) + std::numeric_limits<T>::epsilon() * std::fabs(exact);
  INFO(what, ": got ", show(got), ", exact ", show(static_cast<double>(exact)), ", bound ",
       show(static_cast<double>(bound)));
  CHECK(std::fabs(static_cast<long double>(got) - exact) <= bound);
}

}  // namespace

TEST_CASE_TEMPLATE("battery: sum, min and max over every length", T, i32, i64, float, double) {
  auto kernel = reduce_kernel<T>();
  Random random(1717 + sizeof(T) + std::is_floating_point_v<T>);
  for (i64 n : lengths) {
    const std::string what = type_name<T>() + " over " + std::to_string(n);
    // Integers of any size (the sum wraps); floats of mixed signs and magnitudes.
    std::vector<T> x = std::is_integral_v<T> ? random.mixed<T>(n) : random.values<T>(n, -1000, 1000);
    if constexpr (std::is_floating_point_v<T>)
      for (std::size_t k = 0; k < x.size(); k += 11) x[k] *= static_cast<T>(1e-4);
    auto [total, lowest, highest] = shared_runtime().region(kernel).over(n).reduce(upload<T>(x));

    T want_lowest = min_identity<T>(), want_highest = max_identity<T>();
    for (T v : x) {
      want_lowest = std::min(want_lowest, v);
      want_highest = std::max(want_highest, v);
    }
    CHECK_MESSAGE(lowest == want_lowest, what);
    CHECK_MESSAGE(highest == want_highest, what);
    if constexpr (std::is_integral_v<T>) {
      T want_total = 0;
      for (T v : x) want_total = wrap_add(want_total, v);
      CHECK_MESSAGE(total == want_total, what);
    } else {
      check_sum(total, x, what + " sum");
    }
    if (n == 0) {
      CHECK(total == T(0));
      CHECK(lowest == min_identity<T>());
      CHECK(highest == max_identity<T>());
    }
  }
}

TEST_CASE_TEMPLATE("battery: float sums of integers are exact in any order", T, float, double) {
  auto kernel = reduce_kernel<T>();
  Random random(1818 + sizeof(T));
  // Every partial sum stays an integer below 2^24 (f32) or 2^53 (f64).
  const double limit = std::is_same_v<T, float> ? 100 : 1e6;
  for (i64 n : lengths) {
    std::vector<T> x(static_cast<std::size_t>(n));
    for (auto& v : x) v = static_cast<T>(random.integer(static_cast<i64>(-limit), static_cast<i64>(limit)));
    auto [total, lowest, highest] = shared_runtime().region(kernel).over(n).reduce(upload<T>(x));
    double want = 0;
    for (T v : x) want += v;
    CHECK_MESSAGE(total == static_cast<T>(want), (type_name<T>() + " over " + std::to_string(n)));
    (void)lowest;
    (void)highest;
  }
}

TEST_CASE_TEMPLATE("battery: min and max reductions ignore NaN", T, float, double) {
  Kernel kernel("minmax_nan_" + type_name<T>(),
                [](In<T> x, Min<T> lowest, Max<T> highest) {
                  Idx i = index(0);
                  lowest.combine(x[i]);
                  highest.combine(x[i]);
                },
                {"x", "lowest", "highest"});
  Random random(1919 + sizeof(T));
  for (i64 n : lengths) {
    auto x = random.mixed<T>(n);  // NaN, infinities, signed zeros among them
    for (std::size_t k = 5; k < x.size(); k += 13) x[k] = std::numeric_limits<T>::quiet_NaN();
    auto [lowest, highest] = shared_runtime().region(kernel).over(n).reduce(upload<T>(x));
    T want_lowest = min_identity<T>(), want_highest = max_identity<T>();
    for (T v : x) {
      want_lowest = std::fmin(want_lowest, v);
      want_highest = std::fmax(want_highest, v);
    }
    const std::string what = type_name<T>() + " over " + std::to_string(n);
    CHECK_MESSAGE(same_value(lowest, want_lowest), what);
    CHECK_MESSAGE(same_value(highest, want_highest), what);
  }
  // Only NaN: the identities.
  auto [lowest, highest] =
      shared_runtime().region(kernel).over(3).reduce(upload<T>(std::vector<T>(3, std::numeric_limits<T>::quiet_NaN())));
  CHECK(lowest == std::numeric_limits<T>::infinity());
  CHECK(highest == -std::numeric_limits<T>::infinity());
}

TEST_CASE("battery: reductions under a condition, several in one kernel") {
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
    const double threshold = 20.5;
    auto [count, above, last, smallest] = shared_runtime().region(kernel).over(n).reduce(upload<double>(x), threshold);
    i64 want_count = 0;
    i32 want_last = std::numeric_limits<i32>::lowest();
    float want_smallest = std::numeric_limits<float>::infinity();
    std::vector<double> selected;
    for (std::size_t k = 0; k < x.size(); ++k) {
      if (x[k] > threshold) {
        ++want_count;
        selected.push_back(x[k]);
        want_last = static_cast<i32>(k);
      }
      want_smallest = std::min(want_smallest, static_cast<float>(x[k]));
    }
    const std::string what = "over " + std::to_string(n);
    CHECK_MESSAGE(count == want_count, what);
    CHECK_MESSAGE(last == want_last, what);
    CHECK_MESSAGE(smallest == want_smallest, what);
    check_sum(above, selected, "conditional sum " + what);
  }
}

TEST_CASE("battery: a dot product in f32 and in f64") {
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
    auto [narrow, wide] = shared_runtime().region(kernel).over(n).reduce(upload<float>(a), upload<float>(b));
    std::vector<float> products(a.size());
    std::vector<double> wide_products(a.size());
    for (std::size_t k = 0; k < a.size(); ++k) {
      products[k] = a[k] * b[k];
      wide_products[k] = static_cast<double>(a[k]) * static_cast<double>(b[k]);  // exact
    }
    check_sum(narrow, products, "f32 dot over " + std::to_string(n));
    check_sum(wide, wide_products, "f64 dot over " + std::to_string(n));
  }
}

TEST_CASE("battery: reductions over a 2-D range") {
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
    // Mostly positive so that the first negative row is not always row 0.
    for (auto& v : m) v = v < 0 && random.integer(0, 30) != 0 ? -v : v;
    auto [total, peak, first_negative_row] =
        shared_runtime().region(kernel).over(rows, cols).reduce(upload<double, 2>(Shape(rows, cols), m));
    double want_total = 0, want_peak = -std::numeric_limits<double>::infinity();
    i64 want_row = std::numeric_limits<i64>::max();
    for (i64 r = 0; r < rows; ++r)
      for (i64 c = 0; c < cols; ++c) {
        const double v = m[static_cast<std::size_t>(r * cols + c)];
        want_total += v;  // integers: exact in any order
        want_peak = std::max(want_peak, v);
        if (v < 0) want_row = std::min(want_row, r);
      }
    const std::string what = std::to_string(rows) + "x" + std::to_string(cols);
    CHECK_MESSAGE(total == want_total, what);
    CHECK_MESSAGE(peak == want_peak, what);
    CHECK_MESSAGE(first_negative_row == want_row, what);
  }
}

TEST_CASE("battery: atomic adds from many points into a few elements, every numeric type") {
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
    auto bin = random.values<i32>(n, 0, bins - 1);
    auto weight = random.values<i32>(n, -100, 100);
    auto x = random.values<double>(n, -1, 1);
    std::vector<i32> start(bins);
    for (i64 b = 0; b < bins; ++b) start[static_cast<std::size_t>(b)] = static_cast<i32>(1000 + b);
    auto h32 = upload<i32>(start);
    auto h64 = upload<i64>(start);
    auto hf = upload<float>(start);
    auto hd = upload<double>(start);
    auto hx = upload<double>(start);
    shared_runtime().region(kernel).over(n).launch(h32, h64, hf, hd, hx, upload<i32>(bin), upload<i32>(weight),
                                                   upload<double>(x));

    std::vector<i32> want32(start);
    std::vector<i64> want64(start.begin(), start.end());
    std::vector<float> wantf(start.begin(), start.end());
    std::vector<double> wantd(start.begin(), start.end());
    std::vector<std::vector<double>> added(bins);
    for (std::size_t k = 0; k < bin.size(); ++k) {
      const auto b = static_cast<std::size_t>(bin[k]);
      want32[b] += weight[k];
      want64[b] += static_cast<i64>(weight[k]) * 1000000000;
      wantf[b] += static_cast<float>(weight[k]);  // integers below 2^24: exact in any order
      wantd[b] += weight[k] * 0.5;                // halves: exact in any order
      added[b].push_back(x[k]);
    }
    const std::string over = " over " + std::to_string(n);
    check_elements(h32, want32, "atomic i32" + over);
    check_elements(h64, want64, "atomic i64" + over);
    check_elements(hf, wantf, "atomic f32" + over);
    check_elements(hd, wantd, "atomic f64" + over);
    auto got = hx.host();
    for (std::size_t b = 0; b < added.size(); ++b) {
      added[b].push_back(static_cast<double>(start[b]));
      check_sum(got[static_cast<i64>(b)], added[b], "atomic f64 of fractions, bin " + std::to_string(b) + over);
    }
  }
}

TEST_CASE("battery: atomic adds into a 2-D array, and from a 2-D range") {
  Kernel histogram("histogram_2d",
                   [](InOut<i64, 2> h, In<i32> a, In<i32> b) {
                     Idx i = index(0);
                     atomic_add(h(a[i], b[i]), 1);
                     atomic_add(h(0, 0), i);  // every point into one element
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
    auto a = random.values<i32>(n, 0, rows - 1), b = random.values<i32>(n, 0, cols - 1);
    auto h = shared_runtime().array<i64, 2>(Shape(rows, cols));
    shared_runtime().region(histogram).over(n).launch(h, upload<i32>(a), upload<i32>(b));
    std::vector<i64> want(static_cast<std::size_t>(rows * cols));
    for (std::size_t k = 0; k < a.size(); ++k) {
      want[static_cast<std::size_t>(a[k] * cols + b[k])] += 1;
      want[0] += static_cast<i64>(k);
    }
    check_elements(h, want, "2-D histogram");
  }
  for (auto [rows, cols] : {std::pair<i64, i64>{0, 3}, {1, 1}, {1003, 7}, {3, 1003}, {20011, 5}}) {
    std::vector<double> m(static_cast<std::size_t>(rows * cols));
    for (auto& v : m) v = static_cast<double>(random.integer(-50, 50));  // integers: exact in any order
    auto sums = shared_runtime().array<double>(cols);
    shared_runtime().region(column_sums).over(rows, cols).launch(sums, upload<double, 2>(Shape(rows, cols), m));
    std::vector<double> want(static_cast<std::size_t>(cols));
    for (i64 r = 0; r < rows; ++r)
      for (i64 c = 0; c < cols; ++c) want[static_cast<std::size_t>(c)] += m[static_cast<std::size_t>(r * cols + c)];
    check_elements(sums, want, "column sums of " + std::to_string(rows) + "x" + std::to_string(cols));
  }
}
