// The plain OpenMP baseline of Rodinia's bfs (bfs_openmp.cpp, built -O3
// -march=native -fopenmp): Rodinia's two parallel loops per level over
// boolean masks.
#pragma once

#include <cstdint>
#include <vector>

namespace canopy::bench::rodinia::openmp {

/// Every node's cost (edges from `source`, -1 where unreached) into `cost`
/// (n values) for the graph whose node i has edges edges[starts[i] ..
/// starts[i] + counts[i]). Returns the number of levels expanded.
int bfs(const std::int32_t* starts, const std::int32_t* counts, const std::int32_t* edges, std::int64_t n,
        std::int32_t source, std::int32_t* cost);

}  // namespace canopy::bench::rodinia::openmp
