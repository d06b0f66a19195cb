// rodinia-openmp: the project's OpenMP ports of the Rodinia programs
// (tools/bench/rodinia/*_openmp.cpp, -O3 -march=native) as standalone
// programs, for `canopy-bench rodinia --whole-process`, which runs each one
// and the Canopy example of the same name as separate processes on the same
// input files. Each reads and writes what its example does, with the
// example's own readers and writers, and starts no Canopy runtime; only what
// it uses of Canopy's libraries is linked (the error type the readers throw).
//
//   rodinia-openmp hotspot <rows> <cols> <steps> <threads> <temp_file> <power_file> <output_file>
//   rodinia-openmp srad_v2 <rows> <cols> <y1> <y2> <x1> <x2> <threads> <lambda> <iterations> [--output FILE]
//   rodinia-openmp pathfinder <cols> <rows>
//   rodinia-openmp lud -s N | -i FILE
//   rodinia-openmp nw <dim> <penalty> <threads>
//   rodinia-openmp gaussian -s N | -f FILE
//   rodinia-openmp backprop <inputs>
//   rodinia-openmp kmeans -i FILE
//   rodinia-openmp nn <filelist> -r K -lat LAT -lng LNG
//   rodinia-openmp bfs <input_file>
//   rodinia-openmp lavaMD -boxes1d B
#include <array>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "../bench/rodinia/bfs_openmp.hpp"
#include "../bench/rodinia/hotspot_baselines.hpp"
#include "../bench/rodinia/kmeans_openmp.hpp"
#include "../bench/rodinia/lavaMD_openmp.hpp"
#include "../bench/rodinia/nn_openmp.hpp"
#include "../bench/rodinia/openmp_ports.hpp"
#include "../bench/rodinia/pathfinder_baselines.hpp"
#include "../bench/rodinia/srad_v2_baselines.hpp"
#include "rodinia/backprop/backprop.hpp"
#include "rodinia/bfs/bfs.hpp"
#include "rodinia/gaussian/gaussian.hpp"
#include "rodinia/hotspot/hotspot.hpp"
#include "rodinia/kmeans/kmeans.hpp"
#include "rodinia/lavaMD/lavaMD.hpp"
#include "rodinia/lud/lud.hpp"
#include "rodinia/nn/nn.hpp"
#include "rodinia/nw/nw.hpp"
#include "rodinia/pathfinder/pathfinder.hpp"
#include "rodinia/srad_v2/srad_v2.hpp"

namespace {

namespace ports = canopy::bench::rodinia;
using Args = std::vector<std::string>;

/// Integer argument `k`; throws, naming it, when it is absent or not an integer.
long long integer(const Args& a, std::size_t k) {
  if (k >= a.size()) throw std::runtime_error("argument " + std::to_string(k + 1) + " is missing");
  std::size_t used = 0;
  long long value = 0;
  try {
    value = std::stoll(a[k], &used);
  } catch (const std::exception&) {
  }
  if (used == 0 || used != a[k].size())
    throw std::runtime_error("argument " + std::to_string(k + 1) + " ('" + a[k] + "') is not an integer");
  return value;
}

/// Integer argument `k`, which must be `least` or more (a size, a count).
long long at_least(const Args& a, std::size_t k, long long least) {
  const long long value = integer(a, k);
  if (value < least)
    throw std::runtime_error("argument " + std::to_string(k + 1) + " is " + std::to_string(value) + "; give " +
                             std::to_string(least) + " or more");
  return value;
}

/// The value after `flag`, or `otherwise`.
std::string option(const Args& a, const std::string& flag, const std::string& otherwise = "") {
  for (std::size_t k = 0; k + 1 < a.size(); ++k)
    if (a[k] == flag) return a[k + 1];
  return otherwise;
}

void report(const char* what, std::chrono::steady_clock::time_point start) {
  std::printf("%s: %.6f s\n", what, rodinia::seconds_since(start));
}

int hotspot(const Args& a) {
  const auto rows = at_least(a, 0, 1), cols = at_least(a, 1, 1);
  at_least(a, 2, 0);
  const auto temperature = rodinia::hotspot::read_values(a.at(4), rows * cols);
  const auto power = rodinia::hotspot::read_values(a.at(5), rows * cols);
  const auto c = rodinia::hotspot::Coefficients::of(rows, cols);
  const ports::hotspot_baseline::Problem problem{rows,
                                                 cols,
                                                 temperature.data(),
                                                 power.data(),
                                                 c.cap_1,
                                                 c.rx_1,
                                                 c.ry_1,
                                                 c.rz_1,
                                                 rodinia::hotspot::kAmbient,
                                                 static_cast<int>(integer(a, 2))};
  std::vector<float> result;
  std::printf("Total time: %.3f seconds\n", ports::hotspot_baseline::run_openmp(problem, result));
  rodinia::hotspot::write_output(a.at(6), result);
  return 0;
}

int srad_v2(const Args& a) {
  const auto rows = at_least(a, 0, 1), cols = at_least(a, 1, 1);
  if (integer(a, 2) < 0 || integer(a, 4) < 0 || integer(a, 2) > integer(a, 3) || integer(a, 4) > integer(a, 5) ||
      integer(a, 3) >= rows || integer(a, 5) >= cols)
    throw std::runtime_error("the region of interest rows " + a[2] + ".." + a[3] + ", columns " + a[4] + ".." + a[5] +
                             " is not inside the " + a[0] + "x" + a[1] + " image");
  at_least(a, 8, 0);
  const std::vector<float> image = rodinia::srad_v2::generate(rows, cols);
  const ports::srad_v2_baseline::Problem problem{rows,
                                                 cols,
                                                 image.data(),
                                                 integer(a, 2),
                                                 integer(a, 3),
                                                 integer(a, 4),
                                                 integer(a, 5),
                                                 std::stof(a.at(7)),
                                                 static_cast<int>(integer(a, 8))};
  std::vector<float> result;
  std::printf("Computation: %.3f seconds\n", ports::srad_v2_baseline::run_openmp(problem, result));
  if (const std::string output = option(a, "--output"); !output.empty())
    rodinia::srad_v2::write_image(output, result, rows, cols);
  return 0;
}

int pathfinder(const Args& a) {
  const auto cols = at_least(a, 0, 1), rows = at_least(a, 1, 1);
  const rodinia::pathfinder::Walls walls = rodinia::pathfinder::generate(cols, rows);
  std::vector<std::int32_t> result;
  ports::pathfinder_baseline::run_openmp({walls.rows, walls.cols, walls.values.data()}, result);
  rodinia::pathfinder::print_row(walls.row(0), cols);
  rodinia::pathfinder::print_row(result.data(), cols);
  return 0;
}

int lud(const Args& a) {
  std::int64_t n = 0;
  std::vector<float> matrix =
      a.at(0) == "-i" ? rodinia::lud::read_matrix(a.at(1), n) : rodinia::lud::internal_matrix(n = integer(a, 1));
  const auto start = std::chrono::steady_clock::now();
  ports::openmp::lud_decompose(matrix.data(), n, 16);
  std::printf("Time consumed(ms): %lf\n", 1000 * rodinia::seconds_since(start));
  return 0;
}

int nw(const Args& a) {
  const auto dim = at_least(a, 0, 1);
  if (rodinia::nw::default_block(dim) <= 0)
    throw std::runtime_error("the sequence length " + a[0] + " must be a multiple of 16");
  const auto penalty = static_cast<std::int32_t>(integer(a, 1));
  auto problem = rodinia::nw::generate(dim, penalty);
  const auto start = std::chrono::steady_clock::now();
  ports::openmp::nw_align(problem.score.data(), problem.reference.data(), dim, rodinia::nw::default_block(dim),
                          penalty);
  report("Total time", start);
  const std::string text = rodinia::nw::traceback(problem.score.data(), problem.reference.data(), dim, penalty);
  std::FILE* out = std::fopen("result.txt", "w");
  if (!out) throw std::runtime_error("cannot write result.txt in the current directory");
  std::fwrite(text.data(), 1, text.size(), out);
  std::fclose(out);
  return 0;
}

int gaussian(const Args& a) {
  rodinia::gaussian::System system =
      a.at(0) == "-f" ? rodinia::gaussian::read_system(a.at(1)) : rodinia::gaussian::internal_system(integer(a, 1));
  const std::int64_t n = system.n;
  std::vector<float> m(static_cast<std::size_t>(n * n));
  const auto start = std::chrono::steady_clock::now();
  ports::openmp::gaussian_forward(system.a.data(), system.b.data(), m.data(), n);
  const auto solution = rodinia::gaussian::back_substitute(system.a.data(), system.b.data(), n);
  std::printf("\nTime total\t%f sec (x[0] = %g)\n", rodinia::seconds_since(start), double(solution.at(0)));
  return 0;
}

int backprop(const Args& a) {
  auto net = rodinia::backprop::create(integer(a, 0));
  const std::int64_t rows = net.inputs + 1;
  const auto start = std::chrono::steady_clock::now();
  std::array<float, rodinia::backprop::kHidden> sums{};
  ports::openmp::backprop_forward(net.input_weights.data(), net.input_units.data(), rows, sums.data());
  rodinia::backprop::train_host_part(net, sums);
  ports::openmp::backprop_adjust(net.input_weights.data(), net.input_prev_weights.data(), net.hidden_delta.data(),
                                 net.input_units.data(), rows);
  std::printf("Output unit %g, output error %g, hidden error %g; %.6f seconds\n", double(net.output_units[1]),
              double(net.output_error), double(net.hidden_error), rodinia::seconds_since(start));
  return 0;
}

int kmeans(const Args& a) {
  const rodinia::kmeans::Points points = rodinia::kmeans::read_text(option(a, "-i"));
  constexpr int kClusters = 5;
  std::vector<float> centres;
  std::vector<std::int32_t> membership;
  const auto start = std::chrono::steady_clock::now();
  const int rounds = ports::openmp::kmeans(points.values.data(), points.count, points.features, kClusters, 0.001f,
                                           centres, membership);
  std::printf("\n================= Centroid Coordinates =================\n");
  for (int c = 0; c < kClusters; ++c) {
    std::printf("%d:", c);
    for (std::int64_t f = 0; f < points.features; ++f)
      std::printf(" %.2f", double(centres[static_cast<std::size_t>(c * points.features + f)]));
    std::printf("\n\n");
  }
  std::printf("Rounds: %d\n", rounds);
  report("Time for Entire Clustering", start);
  return 0;
}

int nn(const Args& a) {
  // As the example: the files a block of records at a time, those in
  // Rodinia's layout parsed in the parallel loop.
  namespace nn = rodinia::nn;
  const int k = static_cast<int>(std::stoll(option(a, "-r", "10")));
  const float latitude = std::stof(option(a, "-lat", "0")), longitude = std::stof(option(a, "-lng", "0"));
  std::vector<float> distances;
  nn::NearestSoFar best(k);
  auto found_of = [](const std::vector<std::pair<std::int64_t, float>>& pairs) {
    std::vector<nn::Neighbour> found;
    for (const auto& [record, distance] : pairs) found.push_back({record, distance});
    return found;
  };
  nn::RawBuffers buffers;
  nn::read_database_raw(
      a.at(0), nn::kSearchBlock, buffers,
      [&](const nn::RawRecords& raw) {
        distances.resize(static_cast<std::size_t>(raw.count));
        best.merge(found_of(ports::openmp::nearest_neighbours_in_text(raw.bytes(), raw.count, latitude, longitude, k,
                                                                      distances.data())),
                   raw.first, raw.count, [&](std::int64_t r) { return raw.line(r); });
      },
      [&](const nn::Records& part, std::int64_t first) {
        distances.resize(static_cast<std::size_t>(part.size()));
        best.merge(found_of(ports::openmp::nearest_neighbours(part.latitude.data(), part.longitude.data(), part.size(),
                                                              latitude, longitude, k, distances.data())),
                   first, part.size(), [&](std::int64_t r) { return part.line(r); });
      });
  for (const auto& f : best.best()) std::printf("%s --> Distance=%f\n", f.line.c_str(), double(f.neighbour.distance));
  return 0;
}

int bfs(const Args& a) {
  const rodinia::bfs::Graph graph = rodinia::bfs::read_graph(a.at(0));
  std::vector<std::int32_t> cost(static_cast<std::size_t>(graph.nodes()));
  const auto start = std::chrono::steady_clock::now();
  const int levels = ports::openmp::bfs(graph.starts.data(), graph.counts.data(), graph.edges.data(), graph.nodes(),
                                        graph.source, cost.data());
  report("Compute time", start);
  std::printf("Levels: %d\n", levels);
  rodinia::bfs::write_result("result.txt", cost);
  return 0;
}

int lavaMD(const Args& a) {
  namespace md = rodinia::lavamd;
  const Args boxes{option(a, "-boxes1d")};
  if (boxes[0].empty()) throw std::runtime_error("give the boxes per side with -boxes1d B");
  const md::System system = md::generate(static_cast<int>(at_least(boxes, 0, 1)));
  std::vector<double> forces(system.positions.size());
  const auto start = std::chrono::steady_clock::now();
  ports::openmp::lavamd(system.positions.data(), system.charges.data(), system.neighbours.data(),
                        system.neighbour_count.data(), system.boxes(), md::kParticles, md::kMostBoxes,
                        2.0 * md::kAlpha * md::kAlpha, forces.data());
  report("Total time", start);
  md::write_result("result.txt", forces);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::map<std::string, std::function<int(const Args&)>> programs{
      {"hotspot", hotspot}, {"srad_v2", srad_v2},   {"pathfinder", pathfinder}, {"lud", lud},
      {"nw", nw},           {"gaussian", gaussian}, {"backprop", backprop},     {"kmeans", kmeans},
      {"nn", nn},           {"bfs", bfs},           {"lavaMD", lavaMD}};
  const auto program = argc > 1 ? programs.find(argv[1]) : programs.end();
  if (program == programs.end()) {
    std::fprintf(stderr, "usage: rodinia-openmp <program> <its arguments>; programs:");
    for (const auto& [name, run] : programs) std::fprintf(stderr, " %s", name.c_str());
    std::fprintf(stderr, "\n");
    return 2;
  }
  try {
    return program->second(Args(argv + 2, argv + argc));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rodinia-openmp %s: %s\n", argv[1], e.what());
    return 1;
  }
}
