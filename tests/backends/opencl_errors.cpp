// What the OpenCL device says when asked the impossible: a kernel that does
// not build (the error carries the device, the build log and the numbered
// source), kernels needing fp64 or 64-bit atomics on a device without them,
// allocations beyond what the device holds, copies and fills past a buffer's
// end, programs and arguments that do not fit, negative ranges. Every one is
// a canopy::Error naming the thing at fault, and the device keeps working.
#include <doctest/doctest.h>

#include <string>

#include <canopy/ir/parser.hpp>
#include <canopy/jit/opencl_c.hpp>

#include "opencl_support.hpp"

using namespace canopy;
using namespace opencl_test;

namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// The message of the canopy::Error `action` throws ("" when it throws none).
template <class F>
std::string error_of(F&& action) {
  try {
    action();
  } catch (const Error& error) {
    return error.what();
  }
  return "";
}

Kernel<void(Out<double>, In<double>)> copy_kernel() {
  return Kernel("copy_values", [](Out<double> a, In<double> b) { a[index(0)] = b[index(0)]; }, {"a", "b"});
}

}  // namespace

TEST_CASE("opencl errors: a kernel that does not build shows the device, the build log and the numbered source" *
          doctest::test_suite("opencl")) {
  OPENCL_DEVICE_OR_SKIP(device);
  const auto kernel = optimized(copy_kernel());
  auto source = jit::opencl_c_source(*kernel, device->code_options());
  // A statement no OpenCL compiler takes, on a line of its own.
  const auto body = source.text.find("a[i - a_first] = b[i - b_first];");
  REQUIRE(body != std::string::npos);
  source.text.insert(body, "this_is_not_opencl(a, b);\n  ");
  const std::string message = error_of([&] { device->compile_source(kernel, source); });
  INFO(message);
  CHECK(contains(message, device->info().name));
  CHECK(contains(message, device->info().id));
  CHECK(contains(message, "could not build kernel 'copy_values'"));
  CHECK(contains(message, "Build log:"));
  CHECK(contains(message, "this_is_not_opencl"));              // the log names the culprit
  CHECK(contains(message, "   1 | // Kernel 'copy_values'"));  // numbered source
  CHECK(contains(message, " | this_is_not_opencl(a, b);") == false);
  CHECK(contains(message, " |   this_is_not_opencl(a, b);"));
  // The device goes on building and running the real kernel.
  const auto got = run_on_opencl(*device, kernel,
                                 {HostArray::filled<double>(10, 0), HostArray::filled<double>(10, 2.5)}, range_of(10));
  CHECK(values_of<double>(got.arrays[0])[9] == 2.5);
}

TEST_CASE("opencl errors: fp64 and 64-bit atomics on a device without them" * doctest::test_suite("opencl")) {
  OPENCL_DEVICE_OR_SKIP(device);
  backends::DeviceInfo info = device->info();
  backends::opencl::OpenCLTraits traits = device->traits();
  info.fp64 = false;
  traits.int64_atomics = false;
  const auto doubles =
      ir::parse("kernel twice(out f64[1] a, in f64[1] b) dims 1 {\n  a[index(0)] = (b[index(0)] * 2:f64)\n}");
  const auto floats =
      ir::parse("kernel twice32(out f32[1] a, in f32[1] b) dims 1 {\n  a[index(0)] = (b[index(0)] * 2:f32)\n}");
  const auto counts =
      ir::parse("kernel count(inout i64[1] h, in i32[1] k) dims 1 {\n  atomic h[i64(k[index(0)])] += 1:i64\n}");
  const auto counts32 =
      ir::parse("kernel count32(inout i32[1] h, in i32[1] k) dims 1 {\n  atomic h[i64(k[index(0)])] += 1:i32\n}");
  const std::string no_fp64 = error_of([&] { backends::opencl::check_device_supports(doubles, info, traits); });
  CHECK(contains(no_fp64, "kernel 'twice' uses f64"));
  CHECK(contains(no_fp64, "cl_khr_fp64"));
  CHECK(contains(no_fp64, info.name));
  CHECK(error_of([&] { backends::opencl::check_device_supports(floats, info, traits); }).empty());
  const std::string no_atomics = error_of([&] { backends::opencl::check_device_supports(counts, info, traits); });
  CHECK(contains(no_atomics, "kernel 'count'"));
  CHECK(contains(no_atomics, "cl_khr_int64_base_atomics"));
  CHECK(error_of([&] { backends::opencl::check_device_supports(counts32, info, traits); }).empty());
  // The real device checks the same way in compile().
  if (!device->info().fp64)
    CHECK(contains(error_of([&] { device->compile(std::make_shared<const ir::Kernel>(doubles)); }), "cl_khr_fp64"));
  else
    CHECK(device->compile(std::make_shared<const ir::Kernel>(doubles)) != nullptr);
}

TEST_CASE("opencl errors: kernels that do not verify are refused before any code is generated" *
          doctest::test_suite("opencl")) {
  OPENCL_DEVICE_OR_SKIP(device);
  ir::Kernel broken = ir::parse("kernel fine(out f64[1] a) dims 1 {\n  a[index(0)] = 1:f64\n}");
  broken.dims = 4;
  CHECK(contains(error_of([&] { device->compile(std::make_shared<const ir::Kernel>(broken)); }), "dims is 4"));
  CHECK(contains(error_of([&] { device->compile(nullptr); }), "no kernel"));
  CHECK(contains(error_of([&] { jit::opencl_c_source(broken); }), "dims is 4"));
}

TEST_CASE("opencl errors: allocations the device cannot hold name the device and the size" *
          doctest::test_suite("opencl")) {
  OPENCL_DEVICE_OR_SKIP(device);
  const auto too_big = static_cast<std::size_t>(device->info().max_allocation) + 1;
  const std::string message = error_of([&] { device->allocate(too_big); });
  CHECK(contains(message, device->info().name));
  CHECK(contains(message, std::to_string(too_big) + " bytes"));
  CHECK(contains(message, "largest buffer"));
  // An empty buffer is fine, and so is freeing nothing.
  const auto empty = device->allocate(0);
  CHECK(empty.bytes == 0);
  device->free(empty);
  device->free(backends::Buffer{});
}

TEST_CASE("opencl errors: copies and fills past a buffer's end" * doctest::test_suite("opencl")) {
  OPENCL_DEVICE_OR_SKIP(device);
  auto buffer = device->allocate(64);
  std::vector<unsigned char> host(128, 7);
  CHECK(contains(error_of([&] { device->copy_in(buffer, 32, host.data(), 40); }), "reaches byte 72"));
  CHECK(contains(error_of([&] { device->copy_out(buffer, 65, host.data(), 0); }), "reaches byte 65"));
  CHECK(contains(error_of([&] { device->copy_in(buffer, 0, nullptr, 8); }), "no host memory"));
  CHECK(contains(error_of([&] { device->copy_out(backends::Buffer{}, 0, host.data(), 8); }), "no buffer"));
  CHECK(contains(error_of([&] { device->fill(buffer, 6, 3, scalar(1.0)); }), "reaches element 6 + 3"));
  CHECK(contains(error_of([&] { device->fill(buffer, ~std::size_t{0}, 2, scalar(1.0)); }), "of a buffer of 8"));
  // Within bounds all of it works: fill of each type, partial copies.
  device->fill(buffer, 0, 8, scalar(2.5));
  device->fill(buffer, 2, 3, scalar<i32>(-1));
  device->fill(buffer, 0, 1, scalar(true));
  device->copy_out(buffer, 0, host.data(), 64);
  double tail;
  std::memcpy(&tail, host.data() + 56, sizeof tail);
  CHECK(tail == 2.5);
  CHECK(host[0] == 1);
  CHECK(host[8] == 0xff);  // i32 -1 from element 2 (byte 8) on
  device->free(buffer);
}

TEST_CASE("opencl errors: runs with arguments, programs or ranges that do not fit" * doctest::test_suite("opencl")) {
  OPENCL_DEVICE_OR_SKIP(device);
  const auto kernel = optimized(copy_kernel());
  const auto program = device->compile(kernel);
  auto a = device->allocate(80), b = device->allocate(80);
  const std::vector<backends::KernelArg> args{ArrayArg{a.handle, {10, 1, 1}}, ArrayArg{b.handle, {10, 1, 1}}};
  CHECK(contains(error_of([&] { device->run(*program, {args[0]}, range_of(10)); }), "takes 2 arguments, 1 were given"));
  CHECK(contains(error_of([&] {
                   device->run(*program, {args[0], scalar(1.0)}, range_of(10));
                 }),
                 "does not fit its array parameter 'b'"));
  CHECK(contains(error_of([&] {
                   device->run(*program, args, range_of({0, 0}, {10, 1}));
                 }),
                 "has 1 index dimensions, the range 2"));
  CHECK(contains(error_of([&] { device->run(*program, args, range_of({-1}, {10})); }), "starting at -1"));
  // A program of another device (the CPU's) is refused.
  backends::cpu::CpuDevice cpu("cpu-other", {});
  const auto cpu_program = cpu.compile(kernel);
  CHECK(contains(error_of([&] { device->run(*cpu_program, args, range_of(10)); }), "another device"));
  // Empty ranges run nothing.
  CHECK(device->run(*program, args, range_of({5}, {5})).empty());
  device->free(a);
  device->free(b);
}
