// Rodinia's lavaMD (examples/rodinia/lavaMD) at a small size against a
// serial loop written here: on cpu0, on opencl0, and split over both (numa0
// with percentage:[50,50]). Each result is a sum of up to 2700 terms taken
// in the same order as the reference, with the same exp; the reference's
// compiler may fuse multiplies and adds, and the device's exp may differ in
// its last bit, so results agree to 1e-12 of the largest magnitude (the sums
// mix signs, so single values may be near zero).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "hetero/hetero_support.hpp"
#include "rodinia/lavaMD/lavaMD.hpp"

using namespace canopy;
using namespace canopy::hetero_tests;
namespace md = rodinia::lavamd;

namespace {

// Rodinia's loops: for each home box, each neighbour box (the box first),
// each particle of the home box, each particle of the neighbour box.
std::vector<double> reference(const md::System& s) {
  std::vector<double> f(static_cast<std::size_t>(s.particles() * 4), 0.0);
  const double a2 = 2.0 * md::kAlpha * md::kAlpha;
  const int b = s.boxes1d;
  for (int z = 0; z < b; ++z)
    for (int y = 0; y < b; ++y)
      for (int x = 0; x < b; ++x) {
        const int home = (z * b + y) * b + x;
        std::vector<int> boxes{home};
        for (int dz = -1; dz <= 1; ++dz)
          for (int dy = -1; dy <= 1; ++dy)
            for (int dx = -1; dx <= 1; ++dx) {
              const int nz = z + dz, ny = y + dy, nx = x + dx;
              if ((dz || dy || dx) && nz >= 0 && ny >= 0 && nx >= 0 && nz < b && ny < b && nx < b)
                boxes.push_back((nz * b + ny) * b + nx);
            }
        for (int box : boxes)
          for (int i = 0; i < md::kParticles; ++i) {
            const double* a = &s.positions[static_cast<std::size_t>((home * md::kParticles + i) * 4)];
            double* out = &f[static_cast<std::size_t>((home * md::kParticles + i) * 4)];
            for (int j = 0; j < md::kParticles; ++j) {
              const double* p = &s.positions[static_cast<std::size_t>((box * md::kParticles + j) * 4)];
              const double q = s.charges[static_cast<std::size_t>(box * md::kParticles + j)];
              const double r2 = a[0] + p[0] - (a[1] * p[1] + a[2] * p[2] + a[3] * p[3]);
              const double vij = std::exp(-(a2 * r2));
              out[0] += q * vij;
              out[1] += q * (2.0 * vij * (a[1] - p[1]));
              out[2] += q * (2.0 * vij * (a[2] - p[2]));
              out[3] += q * (2.0 * vij * (a[3] - p[3]));
            }
          }
      }
  return f;
}

const md::System& system3() {
  static const md::System s = md::generate(3);
  return s;
}

}  // namespace

TEST_CASE("rodinia lavaMD: the boxes and their neighbour lists follow Rodinia's numbering") {
  const md::System s = md::generate(3);
  CHECK(s.boxes() == 27);
  CHECK(s.neighbour_count[0] == 8);    // a corner: itself and 7
  CHECK(s.neighbour_count[1] == 12);   // an edge: itself and 11
  CHECK(s.neighbour_count[13] == 27);  // the centre: itself and 26
  CHECK(s.neighbours[13 * md::kMostBoxes] == 13);
  CHECK(s.neighbours[13 * md::kMostBoxes + 1] == 0);    // z-1, y-1, x-1 first
  CHECK(s.neighbours[13 * md::kMostBoxes + 26] == 26);  // z+1, y+1, x+1 last
  int off_grid = 0;                                     // values are tenths from 0.1 to 1.0
  for (double v : s.positions) off_grid += !(v >= 0.1 && v <= 1.0 && std::fabs(v * 10 - std::round(v * 10)) < 1e-9);
  CHECK(off_grid == 0);
}

TEST_CASE("rodinia lavaMD: on cpu0 the results equal a serial loop") {
  Runtime rt;
  if (!has_leaves(rt.hierarchy(), {"cpu0"})) return;
  md::Simulation simulation(rt, "cpu0");
  std::vector<double> forces;
  simulation.run(system3(), forces);
  CHECK(md::largest_difference(forces, reference(system3())) <= 1e-12);
  const md::System one = md::generate(1, 9);  // a single box: no neighbours
  simulation.run(one, forces);
  CHECK(md::largest_difference(forces, reference(one)) <= 1e-12);
}

TEST_CASE("rodinia lavaMD: on opencl0 the results equal a serial loop") {
  Runtime rt;
  if (!has_leaves(rt.hierarchy(), {"opencl0"})) return;
  md::Simulation simulation(rt, "opencl0");
  std::vector<double> forces;
  simulation.run(system3(), forces);
  CHECK(md::largest_difference(forces, reference(system3())) <= 1e-12);
}

TEST_CASE("rodinia lavaMD: split over cpu0 and opencl0 (numa0, percentage:[50,50]) the results equal a serial loop") {
  Runtime rt;
  const Hierarchy discovered = rt.hierarchy();
  if (!has_leaves(discovered, {"cpu0", "opencl0"})) return;
  use_leaves(rt, discovered, {"cpu0", "opencl0"});
  md::Simulation simulation(rt, "numa0", "percentage:[50,50]");
  std::vector<double> forces;
  simulation.run(system3(), forces);
  CHECK(md::largest_difference(forces, reference(system3())) <= 1e-12);
  CHECK(joined(pieces_of(last_region(rt))) == "cpu0[0,14) opencl0[14,27)");
}
