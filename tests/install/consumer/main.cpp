// Built against an installed Canopy: runs a kernel and prints its result.
#include <canopy/canopy.hpp>

#include <cstdio>

int main() {
  using namespace canopy;
  Runtime rt;
  const std::int64_t n = 1000;
  auto x = rt.array<double>(n);
  Kernel fill("fill", [](Out<double> x) {
    Idx i = index(0);
    x[i] = cast<double>(i) * 0.5;
  });
  Kernel total("total", [](In<double> x, Sum<double> s) { s += x[index(0)]; });
  rt.region(fill).over(n).launch(x);
  double sum = rt.region(total).over(n).reduce(x);
  std::printf("sum %.1f\n", sum);  // 0.5 * (0 + 1 + ... + 999) = 249750
  return sum == 249750.0 ? 0 : 1;
}
