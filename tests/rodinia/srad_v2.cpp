// srad_v2 at a small size: Canopy's diffusion equals a serial one written
// here, on cpu0, on opencl0 and split over both (at numa0,
// percentage:[50,50]); split, an iteration moves a few rows, not the
// arrays. Without an OpenCL device the OpenCL cases say so and pass.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "hetero/hetero_support.hpp"
#include "rodinia/srad_v2/srad_v2.hpp"

using namespace canopy;

namespace {

// Not multiples of any vector width; the region of interest is off the
// image's corner so that its row and column offsets matter.
constexpr std::int64_t kRows = 40, kCols = 37;
const rodinia::srad_v2::Parameters kParameters{{2, 17, 3, 20}, 0.5f, 6};

// Tolerance, relative to each pixel: the serial run and Canopy evaluate the
// same float expressions in the same order, but the region's sums (double)
// are added in another order, which may move q0^2 by an ulp, and a device
// may fuse a multiply and an add: a few ulps (1e-7 each) per iteration.
constexpr double kRelativeTolerance = 1e-5;

std::vector<float> diffuse_here(std::vector<float> image, const rodinia::srad_v2::Parameters& p) {
  const std::int64_t rows = kRows, cols = kCols;
  const std::size_t pixels = image.size();
  std::vector<float> dn(pixels), ds(pixels), dw(pixels), de(pixels), c(pixels);
  auto k_of = [&](std::int64_t i, std::int64_t j) { return std::size_t(i * cols + j); };
  for (int iteration = 0; iteration < p.iterations; ++iteration) {
    double sum = 0, sum2 = 0;
    for (std::int64_t i = p.roi.r1; i <= p.roi.r2; ++i)
      for (std::int64_t j = p.roi.c1; j <= p.roi.c2; ++j) {
        const double pixel = image[k_of(i, j)];
        sum += pixel;
        sum2 += pixel * pixel;
      }
    const double n = double(p.roi.pixels()), mean = sum / n;
    const float q0sqr = float((sum2 / n - mean * mean) / (mean * mean));
    for (std::int64_t i = 0; i < rows; ++i)
      for (std::int64_t j = 0; j < cols; ++j) {
        const std::size_t k = k_of(i, j);
        const float jc = image[k];
        dn[k] = image[k_of(std::max<std::int64_t>(i - 1, 0), j)] - jc;
        ds[k] = image[k_of(std::min(i + 1, rows - 1), j)] - jc;
        dw[k] = image[k_of(i, std::max<std::int64_t>(j - 1, 0))] - jc;
        de[k] = image[k_of(i, std::min(j + 1, cols - 1))] - jc;
        const float g2 = (dn[k] * dn[k] + ds[k] * ds[k] + dw[k] * dw[k] + de[k] * de[k]) / (jc * jc);
        const float l = (dn[k] + ds[k] + dw[k] + de[k]) / jc;
        const float num = 0.5f * g2 - (1.0f / 16.0f) * (l * l);
        const float den = 1.0f + 0.25f * l;
        const float qsqr = num / (den * den);
        const float ratio = (qsqr - q0sqr) / (q0sqr * (1.0f + q0sqr));
        c[k] = std::clamp(1.0f / (1.0f + ratio), 0.0f, 1.0f);
      }
    for (std::int64_t i = 0; i < rows; ++i)
      for (std::int64_t j = 0; j < cols; ++j) {
        const std::size_t k = k_of(i, j);
        const float cs = c[k_of(std::min(i + 1, rows - 1), j)], ce = c[k_of(i, std::min(j + 1, cols - 1))];
        image[k] = image[k] + 0.25f * p.lambda * (c[k] * dn[k] + cs * ds[k] + c[k] * dw[k] + ce * de[k]);
      }
  }
  return image;
}

double largest_relative_difference(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  double largest = 0;
  for (std::size_t k = 0; k < a.size(); ++k)
    largest = std::max(largest, std::fabs(double(a[k]) - double(b[k])) / std::fabs(double(b[k])));
  return largest;
}

}  // namespace

TEST_CASE("srad_v2: a serial diffusion's image on cpu0, opencl0 and split over both") {
  Runtime rt;
  const Hierarchy discovered = rt.hierarchy();
  const std::vector<float> image = rodinia::srad_v2::generate(kRows, kCols);
  // Rodinia's input: exp of a uniform number in [0, 1].
  CHECK(*std::min_element(image.begin(), image.end()) >= 1.0f);
  CHECK(*std::max_element(image.begin(), image.end()) <= std::exp(1.0f));
  const std::vector<float> expected = diffuse_here(image, kParameters);
  // The speckle really diffuses: pixels move by a good fraction of their value.
  CHECK(largest_relative_difference(expected, image) > 0.05);

  auto run = [&](const std::string& location, const std::string& policy) {
    rodinia::srad_v2::Diffusion diffusion(rt, kRows, kCols, image, location, policy);
    diffusion.run(kParameters);
    return diffusion.image();
  };
  SUBCASE("cpu0") {
    REQUIRE(hetero_tests::has_leaves(discovered, {"cpu0"}));
    CHECK(largest_relative_difference(run("cpu0", "static"), expected) <= kRelativeTolerance);
  }
  SUBCASE("opencl0") {
    if (!hetero_tests::has_leaves(discovered, {"opencl0"})) return;
    CHECK(largest_relative_difference(run("opencl0", "static"), expected) <= kRelativeTolerance);
    CHECK(hetero_tests::pieces_of(hetero_tests::last_region(rt)) ==
          std::vector<std::string>{"opencl0[0," + std::to_string(kRows) + ")"});
  }
  SUBCASE("split over cpu0 and opencl0") {
    if (!hetero_tests::has_leaves(discovered, {"cpu0", "opencl0"})) return;
    hetero_tests::use_leaves(rt, discovered, {"cpu0", "opencl0"});
    const auto before = hetero_tests::moved(rt);
    CHECK(largest_relative_difference(run("numa0", "percentage:[50,50]"), expected) <= kRelativeTolerance);
    const auto moved = hetero_tests::moved(rt) - before;
    const std::int64_t half = kRows / 2;
    CHECK(hetero_tests::pieces_of(hetero_tests::last_region(rt)) ==
          std::vector<std::string>{"cpu0[0," + std::to_string(half) + ")",
                                   "opencl0[" + std::to_string(half) + "," + std::to_string(kRows) + ")"});
    // The image's half (and a halo row) goes to opencl0 once and comes back
    // once; each iteration moves a halo row of the image each way and of the
    // coefficients one way, plus the rows of the region of interest that
    // opencl0 sums but cpu0 updated (at most the region's rows). Whole arrays
    // moving every iteration would be six images per iteration.
    const std::int64_t row = kCols * std::int64_t(sizeof(float));
    const std::int64_t roi_rows = kParameters.roi.r2 + 1;
    MESSAGE("split diffusion moved " << moved << "; a row is " << row << " bytes");
    CHECK(moved.host_to_device + moved.device_to_host <=
          (2 * (kRows - half + 1) + kParameters.iterations * (roi_rows + 3)) * row);
  }
}
