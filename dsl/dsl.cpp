#include <canopy/ir/error.hpp>
#include <canopy/ir/verifier.hpp>

#include "control.hpp"
#include "kernel.hpp"
#include "value.hpp"

namespace canopy {

namespace dsl {

void fail_unset_value() {
  constexpr const char* problem =
      "a kernel value was used before it was set (a For counter outside its loop, or a default Value)";
  if (auto* tracer = Tracer::active()) tracer->fail("a Value", problem);
  throw Error(problem);
}

void fail_literal_range(const std::string& literal, ir::ScalarType type) {
  const std::string name(ir::name_of(type));
  const std::string problem = "the literal " + literal + " meets an operand of type " + name +
                              ", which cannot hold it (C++ would widen the operand; the kernel would wrap the "
                              "literal); cast the operand to a wider type, e.g. cast<std::int64_t>(x), or use a "
                              "literal that " +
                              name + " holds";
  if (auto* tracer = Tracer::active()) tracer->fail("a literal", problem);
  throw Error(problem);
}

int current_depth() {
  auto* tracer = Tracer::active();
  return tracer ? tracer->depth() : -1;
}

void check_reassignment(int depth) {
  auto* tracer = Tracer::active();
  if (tracer && depth >= 0 && tracer->depth() > depth)
    tracer->fail("assignment",
                 "a Value defined outside an If or For body was reassigned inside it; "
                 "the C++ assignment happens whatever the condition, so declare it as Var<T>");
}

}  // namespace dsl

Idx index(int dim) {
  auto& tracer = dsl::Tracer::current("index()");
  if (dim < 0 || dim > 2) tracer.fail("index(" + std::to_string(dim) + ")", "dimensions are 0, 1 or 2");
  tracer.note_index(dim);
  return Idx(ir::make_index(dim));
}

KernelBase::KernelBase(ir::Kernel kernel) {
  ir::verify(kernel);
  ir_ = std::make_shared<const ir::Kernel>(std::move(kernel));
}

}  // namespace canopy
