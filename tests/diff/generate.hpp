// Random programs for the differential runner, in the spirit of Csmith and
// YARPGen: well-typed kernels that use every construct of the IR, and
// sequences of regions over shared arrays with host reads and writes,
// pauses, tree changes and launches that must be refused between them.
//
// Every program is valid by construction, so that any difference between a
// backend and the reference is a bug in Canopy:
//  - every index stays inside its array for every point of every range the
//    program launches the kernel over (affine forms checked against the
//    extents, clamped and wrapped forms, gathers through index arrays whose
//    values are below the extent, neighbours read under an If that guards
//    them);
//  - no region is racy: an array a kernel stores to is read and stored only
//    at one element per point, through a map from points to elements that is
//    one-to-one (an affine map or a permutation); an array it adds to
//    atomically is neither read nor stored by it; other arrays are only read;
//  - loops run at most a few times per point, so programs stay quick.
// Some kernels are element-wise (every array accessed at the point's own
// index, no atomics), drawn from a stream of their own so that the other
// programs of a seed stay as they were; their launches come in runs over the
// full range, so that the recorder fuses them (runtime/internal/recorder.hpp).
// Everything else is left to chance, including what the semantics define for
// C's undefined cases (division by zero, overflow, shifts past the width,
// float-to-int conversions out of range, NaN).
#pragma once

#include <cstdint>

#include "program.hpp"

namespace canopy::diff {

struct GeneratorOptions {
  int max_kernels = 3;       ///< kernels per program: 1 to this
  int max_steps = 10;        ///< steps besides the launches every kernel gets
  int max_statements = 9;    ///< statements of a kernel body (nested ones count)
  double elementwise = 0.3;  ///< the chance that a kernel is element-wise
};

/// The program `seed` gives (the same on every machine).
Program generate_program(std::uint64_t seed, const GeneratorOptions& options = {});

}  // namespace canopy::diff
