// Regions on the CPU through the public runtime, one after another without
// a pause, each reading what the one before wrote, and one array passed as
// both the output and the input of a region. (The kernel battery, tests/
// battery/, runs kernels through the Device API; this is the runtime's part.)
#include <doctest/doctest.h>

#include <random>
#include <vector>

#include <canopy/canopy.hpp>

using namespace canopy;

namespace {

using i64 = std::int64_t;

Runtime& shared_runtime() {
  static Runtime rt;
  return rt;
}

/// An array holding `values`.
Array<double> upload(const std::vector<double>& values) {
  auto array = shared_runtime().array<double>(static_cast<i64>(values.size()));
  auto host = array.host();
  for (std::size_t k = 0; k < values.size(); ++k) host.data()[k] = values[k];
  return array;
}

/// Checks every element of `array` against `want`, exactly.
void check_values(const Array<double>& array, const std::vector<double>& want, const std::string& what) {
  auto got = array.host();
  REQUIRE(got.size() == static_cast<i64>(want.size()));
  i64 wrong = 0;
  for (i64 k = 0; k < got.size(); ++k) wrong += got.data()[k] != want[static_cast<std::size_t>(k)];
  INFO(what, ": ", wrong, " wrong element(s) of ", got.size());
  CHECK(wrong == 0);
}

}  // namespace

TEST_CASE("regions chained without pause, and one array passed twice") {
  Kernel affine("affine",
                [](Out<double> y, In<double> x, Val<double> a, Val<double> b) {
                  Idx i = index(0);
                  y[i] = a * x[i] + b;
                },
                {"y", "x", "a", "b"});
  std::mt19937_64 random(3838);
  for (i64 n : {0, 1, 3, 17, 1003, 4099, 100003}) {
    std::vector<double> x0(static_cast<std::size_t>(n));
    for (auto& v : x0) v = std::uniform_real_distribution<double>(-4, 4)(random);
    auto x = upload(x0);
    auto y = shared_runtime().array<double>(n), z = shared_runtime().array<double>(n);
    // x -> y -> z -> x (in place: the same array as y and x), each reading what the one before wrote.
    shared_runtime().region(affine).over(n).launch(y, x, 2.0, 1.0);
    shared_runtime().region(affine).over(n).launch(z, y, 0.5, -3.0);
    shared_runtime().region(affine).over(n).launch(x, z, -1.0, 0.25);
    shared_runtime().region(affine).over(n).launch(z, z, 4.0, 0.0);
    std::vector<double> want_x(x0.size()), want_z(x0.size());
    for (std::size_t k = 0; k < x0.size(); ++k) {
      const double y1 = 2.0 * x0[k] + 1.0;
      const double z1 = 0.5 * y1 + -3.0;
      want_x[k] = -1.0 * z1 + 0.25;
      want_z[k] = 4.0 * z1 + 0.0;
    }
    check_values(x, want_x, "chained regions over " + std::to_string(n));
    check_values(z, want_z, "in-place region over " + std::to_string(n));
  }
}
