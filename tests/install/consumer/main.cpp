// Built against an installed Canopy: runs two kernels and prints the result.
#include <canopy/canopy.hpp>

#include <cstdio>

#include "half_sum.hpp"

int main() {
  canopy::Runtime rt;
  const double sum = half_sum(rt);
  std::printf("sum %.1f\n", sum);
  return sum == 249750.0 ? 0 : 1;
}
