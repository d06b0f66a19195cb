// The reference interpreter: runs a kernel by walking its IR, one point at a
// time in index order, exactly as docs/ir-semantics.md defines every node.
//
// Why it exists: it is the oracle every backend and every split is checked
// against (the differential runner, tests/diff/). So it is written for
// clarity, not speed, and shares nothing with the code generators or the
// passes (not even constant folding): a bug there cannot hide here.
//
// Floats carry a tolerance. A backend may differ from the value computed here
// within the bounds of the semantics (math functions by their ulps, f32
// division, sums and atomic adds in another order), and a difference carries
// through later operations: every float RefValue says how far a conforming
// backend's value may be from it. A decision that rounding could change (a
// comparison of floats whose tolerances overlap, a float converted to an
// integer near a step, a division by a float whose tolerance holds zero)
// makes what depends on it `unsure`: any value conforms. When such a decision
// steers control flow or the index of a write, the writes of the path not
// taken are unknown, so every element of every array the kernel writes, and
// every reduction, becomes unsure.
//
//   RefArray a = RefArray::zeros(ScalarType::F64, {n});
//   std::vector<RefArgument> args{&a, RefValue::f64(0.5), RefReduction{}};
//   RefOutcome out = interpret(kernel, {n}, args);
//   bool ok = conforms(a.elements[3], RefValue::f64(value_a_device_computed));
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "kernel.hpp"

namespace canopy::ir {

/// One scalar as the reference computes it.
struct RefValue {
  ScalarType type = ScalarType::I64;
  /// bool (0 or 1), i32 (sign-extended) and i64 values.
  std::int64_t i = 0;
  /// f32 (a value a float holds exactly) and f64 values.
  double f = 0;
  /// Floats only: a conforming backend's value lies within [f - tolerance,
  /// f + tolerance] (0: it is exactly f; NaN and infinities are exact or unsure).
  double tolerance = 0;
  /// A decision that rounding could change went into it: any value conforms.
  bool unsure = false;

  static RefValue boolean(bool value);
  static RefValue i32(std::int32_t value);
  static RefValue i64(std::int64_t value);
  static RefValue f32(float value);
  static RefValue f64(double value);
  /// `value` of `type`, converted as the IR's cast from f64 converts it:
  /// bool is value != 0, integers truncate toward zero and saturate (NaN
  /// gives 0), f32 rounds to nearest even.
  static RefValue of(ScalarType type, double value);
  /// The value as a double (exact for every type but large i64).
  double as_double() const;
};

/// "3", "-1.5 (+-2.2e-16)", "true", "unsure".
std::string describe(const RefValue& value);

/// The contents of one array argument: extents (1-3, row-major, the last
/// index fastest) and one RefValue per element, all of the array's type.
struct RefArray {
  ScalarType type = ScalarType::F64;
  std::vector<std::int64_t> extents;
  std::vector<RefValue> elements;

  /// An array of `extents` whose elements are all zero (false for bool).
  static RefArray zeros(ScalarType type, std::vector<std::int64_t> extents);
  /// The number of elements (the product of the extents).
  std::int64_t size() const;
};

/// The argument of a reduction parameter: nothing to pass, the result comes
/// back in RefOutcome.
struct RefReduction {};

/// One argument per kernel parameter, in order: the array (updated in place
/// as the kernel writes it), the scalar's value, or RefReduction{}.
using RefArgument = std::variant<RefArray*, RefValue, RefReduction>;

/// What a run returns besides the arrays it wrote.
struct RefOutcome {
  /// One per reduction parameter, in parameter order: the operator's identity
  /// combined with every point's contributions.
  std::vector<RefValue> reductions;
  /// Points at which a decision that rounding could change steered control
  /// flow or a write's index (every written array and reduction is unsure).
  std::int64_t unsure_points = 0;
};

/// Runs `kernel` (which must verify) over the index range `range` (one extent
/// per kernel dimension), point by point in row-major order. Throws
/// canopy::Error, naming the kernel, the array, the index and the extent, for
/// an access outside its array (unless an unsure index makes it so), and for
/// arguments that do not match the parameters (kind, type, rank).
RefOutcome interpret(const Kernel& kernel, const std::vector<std::int64_t>& range, std::vector<RefArgument>& args);

/// How many ulps `fn` may be off on `type` (docs/ir-semantics.md's table).
double ulps_allowed(MathFn fn, ScalarType type);
/// How many ulps float division may be off on `type` (3 for f32, 0 for f64).
double division_ulps_allowed(ScalarType type);
/// The distance between the two floats of `type` nearest `x`: the spacing of
/// the floats in x's binade, the smallest denormal below the smallest normal
/// number, infinity for an infinity or NaN (and 0 for bool and integers).
double ulp_of(ScalarType type, double x);

/// True when `got` (a backend's value, of `expected`'s type; its tolerance
/// and unsure are not read) conforms to the reference: any value when
/// `expected` is unsure; integers and bool exactly; NaN for NaN, the same
/// infinity for an infinity; other floats within the tolerance, widened by the
/// smallest normal number of the type (a device may flush denormals).
bool conforms(const RefValue& expected, const RefValue& got);

}  // namespace canopy::ir
