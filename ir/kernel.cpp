#include "kernel.hpp"

#include <limits>

namespace canopy::ir {

Param Param::array(std::string name, ScalarType type, int rank, Access access) {
  Param p;
  p.name = std::move(name);
  p.kind = ParamKind::Array;
  p.type = type;
  p.rank = rank;
  p.access = access;
  return p;
}

Param Param::scalar(std::string name, ScalarType type) {
  Param p;
  p.name = std::move(name);
  p.kind = ParamKind::Scalar;
  p.type = type;
  return p;
}

Param Param::reduction(std::string name, ScalarType type, ReduceOp op) {
  Param p;
  p.name = std::move(name);
  p.kind = ParamKind::Reduction;
  p.type = type;
  p.reduce = op;
  return p;
}

std::optional<int> Kernel::param_index(std::string_view wanted) const {
  for (std::size_t i = 0; i < params.size(); ++i)
    if (params[i].name == wanted) return static_cast<int>(i);
  return std::nullopt;
}

std::string_view name_of(ParamKind kind) {
  switch (kind) {
    case ParamKind::Array: return "array";
    case ParamKind::Scalar: return "scalar";
    case ParamKind::Reduction: return "reduction";
  }
  return "?";
}

std::string Kernel::describe_param(std::size_t index) const {
  const std::string& given = params.at(index).name;
  if (given != "p" + std::to_string(index)) return "'" + given + "'";
  const std::size_t n = index + 1;
  const char* suffix = n % 100 >= 11 && n % 100 <= 13 ? "th"
                       : n % 10 == 1                  ? "st"
                       : n % 10 == 2                  ? "nd"
                       : n % 10 == 3                  ? "rd"
                                                      : "th";
  return given + " (unnamed: the " + std::to_string(n) + suffix + ")";
}

std::string_view name_of(Access access) {
  switch (access) {
    case Access::In: return "in";
    case Access::Out: return "out";
    case Access::InOut: return "inout";
  }
  return "?";
}

std::string_view name_of(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return "sum";
    case ReduceOp::Min: return "min";
    case ReduceOp::Max: return "max";
  }
  return "?";
}

Expr identity_of(ReduceOp op, ScalarType type) {
  if (op == ReduceOp::Sum) return make_int(type, 0);
  const bool want_largest = op == ReduceOp::Min;
  switch (type) {
    case ScalarType::Bool: return make_bool(want_largest);
    case ScalarType::I32:
      return make_int(
          type, want_largest ? std::numeric_limits<std::int32_t>::max() : std::numeric_limits<std::int32_t>::min());
    case ScalarType::I64:
      return make_int(
          type, want_largest ? std::numeric_limits<std::int64_t>::max() : std::numeric_limits<std::int64_t>::min());
    case ScalarType::F32:
    case ScalarType::F64:
      return make_const(
          type, want_largest ? std::numeric_limits<double>::infinity() : -std::numeric_limits<double>::infinity());
  }
  return make_int(type, 0);
}

}  // namespace canopy::ir
