// SPIR-V from kernel IR (jit/spirv.hpp): the module's header, the kernel ABI
// as the spir64 LLVM IR shows it (argument order and address spaces, the
// index space, the reduction scaffolding, built-in names, atomics), what is
// legalized away before translation, entry names, errors, CANOPY_DUMP=spirv,
// and golden files of the LLVM IR given to the translator for three kernels
// (tests/jit/golden/*.spir64.ll; regenerate with CANOPY_UPDATE_GOLDEN=1 when
// a change is intended, and read the diff).
#include <doctest/doctest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include <canopy/ir/error.hpp>
#include <canopy/ir/parser.hpp>
#include <canopy/jit/spirv.hpp>

#include "common/skip.hpp"
#include "jit_test_support.hpp"
#include "scoped_setting.hpp"

using namespace canopy;
using namespace canopy::jit::testing;

namespace {

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

/// The LLVM IR spirv_of gave the translator for `text`.
std::string llvm_ir_of(const char* text) {
  jit::SpirvOptions options;
  options.keep_llvm_ir = true;
  return jit::spirv_of(ir::parse(text), options).llvm_ir;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

/// Compares `text` with golden file `name` under tests/jit/golden/ (or
/// rewrites it when CANOPY_UPDATE_GOLDEN=1).
void check_golden(const std::string& name, const std::string& text) {
  const auto path = std::filesystem::path(CANOPY_TEST_SOURCE_DIR) / "jit" / "golden" / name;
  if (const char* update = std::getenv("CANOPY_UPDATE_GOLDEN"); update && std::string(update) == "1") {
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary) << text;
    MESSAGE("rewrote " << path.string());
  }
  const std::string golden = read_file(path);
  INFO("golden file ", path.string(), "; generated:\n", text);
  CHECK(text == golden);
}

// Without SPIR-V, lowering says so with an error, and the test is skipped.
#define SPIRV_OR_SKIP()                                               \
  if (!jit::spirv_available()) {                                      \
    CHECK_THROWS_AS(jit::spirv_of(ir::parse(kTriad)), canopy::Error); \
    CANOPY_TEST_SKIP(Other, jit::spirv_unavailable_reason());         \
  }

}  // namespace

TEST_CASE("spirv: a module with the SPIR-V magic number, a version up to 1.2 and the kernel's entry") {
  SPIRV_OR_SKIP();
  const jit::SpirvKernel spirv = jit::spirv_of(ir::parse(kTriad));
  REQUIRE(spirv.binary.size() > 20);
  CHECK(spirv.binary.size() % 4 == 0);
  std::uint32_t header[2];
  std::memcpy(header, spirv.binary.data(), sizeof header);
  CHECK(header[0] == 0x07230203u);
  CHECK(header[1] == spirv.version);
  CHECK(spirv.version >= 0x00010000u);
  CHECK(spirv.version <= 0x00010200u);
  CHECK(spirv.entry == "triad");
  CHECK(spirv.llvm_ir.empty());  // only kept when asked for
  // The entry point's name is in the module as a nul-terminated string.
  CHECK(contains(spirv.binary, std::string("triad\0", 6)));
  // The same kernel gives the same module.
  CHECK(jit::spirv_of(ir::parse(kTriad)).binary == spirv.binary);
}

TEST_CASE("spirv: the kernel ABI of a point kernel (arguments, address spaces, index space)") {
  SPIRV_OR_SKIP();
  const std::string text = llvm_ir_of(kTriad);
  CHECK(contains(text, "target triple = \"spir64-unknown-unknown\""));
  // Arrays: a global pointer, the extents and the element the buffer starts
  // at; scalars by value; then begin and end per dimension.
  CHECK(contains(text,
                 "define spir_kernel void @triad(double addrspace(1)* %a, i64 %a.extent0, i64 %a.first, double "
                 "addrspace(1)* %b, i64 %b.extent0, i64 %b.first, double addrspace(1)* %c, i64 %c.extent0, i64 "
                 "%c.first, double %s, i64 %begin0, i64 %end0)"));
  CHECK(contains(text, "call spir_func i64 @_Z13get_global_idj(i32 0)"));
  CHECK(contains(text, "icmp slt i64 %i0, %end0"));
  CHECK(contains(text, "!kernel_arg_addr_space"));
  CHECK(contains(text,
                 "!{!\"a\", !\"a_n0\", !\"a_first\", !\"b\", !\"b_n0\", !\"b_first\", !\"c\", !\"c_n0\", "
                 "!\"c_first\", !\"s\", !\"begin0\", !\"end0\"}"));
  CHECK(contains(text,
                 "!{!\"\", !\"\", !\"\", !\"const\", !\"\", !\"\", !\"const\", !\"\", !\"\", !\"\", !\"\", "
                 "!\"\"}"));
  CHECK(contains(text, "!opencl.ocl.version = !{!0}"));
  CHECK(contains(text, "!0 = !{i32 1, i32 2}"));
  // No fused multiply-add: the product and the sum stay apart.
  CHECK(contains(text, "fmul double %s"));
  CHECK_FALSE(contains(text, "fmuladd"));

  // In two dimensions, device dimension 0 is the last index.
  const std::string jacobi = llvm_ir_of(kJacobi);
  CHECK(contains(jacobi, "i64 %begin0, i64 %end0, i64 %begin1, i64 %end1)"));
  const auto first_id = jacobi.find("@_Z13get_global_idj(i32 1)");
  const auto second_id = jacobi.find("@_Z13get_global_idj(i32 0)");
  REQUIRE(first_id != std::string::npos);
  REQUIRE(second_id != std::string::npos);
  CHECK(first_id < second_id);  // index(0) from device dimension 1, index(1) from 0
}

TEST_CASE("spirv: reductions walk the piece and combine per work-group in local memory") {
  SPIRV_OR_SKIP();
  const std::string text = llvm_ir_of(kSum);
  CHECK(contains(text,
                 "double addrspace(1)* %total.partials, double addrspace(3)* %total.scratch, i64 %begin0, i64 "
                 "%end0)"));
  CHECK(contains(text, "@_Z15get_global_sizej(i32 0)"));
  CHECK(contains(text, "@_Z12get_local_idj(i32 0)"));
  CHECK(contains(text, "@_Z14get_local_sizej(i32 0)"));
  CHECK(contains(text, "@_Z12get_group_idj(i32 0)"));
  CHECK(contains(text, "call spir_func void @_Z7barrierj(i32 1)"));
  CHECK(contains(text, "convergent"));
  CHECK(contains(text, "!{i32 1, i32 0, i32 0, i32 1, i32 3, i32 0, i32 0}"));  // partials global, scratch local
  // Only the sum may be reordered (reassoc), as on the CPU.
  CHECK(contains(text, "fadd reassoc double"));
}

TEST_CASE("spirv: math calls OpenCL built-ins, atomics are atomicrmw and compare-and-swap, no intrinsics remain") {
  SPIRV_OR_SKIP();
  const std::string math = llvm_ir_of(
      R"(kernel math(out f32[1] r, out f64[1] d, out i32[1] n, out i64[1] l, in f32[1] x, in f64[1] y, in i32[1] m) dims 1 {
  r[index(0)] = ((sqrt(x[index(0)]) + exp(x[index(0)])) + min(log(x[index(0)]), max(sin(x[index(0)]), cos(x[index(0)]))))
  d[index(0)] = ((pow(y[index(0)], y[index(0)]) + floor(y[index(0)])) + abs(y[index(0)]))
  n[index(0)] = (abs(m[index(0)]) + (min(m[index(0)], 3:i32) + i32(x[index(0)])))
  l[index(0)] = (max(i64(m[index(0)]), 5:i64) + i64(y[index(0)]))
})");
  for (const char* builtin : {"@_Z4sqrtf(", "@_Z3expf(", "@_Z3logf(", "@_Z3sinf(", "@_Z3cosf(", "@_Z4fminff(",
                              "@_Z4fmaxff(", "@_Z3powdd(", "@_Z5floord(", "@_Z4fabsd(", "@_Z3absi("}) {
    INFO(builtin);
    CHECK(contains(math, builtin));
  }
  // Legalized: no LLVM intrinsic is left for a SPIR-V consumer to guess at.
  CHECK_FALSE(contains(math, "@llvm."));
  // Saturating conversions: NaN to 0 and the limits by compares, never an out-of-range fptosi.
  CHECK(contains(math, "fcmp uno float"));
  CHECK(contains(math, "fptosi double"));

  const std::string atomics = llvm_ir_of(R"(kernel histogram(inout i32[1] h, inout f64[1] g, in i32[1] bin) dims 1 {
  atomic h[i64(bin[index(0)])] += 1:i32
  atomic g[i64(bin[index(0)])] += 0.5:f64
})");
  CHECK(contains(atomics, "atomicrmw add i32 addrspace(1)*"));
  CHECK(contains(atomics, "cmpxchg i64 addrspace(1)*"));
  CHECK_FALSE(contains(atomics, "atomicrmw fadd"));
}

TEST_CASE("spirv: entry names are the kernel's name unless it could clash") {
  SPIRV_OR_SKIP();
  ir::Kernel kernel = ir::parse(kTriad);
  CHECK(jit::spirv_entry_name(kernel) == "triad");
  kernel.name = "my kernel.v2";
  CHECK(jit::spirv_entry_name(kernel) == "k_my_kernel_v2");
  kernel.name = "2d";
  CHECK(jit::spirv_entry_name(kernel) == "k_2d");
  // Names the IR allows: a '.' is replaced, and a name that looks like a
  // mangled built-in or a reserved identifier gets a prefix.
  kernel.name = "stencil.v2";
  CHECK(jit::spirv_of(kernel).entry == "k_stencil_v2");
  kernel.name = "_Z4sqrtd";
  CHECK(jit::spirv_of(kernel).entry == "k__Z4sqrtd");
  kernel.name = "__kernel";
  CHECK(jit::spirv_of(kernel).entry == "k___kernel");
}

TEST_CASE("spirv: a kernel that does not verify is an error naming it") {
  SPIRV_OR_SKIP();
  ir::Kernel kernel = ir::parse(kTriad);
  kernel.params[0].access = ir::Access::In;  // a store into an `in` array
  try {
    jit::spirv_of(kernel);
    FAIL("spirv_of accepted a kernel that stores into an `in` array");
  } catch (const canopy::Error& error) {
    CHECK(contains(error.what(), "triad"));
  }
}

TEST_CASE("spirv: CANOPY_DUMP=spirv writes the module and the LLVM IR beside it") {
  SPIRV_OR_SKIP();
  TempDir dir;
  const jit::SpirvKernel spirv = [&] {
    canopy::testing::ScopedSetting dump("CANOPY_DUMP", "spirv"), dump_dir("CANOPY_DUMP_DIR", dir.str().c_str());
    return jit::spirv_of(ir::parse(kSum));
  }();
  CHECK(read_file(dir.path() / "sum.spirv") == spirv.binary);
  const std::string text = read_file(dir.path() / "sum.spirv.ll");
  CHECK(contains(text, "define spir_kernel void @sum("));
  CHECK(spirv.llvm_ir.empty());  // dumped, not kept
}

TEST_CASE("spirv: translations from several threads at once give the same modules") {
  SPIRV_OR_SKIP();
  const ir::Kernel triad = ir::parse(kTriad), sum = ir::parse(kSum);
  const std::string want_triad = jit::spirv_of(triad).binary, want_sum = jit::spirv_of(sum).binary;
  std::vector<int> same(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int k = 0; k < 5; ++k)
        same[static_cast<std::size_t>(t)] +=
            jit::spirv_of(t % 2 ? sum : triad).binary == (t % 2 ? want_sum : want_triad);
    });
  for (auto& thread : threads) thread.join();
  CHECK(same == std::vector<int>(4, 5));
}

TEST_CASE("spirv: golden LLVM IR for a triad, a 2-D stencil and a sum reduction") {
  SPIRV_OR_SKIP();
  check_golden("triad.spir64.ll", llvm_ir_of(kTriad));
  check_golden("jacobi_2d.spir64.ll", llvm_ir_of(kJacobi));
  check_golden("sum.spir64.ll", llvm_ir_of(kSum));
}
