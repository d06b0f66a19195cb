// canopy-startup-child: the program `canopy-bench startup` times, linked as
// a Canopy program is (Canopy's libraries and nothing else: no MPI, no
// OpenMP, which canopy-bench itself links for its baselines).
//
//   canopy-startup-child empty     returns at once (the libraries loaded)
//   canopy-startup-child runtime   makes `Runtime rt;` and returns
//   canopy-startup-child kernel    runs one small kernel, checked (exit 1 if wrong)
#include <cstdint>
#include <cstdio>
#include <cstring>

#include <canopy/canopy.hpp>

namespace {

/// A triad over 2^16 doubles, checked.
int one_kernel() {
  canopy::Runtime rt;
  const std::int64_t n = 1 << 16;
  auto a = rt.array<double>(n), b = rt.array<double>(n);
  canopy::Kernel triad("startup_triad", [](canopy::Out<double> a, canopy::In<double> b, canopy::Val<double> s) {
    canopy::Idx i = canopy::index(0);
    a[i] = b[i] * s + 1.0;
  });
  auto bh = b.host();
  for (std::int64_t i = 0; i < n; ++i) bh[i] = double(i);
  rt.region(triad).over(n).launch(a, b, 2.0);
  return a.host()[n - 1] == 2.0 * double(n - 1) + 1.0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const char* what = argc > 1 ? argv[1] : "";
  try {
    if (!std::strcmp(what, "empty")) return 0;
    if (!std::strcmp(what, "runtime")) {
      canopy::Runtime rt;
      return 0;
    }
    if (!std::strcmp(what, "kernel")) return one_kernel();
  } catch (const canopy::Error& e) {
    std::fprintf(stderr, "canopy-startup-child: %s\n", e.what());
    return 1;
  }
  std::fprintf(stderr, "usage: canopy-startup-child empty|runtime|kernel\n");
  return 2;
}
