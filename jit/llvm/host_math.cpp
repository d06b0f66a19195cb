#include "internal/host_math.hpp"

#include <cmath>

namespace canopy::jit {

namespace {
constexpr double kLargeArgument = 0x1p27;
}

double host_sin_f64(double x) {
  if (std::fabs(x) < kLargeArgument) return std::sin(x);
  return static_cast<double>(std::sin(static_cast<long double>(x)));
}

double host_cos_f64(double x) {
  if (std::fabs(x) < kLargeArgument) return std::cos(x);
  return static_cast<double>(std::cos(static_cast<long double>(x)));
}

}  // namespace canopy::jit
