// Golden files: the OpenCL C generated for three kernels (a triad, a 2-D
// five-point stencil with its boundary under If, a sum reduction in both ways
// of walking the points), compared exactly with the files checked in under
// tests/backends/golden/. A change to the generated code shows up here as a
// diff to read; when it is intended, regenerate the files with
// CANOPY_UPDATE_GOLDEN=1 and review them. Where an OpenCL device is present,
// each golden source is also built and run there.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <canopy/ir/parser.hpp>
#include <canopy/jit/opencl_c.hpp>

#include "opencl_support.hpp"

using namespace canopy;
using namespace opencl_test;

namespace {

// The kernels in the IR's text form, as the optimizer leaves them (so that
// the golden files change only when the OpenCL C printer does).
constexpr const char* kTriad = R"(kernel triad(out f64[1] a, in f64[1] b, in f64[1] c, val f64 s) dims 1 {
  a[index(0)] = (b[index(0)] + (s * c[index(0)]))
})";

constexpr const char* kJacobi = R"(kernel jacobi_2d(out f64[2] v, in f64[2] u) dims 2 {
  if ((((index(0) > 0:i64) & (index(0) < (extent(u, 0) - 1:i64))) & (index(1) > 0:i64)) & (index(1) < (extent(u, 1) - 1:i64))) {
    v[index(0), index(1)] = ((((u[(index(0) - 1:i64), index(1)] + u[(index(0) + 1:i64), index(1)]) + u[index(0), (index(1) - 1:i64)]) + u[index(0), (index(1) + 1:i64)]) * 0.25:f64)
  } else {
    v[index(0), index(1)] = u[index(0), index(1)]
  }
})";

constexpr const char* kSum = R"(kernel $sum(in f64[1] x, sum f64 total) dims 1 {
  reduce total <- x[index(0)]
})";

std::filesystem::path golden_path(const std::string& name) {
  return std::filesystem::path(CANOPY_TEST_SOURCE_DIR) / "backends" / "golden" / name;
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Compares `source` with golden file `name` (or rewrites it when asked to).
void check_golden(const std::string& name, const std::string& source) {
  const auto path = golden_path(name);
  if (const char* update = std::getenv("CANOPY_UPDATE_GOLDEN"); update && std::string(update) == "1") {
    std::ofstream(path, std::ios::binary) << source;
    MESSAGE("rewrote " << path.string());
  }
  REQUIRE_MESSAGE(std::filesystem::exists(path), "missing golden file " << path.string());
  const std::string golden = read_file(path);
  INFO("generated source differs from " << path.string() << "; generated:\n" << source);
  CHECK(source == golden);
}

jit::CSource generated(const char* ir_text, jit::ReductionWalk walk = jit::ReductionWalk::Chunked) {
  return jit::opencl_c_source(ir::parse(ir_text), {walk});
}

}  // namespace

TEST_CASE("opencl golden: triad") {
  const auto source = generated(kTriad);
  CHECK(source.entry == "triad");
  CHECK(source.edge_entry == "triad_edges");
  check_golden("triad.cl", source.text);
}

TEST_CASE("opencl golden: 2-D five-point stencil") {
  const auto source = generated(kJacobi);
  CHECK(source.entry == "jacobi_2d");
  check_golden("jacobi_2d.cl", source.text);
}

TEST_CASE("opencl golden: sum reduction, chunked (CPU devices) and strided (GPUs)") {
  const auto chunked = generated(kSum, jit::ReductionWalk::Chunked);
  const auto strided = generated(kSum, jit::ReductionWalk::Strided);
  CHECK(chunked.entry == "sum");
  CHECK(chunked.edge_entry.empty());
  check_golden("sum.cl", chunked.text);
  check_golden("sum_strided.cl", strided.text);
}

TEST_CASE("opencl golden: the golden sources build and compute on the device" * doctest::test_suite("opencl")) {
  OPENCL_DEVICE_OR_SKIP(device);
  battery::Random random(4141);
  // The triad and the stencil, through the golden files' own text.
  const auto triad = std::make_shared<const ir::Kernel>(ir::parse(kTriad));
  const auto program =
      device->compile_source(triad, {read_file(golden_path("triad.cl")), "triad", "triad_edges", "", 0});
  const i64 n = 5000;
  const auto b = random.values<double>(n, -1, 1), c = random.values<double>(n, -1, 1);
  auto buffers = std::array{device->allocate(n * 8), device->allocate(n * 8), device->allocate(n * 8)};
  device->copy_in(buffers[1], 0, b.data(), n * 8);
  device->copy_in(buffers[2], 0, c.data(), n * 8);
  std::vector<backends::KernelArg> args;
  for (auto& buffer : buffers) args.push_back(ArrayArg{buffer.handle, {n, 1, 1}});
  args.push_back(scalar(0.4));
  device->run(*program, args, range_of(n));
  std::vector<double> a(n);
  device->copy_out(buffers[0], 0, a.data(), n * 8);
  for (auto& buffer : buffers) device->free(buffer);
  i64 wrong = 0;
  for (std::size_t k = 0; k < a.size(); ++k) wrong += a[k] != b[k] + 0.4 * c[k];
  CHECK(wrong == 0);

  // The generated stencil and sum compute what the CPU device does.
  const i64 rows = 67, cols = 45;
  compare(*device, KernelBase(ir::parse(kJacobi)),
          {HostArray::filled<double>(rows * cols, 0, {rows, cols, 1}, 2),
           HostArray::of<double>(random.values<double>(rows * cols, -1, 1), {rows, cols, 1}, 2)},
          range_of({0, 0}, {rows, cols}));
  std::vector<double> x(100003);
  for (auto& v : x) v = static_cast<double>(random.integer(-1000, 1000));
  auto [cpu, got] = compare(*device, KernelBase(ir::parse(kSum)), {HostArray::of<double>(x), ReductionArg{}},
                            range_of(static_cast<i64>(x.size())));
  double want = 0;
  for (double v : x) want += v;
  CHECK(got.reductions.at(0).float_value == want);
}
