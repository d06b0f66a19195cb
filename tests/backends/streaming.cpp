// Streaming (non-temporal) stores: which arrays may take them, and that
// launches using them compute exactly what plain stores do, whatever the
// range's length and alignment.
#include <doctest/doctest.h>

#include <canopy/backends/launch.hpp>
#include <canopy/canopy.hpp>
#include <canopy/jit/cpu_compiler.hpp>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include "scoped_setting.hpp"

using namespace canopy;

namespace {

// The assembly of `kernel`'s variant with streaming stores into parameter 0.
std::string streaming_assembly(const ir::Kernel& kernel) {
  const auto dir = std::filesystem::temp_directory_path() / "canopy-streaming-test";
  std::filesystem::remove_all(dir);
  {
    canopy::testing::ScopedSetting dump("CANOPY_DUMP", "asm"), dump_dir("CANOPY_DUMP_DIR", dir.c_str());
    jit::CpuCompiler compiler({"off"});
    jit::CpuCompiler::CodeOptions code;
    code.streaming_stores = {0};
    compiler.compile(kernel, code);
  }
  std::ifstream file(dir / (kernel.name + ".streaming.asm"));
  REQUIRE(file);
  std::stringstream text;
  text << file.rdbuf();
  std::filesystem::remove_all(dir);
  return text.str();
}

}  // namespace

TEST_CASE("streaming candidates: write-only arrays stored at the point's own element, unconditionally") {
  Kernel triad("triad", [](Out<double> a, In<double> b, In<double> c, Val<double> s) {
    Idx i = index(0);
    a[i] = b[i] + s * c[i];
  });
  CHECK(jit::streaming_candidates(triad.ir()) == std::vector<int>{0});

  Kernel update("update", [](InOut<double> a) { a[index(0)] += 1.0; });
  CHECK(jit::streaming_candidates(update.ir()).empty());  // read as well as written

  Kernel guarded("guarded", [](Out<double> a, In<double> b) { If(b[index(0)] > 0.0, [&] { a[index(0)] = 1.0; }); });
  CHECK(jit::streaming_candidates(guarded.ir()).empty());  // not every point writes

  Kernel strided("strided", [](Out<float> a) { a[index(0) * 2] = 1.0f; });
  CHECK(jit::streaming_candidates(strided.ir()).empty());

  Kernel two_outputs("two_outputs", [](Out<float> a, Out<float> b, In<float> c) {
    Idx i = index(0);
    a[i] = c[i];
    b[i] = c[i] * 2;
  });
  CHECK(jit::streaming_candidates(two_outputs.ir()) == std::vector<int>{0, 1});

  Kernel grid("grid", [](Out<double, 2> g, Out<float, 2> transposed, Out<float> column) {
    Idx i = index(0), j = index(1);
    g(i, j) = 1.0;
    transposed(j, i) = 2.0f;
    column[j] = 3.0f;
  });
  // The point's own element in each dimension; not a transpose (the lanes'
  // stores are a column apart), nor an array of another rank.
  CHECK(jit::streaming_candidates(grid.ir()) == std::vector<int>{0});

  Kernel box("box", [](Out<float, 3> b, Out<float, 3> shifted) {
    Idx i = index(0), j = index(1), k = index(2);
    b(i, j, k) = 1.0f;
    shifted(i, j, k + 1) = 1.0f;
  });
  CHECK(jit::streaming_candidates(box.ir()) == std::vector<int>{0});
}

TEST_CASE("two- and three-dimensional launches with streaming stores give the results of plain stores") {
  canopy::testing::ScopedSetting streaming("CANOPY_STREAMING_STORES", "on");
  Runtime rt;
  // Columns whose rows start on 64-byte boundaries (16, 64, 1040 floats)
  // take the streaming entry; the others (1, 17, 100) the plain one.
  Kernel coefficients("stream_grid", [](Out<float, 2> a, Out<double, 2> b, In<float, 2> c, Val<float> s) {
    Idx i = index(0), j = index(1);
    const Idx cols = c.extent(1);
    Var<float> east = 0.0f;
    If(j < cols - 1, [&] { east = c(i, j + 1); });
    a(i, j) = c(i, j) * s + east.value();
    b(i, j) = cast<double>(c(i, j)) - 0.5;
  });
  for (std::int64_t rows : {1, 3, 129}) {
    for (std::int64_t cols : {1, 16, 17, 64, 100, 1040}) {
      auto a = rt.array<float, 2>(Shape(rows, cols));
      auto b = rt.array<double, 2>(Shape(rows, cols));
      auto c = rt.array<float, 2>(Shape(rows, cols));
      std::vector<float> input(static_cast<std::size_t>(rows * cols));
      for (std::size_t k = 0; k < input.size(); ++k) input[k] = float(k % 97) * 0.25f - 3.0f;
      {
        auto hc = c.host();
        std::copy(input.begin(), input.end(), hc.begin());
      }
      rt.region(coefficients).over(rows, cols).launch(a, b, c, 1.5f);
      auto ha = a.host_read();
      auto hb = b.host_read();
      bool same = true;
      for (std::int64_t i = 0; i < rows; ++i)
        for (std::int64_t j = 0; j < cols; ++j) {
          const float here = input[std::size_t(i * cols + j)];
          const float east = j < cols - 1 ? input[std::size_t(i * cols + j + 1)] : 0.0f;
          same = same && ha(i, j) == here * 1.5f + east && hb(i, j) == double(here) - 0.5;
        }
      CHECK_MESSAGE(same, rows << " x " << cols);
    }
  }
  Kernel box("stream_box", [](Out<std::int32_t, 3> b) {
    Idx i = index(0), j = index(1), k = index(2);
    b(i, j, k) = cast<std::int32_t>(i * 10000 + j * 100 + k);
  });
  for (std::int64_t depth : {5, 16, 33}) {
    auto b = rt.array<std::int32_t, 3>(Shape(3, 7, depth));
    rt.region(box).over(3, 7, depth).launch(b);
    auto hb = b.host_read();
    bool same = true;
    for (std::int64_t i = 0; i < 3; ++i)
      for (std::int64_t j = 0; j < 7; ++j)
        for (std::int64_t k = 0; k < depth; ++k) same = same && hb(i, j, k) == i * 10000 + j * 100 + k;
    CHECK_MESSAGE(same, "depth " << depth);
  }
}

TEST_CASE("the streaming variant's stores are non-temporal and fenced") {
  Kernel copy("stream_copy", [](Out<double> a, In<double> b) { a[index(0)] = b[index(0)]; });
  const std::string assembly = streaming_assembly(copy.ir());
  CHECK(assembly.find("vmovnt") != std::string::npos);
  CHECK(assembly.find("sfence") != std::string::npos);
}

TEST_CASE("a two-dimensional kernel's streaming variant stores non-temporally") {
  Kernel copy("stream_copy_2d",
              [](Out<float, 2> a, In<float, 2> b) { a(index(0), index(1)) = b(index(0), index(1)) * 2.0f; });
  const std::string assembly = streaming_assembly(copy.ir());
  CHECK(assembly.find("vmovnt") != std::string::npos);
  CHECK(assembly.find("sfence") != std::string::npos);
}

TEST_CASE("launches with streaming stores give the same results as plain stores") {
  {
    canopy::testing::ScopedSetting streaming("CANOPY_STREAMING_STORES", "on");
    Runtime rt;
    Kernel scale("stream_scale", [](Out<double> a, Out<float> f, In<double> b, Val<double> s) {
      Idx i = index(0);
      a[i] = s * b[i];
      f[i] = cast<float>(b[i]) + 1.0f;
    });
    for (std::int64_t n : {1, 15, 16, 17, 1000, 4099, 100003, 1 << 20}) {
      auto a = rt.array<double>(n), b = rt.array<double>(n);
      auto f = rt.array<float>(n);
      auto hb = b.host();
      for (std::int64_t i = 0; i < n; ++i) hb[i] = double(i % 1013) * 0.5 - 7.0;
      rt.region(scale).over(n).launch(a, f, b, 3.0);
      auto ha = a.host();
      auto hf = f.host();
      bool same = true;
      for (std::int64_t i = 0; i < n; ++i)
        same = same && ha[i] == 3.0 * hb[i] && hf[i] == static_cast<float>(hb[i]) + 1.0f;
      CHECK_MESSAGE(same, "n = " << n);
    }
  }
}

TEST_CASE("a kernel that writes with streaming stores and also reduces gives the serial sums") {
  canopy::testing::ScopedSetting streaming("CANOPY_STREAMING_STORES", "on");
  Runtime rt;
  Kernel fill_and_sum("stream_fill_sum", [](Out<double> a, In<double> b, Sum<double> total, Max<std::int64_t> top) {
    Idx i = index(0);
    a[i] = b[i] * 2.0;
    total += b[i];
    top.combine(i % 1000);
  });
  for (std::int64_t n : {1, 15, 16, 17, 1000, 4099, 100003, 1 << 20}) {
    auto a = rt.array<double>(n), b = rt.array<double>(n);
    {
      auto hb = b.host();
      for (std::int64_t i = 0; i < n; ++i) hb[i] = double(i % 1013) * 0.5 - 7.0;
    }
    auto [sum, top] = rt.region(fill_and_sum).over(n).reduce(a, b);
    double serial = 0;
    std::int64_t serial_top = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      serial += double(i % 1013) * 0.5 - 7.0;
      serial_top = std::max(serial_top, i % 1000);
    }
    CHECK_MESSAGE(sum == doctest::Approx(serial).epsilon(1e-12), "n = " << n);
    CHECK_MESSAGE(top == serial_top, "n = " << n);
    auto ha = a.host_read();
    bool same = true;
    for (std::int64_t i = 0; i < n; ++i) same = same && ha[i] == (double(i % 1013) * 0.5 - 7.0) * 2.0;
    CHECK_MESSAGE(same, "n = " << n);
  }
}

TEST_CASE("the streaming rule weighs what a launch passes through its arrays against the threshold") {
  const std::size_t threshold = std::size_t{64} << 20;
  // nn's search over 8 million records: 32 MB of distances written beside
  // 64 MB of locations read; a plain store's line is long gone by the end.
  CHECK(backends::takes_streaming_stores(32'000'000, 96'000'000, threshold));
  // The same writes with less read beside them may still be in the caches.
  CHECK_FALSE(backends::takes_streaming_stores(32'000'000, 48'000'000, threshold));
  // Writes of a sixteenth of the threshold or more, not less.
  CHECK(backends::takes_streaming_stores(threshold / 16, std::size_t{200} << 20, threshold));
  CHECK_FALSE(backends::takes_streaming_stores(threshold / 16 - 1, std::size_t{200} << 20, threshold));
  CHECK(backends::takes_streaming_stores(threshold, threshold, threshold));  // STREAM's copy
  CHECK_FALSE(backends::takes_streaming_stores(0, std::size_t{200} << 20, threshold));
  // CANOPY_STREAMING_STORES=on and off.
  CHECK(backends::takes_streaming_stores(1, 1, 0));
  const std::size_t never = std::numeric_limits<std::size_t>::max();
  CHECK_FALSE(backends::takes_streaming_stores(never / 2, never, never));
}

TEST_CASE("bytes_passed counts an array of the kernel's rank per point and any other whole") {
  Kernel k("stream_passed", [](Out<float> a, In<double> b, In<float, 2> table, Val<float> s) {
    Idx i = index(0);
    a[i] = cast<float>(b[i]) + table(0, 1) * s;
  });
  using Elements = std::vector<std::int64_t>;
  CHECK(backends::bytes_passed(k.ir(), 1000, Elements{0, 0, 50, 0}) == 1000 * 4 + 1000 * 8 + 50 * 4);
  CHECK(backends::bytes_passed(k.ir(), 1000, Elements{}) == 1000 * 12);  // the table's size not known
  // From a launch's arguments: the table by its extents, 5 x 10.
  std::vector<backends::KernelArg> args(4);
  backends::ArrayArg table;
  table.extents = {5, 10, 1};
  args[2] = table;
  CHECK(backends::bytes_passed(k.ir(), 1000, args) == 1000 * 12 + 50 * 4);
}

namespace {

// `count` elements of T starting `offset` elements past a 64-byte boundary
// in `memory` (sized for them).
template <class T>
T* past_boundary(std::vector<T>& memory, std::int64_t offset) {
  auto at = reinterpret_cast<std::uintptr_t>(memory.data());
  at = (at + 63) / 64 * 64;
  return reinterpret_cast<T*>(at) + offset;
}

bool dumped(const std::filesystem::path& dir, const std::string& name) {
  return std::filesystem::exists(dir / (name + ".streaming.llvm"));
}

}  // namespace

TEST_CASE("wrapped memory off a 64-byte boundary takes streaming stores from the first point where all align") {
  const auto dir = std::filesystem::temp_directory_path() / "canopy-streaming-wrapped";
  std::filesystem::remove_all(dir);
  canopy::testing::ScopedSetting streaming("CANOPY_STREAMING_STORES", "on");
  canopy::testing::ScopedSetting dump("CANOPY_DUMP", "llvm"), dump_dir("CANOPY_DUMP_DIR", dir.c_str());
  Runtime rt;
  // Names no cache holds, so that a streaming variant used is compiled, and dumped, here.
  const std::string unique =
      std::to_string(::getpid()) + "_" + std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
  const std::int64_t n = 100003;
  std::vector<float> input(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) input[static_cast<std::size_t>(i)] = float(i % 977) * 0.5f - 3.0f;
  std::vector<float> floats(static_cast<std::size_t>(n + 64));
  std::vector<double> doubles(static_cast<std::size_t>(n + 32));
  auto same_as_serial = [&](const float* a, const double* d) {
    bool same = true;
    for (std::int64_t i = 0; i < n; ++i) {
      const float x = input[static_cast<std::size_t>(i)];
      same = same && a[i] == x * 2.0f + 1.0f && (!d || d[i] == double(x) - 0.25);
    }
    return same;
  };
  auto in = rt.wrap(input.data(), n, read_only());

  // One element size: every offset aligns somewhere (a float every 16 points).
  const std::string one = "stream_wrapped_" + unique;
  Kernel scale(one, [](Out<float> a, In<float> b) { a[index(0)] = b[index(0)] * 2.0f + 1.0f; });
  for (std::int64_t offset : {1, 3, 8, 15}) {
    std::fill(floats.begin(), floats.end(), -1.0f);
    float* a = past_boundary(floats, offset);
    auto out = rt.wrap(a, n);
    rt.region(scale).over(n).launch(out, in);
    rt.pause();
    CHECK_MESSAGE(same_as_serial(a, nullptr), "offset " << offset);
    CHECK(a[-1] == -1.0f);
    CHECK(a[n] == -1.0f);
  }
  CHECK(dumped(dir, one));

  auto mixed = [](Out<float> a, Out<double> d, In<float> b) {
    Idx i = index(0);
    a[i] = b[i] * 2.0f + 1.0f;
    d[i] = cast<double>(b[i]) - 0.25;
  };
  const std::string fits = "stream_mixed_fits_" + unique, never = "stream_mixed_never_" + unique;
  Kernel both_fits(fits, mixed), both_never(never, mixed);
  // Launches `kernel` (named `name`) into floats and doubles that many
  // elements past a boundary, checks its results, and says whether its
  // streaming variant was compiled.
  auto streamed = [&](const auto& kernel, const std::string& name, std::int64_t floats_past,
                      std::int64_t doubles_past) {
    float* a = past_boundary(floats, floats_past);
    double* d = past_boundary(doubles, doubles_past);
    auto out = rt.wrap(a, n);
    auto out_d = rt.wrap(d, n);
    rt.region(kernel).over(n).launch(out, out_d, in);
    rt.pause();
    CHECK(same_as_serial(a, d));
    return dumped(dir, name);
  };
  // 12 floats and 4 doubles past a boundary: both reach one at point 4.
  CHECK(streamed(both_fits, fits, 12, 4));
  // 1 float and 0 doubles past: the floats align at points 15 + 16k, the
  // doubles at 8k; never together, so the plain stores run.
  CHECK_FALSE(streamed(both_never, never, 1, 0));
  std::filesystem::remove_all(dir);
}
