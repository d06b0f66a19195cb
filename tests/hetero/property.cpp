// The coherence directory through the real runtime, against a plain C++
// model: random sequences of regions (write-only, read-only, in place,
// stencils in 1-D and 2-D, a conditional write, a gather), each over a
// random range with a random policy, at the node's NUMA memory (split over
// cpu0, opencl0 and opencl1) or on one leaf, mixed with host reads, host
// writes and changes of the tree that take devices away and bring them
// back. Every kernel is integer, so every value must match the model
// exactly. Half the sequences compare every array after every step (each
// comparison a host_read(), which leaves device copies current); the other
// half compare only at host reads and at the end, so that elements current
// on one device only live on across many regions.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "hetero_support.hpp"

using namespace canopy;
using namespace canopy::hetero_tests;

namespace {

constexpr std::int32_t kMask = (1 << 20) - 1;   // values stay below 2^20, so no sum overflows
constexpr std::int64_t kArrays = 4;             // 1-D arrays
constexpr std::int64_t kRows = 40, kCols = 12;  // the two 2-D arrays

using Vec = std::vector<std::int32_t>;

const Kernel<void(Out<std::int32_t>, Val<std::int32_t>)>& fill() {
  static const Kernel kernel("p_fill",
                             [](Out<std::int32_t> x, Val<std::int32_t> seed) {
                               Idx i = index(0);
                               x[i] = (cast<std::int32_t>(i) * 7 + seed) & kMask;
                             },
                             {"x", "seed"});
  return kernel;
}

const Kernel<void(InOut<std::int32_t>, Val<std::int32_t>)>& update() {
  static const Kernel kernel("p_update",
                             [](InOut<std::int32_t> x, Val<std::int32_t> add) {
                               Idx i = index(0);
                               x[i] = (x[i] * 3 + add) & kMask;
                             },
                             {"x", "add"});
  return kernel;
}

// dst[i+1] from src[i..i+2]: a piece over [b,e) reads [b,e+2), writes [b+1,e+1).
const Kernel<void(Out<std::int32_t>, In<std::int32_t>)>& stencil() {
  static const Kernel kernel("p_stencil",
                             [](Out<std::int32_t> dst, In<std::int32_t> src) {
                               Idx i = index(0);
                               dst[i + 1] = (src[i] + 2 * src[i + 1] + src[i + 2]) & kMask;
                             },
                             {"dst", "src"});
  return kernel;
}

// Writes only where src is odd: the pieces must copy dst in first.
const Kernel<void(Out<std::int32_t>, In<std::int32_t>)>& halve_odd() {
  static const Kernel kernel("p_halve_odd",
                             [](Out<std::int32_t> dst, In<std::int32_t> src) {
                               Idx i = index(0);
                               If((src[i] & 1) == 1, [&] { dst[i] = src[i] >> 1; });
                             },
                             {"dst", "src"});
  return kernel;
}

// Reads anywhere in src.
const Kernel<void(Out<std::int32_t>, In<std::int32_t>)>& gather() {
  static const Kernel kernel("p_gather",
                             [](Out<std::int32_t> dst, In<std::int32_t> src) {
                               Idx i = index(0);
                               dst[i] = src[(i * 7) % src.extent(0)] ^ 5;
                             },
                             {"dst", "src"});
  return kernel;
}

const Kernel<void(In<std::int32_t>, Sum<std::int64_t>)>& sum() {
  static const Kernel kernel(
      "p_sum", [](In<std::int32_t> x, Sum<std::int64_t> total) { total += cast<std::int64_t>(x[index(0)]); },
      {"x", "total"});
  return kernel;
}

const Kernel<void(Out<std::int32_t, 2>, In<std::int32_t, 2>)>& stencil_2d() {
  static const Kernel kernel("p_stencil_2d",
                             [](Out<std::int32_t, 2> dst, In<std::int32_t, 2> src) {
                               Idx i = index(0), j = index(1);
                               Var<std::int32_t> v = src(i, j);
                               If(i > 0 && i < src.extent(0) - 1 && j > 0 && j < src.extent(1) - 1,
                                  [&] { v = (src(i - 1, j) + src(i + 1, j) + src(i, j - 1) + src(i, j + 1)) & kMask; });
                               dst(i, j) = v;
                             },
                             {"dst", "src"});
  return kernel;
}

// "none", or how many elements differ and the first few: "3 of 100 differ:
// [7] 12 (want 5), ...".
std::string differences(const Vec& got, const Vec& want) {
  if (got.size() != want.size()) return "sizes differ";
  std::int64_t count = 0;
  std::string first;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (got[i] == want[i]) continue;
    if (++count <= 5)
      first += " [" + std::to_string(i) + "] " + std::to_string(got[i]) + " (want " + std::to_string(want[i]) + ")";
  }
  if (count == 0) return "none";
  return std::to_string(count) + " of " + std::to_string(got.size()) + " differ:" + first;
}

// One random sequence and its model.
class Sequence {
 public:
  Sequence(Runtime& rt, const Hierarchy& discovered, std::uint32_t seed, bool check_every_step)
      : rt_(rt), discovered_(discovered), rng_(seed), check_every_step_(check_every_step) {
    n_ = 40 + pick(300);
    for (std::int64_t k = 0; k < kArrays; ++k) {
      arrays_.push_back(rt.array<std::int32_t>(n_, at("numa0") | named("p" + std::to_string(k))));
      model_.push_back(Vec(std::size_t(n_), 0));
    }
    for (int k = 0; k < 2; ++k) {
      grids_.push_back(rt.array<std::int32_t, 2>(Shape(kRows, kCols), at("numa0") | named("g" + std::to_string(k))));
      grid_model_.push_back(Vec(std::size_t(kRows * kCols), 0));
    }
    leaves_ = leaves_of_kind(discovered, LocationKind::Cpu);
    for (auto& l : leaves_of_kind(discovered, accelerator_kind())) leaves_.push_back(l);
    use_leaves(rt_, discovered_, leaves_);
    current_ = leaves_;
  }

  void run(int steps) {
    for (int step = 0; step < steps; ++step) {
      one_step();
      if (check_every_step_) check_all();
    }
    check_all();
  }

  /// What the sequence did so far, one line per step (for failure messages).
  const std::string& log() const { return log_; }

 private:
  std::int64_t pick(std::int64_t n) { return std::uniform_int_distribution<std::int64_t>(0, n - 1)(rng_); }

  // Where the next region runs, and with which policy: usually the NUMA node
  // (split over the current leaves), sometimes one leaf.
  std::pair<std::string, std::string> placement(std::int64_t rows) {
    if (pick(5) == 0) return {current_[std::size_t(pick(std::int64_t(current_.size())))], "static"};
    const std::size_t children = current_.size();
    switch (pick(5)) {
      case 0: return {"", "static"};
      case 1: return {"", "flatten"};
      case 2: return {"", "any"};
      case 3: {  // percentages, one per leaf or more (they fold)
        const std::size_t parts = children + std::size_t(pick(3));
        std::vector<std::int64_t> shares(parts, 0);
        for (int k = 0; k < 100; ++k) shares[std::size_t(pick(std::int64_t(parts)))] += 1;
        std::string text = "percentage:[";
        for (std::size_t k = 0; k < parts; ++k) text += (k ? "," : "") + std::to_string(shares[k]);
        return {"", text + "]"};
      }
      default: {  // whole counts summing to the rows, folded
        const std::size_t parts = children + std::size_t(pick(4));
        std::vector<std::int64_t> cuts{0, rows};
        for (std::size_t k = 1; k < parts; ++k) cuts.push_back(pick(rows + 1));
        std::sort(cuts.begin(), cuts.end());
        std::string text = "range:[";
        for (std::size_t k = 0; k + 1 < cuts.size(); ++k)
          text += (k ? "," : "") + std::to_string(cuts[k + 1] - cuts[k]);
        return {"", text + "]"};
      }
    }
  }

  // Two different 1-D arrays.
  std::pair<std::size_t, std::size_t> two_arrays() {
    const auto a = std::size_t(pick(kArrays));
    auto b = std::size_t(pick(kArrays - 1));
    if (b >= a) ++b;
    return {a, b};
  }

  template <class Region>
  Region& placed(Region&& region, std::int64_t rows) {
    auto [location, policy] = placement(rows);
    region.policy(policy);
    if (!location.empty()) region.at(location);
    log_ += " at " + (location.empty() ? std::string("numa0") : location) + " " + policy;
    return region;
  }

  void one_step() {
    const std::int64_t kind = pick(11);
    std::ostringstream line;
    if (kind <= 6) {
      // A region over [0, m) of a 1-D kernel (m may be 0: no pieces).
      auto [a, b] = two_arrays();
      const std::int64_t m = pick(5) == 0 ? 0 : 1 + pick(n_);
      const auto value = std::int32_t(pick(kMask));
      Vec& x = model_[a];
      const Vec& y = model_[b];
      log_ += "\n" + std::to_string(step_++) + ": ";
      switch (kind) {
        case 0: {
          log_ += "fill p" + std::to_string(a) + " over " + std::to_string(m);
          auto r = rt_.region(fill()).over(m);
          placed(r, m).launch(arrays_[a], value);
          for (std::int64_t i = 0; i < m; ++i) x[std::size_t(i)] = std::int32_t((i * 7 + value) & kMask);
          break;
        }
        case 1: {
          log_ += "update p" + std::to_string(a) + " over " + std::to_string(m);
          auto r = rt_.region(update()).over(m);
          placed(r, m).launch(arrays_[a], value);
          for (std::int64_t i = 0; i < m; ++i) x[std::size_t(i)] = (x[std::size_t(i)] * 3 + value) & kMask;
          break;
        }
        case 2: {
          const std::int64_t rows = std::min(m, n_ - 2);
          log_ += "stencil p" + std::to_string(b) + " -> p" + std::to_string(a) + " over " + std::to_string(rows);
          auto r = rt_.region(stencil()).over(rows);
          placed(r, rows).launch(arrays_[a], arrays_[b]);
          for (std::int64_t i = 0; i < rows; ++i)
            x[std::size_t(i + 1)] = (y[std::size_t(i)] + 2 * y[std::size_t(i + 1)] + y[std::size_t(i + 2)]) & kMask;
          break;
        }
        case 3: {
          log_ += "halve_odd p" + std::to_string(b) + " -> p" + std::to_string(a) + " over " + std::to_string(m);
          auto r = rt_.region(halve_odd()).over(m);
          placed(r, m).launch(arrays_[a], arrays_[b]);
          for (std::int64_t i = 0; i < m; ++i)
            if (y[std::size_t(i)] & 1) x[std::size_t(i)] = y[std::size_t(i)] >> 1;
          break;
        }
        case 4: {
          log_ += "gather p" + std::to_string(b) + " -> p" + std::to_string(a) + " over " + std::to_string(m);
          auto r = rt_.region(gather()).over(m);
          placed(r, m).launch(arrays_[a], arrays_[b]);
          for (std::int64_t i = 0; i < m; ++i) x[std::size_t(i)] = y[std::size_t((i * 7) % n_)] ^ 5;
          break;
        }
        default: {
          log_ += "sum p" + std::to_string(a) + " over " + std::to_string(m);
          auto r = rt_.region(sum()).over(m);
          const std::int64_t got = placed(r, m).reduce(arrays_[a]);
          const std::int64_t want = std::accumulate(x.begin(), x.begin() + m, std::int64_t(0));
          INFO(log_);
          CHECK(got == want);
          break;
        }
      }
    } else if (kind == 7) {
      const auto from = std::size_t(pick(2));
      const std::int64_t rows = pick(kRows + 1);
      log_ += "\n" + std::to_string(step_++) + ": stencil_2d g" + std::to_string(from) + " -> g" +
              std::to_string(1 - from) + " over " + std::to_string(rows);
      auto r = rt_.region(stencil_2d()).over(rows, kCols);
      placed(r, rows).launch(grids_[1 - from], grids_[from]);
      const Vec& src = grid_model_[from];
      Vec& dst = grid_model_[1 - from];
      auto at2 = [](std::int64_t i, std::int64_t j) { return std::size_t(i * kCols + j); };
      for (std::int64_t i = 0; i < rows; ++i)
        for (std::int64_t j = 0; j < kCols; ++j)
          dst[at2(i, j)] =
              (i > 0 && i < kRows - 1 && j > 0 && j < kCols - 1)
                  ? (src[at2(i - 1, j)] + src[at2(i + 1, j)] + src[at2(i, j - 1)] + src[at2(i, j + 1)]) & kMask
                  : src[at2(i, j)];
    } else if (kind == 8) {
      // The host reads one array (device copies stay current).
      const auto a = std::size_t(pick(kArrays));
      log_ += "\n" + std::to_string(step_++) + ": host_read p" + std::to_string(a);
      check(a);
    } else if (kind == 9) {
      // The host writes a few elements through host().
      const auto a = std::size_t(pick(kArrays));
      log_ += "\n" + std::to_string(step_++) + ": host writes p" + std::to_string(a);
      auto view = arrays_[a].host();
      for (int k = 0; k < 5; ++k) {
        const auto i = pick(n_);
        const auto v = std::int32_t(pick(kMask));
        view[i] = v;
        model_[a][std::size_t(i)] = v;
      }
    } else {
      // The tree changes: a random non-empty subset of the leaves (devices
      // that leave give their copies back to the host).
      std::vector<std::string> keep;
      for (const auto& leaf : leaves_)
        if (pick(3) != 0) keep.push_back(leaf);
      if (keep.empty()) keep.push_back(leaves_[std::size_t(pick(std::int64_t(leaves_.size())))]);
      log_ += "\n" + std::to_string(step_++) + ": tree " + joined(keep);
      use_leaves(rt_, discovered_, keep);
      current_ = keep;
    }
  }

  void check(std::size_t a) {
    INFO(log_);
    auto view = arrays_[a].host_read();
    const Vec got(view.begin(), view.end());
    CHECK(differences(got, model_[a]) == "none");
  }

  void check_all() {
    for (std::size_t a = 0; a < arrays_.size(); ++a) check(a);
    INFO(log_);
    for (std::size_t g = 0; g < grids_.size(); ++g) {
      auto view = grids_[g].host_read();
      CHECK(differences(Vec(view.begin(), view.end()), grid_model_[g]) == "none");
    }
    CHECK(moved(rt_).device_to_device == 0);  // device-only data goes through the host
  }

 private:
  Runtime& rt_;
  const Hierarchy& discovered_;
  std::mt19937 rng_;
  bool check_every_step_;
  std::int64_t n_ = 0;
  std::vector<Array<std::int32_t>> arrays_;
  std::vector<Vec> model_;
  std::vector<Array<std::int32_t, 2>> grids_;
  std::vector<Vec> grid_model_;
  std::vector<std::string> leaves_, current_;
  std::string log_;
  int step_ = 0;
};

}  // namespace

TEST_CASE("hetero: random regions, policies, host reads and writes match a plain C++ model exactly" *
          doctest::test_suite("opencl")) {
  Runtime rt;
  const Hierarchy discovered = rt.hierarchy();
  if (!has_leaves(discovered, {"cpu0", accelerator(0), accelerator(1)})) return;
  for (std::uint32_t seed = 1; seed <= 100; ++seed) {
    CAPTURE(seed);
    Sequence sequence(rt, discovered, seed, seed % 2 == 1);
    sequence.run(40);
  }
}
