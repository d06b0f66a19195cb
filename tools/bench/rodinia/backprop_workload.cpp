// canopy-bench's backprop: one training step on Canopy
// (examples/rodinia/backprop/backprop.hpp) beside the OpenMP baseline
// (backprop_openmp.cpp), both over memory allocated the way Canopy allocates
// its arrays; the host part of the step is the same code on both sides.
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <canopy/runtime/host_memory.hpp>

#include "openmp_ports.hpp"
#include "rodinia/backprop/backprop.hpp"
#include "workload.hpp"

namespace canopy::bench::rodinia {

namespace {

using ::rodinia::backprop::kHidden;
using ::rodinia::backprop::Network;

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Floats in memory from runtime::allocate_host (huge pages where the system
// allows), as Canopy's own arrays get.
class Floats {
 public:
  Floats() = default;
  Floats(Floats&& other) noexcept : size_(std::exchange(other.size_, 0)), data_(std::exchange(other.data_, nullptr)) {}
  Floats& operator=(Floats&& other) noexcept {
    std::swap(size_, other.size_);
    std::swap(data_, other.data_);
    return *this;
  }
  ~Floats() {
    if (data_) runtime::free_host(data_, size_ * sizeof(float));
  }
  /// Makes this a copy of `from`, reusing the memory when the size matches.
  void assign(const std::vector<float>& from) {
    if (size_ != from.size()) {
      Floats fresh;
      fresh.size_ = from.size();
      fresh.data_ = static_cast<float*>(runtime::allocate_host(fresh.size_ * sizeof(float)));
      *this = std::move(fresh);
    }
    std::copy(from.begin(), from.end(), data_);
  }
  /// n zeros, reusing the memory when the size matches.
  void zeros(std::size_t n) {
    if (size_ != n) {
      Floats fresh;
      fresh.size_ = n;
      fresh.data_ = static_cast<float*>(runtime::allocate_host(n * sizeof(float)));
      *this = std::move(fresh);
    }
    std::fill(data_, data_ + n, 0.0f);
  }
  float* data() const { return data_; }
  std::size_t size() const { return size_; }

 private:
  std::size_t size_ = 0;
  float* data_ = nullptr;
};

// One side's state: the big input-layer arrays and the network's small parts.
struct Side {
  Floats weights, previous;
  Network net;  // its input_weights, input_prev_weights and input_units stay empty
};

class BackpropWorkload final : public Workload {
 public:
  std::string name() const override { return "backprop"; }
  std::string describe() const override {
    return std::to_string(start_.inputs) + " input units, 16 hidden, 1 output, one training step";
  }

  void prepare(Size size) override {
    start_ = ::rodinia::backprop::create(size == Size::Small ? 65536 : size == Size::Medium ? 8388608 : 16777216);
    units_.assign(start_.input_units);
    // The momentum weights start at zero: reset() makes them, so the start's
    // copy need not be kept (at medium size it is 570 MB).
    start_.input_prev_weights = std::vector<float>();
    start_.input_units = std::vector<float>();
    canopy_ = Side();
    openmp_ = Side();
  }

  double run_canopy(Runtime& rt, const Placement& where) override {
    reset(canopy_);
    const std::int64_t rows = start_.inputs + 1;
    ::rodinia::backprop::InputLayer layer;
    layer.units = rt.wrap<float>(units_.data(), rows, read_only() | named("input_units"));
    layer.weights = rt.wrap<float, 2>(canopy_.weights.data(), Shape(rows, Network::kRow), named("input_weights"));
    layer.previous_weights =
        rt.wrap<float, 2>(canopy_.previous.data(), Shape(rows, Network::kRow), named("input_prev_weights"));
    layer.hidden_delta = rt.array<float>(kHidden + 1, named("hidden_delta"));
    const auto start = std::chrono::steady_clock::now();
    trainer_.train(rt, layer, canopy_.net, {where.location, where.policy});
    layer.weights.host_read();
    layer.previous_weights.host_read();
    return seconds_since(start);
  }

  double run_openmp() override {
    reset(openmp_);
    const std::int64_t rows = start_.inputs + 1;
    const auto start = std::chrono::steady_clock::now();
    std::array<float, kHidden> sums{};
    openmp::backprop_forward(openmp_.weights.data(), units_.data(), rows, sums.data());
    ::rodinia::backprop::train_host_part(openmp_.net, sums);
    openmp::backprop_adjust(openmp_.weights.data(), openmp_.previous.data(), openmp_.net.hidden_delta.data(),
                            units_.data(), rows);
    return seconds_since(start);
  }

  // The forward sums run over the input units in a different order on the
  // two sides (float sums, reassociated), so units and weights are compared
  // within 1e-4 relative (1e-5 absolute near zero); at these sizes the hidden
  // units saturate and the step is the same on both sides up to rounding.
  std::string check() const override {
    if (canopy_.weights.size() == 0 || canopy_.weights.size() != openmp_.weights.size()) return "no output to compare";
    const Network& a = canopy_.net;
    const Network& b = openmp_.net;
    std::string problem = compare("hidden units", a.hidden_units.data(), b.hidden_units.data(), a.hidden_units.size());
    if (problem.empty())
      problem = compare("output units", a.output_units.data(), b.output_units.data(), a.output_units.size());
    if (problem.empty())
      problem = compare("hidden deltas", a.hidden_delta.data(), b.hidden_delta.data(), a.hidden_delta.size());
    if (problem.empty())
      problem = compare("hidden weights", a.hidden_weights.data(), b.hidden_weights.data(), a.hidden_weights.size());
    if (problem.empty())
      problem = compare("input weights", canopy_.weights.data(), openmp_.weights.data(), canopy_.weights.size());
    if (problem.empty())
      problem = compare("input momentum", canopy_.previous.data(), openmp_.previous.data(), canopy_.previous.size());
    return problem;
  }

 private:
  void reset(Side& side) const {
    side.weights.assign(start_.input_weights);
    side.previous.zeros(start_.input_weights.size());
    side.net.inputs = start_.inputs;
    side.net.hidden_units = start_.hidden_units;
    side.net.output_units = start_.output_units;
    side.net.hidden_delta = start_.hidden_delta;
    side.net.output_delta = start_.output_delta;
    side.net.target = start_.target;
    side.net.hidden_weights = start_.hidden_weights;
    side.net.hidden_prev_weights = start_.hidden_prev_weights;
  }

  static std::string compare(const char* what, const float* mine, const float* theirs, std::size_t count) {
    for (std::size_t k = 0; k < count; ++k) {
      const double d = std::fabs(double(mine[k]) - double(theirs[k]));
      if (d <= 1e-5 || d <= 1e-4 * std::fabs(double(theirs[k]))) continue;
      char text[160];
      std::snprintf(text, sizeof text, "%s differ at [%zu]: %.7g vs %.7g", what, k, double(mine[k]), double(theirs[k]));
      return text;
    }
    return "";
  }

  Network start_;
  Floats units_;
  ::rodinia::backprop::Trainer trainer_;
  Side canopy_, openmp_;
};

const Registration registration(6, [] { return std::make_unique<BackpropWorkload>(); });

}  // namespace

}  // namespace canopy::bench::rodinia
