// The checked mode's rewrite (ir/passes/bounds_check): the fault record is
// appended as the last parameter, every Load and Store is guarded, the result
// verifies and survives the optimizer, and a fault record reads back as the
// message the runtime raises.
#include <doctest/doctest.h>

#include <string>

#include <canopy/ir/error.hpp>
#include <canopy/ir/parser.hpp>
#include <canopy/ir/passes/bounds_check.hpp>
#include <canopy/ir/passes/optimize.hpp>
#include <canopy/ir/printer.hpp>
#include <canopy/ir/verifier.hpp>
#include <canopy/ir/visitor.hpp>

using namespace canopy;
using namespace canopy::ir;

namespace {

constexpr const char* kGather = R"(kernel gather(out f64[1] result, in f64[1] values, in i64[1] where) dims 1 {
  result[index(0)] = values[where[index(0)]]
})";

constexpr const char* kStencil = R"(kernel stencil(out f64[2] v, in f64[2] u) dims 2 {
  var s: f64 = 0.0:f64
  for k in 0:i64 .. 3:i64 {
    s = (s + u[((index(0) + k) - 1:i64), index(1)])
  }
  if (u[index(0), index(1)] > 0.0:f64) {
    v[index(0), index(1)] = s
  }
})";

// Counts Loads, Stores and Ifs of a body.
struct Counts : Visitor {
  int loads = 0, stores = 0, ifs = 0;
  void visit(const Load& node) override {
    ++loads;
    Visitor::visit(node);
  }
  void visit(const Store& node) override {
    ++stores;
    Visitor::visit(node);
  }
  void visit(const If& node) override {
    ++ifs;
    Visitor::visit(node);
  }
};

Counts counts_of(const Kernel& kernel) {
  Counts counts;
  counts.walk(kernel.body);
  return counts;
}

}  // namespace

TEST_CASE("bounds_check: the fault record is the last parameter, an inout i64 array") {
  const Kernel checked = check_bounds(parse(kGather));
  REQUIRE(checked.params.size() == 4);
  const Param& record = checked.params.back();
  CHECK(record.name == "canopy_fault0");
  CHECK(record.is_array());
  CHECK(record.type == ScalarType::I64);
  CHECK(record.rank == 1);
  CHECK(record.access == Access::InOut);
  CHECK(checked.params[0].name == "result");
  CHECK(checked.params[2].name == "where");
  CHECK_NOTHROW(verify(checked));
}

TEST_CASE("bounds_check: every access is guarded, inner loads first, and the fault is recorded once") {
  const Kernel checked = check_bounds(parse(kGather));
  const Counts counts = counts_of(checked);
  // where[i] and values[...] (2 guarded loads) plus one read of the record's
  // flag per fault site (3 sites: two loads and the store).
  CHECK(counts.loads == 2 + 3);
  // The store of out plus 6 record fields at each of the 3 sites.
  CHECK(counts.stores == 1 + 3 * 6);
  // One range check and one "record still empty" check per site.
  CHECK(counts.ifs == 3 * 2);
  const std::string text = print(checked);
  // The gathered index is loaded (checked) before it indexes `values`.
  CHECK(text.find("canopy_bc0 = where[index(0)]") != std::string::npos);
  CHECK(text.find("values[canopy_bc") != std::string::npos);
}

TEST_CASE("bounds_check: a kernel with loops and 2-D arrays stays valid through the optimizer") {
  const Kernel checked = check_bounds(optimize(parse(kStencil)));
  CHECK_NOTHROW(verify(checked));
  const Kernel optimized = optimize(checked);
  CHECK_NOTHROW(verify(optimized));
  CHECK(optimized.params.back().name == "canopy_fault0");
  // Both dimensions of each access are checked: the guards survive.
  CHECK(counts_of(optimized).ifs >= 2 * 3);
}

TEST_CASE("bounds_check: a kernel that already has canopy_fault0 gets the next name") {
  const Kernel kernel =
      parse("kernel k(out f64[1] canopy_fault0, in f64[1] x) dims 1 {\n  canopy_fault0[index(0)] = x[index(0)]\n}");
  const Kernel checked = check_bounds(kernel);
  CHECK(checked.params.back().name == "canopy_fault1");
  CHECK_NOTHROW(verify(checked));
}

TEST_CASE("bounds_check: the fault record reads back as the message the runtime raises") {
  const Kernel kernel = parse(kStencil);
  FaultRecord record{};
  CHECK(describe_fault(kernel, record).empty());
  record[kFaultFlag] = 1;
  record[kFaultParam] = 1;
  record[kFaultDim] = 0;
  record[kFaultIndex] = -1;
  record[kFaultExtent] = 64;
  record[kFaultWrite] = 0;
  CHECK(describe_fault(kernel, record) ==
        "kernel 'stencil' read array 'u' out of bounds: index -1 in dimension 0, whose extent is 64 (found by "
        "CANOPY_CHECK=bounds; the access was skipped); keep every index in [0, extent)");
  record[kFaultParam] = 0;
  record[kFaultDim] = 1;
  record[kFaultIndex] = 70;
  record[kFaultWrite] = 1;
  CHECK(describe_fault(kernel, record) ==
        "kernel 'stencil' wrote array 'v' out of bounds: index 70 in dimension 1, whose extent is 64 (found by "
        "CANOPY_CHECK=bounds; the access was skipped); keep every index in [0, extent)");
  // A parameter the program gave no name is named by its position, as at launch.
  Kernel unnamed = kernel;
  unnamed.params[0].name = "p0";
  CHECK(describe_fault(unnamed, record).find("wrote array p0 (unnamed: the 1st) out of bounds") != std::string::npos);
}

TEST_CASE("bounds_check: a kernel that does not verify is refused with the verifier's message") {
  Kernel broken = parse(kGather);
  broken.body = nullptr;
  CHECK_THROWS_AS(check_bounds(broken), Error);
}
