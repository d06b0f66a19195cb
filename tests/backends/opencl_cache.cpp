// The OpenCL device's program caches: the same kernel compiled twice gives
// the same program; program binaries go to the disk cache, so that a second
// device object on the same cache directory (a second run) builds nothing and
// loads the binary instead; a damaged cache entry is rebuilt from source;
// CANOPY_DUMP=opencl writes the source that was built.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "opencl_support.hpp"
#include "scoped_setting.hpp"

using namespace canopy;
using namespace opencl_test;

namespace {

std::filesystem::path fresh_directory(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / (name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  return dir;
}

std::shared_ptr<backends::opencl::OpenCLDevice> first_device(const std::string& cache_dir) {
  auto devices = backends::opencl::discover_opencl({"", cache_dir});
  REQUIRE_FALSE(devices.devices.empty());
  return std::static_pointer_cast<backends::opencl::OpenCLDevice>(devices.devices[0]);
}

Kernel<void(Out<double>, In<double>, Val<double>)> scale_kernel() {
  return Kernel("scale_for_cache",
                [](Out<double> a, In<double> b, Val<double> s) {
                  Idx i = index(0);
                  a[i] = s * b[i] + 1.0;
                },
                {"a", "b", "s"});
}

// Runs `program`'s kernel (scale_for_cache) on `device` and returns a[n-1].
double run_scale(backends::opencl::OpenCLDevice& device, const std::shared_ptr<const ir::Kernel>& kernel) {
  const auto got = run_on_opencl(device, kernel,
                                 {HostArray::filled<double>(2000, 0), HostArray::filled<double>(2000, 3), scalar(2.0)},
                                 range_of(2000));
  return values_of<double>(got.arrays[0])[1999];
}

}  // namespace

TEST_CASE("opencl cache: a kernel compiled twice gives one program" * doctest::test_suite("opencl")) {
  OPENCL_DEVICE_OR_SKIP(device);
  const auto kernel = optimized(scale_kernel());
  const auto first = device->compile(kernel);
  const auto second = device->compile(optimized(scale_kernel()));  // another Kernel object, same text
  CHECK(first == second);
  CHECK(&first->kernel() == kernel.get());
}

TEST_CASE("opencl cache: a second device on the same cache directory loads the binary" *
          doctest::test_suite("opencl")) {
  OPENCL_DEVICE_OR_SKIP(any_device);
  const auto dir = fresh_directory("canopy-opencl-cache-test");
  const auto kernel = optimized(scale_kernel());
  {
    auto device = first_device(dir.string());
    REQUIRE(device->disk_cache());
    auto program = std::static_pointer_cast<backends::opencl::OpenCLProgram>(device->compile(kernel));
    CHECK(program->origin() == backends::opencl::ProgramOrigin::Built);
    CHECK(device->disk_cache()->counters().misses == 1);
    CHECK(std::filesystem::exists(device->disk_cache()->path_of(program->cache_key())));
    CHECK(run_scale(*device, kernel) == 7.0);
  }
  // "The second run": a new device object, the same directory.
  auto device = first_device(dir.string());
  auto program = std::static_pointer_cast<backends::opencl::OpenCLProgram>(device->compile(kernel));
  CHECK(program->origin() == backends::opencl::ProgramOrigin::Disk);
  CHECK(device->disk_cache()->counters().hits == 1);
  CHECK(device->disk_cache()->counters().misses == 0);
  CHECK(run_scale(*device, kernel) == 7.0);

  // A damaged entry is a miss: the program is built again and the entry replaced.
  const auto entry = device->disk_cache()->path_of(program->cache_key());
  std::filesystem::resize_file(entry, std::filesystem::file_size(entry) / 2);
  auto third = first_device(dir.string());
  auto rebuilt = std::static_pointer_cast<backends::opencl::OpenCLProgram>(third->compile(kernel));
  CHECK(rebuilt->origin() == backends::opencl::ProgramOrigin::Built);
  CHECK(third->disk_cache()->counters().corrupt == 1);
  CHECK(run_scale(*third, kernel) == 7.0);
  auto fourth = first_device(dir.string());
  CHECK(std::static_pointer_cast<backends::opencl::OpenCLProgram>(fourth->compile(kernel))->origin() ==
        backends::opencl::ProgramOrigin::Disk);

  // The key follows the source: another kernel is another entry.
  Kernel other("scale_for_cache", [](Out<double> a, In<double> b, Val<double> s) { a[index(0)] = s - b[index(0)]; },
               {"a", "b", "s"});
  auto different = std::static_pointer_cast<backends::opencl::OpenCLProgram>(fourth->compile(optimized(other)));
  CHECK(different->origin() == backends::opencl::ProgramOrigin::Built);
  CHECK(different->cache_key() != program->cache_key());
  std::filesystem::remove_all(dir);
}

TEST_CASE("opencl cache: no disk cache when asked for none" * doctest::test_suite("opencl")) {
  OPENCL_DEVICE_OR_SKIP(device);
  CHECK(device->disk_cache() == nullptr);  // the tests' devices use "off"
}

TEST_CASE("opencl cache: CANOPY_DUMP=opencl writes the source that was built" * doctest::test_suite("opencl")) {
  OPENCL_DEVICE_OR_SKIP(any_device);
  const auto dir = fresh_directory("canopy-opencl-dump-test");
  std::shared_ptr<backends::opencl::OpenCLProgram> program;
  {
    canopy::testing::ScopedSetting dump("CANOPY_DUMP", "opencl"), dump_dir("CANOPY_DUMP_DIR", dir.c_str());
    auto device = first_device("off");
    Kernel kernel("dumped_kernel", [](Out<float> a) { a[index(0)] = 1.5f; }, {"a"});
    program = std::static_pointer_cast<backends::opencl::OpenCLProgram>(device->compile(optimized(kernel)));
  }
  std::ifstream file(dir / "dumped_kernel.opencl");
  REQUIRE(file);
  std::stringstream text;
  text << file.rdbuf();
  CHECK(text.str() == program->source().text);
  CHECK(text.str().find("__kernel void dumped_kernel(") != std::string::npos);
  std::filesystem::remove_all(dir);
}
