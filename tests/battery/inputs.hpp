// The battery's inputs (tests/battery/battery.hpp): seeded random values
// with the edge values that matter per type (zero, one, the extremes, and for
// floats NaN, infinities, signed zeros, denormals and numbers just past the
// integer limits), and the few words for printing and comparing them.
#pragma once

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

}  // namespace battery
