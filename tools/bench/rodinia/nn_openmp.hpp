// The plain OpenMP baseline of Rodinia's nn (nn_openmp.cpp, built -O3
// -march=native -fopenmp): every record's distance in a parallel loop, then
// the k nearest picked in one pass on the calling thread.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace canopy::bench::rodinia::openmp {

/// The `k` records nearest to (target_latitude, target_longitude) as (record,
/// distance), nearest first (ties: the earlier record first); `distances`
/// (n floats) receives every record's distance.
std::vector<std::pair<std::int64_t, float>> nearest_neighbours(const float* latitude, const float* longitude,
                                                               std::int64_t n, float target_latitude,
                                                               float target_longitude, int k, float* distances);

/// As nearest_neighbours, for `n` records of Rodinia's files at `records`,
/// each 48 characters and a newline: each record's latitude (columns 28-32)
/// and longitude (33-37) are parsed in the parallel loop (blanks and '+'
/// skipped, then std::from_chars).
std::vector<std::pair<std::int64_t, float>> nearest_neighbours_in_text(const char* records, std::int64_t n,
                                                                       float target_latitude, float target_longitude,
                                                                       int k, float* distances);

}  // namespace canopy::bench::rodinia::openmp
