// srad_v2: Rodinia's speckle-reducing anisotropic diffusion on Canopy. Reads
// the command line of Rodinia 3.1's OpenMP version:
//
//   srad <rows> <cols> <y1> <y2> <x1> <x2> <no. of threads> <lamda> <no. of iter>
//
// and, like Rodinia, makes its image itself (exp of rand() / RAND_MAX, rand()
// seeded with 7). <no. of threads> is read and ignored: Canopy runs on the
// leaves of its location tree. Options (anywhere on the line):
//   --output FILE  write the final image as Rodinia's OUTPUT build prints it ("%.5f " per pixel, a line per row)
//   --generate     accepted for symmetry with the other examples: the image is always generated
//   --check        compare the result with a serial run and say "Validation: ok"
//   --policy P     how each kernel is split over the leaves (default static)
//   --at LOCATION  where the kernels run (default: where the arrays are, the root)
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <canopy/canopy.hpp>

#include "rodinia/srad_v2/srad_v2.hpp"

namespace {

constexpr const char* kUsage =
    "srad <rows> <cols> <y1> <y2> <x1> <x2> <no. of threads> <lamda> <no. of iter>\n"
    "       [--output FILE] [--check] [--policy P] [--at LOCATION]";

// The same iterations in plain C++, one pixel at a time.
std::vector<float> diffuse_serially(std::vector<float> image, std::int64_t rows, std::int64_t cols,
                                    const rodinia::srad_v2::Parameters& p) {
  namespace srad = rodinia::srad_v2;
  const std::size_t pixels = image.size();
  std::vector<float> dn(pixels), ds(pixels), dw(pixels), de(pixels), c(pixels);
  auto at = [&](const std::vector<float>& a, std::int64_t i, std::int64_t j) { return a[std::size_t(i * cols + j)]; };
  for (int iteration = 0; iteration < p.iterations; ++iteration) {
    double sum = 0, sum2 = 0;
    for (std::int64_t i = p.roi.r1; i <= p.roi.r2; ++i)
      for (std::int64_t j = p.roi.c1; j <= p.roi.c2; ++j)
        sum += at(image, i, j), sum2 += double(at(image, i, j)) * at(image, i, j);
    const float q0sqr = srad::speckle_scale(sum, sum2, p.roi.pixels());
    for (std::int64_t i = 0; i < rows; ++i)
      for (std::int64_t j = 0; j < cols; ++j) {
        const std::size_t k = std::size_t(i * cols + j);
        const float jc = image[k];
        dn[k] = at(image, i > 0 ? i - 1 : i, j) - jc;
        ds[k] = at(image, i < rows - 1 ? i + 1 : i, j) - jc;
        dw[k] = at(image, i, j > 0 ? j - 1 : j) - jc;
        de[k] = at(image, i, j < cols - 1 ? j + 1 : j) - jc;
        const float value = srad::diffusion_coefficient(jc, dn[k], ds[k], dw[k], de[k], q0sqr);
        c[k] = value < 0 ? 0.0f : (value > 1 ? 1.0f : value);
      }
    for (std::int64_t i = 0; i < rows; ++i)
      for (std::int64_t j = 0; j < cols; ++j) {
        const std::size_t k = std::size_t(i * cols + j);
        image[k] = srad::updated_pixel(image[k], c[k], at(c, i < rows - 1 ? i + 1 : i, j),
                                       at(c, i, j < cols - 1 ? j + 1 : j), dn[k], ds[k], dw[k], de[k], p.lambda);
      }
  }
  return image;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<const char*> positional;
  bool check = false;
  std::string policy = "static", location, output;
  for (int a = 1; a < argc; ++a) {
    if (!std::strcmp(argv[a], "--generate"))
      continue;
    else if (!std::strcmp(argv[a], "--check"))
      check = true;
    else if (!std::strcmp(argv[a], "--output") && a + 1 < argc)
      output = argv[++a];
    else if (!std::strcmp(argv[a], "--policy") && a + 1 < argc)
      policy = argv[++a];
    else if (!std::strcmp(argv[a], "--at") && a + 1 < argc)
      location = argv[++a];
    else if (argv[a][0] == '-' && argv[a][1] == '-')
      rodinia::usage_error("srad", std::string("unknown option ") + argv[a], kUsage);
    else
      positional.push_back(argv[a]);
  }
  if (positional.size() != 9) rodinia::usage_error("srad", "expected 9 arguments", kUsage);
  const auto rows = rodinia::parse_integer("srad", "<rows>", positional[0], kUsage);
  const auto cols = rodinia::parse_integer("srad", "<cols>", positional[1], kUsage);
  rodinia::srad_v2::Parameters parameters;
  parameters.roi.r1 = rodinia::parse_integer("srad", "<y1>", positional[2], kUsage, 0);
  parameters.roi.r2 = rodinia::parse_integer("srad", "<y2>", positional[3], kUsage, 0);
  parameters.roi.c1 = rodinia::parse_integer("srad", "<x1>", positional[4], kUsage, 0);
  parameters.roi.c2 = rodinia::parse_integer("srad", "<x2>", positional[5], kUsage, 0);
  rodinia::parse_integer("srad", "<no. of threads>", positional[6], kUsage);
  parameters.lambda = float(rodinia::parse_number("srad", "<lamda>", positional[7], kUsage));
  parameters.iterations = int(rodinia::parse_integer("srad", "<no. of iter>", positional[8], kUsage, 0));

  try {
    std::printf("Randomizing the input matrix\n");
    const std::vector<float> image = rodinia::srad_v2::generate(rows, cols);
    canopy::Runtime rt;
    rodinia::srad_v2::Diffusion diffusion(rt, rows, cols, image, location, policy);
    std::printf("Start the SRAD main loop\n");
    const auto start = std::chrono::steady_clock::now();
    diffusion.run(parameters);
    const std::vector<float> result = diffusion.image();
    const double seconds = rodinia::seconds_since(start);
    std::printf("Computation Done\n");
    std::fprintf(stderr, "srad: %d iterations on %lldx%lld pixels in %.3f seconds\n", parameters.iterations, rows, cols,
                 seconds);
    if (!output.empty()) {
      rodinia::srad_v2::write_image(output, result, rows, cols);
    }
    if (check) {
      // Tolerance: the same float expressions in another order (vector units,
      // fused multiply-adds on other devices, the region's sums added in
      // another order) differ by a few ulps per iteration; diffusion smooths
      // rather than amplifies them.
      const std::vector<float> expected = diffuse_serially(image, rows, cols, parameters);
      double largest = 0;
      // A region of interest of one value has no variance: both runs divide
      // 0 by 0 (as Rodinia's srad does) and agree on NaN.
      for (std::size_t k = 0; k < expected.size(); ++k) {
        const double got = result[k], want = expected[k];
        largest = rodinia::worse(largest,
                                 std::isnan(got) && std::isnan(want) ? 0.0 : std::fabs(got - want) / std::fabs(want));
      }
      const bool ok = largest <= 1e-4;
      std::printf("Validation: %s (largest relative difference from a serial run: %g)\n", ok ? "ok" : "FAILED",
                  largest);
      if (!ok) return 1;
    }
  } catch (const canopy::Error& e) {
    rodinia::report_error("srad", e.what());
    return 1;
  }
  return 0;
}
