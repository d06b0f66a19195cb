// Shape: the extents of an array or of a region's index range, 1 to 3
// dimensions, the first the outermost (row-major: the last index is fastest).
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <ostream>
#include <string>

namespace canopy {

class Shape {
 public:
  /// A one-dimensional shape of n elements.
  Shape(std::int64_t n) : rank_(1), extents_{n, 1, 1} {}
  /// Two or three dimensions, the outermost first (the last is contiguous).
  Shape(std::int64_t n0, std::int64_t n1) : rank_(2), extents_{n0, n1, 1} {}
  Shape(std::int64_t n0, std::int64_t n1, std::int64_t n2) : rank_(3), extents_{n0, n1, n2} {}

  /// The number of dimensions: 1, 2 or 3.
  int rank() const { return rank_; }
  /// The extent of dimension `dim` (1 past the rank).
  std::int64_t operator[](int dim) const { return extents_[static_cast<std::size_t>(dim)]; }
  /// All three extents, 1 past the rank.
  const std::array<std::int64_t, 3>& extents() const { return extents_; }
  /// The number of elements (the product of the extents).
  std::int64_t size() const { return extents_[0] * extents_[1] * extents_[2]; }

  /// "1024" or "512x512".
  std::string to_string() const;
  bool operator==(const Shape&) const = default;

 private:
  int rank_;
  std::array<std::int64_t, 3> extents_;
};

std::ostream& operator<<(std::ostream& out, const Shape& shape);

}  // namespace canopy
