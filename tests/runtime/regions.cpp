// Regions through the public runtime: launches, reductions, ranges of 1-3
// dimensions, ordering between regions, host views, concurrent launchers and
// the errors a user can cause.
#include <doctest/doctest.h>

#include <canopy/canopy.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <thread>
#include <tuple>
#include <vector>

using namespace canopy;

namespace {

Kernel<void(Out<double>, Val<double>)> fill_kernel() {
  return Kernel("fill", [](Out<double> x, Val<double> v) { x[index(0)] = v; }, {"x", "v"});
}

}  // namespace

TEST_CASE("a launched region writes every element, and host() sees it") {
  Runtime rt;
  for (std::int64_t n : {0, 1, 7, 1000, 100003}) {
    auto x = rt.array<double>(n);
    rt.region(fill_kernel()).over(n).launch(x, 2.5);
    rt.pause();
    auto h = x.host();
    CHECK(h.size() == n);
    CHECK(std::all_of(h.begin(), h.end(), [](double v) { return v == 2.5; }));
  }
}

TEST_CASE("regions on the same arrays run in launch order") {
  Runtime rt;
  const std::int64_t n = 50000;
  auto x = rt.array<std::int64_t>(n);
  Kernel step("step",
              [](InOut<std::int64_t> x, Val<std::int64_t> k) {
                Idx i = index(0);
                x[i] = x[i] * 3 + k;
              },
              {"x", "k"});
  std::int64_t expected = 0;
  for (std::int64_t k = 1; k <= 20; ++k) {
    rt.region(step).over(n).launch(x, k);
    expected = expected * 3 + k;
  }
  // host() waits for the regions that use the array, without pause().
  auto h = x.host();
  CHECK(h[0] == expected);
  CHECK(h[n - 1] == expected);
}

TEST_CASE("host writes are seen by the next region") {
  Runtime rt;
  const std::int64_t n = 40000;
  auto x = rt.array<float>(n), y = rt.array<float>(n);
  auto hx = x.host();
  for (std::int64_t i = 0; i < n; ++i) hx[i] = float(i % 97);
  Kernel twice("twice", [](Out<float> y, In<float> x) { y[index(0)] = x[index(0)] * 2; }, {"y", "x"});
  rt.region(twice).over(n).launch(y, x);
  auto hy = y.host();
  for (std::int64_t i = 0; i < n; i += 997) CHECK(hy[i] == float(i % 97) * 2);
}

TEST_CASE("reduce returns one value, or a tuple for several reductions") {
  Runtime rt;
  const std::int64_t n = 12345;
  auto x = rt.array<std::int32_t>(n);
  auto hx = x.host();
  for (std::int64_t i = 0; i < n; ++i) hx[i] = static_cast<std::int32_t>((i * 7919) % 1000) - 500;
  Kernel stats("stats",
               [](In<std::int32_t> x, Sum<std::int64_t> sum, Min<std::int32_t> lo, Max<std::int32_t> hi) {
                 Idx i = index(0);
                 sum += cast<std::int64_t>(x[i]);
                 lo.combine(x[i]);
                 hi.combine(x[i]);
               },
               {"x", "total", "lo", "hi"});
  auto [total, lo, hi] = rt.region(stats).over(n).reduce(x);
  std::int64_t expected = 0;
  std::int32_t expected_lo = 1 << 30, expected_hi = -(1 << 30);
  for (std::int64_t i = 0; i < n; ++i) {
    expected += hx[i];
    expected_lo = std::min(expected_lo, hx[i]);
    expected_hi = std::max(expected_hi, hx[i]);
  }
  CHECK(total == expected);
  CHECK(lo == expected_lo);
  CHECK(hi == expected_hi);

  Kernel count("count", [](In<std::int32_t> x, Sum<std::int32_t> n) { If(x[index(0)] > 0, [&] { n += 1; }); },
               {"x", "positives"});
  CHECK(rt.region(count).over(n).reduce(x) == std::count_if(hx.begin(), hx.end(), [](auto v) { return v > 0; }));
  // An empty range reduces to the operator's identity.
  CHECK(rt.region(count).over(0).reduce(x) == 0);
}

TEST_CASE("a sum of doubles is the same on every run") {
  Runtime rt;
  const std::int64_t n = 1 << 18;
  auto x = rt.array<double>(n);
  auto hx = x.host();
  for (std::int64_t i = 0; i < n; ++i) hx[i] = std::sin(double(i)) * 1e3;
  Kernel total("total", [](In<double> x, Sum<double> s) { s += x[index(0)]; }, {"x", "s"});
  const double first = rt.region(total).over(n).reduce(x);
  for (int run = 0; run < 10; ++run) CHECK(rt.region(total).over(n).reduce(x) == first);
  double plain = 0;
  for (std::int64_t i = 0; i < n; ++i) plain += hx[i];
  CHECK(first == doctest::Approx(plain).epsilon(1e-9));
}

TEST_CASE("two- and three-dimensional regions cover every point once") {
  Runtime rt;
  auto grid = rt.array<std::int32_t, 2>(Shape(37, 53));
  Kernel mark2("mark2",
               [](InOut<std::int32_t, 2> g) {
                 Idx i = index(0), j = index(1);
                 g(i, j) += cast<std::int32_t>(i * 1000 + j) + 1;
               },
               {"g"});
  rt.region(mark2).over(37, 53).launch(grid);
  auto h = grid.host();
  for (int i = 0; i < 37; ++i)
    for (int j = 0; j < 53; ++j) REQUIRE(h(i, j) == i * 1000 + j + 1);

  auto cube = rt.array<std::int64_t, 3>(Shape(5, 6, 7));
  Kernel mark3("mark3",
               [](Out<std::int64_t, 3> c) {
                 Idx i = index(0), j = index(1), k = index(2);
                 c(i, j, k) = (i * 100 + j) * 100 + k;
               },
               {"c"});
  rt.region(mark3).over(5, 6, 7).launch(cube);
  auto hc = cube.host();
  for (int i = 0; i < 5; ++i)
    for (int j = 0; j < 6; ++j)
      for (int k = 0; k < 7; ++k) REQUIRE(hc(i, j, k) == (i * 100 + j) * 100 + k);
}

TEST_CASE("regions launched from four host threads at once") {
  Runtime rt;
  const std::int64_t n = 20000;
  Kernel add_one("add_one", [](InOut<std::int64_t> x) { x[index(0)] += 1; }, {"x"});
  std::vector<Array<std::int64_t>> arrays;
  for (int t = 0; t < 4; ++t) arrays.push_back(rt.array<std::int64_t>(n));
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int r = 0; r < 50; ++r) rt.region(add_one).over(n).launch(arrays[static_cast<std::size_t>(t)]);
    });
  for (auto& t : threads) t.join();
  rt.pause();
  for (auto& a : arrays) {
    auto h = a.host();
    CHECK(std::all_of(h.begin(), h.end(), [](std::int64_t v) { return v == 50; }));
  }
}

TEST_CASE("an array stays alive while a region that uses it runs") {
  Runtime rt;
  const std::int64_t n = 1 << 20;
  auto out = rt.array<double>(n);
  {
    auto temporary = rt.array<double>(n);
    rt.region(fill_kernel()).over(n).launch(temporary, 3.0);
    Kernel copy("copy", [](Out<double> o, In<double> i) { o[index(0)] = i[index(0)]; }, {"o", "i"});
    rt.region(copy).over(n).launch(out, temporary);
  }  // the handle is gone; the regions still hold the memory
  rt.pause();
  CHECK(out.host()[n - 1] == 3.0);
}

TEST_CASE("errors a user can cause name the thing at fault") {
  Runtime rt;
  auto x = rt.array<double>(10);
  Kernel two_d("two_d", [](Out<double, 2> g) { g(index(0), index(1)) = 1.0; }, {"g"});
  auto g = rt.array<double, 2>(Shape(4, 4));
  CHECK_THROWS_WITH_AS(rt.region(two_d).over(16).launch(g),
                       "kernel 'two_d' has 2 index dimension(s) but the region is over 1 (16); give over() 2 extent(s)",
                       Error);
  CHECK_THROWS_WITH_AS(rt.region(fill_kernel()).over(-5).launch(x, 1.0),
                       "kernel 'fill': the region's extents cannot be negative (-5); give over() extents of 0 or more",
                       Error);
  CHECK_THROWS_WITH_AS(rt.array<double>(10, at("moon")),
                       "no location 'moon' in the hierarchy; known locations: node, numa0, cpu0", Error);
  CHECK_THROWS_WITH_AS(rt.array<double>(Shape(-1)),
                       "an array cannot have a negative extent (-1); give extents of 0 or more", Error);
  CHECK_THROWS_WITH_AS((rt.array<double, 2>(Shape(3))),
                       "array<f64, 2> was given a shape of rank 1 (3); give a Shape of 2 extent(s)", Error);
  CHECK_THROWS_WITH_AS(rt.region(fill_kernel()).over(10).launch(Array<double>(), 1.0),
                       "an empty Array handle was passed to a kernel", Error);
  CHECK_THROWS_WITH_AS(
      rt.region(fill_kernel()).over(10).at("mars").launch(x, 1.0),
      "region of kernel 'fill': no location 'mars' in the hierarchy; known locations: node, numa0, cpu0", Error);
}

TEST_CASE("uninitialized(): arrays the program fills compute as zeroed ones do, in both size classes") {
  Runtime rt;
  Kernel fill("uninit_fill", [](Out<double> a) {
    Idx i = index(0);
    a[i] = cast<double>(i) * 0.5 - 3.0;
  });
  Kernel twice("uninit_twice", [](Out<double> b, In<double> a) {
    Idx i = index(0);
    b[i] = a[i] * 2.0;
  });
  // A heap block (below 64 KiB) and a mapped one.
  for (const std::int64_t n : {std::int64_t{1000}, std::int64_t{1} << 18}) {
    CAPTURE(n);
    {
      // Leave a freed block full of a pattern where the small array may land.
      std::vector<double> pattern(static_cast<std::size_t>(n), -7.25);
    }
    auto zeroed = rt.array<double>(n);
    auto a = rt.array<double>(n, uninitialized() | named("first written by a region"));
    auto b = rt.array<double>(n, named("filled by the host") | uninitialized());
    CHECK(a.storage()->traits().uninitialized);
    CHECK(b.storage()->traits().uninitialized);
    CHECK(b.storage()->traits().name == "filled by the host");
    CHECK_FALSE(zeroed.storage()->traits().uninitialized);
    {
      auto z = zeroed.host_read();
      CHECK(std::all_of(z.begin(), z.end(), [](double v) { return v == 0.0; }));  // the default's promise
    }
    rt.region(fill).over(n).launch(a);
    {
      auto bh = b.host();
      for (std::int64_t i = 0; i < n; ++i) bh[i] = 1.0 + static_cast<double>(i % 13);
    }
    rt.region(twice).over(n).launch(zeroed, b);
    auto ah = a.host_read();
    auto zh = zeroed.host_read();
    int wrong = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      wrong += ah[i] != static_cast<double>(i) * 0.5 - 3.0;
      wrong += zh[i] != 2.0 * (1.0 + static_cast<double>(i % 13));
    }
    CHECK(wrong == 0);
  }
}

TEST_CASE("regions: atomic adds into a small array from many points (private copies per chunk) match a serial loop") {
  // The CPU's chunks add into copies of their own, summed into the array at
  // the end: integers wrap as the atomic adds do, doubles add exactly here,
  // what the array held stays under the sums, and an array too large for a
  // copy per chunk is added to directly.
  Runtime rt;
  static const Kernel counts("private_counts", [](InOut<std::int32_t> bins, In<std::int32_t> keys,
                                                  Val<std::int32_t> step) { atomic_add(bins[keys[index(0)]], step); });
  static const Kernel weights("private_weights", [](InOut<double> bins, In<std::int32_t> keys) {
    Idx i = index(0);
    atomic_add(bins[keys[i]], 0.25 * cast<double>(i % 4));
  });
  constexpr std::int64_t n = 300001;
  for (const std::int64_t size : {std::int64_t{256}, std::int64_t{40000}}) {
    CAPTURE(size);
    auto keys = rt.array<std::int32_t>(n);
    auto counted = rt.array<std::int32_t>(size);
    auto weighed = rt.array<double>(size);
    std::vector<std::int32_t> key(static_cast<std::size_t>(n));
    {
      auto view = keys.host();
      auto start = counted.host();
      for (std::int64_t i = 0; i < n; ++i)
        view[i] = key[std::size_t(i)] = static_cast<std::int32_t>((i * 2654435761u) % std::uint64_t(size));
      for (std::int64_t b = 0; b < size; ++b) start[b] = 7;
    }
    const std::int32_t step = 1 << 29;  // wraps past 2^31 after four adds
    rt.region(counts).over(n).launch(counted, keys, step);
    rt.region(weights).over(n).launch(weighed, keys);
    std::vector<std::uint32_t> want_counts(static_cast<std::size_t>(size), 7u);
    std::vector<double> want_weights(static_cast<std::size_t>(size), 0.0);
    for (std::int64_t i = 0; i < n; ++i) {
      want_counts[std::size_t(key[std::size_t(i)])] += static_cast<std::uint32_t>(step);
      want_weights[std::size_t(key[std::size_t(i)])] += 0.25 * double(i % 4);
    }
    const auto got_counts = counted.host_read();
    const auto got_weights = weighed.host_read();
    std::int64_t wrong = 0;
    for (std::int64_t b = 0; b < size; ++b)
      wrong += (static_cast<std::uint32_t>(got_counts[b]) != want_counts[std::size_t(b)]) +
               (got_weights[b] != want_weights[std::size_t(b)]);
    CHECK(wrong == 0);
  }
}
