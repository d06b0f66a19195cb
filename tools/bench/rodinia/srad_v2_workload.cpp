// srad_v2 in canopy-bench: Rodinia's speckle-reducing anisotropic diffusion
// on Canopy beside its OpenMP and OpenCL baselines.
#include <chrono>
#include <cmath>
#include <string>
#include <vector>

#include "rodinia/srad_v2/srad_v2.hpp"
#include "srad_v2_baselines.hpp"
#include "workload.hpp"

namespace canopy::bench::rodinia {

namespace {

// Outputs agree when no pixel differs by more than this fraction of its
// value. The implementations evaluate the same float expressions in the
// same order, but compilers may fuse multiplies and adds (the OpenMP
// baseline's -march=native, OpenCL C's default contraction), and the
// region's sums (in double) are added in different orders, which can move
// q0^2 by an ulp: differences of a few float ulps per iteration, which the
// diffusion (a smoothing) does not amplify.
constexpr double kRelativeTolerance = 1e-4;

class SradV2 final : public Workload {
 public:
  std::string name() const override { return "srad_v2"; }
  std::string describe() const override {
    const auto& roi = parameters_.roi;
    return std::to_string(rows_) + "x" + std::to_string(cols_) + " image, region " + std::to_string(roi.r2 + 1) + "x" +
           std::to_string(roi.c2 + 1) + ", lambda 0.5, " + std::to_string(parameters_.iterations) + " iterations";
  }

  void prepare(Size size) override {
    switch (size) {
      case Size::Small: rows_ = cols_ = 64, parameters_.iterations = 4; break;
      case Size::Medium: rows_ = cols_ = 2048, parameters_.iterations = 100; break;
      case Size::Large: rows_ = cols_ = 4096, parameters_.iterations = 20; break;
    }
    // Rodinia's usual run: the region of interest is the top-left corner.
    const std::int64_t corner = size == Size::Small ? 16 : 128;
    parameters_.roi = {0, corner - 1, 0, corner - 1};
    parameters_.lambda = 0.5f;
    image_ = ::rodinia::srad_v2::generate(rows_, cols_);
  }

  double run_canopy(Runtime& rt, const Placement& where) override {
    // Timed from the input in host memory, as the baselines are: the arrays'
    // creation and the image's copy in count, on every side.
    const auto start = std::chrono::steady_clock::now();
    ::rodinia::srad_v2::Diffusion diffusion(rt, rows_, cols_, image_, where.location, where.policy);
    diffusion.run(parameters_);
    // Timed until the result is in host memory, as the baselines' is; the
    // copy kept for check() is not timed (they swap theirs out).
    const auto result = diffusion.image_view();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    canopy_.assign(result.begin(), result.end());
    return seconds;
  }

  double run_openmp() override { return srad_v2_baseline::run_openmp(problem(), baseline_); }
  bool has_opencl() const override { return true; }
  double run_opencl(backends::opencl::OpenCLDevice& device) override {
    return srad_v2_baseline::run_opencl(device, problem(), baseline_);
  }

  std::string check() const override {
    if (canopy_.size() != baseline_.size() || canopy_.empty()) return "no output to compare";
    double largest = 0;
    std::size_t at = 0;
    for (std::size_t k = 0; k < canopy_.size(); ++k) {
      const double relative = std::fabs(double(canopy_[k]) - double(baseline_[k])) / std::fabs(double(baseline_[k]));
      if (!(relative <= largest)) largest = relative, at = k;
    }
    if (largest <= kRelativeTolerance) return "";
    return "pixel " + std::to_string(at) + " differs by " + std::to_string(largest) + " of its value (canopy " +
           std::to_string(canopy_[at]) + ", baseline " + std::to_string(baseline_[at]) + ")";
  }

 private:
  srad_v2_baseline::Problem problem() const {
    const auto& roi = parameters_.roi;
    return {rows_, cols_, image_.data(), roi.r1, roi.r2, roi.c1, roi.c2, parameters_.lambda, parameters_.iterations};
  }

  std::int64_t rows_ = 0, cols_ = 0;
  ::rodinia::srad_v2::Parameters parameters_;
  std::vector<float> image_, canopy_, baseline_;
};

const Registration registration(1, [] { return std::make_unique<SradV2>(); });

}  // namespace

}  // namespace canopy::bench::rodinia
