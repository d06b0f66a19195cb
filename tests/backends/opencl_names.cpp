// Names in the generated OpenCL C: the kernel's own names where OpenCL
// allows them, changed only where a name is a word of OpenCL C (a keyword,
// a type, a built-in function or macro), is reserved to the implementation,
// holds a character C does not take, or would collide with another name.
// Such a kernel still builds and computes what the CPU does.
#include <doctest/doctest.h>

#include <canopy/ir/parser.hpp>
#include <canopy/jit/opencl_c.hpp>

#include "opencl_support.hpp"

using namespace canopy;
using namespace opencl_test;

namespace {

// Every kind of troublesome name: OpenCL keywords and types (global, int,
// half, float4), built-ins (dot, get_global_id, convert_int, min), macros
// (M_PI, INFINITY), names C reserves (__x, _X), a dot in a name and the name
// it sanitises to (a.b, a_b), and the names the printer itself uses (i,
// i_end, points, a_n0).
constexpr const char* kAwkward =
    R"(kernel dot(out f64[1] global, in f64[1] $int, in f64[1] a.b, val f64 a_b, val i64 half, sum f64 $min, in f64[1] float4) dims 1 {
  var get_global_id: f64 = ($int[index(0)] * a_b)
  var convert_int: i64 = (index(0) % half)
  var M_PI: f64 = (a.b[index(0)] + f64(convert_int))
  var __x: f64 = (get_global_id - M_PI)
  var _X: f64 = (__x * float4[index(0)])
  var i: i64 = (index(0) + 1:i64)
  var i_end: f64 = (_X + f64(i))
  var points: f64 = (i_end * 0.5:f64)
  var global_n0: i64 = extent(global, 0)
  var INFINITY: f64 = f64(global_n0)
  global[index(0)] = (points + INFINITY)
  reduce $min <- points
})";

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("opencl names: words of OpenCL C and collisions are renamed, other names kept") {
  const auto source = jit::opencl_c_source(ir::parse(kAwkward));
  INFO(source.text);
  CHECK(source.entry == "dot_");  // dot is a built-in function
  CHECK(contains(source.text, "__kernel void dot_("));
  CHECK(contains(source.text, "__global double* global_, long global_n0_2,"));  // the local global_n0 came first
  CHECK(contains(source.text, "__global const double* int_, long int_n0,"));
  CHECK(contains(source.text, "__global const double* a_b, long a_b_n0,"));  // a.b
  CHECK(contains(source.text, "double a_b_2,"));                             // a_b, after a.b took a_b
  CHECK(contains(source.text, "long v_half,"));                              // half_ starts a family of built-ins
  CHECK(contains(source.text, "__global double* min_partials, __local double* min_scratch,"));
  CHECK(contains(source.text, "__global const double* float4_, long float4_n0,"));
  CHECK(contains(source.text, "double get_global_id_ = "));
  CHECK(contains(source.text, "long v_convert_int = "));  // convert_int_ is a built-in family too
  CHECK(contains(source.text, "double v_M_PI = "));
  CHECK(contains(source.text, "double v__x = "));
  CHECK(contains(source.text, "double v_X = "));
  CHECK(contains(source.text, "long i = "));                 // the kernel's own i
  CHECK(contains(source.text, "const long i_2 = i_begin"));  // the coordinate steps aside
  CHECK(contains(source.text, "double i_end = "));
  CHECK(contains(source.text, "long i_begin, long i_end_2)"));
  CHECK(contains(source.text, "double points = "));
  CHECK(contains(source.text, "const long points_2 = "));
  CHECK(contains(source.text, "long global_n0 = global_n0_2;"));
  CHECK(contains(source.text, "double INFINITY_ = "));
}

TEST_CASE("opencl names: a kernel full of awkward names builds and computes what the CPU does" *
          doctest::test_suite("opencl")) {
  OPENCL_DEVICE_OR_SKIP(device);
  const ir::Kernel kernel = ir::parse(kAwkward);
  battery::Random random(5151);
  const i64 n = 3001;
  compare(*device, KernelBase(kernel),
          {HostArray::filled<double>(n, 0), HostArray::of<double>(random.values<double>(n, -1, 1)),
           HostArray::of<double>(random.values<double>(n, -1, 1)), scalar(1.5), scalar<i64>(7), ReductionArg{},
           HostArray::of<double>(random.values<double>(n, -1, 1))},
          range_of({3}, {n}), {{}, {{0, 1e-5}}});  // a float sum, in another order: n·u·Σ|x| < 1e-5
}

TEST_CASE("opencl names: kernels without parameters and empty bodies" * doctest::test_suite("opencl")) {
  OPENCL_DEVICE_OR_SKIP(device);
  for (const char* text : {"kernel nothing() dims 1 {\n}", "kernel nothing3() dims 3 {\n}",
                           "kernel count_only(sum i32 n) dims 2 {\n  reduce n <- 1:i32\n}"}) {
    const ir::Kernel kernel = ir::parse(text);
    const auto program = device->compile(std::make_shared<const ir::Kernel>(kernel));
    std::vector<backends::KernelArg> args;
    for (const auto& param : kernel.params)
      if (param.is_reduction()) args.push_back(ReductionArg{});
    const Range range = kernel.dims == 1   ? range_of({0}, {100})
                        : kernel.dims == 2 ? range_of({0, 0}, {10, 33})
                                           : range_of({0, 0, 0}, {2, 3, 4});
    const auto results = device->run(*program, args, range);
    if (!kernel.params.empty()) CHECK(results.at(0).int_value == 330);
  }
}
