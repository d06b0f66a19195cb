// Where regions run and where arrays live: the Most Common Descendant of the
// arguments' locations, the errors when there is none or when .at() cannot
// see an array, distance-based arrays, per-region and read-only arrays, and
// rt.move, rt.copy and rt.wrap in order with regions.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "engine_trees.hpp"

using namespace canopy;
using namespace canopy::engine_tests;

namespace {

const Kernel<void(InOut<std::int64_t>, In<std::int64_t>)>& accumulate() {
  static const Kernel kernel("accumulate",
                             [](InOut<std::int64_t> x, In<std::int64_t> y) { x[index(0)] += y[index(0)]; }, {"x", "y"});
  return kernel;
}

const Kernel<void(Out<std::int64_t>, Val<std::int64_t>)>& fill_scaled() {
  static const Kernel kernel("fill_scaled",
                             [](Out<std::int64_t> x, Val<std::int64_t> k) { x[index(0)] = index(0) * k; }, {"x", "k"});
  return kernel;
}

const Kernel<void(InOut<std::int64_t>)>& increment() {
  static const Kernel kernel("increment", [](InOut<std::int64_t> x) { x[index(0)] += 1; }, {"x"});
  return kernel;
}

bool holds_scaled(const Array<std::int64_t>& x, std::int64_t k, std::int64_t plus = 0) {
  auto h = x.host();
  for (std::int64_t i = 0; i < h.size(); ++i)
    if (h[i] != i * k + plus) return false;
  return true;
}

bool holds_constant(const Array<std::int64_t>& x, std::int64_t value) {
  for (std::int64_t v : x.host())
    if (v != value) return false;
  return true;
}

}  // namespace

TEST_CASE("engine: a region runs at the deepest of its arrays' locations") {
  Runtime rt;
  use_tree(rt, two_leaf_tree());
  const std::int64_t n = 1000;
  auto at_node = rt.array<std::int64_t>(n, at("node"));
  auto at_memory = rt.array<std::int64_t>(n, at("numa0"));
  auto at_leaf = rt.array<std::int64_t>(n, at("cpuB"));
  rt.region(fill_scaled()).over(n).launch(at_node, 1);
  rt.region(accumulate()).over(n).launch(at_leaf, at_node);
  rt.pause();
  CHECK(last_region(rt).location == "cpuB");
  CHECK(pieces_of(last_region(rt)) == std::vector<std::string>{"cpuB[0,1000)"});
  rt.region(accumulate()).over(n).launch(at_memory, at_node);
  rt.pause();
  CHECK(last_region(rt).location == "numa0");
  CHECK(pieces_of(last_region(rt)) == std::vector<std::string>{"cpuA[0,500)", "cpuB[500,1000)"});
  rt.region(accumulate()).over(n).launch(at_leaf, at_memory);
  rt.pause();
  CHECK(last_region(rt).location == "cpuB");
  CHECK(holds_scaled(at_leaf, 2));
  // Without arrays placed anywhere, a region runs at the root.
  auto anywhere = rt.array<std::int64_t>(n, close());
  rt.region(increment()).over(n).launch(anywhere);
  rt.pause();
  CHECK(last_region(rt).location == "node");
}

TEST_CASE("engine: no common descendant: the error names every array and its location") {
  Runtime rt;
  use_tree(rt, two_leaf_tree());
  auto left = rt.array<std::int64_t>(10, at("cpuA") | named("left"));
  auto right = rt.array<std::int64_t>(10, at("cpuB") | named("right"));
  CHECK(error_of([&] { rt.region(accumulate()).over(10).launch(left, right); }) ==
        "region of kernel 'accumulate': no location sees the memory of every argument (argument 'x', array 'left' "
        "(i64 10 at cpuA), at 'cpuA', argument 'y', array 'right' (i64 10 at cpuB), at 'cpuB'): argument 'x', array "
        "'left' (i64 10 at cpuA), at 'cpuA' and argument 'y', array 'right' (i64 10 at cpuB), at 'cpuB' are on "
        "different branches, which part at 'numa0'; move one of them (rt.move) onto the other's path to the root, for "
        "example to 'numa0'");
  // The advice works.
  rt.move(right, "numa0");
  rt.region(accumulate()).over(10).launch(left, right);
  rt.pause();
  CHECK(last_region(rt).location == "cpuA");
  CHECK(rt.stats().regions == 1);  // the refused launch is not counted
}

TEST_CASE("engine: .at() runs a region where it says, and refuses a location an array is not visible from") {
  Runtime rt;
  use_tree(rt, two_leaf_tree());
  auto shared = rt.array<std::int64_t>(100, at("numa0") | named("shared"));
  auto mine = rt.array<std::int64_t>(100, at("cpuA") | named("mine"));
  rt.region(increment()).over(100).at("cpuB").launch(shared);
  rt.pause();
  CHECK(last_region(rt).location == "cpuB");
  CHECK(pieces_of(last_region(rt)) == std::vector<std::string>{"cpuB[0,100)"});
  CHECK(error_of([&] { rt.region(increment()).over(100).at("cpuB").launch(mine); }) ==
        "region of kernel 'increment' at 'cpuB': argument 'x', array 'mine' (i64 100 at cpuA), is not visible there; "
        "memory is visible at its location and below it; move the array or run the region below 'cpuA'");
  CHECK(error_of([&] { rt.region(increment()).over(100).at("numa0").launch(mine); }) ==
        "region of kernel 'increment' at 'numa0': argument 'x', array 'mine' (i64 100 at cpuA), is not visible "
        "there; memory is visible at its location and below it; move the array or run the region below 'cpuA'");
  CHECK(holds_constant(shared, 1));
  CHECK(holds_constant(mine, 0));
}

TEST_CASE("engine: close() and far(n) arrays take the region's location, or n levels above it") {
  Runtime rt;
  use_tree(rt, two_leaf_tree());
  const std::int64_t n = 64;
  auto near = rt.array<std::int64_t>(n, close() | named("near"));
  auto up_one = rt.array<std::int64_t>(n, far(1) | named("up_one"));
  auto up_two = rt.array<std::int64_t>(n, far(2) | named("up_two"));
  auto up_many = rt.array<std::int64_t>(n, far(9) | named("up_many"));
  auto placed = rt.array<std::int64_t>(n, at("cpuB") | named("placed"));
  rt.region(fill_scaled()).over(n).launch(placed, 1);
  // The placed array alone decides where the region runs (cpuB).
  rt.region(accumulate()).over(n).launch(near, placed);
  rt.region(accumulate()).over(n).launch(up_one, placed);
  rt.region(accumulate()).over(n).launch(up_two, placed);
  rt.region(accumulate()).over(n).launch(up_many, placed);
  rt.pause();
  CHECK(last_region(rt).location == "cpuB");
  CHECK(near.location() == "cpuB");
  CHECK(up_one.location() == "numa0");
  CHECK(up_two.location() == "node");
  CHECK(up_many.location() == "node");  // the root, when the tree is not that deep
  for (auto* a : {&near, &up_one, &up_two, &up_many}) CHECK(holds_scaled(*a, 1));

  // The next region decides again.
  rt.region(increment()).over(n).at("cpuA").launch(near);
  rt.region(increment()).over(n).at("cpuA").launch(up_one);
  rt.pause();
  CHECK(near.location() == "cpuA");
  CHECK(up_one.location() == "numa0");
  CHECK(holds_scaled(near, 1, 1));
}

TEST_CASE("engine: a moving() array follows the region that uses it, with its values, and never decides where") {
  Runtime rt;
  use_tree(rt, two_leaf_tree());
  const std::int64_t n = 64;
  auto travels = rt.array<std::int64_t>(n, at("cpuA") | moving() | named("travels"));
  auto placed = rt.array<std::int64_t>(n, at("cpuB") | named("placed"));
  rt.region(fill_scaled()).over(n).launch(travels, 2);  // runs at cpuA, where it was placed
  rt.region(fill_scaled()).over(n).launch(placed, 1);
  rt.pause();
  CHECK(travels.location() == "cpuA");
  // cpuA and cpuB are on different branches: a persistent array at cpuA would
  // be refused here; the moving one goes where the placed one says.
  rt.region(accumulate()).over(n).launch(travels, placed);
  rt.pause();
  CHECK(last_region(rt).location == "cpuB");
  CHECK(travels.location() == "cpuB");
  CHECK(holds_scaled(travels, 3));
  rt.region(increment()).over(n).at("cpuA").launch(travels);
  rt.pause();
  CHECK(travels.location() == "cpuA");
  CHECK(holds_scaled(travels, 3, 1));
  auto stays = rt.array<std::int64_t>(n, at("cpuA") | named("stays"));
  CHECK(error_of([&] { rt.region(accumulate()).over(n).launch(stays, placed); }).find("different branches") !=
        std::string::npos);
}

TEST_CASE("engine: per_region() arrays read zero at the start of each region") {
  Runtime rt;
  use_tree(rt, two_leaf_tree());
  Kernel add_and_copy("add_and_copy",
                      [](InOut<std::int64_t> scratch, Out<std::int64_t> seen) {
                        Idx i = index(0);
                        scratch[i] += i + 7;
                        seen[i] = scratch[i];
                      },
                      {"scratch", "seen"});
  // Small arrays are cleared in place; large ones give their pages back.
  for (std::int64_t n : {100, 100000}) {
    CAPTURE(n);
    auto scratch = rt.array<std::int64_t>(n, at("numa0") | per_region() | named("scratch"));
    auto first = rt.array<std::int64_t>(n, at("numa0"));
    auto second = rt.array<std::int64_t>(n, at("numa0"));
    rt.region(add_and_copy).over(n).launch(scratch, first);
    rt.region(add_and_copy).over(n).launch(scratch, second);
    CHECK(holds_scaled(first, 1, 7));
    CHECK(holds_scaled(second, 1, 7));  // not 2 * (i + 7): the second region started from zero
    CHECK(holds_constant(scratch, 0));  // nothing survives a region
  }
}

TEST_CASE("engine: read_only() arrays refuse Out and InOut parameters") {
  Runtime rt;
  use_tree(rt, two_leaf_tree());
  auto table = rt.array<std::int64_t>(50, at("numa0") | read_only() | named("table"));
  auto out = rt.array<std::int64_t>(50, at("numa0"));
  auto h = table.host();
  for (std::int64_t i = 0; i < 50; ++i) h[i] = i * i;
  CHECK(error_of([&] { rt.region(fill_scaled()).over(50).launch(table, 2); }) ==
        "kernel 'fill_scaled' writes parameter 'x' but array 'table' (i64 50 at numa0) is read-only; pass a writable "
        "array");
  CHECK(error_of([&] { rt.region(accumulate()).over(50).launch(table, out); }) ==
        "kernel 'accumulate' writes parameter 'x' but array 'table' (i64 50 at numa0) is read-only; pass a writable "
        "array");
  CHECK(error_of([&] { rt.copy(table, out); }) ==
        "copy: array 'table' (i64 50 at numa0) is read-only; copy into a writable array");
  rt.region(accumulate()).over(50).launch(out, table);  // reading is fine
  rt.pause();
  CHECK(holds_constant(table, 0) == false);
  auto o = out.host();
  for (std::int64_t i = 0; i < 50; ++i) REQUIRE(o[i] == i * i);
}

TEST_CASE("engine: rt.move places an array after the regions that use it") {
  Runtime rt;
  use_tree(rt, two_leaf_tree());
  const std::int64_t n = 100000;
  auto x = rt.array<std::int64_t>(n, at("numa0") | named("x"));
  for (int r = 0; r < 20; ++r) rt.region(increment()).over(n).launch(x);
  rt.move(x, "cpuB");
  CHECK(x.location() == "cpuB");
  CHECK(holds_constant(x, 20));
  rt.region(increment()).over(n).launch(x);
  rt.pause();
  CHECK(pieces_of(last_region(rt)) == std::vector<std::string>{"cpuB[0,100000)"});
  CHECK(error_of([&] { rt.move(x, "moon"); }) ==
        "no location 'moon' in the hierarchy; known locations: node, numa0, cpuA, cpuB");
  CHECK(x.location() == "cpuB");
}

TEST_CASE("engine: rt.copy is ordered with the regions before and after it") {
  Runtime rt;
  use_tree(rt, two_leaf_tree());
  const std::int64_t n = 30000;
  auto source = rt.array<std::int64_t>(n, at("numa0"));
  std::vector<Array<std::int64_t>> copies;
  for (int k = 1; k <= 12; ++k) {
    copies.push_back(rt.array<std::int64_t>(n, at("numa0")));
    rt.region(fill_scaled()).over(n).launch(source, k);  // must wait for the copy before it
    rt.copy(copies.back(), source);                      // must wait for this fill
    rt.region(increment()).over(n).launch(copies.back());
  }
  for (int k = 1; k <= 12; ++k) CHECK(holds_scaled(copies[std::size_t(k - 1)], k, 1));
  CHECK(holds_scaled(source, 12));

  auto shorter = rt.array<std::int64_t>(n - 1, named("shorter"));
  auto floats = rt.array<float>(n, named("floats"));
  CHECK(error_of([&] { rt.copy(shorter, source); }).find("differ in element type or shape") != std::string::npos);
  CHECK(error_of([&] { rt.copy(shorter, source); }).find("array 'shorter' (i64 29999 at node)") != std::string::npos);
}

TEST_CASE("engine: rt.wrap runs regions on the program's own std::vector") {
  Runtime rt;
  use_tree(rt, two_leaf_tree());
  const std::int64_t n = 7777;
  std::vector<std::int64_t> data(std::size_t(n), 5);
  {
    auto wrapped = rt.wrap(data.data(), n, at("cpuA") | named("data"));
    CHECK(wrapped.location() == "cpuA");
    for (int r = 0; r < 3; ++r) rt.region(increment()).over(n).launch(wrapped);
    rt.pause();
    CHECK(pieces_of(last_region(rt)) == std::vector<std::string>{"cpuA[0,7777)"});
    CHECK(wrapped.host().data() == data.data());
  }  // the handle is gone; the vector is the program's and stays
  for (std::int64_t v : data) REQUIRE(v == 8);

  std::vector<double> grid(6 * 4, 0.0);
  auto wrapped_grid = rt.wrap<double, 2>(grid.data(), Shape(6, 4), at("numa0"));
  Kernel mark("mark", [](Out<double, 2> g) { g(index(0), index(1)) = cast<double>(index(0) * 10 + index(1)); }, {"g"});
  rt.region(mark).over(6, 4).launch(wrapped_grid);
  rt.pause();
  CHECK(grid[5 * 4 + 3] == 53.0);
  CHECK(pieces_of(last_region(rt)) == std::vector<std::string>{"cpuA[0,3)", "cpuB[3,6)"});
}
