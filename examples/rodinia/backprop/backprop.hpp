// Back-propagation (Rodinia's backprop) on Canopy: one training step of a
// network with one hidden layer of 16 units and one output unit, shared by
// the backprop program, canopy-bench and the tests.
//
// As in Rodinia, the work is in the input layer: the forward pass sums, for
// each of the 16 hidden units, the weighted inputs over every input unit, and
// the weight adjustment updates every input weight and its momentum. Those
// two are regions over the input units (one point per input unit, the 16
// hidden units unrolled while tracing): the forward pass is a reduction with
// 16 sums, the adjustment writes the point's row of weights. The hidden and
// output layers (17 x 2 weights) and the error terms are computed on the
// host between the two, as Rodinia computes them.
//
// Weights are stored as Rodinia stores them: (inputs + 1) rows of 17 (row 0
// and column 0 are the bias units), row-major.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <tuple>
#include <vector>

#include <canopy/canopy.hpp>

#include "rodinia/common/rodinia.hpp"

namespace rodinia::backprop {

/// Hidden units (Rodinia's network has 16; its code says they cannot change).
inline constexpr int kHidden = 16;
/// Output units.
inline constexpr int kOutput = 1;
/// Learning rate and momentum, as Rodinia's ETA and MOMENTUM (doubles there).
inline constexpr double kEta = 0.3, kMomentum = 0.3;

/// Where the regions run and how they split.
struct Where {
  std::string location;  ///< empty: where the arrays are (their Most Common Descendant)
  std::string policy = "static";
};

/// Rodinia's BPNN with flat arrays. Unit arrays have a bias unit at [0];
/// weight matrices are (units below + 1) x (units above + 1), row-major.
struct Network {
  std::int64_t inputs = 0;
  Vector<float> input_units;          ///< inputs + 1
  Vector<float> hidden_units;         ///< kHidden + 1
  Vector<float> output_units;         ///< kOutput + 1
  Vector<float> hidden_delta;         ///< kHidden + 1
  Vector<float> output_delta;         ///< kOutput + 1
  Vector<float> target;               ///< kOutput + 1
  Vector<float> input_weights;        ///< (inputs + 1) x (kHidden + 1)
  Vector<float> hidden_weights;       ///< (kHidden + 1) x (kOutput + 1)
  Vector<float> input_prev_weights;   ///< as input_weights, zero at first
  Vector<float> hidden_prev_weights;  ///< as hidden_weights, zero at first
  float output_error = 0, hidden_error = 0;

  /// Row stride of input_weights: kHidden + 1.
  static constexpr std::int64_t kRow = kHidden + 1;
};

/// The network Rodinia's backprop builds for `inputs` input units: the C
/// library's generator seeded with 7 draws the input weights row by row, then
/// the hidden weights, then the input units (each rand() / RAND_MAX in
/// float); momentum weights start at zero and the target is 0.1.
inline Network create(std::int64_t inputs) {
  Network net;
  net.inputs = inputs;
  auto draw = [] { return static_cast<float>(std::rand()) / static_cast<float>(RAND_MAX); };
  std::srand(7);
  net.input_weights.resize(static_cast<std::size_t>((inputs + 1) * Network::kRow));
  for (auto& w : net.input_weights) w = draw();
  net.hidden_weights.resize(static_cast<std::size_t>((kHidden + 1) * (kOutput + 1)));
  for (auto& w : net.hidden_weights) w = draw();
  net.input_prev_weights.assign(net.input_weights.size(), 0.0f);
  net.hidden_prev_weights.assign(net.hidden_weights.size(), 0.0f);
  net.target.assign(kOutput + 1, 0.1f);
  net.input_units.assign(static_cast<std::size_t>(inputs + 1), 0.0f);
  for (std::int64_t k = 1; k <= inputs; ++k) net.input_units[static_cast<std::size_t>(k)] = draw();
  net.input_units[0] = 1.0f;  // the bias unit, as bpnn_layerforward sets it
  net.hidden_units.assign(kHidden + 1, 0.0f);
  net.output_units.assign(kOutput + 1, 0.0f);
  net.hidden_delta.assign(kHidden + 1, 0.0f);
  net.output_delta.assign(kOutput + 1, 0.0f);
  return net;
}

/// Rodinia's squashing function, the logistic sigmoid (in double, as there).
inline float squash(float x) { return static_cast<float>(1.0 / (1.0 + std::exp(-static_cast<double>(x)))); }

/// The host part of a training step, after the input layer's forward sums
/// (`hidden_sums[j-1]` for hidden unit j): the hidden units, the output layer,
/// both error terms and the hidden-to-output weight adjustment, each as
/// Rodinia computes it. Leaves net.hidden_delta ready for the input weights.
inline void train_host_part(Network& net, const std::array<float, kHidden>& hidden_sums) {
  net.hidden_units[0] = 1.0f;
  for (int j = 1; j <= kHidden; ++j) net.hidden_units[j] = squash(hidden_sums[static_cast<std::size_t>(j - 1)]);
  // Hidden to output, forward.
  for (int j = 1; j <= kOutput; ++j) {
    float sum = 0;
    for (int k = 0; k <= kHidden; ++k) sum += net.hidden_weights[k * (kOutput + 1) + j] * net.hidden_units[k];
    net.output_units[j] = squash(sum);
  }
  // Output error.
  float output_error = 0;
  for (int j = 1; j <= kOutput; ++j) {
    const float o = net.output_units[j], t = net.target[j];
    net.output_delta[j] = static_cast<float>(o * (1.0 - o) * (t - o));
    output_error += std::fabs(net.output_delta[j]);
  }
  net.output_error = output_error;
  // Hidden error.
  float hidden_error = 0;
  for (int j = 1; j <= kHidden; ++j) {
    const float h = net.hidden_units[j];
    float sum = 0;
    for (int k = 1; k <= kOutput; ++k) sum += net.output_delta[k] * net.hidden_weights[j * (kOutput + 1) + k];
    net.hidden_delta[j] = static_cast<float>(h * (1.0 - h) * sum);
    hidden_error += std::fabs(net.hidden_delta[j]);
  }
  net.hidden_error = hidden_error;
  // Hidden to output weights, with momentum.
  for (int j = 1; j <= kOutput; ++j) {
    for (int k = 0; k <= kHidden; ++k) {
      const auto at = static_cast<std::size_t>(k * (kOutput + 1) + j);
      const float change = static_cast<float>(kEta * net.output_delta[j] * net.hidden_units[k] +
                                              kMomentum * net.hidden_prev_weights[at]);
      net.hidden_weights[at] += change;
      net.hidden_prev_weights[at] = change;
    }
  }
}

/// The input layer's arrays on the runtime.
struct InputLayer {
  canopy::Array<float> units;                ///< inputs + 1, units[0] = 1
  canopy::Array<float, 2> weights;           ///< (inputs + 1) x 17
  canopy::Array<float, 2> previous_weights;  ///< (inputs + 1) x 17
  canopy::Array<float> hidden_delta;         ///< 17
};

/// The Canopy implementation: the two input-layer regions.
class Trainer {
 public:
  using Sum = canopy::Sum<float>;
  using ForwardKernel = canopy::Kernel<void(canopy::In<float, 2>, canopy::In<float>, Sum, Sum, Sum, Sum, Sum, Sum, Sum,
                                            Sum, Sum, Sum, Sum, Sum, Sum, Sum, Sum, Sum)>;
  using AdjustKernel =
      canopy::Kernel<void(canopy::InOut<float, 2>, canopy::InOut<float, 2>, canopy::In<float>, canopy::In<float>)>;

  Trainer() : forward_(forward_kernel()), adjust_(adjust_kernel()) {}

  /// The forward sums of the 16 hidden units over every input unit (waits
  /// for the region: the host needs them).
  std::array<float, kHidden> forward(canopy::Runtime& rt, const InputLayer& layer, const Where& where) const {
    auto region = rt.region(forward_);
    region.over(layer.units.size()).policy(where.policy);
    if (!where.location.empty()) region.at(where.location);
    const auto sums = region.reduce(layer.weights, layer.units);
    return std::apply([](auto... s) { return std::array<float, kHidden>{s...}; }, sums);
  }

  /// Queues the adjustment of the input weights from layer.hidden_delta;
  /// returns at once (Runtime::pause waits).
  void adjust(canopy::Runtime& rt, const InputLayer& layer, const Where& where) const {
    auto region = rt.region(adjust_);
    region.over(layer.units.size()).policy(where.policy);
    if (!where.location.empty()) region.at(where.location);
    region.launch(layer.weights, layer.previous_weights, layer.hidden_delta, layer.units);
  }

  /// One training step as Rodinia's bpnn_train_kernel: the input layer on
  /// the runtime, the rest on the host (`net` holds the host's part; its
  /// input arrays are not used). Waits for the step to finish.
  void train(canopy::Runtime& rt, const InputLayer& layer, Network& net, const Where& where) const {
    const auto sums = forward(rt, layer, where);
    train_host_part(net, sums);
    {
      auto delta = layer.hidden_delta.host();
      for (int j = 0; j <= kHidden; ++j) delta[j] = net.hidden_delta[j];
    }
    adjust(rt, layer, where);
    rt.pause();
  }

 private:
  // sum_j += weights(k, j) * units[k] for the 16 hidden units j, one point per input unit k.
  static ForwardKernel forward_kernel() {
    using namespace canopy;
    return ForwardKernel("backprop_forward",
                         [](In<float, 2> weights, In<float> units, Sum s1, Sum s2, Sum s3, Sum s4, Sum s5, Sum s6,
                            Sum s7, Sum s8, Sum s9, Sum s10, Sum s11, Sum s12, Sum s13, Sum s14, Sum s15, Sum s16) {
                           Idx k = index(0);
                           Var<float> unit("unit", units[k]);
                           const Sum* sums[kHidden] = {&s1, &s2,  &s3,  &s4,  &s5,  &s6,  &s7,  &s8,
                                                       &s9, &s10, &s11, &s12, &s13, &s14, &s15, &s16};
                           for (int j = 1; j <= kHidden; ++j) *sums[j - 1] += weights(k, j) * unit;
                         },
                         {"weights", "units", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10", "s11", "s12",
                          "s13", "s14", "s15", "s16"});
  }

  // Rodinia's bpnn_adjust_weights for the input layer, one point per input
  // unit k: change = eta * delta[j] * units[k] + momentum * previous(k, j) in
  // double, weights(k, j) += change, previous(k, j) = change. Every element
  // is read into a local before any is written, so the compiler can treat
  // the 16 columns as one vector.
  static AdjustKernel adjust_kernel() {
    using namespace canopy;
    return AdjustKernel("backprop_adjust",
                        [](InOut<float, 2> weights, InOut<float, 2> previous, In<float> delta, In<float> units) {
                          Idx k = index(0);
                          Var<double> unit("unit", cast<double>(units[k]));
                          // Reserved up front: copying a Var (as a growing vector would)
                          // declares a new local in the kernel.
                          std::vector<Var<float>> change, weight;
                          change.reserve(kHidden);
                          weight.reserve(kHidden);
                          for (int j = 1; j <= kHidden; ++j) {
                            change.emplace_back("change" + std::to_string(j),
                                                cast<float>(kEta * cast<double>(delta[j]) * unit +
                                                            kMomentum * cast<double>(previous(k, j))));
                            weight.emplace_back("weight" + std::to_string(j), weights(k, j));
                          }
                          for (int j = 1; j <= kHidden; ++j) weights(k, j) = weight[j - 1] + change[j - 1];
                          for (int j = 1; j <= kHidden; ++j) previous(k, j) = change[j - 1];
                        },
                        {"weights", "previous", "delta", "units"});
  }

  ForwardKernel forward_;
  AdjustKernel adjust_;
};

}  // namespace rodinia::backprop
