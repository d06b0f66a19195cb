// Edge cases of the IR's semantics (docs/ir-semantics.md) on every leaf,
// each one a bug the differential runner found: the expected values are
// written out by hand from the semantics.
#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
#include <vector>

#include "hetero_support.hpp"

using namespace canopy;
using namespace canopy::hetero_tests;

namespace {

// abs wraps at MIN, and widening the result keeps its sign. PoCL's clang
// took OpenCL's abs(INT_MIN) as undefined and sign-extended it as if it
// were positive (canopy-diff seeds 1000207 and 2000093).
const Kernel<void(In<std::int32_t>, In<std::int64_t>, Out<std::int64_t>, Out<std::int64_t>)>& widened_abs() {
  static const Kernel kernel("sem_widened_abs",
                             [](In<std::int32_t> a, In<std::int64_t> b, Out<std::int64_t> wa, Out<std::int64_t> wb) {
                               Idx i = index(0);
                               wa[i] = cast<std::int64_t>(abs(a[i])) % 162;
                               wb[i] = abs(b[i] >> 0) % 39;
                             },
                             {"a", "b", "wa", "wb"});
  return kernel;
}

}  // namespace

TEST_CASE("semantics: abs(MIN) wraps to MIN and stays negative when widened, on every leaf") {
  Runtime rt;
  const Hierarchy discovered = rt.hierarchy();
  const std::int32_t min32 = std::numeric_limits<std::int32_t>::min();
  const std::int64_t min64 = std::numeric_limits<std::int64_t>::min();
  const std::vector<std::int32_t> a{min32, -5, 7, min32 + 1};
  const std::vector<std::int64_t> b{min64, -41, 40, min64 + 1};
  // -2147483648 % 162 == -146, 5, 7, 2147483647 % 162 == 145;
  // -9223372036854775808 % 39 == -8, 41 % 39 == 2, 40 % 39 == 1, 9223372036854775807 % 39 == 7.
  const std::vector<std::int64_t> want_a{-146, 5, 7, 145}, want_b{-8, 2, 1, 7};
  for (const Location* leaf : discovered.leaves(*discovered.root())) {
    if (!leaf->executes()) continue;
    CAPTURE(leaf->name());
    auto in_a = rt.array<std::int32_t>(4);
    auto in_b = rt.array<std::int64_t>(4), wa = rt.array<std::int64_t>(4), wb = rt.array<std::int64_t>(4);
    std::copy(a.begin(), a.end(), in_a.host().begin());
    std::copy(b.begin(), b.end(), in_b.host().begin());
    rt.region(widened_abs()).over(4).at(leaf->name()).launch(in_a, in_b, wa, wb);
    auto got_a = wa.host_read();
    auto got_b = wb.host_read();
    CHECK(std::vector<std::int64_t>(got_a.begin(), got_a.end()) == want_a);
    CHECK(std::vector<std::int64_t>(got_b.begin(), got_b.end()) == want_b);
  }
}
