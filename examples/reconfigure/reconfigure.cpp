// Changing the location tree while a program runs, with its data in place.
// A heat-diffusion stencil runs between the changes, and after each one the
// program checks every value against the same computation done on the host:
//
//   1. on the node's first CPU leaf, as discovered;
//   2. after splitting that leaf in two (its cores shared out), on both;
//   3. after moving one half below a new memory location, "scratch", where a
//      snapshot of the grid is placed: the grid's regions now run on the other
//      half, the snapshot's on this one;
//   4. after removing "scratch" with the snapshot in it: the snapshot moves up
//      to the root, keeps its values, and regions still use it.
//
//   reconfigure [--size N] [--steps K]
#include <canopy/canopy.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

namespace {

using namespace canopy;

struct Options {
  std::int64_t size = 512;  ///< the grid is size x size, its border fixed
  int steps = 20;           ///< stencil steps between changes
};

[[noreturn]] void usage(const std::string& problem) {
  std::fprintf(stderr,
               "reconfigure: %s\nusage: reconfigure [--size N] [--steps K]\n"
               "  --size N    the grid is N x N (default 512, at least 3)\n"
               "  --steps K   stencil steps between changes of the tree (default 20)\n",
               problem.c_str());
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto number = [&]() -> long long {
      if (i + 1 >= argc) usage(arg + " needs a value");
      char* end = nullptr;
      const long long value = std::strtoll(argv[++i], &end, 10);
      if (!*argv[i] || *end || value < 1) usage(arg + " takes a positive whole number");
      return value;
    };
    if (arg == "--size")
      o.size = number();
    else if (arg == "--steps")
      o.steps = static_cast<int>(number());
    else
      usage("unknown argument '" + arg + "'");
  }
  if (o.size < 3) usage("--size must be at least 3");
  return o;
}

/// Jacobi steps on the host, the reference the runtime's results must match.
class HostGrid {
 public:
  explicit HostGrid(std::int64_t n) : n_(n), cells_(std::size_t(n * n), 0.0) {
    for (std::int64_t j = 0; j < n; ++j) at(0, j) = 1.0;  // a hot top edge
  }
  double& at(std::int64_t i, std::int64_t j) { return cells_[std::size_t(i * n_ + j)]; }
  void step() {
    std::vector<double> next = cells_;
    for (std::int64_t i = 1; i + 1 < n_; ++i)
      for (std::int64_t j = 1; j + 1 < n_; ++j)
        next[std::size_t(i * n_ + j)] = 0.25 * (at(i - 1, j) + at(i + 1, j) + at(i, j - 1) + at(i, j + 1));
    cells_ = std::move(next);
  }
  const std::vector<double>& cells() const { return cells_; }

 private:
  std::int64_t n_;
  std::vector<double> cells_;
};

/// The elements of `grid` that differ from `reference` by more than rounding.
std::int64_t differences(const Array<double, 2>& grid, const HostGrid& reference) {
  auto h = grid.host();
  std::int64_t wrong = 0;
  for (std::int64_t k = 0; k < h.size(); ++k)
    if (std::fabs(h.data()[k] - reference.cells()[std::size_t(k)]) > 1e-12) ++wrong;
  return wrong;
}

/// "cpuA[0,255) cpuB[255,510)": where the last region's pieces ran.
std::string last_split(const Runtime& rt) {
  const RegionStats region = rt.stats().recent.back();
  std::string text = "at " + region.location + ":";
  for (const PieceStats& piece : region.pieces)
    text += " " + piece.leaf + "[" + std::to_string(piece.begin) + "," + std::to_string(piece.end) + ")";
  return text;
}

class Program {
 public:
  explicit Program(const Options& options) : o_(options), reference_(options.size) {}

  int run() {
    // The node's first CPU leaf and the memory above it, as discovered.
    const Hierarchy discovered = rt_.hierarchy();
    const Location* leaf = nullptr;
    for (const Location* l : discovered.leaves(*discovered.root()))
      if (l->kind() == LocationKind::Cpu) {
        leaf = l;
        break;
      }
    if (!leaf || !leaf->parent()) return give_up("this node has no CPU leaf below a memory location");
    const std::string leaf_name = leaf->name(), memory = leaf->parent()->name(), root = discovered.root()->name();
    const LocationTraits leaf_traits = leaf->traits();
    std::printf("Discovered:\n%s", discovered.to_text().c_str());

    // Two grids at the leaf's memory; the border is fixed, the top edge hot.
    grid_ = rt_.array<double, 2>(Shape(o_.size, o_.size), at(memory) | named("grid"));
    next_ = rt_.array<double, 2>(Shape(o_.size, o_.size), at(memory) | named("next"));
    for (auto* g : {&grid_, &next_}) {
      auto h = g->host();
      for (std::int64_t j = 0; j < o_.size; ++j) h(0, j) = 1.0;
    }

    // 1. On the leaf as discovered.
    if (!steps("1. on " + leaf_name + " as discovered")) return 1;

    // 2. Split the leaf: its cores shared out between two leaves (both on the same core if it has one).
    const auto& pus = leaf_traits.pus;
    const std::size_t half = std::max<std::size_t>(1, pus.size() / 2);
    LocationTraits first = leaf_traits, second = leaf_traits;
    first.pus.assign(pus.begin(), pus.begin() + std::ptrdiff_t(std::min(half, pus.size())));
    second.pus.assign(pus.size() > 1 ? pus.begin() + std::ptrdiff_t(half) : pus.begin(), pus.end());
    first.cores = int(first.pus.size());
    second.cores = int(second.pus.size());
    rt_.remove_location(leaf_name);
    rt_.add_location("cpuA", LocationKind::Cpu, first, memory);
    rt_.add_location("cpuB", LocationKind::Cpu, second, memory);
    std::printf("\nSplit %s into cpuA (%d core%s) and cpuB (%d core%s) below %s.\n", leaf_name.c_str(), first.cores,
                first.cores == 1 ? "" : "s", second.cores, second.cores == 1 ? "" : "s", memory.c_str());
    if (!steps("2. on cpuA and cpuB")) return 1;

    // 3. A new memory location below the root, cpuB moved below it, and a snapshot of the grid placed there.
    rt_.add_location("scratch", LocationKind::HostMemory, {}, root);
    rt_.move_location("cpuB", "scratch");
    auto snapshot = rt_.array<double, 2>(Shape(o_.size, o_.size), at("scratch") | named("snapshot"));
    rt_.copy(snapshot, grid_);
    std::printf("\nAdded memory 'scratch' below %s, moved cpuB below it, copied the grid into a snapshot there:\n%s",
                root.c_str(), rt_.hierarchy().to_text().c_str());
    rt_.region(halve_).over(o_.size, o_.size).launch(snapshot);
    rt_.pause();
    std::printf("halve(snapshot) ran %s\n", last_split(rt_).c_str());
    std::vector<double> halved = [&] {
      std::vector<double> v = reference_.cells();
      for (double& x : v) x *= 0.5;
      return v;
    }();
    if (!same(snapshot, halved, "the snapshot after halve")) return 1;
    if (!steps("3. on cpuA alone (cpuB is below scratch now)")) return 1;

    // 4. Remove scratch, with cpuB and the snapshot in it: the snapshot moves up to the root.
    rt_.remove_location("scratch");
    std::printf("\nRemoved 'scratch' (with cpuB): the snapshot is at '%s' now.\n", snapshot.location().c_str());
    if (snapshot.location() != root) return give_up("the snapshot should have moved to " + root);
    if (!same(snapshot, halved, "the snapshot after its location was removed")) return 1;
    rt_.region(halve_).over(o_.size, o_.size).launch(snapshot);
    rt_.pause();
    std::printf("halve(snapshot) ran %s\n", last_split(rt_).c_str());
    for (double& x : halved) x *= 0.5;
    if (!same(snapshot, halved, "the snapshot halved again")) return 1;
    if (!steps("4. on cpuA")) return 1;

    std::printf("\nFinal tree:\n%s\nReconfiguration: ok\n", rt_.hierarchy().to_text().c_str());
    return 0;
  }

 private:
  // o_.steps Jacobi steps through the runtime and on the host; false when they differ.
  bool steps(const std::string& what) {
    for (int s = 0; s < o_.steps; ++s) {
      rt_.region(jacobi_).over(o_.size - 2, o_.size - 2).launch(next_, grid_);
      std::swap(grid_, next_);
      reference_.step();
    }
    const std::int64_t wrong = differences(grid_, reference_);
    std::printf("%s: %d steps, jacobi ran %s; %lld values differ from the host's\n", what.c_str(), o_.steps,
                last_split(rt_).c_str(), static_cast<long long>(wrong));
    return wrong == 0 || fail(what + ": the grid differs from the host's");
  }

  bool same(const Array<double, 2>& array, const std::vector<double>& expected, const std::string& what) {
    auto h = array.host();
    for (std::int64_t k = 0; k < h.size(); ++k)
      if (std::fabs(h.data()[k] - expected[std::size_t(k)]) > 1e-12) return fail(what + " differs from the host's");
    return true;
  }

  static bool fail(const std::string& problem) {
    std::fprintf(stderr, "reconfigure: %s\n", problem.c_str());
    return false;
  }
  static int give_up(const std::string& problem) { return fail(problem) ? 0 : 1; }

  // One Jacobi step on the interior points; the border stays as it is.
  Kernel<void(Out<double, 2>, In<double, 2>)> jacobi_{
      "jacobi",
      [](Out<double, 2> next, In<double, 2> grid) {
        Idx i = index(0) + 1, j = index(1) + 1;
        next(i, j) = 0.25 * (grid(i - 1, j) + grid(i + 1, j) + grid(i, j - 1) + grid(i, j + 1));
      },
      {"next", "grid"}};
  Kernel<void(InOut<double, 2>)> halve_{"halve", [](InOut<double, 2> g) { g(index(0), index(1)) *= 0.5; }, {"g"}};

  Options o_;
  Runtime rt_;
  HostGrid reference_;
  Array<double, 2> grid_, next_;
};

}  // namespace

int main(int argc, char** argv) {
  const Options options = parse(argc, argv);
  try {
    Program program(options);
    return program.run();
  } catch (const canopy::Error& e) {
    std::fprintf(stderr, "reconfigure: %s\n", e.what());
    return 1;
  }
}
