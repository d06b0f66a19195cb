// canopy-bench halo: a 2-D 5-point stencil iterated over a region split
// 50/50 between the CPU leaf and an OpenCL device (or, with
// CANOPY_DEVICES=opencl, two OpenCL devices), printing the bytes the
// coherence directory moved each iteration: after the first (which copies
// the devices' halves in), only the rows next to the boundary should move.
// Then what each device memory held at most, and with --check the result
// against the same iterations as plain loops.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <canopy/canopy.hpp>

#include "report.hpp"

namespace canopy::bench {

int halo_command(int argc, char** argv) {
  Args args(argc, argv, {"--check"});
  const std::int64_t rows = args.count("--rows", 2048), cols = args.count("--cols", 2048);
  const int iterations = static_cast<int>(args.count("--iterations", 100));
  std::string policy = args.get("--policy", "");
  setenv("CANOPY_DEVICES", "cpu,opencl:0", 0);

  Runtime rt;
  std::printf("%s", rt.hierarchy().to_text().c_str());
  // The region runs where the CPU leaf and the device meet (their common
  // parent), so that the policy's two numbers go to those two leaves.
  const auto tree = rt.hierarchy();
  const Location* cpu = nullptr;
  const Location* device = nullptr;
  const Location* second_device = nullptr;
  for (auto* leaf : tree.leaves(*tree.root())) {
    if (leaf->kind() == LocationKind::Cpu && !cpu) cpu = leaf;
    if (leaf->kind() == LocationKind::OpenCL && device && !second_device) second_device = leaf;
    if (leaf->kind() == LocationKind::OpenCL && !device) device = leaf;
  }
  if (!cpu) std::swap(cpu, second_device);  // two devices: the first plays the CPU leaf's part
  if (!cpu || !device)
    fail("halo needs a CPU leaf and an OpenCL device (CANOPY_DEVICES=cpu,opencl:0), or two OpenCL devices");
  if (cpu->parent() != device->parent()) fail("halo expects the CPU leaf and the device below one location");
  const std::string where = cpu->parent()->name();
  if (policy.empty()) {
    // Half the rows to each of the two leaves; other children of their parent
    // (a second device with CANOPY_DEVICES=cpu,opencl) get none.
    policy = "percentage:[";
    for (const Location* child : cpu->parent()->children())
      policy += std::string(policy.back() == '[' ? "" : ",") + (child == cpu || child == device ? "50" : "0");
    policy += "]";
  }
  auto a = rt.array<float, 2>(Shape(rows, cols), named("a")), b = rt.array<float, 2>(Shape(rows, cols), named("b"));
  Kernel stencil("stencil",
                 [](Out<float, 2> out, In<float, 2> in) {
                   Idx i = index(0), j = index(1);
                   Idx last_row = in.extent(0) - 1, last_col = in.extent(1) - 1;
                   If(i > 0 && i < last_row && j > 0 && j < last_col, [&] {
                     out(i, j) = 0.2f * (in(i, j) + in(i - 1, j) + in(i + 1, j) + in(i, j - 1) + in(i, j + 1));
                   }).Else([&] { out(i, j) = in(i, j); });
                 },
                 {"out", "in"});
  {
    auto h = a.host();
    for (std::int64_t i = 0; i < rows; ++i)
      for (std::int64_t j = 0; j < cols; ++j) h(i, j) = float((i * 31 + j * 17) % 101);
  }
  const std::int64_t row_bytes = cols * static_cast<std::int64_t>(sizeof(float));
  std::printf("stencil %lldx%lld floats (a row is %lld bytes), %d iterations at %s (%s and %s), policy %s\n",
              static_cast<long long>(rows), static_cast<long long>(cols), static_cast<long long>(row_bytes), iterations,
              where.c_str(), cpu->name().c_str(), device->name().c_str(), policy.c_str());
  std::printf("%9s %14s %14s %12s %10s\n", "iteration", "host->device", "device->host", "rows moved", "ms");
  std::vector<Row> json;
  auto previous = rt.stats().transfers;
  std::int64_t most_after_first = 0;
  for (int it = 0; it < iterations; ++it) {
    const auto start = std::chrono::steady_clock::now();
    auto& in = it % 2 ? b : a;
    auto& out = it % 2 ? a : b;
    rt.region(stencil).over(rows, cols).policy(policy).at(where).launch(out, in);
    rt.pause();
    const double ms = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() * 1e3;
    const auto now = rt.stats().transfers;
    const auto h2d = now.host_to_device - previous.host_to_device, d2h = now.device_to_host - previous.device_to_host;
    previous = now;
    const double moved_rows = double(h2d + d2h) / double(row_bytes);
    if (it > 0) most_after_first = std::max(most_after_first, h2d + d2h);
    if (it < 3 || it == iterations - 1)
      std::printf("%9d %14lld %14lld %12.1f %10.3f\n", it, static_cast<long long>(h2d), static_cast<long long>(d2h),
                  moved_rows, ms);
    else if (it == 3)
      std::printf("%9s\n", "...");
    json.push_back(
        Row().set("iteration", double(it)).set("host_to_device", double(h2d)).set("device_to_host", double(d2h)));
  }
  // Between the CPU leaf and a device, a halo row crosses once; between two
  // devices it goes through the host, out of one and into the other.
  const bool two_devices = cpu->kind() != LocationKind::Cpu;
  std::printf(
      "after the first iteration: at most %.1f rows moved per iteration (one boundary: the halo row each way%s)\n",
      double(most_after_first) / double(row_bytes), two_devices ? ", each through the host: 4 rows" : ": 2 rows");
  for (const auto& memory : rt.stats().device_memory)
    std::printf("device memory %s: at most %lld bytes held (capacity %lld), %lld evicted\n", memory.leaf.c_str(),
                static_cast<long long>(memory.peak_bytes), static_cast<long long>(memory.capacity_bytes),
                static_cast<long long>(memory.evicted_bytes));
  if (args.has("--check")) {
    // The same iterations as plain loops over floats (the kernel's
    // operations in its order; contraction may differ: compared within 1e-5).
    std::vector<float> x(static_cast<std::size_t>(rows * cols)), y(x.size());
    for (std::int64_t i = 0; i < rows; ++i)
      for (std::int64_t j = 0; j < cols; ++j) x[std::size_t(i * cols + j)] = float((i * 31 + j * 17) % 101);
    for (int it = 0; it < iterations; ++it) {
      for (std::int64_t i = 0; i < rows; ++i)
        for (std::int64_t j = 0; j < cols; ++j) {
          const std::size_t at = std::size_t(i * cols + j);
          y[at] = i > 0 && i < rows - 1 && j > 0 && j < cols - 1
                      ? 0.2f * (x[at] + x[at - std::size_t(cols)] + x[at + std::size_t(cols)] + x[at - 1] + x[at + 1])
                      : x[at];
        }
      std::swap(x, y);
    }
    const auto result = (iterations % 2 ? b : a).host_read();
    double worst = 0;
    for (std::size_t e = 0; e < x.size(); ++e)
      worst =
          std::max(worst, std::fabs(double(result.data()[e]) - double(x[e])) / std::max(1.0, std::fabs(double(x[e]))));
    std::printf("check against plain loops: largest relative difference %.3g (%s)\n", worst,
                worst <= 1e-5 ? "ok" : "WRONG");
    if (worst > 1e-5) return 1;
  }
  if (args.has("--json")) write_json(args.get("--json", ""), json);
  return 0;
}

}  // namespace canopy::bench
