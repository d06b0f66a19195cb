// CpuCompiler::CodeOptions::plain_adds: the variant a CPU launch runs when
// each chunk adds into a private copy of a histogram's bins. Its adds are
// plain reads, adds and stores, and must still count every point once where
// several points of one vector add to the same bin (the lanes add in turn).
// Checked against a serial loop, at SIMD widths 4 and 16 and in the scalar
// loop, for integers and doubles.
#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

#include <canopy/ir/kernel.hpp>
#include <canopy/jit/cpu_abi.hpp>
#include <canopy/jit/cpu_compiler.hpp>

#include "jit_test_support.hpp"
#include "scoped_setting.hpp"

using namespace canopy;
using namespace canopy::jit;
using namespace canopy::jit::testing;

namespace {

// bins[keys[i]] += weight(i): 1 for integer bins, 0.5 * (i % 4) for doubles.
ir::Kernel histogram(ir::ScalarType bin_type) {
  ir::Kernel k;
  k.name = bin_type == I64 ? "plain_adds_i64" : "plain_adds_f64";
  k.params = {ir::Param::array("bins", bin_type, 1, ir::Access::InOut),
              ir::Param::array("keys", I32, 1, ir::Access::In)};
  const ir::Expr key = ir::make_cast(I64, ir::make_load(I32, 1, {ir::make_index(0)}));
  const ir::Expr weight =
      bin_type == I64
          ? ir::make_int(I64, 1)
          : mul(ir::make_const(F64, 0.5),
                ir::make_cast(F64, ir::make_binary(ir::BinaryOp::Rem, ir::make_index(0), ir::make_int(I64, 4))));
  k.body = ir::make_block({ir::make_atomic_add(0, {key}, weight)});
  return k;
}

template <class T>
std::vector<T> run(const ir::Kernel& kernel, const char* simd, const char* lanes, const std::vector<std::int32_t>& keys,
                   std::int64_t bins) {
  canopy::testing::ScopedSetting mode("CANOPY_SIMD", simd), width("CANOPY_SIMD_WIDTH", lanes);
  static TempDir dir;
  CpuCompiler compiler(CpuCompiler::Options{dir.str()});
  CpuCompiler::CodeOptions code;
  code.plain_adds = {0};
  const CpuEntry entry = compiler.compile(kernel, code).entry;
  const bool compiled = entry != nullptr;
  REQUIRE(compiled);
  std::vector<T> counted(static_cast<std::size_t>(bins), T{0});
  const CpuArgLayout layout = cpu_arg_layout(kernel);
  std::vector<ArgSlot> block(static_cast<std::size_t>(layout.slot_count));
  block[std::size_t(layout.first_slot[0])].pointer = counted.data();
  block[std::size_t(layout.first_slot[0]) + 1].integer = bins;
  block[std::size_t(layout.first_slot[1])].pointer = const_cast<std::int32_t*>(keys.data());
  block[std::size_t(layout.first_slot[1]) + 1].integer = static_cast<std::int64_t>(keys.size());
  entry(0, static_cast<std::int64_t>(keys.size()), block.data());
  return counted;
}

}  // namespace

TEST_CASE("plain adds: a histogram whose points share bins within one vector counts each point once") {
  constexpr std::int64_t n = 10007, bins = 5;
  std::vector<std::int32_t> keys(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) keys[std::size_t(i)] = static_cast<std::int32_t>((i / 3) % bins);
  std::vector<std::int64_t> want_counts(static_cast<std::size_t>(bins), 0);
  std::vector<double> want_weights(static_cast<std::size_t>(bins), 0.0);
  for (std::int64_t i = 0; i < n; ++i) {
    ++want_counts[std::size_t(keys[std::size_t(i)])];
    want_weights[std::size_t(keys[std::size_t(i)])] += 0.5 * double(i % 4);
  }
  for (const auto& [simd, lanes] : {std::pair{"on", "4"}, std::pair{"on", "16"}, std::pair{"off", "4"}}) {
    CAPTURE(simd);
    CAPTURE(lanes);
    CHECK(run<std::int64_t>(histogram(I64), simd, lanes, keys, bins) == want_counts);
    CHECK(run<double>(histogram(F64), simd, lanes, keys, bins) == want_weights);
  }
}
