// Scalar types of the kernel IR: the element types of arrays, the types of
// scalar parameters, locals and every expression.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <ostream>
#include <string_view>
#include <type_traits>

namespace canopy::ir {

/// The five scalar types a kernel computes with.
enum class ScalarType : std::uint8_t { Bool, I32, I64, F32, F64 };

/// The IR's spelling: "bool", "i32", "i64", "f32", "f64".
std::string_view name_of(ScalarType type);
/// Inverse of name_of; empty when `name` is not a type.
std::optional<ScalarType> scalar_type_named(std::string_view name);
/// Size in bytes of one element (bool is stored as one byte).
std::size_t size_of(ScalarType type);

constexpr bool is_float(ScalarType t) { return t == ScalarType::F32 || t == ScalarType::F64; }
constexpr bool is_int(ScalarType t) { return t == ScalarType::I32 || t == ScalarType::I64; }
constexpr bool is_numeric(ScalarType t) { return t != ScalarType::Bool; }

std::ostream& operator<<(std::ostream& out, ScalarType type);

/// The IR type that stands for the C++ type T (bool, int32_t, int64_t, float, double).
template <class T>
constexpr ScalarType scalar_type_of();
template <>
constexpr ScalarType scalar_type_of<bool>() { return ScalarType::Bool; }
template <>
constexpr ScalarType scalar_type_of<std::int32_t>() { return ScalarType::I32; }
template <>
constexpr ScalarType scalar_type_of<std::int64_t>() { return ScalarType::I64; }
template <>
constexpr ScalarType scalar_type_of<float>() { return ScalarType::F32; }
template <>
constexpr ScalarType scalar_type_of<double>() { return ScalarType::F64; }

/// True for the C++ types a kernel may use as scalars or array elements.
template <class T>
inline constexpr bool is_kernel_scalar_v =
    std::is_same_v<T, bool> || std::is_same_v<T, std::int32_t> || std::is_same_v<T, std::int64_t> ||
    std::is_same_v<T, float> || std::is_same_v<T, double>;

}  // namespace canopy::ir
