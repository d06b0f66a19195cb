// The CUDA backend end to end without a GPU: a stand-in driver
// (tests/backends/mock/libcuda_mock.c, built here with the system's C
// compiler and loaded through CANOPY_LIBCUDA's option) keeps device memory
// in host memory and runs three known kernels on the host the way their
// generated CUDA C++ runs on a GPU, while NVRTC compiles for real. Checked:
// discovery and traits, memory (allocations, copies at offsets, fills of
// every element size), compiling (cubin or PTX by compute capability, the
// same program twice, the disk cache on a second device, CANOPY_DUMP=cuda,
// a module the driver refuses), and run(): the arguments, begins and grids
// of point kernels in 1-D and 2-D and of a reduction, checked by their
// results. What this cannot show is how a real GPU runs the code.
#include <doctest/doctest.h>

#include <dlfcn.h>

#include <cmath>
#include <cstring>
#include <numeric>

#include <canopy/ir/parser.hpp>
#include <canopy/jit/cuda_c.hpp>

#include "cuda_support.hpp"

using namespace canopy;
using namespace cuda_test;
using backends::ArrayArg;
using backends::Buffer;
using backends::KernelArg;
using backends::Range;
using backends::ReductionArg;
using backends::cuda::CudaDevice;
using backends::cuda::CudaProgram;
using backends::cuda::ProgramOrigin;

namespace {

constexpr const char* kTriad = R"(kernel triad(out f64[1] a, in f64[1] b, in f64[1] c, val f64 s) dims 1 {
  a[index(0)] = (b[index(0)] + (s * c[index(0)]))
})";

constexpr const char* kIndex2d = R"(kernel index_2d(out i64[2] values) dims 2 {
  values[index(0), index(1)] = ((index(0) * 1000:i64) + index(1))
})";

constexpr const char* kSum = R"(kernel $sum(in f64[1] x, sum f64 total) dims 1 {
  reduce total <- x[index(0)]
})";

// The mock driver, built once per process; empty with a reason when it cannot be.
struct MockDriver {
  std::string path, problem;
  void* handle = nullptr;

  template <class F>
  F* function(const char* name) const {
    return reinterpret_cast<F*>(dlsym(handle, name));
  }
  int retained() const { return function<int()>("mock_retained")(); }
  int current_depth() const { return function<int()>("mock_current_depth")(); }
  long live_allocations() const { return function<long()>("mock_live_allocations")(); }
  int modules_loaded() const { return function<int()>("mock_modules_loaded")(); }
  int launch_count() const { return function<int()>("mock_launch_count")(); }
  void clear_launches() const { function<void()>("mock_clear_launches")(); }
  /// Launch `index` as "name gx,gy,gz bx,by,bz".
  std::string launch(int index) const {
    unsigned grid[3], block[3];
    const char* name = function<const char*(int, unsigned*, unsigned*)>("mock_launch")(index, grid, block);
    if (!name) return "";
    return std::string(name) + " " + std::to_string(grid[0]) + "," + std::to_string(grid[1]) + "," +
           std::to_string(grid[2]) + " " + std::to_string(block[0]) + "," + std::to_string(block[1]) + "," +
           std::to_string(block[2]);
  }
};

const MockDriver& mock() {
  static const MockDriver driver = [] {
    MockDriver built;
    std::string compiler;
    if (const char* cc = std::getenv("CC"); cc && *cc) compiler = cc;
    if (compiler.empty() && run_command("command -v cc").status == 0) compiler = "cc";
    if (compiler.empty()) {
      built.problem = "no C compiler (cc or $CC) to build the mock driver";
      return built;
    }
    static ScratchDirectory directory;  // lives until the process ends
    const auto source = std::filesystem::path(__FILE__).parent_path() / "mock" / "libcuda_mock.c";
    built.path = (directory.path() / "libcuda_mock.so").string();
    const auto result = run_command(compiler + " -shared -fPIC -O1 -o '" + built.path + "' '" + source.string() + "'");
    if (result.status != 0) {
      built.problem = "the mock driver did not build: " + result.output;
      return built;
    }
    built.handle = dlopen(built.path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!built.handle) built.problem = std::string("the mock driver did not load: ") + dlerror();
    return built;
  }();
  return driver;
}

/// Declares `name` as the mock driver, or ends the test saying why there is none.
#define MOCK_DRIVER_OR_SKIP(name)                                                            \
  const MockDriver& name = mock();                                                           \
  if (!name.handle) {                                                                        \
    MESSAGE("skipped: " << name.problem);                                                    \
    return;                                                                                  \
  }                                                                                          \
  if (!cuda_test::nvrtc().api) {                                                             \
    MESSAGE("skipped: NVRTC is not available (" << cuda_test::nvrtc().absent_reason << ")"); \
    return;                                                                                  \
  }

// The mock's devices, with `cache` as the disk cache ("off": none).
backends::BackendDevices mock_devices(const MockDriver& driver, const std::string& cache = "off") {
  return backends::cuda::discover_cuda({driver.path, "", cache});
}

CudaDevice& cuda_device(const backends::BackendDevices& found, std::size_t index = 0) {
  REQUIRE_MESSAGE(found.devices.size() > index, found.absent_reason);
  return static_cast<CudaDevice&>(*found.devices[index]);
}

std::shared_ptr<const ir::Kernel> kernel_of(const char* text) {
  return std::make_shared<const ir::Kernel>(ir::parse(text));
}

bool nvrtc_compiles_for(int architecture) {
  const auto& supported = nvrtc().api->architectures;
  return std::find(supported.begin(), supported.end(), architecture) != supported.end();
}

ArrayArg array(Buffer buffer, std::int64_t n0, std::int64_t n1 = 1) { return ArrayArg{buffer.handle, {n0, n1, 1}}; }

Range range_1d(std::int64_t begin, std::int64_t end) {
  Range range;
  range.dims = 1;
  range.begin = {begin, 0, 0};
  range.end = {end, 1, 1};
  return range;
}

}  // namespace

TEST_CASE("cuda mock driver: discovery reads each device's traits, and gives its context back") {
  MOCK_DRIVER_OR_SKIP(driver);
  ScopedEnvironment devices("MOCK_CUDA_DEVICES", "2"), capability("MOCK_CUDA_CC", "90");
  {
    const auto found = mock_devices(driver);
    CHECK(found.absent_reason.empty());
    REQUIRE(found.devices.size() == 2);
    for (int index = 0; index < 2; ++index) {
      const auto& device = cuda_device(found, static_cast<std::size_t>(index));
      const auto& info = device.info();
      const auto& traits = device.traits();
      const std::string nvrtc_version = nvrtc().api->version();
      CHECK(info.id == "cuda:" + std::to_string(index));
      CHECK(info.backend == "cuda");
      CHECK(info.name == "Mock GPU " + std::to_string(index));
      CHECK(info.vendor == "NVIDIA Corporation");
      CHECK(info.pci_bus_id == (index == 0 ? "0000:3b:00.0" : "0000:3c:00.0"));  // lower case, like hwloc's
      CHECK(info.compute_units == 4);
      CHECK(info.global_memory == std::int64_t{1} << 30);
      CHECK(info.max_allocation == info.global_memory);
      CHECK(info.max_work_group == 1024);
      CHECK(info.fp64);
      CHECK_FALSE(info.host_memory);
      CHECK_FALSE(info.on_host_cores);
      CHECK(info.driver_version == "CUDA driver 12.4, NVRTC " + nvrtc_version + ", compute capability 9.0");
      CHECK(info.fingerprint == "cuda|" + info.name + "|sm_90|driver 12040|nvrtc " + nvrtc_version);
      CHECK(traits.capability() == 90);
      CHECK(traits.driver_version == 12040);
      CHECK(traits.architecture == (nvrtc_compiles_for(90) ? "sm_90" : traits.architecture));
      CHECK(traits.warp_size == 32);
      CHECK(traits.max_block == std::array<int, 3>{1024, 1024, 64});
      CHECK(traits.max_grid == std::array<std::int64_t, 3>{2147483647, 65535, 65535});
      CHECK(traits.shared_memory_per_block == 49152);
      CHECK(traits.block_size == 256);
      CHECK(traits.reduction_block_size == jit::kCudaReductionBlock);
      CHECK(traits.reduction_blocks == 16);
    }
    CHECK(driver.retained() == 2);
    CHECK(driver.current_depth() == 0);
  }
  CHECK(driver.retained() == 0);  // each device released its primary context
}

TEST_CASE("cuda mock driver: a device NVRTC has no cubin for gets PTX; one older than NVRTC is left out") {
  MOCK_DRIVER_OR_SKIP(driver);
  {
    // Compute capability 8.1 exists nowhere: the newest older PTX is compute_80.
    ScopedEnvironment capability("MOCK_CUDA_CC", "81");
    const auto found = mock_devices(driver);
    auto& device = cuda_device(found);
    CHECK(device.traits().architecture == "compute_80");
    const auto program = std::static_pointer_cast<CudaProgram>(device.compile(kernel_of(kTriad)));
    CHECK_FALSE(program->is_cubin());
    CHECK(program->origin() == ProgramOrigin::Built);
  }
  {
    ScopedEnvironment capability("MOCK_CUDA_CC", "30");
    const auto found = mock_devices(driver);
    CHECK(found.devices.empty());
    INFO(found.absent_reason);
    CHECK(contains(found.absent_reason,
                   "CUDA device 'Mock GPU 0' (cuda:0) has compute capability 3.0, older than "
                   "every architecture NVRTC"));
  }
  CHECK(driver.retained() == 0);
}

TEST_CASE("cuda mock driver: allocations, copies at offsets and fills of every element size") {
  MOCK_DRIVER_OR_SKIP(driver);
  const long before = driver.live_allocations();
  {
    const auto found = mock_devices(driver);
    auto& device = cuda_device(found);
    Buffer buffer = device.allocate(1000 * sizeof(double));
    CHECK(buffer.bytes == 8000);
    std::vector<double> values(1000);
    std::iota(values.begin(), values.end(), 0.5);
    device.copy_in(buffer, 0, values.data(), 8000);
    const double patch[3] = {-1, -2, -3};
    device.copy_in(buffer, 8 * 10, patch, sizeof patch);
    std::vector<double> back(1000);
    device.copy_out(buffer, 0, back.data(), 8000);
    values[10] = -1, values[11] = -2, values[12] = -3;
    CHECK(back == values);
    double two[2];
    device.copy_out(buffer, 8 * 11, two, sizeof two);
    CHECK((two[0] == -2 && two[1] == -3));

    // f64 1.5 has different 32-bit halves (cuMemsetD2D32 twice), -0.0 too; i64 -1 has equal ones.
    device.fill(buffer, 100, 50, backends::scalar_arg(1.5));
    device.fill(buffer, 200, 1, backends::scalar_arg(-0.0));
    device.copy_out(buffer, 0, back.data(), 8000);
    for (int k = 100; k < 150; ++k) values[static_cast<std::size_t>(k)] = 1.5;
    values[200] = -0.0;
    CHECK(back == values);
    CHECK(std::signbit(back[200]));
    device.fill(buffer, 0, 1000, backends::scalar_arg(std::int64_t{-1}));
    std::vector<std::int64_t> longs(1000);
    device.copy_out(buffer, 0, longs.data(), 8000);
    CHECK(std::all_of(longs.begin(), longs.end(), [](std::int64_t v) { return v == -1; }));
    device.fill(buffer, 3, 2, backends::scalar_arg(std::int64_t{0x100000002}));
    device.copy_out(buffer, 0, longs.data(), 8 * 6);
    CHECK(longs[2] == -1);
    CHECK((longs[3] == 0x100000002 && longs[4] == 0x100000002));
    CHECK(longs[5] == -1);
    device.free(buffer);

    Buffer small = device.allocate(40);
    device.fill(small, 0, 10, backends::scalar_arg(std::int32_t{7}));
    device.fill(small, 4, 3, backends::scalar_arg(2.5f));
    float floats[10];
    device.copy_out(small, 0, floats, sizeof floats);
    std::int32_t ints[10];
    std::memcpy(ints, floats, sizeof ints);
    CHECK((ints[0] == 7 && ints[3] == 7 && ints[7] == 7 && ints[9] == 7));
    CHECK((floats[4] == 2.5f && floats[6] == 2.5f));
    device.fill(small, 0, 40, backends::scalar_arg(true));  // bool elements are one byte
    device.fill(small, 38, 2, backends::scalar_arg(false));
    unsigned char bytes[40];
    device.copy_out(small, 0, bytes, sizeof bytes);
    CHECK((bytes[0] == 1 && bytes[37] == 1 && bytes[38] == 0 && bytes[39] == 0));

    // Out of bounds and too large: errors naming the device and the sizes.
    CHECK(contains(error_of([&] { device.copy_in(small, 32, values.data(), 16); }),
                   "copy_in on CUDA device 'Mock GPU 0' (cuda:0) reaches byte 48 of a buffer of 40 bytes"));
    CHECK(contains(error_of([&] { device.fill(small, 9, 2, backends::scalar_arg(std::int32_t{1})); }),
                   "fill on CUDA device 'Mock GPU 0' (cuda:0) reaches element 9 + 2 of a buffer of 10 elements"));
    CHECK(contains(error_of([&] { device.allocate(std::size_t{3} << 30); }),
                   "CUDA device 'Mock GPU 0' (cuda:0) cannot allocate 3221225472 bytes"));
    device.free(small);
    const Buffer empty = device.allocate(0);  // one byte nobody reads
    CHECK(empty.handle != nullptr);
    device.free(empty);
    CHECK(driver.current_depth() == 0);
  }
  CHECK(driver.live_allocations() == before);
}

TEST_CASE("cuda mock driver: compiling, the same program twice, the disk cache on a second device, CANOPY_DUMP") {
  MOCK_DRIVER_OR_SKIP(driver);
  ScratchDirectory cache, dumps;
  ScopedEnvironment dump("CANOPY_DUMP", "cuda"), dump_dir("CANOPY_DUMP_DIR", dumps.path().c_str());
  const auto kernel = kernel_of(kTriad);
  const int loaded = driver.modules_loaded();
  std::string key;
  {
    const auto found = mock_devices(driver, cache.path().string());
    auto& device = cuda_device(found);
    REQUIRE(device.disk_cache() != nullptr);
    const auto program = std::static_pointer_cast<CudaProgram>(device.compile(kernel));
    CHECK(program->origin() == ProgramOrigin::Built);
    CHECK(program->is_cubin() == nvrtc_compiles_for(90));
    CHECK(program->source().entry == "triad");
    CHECK(program->source().edge_entry == "triad_edges");
    CHECK(program->max_threads_per_block() == 1024);
    CHECK(program->cache_key().size() == 32);
    key = program->cache_key();
    CHECK(device.compile(kernel) == program);  // the same kernel text: the same program
    CHECK(driver.modules_loaded() == loaded + 1);
    CHECK(device.disk_cache()->counters().misses == 1);
    // CANOPY_DUMP=cuda wrote the source.
    std::ifstream written(dumps.path() / "triad.cuda");
    const std::string text((std::istreambuf_iterator<char>(written)), std::istreambuf_iterator<char>());
    CHECK(text == program->source().text);
  }
  {
    // Another process (here: another discovery) finds the image on disk and compiles nothing.
    const auto found = mock_devices(driver, cache.path().string());
    auto& device = cuda_device(found);
    const auto program = std::static_pointer_cast<CudaProgram>(device.compile(kernel));
    CHECK(program->origin() == ProgramOrigin::Disk);
    CHECK(program->cache_key() == key);
    CHECK(device.disk_cache()->counters().hits == 1);
  }
  CHECK(driver.retained() == 0);
  CHECK(driver.current_depth() == 0);
}

TEST_CASE("cuda mock driver: a module the driver refuses is an error with the JIT log and the numbered source") {
  MOCK_DRIVER_OR_SKIP(driver);
  const auto found = mock_devices(driver);
  auto& device = cuda_device(found);
  const auto kernel = kernel_of(kTriad);
  auto source = jit::cuda_c_source(*kernel);
  // The mock refuses an image that holds this name: a kernel's name is in its cubin and its PTX.
  source.text += "extern \"C\" __global__ void MOCK_REJECT() {}\n";
  const std::string message = error_of([&] { device.compile_source(kernel, source); });
  INFO(message);
  CHECK(contains(message, "CUDA device 'Mock GPU 0' (cuda:0) could not load kernel 'triad' compiled for "));
  CHECK(contains(message, "(cuModuleLoadDataEx: CUDA_ERROR_INVALID_PTX (218): a PTX JIT compilation failed (mock))"));
  CHECK(contains(message, "JIT log:\nmock: rejected the "));
  CHECK(contains(message, "   1 | // Kernel 'triad' in CUDA C++"));
  CHECK(contains(message, " | extern \"C\" __global__ void MOCK_REJECT() {}"));
  // The device goes on compiling the real kernel.
  CHECK(device.compile(kernel) != nullptr);
  CHECK(driver.current_depth() == 0);
}

TEST_CASE("cuda mock driver: a 1-D piece runs whole blocks unchecked and its end checked, from its begin") {
  MOCK_DRIVER_OR_SKIP(driver);
  const auto found = mock_devices(driver);
  auto& device = cuda_device(found);
  const auto program = device.compile(kernel_of(kTriad));
  const std::int64_t n = 1200;
  std::vector<double> b(n), c(n);
  for (std::size_t k = 0; k < b.size(); ++k) {
    b[k] = static_cast<double>(k);
    c[k] = 0.25 * static_cast<double>(k % 7);
  }
  Buffer buffers[3] = {device.allocate(8 * n), device.allocate(8 * n), device.allocate(8 * n)};
  device.fill(buffers[0], 0, n, backends::scalar_arg(-1.0));
  device.copy_in(buffers[1], 0, b.data(), 8 * n);
  device.copy_in(buffers[2], 0, c.data(), 8 * n);
  const std::vector<KernelArg> args{array(buffers[0], n), array(buffers[1], n), array(buffers[2], n),
                                    backends::scalar_arg(0.4)};
  auto results_after = [&](std::int64_t begin, std::int64_t end) {
    driver.clear_launches();
    CHECK(device.run(*program, args, range_1d(begin, end)).empty());
    std::vector<double> a(n);
    device.copy_out(buffers[0], 0, a.data(), 8 * n);
    return a;
  };
  auto a = results_after(5, 1005);  // 3 whole blocks of 256 from 5, then 232 points
  CHECK(driver.launch_count() == 2);
  CHECK(driver.launch(0) == "triad 3,1,1 256,1,1");
  CHECK(driver.launch(1) == "triad_edges 1,1,1 256,1,1");
  int wrong = 0;
  for (std::int64_t k = 0; k < n; ++k) {
    const auto at = static_cast<std::size_t>(k);
    const double want = k >= 5 && k < 1005 ? b[at] + 0.4 * c[at] : -1.0;
    wrong += a[at] != want;
  }
  CHECK(wrong == 0);
  a = results_after(1100, 1103);  // shorter than a block: the checked entry only
  CHECK(driver.launch_count() == 1);
  CHECK(driver.launch(0) == "triad_edges 1,1,1 256,1,1");
  CHECK(
      (a[1099] == -1.0 && a[1100] == b[1100] + 0.4 * c[1100] && a[1102] == b[1102] + 0.4 * c[1102] && a[1103] == -1.0));
  a = results_after(0, 0);  // empty: nothing runs
  CHECK(driver.launch_count() == 0);
  // Misuse: a negative begin, wrong arguments.
  CHECK(contains(error_of([&] { device.run(*program, args, range_1d(-1, 10)); }),
                 "runs index ranges from 0 up; kernel 'triad' was given a range starting at -1"));
  CHECK(contains(error_of([&] { device.run(*program, {args[0]}, range_1d(0, 10)); }),
                 "kernel 'triad' takes 4 arguments, 1 were given"));
  for (auto& buffer : buffers) device.free(buffer);
  CHECK(driver.current_depth() == 0);
}

TEST_CASE("cuda mock driver: a 2-D piece maps the last index to x and runs each of its points once") {
  MOCK_DRIVER_OR_SKIP(driver);
  const auto found = mock_devices(driver);
  auto& device = cuda_device(found);
  const auto program = device.compile(kernel_of(kIndex2d));
  const std::int64_t rows = 80, cols = 50;
  Buffer buffer = device.allocate(8 * rows * cols);
  device.fill(buffer, 0, rows * cols, backends::scalar_arg(std::int64_t{-7}));
  Range range;
  range.dims = 2;
  range.begin = {2, 1, 0};
  range.end = {70, 45, 1};
  driver.clear_launches();
  device.run(*program, {array(buffer, rows, cols)}, range);
  std::vector<std::int64_t> values(rows * cols);
  device.copy_out(buffer, 0, values.data(), 8 * rows * cols);
  int wrong = 0;
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < cols; ++j) {
      const bool inside = i >= 2 && i < 70 && j >= 1 && j < 45;
      wrong += values[static_cast<std::size_t>(i * cols + j)] != (inside ? i * 1000 + j : -7);
    }
  CHECK(wrong == 0);
  // Blocks of 32 along x (44 columns) by 8 along y (68 rows): one whole-block
  // launch, then the ragged ends in x and in y.
  CHECK(driver.launch_count() == 3);
  CHECK(driver.launch(0) == "index_2d 1,8,1 32,8,1");
  CHECK(driver.launch(1) == "index_2d_edges 1,8,1 32,8,1");
  CHECK(driver.launch(2) == "index_2d_edges 2,1,1 32,8,1");
  device.free(buffer);
}

TEST_CASE("cuda mock driver: a reduction runs a fixed number of blocks and combines their partials on the host") {
  MOCK_DRIVER_OR_SKIP(driver);
  const long before = driver.live_allocations();
  {
    const auto found = mock_devices(driver);
    auto& device = cuda_device(found);
    const auto program = device.compile(kernel_of(kSum));
    const std::int64_t n = 100003;
    std::vector<double> x(n);
    for (std::int64_t k = 0; k < n; ++k) x[static_cast<std::size_t>(k)] = static_cast<double>(k % 1000 - 500);
    Buffer buffer = device.allocate(8 * n);
    device.copy_in(buffer, 0, x.data(), 8 * n);
    const std::vector<KernelArg> args{array(buffer, n), ReductionArg{}};
    driver.clear_launches();
    const auto results = device.run(*program, args, range_1d(3, n));
    REQUIRE(results.size() == 1);
    CHECK(results[0].type == ir::ScalarType::F64);
    CHECK(results[0].float_value == std::accumulate(x.begin() + 3, x.end(), 0.0));  // integers: exact
    CHECK(driver.launch_count() == 1);
    CHECK(driver.launch(0) == "sum 16,1,1 256,1,1");  // 4 multiprocessors x 4 blocks
    // A short piece runs only the blocks it fills; an empty one gives the identity.
    driver.clear_launches();
    CHECK(device.run(*program, args, range_1d(10, 20))[0].float_value ==
          std::accumulate(x.begin() + 10, x.begin() + 20, 0.0));
    CHECK(driver.launch(0) == "sum 1,1,1 256,1,1");
    CHECK(device.run(*program, args, range_1d(7, 7))[0].float_value == 0.0);
    device.free(buffer);
  }
  // The program's partial buffers went with it.
  CHECK(driver.live_allocations() == before);
}
