// A kernel: a named body run once per point of a 1-3 dimensional index range,
// with typed parameters (arrays, scalars, reduction accumulators).
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "stmt.hpp"

namespace canopy::ir {

enum class ParamKind : std::uint8_t {
  Array,      ///< an array of 1-3 dimensions with run-time extents
  Scalar,     ///< a value, the same for every point
  Reduction,  ///< an accumulator the points combine into with a ReduceOp
};

/// How a kernel uses an array parameter.
enum class Access : std::uint8_t { In, Out, InOut };

/// The operator of a reduction parameter (and of an array's merge trait).
enum class ReduceOp : std::uint8_t { Sum, Min, Max };

struct Param {
  std::string name;
  ParamKind kind = ParamKind::Array;
  ScalarType type = ScalarType::F64;  ///< element type of an array, else the value type
  int rank = 0;                       ///< 1-3 for arrays, 0 otherwise
  Access access = Access::In;         ///< arrays only
  ReduceOp reduce = ReduceOp::Sum;    ///< reductions only

  bool is_array() const { return kind == ParamKind::Array; }
  bool is_scalar() const { return kind == ParamKind::Scalar; }
  bool is_reduction() const { return kind == ParamKind::Reduction; }
  bool reads() const { return is_array() && access != Access::Out; }
  bool writes() const { return is_array() && access != Access::In; }

  static Param array(std::string name, ScalarType type, int rank, Access access);
  static Param scalar(std::string name, ScalarType type);
  static Param reduction(std::string name, ScalarType type, ReduceOp op);
};

struct Kernel {
  std::string name;
  std::vector<Param> params;
  int dims = 1;  ///< dimensions of the index range, 1-3
  Stmt body;     ///< a Block

  /// Position of the parameter called `name`, if any.
  std::optional<int> param_index(std::string_view name) const;
  /// How messages name parameter `index`: 'x' when the kernel was given
  /// names; else its default name and position, "p0 (unnamed: the 1st)".
  std::string describe_param(std::size_t index) const;
};

std::string_view name_of(ParamKind kind);
std::string_view name_of(Access access);  ///< "in", "out", "inout"
std::string_view name_of(ReduceOp op);    ///< "sum", "min", "max"

/// The identity of `op` on `type`: 0 for sum, the largest value for min
/// (+inf for floats), the smallest for max (-inf for floats).
Expr identity_of(ReduceOp op, ScalarType type);

}  // namespace canopy::ir
