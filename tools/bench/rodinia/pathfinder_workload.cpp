// pathfinder in canopy-bench: Rodinia's dynamic programming over a grid of
// walls on Canopy beside its OpenMP and OpenCL baselines.
#include <chrono>
#include <string>
#include <vector>

#include "pathfinder_baselines.hpp"
#include "rodinia/pathfinder/pathfinder.hpp"
#include "workload.hpp"

namespace canopy::bench::rodinia {

namespace {

class Pathfinder final : public Workload {
 public:
  std::string name() const override { return "pathfinder"; }
  std::string describe() const override {
    return std::to_string(walls_.cols) + " columns, " + std::to_string(walls_.rows) + " rows";
  }

  void prepare(Size size) override {
    switch (size) {
      case Size::Small: walls_ = ::rodinia::pathfinder::generate(1000, 20); break;
      case Size::Medium: walls_ = ::rodinia::pathfinder::generate(1000000, 200); break;
      case Size::Large: walls_ = ::rodinia::pathfinder::generate(4000000, 100); break;
    }
  }

  double run_canopy(Runtime& rt, const Placement& where) override {
    // Timed from the input in host memory, as the baselines are: the arrays'
    // creation counts, on every side.
    const auto start = std::chrono::steady_clock::now();
    ::rodinia::pathfinder::Search search(rt, walls_, where.location, where.policy);
    search.run();
    // Timed until the result is in host memory, as the baselines' is; the
    // copy kept for check() is not timed (they swap theirs out).
    const auto result = search.result_view();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    canopy_.assign(result.begin(), result.end());
    return seconds;
  }

  double run_openmp() override { return pathfinder_baseline::run_openmp(problem(), baseline_); }
  bool has_opencl() const override { return true; }
  double run_opencl(backends::opencl::OpenCLDevice& device) override {
    return pathfinder_baseline::run_opencl(device, problem(), baseline_);
  }

  // Integers: the costs must be equal.
  std::string check() const override {
    if (canopy_.size() != baseline_.size() || canopy_.empty()) return "no output to compare";
    for (std::size_t n = 0; n < canopy_.size(); ++n)
      if (canopy_[n] != baseline_[n])
        return "column " + std::to_string(n) + ": canopy " + std::to_string(canopy_[n]) + ", baseline " +
               std::to_string(baseline_[n]);
    return "";
  }

 private:
  pathfinder_baseline::Problem problem() const { return {walls_.rows, walls_.cols, walls_.values.data()}; }

  ::rodinia::pathfinder::Walls walls_;
  std::vector<std::int32_t> canopy_, baseline_;
};

const Registration registration(2, [] { return std::make_unique<Pathfinder>(); });

}  // namespace

}  // namespace canopy::bench::rodinia
