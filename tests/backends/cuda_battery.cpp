// Every kernel of the battery (tests/battery/) as
// CUDA C++: generated, compiled with NVRTC through the backend's own path
// (its function table and options) to PTX for compute_80 and compute_90,
// each PTX assembled by the toolkit's ptxas for sm_80 and sm_90, and to a
// cubin for sm_90 directly. No GPU is needed; without NVRTC the tests that
// need it are skipped, saying so, and only what the printer makes is checked.
#include <doctest/doctest.h>

#include <canopy/jit/cuda_c.hpp>

#include "battery/battery.hpp"
#include "cuda_support.hpp"

using namespace canopy;
using namespace cuda_test;

namespace {

// The CUDA C++ of every battery kernel, printed once.
const std::vector<jit::CSource>& battery_sources() {
  static const std::vector<jit::CSource> sources = [] {
    std::vector<jit::CSource> list;
    for (const auto& kernel : battery::kernels()) list.push_back(jit::cuda_c_source(*kernel));
    return list;
  }();
  return sources;
}

}  // namespace

TEST_CASE("cuda battery: every kernel of the battery prints as CUDA C++ with the kernel ABI's entry points") {
  const auto kernels = battery::kernels();
  REQUIRE(kernels.size() == 57);
  const auto& sources = battery_sources();
  int reductions = 0;
  for (std::size_t k = 0; k < kernels.size(); ++k) {
    const ir::Kernel& kernel = *kernels[k];
    const jit::CSource& source = sources[k];
    INFO(kernels[k]->name, ":\n", source.text);
    CHECK(source.entry == kernel.name);
    CHECK(contains(source.text, "extern \"C\" __global__ void " + source.entry + "("));
    const bool reduces = jit::features_of(kernel).has_reductions;
    reductions += reduces;
    if (reduces) {
      CHECK(source.edge_entry.empty());
      CHECK(contains(source.text, "__shared__ "));
      CHECK(contains(source.text, "__syncthreads();"));
    } else {
      CHECK(source.edge_entry == kernel.name + "_edges");
      CHECK(contains(source.text, "extern \"C\" __global__ void " + source.edge_entry + "("));
    }
    // Every range dimension passes its begin (CUDA has no global offset).
    CHECK(contains(source.text, "long long i_begin"));
    if (kernel.dims > 1) CHECK(contains(source.text, "long long j_begin"));
    // No OpenCL left in it, and no word C++ would read as another type.
    CHECK_FALSE(contains(source.text, "__global "));
    CHECK_FALSE(contains(source.text, "get_global_id"));
    CHECK_FALSE(contains(source.text, "(long)"));
    CHECK_FALSE(contains(source.text, "ulong"));
  }
  CHECK(reductions == 10);
}

TEST_CASE("cuda battery: every kernel compiles with NVRTC and its PTX assembles with ptxas for sm_80 and sm_90") {
  NVRTC_OR_SKIP(nvrtc);
  const std::string ptxas = ptxas_path();
  if (ptxas.empty()) MESSAGE("ptxas not found (CUDA_HOME/bin, /usr/local/cuda/bin, PATH): PTX is not assembled");
  const auto kernels = battery::kernels();
  const auto& sources = battery_sources();
  int assembled = 0;
  for (std::size_t k = 0; k < kernels.size(); ++k) {
    const std::string& name = kernels[k]->name;
    const jit::CSource& source = sources[k];
    for (const std::string architecture : {"80", "90"}) {
      INFO(name, " for compute_", architecture);
      backends::cuda::NvrtcImage ptx;
      const std::string error = error_of(
          [&] { ptx = backends::cuda::nvrtc_compile(*nvrtc, source, name, "compute_" + architecture, "the test"); });
      REQUIRE_MESSAGE(error.empty(), error);
      CHECK_FALSE(ptx.is_cubin);
      CHECK(contains(ptx.image, ".target sm_" + architecture));
      CHECK(contains(ptx.image, ".entry " + source.entry + "("));
      if (!source.edge_entry.empty()) CHECK(contains(ptx.image, ".entry " + source.edge_entry + "("));
      if (ptxas.empty()) continue;
      const ProcessResult result = assemble(ptxas, ptx.image, "sm_" + architecture, name);
      INFO("ptxas said:\n", result.output);
      CHECK(result.status == 0);
      assembled += result.status == 0;
    }
  }
  MESSAGE("NVRTC " << nvrtc->version() << " compiled " << kernels.size() << " kernels for compute_80 and compute_90; "
                   << (ptxas.empty() ? std::string("no ptxas") : ptxas) << " assembled " << assembled << " of them");
  if (!ptxas.empty()) CHECK(assembled == 2 * static_cast<int>(kernels.size()));
}

TEST_CASE("cuda battery: NVRTC makes a cubin for sm_90 directly (what a Hopper device loads)") {
  NVRTC_OR_SKIP(nvrtc);
  const auto& supported = nvrtc->architectures;
  if (std::find(supported.begin(), supported.end(), 90) == supported.end())
    return canopy_test::skip("NVRTC " + nvrtc->version() + " does not compile for sm_90");
  const auto kernels = battery::kernels();
  const auto& sources = battery_sources();
  for (std::size_t k = 0; k < kernels.size(); ++k) {
    INFO(kernels[k]->name);
    const auto cubin = backends::cuda::nvrtc_compile(*nvrtc, sources[k], kernels[k]->name, "sm_90", "the test");
    CHECK(cubin.is_cubin);
    REQUIRE(cubin.image.size() > 4);
    CHECK(cubin.image.compare(0, 4,
                              "\x7f"
                              "ELF") == 0);
    // The kernel functions are named in the cubin's symbol table, unmangled.
    CHECK(contains(cubin.image, sources[k].entry));
  }
}
