// Rodinia's bfs as a careful programmer writes it with OpenMP: per level, a
// parallel loop over the nodes expands the frontier (mask) into the
// unvisited neighbours (cost and an updating mask), and a second one makes
// the updated nodes the next frontier, with a reduction saying whether there
// was any. Neighbours reached from several frontier nodes get the same cost,
// so those writes may race harmlessly, as in Rodinia.
#include "bfs_openmp.hpp"

namespace canopy::bench::rodinia::openmp {

int bfs(const std::int32_t* starts, const std::int32_t* counts, const std::int32_t* edges, std::int64_t n,
        std::int32_t source, std::int32_t* cost) {
  std::vector<char> mask(static_cast<std::size_t>(n), 0), updating(static_cast<std::size_t>(n), 0),
      visited(static_cast<std::size_t>(n), 0);
  char* frontier = mask.data();
  char* updated = updating.data();
  char* seen = visited.data();
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < n; ++i) cost[i] = -1;
  if (n == 0) return 0;
  cost[source] = 0;
  frontier[source] = 1;
  seen[source] = 1;
  int levels = 0;
  bool more = false;
  do {
#pragma omp parallel for schedule(static)
    for (std::int64_t i = 0; i < n; ++i) {
      if (!frontier[i]) continue;
      frontier[i] = 0;
      for (std::int32_t e = starts[i]; e < starts[i] + counts[i]; ++e) {
        const std::int32_t id = edges[e];
        if (!seen[id]) {
          cost[id] = cost[i] + 1;
          updated[id] = 1;
        }
      }
    }
    more = false;
#pragma omp parallel for schedule(static) reduction(|| : more)
    for (std::int64_t i = 0; i < n; ++i) {
      if (!updated[i]) continue;
      frontier[i] = 1;
      seen[i] = 1;
      updated[i] = 0;
      more = true;
    }
    ++levels;
  } while (more);
  return levels;
}

}  // namespace canopy::bench::rodinia::openmp
