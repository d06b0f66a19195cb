// canopy-bench model: how well the machine model (runtime/machine_model.hpp)
// and the kernel cost model (ir/analysis/cost.hpp) predict the time of a
// STREAM triad and of a 2-D 5-point stencil on two leaves of different
// speed, each leaf running the whole range alone. It prints each leaf's
// predicted and measured time and compares the ratio between the leaves
// with the measured one (the adaptive policy needs it within 25%).
//
// The stencil's grid is 4098 doubles wide by default: with rows of exactly
// 4096 doubles (32 KiB apart) the rows a point reads fall in the same cache
// sets, and PoCL's code ran twice as slowly as on a 4098-wide grid while the
// CPU backend's did not; the model, a roofline without cache sets, does not
// predict that (--cols 4096 shows it).
//
//   canopy-bench model                      # cpu0 (one core) and opencl0 (PoCL, one thread)
//   CANOPY_DEVICES=cpu CANOPY_CPU_LEAVES=core canopy-bench model --leaves cpu0,cpu1
//
// Without CANOPY_DEVICES, CANOPY_CPU_LEAVES and POCL_MAX_PTHREAD_COUNT it sets
// CANOPY_DEVICES=cpu,opencl, CANOPY_CPU_LEAVES=core and POCL_MAX_PTHREAD_COUNT=1,
// so that the tree has one-core CPU leaves and the OpenCL device on a thread
// of its own, kept off cpu0's core, and compares the first CPU leaf with the
// first OpenCL leaf (else with the second CPU leaf).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <canopy/canopy.hpp>
#include <canopy/ir/analysis/cost.hpp>
#include <canopy/runtime/machine_model.hpp>

#include "report.hpp"

namespace canopy::bench {

namespace {

std::vector<std::string> comma_list(const std::string& text) {
  std::vector<std::string> items;
  std::stringstream stream(text);
  for (std::string item; std::getline(stream, item, ',');)
    if (!item.empty()) items.push_back(item);
  return items;
}

/// The two leaves to compare: --leaves, else the first CPU leaf and the first
/// OpenCL leaf, else the first two leaves.
std::vector<std::string> pick_leaves(const Hierarchy& tree, const std::string& wanted) {
  if (!wanted.empty()) {
    auto names = comma_list(wanted);
    if (names.size() != 2 || names[0] == names[1])
      fail("--leaves takes two different leaf names, such as cpu0,opencl0");
    for (const auto& name : names) {
      const Location* leaf = tree.find(name);
      if (!leaf || !leaf->executes()) fail("--leaves: '" + name + "' is not an executing leaf of\n" + tree.to_text());
    }
    return names;
  }
  const auto leaves = tree.leaves(*tree.root());
  const Location* cpu = nullptr;
  const Location* device = nullptr;
  for (const Location* leaf : leaves) {
    if (leaf->kind() == LocationKind::Cpu && !cpu) cpu = leaf;
    if (is_device(leaf->kind()) && !device) device = leaf;
  }
  if (cpu && device) return {cpu->name(), device->name()};
  if (leaves.size() < 2) fail("model needs two executing leaves; the tree has:\n" + tree.to_text());
  return {leaves[0]->name(), leaves[1]->name()};
}

/// Wall time of one launch + pause.
template <class Launch>
double seconds_of(Runtime& rt, Launch&& launch) {
  const auto start = std::chrono::steady_clock::now();
  launch();
  rt.pause();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

struct Measured {
  std::string kernel, leaf;
  std::int64_t points = 0;
  double predicted = 0, best = 0, median = 0;
};

}  // namespace

int model_command(int argc, char** argv) {
  Args args(argc, argv, {"--cached"});
  const std::int64_t n = args.count("--size", std::int64_t{1} << 23);
  const std::int64_t rows = args.count("--rows", 2048), cols = args.count("--cols", 4098);
  const int repeat = static_cast<int>(args.count("--repeat", 5));
  setenv("CANOPY_DEVICES", "cpu,opencl", 0);
  setenv("CANOPY_CPU_LEAVES", "core", 0);
  // As canopy-bench adaptive: PoCL on one thread, kept off cpu0's core.
  setenv("POCL_MAX_PTHREAD_COUNT", "1", 0);
  Runtime rt = runtime_off_first_core();
  const Hierarchy tree = rt.hierarchy();
  const std::vector<std::string> leaves = pick_leaves(tree, args.get("--leaves", ""));
  std::printf("%s", tree.to_text().c_str());
  CalibrationOptions calibration;
  const MachineModel model = args.has("--cached") ? MachineModel::load_or_calibrate(rt, calibration)
                                                  : MachineModel::calibrate(rt, calibration);
  std::printf("%s", model.describe().c_str());
  for (const auto& leaf : leaves)
    if (!model.at(leaf).calibrated) fail("leaf " + leaf + " could not be calibrated: " + model.at(leaf).note);

  Kernel triad("triad",
               [](Out<double> a, In<double> b, In<double> c, Val<double> s) {
                 Idx i = index(0);
                 a[i] = b[i] + s * c[i];
               },
               {"a", "b", "c", "s"});
  // Interior points of a rows x cols grid: out(i+1, j+1) from its four neighbours.
  Kernel stencil("stencil",
                 [](Out<double, 2> out, In<double, 2> in) {
                   Idx i = index(0), j = index(1);
                   out(i + 1, j + 1) =
                       0.25 * (in(i, j + 1) + in(i + 2, j + 1) + in(i + 1, j) + in(i + 1, j + 2)) - in(i + 1, j + 1);
                 },
                 {"out", "in"});
  auto a = rt.array<double>(n, named("a")), b = rt.array<double>(n, named("b")), c = rt.array<double>(n, named("c"));
  auto grid_in = rt.array<double, 2>(Shape(rows, cols), named("in"));
  // An output grid per leaf: the stencil leaves the border of its output
  // alone, so with one shared output each turn of the other leaf would copy
  // the whole grid to or from the device (the border stays current where it
  // was, and the directory tracks rows, not the columns inside them), and the
  // times would measure copies the model does not predict.
  std::map<std::string, Array<double, 2>> grid_out;
  for (const auto& leaf : leaves) grid_out.emplace(leaf, rt.array<double, 2>(Shape(rows, cols), named("out_" + leaf)));
  {
    auto hb = b.host(), hc = c.host();
    for (std::int64_t i = 0; i < n; ++i) hb[i] = hc[i] = 1.0 + static_cast<double>(i % 7);
    auto hin = grid_in.host();
    for (std::int64_t i = 0; i < rows; ++i)
      for (std::int64_t j = 0; j < cols; ++j) hin(i, j) = static_cast<double>((i * 31 + j * 17) % 101);
    for (auto& [leaf, out] : grid_out) {
      auto hout = out.host();
      for (std::int64_t i = 0; i < rows; ++i)
        for (std::int64_t j = 0; j < cols; ++j) hout(i, j) = hin(i, j);
    }
  }

  std::vector<Measured> results;
  // Each leaf runs the whole range alone; the leaves take turns (a, b, a, b,
  // ...) after a warm-up each, so that other work on the node disturbs both alike.
  auto run = [&](const std::string& name, const ir::Kernel& ir, std::array<std::int64_t, 3> range, auto&& launch) {
    const std::int64_t points = range[0] * std::max<std::int64_t>(range[1], 1);
    std::vector<std::vector<double>> times(leaves.size());
    for (const auto& leaf : leaves) {
      const ir::KernelCost cost = model.cost_of(ir, leaf, range);
      std::printf("%s on %s: %s", name.c_str(), leaf.c_str(), ir::describe_cost(ir, cost).c_str());
      results.push_back({name, leaf, points, model.predict_seconds(cost, leaf, points)});
      seconds_of(rt, [&] { launch(leaf); });
    }
    for (int r = 0; r < repeat; ++r)
      for (std::size_t l = 0; l < leaves.size(); ++l) times[l].push_back(seconds_of(rt, [&] { launch(leaves[l]); }));
    for (std::size_t l = 0; l < leaves.size(); ++l) {
      std::sort(times[l].begin(), times[l].end());
      Measured& m = results[results.size() - leaves.size() + l];
      m.best = times[l].front();
      m.median = times[l][times[l].size() / 2];
    }
  };
  run("triad", triad.ir(), {n, 0, 0},
      [&](const std::string& leaf) { rt.region(triad).over(n).at(leaf).launch(a, b, c, 0.4); });
  run("stencil", stencil.ir(), {rows - 2, cols - 2, 0}, [&](const std::string& leaf) {
    rt.region(stencil).over(rows - 2, cols - 2).at(leaf).launch(grid_out.at(leaf), grid_in);
  });

  std::printf("\n%-8s %-10s %12s %14s %14s %14s\n", "kernel", "leaf", "points", "predicted ms", "best ms", "median ms");
  for (const auto& m : results)
    std::printf("%-8s %-10s %12lld %14.3f %14.3f %14.3f\n", m.kernel.c_str(), m.leaf.c_str(),
                static_cast<long long>(m.points), m.predicted * 1e3, m.best * 1e3, m.median * 1e3);
  std::vector<Row> rows_out;
  bool all_within = true;
  for (std::size_t k = 0; k + 1 < results.size(); k += 2) {
    const Measured &x = results[k], &y = results[k + 1];
    const RatioCheck check = check_ratio(x.predicted, y.predicted, x.best, y.best);
    const bool within = check.within(0.25);
    all_within = all_within && within;
    std::printf("%-8s %s/%s time ratio: predicted %.3f, measured %.3f (best of %d; medians %.3f): %.1f%% apart, %s\n",
                x.kernel.c_str(), x.leaf.c_str(), y.leaf.c_str(), check.predicted_ratio(), check.measured_ratio(),
                repeat, x.median / y.median, check.difference() * 100, within ? "within 25%" : "NOT within 25%");
    rows_out.push_back(Row()
                           .set("kernel", x.kernel)
                           .set("leaf_a", x.leaf)
                           .set("leaf_b", y.leaf)
                           .set("points", double(x.points))
                           .set("predicted_a", x.predicted)
                           .set("predicted_b", y.predicted)
                           .set("measured_a", x.best)
                           .set("measured_b", y.best)
                           .set("median_a", x.median)
                           .set("median_b", y.median)
                           .set("predicted_ratio", check.predicted_ratio())
                           .set("measured_ratio", check.measured_ratio())
                           .set("difference", check.difference()));
  }
  if (args.has("--json")) write_json(args.get("--json", ""), rows_out);
  return all_within ? 0 : 1;
}

}  // namespace canopy::bench
