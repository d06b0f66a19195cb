// Rodinia's srad_v2 in Canopy: speckle-reducing anisotropic diffusion of an
// image. Each iteration measures the speckle in a region of interest (the
// mean and variance of its pixels, a reduction), then runs two kernels over
// the image: the first computes each pixel's four directional derivatives
// and its diffusion coefficient, the second the divergence of the flow and
// the updated pixel. Every array stays on the runtime for the whole run;
// split over devices, an iteration moves only one halo row of the image and
// of the coefficients across each boundary, plus the region of interest's
// rows that another device computed.
//
// Shared by the `srad_v2` example program and `canopy-bench rodinia`; the
// command line, the input (Rodinia seeds the C library's rand() with 7) and
// the printed output are Rodinia 3.1's.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include <canopy/canopy.hpp>

#include "rodinia/common/rodinia.hpp"

namespace rodinia::srad_v2 {

/// The region of interest: rows r1..r2 and columns c1..c2, inclusive (Rodinia's y1 y2 x1 x2).
struct Roi {
  std::int64_t r1 = 0, r2 = 0, c1 = 0, c2 = 0;
  std::int64_t pixels() const { return (r2 - r1 + 1) * (c2 - c1 + 1); }
};

/// What one run needs besides the image.
struct Parameters {
  Roi roi;
  float lambda = 0.5f;
  int iterations = 1;
};

/// Rodinia's input: pixel (i, j) is exp(rand() / RAND_MAX) with rand()
/// seeded with 7, row-major; on the same C library this is the very image
/// Rodinia's srad_v2 works on.
inline std::vector<float> generate(std::int64_t rows, std::int64_t cols) {
  std::srand(7);
  std::vector<float> image(static_cast<std::size_t>(rows * cols));
  for (auto& pixel : image) pixel = std::exp(float(std::rand()) / float(RAND_MAX));
  return image;
}

/// Writes the image as Rodinia's srad does: each row's pixels as "%.5f "
/// followed by a line break.
inline void write_image(const std::string& path, const std::vector<float>& image, std::int64_t rows,
                        std::int64_t cols) {
  rodinia::TextOut out(path);
  if (!out.good()) throw canopy::Error("cannot open '" + path + "' for writing");
  for (std::int64_t i = 0; i < rows; ++i) {
    for (std::int64_t j = 0; j < cols; ++j) out.fixed(double(image[std::size_t(i * cols + j)]), 5).put(' ');
    out.put('\n');
  }
  if (!out.close()) throw canopy::Error("cannot write '" + path + "'");
}

/// q0^2, the speckle scale of the iteration, from the sums of the region of
/// interest's pixels and of their squares.
inline float speckle_scale(double sum, double sum_of_squares, std::int64_t pixels) {
  const double mean = sum / double(pixels);
  const double variance = sum_of_squares / double(pixels) - mean * mean;
  return float(variance / (mean * mean));
}

/// The diffusion coefficient of a pixel of value `jc` whose differences with
/// its neighbours are dn, ds, dw, de, for the speckle scale q0sqr; in [0, 1].
/// The kernel and the baselines evaluate the same expression.
template <class T, class S>
T diffusion_coefficient(T jc, T dn, T ds, T dw, T de, S q0sqr) {
  const T g2 = (dn * dn + ds * ds + dw * dw + de * de) / (jc * jc);
  const T l = (dn + ds + dw + de) / jc;
  const T num = 0.5f * g2 - (1.0f / 16.0f) * (l * l);
  const T den = 1.0f + 0.25f * l;
  const T qsqr = num / (den * den);
  const T ratio = (qsqr - q0sqr) / (q0sqr * (1.0f + q0sqr));
  return 1.0f / (1.0f + ratio);
}

/// The image's update from the coefficients of the pixel (cc), of the pixel
/// below (cs) and of the pixel to the right (ce).
template <class T, class S>
T updated_pixel(T j, T cc, T cs, T ce, T dn, T ds, T dw, T de, S lambda) {
  const T divergence = cc * dn + cs * ds + cc * dw + ce * de;
  return j + 0.25f * lambda * divergence;
}

using Image = canopy::Array<float, 2>;

/// The sums of the pixels of rows [r1, rows of the range) and columns
/// [c1, c1 + columns of the range) and of their squares, in double. Rows
/// below r1 are skipped rather than offset so that a split over devices
/// reads only each piece's own rows.
using RoiSumsKernel = canopy::Kernel<void(canopy::In<float, 2>, canopy::Val<std::int64_t>, canopy::Val<std::int64_t>,
                                          canopy::Sum<double>, canopy::Sum<double>)>;
/// Derivatives dn, ds, dw, de and the clamped coefficient c from the image and q0^2.
using CoefficientsKernel =
    canopy::Kernel<void(canopy::In<float, 2>, canopy::Out<float, 2>, canopy::Out<float, 2>, canopy::Out<float, 2>,
                        canopy::Out<float, 2>, canopy::Out<float, 2>, canopy::Val<float>)>;
/// The image updated in place from the coefficients and derivatives, with lambda.
using UpdateKernel =
    canopy::Kernel<void(canopy::InOut<float, 2>, canopy::In<float, 2>, canopy::In<float, 2>, canopy::In<float, 2>,
                        canopy::In<float, 2>, canopy::In<float, 2>, canopy::Val<float>)>;

inline const RoiSumsKernel& roi_sums_kernel() {
  using namespace canopy;
  static const RoiSumsKernel kernel(
      "srad_roi_sums",
      [](In<float, 2> image, Val<std::int64_t> r1, Val<std::int64_t> c1, Sum<double> sum, Sum<double> sum2) {
        Idx i = index(0), j = index(1);
        If(i >= r1, [&] {
          Var<double> pixel = cast<double>(image(i, c1 + j));
          sum += pixel;
          sum2 += pixel * pixel;
        });
      },
      {"image", "r1", "c1", "sum", "sum2"});
  return kernel;
}

inline const CoefficientsKernel& coefficients_kernel() {
  using namespace canopy;
  static const CoefficientsKernel kernel(
      "srad_coefficients",
      [](In<float, 2> image, Out<float, 2> dn, Out<float, 2> ds, Out<float, 2> dw, Out<float, 2> de, Out<float, 2> c,
         Val<float> q0sqr) {
        Idx i = index(0), j = index(1);
        const Idx rows = image.extent(0), cols = image.extent(1);
        const Value<float> jc = image(i, j);
        // A pixel at the edge is its own neighbour there: the difference is 0.
        const Value<float> north = image(select(i > 0, i - 1, i), j) - jc;
        const Value<float> south = image(select(i < rows - 1, i + 1, i), j) - jc;
        Var<float> west = 0.0f, east = 0.0f;
        If(j > 0, [&] { west = image(i, j - 1) - jc; });
        If(j < cols - 1, [&] { east = image(i, j + 1) - jc; });
        dn(i, j) = north;
        ds(i, j) = south;
        dw(i, j) = west;
        de(i, j) = east;
        const Value<float> coefficient =
            diffusion_coefficient(jc, north, south, west.value(), east.value(), q0sqr.value());
        c(i, j) = select(coefficient < 0.0f, 0.0f, select(coefficient > 1.0f, 1.0f, coefficient));
      },
      {"image", "dn", "ds", "dw", "de", "c", "q0sqr"});
  return kernel;
}

inline const UpdateKernel& update_kernel() {
  using namespace canopy;
  static const UpdateKernel kernel("srad_update",
                                   [](InOut<float, 2> image, In<float, 2> c, In<float, 2> dn, In<float, 2> ds,
                                      In<float, 2> dw, In<float, 2> de, Val<float> lambda) {
                                     Idx i = index(0), j = index(1);
                                     const Idx rows = image.extent(0), cols = image.extent(1);
                                     const Value<float> cc = c(i, j);
                                     const Value<float> cs = c(select(i < rows - 1, i + 1, i), j);
                                     // Rodinia takes the pixel's own coefficient as the east one in the
                                     // last column, where de is exactly 0: any finite value gives the same
                                     // product there. Starting from 0 (not cc) keeps the load a masked load
                                     // of consecutive elements; from cc, LLVM merges the two loads into a gather.
                                     Var<float> ce = 0.0f;
                                     If(j < cols - 1, [&] { ce = c(i, j + 1); });
                                     image(i, j) = updated_pixel(image(i, j).value(), cc, cs, ce.value(),
                                                                 dn(i, j).value(), ds(i, j).value(), dw(i, j).value(),
                                                                 de(i, j).value(), lambda.value());
                                   },
                                   {"image", "c", "dn", "ds", "dw", "de", "lambda"});
  return kernel;
}

/// A diffusion run on a runtime: the image, its derivatives and coefficients
/// live there from construction to destruction.
class Diffusion {
 public:
  /// Places the arrays on `rt` (at the hierarchy's root) and fills the image.
  /// Regions run at `location` (empty: where the arrays are) split by `policy`.
  Diffusion(canopy::Runtime& rt, std::int64_t rows, std::int64_t cols, const std::vector<float>& image,
            std::string location = "", std::string policy = "static")
      : rt_(rt),
        rows_(rows),
        cols_(cols),
        location_(std::move(location)),
        policy_(std::move(policy)),
        image_(make(rt, "srad_image")),
        c_(make(rt, "srad_c")),
        dn_(make(rt, "srad_dn")),
        ds_(make(rt, "srad_ds")),
        dw_(make(rt, "srad_dw")),
        de_(make(rt, "srad_de")) {
    if (std::int64_t(image.size()) != rows * cols)
      throw canopy::Error("srad: the image has " + std::to_string(image.size()) + " pixels, not " +
                          std::to_string(rows) + "x" + std::to_string(cols));
    auto view = image_.host();
    std::copy(image.begin(), image.end(), view.begin());
  }

  /// Runs `parameters.iterations` iterations and waits for them. Throws
  /// canopy::Error when the region of interest is not inside the image.
  void run(const Parameters& parameters) {
    const Roi& roi = parameters.roi;
    if (roi.r1 < 0 || roi.c1 < 0 || roi.r1 > roi.r2 || roi.c1 > roi.c2 || roi.r2 >= rows_ || roi.c2 >= cols_)
      throw canopy::Error("srad: the region of interest rows " + std::to_string(roi.r1) + ".." +
                          std::to_string(roi.r2) + ", columns " + std::to_string(roi.c1) + ".." +
                          std::to_string(roi.c2) + " is not inside the " + std::to_string(rows_) + "x" +
                          std::to_string(cols_) + " image");
    for (int k = 0; k < parameters.iterations; ++k) {
      const auto [sum, sum2] = rt_.region(roi_sums_kernel())
                                   .over(roi.r2 + 1, roi.c2 - roi.c1 + 1)
                                   .at(location_)
                                   .policy(policy_)
                                   .reduce(image_, roi.r1, roi.c1);
      const float q0sqr = speckle_scale(sum, sum2, roi.pixels());
      rt_.region(coefficients_kernel())
          .over(rows_, cols_)
          .at(location_)
          .policy(policy_)
          .launch(image_, dn_, ds_, dw_, de_, c_, q0sqr);
      rt_.region(update_kernel())
          .over(rows_, cols_)
          .at(location_)
          .policy(policy_)
          .launch(image_, c_, dn_, ds_, dw_, de_, parameters.lambda);
    }
    rt_.pause();
  }

  /// The image now, row-major.
  std::vector<float> image() const {
    auto view = image_view();
    return std::vector<float>(view.begin(), view.end());
  }
  /// The same in the image's own host memory, without a copy where it is
  /// there already; valid until the next run().
  canopy::HostView<const float, 2> image_view() const { return image_.host_read(); }

 private:
  Image make(canopy::Runtime& rt, const char* name) {
    return rt.array<float, 2>(canopy::Shape(rows_, cols_), canopy::named(name));
  }

  canopy::Runtime& rt_;
  std::int64_t rows_, cols_;
  std::string location_, policy_;
  Image image_, c_, dn_, ds_, dw_, de_;
};

}  // namespace rodinia::srad_v2
