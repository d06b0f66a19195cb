// canopy-bench's bfs: Rodinia's breadth-first search of a generated graph on
// Canopy (examples/rodinia/bfs) beside the OpenMP baseline; the costs must
// be equal.
#include <chrono>
#include <string>

#include "bfs_openmp.hpp"
#include "rodinia/bfs/bfs.hpp"
#include "workload.hpp"

namespace canopy::bench::rodinia {

namespace {

namespace bfs = ::rodinia::bfs;

class BfsWorkload final : public Workload {
 public:
  std::string name() const override { return "bfs"; }
  std::string describe() const override {
    return std::to_string(graph_.nodes()) + " nodes, " + std::to_string(graph_.edges.size()) + " edges";
  }

  void prepare(Size size) override {
    switch (size) {
      case Size::Small: graph_ = bfs::generate(20000); break;
      case Size::Medium: graph_ = bfs::generate(1000000); break;
      case Size::Large: graph_ = bfs::generate(8000000); break;
    }
    // Both sides write their costs into memory touched once here.
    canopy_.assign(static_cast<std::size_t>(graph_.nodes()), 0);
    baseline_.assign(static_cast<std::size_t>(graph_.nodes()), 0);
    canopy_levels_ = baseline_levels_ = 0;
  }

  double run_canopy(Runtime& rt, const Placement& where) override {
    const auto start = std::chrono::steady_clock::now();
    bfs::Search search(rt, where.location, where.policy);
    canopy_levels_ = search.run(graph_, canopy_);
    return ::rodinia::seconds_since(start);
  }

  double run_openmp() override {
    const auto start = std::chrono::steady_clock::now();
    baseline_levels_ = openmp::bfs(graph_.starts.data(), graph_.counts.data(), graph_.edges.data(), graph_.nodes(),
                                   graph_.source, baseline_.data());
    return ::rodinia::seconds_since(start);
  }

  // Costs are integers: equal, node by node.
  std::string check() const override {
    if (canopy_levels_ != baseline_levels_)
      return "levels differ: canopy " + std::to_string(canopy_levels_) + ", openmp " + std::to_string(baseline_levels_);
    for (std::size_t i = 0; i < canopy_.size(); ++i)
      if (canopy_[i] != baseline_[i])
        return "node " + std::to_string(i) + ": canopy cost " + std::to_string(canopy_[i]) + ", openmp " +
               std::to_string(baseline_[i]);
    return "";
  }

 private:
  bfs::Graph graph_;
  std::vector<std::int32_t> canopy_, baseline_;
  int canopy_levels_ = 0, baseline_levels_ = 0;
};

const Registration registration(9, [] { return std::make_unique<BfsWorkload>(); });

}  // namespace

}  // namespace canopy::bench::rodinia
