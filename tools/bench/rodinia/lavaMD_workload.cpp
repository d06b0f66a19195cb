// canopy-bench's lavaMD: Rodinia's particle interactions in a cube of boxes
// on Canopy (examples/rodinia/lavaMD) beside the OpenMP baseline.
#include <chrono>
#include <string>

#include "lavaMD_openmp.hpp"
#include "rodinia/lavaMD/lavaMD.hpp"
#include "workload.hpp"

namespace canopy::bench::rodinia {

namespace {

namespace md = ::rodinia::lavamd;

class LavaMdWorkload final : public Workload {
 public:
  std::string name() const override { return "lavaMD"; }
  std::string describe() const override {
    return std::to_string(system_.boxes1d) + " boxes per side, " + std::to_string(md::kParticles) +
           " particles per box";
  }

  void prepare(Size size) override {
    switch (size) {
      case Size::Small: system_ = md::generate(3); break;
      case Size::Medium: system_ = md::generate(10); break;
      case Size::Large: system_ = md::generate(16); break;
    }
    // Both sides write their results into memory touched once here.
    canopy_.assign(static_cast<std::size_t>(system_.particles() * 4), 0.0);
    baseline_.assign(canopy_.size(), 0.0);
    ran_ = false;
  }

  double run_canopy(Runtime& rt, const Placement& where) override {
    const auto start = std::chrono::steady_clock::now();
    md::Simulation simulation(rt, where.location, where.policy);
    simulation.run(system_, canopy_);
    ran_ = true;
    return ::rodinia::seconds_since(start);
  }

  double run_openmp() override {
    const auto start = std::chrono::steady_clock::now();
    openmp::lavamd(system_.positions.data(), system_.charges.data(), system_.neighbours.data(),
                   system_.neighbour_count.data(), system_.boxes(), md::kParticles, md::kMostBoxes,
                   2.0 * md::kAlpha * md::kAlpha, baseline_.data());
    return ::rodinia::seconds_since(start);
  }

  // The same sums in the same order; the baseline's compiler may fuse
  // multiplies and adds (one rounding instead of two), so the results agree
  // to 1e-12 of the largest magnitude (the sums mix signs, and single values
  // may be near zero).
  std::string check() const override {
    if (!ran_) return "not run";
    const double difference = md::largest_difference(canopy_, baseline_);
    if (difference <= 1e-12) return "";
    return "results differ by " + std::to_string(difference) + " of the largest magnitude";
  }

 private:
  md::System system_;
  std::vector<double> canopy_, baseline_;
  bool ran_ = false;
};

const Registration registration(10, [] { return std::make_unique<LavaMdWorkload>(); });

}  // namespace

}  // namespace canopy::bench::rodinia
