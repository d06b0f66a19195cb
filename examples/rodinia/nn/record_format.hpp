// The layout of a record in Rodinia's nn database files (its hurricane data),
// how a coordinate is read from it, and the count a search's pick starts
// each run of distances with: shared by the Canopy example and the plain
// OpenMP port it is compared with, which includes no Canopy.
#pragma once

#include <charconv>
#include <cstddef>
#include <cstdint>

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

/// Records a pick compares at a time against the farthest one it keeps.
inline constexpr std::int64_t kPickRun = 64;

/// How many of distances[first, last) (a run: at most kPickRun of them) are
/// below `farthest`. A whole run counts with a fixed trip count, which GCC
/// vectorizes at -O2 too (a loop to `last` only at -O3: 3 times slower at -O2).
inline int count_nearer(const float* distances, std::int64_t first, std::int64_t last, float farthest) {
  int nearer = 0;
  if (last - first == kPickRun) {
    const float* run = distances + first;
    for (std::int64_t j = 0; j < kPickRun; ++j) nearer += run[j] < farthest;
  } else {
    for (std::int64_t i = first; i < last; ++i) nearer += distances[i] < farthest;
  }
  return nearer;
}

}  // namespace rodinia::nn
