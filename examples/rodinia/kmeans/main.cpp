// Rodinia's kmeans on Canopy: reads the same switches and input files as
// Rodinia 3.1's kmeans and prints the same report (centroid coordinates with
// -o, the RMSE with -r). It can also generate its input (--generate, fixed
// seed), run where --at and --policy say, and check itself against a serial
// run on the host (--verify).
//
//   kmeans -i points.txt [-m 5 -n 5 -t 0.001 -l 1 -b -r -o]
//   kmeans --generate 100000 --features 34 -i points.txt -o --verify
#include <chrono>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>

#include "../common/rodinia.hpp"
#include "kmeans.hpp"

namespace {

constexpr const char* kProgram = "kmeans";
constexpr const char* kUsage =
    "kmeans [switches] -i filename\n"
    "    -i filename      :file containing data to be clustered\n"
    "    -m max_nclusters :maximum number of clusters allowed    [default=5]\n"
    "    -n min_nclusters :minimum number of clusters allowed    [default=5]\n"
    "    -t threshold     :threshold value                       [default=0.001]\n"
    "    -l nloops        :iteration for each number of clusters [default=1]\n"
    "    -b               :input file is in binary format\n"
    "    -r               :calculate RMSE                        [default=off]\n"
    "    -o               :output cluster center coordinates     [default=off]\n"
    "    --generate N     :first write N generated points (fixed seed) to the -i file\n"
    "    --features F     :features of generated points          [default=34]\n"
    "    --at LOCATION    :run the regions at LOCATION           [default: where the arrays are]\n"
    "    --policy P       :how the points are split over leaves  [default=static]\n"
    "    --verify         :also cluster serially on the host and compare";

struct Options {
  std::string input;
  int max_clusters = 5, min_clusters = 5, loops = 1;
  float threshold = 0.001f;
  bool binary = false, rmse = false, output = false, verify = false;
  long long generate = 0, features = 34;
  std::string location, policy = "static";
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) rodinia::usage_error(kProgram, arg + " needs a value", kUsage);
      return argv[++i];
    };
    auto integer = [&](const char* what, long long least) {
      return rodinia::parse_integer(kProgram, what, value(), kUsage, least);
    };
    if (arg == "-i")
      o.input = value();
    else if (arg == "-m")
      o.max_clusters = static_cast<int>(integer("-m", 1));
    else if (arg == "-n")
      o.min_clusters = static_cast<int>(integer("-n", 1));
    else if (arg == "-t")
      o.threshold = static_cast<float>(rodinia::parse_number(kProgram, "-t", value(), kUsage));
    else if (arg == "-l")
      o.loops = static_cast<int>(integer("-l", 1));
    else if (arg == "-b")
      o.binary = true;
    else if (arg == "-r")
      o.rmse = true;
    else if (arg == "-o")
      o.output = true;
    else if (arg == "--generate")
      o.generate = integer("--generate", 1);
    else if (arg == "--features")
      o.features = integer("--features", 1);
    else if (arg == "--at")
      o.location = value();
    else if (arg == "--policy")
      o.policy = value();
    else if (arg == "--verify")
      o.verify = true;
    else
      rodinia::usage_error(kProgram, "unknown switch '" + arg + "'", kUsage);
  }
  if (o.input.empty()) rodinia::usage_error(kProgram, "no input file (-i filename)", kUsage);
  if (o.min_clusters > o.max_clusters)
    rodinia::usage_error(kProgram, "-n (minimum clusters) is above -m (maximum clusters)", kUsage);
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  namespace km = rodinia::kmeans;
  const Options o = parse(argc, argv);
  try {
    if (o.generate) {
      const km::Points generated = km::generate(o.generate, o.features);
      o.binary ? km::write_binary(o.input, generated) : km::write_text(o.input, generated);
      std::printf("Generated %lld points of %lld features into %s\n", o.generate, o.features, o.input.c_str());
    }
    const auto io_start = std::chrono::steady_clock::now();
    const km::Points points = o.binary ? km::read_binary(o.input) : km::read_text(o.input);
    const double io_seconds = rodinia::seconds_since(io_start);
    std::printf("\nI/O completed\n\nNumber of objects: %lld\nNumber of features: %lld\n",
                static_cast<long long>(points.count), static_cast<long long>(points.features));
    if (points.count < o.min_clusters) {
      std::printf("Error: min_nclusters(%d) > npoints(%lld) -- cannot proceed\n", o.min_clusters,
                  static_cast<long long>(points.count));
      return 1;
    }

    canopy::Runtime rt;
    km::Clustering clustering(rt, o.location, o.policy);
    // As Rodinia: every number of clusters from -n to -m, -l times each; the
    // centres shown are the last clustering's, the RMSE the lowest.
    km::Clusters last;
    int last_clusters = 0, best_clusters = 0, best_trial = 0;
    float best_rmse = std::numeric_limits<float>::max();
    const auto start = std::chrono::steady_clock::now();
    for (int clusters = o.min_clusters; clusters <= o.max_clusters && clusters <= points.count; ++clusters) {
      for (int trial = 0; trial < o.loops; ++trial) {
        clustering.run(points, clusters, o.threshold, last);
        last_clusters = clusters;
        if (o.rmse) {
          const float error = km::rmse(points, last.centres);
          if (error < best_rmse) {
            best_rmse = error;
            best_clusters = clusters;
            best_trial = trial;
          }
        }
      }
    }
    const double cluster_seconds = rodinia::seconds_since(start);

    if (o.min_clusters == o.max_clusters && o.output) {
      std::printf("\n================= Centroid Coordinates =================\n");
      for (int c = 0; c < last_clusters; ++c) {
        std::printf("%d:", c);
        for (std::int64_t f = 0; f < points.features; ++f)
          std::printf(" %.2f", double(last.centres[static_cast<std::size_t>(c * points.features + f)]));
        std::printf("\n\n");
      }
    }
    std::printf("Number of Iteration: %d\n", o.loops);
    std::printf("Time for I/O: %.5fsec\n", io_seconds);
    std::printf("Time for Entire Clustering: %.5fsec\n", cluster_seconds);
    if (o.min_clusters != o.max_clusters) {
      if (o.rmse) std::printf("Best number of clusters is %d\n", best_clusters);
    } else if (o.rmse) {
      if (o.loops != 1)
        std::printf("Number of trials to approach the best RMSE of %.3f is %d\n", double(best_rmse), best_trial + 1);
      else
        std::printf("Root Mean Squared Error: %.3f\n", double(best_rmse));
    }
    std::printf("Rounds of the last clustering: %d\n", last.rounds);

    if (o.verify) {
      const km::Clusters serial = km::cluster_serially(points, last_clusters, o.threshold);
      const std::string problem = km::compare(last, serial);
      if (!problem.empty()) {
        std::printf("Verification: FAILED (against a serial run on the host: %s)\n", problem.c_str());
        return 1;
      }
      std::printf("Verification: ok (same memberships and centres as a serial run on the host)\n");
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", kProgram, e.what());
    return 1;
  }
}
