// Rodinia's kmeans in Canopy: points are assigned to their nearest centre,
// and the new centres are the means of the points assigned to each, until
// the number of points that change cluster is no larger than a threshold
// (or 500 rounds). Shared by the kmeans program and canopy-bench.
//
// Two regions per round. The first has one point per index: each point finds
// its nearest centre, and the number that changed cluster is a Sum
// reduction. On the CPU the points run as SIMD lanes, each reading its own
// row of features once per centre through a row block (see DESIGN.md, step
// 9), the centres (stored by feature) the same for every lane. The second
// has a list of blocks of consecutive points as its index range, so that
// sums can be kept per block: a block adds each point's features into the
// block's row of a scratch array, and at its end adds that row into `sums`
// and `counts`, arrays marked merge(MergeOp::Sum) with atomic_add (one atomic
// per cluster and feature per block, not per point, so that leaves do not
// fight over a few cache lines). The host reads the merged sums at the
// pause, divides, and writes the next centres. The points stay on the
// devices across rounds; each round moves only the centres in and the sums
// out.
#pragma once

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include <canopy/canopy.hpp>

#include "../common/rodinia.hpp"

namespace rodinia::kmeans {

/// Points to cluster, row-major: values[p * features + f].
struct Points {
  std::int64_t count = 0;
  std::int64_t features = 0;
  Vector<float> values;
};

/// What one clustering produced.
struct Clusters {
  std::vector<float> centres;            ///< [clusters][features], row-major
  std::vector<std::int32_t> membership;  ///< the cluster of each point
  int rounds = 0;                        ///< assignment rounds run
};

/// Rodinia's limit on rounds: the loop ends when `round++ < 500` fails.
inline constexpr int kRoundLimit = 500;

/// `count` points with `features` features in [0, 100): blobs around eight
/// random centres, each point in a random blob with a spread of a few units
/// (a fixed seed gives the same points everywhere). The first eight points
/// lie in different blobs, so that Rodinia's start (the first points as
/// centres) finds distinct blobs and the rounds end after a few.
inline Points generate(std::int64_t count, std::int64_t features, std::uint64_t seed = 7) {
  constexpr int kBlobs = 8;
  Random random(seed);
  std::vector<float> centres(static_cast<std::size_t>(kBlobs * features));
  for (auto& c : centres) c = static_cast<float>(random.uniform(15.0, 85.0));
  Points points{count, features, Vector<float>(static_cast<std::size_t>(count * features))};
  for (std::int64_t p = 0; p < count; ++p) {
    const std::int64_t blob = p < kBlobs ? p : random.below(kBlobs);
    for (std::int64_t f = 0; f < features; ++f) {
      // The sum of four uniform numbers: a bump of width about 6 around the centre.
      double offset = 0;
      for (int u = 0; u < 4; ++u) offset += random.uniform(-3.0, 3.0);
      const double v = centres[static_cast<std::size_t>(blob * features + f)] + offset;
      points.values[static_cast<std::size_t>(p * features + f)] = static_cast<float>(std::clamp(v, 0.0, 99.99));
    }
  }
  return points;
}

/// Reads Rodinia's text input: one point per line, an id then the features,
/// separated by spaces, tabs or commas; blank lines are skipped. Throws
/// std::runtime_error naming the file and line at fault.
inline Points read_text(const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "r");
  if (!file) throw std::runtime_error("cannot open '" + path + "' for reading");
  Points points;
  // Room, taken at once, for the values of a file whose values average 4
  // bytes or more with their separators (Rodinia's take 6 to 10): growing by
  // doubling would map, fault in and copy each larger block again. Only the
  // pages the values fill are touched; denser files grow from there, and so
  // does any file when the room cannot be had.
  if (std::fseek(file, 0, SEEK_END) == 0) {
    const long bytes = std::ftell(file);
    try {
      if (bytes > 0) points.values.reserve(static_cast<std::size_t>(bytes) / 4);
    } catch (const std::bad_alloc&) {
    }
    std::rewind(file);
  }
  std::string line;
  std::int64_t line_number = 0;
  auto fail = [&](const std::string& what) {
    std::fclose(file);
    throw std::runtime_error(path + ":" + std::to_string(line_number) + ": " + what);
  };
  char buffer[65536];
  while (std::fgets(buffer, sizeof buffer, file)) {
    line = buffer;
    while (!line.empty() && line.back() != '\n' && std::fgets(buffer, sizeof buffer, file)) line += buffer;
    ++line_number;
    // Parsed in place with std::from_chars (several times faster than
    // strtof, and correctly rounded alike); the features go straight into
    // the points.
    const std::size_t first = points.values.size();
    const char* at = line.data();
    const char* const end = at + line.size();
    bool id_seen = false;
    for (;;) {
      while (at < end && (*at == ' ' || *at == '\t' || *at == ',' || *at == '\n' || *at == '\r' || *at == '+')) ++at;
      if (at == end) break;
      float value = 0;
      const auto [stop, error] = std::from_chars(at, end, value);
      if (error != std::errc())
        fail("expected a number at '" + std::string(at, std::min<std::size_t>(20, end - at)) + "'");
      if (id_seen) points.values.push_back(value);
      id_seen = true;
      at = stop;
    }
    if (!id_seen) continue;  // a blank line
    const auto found = static_cast<std::int64_t>(points.values.size() - first);
    if (points.count == 0) points.features = found;
    if (found != points.features || found == 0)
      fail("expected an id and " + std::to_string(points.features) + " features, found " + std::to_string(found) +
           " features");
    ++points.count;
  }
  std::fclose(file);
  if (points.count == 0) throw std::runtime_error("'" + path + "' holds no points");
  return points;
}

/// Reads Rodinia's binary input: int32 points, int32 features, then the
/// features as float32, row-major.
inline Points read_binary(const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (!file) throw std::runtime_error("cannot open '" + path + "' for reading");
  std::int32_t header[2] = {0, 0};
  Points points;
  bool ok = std::fread(header, sizeof(std::int32_t), 2, file) == 2 && header[0] > 0 && header[1] > 0;
  // The header must agree with the file's size, before anything is
  // allocated from it (a text file's first bytes asked for 1.7e18 bytes).
  std::error_code size_error;
  const auto bytes = std::filesystem::file_size(path, size_error);
  ok =
      ok && !size_error && bytes == sizeof header + sizeof(float) * std::uint64_t(header[0]) * std::uint64_t(header[1]);
  if (ok) {
    points.count = header[0];
    points.features = header[1];
    points.values.resize(static_cast<std::size_t>(points.count * points.features));
    ok = std::fread(points.values.data(), sizeof(float), points.values.size(), file) == points.values.size();
  }
  std::fclose(file);
  if (!ok)
    throw std::runtime_error("'" + path + "' is not a kmeans binary file (int32 points, int32 features, floats)");
  return points;
}

/// Writes `points` in Rodinia's text format (ids from 1, two decimals, as
/// the values were generated with).
inline void write_text(const std::string& path, const Points& points) {
  std::FILE* file = std::fopen(path.c_str(), "w");
  if (!file) throw std::runtime_error("cannot open '" + path + "' for writing");
  for (std::int64_t p = 0; p < points.count; ++p) {
    std::fprintf(file, "%lld", static_cast<long long>(p + 1));
    for (std::int64_t f = 0; f < points.features; ++f)
      std::fprintf(file, " %.2f", double(points.values[static_cast<std::size_t>(p * points.features + f)]));
    std::fputc('\n', file);
  }
  if (std::fclose(file) != 0) throw std::runtime_error("cannot write '" + path + "'");
}

/// Writes `points` in Rodinia's binary format.
inline void write_binary(const std::string& path, const Points& points) {
  std::FILE* file = std::fopen(path.c_str(), "wb");
  if (!file) throw std::runtime_error("cannot open '" + path + "' for writing");
  const std::int32_t header[2] = {static_cast<std::int32_t>(points.count), static_cast<std::int32_t>(points.features)};
  bool ok = std::fwrite(header, sizeof(std::int32_t), 2, file) == 2 &&
            std::fwrite(points.values.data(), sizeof(float), points.values.size(), file) == points.values.size();
  ok = std::fclose(file) == 0 && ok;
  if (!ok) throw std::runtime_error("cannot write '" + path + "'");
}

/// The squared distance between point `p` and centre `c`, as the kernel
/// computes it (features in order, in float).
inline float squared_distance(const Points& points, std::int64_t p, const std::vector<float>& centres, std::int64_t c) {
  float sum = 0;
  for (std::int64_t f = 0; f < points.features; ++f) {
    const float d = points.values[static_cast<std::size_t>(p * points.features + f)] -
                    centres[static_cast<std::size_t>(c * points.features + f)];
    sum += d * d;
  }
  return sum;
}

/// Rodinia's root mean squared error of a clustering: the distance of each
/// point to its nearest centre, squared, averaged, square-rooted (on the host).
inline float rmse(const Points& points, const std::vector<float>& centres) {
  const std::int64_t clusters = points.features ? static_cast<std::int64_t>(centres.size()) / points.features : 0;
  double total = 0;
  for (std::int64_t p = 0; p < points.count; ++p) {
    float best = std::numeric_limits<float>::max();
    for (std::int64_t c = 0; c < clusters; ++c) best = std::min(best, squared_distance(points, p, centres, c));
    total += best;
  }
  return static_cast<float>(std::sqrt(total / double(points.count)));
}

/// The same rounds on the host alone, one point at a time (what --verify
/// compares with): the first `clusters` points as centres, each point to the
/// first nearest centre, sums in point order.
inline Clusters cluster_serially(const Points& points, int clusters, float threshold) {
  const std::int64_t k = clusters, nf = points.features;
  Clusters result;
  result.centres.assign(points.values.begin(), points.values.begin() + k * nf);
  result.membership.assign(static_cast<std::size_t>(points.count), -1);
  std::vector<float> sums(static_cast<std::size_t>(k * nf));
  std::vector<std::int64_t> counts(static_cast<std::size_t>(k));
  int round = 0;
  double delta = 0;
  do {
    delta = 0;
    std::fill(sums.begin(), sums.end(), 0.0f);
    std::fill(counts.begin(), counts.end(), 0);
    for (std::int64_t p = 0; p < points.count; ++p) {
      float best_distance = std::numeric_limits<float>::max();
      std::int32_t best = 0;
      for (std::int64_t c = 0; c < k; ++c) {
        const float distance = squared_distance(points, p, result.centres, c);
        if (distance < best_distance) {
          best_distance = distance;
          best = static_cast<std::int32_t>(c);
        }
      }
      if (result.membership[static_cast<std::size_t>(p)] != best) delta += 1;
      result.membership[static_cast<std::size_t>(p)] = best;
      counts[static_cast<std::size_t>(best)] += 1;
      for (std::int64_t f = 0; f < nf; ++f)
        sums[static_cast<std::size_t>(best * nf + f)] += points.values[static_cast<std::size_t>(p * nf + f)];
    }
    ++result.rounds;
    for (std::int64_t c = 0; c < k; ++c) {
      if (counts[static_cast<std::size_t>(c)] <= 0) continue;
      for (std::int64_t f = 0; f < nf; ++f)
        result.centres[static_cast<std::size_t>(c * nf + f)] =
            sums[static_cast<std::size_t>(c * nf + f)] / static_cast<float>(counts[static_cast<std::size_t>(c)]);
    }
  } while (delta > threshold && round++ < kRoundLimit);
  return result;
}

/// Empty when `a` and `b` are the same clustering: equal rounds and
/// memberships, centres equal to a relative `tolerance` (their sums are
/// taken in different orders); else what differs.
inline std::string compare(const Clusters& a, const Clusters& b, double tolerance = 1e-4) {
  if (a.rounds != b.rounds)
    return "rounds differ (" + std::to_string(a.rounds) + " and " + std::to_string(b.rounds) + ")";
  if (a.membership.size() != b.membership.size() || a.centres.size() != b.centres.size()) return "sizes differ";
  std::int64_t moved = 0;
  for (std::size_t p = 0; p < a.membership.size(); ++p) moved += a.membership[p] != b.membership[p];
  if (moved) return std::to_string(moved) + " points are in other clusters";
  for (std::size_t i = 0; i < a.centres.size(); ++i) {
    const double x = a.centres[i], y = b.centres[i];
    if (!(std::fabs(x - y) <= tolerance * std::max(1.0, std::fabs(y))))
      return "centre value " + std::to_string(i) + " differs: " + std::to_string(x) + " and " + std::to_string(y);
  }
  return "";
}

/// The kmeans rounds on a Canopy runtime.
class Clustering {
 public:
  /// Regions run at `location` (empty: where the arrays are, the root) with
  /// `policy`.
  Clustering(canopy::Runtime& rt, std::string location = "", std::string policy = "static")
      : rt_(rt), location_(std::move(location)), policy_(std::move(policy)) {}

  /// Clusters `points` into `clusters` groups, starting from the first
  /// `clusters` points as centres (as Rodinia does), until no more than
  /// `threshold` points change cluster in a round.
  Clusters run(const Points& points, int clusters, float threshold) {
    Clusters result;
    run(points, clusters, threshold, result);
    return result;
  }

  /// The same into `result`, whose memory is reused: a program clustering
  /// again and again (Rodinia's -l, several cluster counts) gets the points'
  /// memberships without new pages each time (a first touch of a page costs
  /// microseconds: 800,000 memberships are 800 pages).
  void run(const Points& points, int clusters, float threshold, Clusters& result) {
    using namespace canopy;
    if (clusters < 1 || clusters > points.count)
      throw Error("kmeans: " + std::to_string(clusters) + " clusters asked of " + std::to_string(points.count) +
                  " points; give from 1 to the number of points");
    const std::int64_t k = clusters, nf = points.features;
    const std::int64_t blocks = block_count(points.count);
    const std::int64_t block = (points.count + blocks - 1) / blocks;

    // The points are the caller's memory: wrapped, never copied on the CPU.
    auto features = rt_.wrap<float, 2>(const_cast<float*>(points.values.data()), Shape(points.count, nf),
                                       read_only() | named("features"));
    // The centres by feature ([features][clusters]): the same element for
    // every point at each step, one for all the SIMD lanes.
    auto centres = rt_.array<float, 2>(Shape(nf, k), named("centres"));
    auto membership = rt_.array<std::int32_t>(points.count, named("membership"));
    auto block_sums = rt_.array<float, 3>(Shape(blocks, k, nf), named("block_sums"));
    auto block_counts = rt_.array<std::int32_t, 2>(Shape(blocks, k), named("block_counts"));
    auto sums = rt_.array<float, 2>(Shape(k, nf), merge(MergeOp::Sum) | named("sums"));
    auto counts = rt_.array<std::int32_t>(k, merge(MergeOp::Sum) | named("counts"));

    std::vector<float> current(points.values.begin(), points.values.begin() + k * nf);
    std::fill(membership.host().begin(), membership.host().end(), -1);

    result.rounds = 0;
    int round = 0;
    double delta = 0;
    do {
      auto by_feature = centres.host();
      for (std::int64_t i = 0; i < k; ++i)
        for (std::int64_t f = 0; f < nf; ++f) by_feature(f, i) = current[static_cast<std::size_t>(i * nf + f)];
      auto s = sums.host();
      std::fill(s.begin(), s.end(), 0.0f);
      auto c = counts.host();
      std::fill(c.begin(), c.end(), 0);
      delta =
          static_cast<double>(placed(rt_.region(nearest())).over(points.count).reduce(features, centres, membership));
      placed(rt_.region(sum_blocks()))
          .over(blocks)
          .launch(features, membership, block_sums, block_counts, sums, counts, points.count, block);
      ++result.rounds;
      // The merged sums: each centre moves to the mean of its points (a centre
      // without points stays where it was).
      auto new_sums = sums.host_read();
      auto new_counts = counts.host_read();
      for (std::int64_t i = 0; i < k; ++i) {
        if (new_counts[i] <= 0) continue;
        for (std::int64_t f = 0; f < nf; ++f)
          current[static_cast<std::size_t>(i * nf + f)] = new_sums(i, f) / static_cast<float>(new_counts[i]);
      }
    } while (delta > threshold && round++ < kRoundLimit);

    result.centres = current;
    auto m = membership.host_read();
    result.membership.assign(m.begin(), m.end());
  }

  /// The blocks a round's range has for `points` points: enough for every
  /// leaf and thread to have several, few enough that the per-block atomic
  /// adds stay rare.
  static std::int64_t block_count(std::int64_t points) { return std::clamp<std::int64_t>(points / 512, 1, 512); }

 private:
  using NearestKernel = canopy::Kernel<void(canopy::In<float, 2>, canopy::In<float, 2>, canopy::InOut<std::int32_t>,
                                            canopy::Sum<std::int32_t>)>;
  using SumKernel = canopy::Kernel<void(
      canopy::In<float, 2>, canopy::In<std::int32_t>, canopy::InOut<float, 3>, canopy::InOut<std::int32_t, 2>,
      canopy::InOut<float, 2>, canopy::InOut<std::int32_t>, canopy::Val<std::int64_t>, canopy::Val<std::int64_t>)>;

  // One point per index: its nearest centre (the first of equals, the
  // features in order, in float, as Rodinia adds them), and whether it moved.
  // Each point reads its own row of features once per centre; the CPU runs
  // the points as SIMD lanes, reading the rows through a row block.
  static const NearestKernel& nearest() {
    using namespace canopy;
    static const NearestKernel kernel(
        "kmeans_nearest",
        [](In<float, 2> features, In<float, 2> centres, InOut<std::int32_t> membership, Sum<std::int32_t> changed) {
          Idx p = index(0);
          Value<std::int64_t> nf = centres.extent(0), clusters = centres.extent(1);
          Var<float> best_distance = std::numeric_limits<float>::max();
          Var<std::int32_t> best = 0;
          For(0, clusters, [&](Idx c) {
            Var<float> distance = 0.0f;
            For(0, nf, [&](Idx f) {
              Value<float> d = features(p, f) - centres(f, c);
              distance += d * d;
            });
            If(distance < best_distance, [&] {
              best_distance = distance;
              best = cast<std::int32_t>(c);
            });
          });
          If(membership[p] != best, [&] { changed += 1; });
          membership[p] = best;
        },
        {"features", "centres", "membership", "changed"});
    return kernel;
  }

  // One block of points per index: the features of its points summed per
  // cluster in the block's row of a scratch array (in point order), then
  // added into the merged arrays (one atomic per cluster and feature).
  static const SumKernel& sum_blocks() {
    using namespace canopy;
    static const SumKernel kernel(
        "kmeans_sums",
        [](In<float, 2> features, In<std::int32_t> membership, InOut<float, 3> block_sums,
           InOut<std::int32_t, 2> block_counts, InOut<float, 2> sums, InOut<std::int32_t> counts,
           Val<std::int64_t> points, Val<std::int64_t> block) {
          Idx b = index(0);
          Value<std::int64_t> clusters = block_sums.extent(1), nf = block_sums.extent(2);
          Value<std::int64_t> first = b * block;
          Value<std::int64_t> size = min(block, points - first);
          For(0, clusters, [&](Idx c) {
            block_counts(b, c) = 0;
            For(0, nf, [&](Idx f) { block_sums(b, c, f) = 0.0f; });
          });
          For(0, size, [&](Idx j) {
            Idx p = first + j;
            Value<std::int32_t> m = membership[p];
            block_counts(b, m) += 1;
            For(0, nf, [&](Idx f) { block_sums(b, m, f) += features(p, f); });
          });
          For(0, clusters, [&](Idx c) {
            atomic_add(counts[c], block_counts(b, c));
            For(0, nf, [&](Idx f) { atomic_add(sums(c, f), block_sums(b, c, f)); });
          });
        },
        {"features", "membership", "block_sums", "block_counts", "sums", "counts", "points", "block"});
    return kernel;
  }

  template <class Region>
  Region placed(Region region) const {
    region.policy(policy_);
    if (!location_.empty()) region.at(location_);
    return region;
  }

  canopy::Runtime& rt_;
  std::string location_;
  std::string policy_;
};

}  // namespace rodinia::kmeans
