// The OpenCL streaming entry (jit::CSource::stream_entry): which kernels get
// one, what it looks like, and that launches through it compute exactly what
// the plain entries do, whatever the range's length and first point.
#include <doctest/doctest.h>

#include <cstdlib>
#include <string>

#include <canopy/canopy.hpp>
#include <canopy/jit/opencl_c.hpp>

#include "opencl_support.hpp"
#include "scoped_setting.hpp"

using namespace canopy;
using opencl_test::HostArg;
using opencl_test::HostArray;
using opencl_test::i64;

namespace {

jit::CSource streaming_source(const KernelBase& kernel) {
  jit::CSourceOptions options;
  options.streaming_entry = true;
  return jit::opencl_c_source(*opencl_test::optimized(kernel), options);
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("opencl streaming entry: element-wise float kernels get one, vectors of 64 bytes") {
  Kernel triad("triad",
               [](Out<double> a, In<double> b, In<double> c, Val<double> s) {
                 Idx i = index(0);
                 a[i] = b[i] + s * c[i];
               },
               {"a", "b", "c", "s"});
  const jit::CSource source = streaming_source(triad);
  CHECK(source.stream_entry == "triad_stream");
  CHECK(source.stream_width == 8);
  // The store calls a helper: clang's streaming store, a plain one elsewhere.
  CHECK(has(source.text,
            "stream_store_double8(vload8((vector - b_first / 8), b) + (s * vload8((vector - c_first / 8), c)), "
            "(__global double8*)a + (vector - a_first / 8));"));
  CHECK(has(source.text, "void stream_store_double8(double8 value, __global double8* target) {"));
  CHECK(has(source.text, "  __builtin_nontemporal_store(value, target);\n#else\n  *target = value;\n#endif"));

  // Without the option: no streaming entry.
  CHECK(jit::opencl_c_source(*opencl_test::optimized(triad)).stream_entry.empty());

  // f32: sixteen points a vector; an array also read is stored with a plain
  // vector store. (The tracer names the local v0.)
  Kernel update("update",
                [](InOut<float> a, In<float> b) {
                  Idx i = index(0);
                  Var<float> t = max(a[i], b[i]);
                  a[i] = sqrt(t) - 1.0f;
                },
                {"a", "b"});
  const jit::CSource f32 = streaming_source(update);
  CHECK(f32.stream_width == 16);
  CHECK(has(f32.text, "float16 v0 = fmax(vload16((vector - a_first / 16), a), vload16((vector - b_first / 16), b));"));
  CHECK(has(f32.text, "vstore16(sqrt(v0) - 1.0f, (vector - a_first / 16), a);"));
  CHECK_FALSE(has(f32.text, "stream_store_"));
}

TEST_CASE("opencl streaming entry: kernels it does not suit get none") {
  Kernel shifted("shifted", [](Out<double> a, In<double> b) { a[index(0)] = b[index(0) + 1]; });
  Kernel grid("grid", [](Out<double, 2> g) { g(index(0), index(1)) = 1.0; });
  Kernel guarded("guarded", [](Out<double> a, In<double> b) { If(b[index(0)] > 0.0, [&] { a[index(0)] = 1.0; }); });
  Kernel integers("integers", [](Out<std::int32_t> a, In<std::int32_t> b) { a[index(0)] = b[index(0)] + 1; });
  Kernel mixed("mixed", [](Out<float> a, In<double> b) { a[index(0)] = cast<float>(b[index(0)]); });
  Kernel summed("summed", [](In<double> a, Sum<double> total) { total += a[index(0)]; });
  Kernel exp_of("exp_of", [](Out<double> a, In<double> b) { a[index(0)] = exp(b[index(0)]); });
  for (const KernelBase* kernel :
       std::initializer_list<const KernelBase*>{&shifted, &grid, &guarded, &integers, &mixed, &summed, &exp_of}) {
    const jit::CSource source = streaming_source(*kernel);
    CHECK_MESSAGE(source.stream_entry.empty(), kernel->ir().name);
    CHECK(source.stream_width == 0);
  }
}

TEST_CASE("opencl streaming entry: launches give the plain entries' results for any range" *
          doctest::test_suite("opencl")) {
  // A device of its own that streams every launch.
  const backends::BackendDevices found = [] {
    canopy::testing::ScopedSetting streaming("CANOPY_STREAMING_STORES", "on");
    return backends::opencl::discover_opencl({"", "off"});
  }();
  if (found.devices.empty()) {
    CANOPY_TEST_SKIP(OpenCL, "no OpenCL device on this machine (" << found.absent_reason << ")");
  }
  auto& device = static_cast<backends::opencl::OpenCLDevice&>(*found.devices[0]);
  if (!device.traits().streaming_entry) {
    CANOPY_TEST_SKIP(Other, device.info().name << " takes no streaming entry (not a CPU device)");
  }
  Kernel scale("stream_scale", [](Out<double> a, InOut<double> b, In<double> c, Val<double> s) {
    Idx i = index(0);
    a[i] = s * c[i] + b[i];
    b[i] = b[i] * 0.5 - c[i];
  });
  const auto kernel = opencl_test::optimized(scale);
  for (auto [begin, end] : {std::pair<i64, i64>{0, 1},
                            {0, 8},
                            {3, 17},
                            {0, 4096 * 8},
                            {5, 4096 * 8 + 13},
                            {8, 3 * 4096 * 8},
                            {1, 100003}}) {
    std::vector<double> a(static_cast<std::size_t>(end), -1.0), b(a.size()), c(a.size());
    for (std::size_t k = 0; k < a.size(); ++k) {
      b[k] = static_cast<double>(k % 977) * 0.25 - 3.0;
      c[k] = static_cast<double>(k % 131) * 1.5 + 0.125;
    }
    const std::vector<HostArg> args{HostArray::of<double>(a), HostArray::of<double>(b), HostArray::of<double>(c),
                                    backends::scalar_arg(2.5)};
    const auto range = opencl_test::range_of({begin}, {end});
    const opencl_test::Results cpu = opencl_test::run_on_cpu(kernel, args, range);
    const opencl_test::Results got = opencl_test::run_on_opencl(device, kernel, args, range);
    opencl_test::check_arrays(cpu, got, {}, "range [" + std::to_string(begin) + ", " + std::to_string(end) + ")");
  }
}
