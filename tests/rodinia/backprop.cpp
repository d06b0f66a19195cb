// backprop at a small size: Canopy's training step equals the step written
// here with plain loops, within a float tolerance, on cpu0, on opencl0 and
// split over both (at numa0, percentage:[50,50]), for a network small enough
// that its hidden units do not saturate and one large enough that they do.
// Without an OpenCL device the OpenCL cases say so and pass.
//
// Tolerance: the forward sums add the same products in another order (per
// thread, per vector lane, per device, then combined), so each sum of n
// float terms may differ from the serial one by about n * 2^-24 relative;
// the units, deltas and weights derived from them are compared within 1e-5
// relative (1e-7 absolute near zero).
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "hetero/hetero_support.hpp"
#include "rodinia/backprop/backprop.hpp"

using namespace canopy;
using rodinia::backprop::kHidden;
using rodinia::backprop::Network;

namespace {

// Bias unit included: input weights are rows of 17.
void train_here(Network& net) {
  std::array<float, kHidden> sums{};
  for (std::int64_t k = 0; k <= net.inputs; ++k)
    for (int j = 1; j <= kHidden; ++j)
      sums[std::size_t(j - 1)] +=
          net.input_weights[std::size_t(k * Network::kRow + j)] * net.input_units[std::size_t(k)];
  rodinia::backprop::train_host_part(net, sums);
  for (std::int64_t k = 0; k <= net.inputs; ++k)
    for (int j = 1; j <= kHidden; ++j) {
      const std::size_t at = std::size_t(k * Network::kRow + j);
      const float change =
          float(0.3 * double(net.hidden_delta[std::size_t(j)]) * double(net.input_units[std::size_t(k)]) +
                0.3 * double(net.input_prev_weights[at]));
      net.input_weights[at] += change;
      net.input_prev_weights[at] = change;
    }
}

// Trains a copy of `start` on the runtime; its input arrays hold the result.
Network train_on(Runtime& rt, const Network& start, const rodinia::backprop::Where& where) {
  Network net = start;
  const std::int64_t rows = net.inputs + 1;
  rodinia::backprop::InputLayer layer;
  layer.units = rt.array<float>(rows, named("input_units") | read_only());
  layer.weights = rt.array<float, 2>(Shape(rows, Network::kRow), named("input_weights"));
  layer.previous_weights = rt.array<float, 2>(Shape(rows, Network::kRow), named("input_prev_weights"));
  layer.hidden_delta = rt.array<float>(kHidden + 1, named("hidden_delta"));
  std::memcpy(layer.units.host().data(), net.input_units.data(), net.input_units.size() * sizeof(float));
  std::memcpy(layer.weights.host().data(), net.input_weights.data(), net.input_weights.size() * sizeof(float));
  std::memcpy(layer.previous_weights.host().data(), net.input_prev_weights.data(),
              net.input_prev_weights.size() * sizeof(float));
  rodinia::backprop::Trainer().train(rt, layer, net, where);
  const auto w = layer.weights.host_read(), p = layer.previous_weights.host_read();
  net.input_weights.assign(w.begin(), w.end());
  net.input_prev_weights.assign(p.begin(), p.end());
  return net;
}

void check_close(const rodinia::Vector<float>& got, const rodinia::Vector<float>& expected, const char* what) {
  REQUIRE(got.size() == expected.size());
  std::size_t bad = 0;
  for (std::size_t k = 0; k < got.size(); ++k) {
    const double d = std::fabs(double(got[k]) - double(expected[k]));
    if (d > 1e-7 && d > 1e-5 * std::fabs(double(expected[k])) && bad++ == 0)
      MESSAGE(what << "[" << k << "]: " << got[k] << " vs " << expected[k]);
  }
  CHECK(bad == 0);
}

void check_step(const Network& got, const Network& expected) {
  check_close(got.hidden_units, expected.hidden_units, "hidden units");
  check_close(got.output_units, expected.output_units, "output units");
  check_close(got.hidden_delta, expected.hidden_delta, "hidden deltas");
  check_close(got.hidden_weights, expected.hidden_weights, "hidden weights");
  check_close(got.input_weights, expected.input_weights, "input weights");
  check_close(got.input_prev_weights, expected.input_prev_weights, "input momentum");
}

// One network trained on cpu0, opencl0 and split over both, against train_here.
void check_on_every_leaf(std::int64_t inputs) {
  Runtime rt;
  const Hierarchy discovered = rt.hierarchy();
  const Network start = rodinia::backprop::create(inputs);
  Network expected = start;
  train_here(expected);
  // Small networks learn (the hidden deltas are not zero); large ones saturate.
  const bool saturated =
      std::all_of(expected.hidden_units.begin() + 1, expected.hidden_units.end(), [](float h) { return h == 1.0f; });
  CHECK(saturated == (inputs > 100));
  CHECK((expected.hidden_error > 0) == !saturated);

  SUBCASE("cpu0") {
    REQUIRE(hetero_tests::has_leaves(discovered, {"cpu0"}));
    check_step(train_on(rt, start, {"cpu0", "static"}), expected);
  }
  SUBCASE("opencl0") {
    if (!hetero_tests::has_leaves(discovered, {"opencl0"})) return;
    check_step(train_on(rt, start, {"opencl0", "static"}), expected);
    CHECK(hetero_tests::pieces_of(hetero_tests::last_region(rt)) ==
          std::vector<std::string>{"opencl0[0," + std::to_string(inputs + 1) + ")"});
  }
  SUBCASE("split over cpu0 and opencl0") {
    if (!hetero_tests::has_leaves(discovered, {"cpu0", "opencl0"})) return;
    hetero_tests::use_leaves(rt, discovered, {"cpu0", "opencl0"});
    check_step(train_on(rt, start, {"numa0", "percentage:[50,50]"}), expected);
    const std::int64_t half = ((inputs + 1) * 50 + 50) / 100;
    CHECK(hetero_tests::pieces_of(hetero_tests::last_region(rt)) ==
          std::vector<std::string>{"cpu0[0," + std::to_string(half) + ")",
                                   "opencl0[" + std::to_string(half) + "," + std::to_string(inputs + 1) + ")"});
  }
}

}  // namespace

TEST_CASE("backprop: a serial training step on cpu0, opencl0 and split over both, 20 inputs (learning)") {
  check_on_every_leaf(20);
}

TEST_CASE("backprop: a serial training step on cpu0, opencl0 and split over both, 3000 inputs (saturated)") {
  check_on_every_leaf(3000);
}

TEST_CASE("backprop: Rodinia's network") {
  const Network net = rodinia::backprop::create(10);
  CHECK(net.input_units.size() == 11);
  CHECK(net.input_units[0] == 1.0f);
  CHECK(net.input_weights.size() == 11 * 17);
  CHECK(net.hidden_weights.size() == 17 * 2);
  CHECK(net.target[1] == 0.1f);
  CHECK(std::all_of(net.input_weights.begin(), net.input_weights.end(), [](float w) { return w >= 0 && w <= 1; }));
  CHECK(std::all_of(net.input_prev_weights.begin(), net.input_prev_weights.end(), [](float w) { return w == 0; }));
  // The same seed gives the same network.
  CHECK(rodinia::backprop::create(10).input_weights == net.input_weights);
  CHECK(rodinia::backprop::squash(0.0f) == 0.5f);
}
