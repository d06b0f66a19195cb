// Rodinia's nn as a careful programmer writes it with OpenMP: the distances
// in a parallel loop over the records (structure of arrays, or the records'
// text, parsed in the loop as Rodinia's nn does with atof), then one pass
// that keeps the k nearest so far, sorted, and replaces the farthest of them
// when a nearer record comes.
#include "nn_openmp.hpp"

#include <cmath>

#include "rodinia/nn/record_format.hpp"

namespace canopy::bench::rodinia::openmp {

namespace {

// The k smallest of distances[0..n) as (record, distance), nearest first
// (ties: the earlier record first).
std::vector<std::pair<std::int64_t, float>> pick(const float* distances, std::int64_t n, int k) {
  std::vector<std::pair<std::int64_t, float>> best;
  if (k <= 0) return best;
  best.reserve(static_cast<std::size_t>(k) + 1);
  // Runs of 64 records are first counted against the farthest kept (a
  // vectorized loop) and looked at one by one only when one is nearer.
  using ::rodinia::nn::kPickRun;
  for (std::int64_t first = 0; first < n; first += kPickRun) {
    const std::int64_t last = first + kPickRun < n ? first + kPickRun : n;
    if (static_cast<int>(best.size()) == k) {
      const float farthest = best.back().second;
      if (::rodinia::nn::count_nearer(distances, first, last, farthest) == 0) continue;
    }
    for (std::int64_t i = first; i < last; ++i) {
      const float d = distances[i];
      if (static_cast<int>(best.size()) == k && !(d < best.back().second)) continue;
      // Insert after every kept record that is not farther.
      std::size_t at = best.size();
      while (at > 0 && d < best[at - 1].second) --at;
      best.insert(best.begin() + static_cast<std::ptrdiff_t>(at), {i, d});
      if (static_cast<int>(best.size()) > k) best.pop_back();
    }
  }
  return best;
}

}  // namespace

std::vector<std::pair<std::int64_t, float>> nearest_neighbours(const float* latitude, const float* longitude,
                                                               std::int64_t n, float target_latitude,
                                                               float target_longitude, int k, float* distances) {
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < n; ++i) {
    const float dy = latitude[i] - target_latitude, dx = longitude[i] - target_longitude;
    distances[i] = std::sqrt(dy * dy + dx * dx);
  }
  return pick(distances, n, k);
}

std::vector<std::pair<std::int64_t, float>> nearest_neighbours_in_text(const char* records, std::int64_t n,
                                                                       float target_latitude, float target_longitude,
                                                                       int k, float* distances) {
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < n; ++i) {
    namespace format = ::rodinia::nn;
    const char* record = records + i * static_cast<std::int64_t>(format::kRecordBytes);
    const float dy = format::parse_coordinate(record + format::kLatitudeColumn) - target_latitude,
                dx = format::parse_coordinate(record + format::kLongitudeColumn) - target_longitude;
    distances[i] = std::sqrt(dy * dy + dx * dx);
  }
  return pick(distances, n, k);
}

}  // namespace canopy::bench::rodinia::openmp
