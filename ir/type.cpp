#include "type.hpp"

namespace canopy::ir {

std::string_view name_of(ScalarType type) {
  switch (type) {
    case ScalarType::Bool: return "bool";
    case ScalarType::I32: return "i32";
    case ScalarType::I64: return "i64";
    case ScalarType::F32: return "f32";
    case ScalarType::F64: return "f64";
  }
  return "?";
}

std::optional<ScalarType> scalar_type_named(std::string_view name) {
  for (auto t : {ScalarType::Bool, ScalarType::I32, ScalarType::I64, ScalarType::F32, ScalarType::F64})
    if (name_of(t) == name) return t;
  return std::nullopt;
}

std::size_t size_of(ScalarType type) {
  switch (type) {
    case ScalarType::Bool: return 1;
    case ScalarType::I32:
    case ScalarType::F32: return 4;
    case ScalarType::I64:
    case ScalarType::F64: return 8;
  }
  return 0;
}

std::ostream& operator<<(std::ostream& out, ScalarType type) { return out << name_of(type); }

}  // namespace canopy::ir
