// canopy-bench's nn: Rodinia's nearest-neighbour search over generated
// hurricane locations on Canopy (examples/rodinia/nn) beside the OpenMP
// baseline: the same records, target and k.
#include <chrono>
#include <cmath>
#include <string>

#include "nn_openmp.hpp"
#include "rodinia/nn/nn.hpp"
#include "workload.hpp"

namespace canopy::bench::rodinia {

namespace {

namespace nn = ::rodinia::nn;

constexpr int kNeighbours = 10;
constexpr float kLatitude = 30.0f, kLongitude = 90.0f;

class NnWorkload final : public Workload {
 public:
  std::string name() const override { return "nn"; }
  std::string describe() const override {
    return std::to_string(records_.size()) + " records, the " + std::to_string(kNeighbours) + " nearest";
  }

  void prepare(Size size) override {
    switch (size) {
      case Size::Small: records_ = nn::generate(100000); break;
      case Size::Medium: records_ = nn::generate(8000000); break;
      case Size::Large: records_ = nn::generate(32000000); break;
    }
    // Both sides write their distances into the same memory, touched once
    // here, so that where two buffers' pages lie cannot favour either side
    // (the runs alternate, and each side keeps its own result).
    distances_.assign(static_cast<std::size_t>(records_.size()), 0.0f);
    canopy_.clear();
    baseline_.clear();
  }

  double run_canopy(Runtime& rt, const Placement& where) override {
    const auto start = std::chrono::steady_clock::now();
    canopy_ = nn::nearest(rt, records_, kNeighbours, kLatitude, kLongitude, distances_, where.location, where.policy);
    return ::rodinia::seconds_since(start);
  }

  double run_openmp() override {
    const auto start = std::chrono::steady_clock::now();
    baseline_ = openmp::nearest_neighbours(records_.latitude.data(), records_.longitude.data(), records_.size(),
                                           kLatitude, kLongitude, kNeighbours, distances_.data());
    return ::rodinia::seconds_since(start);
  }

  // The same neighbours with distances equal to a relative 1e-6: the
  // baseline's compiler may fuse a multiply and an add, which rounds once
  // instead of twice, so equally far records may come in another order.
  std::string check() const override {
    if (canopy_.empty()) return "not run";
    std::vector<nn::Neighbour> baseline;
    for (const auto& [record, distance] : baseline_) baseline.push_back({record, distance});
    return nn::compare(canopy_, baseline, 1e-6);
  }

 private:
  nn::Records records_;
  std::vector<float> distances_;
  std::vector<nn::Neighbour> canopy_;
  std::vector<std::pair<std::int64_t, float>> baseline_;
};

const Registration registration(8, [] { return std::make_unique<NnWorkload>(); });

}  // namespace

}  // namespace canopy::bench::rodinia
