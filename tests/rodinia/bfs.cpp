// Rodinia's bfs (examples/rodinia/bfs) at a small size against a serial
// breadth-first search written here: on cpu0, on opencl0, and split over
// both (numa0 with percentage:[50,50]). Costs are integers: equal exactly.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstdio>
#include <deque>
#include <string>
#include <vector>

#include "hetero/hetero_support.hpp"
#include "rodinia/bfs/bfs.hpp"

using namespace canopy;
using namespace canopy::hetero_tests;
namespace bfs = rodinia::bfs;

namespace {

std::vector<std::int32_t> reference(const bfs::Graph& g) {
  std::vector<std::int32_t> cost(static_cast<std::size_t>(g.nodes()), -1);
  std::deque<std::int32_t> queue{g.source};
  cost[static_cast<std::size_t>(g.source)] = 0;
  while (!queue.empty()) {
    const auto u = static_cast<std::size_t>(queue.front());
    queue.pop_front();
    for (std::int32_t k = 0; k < g.counts[u]; ++k) {
      const auto v = static_cast<std::size_t>(g.edges[static_cast<std::size_t>(g.starts[u] + k)]);
      if (cost[v] < 0) {
        cost[v] = cost[u] + 1;
        queue.push_back(static_cast<std::int32_t>(v));
      }
    }
  }
  return cost;
}

// Two components, a node with no edges, a self loop, and the source in the
// middle: 0-1-2-3 (source 2), 4<->5, 6 alone, 7 with an edge to itself and to 3.
bfs::Graph small_graph() {
  bfs::Graph g;
  const std::vector<std::vector<std::int32_t>> adjacency = {{1}, {0, 2}, {1, 3}, {2, 7}, {5}, {4}, {}, {7, 3}};
  for (const auto& out : adjacency) {
    g.starts.push_back(static_cast<std::int32_t>(g.edges.size()));
    g.counts.push_back(static_cast<std::int32_t>(out.size()));
    for (auto v : out) {
      g.edges.push_back(v);
      g.weights.push_back(1);
    }
  }
  g.source = 2;
  return g;
}

const bfs::Graph& generated() {
  static const bfs::Graph g = bfs::generate(30001);
  return g;
}

}  // namespace

TEST_CASE("rodinia bfs: on cpu0 the costs equal a serial search, unreached nodes stay -1") {
  Runtime rt;
  if (!has_leaves(rt.hierarchy(), {"cpu0"})) return;
  bfs::Search search(rt, "cpu0");
  std::vector<std::int32_t> cost;
  const int levels = search.run(small_graph(), cost);
  CHECK(cost == std::vector<std::int32_t>{2, 1, 0, 1, -1, -1, -1, 2});
  CHECK(levels == 3);  // two levels reach nodes, the third finds none
  const std::vector<std::int32_t> want = reference(generated());
  search.run(generated(), cost);
  CHECK(cost == want);
}

TEST_CASE("rodinia bfs: on opencl0 the costs equal a serial search") {
  Runtime rt;
  if (!has_leaves(rt.hierarchy(), {"opencl0"})) return;
  bfs::Search search(rt, "opencl0");
  std::vector<std::int32_t> cost;
  search.run(small_graph(), cost);
  CHECK(cost == std::vector<std::int32_t>{2, 1, 0, 1, -1, -1, -1, 2});
  search.run(generated(), cost);
  CHECK(cost == reference(generated()));
}

TEST_CASE("rodinia bfs: split over cpu0 and opencl0 (numa0, percentage:[50,50]) the costs equal a serial search") {
  Runtime rt;
  const Hierarchy discovered = rt.hierarchy();
  if (!has_leaves(discovered, {"cpu0", "opencl0"})) return;
  use_leaves(rt, discovered, {"cpu0", "opencl0"});
  bfs::Search search(rt, "numa0", "percentage:[50,50]");
  std::vector<std::int32_t> cost;
  search.run(generated(), cost);
  CHECK(cost == reference(generated()));
  CHECK(joined(pieces_of(last_region(rt))) == "cpu0[0,15001) opencl0[15001,30001)");
  search.run(small_graph(), cost);
  CHECK(cost == std::vector<std::int32_t>{2, 1, 0, 1, -1, -1, -1, 2});
}

TEST_CASE("rodinia bfs: a graph written and read back is the same; a broken file is refused") {
  const std::string path = "rodinia-bfs-test-graph.txt";
  const bfs::Graph g = bfs::generate(500, 5);
  bfs::write_graph(path, g);
  const bfs::Graph read = bfs::read_graph(path);
  CHECK(read.starts == g.starts);
  CHECK(read.counts == g.counts);
  CHECK(read.edges == g.edges);
  CHECK(read.weights == g.weights);
  CHECK(read.source == 0);
  std::FILE* file = std::fopen(path.c_str(), "w");
  std::fputs("2\n0 1\n1 1\n0\n2\n1 1\n5 1\n", file);  // an edge to node 5 of 2
  std::fclose(file);
  CHECK_THROWS_WITH(bfs::read_graph(path), doctest::Contains("leads to 5, not a node"));
  std::remove(path.c_str());
}
