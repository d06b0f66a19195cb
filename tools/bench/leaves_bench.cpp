// canopy-bench leaves: STREAM triad through the runtime on a node split into
// one-core CPU leaves (the region split over them by a policy, each leaf with
// its own worker), beside the same kernel on the CPU backend called directly
// with all those cores, in the same run on the same arrays.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>

#include <canopy/backends/cpu/cpu_device.hpp>
#include <canopy/ir/passes/optimize.hpp>

#include <canopy/runtime/internal/engine_access.hpp>
#include "../../examples/stream/babelstream.hpp"
#include "report.hpp"

namespace canopy::bench {

namespace {

// Replaces every CPU leaf by one leaf per core, below the same parent.
std::vector<unsigned> split_into_one_core_leaves(Runtime& rt) {
  std::vector<unsigned> pus;
  canopy::runtime::engine_of(rt).reconfigure([&](Hierarchy& tree) {
    for (auto* leaf : tree.leaves(*tree.root())) {
      if (leaf->kind() != LocationKind::Cpu) continue;
      const std::string name = leaf->name(), parent = leaf->parent() ? leaf->parent()->name() : "";
      const auto traits = leaf->traits();
      tree.remove(name);
      for (unsigned pu : traits.pus) {
        auto one = traits;
        one.pus = {pu};
        one.cores = 1;
        tree.add(name + "_core" + std::to_string(pu), LocationKind::Cpu, one, parent);
        pus.push_back(pu);
      }
    }
  });
  return pus;
}

}  // namespace

int leaves_command(int argc, char** argv) {
  Args args(argc, argv, {});
  const std::int64_t n = args.count("--size", std::int64_t{1} << 25);
  const int repeat = static_cast<int>(args.count("--repeat", 20));
  const std::string policy = args.get("--policy", "static");

  Runtime rt;
  const auto pus = split_into_one_core_leaves(rt);
  if (pus.size() < 2) fail("this node has fewer than two cores to make one-core leaves of");
  std::printf("%s", rt.hierarchy().to_text().c_str());

  babelstream::Kernels<double> kernels;
  auto a = rt.array<double>(n), b = rt.array<double>(n), c = rt.array<double>(n);
  rt.region(kernels.init)
      .over(n)
      .policy(policy)
      .launch(a, b, c, babelstream::start_a, babelstream::start_b, babelstream::start_c);
  rt.pause();

  // The direct backend: one device over the same cores, the same program, the same arrays.
  backends::cpu::CpuDevice direct("direct", pus);
  auto program =
      backends::cpu::CpuDevice::compile_program(std::make_shared<const ir::Kernel>(ir::optimize(kernels.triad.ir())));
  std::vector<backends::KernelArg> direct_args;
  for (auto* array : {&a, &b, &c}) {
    backends::ArrayArg arg;
    arg.data = array->host().data();
    arg.extents = {n, 1, 1};
    direct_args.emplace_back(arg);
  }
  direct_args.emplace_back(backends::scalar_arg(babelstream::start_scalar));
  backends::Range range;
  range.end[0] = n;

  auto time = [](auto&& body) {
    const auto start = std::chrono::steady_clock::now();
    body();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  double runtime_best = 1e30, direct_best = 1e30;
  std::vector<double> ratios;          // direct time / runtime time of each interleaved pair
  for (int r = 0; r <= repeat; ++r) {  // round 0 warms up (JIT, first touch)
    const double t_runtime = time([&] {
      rt.region(kernels.triad).over(n).policy(policy).launch(a, b, c, babelstream::start_scalar);
      rt.pause();
    });
    settle();
    const double t_direct = time([&] { direct.run(*program, direct_args, range); });
    settle();
    if (r == 0) continue;
    ratios.push_back(t_direct / t_runtime);
    runtime_best = std::min(runtime_best, t_runtime);
    direct_best = std::min(direct_best, t_direct);
  }
  const double bytes = 3.0 * sizeof(double) * double(n);
  std::printf("triad, %lld doubles, best of %d\n", static_cast<long long>(n), repeat);
  std::printf("%-52s %10.1f MB/s\n",
              ("runtime, " + std::to_string(pus.size()) + " one-core leaves, policy " + policy).c_str(),
              bytes / runtime_best * 1e-6);
  std::printf("%-52s %10.1f MB/s\n", ("CPU backend directly, " + std::to_string(pus.size()) + " threads").c_str(),
              bytes / direct_best * 1e-6);
  std::sort(ratios.begin(), ratios.end());
  const double median_ratio = ratios[ratios.size() / 2];
  std::printf("runtime/direct: %.3fx (best times), %.3fx (median of the %zu interleaved pairs)\n",
              direct_best / runtime_best, median_ratio, ratios.size());
  std::printf("%s", rt.stats().to_text().c_str());
  if (args.has("--json")) {
    std::vector<Row> rows;
    rows.push_back(Row()
                       .set("impl", "runtime")
                       .set("kernel", "triad")
                       .set("best_s", runtime_best)
                       .set("mbps", bytes / runtime_best * 1e-6));
    rows.push_back(Row()
                       .set("impl", "direct")
                       .set("kernel", "triad")
                       .set("best_s", direct_best)
                       .set("mbps", bytes / direct_best * 1e-6));
    write_json(args.get("--json", ""), rows);
  }
  return 0;
}

}  // namespace canopy::bench
