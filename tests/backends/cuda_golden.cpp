// Golden files: the CUDA C++ generated for the three kernels the OpenCL
// golden files show (a triad, a 2-D five-point stencil with its boundary
// under If, a sum reduction), compared exactly with the files checked in
// under tests/backends/golden/*.cu. A change to the generated code shows up
// here as a diff to read; when it is intended, regenerate the files with
// CANOPY_UPDATE_GOLDEN=1 and review them. Where NVRTC is present, each
// golden source is also compiled (and its PTX assembled where ptxas is).
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <canopy/ir/parser.hpp>
#include <canopy/jit/cuda_c.hpp>

#include "cuda_support.hpp"

using namespace canopy;
using namespace cuda_test;

namespace {

// The kernels in the IR's text form, as the optimizer leaves them: the same
// three as opencl_golden.cpp.
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

jit::CSource generated(const char* ir_text) { return jit::cuda_c_source(ir::parse(ir_text)); }

}  // namespace

TEST_CASE("cuda golden: triad") {
  const auto source = generated(kTriad);
  CHECK(source.entry == "triad");
  CHECK(source.edge_entry == "triad_edges");
  check_golden("triad.cu", source.text);
}

TEST_CASE("cuda golden: 2-D five-point stencil") {
  const auto source = generated(kJacobi);
  CHECK(source.entry == "jacobi_2d");
  CHECK(source.edge_entry == "jacobi_2d_edges");
  check_golden("jacobi_2d.cu", source.text);
}

TEST_CASE("cuda golden: sum reduction (strided: neighbouring threads read neighbouring elements)") {
  const auto source = generated(kSum);
  CHECK(source.entry == "sum");
  CHECK(source.edge_entry.empty());
  check_golden("sum.cu", source.text);
}

TEST_CASE("cuda golden: the golden sources compile with NVRTC, unfused, and assemble with ptxas") {
  NVRTC_OR_SKIP(nvrtc);
  const std::string ptxas = ptxas_path();
  struct Golden {
    const char* file;
    jit::CSource source;
  };
  const Golden goldens[] = {
      {"triad.cu", {read_file(golden_path("triad.cu")), "triad", "triad_edges", "", 0}},
      {"jacobi_2d.cu", {read_file(golden_path("jacobi_2d.cu")), "jacobi_2d", "jacobi_2d_edges", "", 0}},
      {"sum.cu", {read_file(golden_path("sum.cu")), "sum", "", "", 0}}};
  for (const auto& golden : goldens) {
    INFO(golden.file);
    const auto ptx =
        backends::cuda::nvrtc_compile(*nvrtc, golden.source, golden.source.entry, "compute_80", "the test");
    CHECK(contains(ptx.image, ".entry " + golden.source.entry + "("));
    // --fmad=false: b + s * c stays a multiply and an add, as on the CPU.
    CHECK_FALSE(contains(ptx.image, "fma.rn.f64"));
    if (golden.source.entry == std::string("triad")) {
      CHECK(contains(ptx.image, "mul.rn.f64"));
      CHECK(contains(ptx.image, "add.rn.f64"));
    }
    if (golden.source.entry == std::string("sum")) CHECK(contains(ptx.image, "bar.sync"));
    if (ptxas.empty()) {
      MESSAGE("ptxas not found: " << golden.file << " is not assembled");
      continue;
    }
    const auto result = assemble(ptxas, ptx.image, "sm_80", golden.source.entry);
    INFO("ptxas said:\n", result.output);
    CHECK(result.status == 0);
  }
}
