// What both consumers compute: an array x[i] = i / 2 of 1000 elements,
// filled and summed by two kernels on `rt` (0.5 * (0 + 1 + ... + 999) = 249750).
#pragma once

#include <canopy/canopy.hpp>

inline double half_sum(canopy::Runtime& rt) {
  using namespace canopy;
  const std::int64_t n = 1000;
  auto x = rt.array<double>(n);
  Kernel fill("fill", [](Out<double> x) {
    Idx i = index(0);
    x[i] = cast<double>(i) * 0.5;
  });
  Kernel total("total", [](In<double> x, Sum<double> s) { s += x[index(0)]; });
  rt.region(fill).over(n).launch(x);
  return rt.region(total).over(n).reduce(x);
}
