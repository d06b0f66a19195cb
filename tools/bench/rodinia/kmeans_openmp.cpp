// Rodinia's kmeans as a careful programmer writes it with OpenMP: a parallel
// loop over the points finds each one's nearest centre (the features in
// order, in float), counts the points that changed cluster with a reduction,
// and adds the point into its thread's own partial sums (padded rows, so that
// threads do not share cache lines); the calling thread then adds the
// partials and divides.
#include "kmeans_openmp.hpp"

#include <omp.h>

#include <algorithm>
#include <limits>

namespace canopy::bench::rodinia::openmp {

int kmeans(const float* values, std::int64_t count, std::int64_t features, int clusters, float threshold,
           std::vector<float>& centres, std::vector<std::int32_t>& membership) {
  const std::int64_t k = clusters, nf = features;
  centres.assign(values, values + k * nf);
  membership.assign(static_cast<std::size_t>(count), -1);
  const int threads = omp_get_max_threads();
  // Each thread's sums and counts, rows rounded up to 64 bytes.
  const std::int64_t row = (k * nf + 15) / 16 * 16, count_row = (k + 7) / 8 * 8;
  std::vector<float> partial(static_cast<std::size_t>(threads * row), 0.0f);
  std::vector<std::int64_t> partial_counts(static_cast<std::size_t>(threads * count_row), 0);
  std::vector<double> sums(static_cast<std::size_t>(k * nf));
  std::vector<std::int64_t> lengths(static_cast<std::size_t>(k));
  float* centre = centres.data();
  std::int32_t* member = membership.data();

  int rounds = 0, round = 0;
  double delta = 0;
  do {
    delta = 0;
#pragma omp parallel reduction(+ : delta)
    {
      float* mine = partial.data() + omp_get_thread_num() * row;
      std::int64_t* my_counts = partial_counts.data() + omp_get_thread_num() * count_row;
      std::fill(mine, mine + row, 0.0f);
      std::fill(my_counts, my_counts + count_row, 0);
#pragma omp for schedule(static)
      for (std::int64_t p = 0; p < count; ++p) {
        const float* point = values + p * nf;
        float best_distance = std::numeric_limits<float>::max();
        std::int32_t best = 0;
        for (std::int64_t c = 0; c < k; ++c) {
          float distance = 0;
          for (std::int64_t f = 0; f < nf; ++f) {
            const float d = point[f] - centre[c * nf + f];
            distance += d * d;
          }
          if (distance < best_distance) {
            best_distance = distance;
            best = static_cast<std::int32_t>(c);
          }
        }
        if (member[p] != best) delta += 1;
        member[p] = best;
        my_counts[best] += 1;
        for (std::int64_t f = 0; f < nf; ++f) mine[best * nf + f] += point[f];
      }
    }
    ++rounds;
    std::fill(sums.begin(), sums.end(), 0.0);
    std::fill(lengths.begin(), lengths.end(), 0);
    for (int t = 0; t < threads; ++t) {
      const float* theirs = partial.data() + t * row;
      for (std::int64_t i = 0; i < k * nf; ++i) sums[static_cast<std::size_t>(i)] += theirs[i];
      for (std::int64_t c = 0; c < k; ++c) lengths[static_cast<std::size_t>(c)] += partial_counts[t * count_row + c];
    }
    for (std::int64_t c = 0; c < k; ++c) {
      if (lengths[static_cast<std::size_t>(c)] <= 0) continue;
      for (std::int64_t f = 0; f < nf; ++f)
        centre[c * nf + f] = static_cast<float>(sums[static_cast<std::size_t>(c * nf + f)]) /
                             float(lengths[static_cast<std::size_t>(c)]);
    }
  } while (delta > threshold && round++ < 500);
  return rounds;
}

}  // namespace canopy::bench::rodinia::openmp
