// Every kernel of the battery (tests/battery/) lowered to SPIR-V (what the Level Zero
// device hands to zeModuleCreate) and checked with spirv-val from
// spirv-tools, for the universal environment and, unless the kernel adds
// atomically to 64-bit elements (capability Int64Atomics, an OpenCL
// extension), for OpenCL 1.2's: all must be valid. Where spirv-val is not
// installed the test is skipped, saying so.
#include <doctest/doctest.h>

#include <canopy/jit/c_source.hpp>

#include "battery/battery.hpp"
#include "common/skip.hpp"
#include "level_zero_support.hpp"

using namespace level_zero_test;

TEST_CASE("spirv: every kernel of the battery passes spirv-val") {
  if (!canopy::jit::spirv_available()) return canopy_test::skip(canopy::jit::spirv_unavailable_reason());
  if (!have_tool("spirv-val")) return canopy_test::skip("spirv-val is not installed (Debian package spirv-tools)");
  const auto kernels = battery::kernels();
  CHECK(kernels.size() == 57);
  int valid = 0;
  for (const auto& kernel : kernels) {
    const canopy::jit::SpirvKernel spirv = canopy::jit::spirv_of(*kernel);
    // A SPIR-V module starts with the magic number and its version.
    REQUIRE(spirv.binary.size() >= 20);
    std::uint32_t magic = 0;
    std::memcpy(&magic, spirv.binary.data(), sizeof magic);
    CHECK(magic == 0x07230203u);
    CHECK(spirv.version >= 0x00010000u);
    CHECK(spirv.version <= 0x00010200u);
    const bool int64_atomics = canopy::jit::features_of(*kernel).int64_atomics;
    const CommandResult verdict = validate_spirv(spirv.binary, kernel->name, !int64_atomics);
    INFO("kernel '", kernel->name, "': spirv-val says: ", verdict.output);
    CHECK(verdict.status == 0);
    valid += verdict.status == 0;
  }
  MESSAGE(valid << " of " << kernels.size() << " battery kernels are valid SPIR-V");
  CHECK(valid == static_cast<int>(kernels.size()));
}
