// Host views of arrays that devices wrote: host_read() pulls back only the
// stale ranges and leaves the device copies current (the next region on the
// devices copies nothing in); host() brings the data back too, but the host
// may change any element through it, so the next region on a device copies
// what it reads in again. Every step checks the bytes moved for the array and
// its values.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "hetero_support.hpp"

using namespace canopy;
using namespace canopy::hetero_tests;

namespace {

constexpr std::int64_t kN = 10000;
constexpr std::int64_t kHalf = kN / 2;  // static: cpu0 [0,H), opencl0 [H,N)
constexpr std::int64_t kElement = sizeof(std::int32_t);

const Kernel<void(Out<std::int32_t>, Val<std::int32_t>)>& produce() {
  static const Kernel kernel("produce",
                             [](Out<std::int32_t> x, Val<std::int32_t> offset) {
                               Idx i = index(0);
                               x[i] = cast<std::int32_t>(i) * 3 + offset;
                             },
                             {"x", "offset"});
  return kernel;
}

const Kernel<void(Out<std::int32_t>, In<std::int32_t>)>& twice() {
  static const Kernel kernel("twice",
                             [](Out<std::int32_t> y, In<std::int32_t> x) {
                               Idx i = index(0);
                               y[i] = x[i] * 2;
                             },
                             {"y", "x"});
  return kernel;
}

// Bytes in `elements` elements, as a Moved with one field set.
Moved to_device(std::int64_t elements) { return {elements * kElement, 0, 0, 0}; }
Moved to_host(std::int64_t elements) { return {0, elements * kElement, 0, 0}; }
Moved found(std::int64_t elements) { return {0, 0, 0, elements * kElement}; }

// Keeps of `rt`'s tree cpu0 and the first device; false (the test skipped,
// saying why) without them.
bool use_cpu0_and_device(Runtime& rt) {
  const Hierarchy discovered = rt.hierarchy();
  if (!has_leaves(discovered, {"cpu0", accelerator(0)})) return false;
  use_leaves(rt, discovered, {"cpu0", accelerator(0)});
  return true;
}

// How many of the first `count` elements of `view` differ from `value(i)`.
template <class View, class F>
std::int64_t differing(const View& view, std::int64_t count, F value) {
  std::int64_t wrong = 0;
  for (std::int64_t i = 0; i < count; ++i) wrong += view[i] != value(i);
  return wrong;
}

}  // namespace

TEST_CASE("hetero: host_read() pulls back only stale ranges and keeps the device copies current" *
          doctest::test_suite("opencl")) {
  Runtime rt;
  if (!use_cpu0_and_device(rt)) return;
  auto x = rt.array<std::int32_t>(kN, at("numa0") | named("x"));
  auto y = rt.array<std::int32_t>(kN, at("numa0") | named("y"));

  // cpu0 writes x[0,H) in host memory, opencl0 x[H,N) in its own: nothing
  // is copied in (every element is overwritten).
  rt.region(produce()).over(kN).launch(x, 7);
  rt.pause();
  CHECK(joined(pieces_of(last_region(rt))) == joined(expected_pieces("static", kN, "cpu0", accelerator(0))));
  CHECK(moved(rt, "x") == Moved{});

  // The first host_read() pulls back opencl0's half only. (Each view is
  // closed before the next region: an open one gets what devices write as
  // their pieces end, see the test below.)
  Moved before = moved(rt, "x");
  {
    const auto view = x.host_read();
    CHECK(moved(rt, "x") - before == to_host(kN - kHalf) + found(kHalf));
    CHECK(differing(view, kN, [](std::int64_t i) { return std::int32_t(i * 3 + 7); }) == 0);
  }

  // A second one moves nothing.
  before = moved(rt, "x");
  CHECK(x.host_read().size() == kN);
  CHECK(moved(rt, "x") - before == found(kN));

  // opencl0's copy of x[H,N) is still current: reading x on the same split
  // copies nothing in.
  before = moved(rt, "x");
  rt.region(twice()).over(kN).launch(y, x);
  rt.pause();
  CHECK(moved(rt, "x") - before == found(kN));
  auto doubled = y.host_read();
  CHECK(differing(doubled, kN, [](std::int64_t i) { return std::int32_t(2 * (i * 3 + 7)); }) == 0);

  // A region over the first quarter only: host_read() pulls back what
  // opencl0 wrote of it, [N/8, N/4), and nothing of the rest.
  rt.region(produce()).over(kN / 4).launch(x, -5);
  rt.pause();
  CHECK(joined(pieces_of(last_region(rt))) == joined(expected_pieces("static", kN / 4, "cpu0", accelerator(0))));
  before = moved(rt, "x");
  const auto view = x.host_read();
  CHECK(moved(rt, "x") - before == to_host(kN / 8) + found(kN - kN / 8));
  CHECK(differing(view, kN, [](std::int64_t i) { return std::int32_t(i * 3 + (i < kN / 4 ? -5 : 7)); }) == 0);
}

TEST_CASE(
    "hetero: a host view kept open across regions, and memory given with wrap(), behave on a device as on a "
    "CPU leaf: they show what each region wrote once it ends, and what the program writes in them between "
    "regions reaches the next" *
    doctest::test_suite("opencl")) {
  // A new user's program, correct on a CPU leaf, read stale values through
  // a view kept from before a device region (a[5] = 5 where the region left
  // 11), lost what it then wrote through that view, and lost what it wrote
  // straight into wrapped memory after pause(): 2/3 of the elements stale.
  Runtime rt;
  if (!use_cpu0_and_device(rt)) return;
  auto x = rt.array<std::int32_t>(kN, at("numa0") | named("x"));
  auto y = rt.array<std::int32_t>(kN, at("numa0") | named("y"));

  // A view open across a region that opencl0 runs alone.
  const auto view = x.host();
  for (std::int64_t i = 0; i < kN; ++i) view[i] = std::int32_t(i);
  rt.region(produce()).over(kN).at(accelerator(0)).launch(x, 4);
  rt.pause();
  CHECK(differing(view, kN, [](std::int64_t i) { return std::int32_t(i * 3 + 4); }) == 0);
  // What the program writes through it reaches the next region, here on
  // both leaves.
  for (std::int64_t i = 0; i < kN; ++i) view[i] = std::int32_t(kN - i);
  rt.region(twice()).over(kN).launch(y, x);
  CHECK(differing(y.host_read(), kN, [](std::int64_t i) { return std::int32_t(2 * (kN - i)); }) == 0);

  // Wrapped memory, read and written by the program after each pause().
  std::vector<std::int32_t> mine(static_cast<std::size_t>(kN), 1);
  auto w = rt.wrap(mine.data(), kN, named("w"));
  for (int round = 0; round < 3; ++round) {
    CAPTURE(round);
    rt.region(twice()).over(kN).launch(w, y);  // w = 2 y, opencl0 writing half
    rt.pause();
    std::int64_t wrong = 0;
    for (std::int64_t i = 0; i < kN; ++i) wrong += mine[std::size_t(i)] != 4 * (kN - i);
    CHECK(wrong == 0);
    for (std::int64_t i = 0; i < kN; ++i) mine[std::size_t(i)] = std::int32_t(i + round);
    rt.region(twice()).over(kN).launch(y, w);  // y = 2 w, opencl0 reading half
    rt.pause();
    CHECK(differing(y.host_read(), kN, [&](std::int64_t i) { return std::int32_t(2 * (i + round)); }) == 0);
    rt.region(twice()).over(kN).launch(y, x);  // back to y = 2 x
  }
  // An array with no view open keeps its device copy current between
  // regions: nothing moves for it (host_read's test above counts that).

  // A merged histogram with a view open: each region's device parts are in
  // it once the region ends (they were combined only at the next use).
  static const Kernel count("host_views_count",
                            [](InOut<std::int32_t> bins, In<std::int32_t> x) { atomic_add(bins[x[index(0)] % 16], 1); },
                            {"bins", "x"});
  auto bins = rt.array<std::int32_t>(16, named("bins") | merge(MergeOp::Sum));
  const auto counted = bins.host();
  std::vector<std::int32_t> want(16, 0);
  for (int round = 0; round < 3; ++round) {
    CAPTURE(round);
    rt.region(count).over(kN).launch(bins, x);  // over cpu0 and opencl0
    rt.pause();
    for (std::int64_t i = 0; i < kN; ++i) ++want[std::size_t((kN - i) % 16)];
    CHECK(differing(counted, 16, [&](std::int64_t b) { return want[std::size_t(b)]; }) == 0);
  }
}

TEST_CASE("hetero: host() brings the data back and the next device region copies the array in again" *
          doctest::test_suite("opencl")) {
  Runtime rt;
  if (!use_cpu0_and_device(rt)) return;
  auto x = rt.array<std::int32_t>(kN, at("numa0") | named("x"));
  auto y = rt.array<std::int32_t>(kN, at("numa0") | named("y"));

  // opencl0 alone writes all of x; host() brings every element back.
  rt.region(produce()).over(kN).at(accelerator(0)).launch(x, 1);
  rt.pause();
  Moved before = moved(rt, "x");
  {
    auto view = x.host();
    CHECK(moved(rt, "x") - before == to_host(kN));
    CHECK(differing(view, kN, [](std::int64_t i) { return std::int32_t(i * 3 + 1); }) == 0);
  }

  // The host view may have changed anything, so opencl0 copies all of x in
  // again, even though nothing changed.
  before = moved(rt, "x");
  rt.region(twice()).over(kN).at(accelerator(0)).launch(y, x);
  rt.pause();
  CHECK(moved(rt, "x") - before == to_device(kN));
  CHECK(differing(y.host_read(), kN, [](std::int64_t i) { return std::int32_t(2 * (i * 3 + 1)); }) == 0);

  // Changes through host() reach the devices: the split region sees them on
  // both leaves, opencl0 copying in its half only.
  {
    auto view = x.host();
    for (std::int64_t i = 0; i < kN; ++i) view[i] = std::int32_t(kN - i);
  }
  before = moved(rt, "x");
  rt.region(twice()).over(kN).launch(y, x);
  rt.pause();
  CHECK(moved(rt, "x") - before == to_device(kN - kHalf) + found(kHalf));
  CHECK(differing(y.host_read(), kN, [](std::int64_t i) { return std::int32_t(2 * (kN - i)); }) == 0);

  // host_read() after host() moves nothing: the host copy is current.
  before = moved(rt, "x");
  CHECK(differing(x.host_read(), kN, [](std::int64_t i) { return std::int32_t(kN - i); }) == 0);
  CHECK(moved(rt, "x") - before == found(kN));
}
