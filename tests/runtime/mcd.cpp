// Most Common Descendant: Gecko's Figure 2 scenarios on a small node, the
// corner cases of the list (empty, duplicates, null entries, two trees), the
// error sentence, and random trees against a brute-force oracle.
#include <doctest/doctest.h>

#include <canopy/runtime/mcd.hpp>

#include <fmt/format.h>

#include <random>
#include <string>
#include <vector>

using namespace canopy;

namespace {

// node
// ├── numa0 (host memory)
// │   ├── cpu0
// │   └── unified0 (unified memory)
// │       └── gpu0 (cuda)
// └── numa1 (host memory)
//     └── cpu1
Hierarchy figure_two_node() {
  Hierarchy tree;
  tree.add("node", LocationKind::Virtual, {}, "");
  tree.add("numa0", LocationKind::HostMemory, {}, "node");
  tree.add("cpu0", LocationKind::Cpu, {}, "numa0");
  tree.add("unified0", LocationKind::UnifiedMemory, {}, "numa0");
  tree.add("gpu0", LocationKind::Cuda, {}, "unified0");
  tree.add("numa1", LocationKind::HostMemory, {}, "node");
  tree.add("cpu1", LocationKind::Cpu, {}, "numa1");
  return tree;
}

std::vector<const Location*> named(const Hierarchy& tree, const std::vector<std::string>& names) {
  std::vector<const Location*> locations;
  for (const std::string& name : names) locations.push_back(name.empty() ? nullptr : &tree.at(name));
  return locations;
}

// The answer by definition: a given location that every given location is at or above.
const Location* brute_force_mcd(const std::vector<const Location*>& locations) {
  for (const Location* candidate : locations) {
    if (candidate == nullptr) continue;
    bool below_all = true;
    for (const Location* other : locations) {
      if (other != nullptr && !Hierarchy::is_above_or_same(*other, *candidate)) below_all = false;
    }
    if (below_all) return candidate;
  }
  return nullptr;
}

}  // namespace

TEST_CASE("MCD: Figure 2 (a) the first location is the answer to start with") {
  const Hierarchy tree = figure_two_node();
  CHECK(most_common_descendant(named(tree, {"numa0"})) == tree.find("numa0"));
  CHECK(most_common_descendant(named(tree, {"gpu0"})) == tree.find("gpu0"));
}

TEST_CASE("MCD: Figure 2 (b) a location on the answer's path changes nothing") {
  const Hierarchy tree = figure_two_node();
  CHECK(most_common_descendant(named(tree, {"unified0", "numa0"})) == tree.find("unified0"));
  CHECK(most_common_descendant(named(tree, {"unified0", "node"})) == tree.find("unified0"));
  CHECK(most_common_descendant(named(tree, {"gpu0", "node", "unified0", "numa0"})) == tree.find("gpu0"));
}

TEST_CASE("MCD: Figure 2 (c) a location on another branch leaves no answer") {
  const Hierarchy tree = figure_two_node();
  CHECK(most_common_descendant(named(tree, {"numa0", "numa1"})) == nullptr);
  CHECK(most_common_descendant(named(tree, {"cpu0", "unified0"})) == nullptr);
  CHECK(most_common_descendant(named(tree, {"gpu0", "cpu1"})) == nullptr);
  // A conflict anywhere in the list ends it, even after agreement on a path.
  CHECK(most_common_descendant(named(tree, {"node", "numa0", "gpu0", "cpu0"})) == nullptr);
}

TEST_CASE("MCD: Figure 2 (d) a deeper location whose path holds the answer becomes the answer") {
  const Hierarchy tree = figure_two_node();
  CHECK(most_common_descendant(named(tree, {"numa0", "gpu0"})) == tree.find("gpu0"));
  CHECK(most_common_descendant(named(tree, {"node", "numa1", "cpu1"})) == tree.find("cpu1"));
  CHECK(most_common_descendant(named(tree, {"node", "unified0", "numa0", "gpu0"})) == tree.find("gpu0"));
}

TEST_CASE("MCD: empty lists, duplicates, null entries and two trees") {
  const Hierarchy tree = figure_two_node();
  CHECK(most_common_descendant({}) == nullptr);
  CHECK(most_common_descendant({nullptr}) == nullptr);
  CHECK(most_common_descendant(named(tree, {"numa0", "numa0", "numa0"})) == tree.find("numa0"));
  CHECK(most_common_descendant(named(tree, {"", "cpu0", "", "numa0"})) == tree.find("cpu0"));
  CHECK(most_common_descendant(named(tree, {"gpu0", "gpu0", "numa0"})) == tree.find("gpu0"));

  const Hierarchy other = figure_two_node();
  CHECK(most_common_descendant({&tree.at("node"), &other.at("node")}) == nullptr);
  CHECK(most_common_descendant({&tree.at("cpu0"), &other.at("cpu0")}) == nullptr);
}

TEST_CASE("MCD: the conflict found and the sentence that explains it") {
  const Hierarchy tree = figure_two_node();
  const auto locations = named(tree, {"node", "numa0", "cpu0", "gpu0"});
  const auto conflict = find_branch_conflict(locations);
  REQUIRE(conflict.has_value());
  CHECK(conflict->answer == 2);
  CHECK(conflict->other == 3);
  CHECK(explain_no_common_descendant(locations, {"a", "b", "c", "d"}) ==
        "no location sees the memory of every argument (a at 'node', b at 'numa0', c at 'cpu0', d at 'gpu0'): "
        "c at 'cpu0' and d at 'gpu0' are on different branches, which part at 'numa0'; move one of them "
        "(rt.move) onto the other's path to the root, for example to 'numa0'");
  // Without one label per entry: location names only, and null entries left out.
  CHECK(explain_no_common_descendant(named(tree, {"numa1", "", "gpu0"})) ==
        "no location sees the memory of every argument ('numa1', 'gpu0'): 'numa1' and 'gpu0' are on different "
        "branches, which part at 'node'; move one of them (rt.move) onto the other's path to the root, for "
        "example to 'node'");
  // With labels, an entry without a location says so.
  CHECK(explain_no_common_descendant(named(tree, {"cpu1", "", "cpu0"}), {"x", "t", "y"}) ==
        "no location sees the memory of every argument (x at 'cpu1', t (no fixed location), y at 'cpu0'): "
        "x at 'cpu1' and y at 'cpu0' are on different branches, which part at 'node'; move one of them "
        "(rt.move) onto the other's path to the root, for example to 'node'");

  const Hierarchy other = figure_two_node();
  CHECK(explain_no_common_descendant({&tree.at("numa0"), &other.at("numa0")}, {"p", "q"}) ==
        "no location sees the memory of every argument (p at 'numa0', q at 'numa0'): p at 'numa0' and q at "
        "'numa0' are in different trees; move one of them (rt.move) into the other's tree, onto its path to "
        "the root");

  // When there is an answer there is nothing to explain.
  CHECK_FALSE(find_branch_conflict(named(tree, {"numa0", "gpu0"})).has_value());
  CHECK(explain_no_common_descendant(named(tree, {"numa0", "gpu0"})).empty());
  CHECK_FALSE(find_branch_conflict({}).has_value());
}

TEST_CASE("MCD: a very deep tree") {
  Hierarchy tree;
  tree.add("m0", LocationKind::HostMemory, {}, "");
  const int depth = 20000;
  for (int level = 1; level < depth; ++level) {
    tree.add(fmt::format("m{}", level), LocationKind::HostMemory, {}, fmt::format("m{}", level - 1));
  }
  tree.add("bottom", LocationKind::Cpu, {}, fmt::format("m{}", depth - 1));
  tree.add("side", LocationKind::Cpu, {}, "m5");
  CHECK(most_common_descendant(named(tree, {"m0", "bottom", "m19000", "m7"})) == tree.find("bottom"));
  CHECK(most_common_descendant(named(tree, {"bottom", "side"})) == nullptr);
  CHECK(explain_no_common_descendant(named(tree, {"bottom", "side"})) ==
        "no location sees the memory of every argument ('bottom', 'side'): 'bottom' and 'side' are on different "
        "branches, which part at 'm5'; move one of them (rt.move) onto the other's path to the root, for example "
        "to 'm5'");
}

TEST_CASE("MCD: random trees against a brute-force oracle") {
  int answered = 0;
  int refused = 0;
  for (unsigned seed = 0; seed < 400; ++seed) {
    std::mt19937 random(seed);
    auto below = [&](int bound) { return static_cast<int>(random() % static_cast<unsigned>(bound)); };

    Hierarchy tree;
    tree.add("l0", LocationKind::Virtual, {}, "");
    std::vector<std::string> names{"l0"};
    std::vector<std::string> parents{"l0"};  // the locations that may take children
    const int size = 1 + below(40);
    for (int index = 1; index < size; ++index) {
      const std::string name = fmt::format("l{}", index);
      const std::string& parent = parents[below(static_cast<int>(parents.size()))];
      const bool executes = below(10) < 4;
      tree.add(name, executes ? LocationKind::Cpu : LocationKind::HostMemory, {}, parent);
      names.push_back(name);
      if (!executes) parents.push_back(name);
    }

    for (int trial = 0; trial < 20; ++trial) {
      std::vector<const Location*> locations;
      const int count = below(7);
      if (below(2) == 0) {
        // Along one path to the root, so that an answer exists, plus sometimes one stray location.
        std::vector<const Location*> path;
        for (const Location* step = &tree.at(names[below(size)]); step != nullptr; step = step->parent()) {
          path.push_back(step);
        }
        for (int pick = 0; pick < count; ++pick) locations.push_back(path[below(static_cast<int>(path.size()))]);
        if (below(3) == 0) locations.insert(locations.begin() + below(count + 1), &tree.at(names[below(size)]));
      } else {
        for (int pick = 0; pick < count; ++pick) {
          locations.push_back(below(8) == 0 ? nullptr : &tree.at(names[below(size)]));
        }
      }

      const Location* expected = brute_force_mcd(locations);
      const Location* found = most_common_descendant(locations);
      CAPTURE(seed);
      CAPTURE(trial);
      CHECK(found == expected);
      const auto conflict = find_branch_conflict(locations);
      const std::string explanation = explain_no_common_descendant(locations);
      bool any_location = false;
      for (const Location* location : locations) any_location = any_location || location != nullptr;
      if (expected != nullptr || !any_location) {
        CHECK_FALSE(conflict.has_value());
        CHECK(explanation.empty());
        if (expected != nullptr) ++answered;
      } else {
        ++refused;
        REQUIRE(conflict.has_value());
        const Location& first = *locations.at(conflict->answer);
        const Location& second = *locations.at(conflict->other);
        CHECK_FALSE(Hierarchy::is_above_or_same(first, second));
        CHECK_FALSE(Hierarchy::is_above_or_same(second, first));
        CHECK(explanation.find(fmt::format("'{}'", second.name())) != std::string::npos);
      }
    }
  }
  // Both outcomes were exercised many times.
  CHECK(answered > 1000);
  CHECK(refused > 1000);
}
