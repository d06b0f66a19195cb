#include "optimize.hpp"

#include <string>

#include "../error.hpp"
#include "../printer.hpp"
#include "../verifier.hpp"
#include "cse.hpp"
#include "dce.hpp"
#include "fold.hpp"
#include "licm.hpp"
#include "simplify.hpp"

namespace canopy::ir {

namespace {

constexpr int max_simplify_rounds = 4;

Kernel fold_and_simplify(const Kernel& kernel) { return simplify(fold_constants(kernel)); }

}  // namespace

Kernel optimize(const Kernel& kernel, Arrays arrays) {
  verify(kernel);  // a malformed input is the caller's error, reported as the verifier words it
  Kernel current = kernel;
  std::string text = print(current);
  for (int round = 0; round < max_simplify_rounds; ++round) {
    Kernel next = fold_and_simplify(current);
    std::string next_text = print(next);
    current = std::move(next);
    if (next_text == text) break;
    text = std::move(next_text);
  }
  current = hoist_loop_invariants(current);
  current = eliminate_common_subexpressions(current, arrays);
  current = eliminate_dead_code(current);
  current = fold_and_simplify(current);
  try {
    verify(current);
  } catch (const Error& e) {
    throw Error("optimizing kernel '" + kernel.name +
                "' produced a kernel that does not verify; this is a bug in Canopy's IR passes, please report it "
                "with the kernel's text (CANOPY_DUMP=ir). The verifier said: " +
                e.what());
  }
  return current;
}

}  // namespace canopy::ir
