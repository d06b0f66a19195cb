// What each device memory holds of the program's arrays, as rt.stats()
// reports it: a whole copy per array a piece there used, counted when the
// copy is made and until the array goes; the most held at once is kept.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>

#include "hetero_support.hpp"

using namespace canopy;
using namespace canopy::hetero_tests;

namespace {

const Kernel<void(Out<std::int32_t>, In<std::int32_t>, Val<std::int32_t>)>& add_to() {
  static const Kernel kernel("device_memory_add",
                             [](Out<std::int32_t> y, In<std::int32_t> x, Val<std::int32_t> k) {
                               Idx i = index(0);
                               y[i] = x[i] + k;
                             },
                             {"y", "x", "k"});
  return kernel;
}

DeviceMemoryStats memory_of(const Runtime& rt, const std::string& leaf) {
  for (const auto& m : rt.stats().device_memory)
    if (m.leaf == leaf) return m;
  return {leaf, 0, 0};
}

}  // namespace

TEST_CASE("hetero: stats() shows the bytes a device memory holds now and at most" * doctest::test_suite("opencl")) {
  Runtime rt;
  const Hierarchy discovered = rt.hierarchy();
  if (!has_leaves(discovered, {accelerator(0)})) return;
  use_leaves(rt, discovered, {accelerator(0)});
  const std::string device = accelerator(0);
  const std::int64_t n = 30000, bytes = n * static_cast<std::int64_t>(sizeof(std::int32_t));
  CHECK(memory_of(rt, device).peak_bytes == 0);
  {
    auto a = rt.array<std::int32_t>(n, named("a"));
    auto b = rt.array<std::int32_t>(n, named("b"));
    auto c = rt.array<std::int32_t>(n, named("c"));
    {
      auto view = a.host();
      for (std::int64_t i = 0; i < n; ++i) view[i] = static_cast<std::int32_t>(i);
    }
    rt.region(add_to()).over(n).launch(b, a, 5);
    rt.pause();
    CHECK(memory_of(rt, device).held_bytes == 2 * bytes);
    rt.region(add_to()).over(n).launch(c, b, 1);
    rt.pause();
    CHECK(memory_of(rt, device).held_bytes == 3 * bytes);
    CHECK(memory_of(rt, device).peak_bytes == 3 * bytes);
    CHECK(rt.stats().to_text().find("device memory " + device) != std::string::npos);
    auto view = c.host_read();
    std::int64_t wrong = 0;
    for (std::int64_t i = 0; i < n; ++i) wrong += view[i] != i + 6;
    CHECK(wrong == 0);
    // A second region over arrays the device holds makes no new copies.
    rt.region(add_to()).over(n).launch(a, c, -6);
    rt.pause();
    CHECK(memory_of(rt, device).held_bytes == 3 * bytes);
  }
  // The arrays are gone, and their copies with them.
  CHECK(memory_of(rt, device).held_bytes == 0);
  CHECK(memory_of(rt, device).peak_bytes == 3 * bytes);
}
