// Streaming (non-temporal) stores: which arrays may take them, and that
// launches using them compute exactly what plain stores do, whatever the
// range's length and alignment.
#include <doctest/doctest.h>

#include <canopy/canopy.hpp>
#include <canopy/jit/cpu_compiler.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
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
