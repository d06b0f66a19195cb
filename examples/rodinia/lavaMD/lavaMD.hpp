// Rodinia's lavaMD in Canopy: particles in a cube of boxes (100 per box)
// feel a potential and a force from every particle in their own box and the
// up to 26 boxes around it. Shared by the lavaMD program and canopy-bench.
//
// One region over (box, group of four particles): each point walks its box's
// neighbour list (the box itself first, then the neighbours in Rodinia's
// order) with a For loop, and the neighbour's particles with another,
// summing in locals for each of its particles, and writes their four results
// once. Each particle's sums run in Rodinia's order, so each result is the
// same floating-point arithmetic as Rodinia's loop.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include <canopy/canopy.hpp>

#include "../common/rodinia.hpp"

namespace rodinia::lavamd {

/// Particles per box, as in Rodinia.
inline constexpr int kParticles = 100;
/// A box and its neighbours: at most 27 boxes.
inline constexpr int kMostBoxes = 27;
/// Rodinia's alpha; the potential is exp(-2 alpha^2 r^2).
inline constexpr double kAlpha = 0.5;

/// The boxes and particles. Per particle, four values: v, x, y, z.
struct System {
  int boxes1d = 0;
  std::vector<double> positions;              ///< [boxes][kParticles][4]: v, x, y, z
  std::vector<double> charges;                ///< [boxes][kParticles]
  std::vector<std::int32_t> neighbours;       ///< [boxes][kMostBoxes]: the box itself, then its neighbours
  std::vector<std::int32_t> neighbour_count;  ///< [boxes]: entries of the list used (1 + neighbours)

  std::int64_t boxes() const { return std::int64_t(boxes1d) * boxes1d * boxes1d; }
  std::int64_t particles() const { return boxes() * kParticles; }
};

/// The system of `boxes1d`^3 boxes, with Rodinia's box numbering (x fastest)
/// and neighbour order (z, then y, then x offsets from -1 to 1), and random
/// values in {0.1, 0.2, ..., 1.0} as Rodinia draws them (fixed seed).
inline System generate(int boxes1d, std::uint64_t seed = 2) {
  System s;
  s.boxes1d = boxes1d;
  const std::int64_t b = boxes1d, boxes = s.boxes();
  s.neighbours.assign(static_cast<std::size_t>(boxes * kMostBoxes), 0);
  s.neighbour_count.assign(static_cast<std::size_t>(boxes), 0);
  for (std::int64_t z = 0; z < b; ++z)
    for (std::int64_t y = 0; y < b; ++y)
      for (std::int64_t x = 0; x < b; ++x) {
        const std::int64_t home = (z * b + y) * b + x;
        std::int32_t* list = &s.neighbours[static_cast<std::size_t>(home * kMostBoxes)];
        int count = 0;
        list[count++] = static_cast<std::int32_t>(home);
        for (int dz = -1; dz <= 1; ++dz)
          for (int dy = -1; dy <= 1; ++dy)
            for (int dx = -1; dx <= 1; ++dx) {
              const std::int64_t nz = z + dz, ny = y + dy, nx = x + dx;
              if ((dz == 0 && dy == 0 && dx == 0) || nz < 0 || ny < 0 || nx < 0 || nz >= b || ny >= b || nx >= b)
                continue;
              list[count++] = static_cast<std::int32_t>((nz * b + ny) * b + nx);
            }
        s.neighbour_count[static_cast<std::size_t>(home)] = count;
      }
  Random random(seed);
  auto tenth = [&] { return double(random.below(10) + 1) / 10.0; };
  s.positions.resize(static_cast<std::size_t>(s.particles() * 4));
  for (auto& value : s.positions) value = tenth();
  s.charges.resize(static_cast<std::size_t>(s.particles()));
  for (auto& q : s.charges) q = tenth();
  return s;
}

/// Writes the results as Rodinia's result.txt: "v, x, y, z" per particle.
inline void write_result(const std::string& path, const std::vector<double>& forces) {
  std::FILE* file = std::fopen(path.c_str(), "w");
  if (!file) throw std::runtime_error("cannot open '" + path + "' for writing");
  for (std::size_t p = 0; p + 3 < forces.size(); p += 4)
    std::fprintf(file, "%f, %f, %f, %f\n", forces[p], forces[p + 1], forces[p + 2], forces[p + 3]);
  if (std::fclose(file) != 0) throw std::runtime_error("cannot write '" + path + "'");
}

/// The same sums on the host alone, one particle at a time (what --verify
/// compares with).
inline std::vector<double> forces_serially(const System& s) {
  const double a2 = 2.0 * kAlpha * kAlpha;
  std::vector<double> forces(static_cast<std::size_t>(s.particles() * 4), 0.0);
  for (std::int64_t home = 0; home < s.boxes(); ++home)
    for (int i = 0; i < kParticles; ++i) {
      const double* a = &s.positions[static_cast<std::size_t>((home * kParticles + i) * 4)];
      double v = 0, fx = 0, fy = 0, fz = 0;
      for (int k = 0; k < s.neighbour_count[static_cast<std::size_t>(home)]; ++k) {
        const std::int64_t box = s.neighbours[static_cast<std::size_t>(home * kMostBoxes + k)];
        for (int j = 0; j < kParticles; ++j) {
          const double* b = &s.positions[static_cast<std::size_t>((box * kParticles + j) * 4)];
          const double q = s.charges[static_cast<std::size_t>(box * kParticles + j)];
          const double r2 = a[0] + b[0] - (a[1] * b[1] + a[2] * b[2] + a[3] * b[3]);
          const double vij = std::exp(-(a2 * r2));
          const double fs = 2.0 * vij;
          v += q * vij;
          fx += q * (fs * (a[1] - b[1]));
          fy += q * (fs * (a[2] - b[2]));
          fz += q * (fs * (a[3] - b[3]));
        }
      }
      double* out = &forces[static_cast<std::size_t>((home * kParticles + i) * 4)];
      out[0] = v, out[1] = fx, out[2] = fy, out[3] = fz;
    }
  return forces;
}

/// The largest difference between two results, relative to the largest
/// magnitude in `want` (the sums mix signs, so single values may be near zero).
inline double largest_difference(const std::vector<double>& got, const std::vector<double>& want) {
  if (got.size() != want.size()) return INFINITY;
  double scale = 0, worst = 0;
  for (double w : want) scale = std::fmax(scale, std::fabs(w));
  for (std::size_t i = 0; i < want.size(); ++i) worst = std::fmax(worst, std::fabs(got[i] - want[i]));
  return scale > 0 ? worst / scale : worst;
}

/// The interactions on a Canopy runtime.
class Simulation {
 public:
  /// Regions run at `location` (empty: where the arrays are, the root) with `policy`.
  Simulation(canopy::Runtime& rt, std::string location = "", std::string policy = "static")
      : rt_(rt), location_(std::move(location)), policy_(std::move(policy)) {}

  /// Every particle's v, x, y, z into `forces` (resized; the caller's memory).
  void run(const System& s, std::vector<double>& forces) {
    using namespace canopy;
    const std::int64_t boxes = s.boxes();
    forces.resize(static_cast<std::size_t>(s.particles() * 4));
    if (boxes == 0) return;
    auto positions = rt_.wrap<double, 3>(const_cast<double*>(s.positions.data()), Shape(boxes, kParticles, 4),
                                         read_only() | named("positions"));
    auto charges = rt_.wrap<double, 2>(const_cast<double*>(s.charges.data()), Shape(boxes, kParticles),
                                       read_only() | named("charges"));
    auto neighbours = rt_.wrap<std::int32_t, 2>(const_cast<std::int32_t*>(s.neighbours.data()),
                                                Shape(boxes, kMostBoxes), read_only() | named("neighbours"));
    auto counts =
        rt_.wrap(const_cast<std::int32_t*>(s.neighbour_count.data()), boxes, read_only() | named("neighbour_count"));
    auto out = rt_.wrap<double, 3>(forces.data(), Shape(boxes, kParticles, 4), named("forces"));
    auto region = rt_.region(interact()).over(boxes, kParticles / kGroup).policy(policy_);
    if (!location_.empty()) region.at(location_);
    region.launch(out, positions, charges, neighbours, counts, 2.0 * kAlpha * kAlpha);
    out.host_read();
  }

 private:
  using InteractKernel =
      canopy::Kernel<void(canopy::Out<double, 3>, canopy::In<double, 3>, canopy::In<double, 2>,
                          canopy::In<std::int32_t, 2>, canopy::In<std::int32_t>, canopy::Val<double>)>;

  // Particles of a box whose sums one point computes together: one pass over
  // the neighbours' particles serves all of them, and their exp calls are
  // independent work the CPU overlaps. Divides kParticles.
  static constexpr int kGroup = 4;

  // Point (home box, group of particles): the sums over the particles of the box's list.
  static const InteractKernel& interact() {
    using namespace canopy;
    static const InteractKernel kernel(
        "lavamd_interact",
        [](Out<double, 3> forces, In<double, 3> positions, In<double, 2> charges, In<std::int32_t, 2> neighbours,
           In<std::int32_t> counts, Val<double> a2) {
          Idx home = index(0), group = index(1);
          // The group's particles: their positions, and four sums each.
          std::vector<Value<std::int64_t>> particle;
          std::vector<std::array<Value<double>, 4>> a;
          std::vector<Var<double>> sum;
          sum.reserve(4 * kGroup);
          for (int g = 0; g < kGroup; ++g) {
            particle.push_back(group * kGroup + g);
            a.push_back({positions(home, particle[g], 0), positions(home, particle[g], 1),
                         positions(home, particle[g], 2), positions(home, particle[g], 3)});
            for (int c = 0; c < 4; ++c) sum.emplace_back(0.0);
          }
          For(0, counts[home], [&](Value<std::int32_t> k) {
            Value<std::int32_t> box = neighbours(home, k);
            For(0, kParticles, [&](Idx j) {
              Value<double> bv = positions(box, j, 0), bx = positions(box, j, 1), by = positions(box, j, 2),
                            bz = positions(box, j, 3);
              Value<double> q = charges(box, j);
              for (int g = 0; g < kGroup; ++g) {
                const auto& [av, ax, ay, az] = a[static_cast<std::size_t>(g)];
                Value<double> r2 = av + bv - (ax * bx + ay * by + az * bz);
                Value<double> vij = exp(-(a2 * r2));
                Value<double> fs = 2.0 * vij;
                Var<double>* s = &sum[static_cast<std::size_t>(4 * g)];
                s[0] += q * vij;
                s[1] += q * (fs * (ax - bx));
                s[2] += q * (fs * (ay - by));
                s[3] += q * (fs * (az - bz));
              }
            });
          });
          for (int g = 0; g < kGroup; ++g)
            for (int c = 0; c < 4; ++c) forces(home, particle[g], c) = sum[static_cast<std::size_t>(4 * g + c)];
        },
        {"forces", "positions", "charges", "neighbours", "counts", "a2"});
    return kernel;
  }

  canopy::Runtime& rt_;
  std::string location_;
  std::string policy_;
};

}  // namespace rodinia::lavamd
