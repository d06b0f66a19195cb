// Rodinia's lavaMD on Canopy: reads the same command line as Rodinia 3.1's
// lavaMD (the input is generated, as Rodinia does, here with a fixed seed)
// and writes result.txt with every particle's v, x, y, z, as Rodinia does
// when built with OUTPUT. It can run where --at and --policy say, and check
// itself against the same sums on the host (--verify).
//
//   lavaMD -cores 4 -boxes1d 10
//   lavaMD -boxes1d 4 --verify
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "../common/rodinia.hpp"
#include "lavaMD.hpp"

namespace {

constexpr const char* kProgram = "lavaMD";
constexpr const char* kUsage =
    "lavaMD [-cores N] -boxes1d B [options]\n"
    "  -cores N        Rodinia's thread count (accepted; Canopy runs on the leaves of its tree)\n"
    "  -boxes1d B      boxes per side of the cube (B^3 boxes of 100 particles)\n"
    "  --generate      accepted for symmetry: the particles are always generated (fixed seed)\n"
    "  --seed S        the seed of the generated particles (default 2)\n"
    "  --output FILE   where the results go (default result.txt; 'none' writes nothing)\n"
    "  --at LOCATION   run the region at LOCATION (default: where the arrays are)\n"
    "  --policy P      how the boxes are split over the leaves (default static)\n"
    "  --verify        also compute the sums on the host and compare";

struct Options {
  long long cores = 1, boxes1d = 0, seed = 2;
  std::string output = "result.txt", location, policy = "static";
  bool verify = false;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) rodinia::usage_error(kProgram, arg + " needs a value", kUsage);
      return argv[++i];
    };
    if (arg == "-cores")
      o.cores = rodinia::parse_integer(kProgram, "-cores", value(), kUsage, 1);
    else if (arg == "-boxes1d")
      o.boxes1d = rodinia::parse_integer(kProgram, "-boxes1d", value(), kUsage, 1);
    else if (arg == "--generate")
      continue;
    else if (arg == "--seed")
      o.seed = rodinia::parse_integer(kProgram, "--seed", value(), kUsage, 0);
    else if (arg == "--output")
      o.output = value();
    else if (arg == "--at")
      o.location = value();
    else if (arg == "--policy")
      o.policy = value();
    else if (arg == "--verify")
      o.verify = true;
    else
      rodinia::usage_error(kProgram, "unknown argument '" + arg + "'", kUsage);
  }
  if (o.boxes1d == 0) rodinia::usage_error(kProgram, "-boxes1d is required", kUsage);
  if (o.boxes1d > 1000) rodinia::usage_error(kProgram, "-boxes1d above 1000 does not fit in memory", kUsage);
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  namespace md = rodinia::lavamd;
  const Options o = parse(argc, argv);
  try {
    std::printf("Configuration used: cores = %lld, boxes1d = %lld\n", o.cores, o.boxes1d);
    const md::System system = md::generate(static_cast<int>(o.boxes1d), static_cast<std::uint64_t>(o.seed));
    canopy::Runtime rt;
    md::Simulation simulation(rt, o.location, o.policy);
    std::vector<double> forces;
    const auto start = std::chrono::steady_clock::now();
    simulation.run(system, forces);
    std::printf("Particles: %lld in %lld boxes\n", static_cast<long long>(system.particles()),
                static_cast<long long>(system.boxes()));
    std::printf("Total time: %.6f s\n", rodinia::seconds_since(start));
    if (o.output != "none") {
      md::write_result(o.output, forces);
      std::printf("Results stored in %s\n", o.output.c_str());
    }
    if (o.verify) {
      const double difference = md::largest_difference(forces, md::forces_serially(system));
      // The same operations in the same order; a compiler may still fuse a
      // multiply and an add on either side.
      if (!(difference <= 1e-12)) {
        std::printf("Verification: FAILED (results differ from the host's by %g of the largest magnitude)\n",
                    difference);
        return 1;
      }
      std::printf("Verification: ok (results within %g of the largest magnitude of the host's)\n", difference);
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", kProgram, e.what());
    return 1;
  }
}
