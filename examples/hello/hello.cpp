// The README's complete program, kept compiling and running by the tests.
#include <canopy/canopy.hpp>
#include <cstdio>
using namespace canopy;

int main() {
  Runtime rt;  // discovers this node
  const std::int64_t n = 1 << 20;
  auto a = rt.array<double>(n), b = rt.array<double>(n), c = rt.array<double>(n);

  Kernel init("init", [](Out<double> b, Out<double> c) {
    Idx i = index(0);
    b[i] = 1.0;
    c[i] = cast<double>(i);
  });
  Kernel triad("triad", [](Out<double> a, In<double> b, In<double> c, Val<double> s) {
    Idx i = index(0);
    a[i] = b[i] + s * c[i];
  });
  Kernel dot("dot", [](In<double> a, In<double> b, Sum<double> total) {
    Idx i = index(0);
    total += a[i] * b[i];
  });

  rt.region(init).over(n).launch(b, c);  // asynchronous
  rt.region(triad).over(n).launch(a, b, c, 0.5);
  rt.pause();  // wait for both
  double d = rt.region(dot).over(n).reduce(a, b);
  std::printf("dot = %g, a[10] = %g\n", d, a.host()[10]);
}
