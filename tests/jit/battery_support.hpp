// Shared by the battery tests (tests/jit/battery_*.cpp): DSL kernels
// JIT-compiled and run through the public runtime, each compared element by
// element with plain C++ that computes the same thing. This header holds what
// every file of the battery needs: one Runtime for the executable, seeded
// random inputs (with the edge values that matter per type), uploading host
// data, the IR's run-time semantics written in plain C++ (ir/expr.hpp), and
// the comparisons (exact, ULP-bounded, or within a summation error bound).
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <canopy/canopy.hpp>

namespace battery {

using i32 = std::int32_t;
using i64 = std::int64_t;

/// The runtime every battery test launches on (one per process: its worker
/// and thread pool start once).
inline canopy::Runtime& shared_runtime() {
  static canopy::Runtime rt;
  return rt;
}

/// The lengths the 1-D tests run over: empty, shorter than a vector, not a
/// multiple of any vector width, and large enough that several threads share
/// the range (the CPU device runs small ranges on one thread).
inline const std::vector<i64> lengths{0, 1, 3, 17, 1003, 4099, 100003};

/// Host-side element type for a kernel type: bool is kept as one byte so that
/// std::vector<bool>'s packing never gets in the way.
template <class T>
using host_t = std::conditional_t<std::is_same_v<T, bool>, std::uint8_t, T>;

/// A random generator with a fixed seed, so that every run sees the same inputs.
class Random {
 public:
  explicit Random(std::uint64_t seed) : engine_(seed) {}

  /// A uniform integer in [lo, hi].
  i64 integer(i64 lo, i64 hi) { return std::uniform_int_distribution<i64>(lo, hi)(engine_); }
  /// A uniform double in [lo, hi).
  double real(double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(engine_); }
  bool coin() { return integer(0, 1) == 1; }

  /// n values of T over [lo, hi] (integers) or [lo, hi) (floats); bools are coins.
  template <class T>
  std::vector<host_t<T>> values(i64 n, double lo, double hi) {
    std::vector<host_t<T>> v(static_cast<std::size_t>(n));
    for (auto& x : v) {
      if constexpr (std::is_same_v<T, bool>)
        x = coin();
      else if constexpr (std::is_integral_v<T>)
        x = static_cast<T>(integer(static_cast<i64>(lo), static_cast<i64>(hi)));
      else
        x = static_cast<T>(real(lo, hi));
    }
    return v;
  }

  /// n values of T that mix the type's edge values (zero, one, minus one, the
  /// extremes, and for floats NaN, infinities, signed zeros, tiny and huge
  /// numbers) with random values of every magnitude.
  template <class T>
  std::vector<host_t<T>> mixed(i64 n) {
    std::vector<host_t<T>> v(static_cast<std::size_t>(n));
    const auto& edges = edge_values<T>();
    for (std::size_t k = 0; k < v.size(); ++k) {
      if (k < edges.size() * 3 && k % 3 == 0)
        v[k] = edges[k / 3];  // every edge value appears, spread out
      else if (integer(0, 4) == 0)
        v[k] = edges[static_cast<std::size_t>(integer(0, static_cast<i64>(edges.size()) - 1))];
      else
        v[k] = any<T>();
    }
    return v;
  }

  /// One value of T from the whole range of magnitudes.
  template <class T>
  host_t<T> any() {
    if constexpr (std::is_same_v<T, bool>) {
      return coin();
    } else if constexpr (std::is_integral_v<T>) {
      // Small values often (so that divisions and shifts are interesting), any bits otherwise.
      switch (integer(0, 2)) {
        case 0: return static_cast<T>(integer(-100, 100));
        case 1: return static_cast<T>(integer(-100000, 100000));
        default:
          return static_cast<T>(std::uniform_int_distribution<i64>(std::numeric_limits<T>::min(),
                                                                   std::numeric_limits<T>::max())(engine_));
      }
    } else {
      const double magnitude = std::pow(2.0, real(-30, 70));
      return static_cast<T>((coin() ? 1 : -1) * real(0.5, 1.0) * magnitude);
    }
  }

  template <class T>
  static const std::vector<host_t<T>>& edge_values() {
    using L = std::numeric_limits<T>;
    if constexpr (std::is_same_v<T, bool>) {
      static const std::vector<host_t<T>> e{0, 1};
      return e;
    } else if constexpr (std::is_integral_v<T>) {
      static const std::vector<host_t<T>> e{0, 1, -1, 2, -2, 7, L::min(), L::max(), L::min() + 1, L::max() - 1};
      return e;
    } else {
      static const std::vector<host_t<T>> e{T(0),
                                            T(-0.0),
                                            T(1),
                                            T(-1),
                                            T(0.5),
                                            T(-0.5),
                                            T(2.5),
                                            T(-2.5),
                                            T(1e-3),
                                            L::quiet_NaN(),
                                            L::infinity(),
                                            -L::infinity(),
                                            L::max(),
                                            L::lowest(),
                                            L::min(),
                                            L::denorm_min(),
                                            T(2147483648.0),
                                            T(-2147483648.0),
                                            T(2147483520.0),
                                            T(9.2233720368547758e18),
                                            T(-9.2233720368547758e18),
                                            T(4294967296.0),
                                            T(-0.99),
                                            T(123456.75)};
      return e;
    }
  }

 private:
  std::mt19937_64 engine_;
};

/// The IR's name of kernel type T ("i32", "f64", ...), for kernel names.
template <class T>
std::string type_name() {
  return std::string(canopy::ir::name_of(canopy::ir::scalar_type_of<T>()));
}

/// Operands a and b of n elements: first every pair of T's edge values (so
/// that MIN / -1, x / 0, inf - inf and the like all occur), then mixed values.
template <class T>
std::pair<std::vector<host_t<T>>, std::vector<host_t<T>>> operand_pairs(Random& random, i64 n) {
  auto a = random.mixed<T>(n), b = random.mixed<T>(n);
  const auto& edges = Random::edge_values<T>();
  std::size_t k = 0;
  for (auto x : edges)
    for (auto y : edges)
      if (k < a.size()) {
        a[k] = x;
        b[k] = y;
        ++k;
      }
  return {std::move(a), std::move(b)};
}

/// A new array of `shape` holding `values` (row-major).
template <class T, int Rank = 1, class V>
canopy::Array<T, Rank> upload(canopy::Shape shape, const std::vector<V>& values) {
  auto array = shared_runtime().array<T, Rank>(shape);
  auto host = array.host();
  REQUIRE(static_cast<i64>(values.size()) == host.size());
  for (std::size_t k = 0; k < values.size(); ++k) host.data()[k] = static_cast<T>(values[k]);
  return array;
}
template <class T, class V>
canopy::Array<T> upload(const std::vector<V>& values) {
  return upload<T, 1>(canopy::Shape(static_cast<i64>(values.size())), values);
}

// ---- the IR's semantics in plain C++ (see ir/expr.hpp) -------------------

template <class T>
using unsigned_of = std::make_unsigned_t<T>;

template <class T>
T wrap_add(T a, T b) {
  return static_cast<T>(static_cast<unsigned_of<T>>(a) + static_cast<unsigned_of<T>>(b));
}
template <class T>
T wrap_sub(T a, T b) {
  return static_cast<T>(static_cast<unsigned_of<T>>(a) - static_cast<unsigned_of<T>>(b));
}
template <class T>
T wrap_mul(T a, T b) {
  return static_cast<T>(static_cast<unsigned_of<T>>(a) * static_cast<unsigned_of<T>>(b));
}
template <class T>
T wrap_neg(T a) {
  return wrap_sub<T>(0, a);
}
/// x / 0 == 0 and MIN / -1 == MIN.
template <class T>
T ir_div(T a, T b) {
  if (b == 0) return 0;
  if (a == std::numeric_limits<T>::min() && b == -1) return a;
  return a / b;
}
/// x % 0 == 0 and MIN % -1 == 0.
template <class T>
T ir_rem(T a, T b) {
  if (b == 0 || (a == std::numeric_limits<T>::min() && b == -1)) return 0;
  return a % b;
}
/// Shift amounts are taken modulo the bit width; >> is arithmetic.
template <class T>
T ir_shl(T a, T b) {
  const int amount = static_cast<int>(b & (sizeof(T) * 8 - 1));
  return static_cast<T>(static_cast<unsigned_of<T>>(a) << amount);
}
template <class T>
T ir_shr(T a, T b) {
  const int amount = static_cast<int>(b & (sizeof(T) * 8 - 1));
  return static_cast<T>(a >> amount);
}
/// abs(MIN) wraps to MIN.
template <class T>
T ir_abs(T a) {
  if constexpr (std::is_floating_point_v<T>)
    return std::fabs(a);
  else
    return a < 0 ? wrap_neg(a) : a;
}

/// The IR's cast from F to T: floats to integers round toward zero and
/// saturate, NaN gives 0; to bool compares with zero; bool gives 0 or 1.
template <class T, class F>
T ir_cast(F x) {
  if constexpr (std::is_same_v<T, bool>) {
    return x != F(0);  // NaN != 0 is true
  } else if constexpr (std::is_integral_v<T> && std::is_floating_point_v<F>) {
    if (std::isnan(x)) return 0;
    // The limits of T as F: MIN is a power of two (exact); MAX + 1 is too.
    const F low = static_cast<F>(std::numeric_limits<T>::min());
    const F high = -low;  // 2^(bits-1), one above MAX
    if (x <= low) return std::numeric_limits<T>::min();
    if (x >= high) return std::numeric_limits<T>::max();
    return static_cast<T>(x);
  } else {
    return static_cast<T>(x);
  }
}

// ---- comparisons ----------------------------------------------------------

/// Equal values, or NaN both (its sign and payload are not compared); +0 == -0.
template <class T>
bool same_value(T got, T want) {
  if constexpr (std::is_floating_point_v<T>)
    return got == want || (std::isnan(got) && std::isnan(want));
  else
    return got == want;
}

/// The distance in units in the last place between two floats of type F
/// (0 for equal values and for two NaNs; the largest value for a NaN and a number).
template <class F>
std::uint64_t ulp_distance(F a, F b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b) ? 0 : ~std::uint64_t{0};
  if (a == b) return 0;
  using Bits = std::conditional_t<sizeof(F) == 4, std::uint32_t, std::uint64_t>;
  constexpr Bits sign = Bits{1} << (sizeof(F) * 8 - 1);
  auto key = [](F x) {
    Bits bits;
    std::memcpy(&bits, &x, sizeof x);
    // Orders all floats like the unsigned integers: negatives below positives.
    return static_cast<std::uint64_t>((bits & sign) ? static_cast<Bits>(~bits) : static_cast<Bits>(bits | sign));
  };
  const auto ka = key(a), kb = key(b);
  return ka > kb ? ka - kb : kb - ka;
}

template <class T>
std::string show(T value) {
  std::ostringstream out;
  out.precision(std::numeric_limits<double>::max_digits10);
  if constexpr (std::is_same_v<T, bool> || std::is_same_v<T, std::uint8_t>)
    out << static_cast<int>(value);
  else
    out << value;
  return out.str();
}

/// Checks every element of `array` against `want` (same value, NaN matching
/// NaN); reports how many differ and the first that does.
template <class T, int Rank, class W>
void check_elements(const canopy::Array<T, Rank>& array, const std::vector<W>& want, const std::string& what) {
  auto got = array.host();
  REQUIRE(got.size() == static_cast<i64>(want.size()));
  i64 wrong = 0, first = -1;
  for (i64 k = 0; k < got.size(); ++k)
    if (!same_value<T>(got.data()[k], static_cast<T>(want[static_cast<std::size_t>(k)]))) {
      if (first < 0) first = k;
      ++wrong;
    }
  std::string where;
  if (wrong > 0)
    where = "first at element " + std::to_string(first) + ": got " + show(got.data()[first]) + ", want " +
            show(static_cast<T>(want[static_cast<std::size_t>(first)]));
  INFO(what, ": ", wrong, " wrong element(s) of ", got.size(), "; ", where);
  CHECK(wrong == 0);
}

/// Checks every element of a float array against `want` within `max_ulp` units
/// in the last place; returns the largest distance seen.
template <class T, int Rank>
std::uint64_t check_ulp(const canopy::Array<T, Rank>& array, const std::vector<T>& want, std::uint64_t max_ulp,
                        const std::string& what) {
  auto got = array.host();
  REQUIRE(got.size() == static_cast<i64>(want.size()));
  std::uint64_t worst = 0;
  i64 worst_at = -1;
  for (i64 k = 0; k < got.size(); ++k) {
    const auto d = ulp_distance(got.data()[k], want[static_cast<std::size_t>(k)]);
    if (d > worst || worst_at < 0) {
      worst = d;
      worst_at = k;
    }
  }
  std::string where;
  if (worst_at >= 0)
    where = "worst at element " + std::to_string(worst_at) + ": got " + show(got.data()[worst_at]) + ", want " +
            show(want[static_cast<std::size_t>(worst_at)]);
  INFO(what, ": largest error ", worst, " ulp (bound ", max_ulp, "); ", where);
  CHECK(worst <= max_ulp);
  return worst;
}

/// A bound on the error of any order of summing `values` in type F: n·u·Σ|x|
/// (u the unit roundoff of F), the classic bound for recursive summation,
/// which also covers per-thread partial sums combined afterwards.
template <class F, class V>
long double summation_bound(const std::vector<V>& values) {
  long double magnitude = 0;
  for (auto v : values) magnitude += std::fabs(static_cast<long double>(v));
  const long double unit = std::numeric_limits<F>::epsilon() / 2;
  return static_cast<long double>(values.size()) * unit * magnitude;
}

}  // namespace battery
