// backprop: Rodinia's back-propagation training step on Canopy. Reads
// Rodinia's command line, builds the same network (the C library's generator
// seeded with 7) and trains it one step, as Rodinia does.
//
//   backprop <num_of_input_elements> [--generate] [--check] [--policy P]
//            [--at LOCATION] [--stats]
//
// The network is always generated, as in Rodinia; --generate is accepted for
// symmetry with the other programs. Rodinia writes no output file; this
// program prints the output unit and the two error terms.
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "rodinia/backprop/backprop.hpp"
#include "rodinia/common/rodinia.hpp"

namespace {

constexpr const char* kUsage =
    "backprop <num_of_input_elements> [--generate] [--check] [--policy P] [--at LOCATION] [--stats]\n"
    "  --generate     the network is always generated as Rodinia does (seed 7)\n"
    "  --check        compare the step with a serial computation\n"
    "  --policy P     how each region splits over the leaves (default static)\n"
    "  --at LOCATION  where the regions run (default: where the arrays are)\n"
    "  --stats        print the runtime's statistics at the end";

// The same step with the input layer in plain serial C++.
void train_serially(rodinia::backprop::Network& net) {
  using rodinia::backprop::kHidden;
  constexpr std::int64_t row = rodinia::backprop::Network::kRow;
  std::array<float, kHidden> sums{};
  for (std::int64_t k = 0; k <= net.inputs; ++k)
    for (int j = 1; j <= kHidden; ++j)
      sums[static_cast<std::size_t>(j - 1)] +=
          net.input_weights[static_cast<std::size_t>(k * row + j)] * net.input_units[static_cast<std::size_t>(k)];
  rodinia::backprop::train_host_part(net, sums);
  for (std::int64_t k = 0; k <= net.inputs; ++k)
    for (int j = 1; j <= kHidden; ++j) {
      const auto at = static_cast<std::size_t>(k * row + j);
      const float change =
          static_cast<float>(rodinia::backprop::kEta * double(net.hidden_delta[static_cast<std::size_t>(j)]) *
                                 double(net.input_units[static_cast<std::size_t>(k)]) +
                             rodinia::backprop::kMomentum * double(net.input_prev_weights[at]));
      net.input_weights[at] += change;
      net.input_prev_weights[at] = change;
    }
}

// The largest difference between `a` and `b` relative to max(|b|, 1e-3).
double worst_difference(const float* a, const float* b, std::size_t n) {
  double worst = 0;
  for (std::size_t k = 0; k < n; ++k)
    worst = rodinia::worse(worst, std::fabs(double(a[k]) - double(b[k])) / std::max(std::fabs(double(b[k])), 1e-3));
  return worst;
}

}  // namespace

int main(int argc, char** argv) {
  const char* program = "backprop";
  std::vector<const char*> positional;
  bool check = false, stats = false;
  rodinia::backprop::Where where;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) rodinia::usage_error(program, arg + " needs a value", kUsage);
      return argv[++i];
    };
    if (arg == "--generate") {
      // The network is generated in any case.
    } else if (arg == "--check") {
      check = true;
    } else if (arg == "--policy") {
      where.policy = value();
    } else if (arg == "--at") {
      where.location = value();
    } else if (arg == "--stats") {
      stats = true;
    } else if (arg == "-h" || arg == "--help") {
      std::printf("usage: %s\n", kUsage);
      return 0;
    } else if (arg.size() > 1 && arg[0] == '-') {
      rodinia::usage_error(program, "unknown option '" + arg + "'", kUsage);
    } else {
      positional.push_back(argv[i]);
    }
  }
  if (positional.size() != 1) rodinia::usage_error(program, "expected <num_of_input_elements>", kUsage);
  const std::int64_t inputs = rodinia::parse_integer(program, "<num_of_input_elements>", positional[0], kUsage);

  try {
    using rodinia::backprop::kHidden;
    std::printf("Random number generator seed: 7\n");
    auto net = rodinia::backprop::create(inputs);
    std::printf("Input layer size : %lld\n", static_cast<long long>(inputs));
    // The serial check trains a copy of the untrained network; without
    // --check nothing is copied.
    std::optional<rodinia::backprop::Network> untrained;
    if (check) untrained = net;
    const std::int64_t rows = inputs + 1;
    canopy::Runtime rt;
    // The network's own memory, not a copy (rt.wrap): the process holds the
    // input layer's weights once, as Rodinia's program does.
    rodinia::backprop::InputLayer layer;
    layer.units =
        rt.wrap(net.input_units.data(), canopy::Shape(rows), canopy::named("input_units") | canopy::read_only());
    layer.weights = rt.wrap<float, 2>(net.input_weights.data(), canopy::Shape(rows, rodinia::backprop::Network::kRow),
                                      canopy::named("input_weights"));
    layer.previous_weights =
        rt.wrap<float, 2>(net.input_prev_weights.data(), canopy::Shape(rows, rodinia::backprop::Network::kRow),
                          canopy::named("input_prev_weights"));
    layer.hidden_delta = rt.array<float>(kHidden + 1, canopy::named("hidden_delta"));

    std::printf("Starting training kernel\n");
    std::printf("Performing Canopy computation\n");
    rodinia::backprop::Trainer trainer;
    auto& trained = net;
    const auto start = std::chrono::steady_clock::now();
    trainer.train(rt, layer, trained, where);
    const auto weights = layer.weights.host_read();
    const auto previous = layer.previous_weights.host_read();
    const double seconds = rodinia::seconds_since(start);
    std::printf("Training done\n");
    std::printf("Output unit %g, output error %g, hidden error %g; %.6f seconds\n", double(trained.output_units[1]),
                double(trained.output_error), double(trained.hidden_error), seconds);

    if (check) {
      auto& serial = *untrained;
      train_serially(serial);
      double worst = 0;
      for (double difference :
           {worst_difference(trained.hidden_units.data(), serial.hidden_units.data(), serial.hidden_units.size()),
            worst_difference(trained.output_units.data(), serial.output_units.data(), serial.output_units.size()),
            worst_difference(trained.hidden_weights.data(), serial.hidden_weights.data(), serial.hidden_weights.size()),
            worst_difference(weights.data(), serial.input_weights.data(), serial.input_weights.size()),
            worst_difference(previous.data(), serial.input_prev_weights.data(), serial.input_prev_weights.size())})
        worst = rodinia::worse(worst, difference);
      // The forward sums are float sums taken in another order than the
      // serial loop's: they agree to about 1e-6 relative per thousand terms.
      if (worst <= 1e-4)
        std::printf("Validation: ok\n");
      else
        std::printf("Validation: differs from a serial computation by %g (relative)\n", worst);
    }
    if (stats) std::printf("%s", rt.stats().to_text().c_str());
  } catch (const canopy::Error& e) {
    rodinia::report_error("backprop", e.what());
    return 1;
  }
  return 0;
}
