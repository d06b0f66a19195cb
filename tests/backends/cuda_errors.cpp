// What the CUDA backend says when asked the impossible, checked without a
// GPU: a source NVRTC does not take (the error carries the kernel, the
// architecture, NVRTC's log and the numbered source), a device older than
// every architecture NVRTC compiles for, f64 atomics on a device without
// them; and how the architecture is chosen (a cubin where NVRTC knows the
// device, PTX for the newest older one where it does not).
#include <doctest/doctest.h>

#include <canopy/ir/parser.hpp>
#include <canopy/jit/cuda_c.hpp>

#include "cuda_support.hpp"

using namespace canopy;
using namespace cuda_test;
using backends::cuda::nvrtc_architecture;

namespace {

constexpr const char* kCopy = R"(kernel copy_values(out f64[1] a, in f64[1] b) dims 1 {
  a[index(0)] = b[index(0)]
})";

constexpr const char* kAtomics = R"(kernel add_into(inout f64[1] h, in f64[1] x) dims 1 {
  atomic h[0:i64] += x[index(0)]
})";

}  // namespace

TEST_CASE("cuda errors: a source NVRTC does not compile shows the kernel, the log and the numbered source") {
  NVRTC_OR_SKIP(nvrtc);
  auto source = jit::cuda_c_source(ir::parse(kCopy));
  // A statement no CUDA compiler takes, on a line of its own, in the first entry.
  const auto body = source.text.find("a[i - a_first] = b[i - b_first];");
  REQUIRE(body != std::string::npos);
  source.text.insert(body, "this_is_not_cuda(a, b);\n  ");
  const std::string message = error_of([&] {
    backends::cuda::nvrtc_compile(*nvrtc, source, "copy_values", "compute_80", "CUDA device 'test' (cuda:7)");
  });
  INFO(message);
  CHECK(contains(message, "CUDA device 'test' (cuda:7) could not compile kernel 'copy_values' with NVRTC " +
                              nvrtc->version() + " for compute_80"));
  CHECK(contains(message, "NVRTC_ERROR_COMPILATION (6)"));
  CHECK(contains(message, "--fmad=false"));
  CHECK(contains(message, "NVRTC log:\n"));
  CHECK(contains(message, "identifier \"this_is_not_cuda\" is undefined"));  // the log names the culprit
  CHECK(contains(message, "CUDA C++ source (copy_values):\n"));
  CHECK(contains(message, "   1 | // Kernel 'copy_values' in CUDA C++"));  // numbered source
  CHECK(contains(message, " |   this_is_not_cuda(a, b);"));
  CHECK(contains(message, "CANOPY_DUMP=ir,cuda"));
  // The same NVRTC goes on compiling the real kernel.
  const auto good = backends::cuda::nvrtc_compile(*nvrtc, jit::cuda_c_source(ir::parse(kCopy)), "copy_values",
                                                  "compute_80", "the test");
  CHECK(contains(good.image, ".entry copy_values("));
}

TEST_CASE("cuda errors: a warning-free kernel leaves NVRTC's log empty, a cubin is an ELF image") {
  NVRTC_OR_SKIP(nvrtc);
  const auto source = jit::cuda_c_source(ir::parse(kAtomics));
  const std::string newest = "sm_" + std::to_string(nvrtc->architectures.back());
  const auto cubin = backends::cuda::nvrtc_compile(*nvrtc, source, "add_into", newest, "the test");
  CHECK(cubin.architecture == newest);
  CHECK(cubin.is_cubin);
  CHECK(cubin.image.compare(0, 4,
                            "\x7f"
                            "ELF") == 0);
  CHECK(cubin.log.empty());
}

TEST_CASE("cuda errors: the architecture is a cubin's where NVRTC knows the device, else the newest older PTX") {
  const std::vector<int> nvrtc_13{75, 80, 86, 87, 88, 89, 90, 100, 103, 110, 120, 121};
  CHECK(nvrtc_architecture(nvrtc_13, 90, "13.0", "d") == "sm_90");
  CHECK(nvrtc_architecture(nvrtc_13, 80, "13.0", "d") == "sm_80");
  CHECK(nvrtc_architecture(nvrtc_13, 121, "13.0", "d") == "sm_121");
  // Unknown to this NVRTC: PTX no newer than the device, which the driver compiles.
  CHECK(nvrtc_architecture(nvrtc_13, 81, "13.0", "d") == "compute_80");
  CHECK(nvrtc_architecture(nvrtc_13, 130, "13.0", "d") == "compute_121");
  const std::vector<int> nvrtc_12_0{50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 89, 90};
  CHECK(nvrtc_architecture(nvrtc_12_0, 100, "12.0", "d") == "compute_90");
  CHECK(nvrtc_architecture(nvrtc_12_0, 88, "12.0", "d") == "compute_87");
  // Older than all of them: no code this NVRTC makes runs there.
  const std::string message =
      error_of([&] { nvrtc_architecture(nvrtc_13, 70, "13.0", "CUDA device 'V100' (cuda:0)"); });
  CHECK(contains(message,
                 "CUDA device 'V100' (cuda:0) has compute capability 7.0, older than every architecture "
                 "NVRTC 13.0 compiles for (the oldest is sm_75)"));
  CHECK(contains(message, "CANOPY_NVRTC"));
  // And the NVRTC of this machine agrees with itself.
  if (const auto* api = nvrtc().api.get())
    for (int architecture : api->architectures)
      CHECK(nvrtc_architecture(api->architectures, architecture, api->version(), "d") ==
            "sm_" + std::to_string(architecture));
}

TEST_CASE("cuda errors: f64 atomics need compute capability 6.0, i64 and f32 ones do not") {
  backends::DeviceInfo info;
  info.id = "cuda:3";
  info.name = "Old GPU";
  backends::cuda::CudaTraits traits;
  traits.compute_major = 5;
  traits.compute_minor = 2;
  const ir::Kernel f64_atomics = ir::parse(kAtomics);
  const std::string message = error_of([&] { backends::cuda::check_device_supports(f64_atomics, info, traits); });
  CHECK(contains(message, "kernel 'add_into' adds atomically to an f64 array, which needs compute capability 6.0"));
  CHECK(contains(message, "CUDA device 'Old GPU' (cuda:3) has 5.2"));
  const ir::Kernel i64_atomics = ir::parse(R"(kernel count_into(inout i64[1] h, in i64[1] x) dims 1 {
  atomic h[0:i64] += x[index(0)]
})");
  CHECK_NOTHROW(backends::cuda::check_device_supports(i64_atomics, info, traits));
  traits.compute_major = 6;
  traits.compute_minor = 0;
  CHECK_NOTHROW(backends::cuda::check_device_supports(f64_atomics, info, traits));
}
