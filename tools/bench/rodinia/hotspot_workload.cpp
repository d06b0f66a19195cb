// hotspot in canopy-bench: Rodinia's thermal simulation on Canopy beside its
// OpenMP and OpenCL baselines.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>
#include <vector>

#include "hotspot_baselines.hpp"
#include "rodinia/hotspot/hotspot.hpp"
#include "workload.hpp"

namespace canopy::bench::rodinia {

namespace {

// Outputs agree when no cell differs by more than this many kelvin. The
// implementations add the same terms in the same order, but a compiler may
// fuse a multiply and an add (the OpenMP baseline's -march=native, OpenCL C's
// default contraction) and round once instead of twice: a few ulps (about
// 3e-5 K at 330 K) per step. Each step is a contraction of the differences
// (every cell becomes a weighted average plus a source), so they stay near
// that size instead of growing with the number of steps.
constexpr double kToleranceKelvin = 1e-3;

class Hotspot final : public Workload {
 public:
  std::string name() const override { return "hotspot"; }
  std::string describe() const override {
    return std::to_string(rows_) + "x" + std::to_string(cols_) + " grid, " + std::to_string(steps_) + " steps";
  }

  void prepare(Size size) override {
    switch (size) {
      case Size::Small: rows_ = cols_ = 64, steps_ = 20; break;
      case Size::Medium: rows_ = cols_ = 1024, steps_ = 3000; break;
      case Size::Large: rows_ = cols_ = 2048, steps_ = 1000; break;
    }
    chip_ = ::rodinia::hotspot::generate(rows_, cols_);
  }

  double run_canopy(Runtime& rt, const Placement& where) override {
    // Timed from the input in host memory, as the baselines are: the arrays'
    // creation and the chip's copy in count, on every side.
    const auto start = std::chrono::steady_clock::now();
    ::rodinia::hotspot::Simulation simulation(rt, chip_, where.location, where.policy);
    simulation.run(steps_);
    // Timed until the result is in host memory, as the baselines' is; the
    // copy kept for check() is not timed (they swap theirs out).
    const auto result = simulation.temperature_view();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    canopy_.assign(result.begin(), result.end());
    return seconds;
  }

  double run_openmp() override { return hotspot_baseline::run_openmp(problem(), baseline_); }
  bool has_opencl() const override { return true; }
  double run_opencl(backends::opencl::OpenCLDevice& device) override {
    return hotspot_baseline::run_opencl(device, problem(), baseline_);
  }

  std::string check() const override {
    if (canopy_.size() != baseline_.size() || canopy_.empty()) return "no output to compare";
    double largest = 0;
    std::size_t at = 0;
    for (std::size_t k = 0; k < canopy_.size(); ++k) {
      const double difference = std::fabs(double(canopy_[k]) - double(baseline_[k]));
      if (!(difference <= largest)) largest = difference, at = k;
    }
    if (largest <= kToleranceKelvin) return "";
    return "cell " + std::to_string(at) + " differs by " + std::to_string(largest) + " K (canopy " +
           std::to_string(canopy_[at]) + ", baseline " + std::to_string(baseline_[at]) + ")";
  }

 private:
  hotspot_baseline::Problem problem() const {
    const auto c = ::rodinia::hotspot::Coefficients::of(rows_, cols_);
    return {rows_,
            cols_,
            chip_.temperature.data(),
            chip_.power.data(),
            c.cap_1,
            c.rx_1,
            c.ry_1,
            c.rz_1,
            ::rodinia::hotspot::kAmbient,
            steps_};
  }

  std::int64_t rows_ = 0, cols_ = 0;
  int steps_ = 0;
  ::rodinia::hotspot::Chip chip_;
  std::vector<float> canopy_, baseline_;
};

const Registration registration(0, [] { return std::make_unique<Hotspot>(); });

}  // namespace

}  // namespace canopy::bench::rodinia
