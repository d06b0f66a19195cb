// The layout of a record in Rodinia's nn database files (its hurricane data)
// and how a coordinate is read from it: shared by the Canopy example and the
// plain OpenMP port it is compared with, which includes no Canopy.
#pragma once

#include <charconv>
#include <cstddef>

namespace rodinia::nn {

/// Characters of a record, without its newline.
inline constexpr std::size_t kRecordChars = 48;
/// Bytes a record takes in Rodinia's files: its characters and a newline.
inline constexpr std::size_t kRecordBytes = kRecordChars + 1;
/// Where the latitude and the longitude start in a record; each is 5 characters.
inline constexpr std::size_t kLatitudeColumn = 28, kLongitudeColumn = 33, kCoordinateChars = 5;

/// A coordinate's five columns as the reader parses them: blanks and '+'
/// skipped, then the longest number std::from_chars takes (as strtof would);
/// 0 when there is none.
inline float parse_coordinate(const char* field) {
  const char* at = field;
  const char* const end = field + kCoordinateChars;
  while (at < end && (*at == ' ' || *at == '+')) ++at;
  float value = 0;
  std::from_chars(at, end, value);
  return value;
}

}  // namespace rodinia::nn
