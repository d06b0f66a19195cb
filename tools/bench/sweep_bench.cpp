// canopy-bench sweep: a Rodinia workload with its regions split over two
// devices' leaves, run for every split percentage:[p, 100-p] with p = 0, 10,
// ..., 100 (the data of Gecko's heatmaps: time against the share each device
// gets). Each split's output is checked against the OpenMP baseline.
//
//   canopy-bench sweep hotspot --devices cpu,opencl --size medium --json sweep.json
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include <canopy/canopy.hpp>

#include "report.hpp"
#include "rodinia/workload.hpp"

namespace canopy::bench {

namespace {

using rodinia::Size;

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> items;
  std::stringstream stream(text);
  for (std::string item; std::getline(stream, item, ',');)
    if (!item.empty()) items.push_back(item);
  return items;
}

Size size_named(const std::string& text) {
  if (text == "small") return Size::Small;
  if (text == "medium") return Size::Medium;
  if (text == "large") return Size::Large;
  fail("--size " + text + ": expected small, medium or large (or a comma-separated list of them)");
}

// "cpu" -> "cpu", "opencl" -> "opencl:0", "opencl:1" -> "opencl:1": the
// CANOPY_DEVICES entry of one --devices item.
std::string discovery_entry(const std::string& device) {
  if (device == "cpu" || device.rfind("opencl:", 0) == 0) return device;
  if (device == "opencl") return "opencl:0";
  fail("--devices: '" + device + "' is not cpu, opencl or opencl:N");
}

// The leaf that `device` ("cpu", "opencl", "opencl:N") became in `tree`;
// `ordinal` counts the OpenCL devices before it in --devices (discovery
// keeps the named devices in that order).
const Location* leaf_of(const Hierarchy& tree, const std::string& device, std::size_t ordinal) {
  const LocationKind kind = device == "cpu" ? LocationKind::Cpu : LocationKind::OpenCL;
  std::vector<const Location*> found;
  for (const Location* leaf : tree.leaves(*tree.root()))
    if (leaf->kind() == kind) found.push_back(leaf);
  if (kind == LocationKind::Cpu) {
    if (found.size() != 1)
      fail("sweep needs exactly one CPU leaf, the tree has " + std::to_string(found.size()) +
           " (set CANOPY_CPU_LEAVES=numa on a one-NUMA-node machine):\n" + tree.to_text());
    return found[0];
  }
  if (ordinal >= found.size())
    fail("--devices " + device + ": this node has no such OpenCL device:\n" + tree.to_text());
  return found[ordinal];
}

struct Point {
  std::string workload, size;
  int percent = 0;
  double seconds = 0;
  std::string check;
};

}  // namespace

int sweep_command(int argc, char** argv) {
  Args args(argc, argv, {});
  const std::vector<std::string> devices = split_list(args.get("--devices", "cpu,opencl"));
  const std::vector<std::string> sizes = split_list(args.get("--size", "small"));
  const int repeat = static_cast<int>(args.count("--repeat", 3));
  const int step = static_cast<int>(args.count("--step", 10));
  const std::vector<std::string>& wanted = args.words();
  if (wanted.empty()) fail("sweep needs a workload name (hotspot, srad_v2, pathfinder, ...)");
  if (devices.size() != 2 || devices[0] == devices[1])
    fail("--devices takes two different devices, such as cpu,opencl");
  if (step > 100 || 100 % step != 0) fail("--step must divide 100");

  // The tree holds the two devices' leaves below their common parent.
  setenv("CANOPY_DEVICES", (discovery_entry(devices[0]) + "," + discovery_entry(devices[1])).c_str(), 1);
  Runtime rt;
  const Hierarchy tree = rt.hierarchy();
  const Location* first = leaf_of(tree, devices[0], 0);
  const Location* second = leaf_of(tree, devices[1], devices[0] == "cpu" ? 0 : 1);
  if (!first->parent() || first->parent() != second->parent())
    fail("sweep expects both leaves below one location:\n" + tree.to_text());
  const Location& parent = *first->parent();
  if (tree.leaves(parent).size() != 2)
    fail("sweep expects exactly two leaves below " + parent.name() + ":\n" + tree.to_text());
  // percentage:[a, b] gives a to the parent's first leaf in tree order.
  const bool first_leads = tree.leaves(parent)[0] == first;

  auto workloads = rodinia::all_workloads();
  std::vector<rodinia::Workload*> chosen;
  for (const auto& name : wanted) {
    rodinia::Workload* found = nullptr;
    for (auto& w : workloads)
      if (w->name() == name) found = w.get();
    if (!found) fail("unknown workload '" + name + "'");
    chosen.push_back(found);
  }

  std::printf("sweep at %s over %s (%s) and %s (%s), best of %d, seconds\n", parent.name().c_str(),
              first->name().c_str(), devices[0].c_str(), second->name().c_str(), devices[1].c_str(), repeat);
  std::printf("%-12s %-7s %8s %12s  %s\n", "workload", "size", devices[0].c_str(), "seconds", "check");
  std::vector<Point> points;
  bool all_ok = true;
  for (const auto& size_name : sizes) {
    const Size size = size_named(size_name);
    for (rodinia::Workload* workload : chosen) {
      workload->prepare(size);
      workload->run_openmp();  // the reference every split is checked against
      for (int p = 0; p <= 100; p += step) {
        const int a = first_leads ? p : 100 - p;
        rodinia::Placement where;
        where.location = parent.name();
        where.policy = "percentage:[" + std::to_string(a) + "," + std::to_string(100 - a) + "]";
        double best = 1e300;
        for (int r = 0; r < repeat; ++r) best = std::min(best, workload->run_canopy(rt, where));
        Point point{workload->name(), size_name, p, best, workload->check()};
        all_ok = all_ok && point.check.empty();
        std::printf("%-12s %-7s %7d%% %12.4f  %s\n", point.workload.c_str(), point.size.c_str(), p, best,
                    point.check.empty() ? "ok" : point.check.c_str());
        std::fflush(stdout);
        points.push_back(point);
      }
    }
  }

  if (args.has("--json")) {
    std::vector<Row> rows;
    for (const auto& point : points)
      rows.push_back(Row()
                         .set("workload", point.workload)
                         .set("size", point.size)
                         .set("devices", devices[0] + "," + devices[1])
                         .set("split_cpu_percent", double(point.percent))
                         .set("seconds", point.seconds)
                         .set("check", point.check.empty() ? "ok" : point.check));
    write_json(args.get("--json", ""), rows);
  }
  return all_ok ? 0 : 1;
}

}  // namespace canopy::bench
