// Rodinia's bfs (breadth-first search) in Canopy: the cost of every node is
// its number of edges from the source, found level by level. Shared by the
// bfs program and canopy-bench.
//
// Two regions per level, as in Rodinia: `expand` visits the frontier (the
// nodes whose mask is set), clears their mask and gives every unvisited
// neighbour the next level as its cost (a gather through the edge list, and
// a scatter into `cost`); `settle` turns the nodes just given the next level
// into the new frontier, marks them visited and counts them (a Sum
// reduction; the search ends when the count is zero). The costs are marked
// merge(MergeOp::Max): leaves that reach the same node write the same level,
// so a device may scatter into its own copy and the copies combine by
// maximum (a level is above the -1 of an unreached node). Rodinia's separate
// "updating" mask is the cost itself here: a node was just reached when its
// cost is the next level, so nothing needs clearing between levels.
#pragma once

#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <canopy/canopy.hpp>

#include "../common/rodinia.hpp"

namespace rodinia::bfs {

/// A graph in Rodinia's layout: node i's edges are edges[starts[i] ..
/// starts[i] + counts[i]); `weights` are the edge costs the file carries
/// (the search does not use them).
struct Graph {
  Vector<std::int32_t> starts, counts;
  Vector<std::int32_t> edges, weights;
  std::int32_t source = 0;

  std::int64_t nodes() const { return static_cast<std::int64_t>(starts.size()); }
};

/// A random graph of `nodes` nodes (fixed seed): every node is joined to 1
/// to 5 random others, both ways (so 6 edges per node on average), with
/// weights from 1 to 10; the source is node 0.
inline Graph generate(std::int64_t nodes, std::uint64_t seed = 7) {
  Random random(seed);
  std::vector<std::int32_t> from, to;
  for (std::int64_t u = 0; u < nodes && nodes > 1; ++u) {
    const std::int64_t joins = 1 + random.below(5);
    for (std::int64_t j = 0; j < joins; ++j) {
      std::int64_t v = random.below(nodes - 1);
      if (v >= u) ++v;  // never the node itself
      from.push_back(static_cast<std::int32_t>(u));
      to.push_back(static_cast<std::int32_t>(v));
    }
  }
  Graph g;
  g.starts.assign(static_cast<std::size_t>(nodes), 0);
  g.counts.assign(static_cast<std::size_t>(nodes), 0);
  for (std::size_t e = 0; e < from.size(); ++e) {
    ++g.counts[static_cast<std::size_t>(from[e])];
    ++g.counts[static_cast<std::size_t>(to[e])];
  }
  std::int64_t next = 0;
  for (std::int64_t i = 0; i < nodes; ++i) {
    g.starts[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(next);
    next += g.counts[static_cast<std::size_t>(i)];
  }
  g.edges.assign(static_cast<std::size_t>(next), 0);
  g.weights.assign(static_cast<std::size_t>(next), 0);
  std::vector<std::int64_t> fill(g.starts.begin(), g.starts.end());
  for (std::size_t e = 0; e < from.size(); ++e) {
    const auto weight = static_cast<std::int32_t>(1 + random.below(10));
    for (auto [a, b] : {std::pair{from[e], to[e]}, std::pair{to[e], from[e]}}) {
      const auto at = static_cast<std::size_t>(fill[static_cast<std::size_t>(a)]++);
      g.edges[at] = b;
      g.weights[at] = weight;
    }
  }
  return g;
}

/// Writes `g` in Rodinia's text format: the node count; a "start count" line
/// per node; the source; the edge count; a "destination weight" line per edge.
inline void write_graph(const std::string& path, const Graph& g) {
  rodinia::TextOut out(path);
  if (!out.good()) throw std::runtime_error("cannot open '" + path + "' for writing");
  out.integer(g.nodes()).put('\n');
  for (std::int64_t i = 0; i < g.nodes(); ++i)
    out.integer(g.starts[static_cast<std::size_t>(i)])
        .put(' ')
        .integer(g.counts[static_cast<std::size_t>(i)])
        .put('\n');
  out.put('\n').integer(g.source).text("\n\n").integer(static_cast<long long>(g.edges.size())).put('\n');
  for (std::size_t e = 0; e < g.edges.size(); ++e)
    out.integer(g.edges[e]).put(' ').integer(e < g.weights.size() ? g.weights[e] : 1).put('\n');
  if (!out.close()) throw std::runtime_error("cannot write '" + path + "'");
}

/// Reads a graph in Rodinia's text format. Throws std::runtime_error naming
/// the file and what is wrong (a missing number, an edge or a node out of range).
inline Graph read_graph(const std::string& path) {
  rodinia::Numbers numbers(path);  // the file whole, parsed in place
  if (!numbers.opened()) throw std::runtime_error("cannot open '" + path + "'");
  std::int64_t read_count = 0;
  auto number = [&](const char* what) -> long long {
    long long value = 0;
    if (!numbers.next(value))
      throw std::runtime_error("'" + path + "': expected " + what + " (number " + std::to_string(read_count + 1) +
                               " of the file)");
    ++read_count;
    return value;
  };
  Graph g;
  const long long nodes = number("the number of nodes");
  if (nodes < 0 || nodes > 0x7fffffff) throw std::runtime_error("'" + path + "': a node count out of range");
  g.starts.resize(static_cast<std::size_t>(nodes));
  g.counts.resize(static_cast<std::size_t>(nodes));
  for (long long i = 0; i < nodes; ++i) {
    g.starts[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(number("a node's first edge"));
    g.counts[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(number("a node's edge count"));
  }
  g.source = static_cast<std::int32_t>(number("the source node"));
  const long long edges = number("the number of edges");
  if (edges < 0 || edges > 0x7fffffff) throw std::runtime_error("'" + path + "': an edge count out of range");
  g.edges.resize(static_cast<std::size_t>(edges));
  g.weights.resize(static_cast<std::size_t>(edges));
  for (long long e = 0; e < edges; ++e) {
    g.edges[static_cast<std::size_t>(e)] = static_cast<std::int32_t>(number("an edge's destination"));
    g.weights[static_cast<std::size_t>(e)] = static_cast<std::int32_t>(number("an edge's weight"));
  }
  if (nodes > 0 && (g.source < 0 || g.source >= nodes))
    throw std::runtime_error("'" + path + "': the source " + std::to_string(g.source) + " is not a node");
  for (long long i = 0; i < nodes; ++i) {
    const long long first = g.starts[static_cast<std::size_t>(i)], count = g.counts[static_cast<std::size_t>(i)];
    if (first < 0 || count < 0 || first + count > edges)
      throw std::runtime_error("'" + path + "': node " + std::to_string(i) + "'s edges [" + std::to_string(first) +
                               ", " + std::to_string(first + count) + ") are outside the " + std::to_string(edges) +
                               " edges");
  }
  for (long long e = 0; e < edges; ++e)
    if (g.edges[static_cast<std::size_t>(e)] < 0 || g.edges[static_cast<std::size_t>(e)] >= nodes)
      throw std::runtime_error("'" + path + "': edge " + std::to_string(e) + " leads to " +
                               std::to_string(g.edges[static_cast<std::size_t>(e)]) + ", not a node");
  return g;
}

/// Writes the costs as Rodinia's result.txt does: "i) cost:c" per node.
inline void write_result(const std::string& path, const std::vector<std::int32_t>& cost) {
  rodinia::TextOut out(path);
  if (!out.good()) throw std::runtime_error("cannot open '" + path + "' for writing");
  for (std::size_t i = 0; i < cost.size(); ++i)
    out.integer(static_cast<long long>(i)).text(") cost:").integer(cost[i]).put('\n');
  if (!out.close()) throw std::runtime_error("cannot write '" + path + "'");
}

/// The costs found by a plain queue on the host (what --verify compares with).
inline std::vector<std::int32_t> search_serially(const Graph& g) {
  std::vector<std::int32_t> cost(static_cast<std::size_t>(g.nodes()), -1);
  if (g.nodes() == 0) return cost;
  std::vector<std::int32_t> queue{g.source};
  cost[static_cast<std::size_t>(g.source)] = 0;
  for (std::size_t head = 0; head < queue.size(); ++head) {
    const std::int32_t u = queue[head];
    for (std::int32_t e = g.starts[static_cast<std::size_t>(u)];
         e < g.starts[static_cast<std::size_t>(u)] + g.counts[static_cast<std::size_t>(u)]; ++e) {
      const std::int32_t v = g.edges[static_cast<std::size_t>(e)];
      if (cost[static_cast<std::size_t>(v)] >= 0) continue;
      cost[static_cast<std::size_t>(v)] = cost[static_cast<std::size_t>(u)] + 1;
      queue.push_back(v);
    }
  }
  return cost;
}

/// The level-synchronous search on a Canopy runtime.
class Search {
 public:
  /// Regions run at `location` (empty: where the arrays are, the root) with `policy`.
  Search(canopy::Runtime& rt, std::string location = "", std::string policy = "static")
      : rt_(rt), location_(std::move(location)), policy_(std::move(policy)) {}

  /// Every node's cost from `g`'s source (-1 where it is not reached), into
  /// `cost` (resized; the caller's memory, so that repeated searches reuse
  /// it). Returns the number of levels expanded.
  int run(const Graph& g, std::vector<std::int32_t>& cost) {
    using namespace canopy;
    const std::int64_t n = g.nodes();
    cost.assign(static_cast<std::size_t>(n), -1);
    if (n == 0) return 0;
    if (g.source < 0 || g.source >= n) throw Error("bfs: the source " + std::to_string(g.source) + " is not a node");
    cost[static_cast<std::size_t>(g.source)] = 0;
    auto in = [&](const Vector<std::int32_t>& v, const char* name) {
      return rt_.wrap(const_cast<std::int32_t*>(v.data()), static_cast<std::int64_t>(v.size()),
                      read_only() | named(name));
    };
    auto starts = in(g.starts, "starts"), counts = in(g.counts, "counts"), edges = in(g.edges, "edges");
    auto costs = rt_.wrap(cost.data(), n, merge(MergeOp::Max) | named("cost"));
    auto mask = rt_.array<bool>(n, named("mask"));
    auto visited = rt_.array<bool>(n, named("visited"));
    mask.host()[g.source] = true;
    visited.host()[g.source] = true;

    int levels = 0;
    for (std::int32_t next = 1;; ++next) {
      placed(rt_.region(expand())).over(n).launch(mask, starts, counts, edges, visited, costs, next);
      const std::int32_t reached = placed(rt_.region(settle())).over(n).reduce(costs, mask, visited, next);
      ++levels;
      if (reached == 0) break;
    }
    costs.host_read();
    return levels;
  }

 private:
  using ExpandKernel = canopy::Kernel<void(canopy::InOut<bool>, canopy::In<std::int32_t>, canopy::In<std::int32_t>,
                                           canopy::In<std::int32_t>, canopy::In<bool>, canopy::InOut<std::int32_t>,
                                           canopy::Val<std::int32_t>)>;
  using SettleKernel = canopy::Kernel<void(canopy::In<std::int32_t>, canopy::InOut<bool>, canopy::InOut<bool>,
                                           canopy::Val<std::int32_t>, canopy::Sum<std::int32_t>)>;

  // The frontier's unvisited neighbours get the next level.
  static const ExpandKernel& expand() {
    using namespace canopy;
    static const ExpandKernel kernel(
        "bfs_expand",
        [](InOut<bool> mask, In<std::int32_t> starts, In<std::int32_t> counts, In<std::int32_t> edges, In<bool> visited,
           InOut<std::int32_t> cost, Val<std::int32_t> next) {
          Idx i = index(0);
          If(mask[i], [&] {
            mask[i] = false;
            Value<std::int32_t> first = starts[i];
            For(first, first + counts[i], [&](Value<std::int32_t> e) {
              Value<std::int32_t> id = edges[e];
              If(!visited[id], [&] { cost[id] = next; });
            });
          });
        },
        {"mask", "starts", "counts", "edges", "visited", "cost", "next"});
    return kernel;
  }

  // The nodes just reached become the frontier; counts them.
  static const SettleKernel& settle() {
    using namespace canopy;
    static const SettleKernel kernel("bfs_settle",
                                     [](In<std::int32_t> cost, InOut<bool> mask, InOut<bool> visited,
                                        Val<std::int32_t> next, Sum<std::int32_t> reached) {
                                       Idx i = index(0);
                                       If(cost[i] == next, [&] {
                                         mask[i] = true;
                                         visited[i] = true;
                                         reached += 1;
                                       });
                                     },
                                     {"cost", "mask", "visited", "next", "reached"});
    return kernel;
  }

  template <class Region>
  Region placed(Region region) const {
    region.policy(policy_);
    if (!location_.empty()) region.at(location_);
    return region;
  }

  canopy::Runtime& rt_;
  std::string location_;
  std::string policy_;
};

}  // namespace rodinia::bfs
