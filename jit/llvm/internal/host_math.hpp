// The C library's double sin and cos, mended where glibc's are not within
// the 4 ulp that docs/ir-semantics.md promises: glibc 2.36's cos is 8 ulp off
// at 0x1.6ac5b262ca1ffp+849, where the result is near zero (found by a new
// user's sweep of hard arguments). Past 2^27 (about where glibc starts its
// own reduction of a large argument) these compute in long double, whose
// functions reduce the argument with more bits, and round once; below it,
// where every kernel's arguments practically are, they are glibc's, equal
// to a plain C++ loop's results. The CPU's kernels call them (CpuJit defines
// them in every library it makes) for f64 `sin` and `cos`.
#pragma once

namespace canopy::jit {

/// The names the CPU's kernels call, and the functions behind them.
inline constexpr const char* kHostSinF64 = "canopy_sin_f64";
inline constexpr const char* kHostCosF64 = "canopy_cos_f64";
double host_sin_f64(double x);
double host_cos_f64(double x);

}  // namespace canopy::jit
