// The CPU's vector math (jit/llvm/internal/vector_math.hpp), which the SIMD
// lowering uses instead of one C library call per lane, against long
// double's expl, logl, sinl and cosl: the error in ulps over the whole range
// of each type, and exact results where the answer is exact (0, 1, infinity,
// NaN). The IR allows exp and log 3 ulp, sin and cos 4 (docs/ir-semantics.md);
// the code claims 1 for exp on doubles and log on floats, 1.5 for exp, sin and
// cos on floats (computed in float lanes).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "simd_lanes.hpp"

using namespace canopy;
using namespace canopy::ir;
using namespace canopy::jit;
using namespace canopy::jit::testing;

namespace {

// |got - exact| in ulps of the result's type, as docs/ir-semantics.md counts
// them (below the smallest normal number, in units of the smallest denormal).
template <class T>
double ulps(T got, long double exact) {
  const T rounded = static_cast<T>(exact);
  T ulp = std::nextafter(std::fabs(rounded), std::numeric_limits<T>::infinity()) - std::fabs(rounded);
  if (std::fabs(rounded) < std::numeric_limits<T>::min()) ulp = std::numeric_limits<T>::denorm_min();
  return static_cast<double>(std::fabs(static_cast<long double>(got) - exact) / ulp);
}

// y[i] = fn(x[i]) for the odd points, fn(x[i]) under an If for the even
// ones, so that both the whole-vector and the masked paths are checked.
template <class T>
std::vector<T> simd_call(MathFn fn, const std::vector<T>& xs, const char* lanes) {
  const ScalarType type = std::is_same_v<T, float> ? F32 : F64;
  const Expr x = make_load(type, 0, {make_index(0)});
  const Expr odd =
      make_compare(CompareOp::Eq, make_binary(BinaryOp::Rem, make_index(0), make_int(I64, 2)), make_int(I64, 1));
  const Kernel kernel =
      make_kernel(std::string("vector_") + std::string(name_of(fn)) + (type == F32 ? "_f32_" : "_f64_") + lanes,
                  {Param::array("x", type, 1, Access::In), Param::array("y", type, 1, Access::Out)}, 1,
                  {make_store(1, {make_index(0)}, make_call(fn, {x})),
                   make_if(odd, make_block({}), make_block({make_store(1, {make_index(0)}, make_call(fn, {x}))}))});
  const CpuEntry entry = compile_with_lanes(kernel, lanes);
  std::vector<T> ys(xs.size(), T(-1));
  ArgBlock args(kernel);
  const auto n = static_cast<std::int64_t>(xs.size());
  args.array(0, const_cast<T*>(xs.data()), {n}).array(1, ys.data(), {n});
  entry(0, n, args.data());
  return ys;
}

// fn's results on `xs` at 16 and at 4 lanes against `exact`: within `bound`
// ulps, and equal where the exact result is infinite, zero, or exact.
template <class T>
void check_against(MathFn fn, long double (*exact_fn)(long double), const std::vector<T>& xs, double bound) {
  for (const std::string lanes : {"16", "4"}) {
    CAPTURE(lanes);
    const std::vector<T> ys = simd_call(fn, xs, lanes.c_str());
    double worst = 0;
    T worst_x = 0;
    for (std::size_t k = 0; k < xs.size(); ++k) {
      CAPTURE(xs[k]);
      const long double exact = exact_fn(static_cast<long double>(xs[k]));
      if (std::isnan(exact)) {
        CHECK(std::isnan(ys[k]));
        continue;
      }
      if (std::isinf(static_cast<T>(exact)) || exact == 0 || static_cast<long double>(static_cast<T>(exact)) == exact) {
        CHECK(ys[k] == static_cast<T>(exact));  // infinities, exact zeros (of the right sign) and exact results
        CHECK(std::signbit(ys[k]) == std::signbit(static_cast<T>(exact)));
        continue;
      }
      const double error = ulps(ys[k], exact);
      if (error > worst) {
        worst = error;
        worst_x = xs[k];
      }
    }
    MESSAGE(name_of(fn) << " " << (std::is_same_v<T, float> ? "f32" : "f64") << " at " << lanes << " lanes: worst "
                        << worst << " ulp, at x = " << worst_x);
    CHECK(worst <= bound);
  }
}

long double exact_exp(long double x) { return std::exp(x); }
long double exact_log(long double x) { return std::log(x); }
long double exact_sin(long double x) { return std::sin(x); }
long double exact_cos(long double x) { return std::cos(x); }

template <class T>
void check_exp(T lowest, T highest, double bound) {
  std::vector<T> xs = {T(0),
                       -T(0),
                       T(1),
                       T(-1),
                       std::numeric_limits<T>::infinity(),
                       -std::numeric_limits<T>::infinity(),
                       std::numeric_limits<T>::quiet_NaN(),
                       std::numeric_limits<T>::denorm_min(),
                       -std::numeric_limits<T>::min(),
                       std::numeric_limits<T>::max(),
                       std::numeric_limits<T>::lowest(),
                       T(1e-30),
                       lowest,
                       highest};
  // The thresholds of overflow and of the denormal range, and either side.
  const T edges[] = {std::is_same_v<T, float> ? T(88.72283935546875) : T(709.782712893384),
                     std::is_same_v<T, float> ? T(-87.33654475) : T(-708.3964185322641),
                     std::is_same_v<T, float> ? T(-103.97207708) : T(-745.1332191019411)};
  for (T edge : edges)
    for (T x = edge, step = 0; step < 8; ++step) {
      xs.push_back(x);
      xs.push_back(std::nextafter(edge, step < 4 ? highest : lowest));
      x = std::nextafter(x, highest);
    }
  std::mt19937_64 random(11);
  std::uniform_real_distribution<T> everywhere(lowest, highest), near_zero(T(-2), T(2));
  for (int k = 0; k < 150000; ++k) xs.push_back(everywhere(random));
  for (int k = 0; k < 50000; ++k) xs.push_back(near_zero(random));
  check_against(MathFn::Exp, exact_exp, xs, bound);
}

// Special values, every power of two and its neighbours, and random floats
// spread over the whole range of magnitudes.
std::vector<float> log_arguments() {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> xs = {0.0f,
                           -0.0f,
                           1.0f,
                           -1.0f,
                           inf,
                           -inf,
                           std::numeric_limits<float>::quiet_NaN(),
                           std::numeric_limits<float>::denorm_min(),
                           std::numeric_limits<float>::min(),
                           std::numeric_limits<float>::max(),
                           1.4142135f,
                           0.70710677f,
                           2.0f,
                           0.5f};
  for (int e = -149; e <= 127; ++e) {
    const float p = std::ldexp(1.0f, e);
    xs.insert(xs.end(), {p, std::nextafter(p, 0.0f), std::nextafter(p, inf)});
  }
  std::mt19937_64 random(12);
  std::uniform_real_distribution<float> exponent(-149.0f, 128.0f), near_one(0.5f, 2.0f);
  for (int k = 0; k < 150000; ++k) xs.push_back(std::exp2(exponent(random)));
  for (int k = 0; k < 50000; ++k) xs.push_back(near_one(random));
  return xs;
}

// Zeros, near multiples of pi/2 (where the reduction cancels most), either
// side of the float lanes' limit 2^12 (past it, double lanes), of the double
// lanes' limit 2^19 and far past it (the C library's lanes), vectors that mix
// them, infinities, NaN, and random floats near zero, in the reduced range
// and over all magnitudes.
std::vector<float> trig_arguments() {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> xs = {0.0f,
                           -0.0f,
                           inf,
                           -inf,
                           std::numeric_limits<float>::quiet_NaN(),
                           std::numeric_limits<float>::denorm_min(),
                           -std::numeric_limits<float>::min(),
                           std::numeric_limits<float>::max(),
                           1e-30f,
                           524288.0f,
                           -524288.0f,
                           std::nextafter(524288.0f, 0.0f),
                           std::nextafter(524288.0f, inf),
                           4096.0f,
                           -4096.0f,
                           std::nextafter(4096.0f, 0.0f),
                           std::nextafter(-4096.0f, 0.0f)};
  for (int k = -2000; k <= 2000; ++k) {
    const float near = static_cast<float>(k * 1.5707963267948966);
    xs.insert(xs.end(), {near, std::nextafter(near, inf), std::nextafter(near, -inf)});
  }
  for (int k = 1; k < 330000; k += 997) xs.push_back(static_cast<float>(k * 1.5707963267948966));
  std::mt19937_64 random(13);
  std::uniform_real_distribution<float> small(-10.0f, 10.0f), reduced(-524288.0f, 524288.0f), exponent(-30.0f, 128.0f);
  for (int k = 0; k < 50000; ++k) xs.push_back(small(random));
  for (int k = 0; k < 50000; ++k) xs.push_back(reduced(random));
  for (int k = 0; k < 50000; ++k) xs.push_back((k % 2 ? 1 : -1) * std::exp2(exponent(random)));
  return xs;
}

}  // namespace

TEST_CASE("the SIMD lowering's exp on doubles is within 1 ulp everywhere, and exact where exp is") {
  check_exp<double>(-750.0, 712.0, 1.0);
}

TEST_CASE("the SIMD lowering's exp on floats is within 1.5 ulp everywhere, and exact where exp is") {
  check_exp<float>(-110.0f, 90.0f, 1.5);
}

TEST_CASE("the SIMD lowering's log on floats is within 1 ulp everywhere, and exact where log is") {
  check_against(MathFn::Log, exact_log, log_arguments(), 1.0);
}

TEST_CASE("the SIMD lowering's sin and cos on floats are within 1.5 ulp everywhere, large arguments included") {
  const std::vector<float> xs = trig_arguments();
  check_against(MathFn::Sin, exact_sin, xs, 1.5);
  check_against(MathFn::Cos, exact_cos, xs, 1.5);
}

TEST_CASE("sin and cos on doubles are within 1 ulp, at the C library's hard large arguments too") {
  // glibc 2.36's cos is 8 ulp off at the first (a new user's sweep found
  // it); the CPU's kernels mend it (jit/llvm/internal/host_math.hpp). Below
  // 2^27 they are glibc's own, as plain C++ computes them.
  std::vector<double> xs = {0x1.6ac5b262ca1ffp+849, -0x1.6ac5b262ca1ffp+849, 0x1.8p+27, 1e22,   1e300,   0.5, -3.0,
                            1.5707963267948966,     3.141592653589793,       1e8,       0x1p27, -0x1p27, 0.0, -0.0};
  std::mt19937_64 random(29);
  std::uniform_real_distribution<double> exponent(0.0, 1000.0);
  for (int k = 0; k < 3000; ++k) xs.push_back(std::pow(2.0, exponent(random)) * (k % 2 ? 1.0 : -1.0));
  check_against(MathFn::Sin, exact_sin, xs, 1.0);
  check_against(MathFn::Cos, exact_cos, xs, 1.0);
  const std::vector<double> cosines = simd_call(MathFn::Cos, xs, "4");
  CHECK(cosines[0] == -0x1.14ae72e6ba22fp-61);  // long double's, and the exact value's nearest double
  CHECK(cosines[5] == std::cos(0.5));
  CHECK(cosines[6] == std::cos(-3.0));
}

TEST_CASE("int64 lanes to double: correctly rounded over the whole range, as C++ converts them") {
  // The extremes, powers of two and their neighbours, values past 2^53 that
  // must round (ties to even included), and random values of every size.
  std::vector<std::int64_t> xs = {0,
                                  1,
                                  -1,
                                  2,
                                  -2,
                                  std::numeric_limits<std::int64_t>::max(),
                                  std::numeric_limits<std::int64_t>::min(),
                                  (std::int64_t{1} << 53) + 1,
                                  -((std::int64_t{1} << 53) + 1),
                                  (std::int64_t{1} << 53) + 3,
                                  (std::int64_t{1} << 54) + 2,
                                  (std::int64_t{1} << 54) + 6,
                                  std::int64_t{0xFFFFFFFF},
                                  -std::int64_t{0xFFFFFFFF},
                                  std::int64_t{1} << 32,
                                  -(std::int64_t{1} << 32),
                                  (std::int64_t{1} << 32) - 1};
  for (int e = 0; e < 63; ++e)
    for (std::int64_t d : {-1, 0, 1}) {
      xs.push_back((std::int64_t{1} << e) + d);
      xs.push_back(-(std::int64_t{1} << e) + d);
    }
  std::mt19937_64 random(23);
  for (int k = 0; k < 4000; ++k) xs.push_back(static_cast<std::int64_t>(random()) >> (k % 63));
  const Expr x = make_load(I64, 0, {make_index(0)});
  const Kernel kernel =
      make_kernel("vector_i64_to_f64", {Param::array("x", I64, 1, Access::In), Param::array("y", F64, 1, Access::Out)},
                  1, {make_store(1, {make_index(0)}, make_cast(F64, x))});
  for (const char* lanes : {"8", "4"}) {
    CAPTURE(lanes);
    const CpuEntry entry = compile_with_lanes(kernel, lanes);
    std::vector<double> ys(xs.size(), -1.0);
    ArgBlock args(kernel);
    const auto n = static_cast<std::int64_t>(xs.size());
    args.array(0, xs.data(), {n}).array(1, ys.data(), {n});
    entry(0, n, args.data());
    std::size_t wrong = 0;
    for (std::size_t k = 0; k < xs.size(); ++k)
      if (ys[k] != static_cast<double>(xs[k])) {
        if (wrong++ < 5) MESSAGE("x = " << xs[k] << ": " << ys[k] << ", C++ gives " << static_cast<double>(xs[k]));
      }
    CHECK(wrong == 0);
  }
}
