// What each device memory holds of the program's arrays, as rt.stats()
// reports it: per array a piece there used, a copy of the part its pieces
// touch, counted when the copy is made and until the array goes; the most
// held at once is kept. Capacities, eviction, and arrays split over devices
// that could not each hold them whole.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "hetero_support.hpp"
#include "jit/jit_test_support.hpp"
#include "scoped_setting.hpp"

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

const Kernel<void(Out<std::int32_t>, In<std::int32_t>, In<std::int32_t>)>& sum_of() {
  static const Kernel kernel("device_memory_sum",
                             [](Out<std::int32_t> y, In<std::int32_t> x, In<std::int32_t> z) {
                               Idx i = index(0);
                               y[i] = x[i] + z[i];
                             },
                             {"y", "x", "z"});
  return kernel;
}

const Kernel<void(Out<std::int32_t>, In<std::int32_t>, In<std::int32_t>)>& gather() {
  static const Kernel kernel("device_memory_gather",
                             [](Out<std::int32_t> y, In<std::int32_t> x, In<std::int32_t> where) {
                               Idx i = index(0);
                               y[i] = x[cast<std::int64_t>(where[i])];
                             },
                             {"y", "x", "where"});
  return kernel;
}

const Kernel<void(In<double>, In<double>, Sum<double>)>& dot_of() {
  static const Kernel kernel("device_memory_dot",
                             [](In<double> x, In<double> y, Sum<double> total) {
                               Idx i = index(0);
                               total += x[i] * y[i];
                             },
                             {"x", "y", "total"});
  return kernel;
}

const Kernel<void(Out<double>, In<double>)>& smooth() {
  static const Kernel kernel(
      "device_memory_smooth",
      [](Out<double> y, In<double> x) {
        Idx i = index(0);
        const Idx last = x.extent(0) - 1;
        If(i > 0 && i < last, [&] { y[i] = (x[i - 1] + x[i] + x[i + 1]) / 3.0; }).Else([&] { y[i] = x[i]; });
      },
      {"y", "x"});
  return kernel;
}

// Keeps of `rt`'s tree a CPU leaf and the first two devices; false (the
// test skipped, saying why) where there are not two.
bool use_cpu_and_two_devices(Runtime& rt) {
  const Hierarchy discovered = rt.hierarchy();
  const auto cpus = leaves_of_kind(discovered, LocationKind::Cpu);
  if (cpus.empty() || !has_leaves(discovered, {accelerator(0), accelerator(1)})) return false;
  use_leaves(rt, discovered, {cpus.front(), accelerator(0), accelerator(1)});
  return true;
}

// Keeps of `rt`'s tree cpu0 and the first device; false where the node
// lacks either.
bool use_cpu0_and_device(Runtime& rt) {
  const Hierarchy discovered = rt.hierarchy();
  if (!has_leaves(discovered, {"cpu0", accelerator(0)})) return false;
  use_leaves(rt, discovered, {"cpu0", accelerator(0)});
  return true;
}

DeviceMemoryStats memory_of(const Runtime& rt, const std::string& leaf) {
  for (const auto& m : rt.stats().device_memory)
    if (m.leaf == leaf) return m;
  return {leaf, 0, 0};
}

}  // namespace

TEST_CASE(
    "hetero: after a configuration renames and limits a device leaf, stats() shows its new peak, and a device "
    "no leaf runs by its id" *
    doctest::test_suite("opencl")) {
  // Both devices hold copies; then a configuration keeps one device, as leaf
  // S of 128 KiB. stats() had named the other 'place 2' and given S the peak
  // from before, ten times its new capacity (found by a new user).
  static const Kernel twice("hetero_stats_twice", [](Out<double> y, In<double> x) { y[index(0)] = x[index(0)] * 2.0; });
  Runtime rt;
  const Hierarchy discovered = rt.hierarchy();
  if (!has_leaves(discovered, {accelerator(0), accelerator(1)}))
    CANOPY_TEST_SKIP(OpenCL, "this node lacks " << accelerator(0) << " or " << accelerator(1));
  use_leaves(rt, discovered, {accelerator(0), accelerator(1)});
  const std::int64_t n = 200000;
  auto x = rt.array<double>(n), y = rt.array<double>(n);
  rt.region(twice).over(n).launch(y, x);
  rt.pause();
  const std::string leaf = accelerator(0), kind = leaf.substr(0, leaf.find_first_of("0123456789"));
  canopy::jit::testing::TempDir dir;
  const std::string file = dir.str() + "/small.conf";
  {
    std::ofstream out(file);
    out << "loctype;name,small;kind," << kind << ";mem,128KB\nlocation;name,M;type,host_memory\n"
        << "location;name,S;type,small\nhierarchy;children,+,S;parent,M\n";
  }
  rt.load_config(file);
  rt.region(twice).over(n).at("S").launch(y, x);
  rt.pause();
  const DeviceMemoryStats s = memory_of(rt, "S");
  CHECK(s.capacity_bytes == 128 * 1024);
  CHECK(s.peak_bytes > 0);
  CHECK(s.peak_bytes <= s.capacity_bytes);
  int unused = 0;
  for (const auto& m : rt.stats().device_memory) {
    CHECK(m.leaf.rfind("place ", 0) != 0);
    unused += m.leaf.size() > 10 && m.leaf.substr(m.leaf.size() - 10) == " (no leaf)";
  }
  CHECK(unused == 1);
  const auto values = y.host_read();
  std::int64_t wrong = 0;
  for (std::int64_t i = 0; i < n; ++i) wrong += values[i] != 0.0;  // x is zeros: y too
  CHECK(wrong == 0);
}

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
  // The arrays are gone, and their copies with them (once the leaf's worker
  // has let go of the last region, just after pause() returned).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (memory_of(rt, device).held_bytes != 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  CHECK(memory_of(rt, device).held_bytes == 0);
  CHECK(memory_of(rt, device).peak_bytes == 3 * bytes);
}

TEST_CASE(
    "hetero: a device memory with a capacity evicts the least recently used copies, writing back what only "
    "they hold, runs a piece whose arrays do not fit together in passes, and refuses one that cannot fit" *
    doctest::test_suite("opencl")) {
  const std::int64_t n = 30000, bytes = n * static_cast<std::int64_t>(sizeof(std::int32_t));  // 120,000 bytes
  // Room for two copies, not three.
  canopy::testing::ScopedSetting limit("CANOPY_DEVICE_MEMORY", (accelerator(0) + ":250000").c_str());
  Runtime rt;
  const Hierarchy discovered = rt.hierarchy();
  if (!has_leaves(discovered, {accelerator(0)})) return;
  use_leaves(rt, discovered, {accelerator(0)});
  const std::string device = accelerator(0);
  CHECK(memory_of(rt, device).capacity_bytes == 250000);
  CHECK(rt.hierarchy().at(device).traits().capacity == 250000);  // the tree shows the capacity in force
  auto a = rt.array<std::int32_t>(n, named("a"));
  auto b = rt.array<std::int32_t>(n, named("b"));
  auto c = rt.array<std::int32_t>(n, named("c"));
  auto d = rt.array<std::int32_t>(n, named("d"));
  {
    auto view = a.host();
    for (std::int64_t i = 0; i < n; ++i) view[i] = static_cast<std::int32_t>(i);
  }
  rt.region(add_to()).over(n).launch(b, a, 5);  // holds a (also current on the host) and b
  rt.pause();
  rt.region(add_to()).over(n).launch(c, b, 1);  // a goes: nothing to write back
  rt.pause();
  CHECK(memory_of(rt, device).evicted_bytes == bytes);
  CHECK(memory_of(rt, device).written_back_bytes == 0);
  rt.region(add_to()).over(n).launch(d, c, 1);  // b goes: only the device held it, so it is written back first
  rt.pause();
  const DeviceMemoryStats after = memory_of(rt, device);
  CHECK(after.evicted_bytes == 2 * bytes);
  CHECK(after.written_back_bytes == bytes);
  CHECK(after.held_bytes == 2 * bytes);
  CHECK(after.peak_bytes <= 250000);
  auto wrong = [&](const Array<std::int32_t>& array, std::int32_t offset) {
    auto view = array.host_read();
    std::int64_t count = 0;
    for (std::int64_t i = 0; i < n; ++i) count += view[i] != i + offset;
    return count;
  };
  CHECK(wrong(b, 5) == 0);
  CHECK(wrong(c, 6) == 0);
  CHECK(wrong(d, 7) == 0);
  CHECK(wrong(a, 0) == 0);

  // Three copies in one piece cannot fit together (360,000 bytes): the piece
  // runs in passes over parts of its rows, each pass's windows fitting.
  rt.region(sum_of()).over(n).launch(a, c, d);
  rt.pause();
  CAPTURE(rt.stats().to_text());
  CHECK(last_region(rt).pieces.size() == 1);
  CHECK(last_region(rt).pieces[0].passes >= 2);
  {
    auto view = a.host_read();
    std::int64_t count = 0;
    for (std::int64_t i = 0; i < n; ++i) count += view[i] != 2 * i + 13;  // (i + 6) + (i + 7)
    CHECK(count == 0);
  }
  CHECK(memory_of(rt, device).peak_bytes <= 250000);

  // A gather reads its source whole, in every pass: one larger than the
  // device is refused at its launch, naming the sizes, and nothing ran.
  const std::int64_t large = 70000;  // 280,000 bytes
  auto source = rt.array<std::int32_t>(large, named("source"));
  auto where = rt.array<std::int32_t>(n, named("where"));
  {
    auto view = where.host();
    for (std::int64_t i = 0; i < n; ++i) view[i] = static_cast<std::int32_t>((i * 7) % large);
  }
  std::string error;
  try {
    rt.region(gather()).over(n).launch(b, source, where);
  } catch (const canopy::Error& e) {
    error = e.what();
  }
  CAPTURE(error);
  CHECK(error.find("what one row of it touches, ") != std::string::npos);
  CHECK(error.find(" bytes of these arrays, does not fit a device memory of 250000 bytes") != std::string::npos);
  CHECK(error.find("no piece of the region ran") != std::string::npos);
  CHECK_NOTHROW(rt.pause());
  CHECK(wrong(b, 5) == 0);
  // The program's names for what was refused: the kernel, the leaf, the arrays.
  CHECK(error.find("region of kernel 'device_memory_gather', its piece on leaf '" + device + "' (") == 0);
  CHECK(error.find("array 'source' (i32 70000 at ") != std::string::npos);
  CHECK(memory_of(rt, device).peak_bytes <= 250000);
}

TEST_CASE(
    "hetero: arrays three times larger than a device memory run in passes, reductions and a stencil's halo "
    "included, with the answers of serial loops" *
    doctest::test_suite("opencl")) {
  const std::int64_t capacity = 256 * 1024;
  canopy::testing::ScopedSetting limit("CANOPY_DEVICE_MEMORY",
                                       (accelerator(0) + ":" + std::to_string(capacity)).c_str());
  Runtime rt;
  const Hierarchy discovered = rt.hierarchy();
  if (!has_leaves(discovered, {accelerator(0)})) return;
  use_leaves(rt, discovered, {accelerator(0)});
  const std::string device = accelerator(0);
  const std::int64_t n = 3 * capacity / static_cast<std::int64_t>(sizeof(double));  // each array 3x the device
  auto x = rt.array<double>(n, named("x")), y = rt.array<double>(n, named("y"));
  std::vector<double> xs(static_cast<std::size_t>(n)), ys(xs.size());
  for (std::int64_t i = 0; i < n; ++i) {
    xs[std::size_t(i)] = double((i * 13) % 17) - 8.0;
    ys[std::size_t(i)] = double((i * 5) % 11) * 0.5;
  }
  std::copy(xs.begin(), xs.end(), x.host().begin());
  std::copy(ys.begin(), ys.end(), y.host().begin());

  // A dot product: each pass's partial sum, combined.
  const double dot = rt.region(dot_of()).over(n).reduce(x, y);
  CAPTURE(rt.stats().to_text());
  CHECK(last_region(rt).pieces[0].passes >= 4);
  double expected = 0;
  for (std::int64_t i = 0; i < n; ++i) expected += xs[std::size_t(i)] * ys[std::size_t(i)];
  CHECK(dot == doctest::Approx(expected).epsilon(1e-12));

  // A 1-D stencil, twice: each pass reads a row either side of its part,
  // which the previous pass (or region) wrote.
  for (int k = 0; k < 2; ++k) {
    rt.region(smooth()).over(n).launch(y, x);
    rt.region(smooth()).over(n).launch(x, y);
    for (int half = 0; half < 2; ++half) {
      const auto& from = half == 0 ? xs : ys;
      auto& to = half == 0 ? ys : xs;
      for (std::int64_t i = 0; i < n; ++i)
        to[std::size_t(i)] = i == 0 || i == n - 1
                                 ? from[std::size_t(i)]
                                 : (from[std::size_t(i - 1)] + from[std::size_t(i)] + from[std::size_t(i + 1)]) / 3.0;
    }
  }
  rt.pause();
  CHECK(last_region(rt).pieces[0].passes >= 4);
  const auto result = x.host_read();
  std::int64_t wrong = 0;
  for (std::int64_t i = 0; i < n; ++i) wrong += result[i] != xs[std::size_t(i)];
  CHECK(wrong == 0);
  const DeviceMemoryStats memory = memory_of(rt, device);
  CHECK(memory.peak_bytes <= capacity);
  CHECK(memory.evicted_bytes > 0);
  CHECK(memory.written_back_bytes > 0);  // what each pass wrote went back before the next
}

TEST_CASE("hetero: CANOPY_DEVICE_MEMORY that is not <leaf>:<size> is refused when a Runtime starts") {
  for (const char* bad :
       {"opencl0", "opencl0:lots", ":1MiB", "opencl0:0", "opencl0:1MiB,,", "opencl0:1MiB,opencl0:2MiB"}) {
    CAPTURE(bad);
    canopy::testing::ScopedSetting limit("CANOPY_DEVICE_MEMORY", bad);
    std::string error;
    try {
      Runtime rt;
    } catch (const canopy::Error& e) {
      error = e.what();
    }
    CHECK(error.find("CANOPY_DEVICE_MEMORY") != std::string::npos);
  }
}

TEST_CASE("hetero: CANOPY_DEVICE_MEMORY naming no device leaf is said when a Runtime starts") {
  // Found by a new user: a typo (`nosuch:1MiB`) or a CPU leaf dropped the
  // program's limit without a word.
  canopy::testing::ScopedSetting limit("CANOPY_DEVICE_MEMORY", "nosuch:1MiB,cpu0:1MiB");
  canopy::jit::testing::StderrCapture captured;
  { Runtime rt; }
  const std::string said = captured.finish();
  CHECK(said.find("CANOPY_DEVICE_MEMORY names 'nosuch', no location of this Runtime's tree; it limits device "
                  "leaves (here: ") != std::string::npos);
  CHECK(said.find("CANOPY_DEVICE_MEMORY names 'cpu0', a CPU leaf, which works in the host's memory") !=
        std::string::npos);
}

TEST_CASE(
    "hetero: a host() view held open while its array's device copy is evicted stays valid and shows what "
    "the device wrote" *
    doctest::test_suite("opencl")) {
  const std::int64_t n = 30000, bytes = n * static_cast<std::int64_t>(sizeof(std::int32_t));
  canopy::testing::ScopedSetting limit("CANOPY_DEVICE_MEMORY", (accelerator(0) + ":250000").c_str());  // two copies
  Runtime rt;
  const Hierarchy discovered = rt.hierarchy();
  if (!has_leaves(discovered, {accelerator(0)})) return;
  use_leaves(rt, discovered, {accelerator(0)});
  const std::string device = accelerator(0);
  auto a = rt.array<std::int32_t>(n, named("a"));
  auto b = rt.array<std::int32_t>(n, named("b"));
  auto c = rt.array<std::int32_t>(n, named("c"));
  const auto view = a.host();  // held to the end
  for (std::int64_t i = 0; i < n; ++i) view[i] = static_cast<std::int32_t>(3 * i);
  rt.region(add_to()).over(n).launch(b, a, 5);  // the device holds a and b
  rt.pause();
  rt.region(add_to()).over(n).launch(a, b, 1);  // a = 3i + 6, on the device
  rt.pause();
  // The view is open: what the device wrote reached its memory as the piece
  // ended, as it would have on a CPU leaf.
  std::int64_t wrong = 0;
  for (std::int64_t i = 0; i < n; ++i) wrong += view[i] != 3 * i + 6;
  CHECK(wrong == 0);
  // c needs room: a, not used by this piece, goes, and the host holds all
  // its values already, so nothing is written back.
  rt.region(add_to()).over(n).launch(c, b, 2);
  rt.pause();
  const DeviceMemoryStats after = memory_of(rt, device);
  CHECK(after.evicted_bytes == bytes);
  CHECK(after.written_back_bytes == 0);
  wrong = 0;
  for (std::int64_t i = 0; i < n; ++i) wrong += view[i] != 3 * i + 6;
  CHECK(wrong == 0);
  CHECK(a.host_read().data() == view.data());  // the same memory, never moved
  auto expect = [&](const Array<std::int32_t>& array, std::int32_t scale, std::int32_t offset) {
    auto values = array.host_read();
    std::int64_t count = 0;
    for (std::int64_t i = 0; i < n; ++i) count += values[i] != scale * i + offset;
    return count;
  };
  CHECK(expect(b, 3, 5) == 0);
  CHECK(expect(c, 3, 7) == 0);
}

TEST_CASE(
    "hetero: two devices that each hold less than the arrays split a stencil: each keeps only the rows its "
    "pieces touch" *
    doctest::test_suite("opencl")) {
  constexpr std::int64_t rows = 512, cols = 64, iterations = 20;
  const std::int64_t bytes = rows * cols * static_cast<std::int64_t>(sizeof(double));  // 256 KiB per array
  const std::int64_t capacity = 400 * 1024;  // less than the two arrays (512 KiB), more than half of them
  const std::string limit =
      accelerator(0) + ":" + std::to_string(capacity) + "," + accelerator(1) + ":" + std::to_string(capacity);
  canopy::testing::ScopedSetting setting("CANOPY_DEVICE_MEMORY", limit.c_str());
  Runtime rt;
  const Hierarchy discovered = rt.hierarchy();
  if (!has_leaves(discovered, {accelerator(0), accelerator(1)})) return;
  use_leaves(rt, discovered, {accelerator(0), accelerator(1)});
  auto a = rt.array<double, 2>(Shape(rows, cols), named("a"));
  auto b = rt.array<double, 2>(Shape(rows, cols), named("b"));
  // The reference: the same iterations as plain loops.
  std::vector<double> x(static_cast<std::size_t>(rows * cols)), y(x.size());
  for (std::int64_t i = 0; i < rows * cols; ++i) x[std::size_t(i)] = double((i * 37) % 101);
  std::copy(x.begin(), x.end(), a.host().begin());
  for (int k = 0; k < iterations; ++k) {
    for (std::int64_t i = 0; i < rows; ++i)
      for (std::int64_t j = 0; j < cols; ++j) {
        auto at = [&](std::int64_t r, std::int64_t c) { return x[std::size_t(r * cols + c)]; };
        const bool inside = i > 0 && i < rows - 1 && j > 0 && j < cols - 1;
        y[std::size_t(i * cols + j)] =
            inside ? 0.25 * (at(i - 1, j) + at(i + 1, j) + at(i, j - 1) + at(i, j + 1)) : at(i, j);
      }
    std::swap(x, y);
    if (k % 2 == 0)
      rt.region(halo_stencil()).over(rows, cols).policy("static").launch(b, a);
    else
      rt.region(halo_stencil()).over(rows, cols).policy("static").launch(a, b);
  }
  rt.pause();
  CHECK(last_region(rt).pieces.size() == 2);
  const auto result = (iterations % 2 ? b : a).host_read();
  std::int64_t wrong = 0;
  for (std::int64_t i = 0; i < rows * cols; ++i) wrong += result.data()[i] != x[std::size_t(i)];
  CHECK(wrong == 0);
  for (const std::string& device : {accelerator(0), accelerator(1)}) {
    CAPTURE(device);
    const DeviceMemoryStats memory = memory_of(rt, device);
    CHECK(memory.peak_bytes <= capacity);
    CHECK(memory.peak_bytes < 2 * bytes);  // never both arrays whole
    CHECK(memory.evicted_bytes == 0);      // each device's parts fit beside each other
  }
}

TEST_CASE("hetero: a device's window grows when its pieces need more, keeping what only it held" *
          doctest::test_suite("opencl")) {
  Runtime rt;
  const Hierarchy discovered = rt.hierarchy();
  if (!has_leaves(discovered, {accelerator(0), accelerator(1)})) return;
  use_leaves(rt, discovered, {accelerator(0), accelerator(1)});
  const std::int64_t n = 100000;
  auto a = rt.array<std::int32_t>(n, named("a"));
  auto b = rt.array<std::int32_t>(n, named("b"));
  {
    auto view = a.host();
    for (std::int64_t i = 0; i < n; ++i) view[i] = static_cast<std::int32_t>(i);
  }
  auto peaks = [&] { return memory_of(rt, accelerator(0)).peak_bytes + memory_of(rt, accelerator(1)).peak_bytes; };
  // One split, then its mirror: the devices' windows of b (b = a + 1, current
  // only on the devices) grow, and what each wrote must come along, since the
  // second region reads it (a = b + 2).
  rt.region(add_to()).over(n).policy("percentage:[90,10]").launch(b, a, 1);
  rt.pause();
  const std::int64_t first = peaks();
  rt.region(add_to()).over(n).policy("percentage:[10,90]").launch(a, b, 2);
  rt.pause();
  CAPTURE(rt.stats().to_text());
  CHECK(peaks() > first);  // some window grew
  auto view = a.host_read();
  std::int64_t wrong = 0;
  for (std::int64_t i = 0; i < n; ++i) wrong += view[i] != i + 3;
  CHECK(wrong == 0);
}

TEST_CASE(
    "hetero: two stencil chains launched in turn over a CPU leaf and two small devices make room for each "
    "other instead of waiting for each other" *
    doctest::test_suite("opencl")) {
  // Each device holds 256 KiB: a third of an array (133 KiB) and its halo
  // fit twice over, so each piece runs in two passes, and the other chain's
  // copies there must go first. Before room was made ahead of the array
  // locks, a piece on one device waited for the other chain's arrays, in
  // use on the other device by a piece waiting for this one's: after 5 s
  // each gave up ("does not fit beside the ... bytes of copies in use"),
  // in about one run of five.
  const std::int64_t n = 50001, iterations = 12;
  const std::string limit = accelerator(0) + ":256KiB," + accelerator(1) + ":256KiB";
  canopy::testing::ScopedSetting setting("CANOPY_DEVICE_MEMORY", limit.c_str());
  for (int run = 0; run < 4; ++run) {
    CAPTURE(run);
    Runtime rt;
    if (!use_cpu_and_two_devices(rt)) return;
    auto a = rt.array<double>(n, named("a")), b = rt.array<double>(n, named("b"));
    auto c = rt.array<double>(n, named("c")), d = rt.array<double>(n, named("d"));
    std::vector<double> x(static_cast<std::size_t>(n)), y(x.size());
    for (std::int64_t i = 0; i < n; ++i) x[std::size_t(i)] = double((i * 29) % 97);
    std::copy(x.begin(), x.end(), a.host().begin());
    std::copy(x.begin(), x.end(), c.host().begin());
    for (std::int64_t k = 0; k < iterations; ++k) {
      rt.region(smooth()).over(n).policy("flatten").launch(b, a);
      rt.region(smooth()).over(n).policy("flatten").launch(d, c);
      std::swap(a, b);
      std::swap(c, d);
      for (std::int64_t i = 0; i < n; ++i) {
        const auto at = [&](std::int64_t j) { return x[std::size_t(j)]; };
        y[std::size_t(i)] = i > 0 && i < n - 1 ? (at(i - 1) + at(i) + at(i + 1)) / 3.0 : at(i);
      }
      std::swap(x, y);
    }
    std::int64_t wrong = 0;
    {
      const auto first = a.host_read(), second = c.host_read();
      for (std::int64_t i = 0; i < n; ++i) wrong += (first[i] != x[std::size_t(i)]) + (second[i] != x[std::size_t(i)]);
    }
    CHECK(wrong == 0);
    CHECK_NOTHROW(rt.pause());
    const auto pieces = last_region(rt).pieces;
    CHECK(pieces.size() == 3);
    for (const std::string& device : {accelerator(0), accelerator(1)}) {
      CAPTURE(device);
      CHECK(memory_of(rt, device).peak_bytes <= 256 * 1024);
    }
  }
}

TEST_CASE("hetero: a piece whose device must make room does not wait holding an array that the CPU's piece needs" *
          doctest::test_suite("opencl")) {
  // Three regions a step over a CPU leaf and two devices of 256 KiB: an
  // integer stencil b = f(a), then x = 3 x + b in place. The CPU's piece of
  // the update uses b, whose only current copy of some elements is on a
  // device; a device piece that grew its copy of x while holding x's lock
  // waited for that CPU piece to let go of b, which waited for x's lock.
  const std::int64_t n = 50001, steps = 15;
  const std::string limit = accelerator(0) + ":256KiB," + accelerator(1) + ":256KiB";
  canopy::testing::ScopedSetting setting("CANOPY_DEVICE_MEMORY", limit.c_str());
  static const Kernel stencil("device_memory_int_stencil",
                              [](Out<std::int32_t> b, In<std::int32_t> a) {
                                Idx i = index(0);
                                const Idx last = a.extent(0) - 1;
                                Var<std::int32_t> sum = a[i] * 2;
                                If(i > 0, [&] { sum = sum + a[i - 1]; });
                                If(i < last, [&] { sum = sum + a[i + 1] * 3; });
                                b[i] = sum % 1000003;
                              },
                              {"b", "a"});
  static const Kernel update("device_memory_update",
                             [](InOut<std::int64_t> x, In<std::int32_t> b) {
                               Idx i = index(0);
                               x[i] = (x[i] * 3 + cast<std::int64_t>(b[i])) % 1000000007;
                             },
                             {"x", "b"});
  for (int run = 0; run < 3; ++run) {
    CAPTURE(run);
    Runtime rt;
    if (!use_cpu_and_two_devices(rt)) return;
    auto a = rt.array<std::int32_t>(n, named("a")), b = rt.array<std::int32_t>(n, named("b"));
    auto x = rt.array<std::int64_t>(n, named("x"));
    auto da = rt.array<double>(n, named("da")), db = rt.array<double>(n, named("db"));
    std::vector<std::int32_t> want_a(static_cast<std::size_t>(n)), want_b(want_a.size());
    std::vector<std::int64_t> want_x(want_a.size());
    std::vector<double> want_da(want_a.size()), want_db(want_a.size());
    {
      auto ha = a.host();
      auto hx = x.host();
      auto hd = da.host();
      for (std::int64_t i = 0; i < n; ++i) {
        const auto k = std::size_t(i);
        ha[i] = want_a[k] = static_cast<std::int32_t>((i * 131) % 1000);
        hx[i] = want_x[k] = i;
        hd[i] = want_da[k] = double((i * 17) % 64);
      }
    }
    std::int64_t wrong = 0;
    for (std::int64_t step = 0; step < steps && wrong == 0; ++step) {
      rt.region(stencil).over(n).policy("flatten").launch(b, a);
      rt.region(smooth()).over(n).policy("flatten").launch(db, da);
      rt.region(update).over(n).policy("flatten").launch(x, b);
      for (std::int64_t i = 0; i < n; ++i) {
        const auto k = std::size_t(i);
        std::int32_t sum = want_a[k] * 2;
        if (i > 0) sum += want_a[k - 1];
        if (i < n - 1) sum += want_a[k + 1] * 3;
        want_b[k] = sum % 1000003;
        want_db[k] = i > 0 && i < n - 1 ? (want_da[k - 1] + want_da[k] + want_da[k + 1]) / 3.0 : want_da[k];
        want_x[k] = (want_x[k] * 3 + want_b[k]) % 1000000007;
      }
      std::swap(a, b);
      std::swap(want_a, want_b);
      std::swap(da, db);
      std::swap(want_da, want_db);
      if (step % 5 == 4) {
        const auto ha = a.host_read();
        const auto hx = x.host_read();
        const auto hd = da.host_read();
        for (std::int64_t i = 0; i < n; ++i) {
          const auto k = std::size_t(i);
          wrong += (ha[i] != want_a[k]) + (hx[i] != want_x[k]) + (hd[i] != want_da[k]);
        }
      }
    }
    CHECK(wrong == 0);
    CHECK_NOTHROW(rt.pause());
  }
}

TEST_CASE("hetero: any passes over a device that cannot hold a gather's table, though its input was left there" *
          doctest::test_suite("opencl")) {
  // The table (16 MB) cannot fit a device of 1 MiB in any number of passes:
  // every row may read all of it. `any` had put such a gather on the device
  // where the previous region left the indexes, and the region failed.
  canopy::testing::ScopedSetting limit("CANOPY_DEVICE_MEMORY", (accelerator(0) + ":1MiB").c_str());
  Runtime rt;
  if (!use_cpu0_and_device(rt)) CANOPY_TEST_SKIP(OpenCL, "this node lacks cpu0 or " << accelerator(0));
  static const Kernel make_indexes("any_make_indexes", [](Out<std::int32_t> k, Val<std::int32_t> size) {
    Idx i = index(0);
    k[i] = cast<std::int32_t>((i * 7919) % cast<std::int64_t>(size));
  });
  static const Kernel gather("any_gather", [](Out<double> out, In<double> table, In<std::int32_t> k) {
    Idx i = index(0);
    out[i] = table[cast<std::int64_t>(k[i])];
  });
  const std::int64_t size = 2000000, n = 20000;
  auto table = rt.array<double>(size, named("table"));
  {
    auto view = table.host();
    for (std::int64_t i = 0; i < size; ++i) view[i] = 0.5 * static_cast<double>(i);
  }
  auto keys = rt.array<std::int32_t>(n, named("keys"));
  auto out = rt.array<double>(n, named("out"));
  rt.region(make_indexes).over(n).at(accelerator(0)).launch(keys, static_cast<std::int32_t>(size));
  rt.pause();
  // cpu0 busy with other work, opencl0 idle: idle leaves come first.
  static const Kernel busy("any_busy", [](Out<std::int64_t> x, Val<std::int64_t> rounds) {
    Idx i = index(0);
    Var<std::int64_t> v = i;
    For(Value<std::int64_t>(0), rounds, [&](Value<std::int64_t>) { v = (v * 5 + 3) & 0xffff; });
    x[i] = v;
  });
  auto other = rt.array<std::int64_t>(2000, named("other"));
  rt.region(busy).over(2000).at("cpu0").launch(other, std::int64_t{200000});
  rt.region(gather).over(n).policy("any").launch(out, table, keys);
  rt.pause();
  std::vector<std::string> gathered;
  for (const RegionStats& region : rt.stats().recent)
    if (region.kernel == "any_gather") gathered = pieces_of(region);
  CHECK(gathered == std::vector<std::string>{"cpu0[0,20000)"});
  auto values = out.host_read();
  std::int64_t wrong = 0;
  for (std::int64_t i = 0; i < n; ++i) wrong += values[i] != 0.5 * static_cast<double>((i * 7919) % size);
  CHECK(wrong == 0);
}

TEST_CASE(
    "hetero: a split region a device's piece of which cannot fit is refused at its launch, before the CPU's "
    "piece writes anything" *
    doctest::test_suite("opencl")) {
  // Found by a new user's program: the CPU's piece of such a region had
  // written its rows when the device's failed, and the error came at pause().
  canopy::testing::ScopedSetting limit("CANOPY_DEVICE_MEMORY", (accelerator(0) + ":1MiB").c_str());
  Runtime rt;
  if (!use_cpu0_and_device(rt)) CANOPY_TEST_SKIP(OpenCL, "this node lacks cpu0 or " << accelerator(0));
  const std::int64_t size = 600000, n = 10000;  // a table of 2.4 MB
  auto table = rt.array<std::int32_t>(size, named("table"));
  auto out = rt.array<std::int32_t>(n, named("out"));
  auto keys = rt.array<std::int32_t>(n, named("keys"));
  {
    auto t = table.host();
    for (std::int64_t i = 0; i < size; ++i) t[i] = static_cast<std::int32_t>(i);
    auto o = out.host();
    auto k = keys.host();
    for (std::int64_t i = 0; i < n; ++i) {
      o[i] = -1;
      k[i] = static_cast<std::int32_t>((i * 31) % size);
    }
  }
  for (const char* policy : {"static", "percentage:[90,10]", "flatten"}) {
    CAPTURE(policy);
    std::string error;
    try {
      rt.region(gather()).over(n).policy(policy).launch(out, table, keys);
    } catch (const canopy::Error& e) {
      error = e.what();
    }
    CHECK(error.find("its piece on leaf '" + accelerator(0) + "'") != std::string::npos);
    CHECK(error.find("no piece of the region ran") != std::string::npos);
    CHECK_NOTHROW(rt.pause());
    auto o = out.host_read();
    std::int64_t written = 0;
    for (std::int64_t i = 0; i < n; ++i) written += o[i] != -1;
    CHECK(written == 0);
  }
  // Given no rows, the device is no obstacle: the CPU runs it all.
  rt.region(gather()).over(n).policy("percentage:[100,0]").launch(out, table, keys);
  auto o = out.host_read();
  std::int64_t wrong = 0;
  for (std::int64_t i = 0; i < n; ++i) wrong += o[i] != (i * 31) % size;
  CHECK(wrong == 0);
}

TEST_CASE(
    "hetero: adaptive gives no rows to a device that cannot hold a merged array, though its input was left there" *
    doctest::test_suite("opencl")) {
  // Found by a new user's program: the adaptive policy followed the split the
  // input was left in (all of it on the device, run there in passes) and put
  // a histogram into a merged array on a 32 KiB device, where it can run in
  // no number of passes; the launch was refused for a split the program had
  // not asked for.
  canopy::testing::ScopedSetting limit("CANOPY_DEVICE_MEMORY", (accelerator(0) + ":32KiB").c_str());
  Runtime rt;
  if (!use_cpu0_and_device(rt)) CANOPY_TEST_SKIP(OpenCL, "this node lacks cpu0 or " << accelerator(0));
  static const Kernel step("fit_step", [](InOut<std::int64_t> x, Val<std::int64_t> by) {
    Idx i = index(0);
    x[i] = x[i] + by;
  });
  static const Kernel histogram("fit_histogram", [](InOut<double> h, In<std::int64_t> x) {
    Idx i = index(0);
    atomic_add(h[x[i] % 5], 0.25);
  });
  const std::int64_t n = 10007;  // 80 KB of keys: the device holds them in passes only
  auto x = rt.array<std::int64_t>(n, named("x"));
  auto bins = rt.array<double>(5, named("bins") | merge(MergeOp::Sum));
  {
    auto view = x.host();
    for (std::int64_t i = 0; i < n; ++i) view[i] = i;
  }
  rt.region(step).over(n).policy("percentage:[0,100]").launch(x, std::int64_t{1});
  for (int round = 0; round < 3; ++round) {
    REQUIRE_NOTHROW(rt.region(histogram).over(n).policy("adaptive").launch(bins, x));
    rt.pause();
  }
  std::vector<double> want(5, 0.0);
  for (std::int64_t i = 0; i < n; ++i) want[std::size_t((i + 1) % 5)] += 3 * 0.25;
  const auto got = bins.host_read();
  for (std::size_t b = 0; b < 5; ++b) CHECK(got[b] == want[b]);
  for (const RegionStats& region : rt.stats().recent)
    if (region.kernel == "fit_histogram")
      for (const auto& piece : region.pieces) CHECK(piece.leaf == "cpu0");
}

TEST_CASE("hetero: writes at an offset from a scalar parameter split over two memories and run in passes" *
          doctest::test_suite("opencl")) {
  // Found by a new user's program: `y[i + k]` with k a Val was taken to
  // write anywhere in y, so the region ran on one memory whatever the
  // policy, and `y[i] = x[n - 1 - i]` with n a Val was refused on a small
  // device instead of running there in passes. Each launch's footprint now
  // takes its scalars' values.
  canopy::testing::ScopedSetting limit("CANOPY_DEVICE_MEMORY", (accelerator(0) + ":64KiB").c_str());
  Runtime rt;
  if (!use_cpu0_and_device(rt)) CANOPY_TEST_SKIP(OpenCL, "this node lacks cpu0 or " << accelerator(0));
  static const Kernel shift("offset_shift", [](InOut<double> y, In<double> x, Val<std::int64_t> k) {
    Idx i = index(0);
    y[i + k] = 2.0 * x[i] + 1.0;
  });
  static const Kernel reverse("offset_reverse", [](Out<double> y, In<double> x, Val<std::int64_t> n) {
    Idx i = index(0);
    y[i] = x[n - 1 - i];
  });
  const std::int64_t n = 30000;  // 240 KB an array: the device holds a few rows of each at a time
  const std::int64_t k = 7;
  auto x = rt.array<double>(n, named("x"));
  auto y = rt.array<double>(n, named("y"));
  auto z = rt.array<double>(n, named("z"));
  {
    auto xv = x.host();
    auto yv = y.host();
    for (std::int64_t i = 0; i < n; ++i) {
      xv[i] = 0.25 * double(i % 1000) - 3.0;
      yv[i] = -1.0;
    }
  }
  rt.region(shift).over(n - k).policy("percentage:[50,50]").launch(y, x, k);
  rt.region(reverse).over(n).at(accelerator(0)).launch(z, y, n);
  rt.pause();
  std::vector<double> want_y(static_cast<std::size_t>(n), -1.0), want_z(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n - k; ++i) want_y[std::size_t(i + k)] = 2.0 * (0.25 * double(i % 1000) - 3.0) + 1.0;
  for (std::int64_t i = 0; i < n; ++i) want_z[std::size_t(i)] = want_y[std::size_t(n - 1 - i)];
  const auto got_y = y.host_read();
  const auto got_z = z.host_read();
  std::int64_t wrong = 0;
  for (std::int64_t i = 0; i < n; ++i)
    wrong += (got_y[i] != want_y[std::size_t(i)]) + (got_z[i] != want_z[std::size_t(i)]);
  CHECK(wrong == 0);
  for (const RegionStats& region : rt.stats().recent) {
    CAPTURE(region.kernel);
    if (region.kernel == "offset_shift")
      CHECK(pieces_of(region) == std::vector<std::string>{"cpu0[0,14997)", accelerator(0) + "[14997,29993)"});
    if (region.kernel == "offset_reverse") {
      REQUIRE(region.pieces.size() == 1);
      CHECK(region.pieces.front().passes > 1);
    }
  }
}

TEST_CASE("hetero: add_location refuses a second leaf on a device that a leaf runs already" *
          doctest::test_suite("opencl")) {
  // Found by a new user: a second leaf bound to opencl:0 was taken without a
  // word, where a configuration file refuses it.
  Runtime rt;
  if (!use_cpu0_and_device(rt)) CANOPY_TEST_SKIP(OpenCL, "this node lacks cpu0 or " << accelerator(0));
  const Hierarchy tree = rt.hierarchy();
  const Location& device = tree.at(accelerator(0));
  const std::string before = tree.to_text();
  const std::string message =
      error_of([&] { rt.add_location("again", device.kind(), device.traits(), device.parent()->name()); });
  CHECK(message == "location 'again' (" + std::string(name_of(device.kind())) + ") names device '" +
                       device.traits().device + "', which leaf '" + accelerator(0) +
                       "' runs already; a device runs one leaf: remove that leaf first, or give another device");
  CHECK(rt.hierarchy().to_text() == before);
}
