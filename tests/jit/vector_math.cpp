// The CPU's vector exp (jit/llvm/internal/vector_math.hpp), which the SIMD
// lowering uses instead of one C library call per lane, against long
// double's expl: its error in ulps over the whole range of float and double,
// and exact results where the answer is exact (0, 1, infinity, NaN).
// The IR allows exp 3 ulp (docs/ir-semantics.md); the code claims 1.
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

// y[i] = exp(x[i]) for the odd points, exp(x[i]) under an If for the even
// ones, so that both the whole-vector and the masked paths are checked.
template <class T>
std::vector<T> simd_exp(const std::vector<T>& xs, const char* lanes) {
  const ScalarType type = std::is_same_v<T, float> ? F32 : F64;
  const Expr x = make_load(type, 0, {make_index(0)});
  const Expr odd =
      make_compare(CompareOp::Eq, make_binary(BinaryOp::Rem, make_index(0), make_int(I64, 2)), make_int(I64, 1));
  const Kernel kernel = make_kernel(
      std::string("vector_exp_") + (type == F32 ? "f32_" : "f64_") + lanes,
      {Param::array("x", type, 1, Access::In), Param::array("y", type, 1, Access::Out)}, 1,
      {make_store(1, {make_index(0)}, make_call(MathFn::Exp, {x})),
       make_if(odd, make_block({}), make_block({make_store(1, {make_index(0)}, make_call(MathFn::Exp, {x}))}))});
  const CpuEntry entry = compile_with_lanes(kernel, lanes);
  std::vector<T> ys(xs.size(), T(-1));
  ArgBlock args(kernel);
  const auto n = static_cast<std::int64_t>(xs.size());
  args.array(0, const_cast<T*>(xs.data()), {n}).array(1, ys.data(), {n});
  entry(0, n, args.data());
  return ys;
}

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
  for (const std::string lanes : {"16", "5"}) {
    CAPTURE(lanes);
    const std::vector<T> ys = simd_exp(xs, lanes.c_str());
    double worst = 0;
    T worst_x = 0;
    for (std::size_t k = 0; k < xs.size(); ++k) {
      const long double exact = std::exp(static_cast<long double>(xs[k]));
      if (std::isnan(xs[k])) {
        CHECK(std::isnan(ys[k]));
        continue;
      }
      if (std::isinf(static_cast<T>(exact)) || exact == 0 || xs[k] == 0) {
        CAPTURE(xs[k]);
        CHECK(ys[k] == static_cast<T>(exact));  // infinity, 0 and exp(0) = 1 exactly
        continue;
      }
      const double error = ulps(ys[k], exact);
      if (error > worst) {
        worst = error;
        worst_x = xs[k];
      }
    }
    MESSAGE("exp " << (std::is_same_v<T, float> ? "f32" : "f64") << " at " << lanes << " lanes: worst " << worst
                   << " ulp, at x = " << worst_x);
    CHECK(worst <= bound);
  }
}

}  // namespace

TEST_CASE("the SIMD lowering's exp on doubles is within 1 ulp everywhere, and exact where exp is") {
  check_exp<double>(-750.0, 712.0, 1.0);
}

TEST_CASE("the SIMD lowering's exp on floats is within 1 ulp everywhere, and exact where exp is") {
  check_exp<float>(-110.0f, 90.0f, 1.0);
}
