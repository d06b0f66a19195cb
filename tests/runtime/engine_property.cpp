// A property of the whole engine: on random small trees of CPU leaves (all
// sharing this machine's cores, several leaves on one core), with random
// ranges, locations and policies, a region whose points atomically count
// their visits leaves every index counted exactly once, and rt.stats() shows
// pieces that tile the range in order on leaves below where the region ran.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "engine_trees.hpp"

using namespace canopy;
using namespace canopy::engine_tests;

namespace {

const Kernel<void(InOut<std::int32_t>)>& count_visits() {
  static const Kernel kernel("count_visits", [](InOut<std::int32_t> visits) { atomic_add(visits[index(0)], 1); },
                             {"visits"});
  return kernel;
}

const Kernel<void(InOut<std::int32_t, 2>)>& count_visits_2d() {
  static const Kernel kernel(
      "count_visits_2d", [](InOut<std::int32_t, 2> visits) { atomic_add(visits(index(0), index(1)), 1); }, {"visits"});
  return kernel;
}

/// A random tree: a virtual root, up to four virtual or memory locations
/// below it or below each other, and one to five CPU leaves on one or two of
/// this machine's cores, shared freely.
Hierarchy random_tree(std::mt19937& rng) {
  Hierarchy tree;
  std::vector<std::string> inner{"r"};
  tree.add("r", LocationKind::Virtual, {}, "");
  auto pick = [&](std::size_t n) { return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng); };
  const std::size_t inner_count = pick(5);
  for (std::size_t k = 0; k < inner_count; ++k) {
    const bool memory = pick(2) == 0;
    std::string name = (memory ? "m" : "v") + std::to_string(k);
    tree.add(name, memory ? LocationKind::HostMemory : LocationKind::Virtual, {}, inner[pick(inner.size())]);
    inner.push_back(name);
  }
  const std::size_t leaf_count = 1 + pick(5);
  for (std::size_t k = 0; k < leaf_count; ++k) {
    std::vector<unsigned> pus{core(pick(core_pus().size()))};
    if (pick(3) == 0 && core_pus().size() > 1) {
      unsigned other = core(pick(core_pus().size()));
      if (other != pus[0]) pus.push_back(other);
    }
    tree.add("c" + std::to_string(k), LocationKind::Cpu, cpu_on(pus), inner[pick(inner.size())]);
  }
  return tree;
}

/// `parts` whole numbers from 0 up that sum to `total`.
std::vector<std::int64_t> random_parts(std::mt19937& rng, std::size_t parts, std::int64_t total) {
  std::vector<std::int64_t> cuts{0, total};
  for (std::size_t k = 1; k < parts; ++k) cuts.push_back(std::uniform_int_distribution<std::int64_t>(0, total)(rng));
  std::sort(cuts.begin(), cuts.end());
  std::vector<std::int64_t> sizes;
  for (std::size_t k = 0; k + 1 < cuts.size(); ++k) sizes.push_back(cuts[k + 1] - cuts[k]);
  return sizes;
}

std::string list_of(const std::vector<std::int64_t>& numbers) {
  std::string text = "[";
  for (std::size_t k = 0; k < numbers.size(); ++k) text += (k ? "," : "") + std::to_string(numbers[k]);
  return text + "]";
}

/// A random policy for a region at `at` over `rows` rows: percentage and
/// range lists have at least one number per child that holds a leaf, and
/// often more (they fold).
std::string random_policy(std::mt19937& rng, const Hierarchy& tree, const Location& at, std::int64_t rows) {
  std::size_t sharing = 0;
  for (const Location* child : at.children()) sharing += tree.leaves(*child).empty() ? 0 : 1;
  const std::size_t numbers = std::max<std::size_t>(1, sharing) + std::uniform_int_distribution<std::size_t>(0, 3)(rng);
  switch (std::uniform_int_distribution<int>(0, 5)(rng)) {
    case 0: return "static";
    case 1: return "flatten";
    case 2: return "any";
    case 3: return "adaptive";
    case 4: return "percentage:" + list_of(random_parts(rng, numbers, 100));
    default: return "range:" + list_of(random_parts(rng, numbers, rows));
  }
}

}  // namespace

TEST_CASE("engine: on random trees, ranges and policies every index runs exactly once") {
  Runtime rt;
  for (unsigned seed = 1; seed <= 150; ++seed) {
    CAPTURE(seed);
    std::mt19937 rng(seed);
    const Hierarchy tree = random_tree(rng);
    CAPTURE(tree.to_text());
    use_tree(rt, tree);
    std::vector<const Location*> places;
    for (const Location* location : tree.all())
      if (!tree.leaves(*location).empty()) places.push_back(location);

    for (int region = 0; region < 3; ++region) {
      const Location& at = *places[std::uniform_int_distribution<std::size_t>(0, places.size() - 1)(rng)];
      const std::int64_t rows = std::uniform_int_distribution<int>(0, 4)(rng) == 0
                                    ? std::uniform_int_distribution<std::int64_t>(0, 3)(rng)
                                    : std::uniform_int_distribution<std::int64_t>(1, 3000)(rng);
      const std::int64_t columns = region == 2 ? std::uniform_int_distribution<std::int64_t>(1, 5)(rng) : 1;
      const std::string policy = random_policy(rng, tree, at, rows);
      CAPTURE(at.name());
      CAPTURE(rows);
      CAPTURE(columns);
      CAPTURE(policy);

      bool once = true;
      if (region == 2) {
        auto visits = rt.array<std::int32_t, 2>(Shape(rows, columns));
        rt.region(count_visits_2d()).over(rows, columns).policy(policy).at(at.name()).launch(visits);
        for (std::int32_t v : visits.host()) once = once && v == 1;
      } else {
        auto visits = rt.array<std::int32_t>(rows);
        rt.region(count_visits()).over(rows).policy(policy).at(at.name()).launch(visits);
        for (std::int32_t v : visits.host()) once = once && v == 1;
      }
      CHECK(once);

      // The pieces tile [0, rows) in order, each on an executing leaf at or below `at`.
      const RegionStats stats = last_region(rt);
      CHECK(stats.location == at.name());
      std::set<std::string> allowed;
      for (const Location* leaf : tree.leaves(at)) allowed.insert(leaf->name());
      std::int64_t next = 0;
      for (const PieceStats& piece : stats.pieces) {
        CHECK(allowed.count(piece.leaf) == 1);
        CHECK(piece.begin == next);
        CHECK(piece.end > piece.begin);
        next = piece.end;
      }
      CHECK(next == rows);
      if (policy == "any") CHECK(stats.pieces.size() <= 1);
    }
  }
}
