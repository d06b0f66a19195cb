// canopy-bench's kmeans: Rodinia's clustering of points into 5 groups on
// Canopy (examples/rodinia/kmeans) beside the OpenMP baseline, same points,
// same rounds.
#include <chrono>
#include <cmath>
#include <string>

#include "kmeans_openmp.hpp"
#include "rodinia/kmeans/kmeans.hpp"
#include "workload.hpp"

namespace canopy::bench::rodinia {

namespace {

namespace km = ::rodinia::kmeans;

constexpr int kClusters = 5;
constexpr float kThreshold = 0.001f;

class KmeansWorkload final : public Workload {
 public:
  std::string name() const override { return "kmeans"; }
  std::string describe() const override {
    return std::to_string(points_.count) + " points x " + std::to_string(points_.features) + " features, " +
           std::to_string(kClusters) + " clusters";
  }

  void prepare(Size size) override {
    switch (size) {
      case Size::Small: points_ = km::generate(4096, 8); break;
      case Size::Medium: points_ = km::generate(800000, 34); break;
      case Size::Large: points_ = km::generate(2000000, 34); break;
    }
    canopy_ = {};
    baseline_ = {};
  }

  double run_canopy(Runtime& rt, const Placement& where) override {
    const auto start = std::chrono::steady_clock::now();
    km::Clustering clustering(rt, where.location, where.policy);
    clustering.run(points_, kClusters, kThreshold, canopy_);  // into last run's memory, as the baseline
    return ::rodinia::seconds_since(start);
  }

  double run_openmp() override {
    const auto start = std::chrono::steady_clock::now();
    baseline_.rounds = openmp::kmeans(points_.values.data(), points_.count, points_.features, kClusters, kThreshold,
                                      baseline_.centres, baseline_.membership);
    return ::rodinia::seconds_since(start);
  }

  // Rounds and memberships must be equal. Centres are means of float sums
  // taken in different orders (per block and merged with atomic adds in
  // Canopy, per thread in the baseline), so they agree to a relative 1e-4:
  // the rounding of sums of up to 10^6 floats, far below a cluster's spread.
  std::string check() const override {
    if (canopy_.membership.empty() || baseline_.membership.empty()) return "not run";
    return km::compare(canopy_, baseline_, 1e-4);
  }

 private:
  km::Points points_;
  km::Clusters canopy_, baseline_;
};

const Registration registration(7, [] { return std::make_unique<KmeansWorkload>(); });

}  // namespace

}  // namespace canopy::bench::rodinia
