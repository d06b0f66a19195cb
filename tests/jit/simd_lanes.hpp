// Shared by the tests of the CPU's SIMD lowering: a kernel compiled with one
// point per lane at a given width (CANOPY_SIMD=on, CANOPY_SIMD_WIDTH), by one
// compiler per test program on its own cache directory.
#pragma once

#include <doctest/doctest.h>

#include <string>
#include <utility>

#include <canopy/ir/kernel.hpp>
#include <canopy/ir/settings.hpp>
#include <canopy/jit/cpu_compiler.hpp>

#include "jit_test_support.hpp"
#include "scoped_setting.hpp"

namespace canopy::jit::testing {

inline CpuEntry compile_with_lanes(const ir::Kernel& kernel, const char* lanes) {
  canopy::testing::ScopedSetting simd("CANOPY_SIMD", "on"), width("CANOPY_SIMD_WIDTH", lanes);
  // A width the setting refuses would leave the default in place, unnoticed.
  REQUIRE(canopy::settings().simd_width == std::stoi(lanes));
  static TempDir dir;
  static CpuCompiler compiler(CpuCompiler::Options{dir.str()});
  const CpuEntry entry = compiler.compile(kernel).entry;
  const bool compiled = entry != nullptr;
  REQUIRE(compiled);
  return entry;
}

}  // namespace canopy::jit::testing
