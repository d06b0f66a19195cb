// Checked mode's kernels on the targets this machine cannot run: the CUDA C
// generated for a bounds-checked kernel compiles with NVRTC (and assembles
// with ptxas where there is one), and its SPIR-V passes spirv-val. The
// kernels are rewritten as the engine does under CANOPY_CHECK=bounds:
// optimize, check_bounds, optimize. Without NVRTC or spirv-val the test says
// so and passes.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include <canopy/ir/parser.hpp>
#include <canopy/ir/passes/bounds_check.hpp>
#include <canopy/ir/passes/optimize.hpp>
#include <canopy/jit/c_source.hpp>
#include <canopy/jit/cuda_c.hpp>
#include <canopy/jit/spirv.hpp>

#include "cuda_support.hpp"
#include "level_zero_support.hpp"

using namespace canopy;

namespace {

// One kernel of each kind of access: a gather (a load indexing a load), a
// 2-D stencil with a loop, an atomic scatter, and a reduction.
const char* const kKernels[] = {
    R"(kernel checked_gather(out f64[1] result, in f64[1] values, in i64[1] where) dims 1 {
  result[index(0)] = values[where[index(0)]]
})",
    R"(kernel checked_stencil(out f32[2] v, in f32[2] u) dims 2 {
  var s: f32 = 0:f32
  for k in 0:i64 .. 3:i64 {
    s = (s + u[((index(0) + k) - 1:i64), index(1)])
  }
  v[index(0), index(1)] = s
})",
    R"(kernel checked_scatter(inout i32[1] bins, in i32[1] keys) dims 1 {
  atomic bins[i64(keys[index(0)])] += 1:i32
})",
    R"(kernel checked_sum(in f64[2] x, sum f64 total) dims 1 {
  reduce total <- x[index(0), 0:i64]
})",
};

std::vector<ir::Kernel> checked_kernels() {
  std::vector<ir::Kernel> kernels;
  for (const char* text : kKernels) kernels.push_back(ir::optimize(ir::check_bounds(ir::optimize(ir::parse(text)))));
  return kernels;
}

}  // namespace

TEST_CASE("checked codegen: the CUDA C of bounds-checked kernels compiles with NVRTC") {
  NVRTC_OR_SKIP(nvrtc);
  const std::string ptxas = cuda_test::ptxas_path();
  for (const auto& kernel : checked_kernels()) {
    INFO("kernel ", kernel.name);
    const jit::CSource source = jit::cuda_c_source(kernel);
    // The fault record is the kernel's last array argument.
    CHECK(source.text.find("canopy_fault0") != std::string::npos);
    const auto ptx = backends::cuda::nvrtc_compile(*nvrtc, source, kernel.name, "compute_80", "the test");
    CHECK(cuda_test::contains(ptx.image, ".entry " + source.entry + "("));
    if (ptxas.empty()) continue;
    const auto assembled = cuda_test::assemble(ptxas, ptx.image, "sm_80", source.entry);
    INFO("ptxas said:\n", assembled.output);
    CHECK(assembled.status == 0);
  }
}

TEST_CASE("checked codegen: the SPIR-V of bounds-checked kernels passes spirv-val") {
  if (!jit::spirv_available()) {
    CANOPY_TEST_SKIP(Other, jit::spirv_unavailable_reason());
  }
  if (!level_zero_test::have_tool("spirv-val")) {
    CANOPY_TEST_SKIP(Other, "spirv-val is not installed (Debian package spirv-tools)");
  }
  for (const auto& kernel : checked_kernels()) {
    const jit::SpirvKernel spirv = jit::spirv_of(kernel);
    const bool opencl_1_2 = !jit::features_of(kernel).int64_atomics;
    const auto verdict = level_zero_test::validate_spirv(spirv.binary, kernel.name, opencl_1_2);
    INFO("kernel '", kernel.name, "': spirv-val says: ", verdict.output);
    CHECK(verdict.status == 0);
  }
}
