// A histogram filled by every leaf of the node at once: the bins array is
// marked merge(MergeOp::Sum), so each device adds into a private copy that
// starts at zero, CPU leaves add into the array itself, and the copies are
// summed into the array when it is next used (here: when the host reads it).
// The data has a fixed seed; the program counts it again on the host, prints
// where the region ran, the bins and the bytes moved, and says whether every
// bin matches.
//
//   histogram [--size N] [--bins B] [--policy P]
//
// With PoCL installed, CANOPY_DEVICES=cpu,opencl POCL_DEVICES="pthread pthread"
// puts two OpenCL devices beside the CPU leaf, and the region splits over all
// three.
#include <canopy/canopy.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

namespace {

using namespace canopy;

struct Options {
  std::int64_t size = 4'000'000;
  std::int32_t bins = 32;
  std::string policy = "flatten";  ///< even over every leaf, whatever the tree
};

[[noreturn]] void usage(const std::string& problem) {
  std::fprintf(stderr,
               "histogram: %s\nusage: histogram [--size N] [--bins B] [--policy P]\n"
               "  --size N     values to count (default 4000000, at most 2^31-1)\n"
               "  --bins B     bins over [0,1) (default 32, at most 4096)\n"
               "  --policy P   how the values are split over the leaves (default flatten)\n",
               problem.c_str());
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(arg + " needs a value");
      return argv[++i];
    };
    auto number = [&](long long largest) {
      const std::string text = value();
      char* end = nullptr;
      const long long n = std::strtoll(text.c_str(), &end, 10);
      if (text.empty() || *end || n < 1 || n > largest)
        usage(arg + " takes a whole number from 1 to " + std::to_string(largest));
      return n;
    };
    if (arg == "--size")
      o.size = number(0x7fffffff);
    else if (arg == "--bins")
      o.bins = static_cast<std::int32_t>(number(4096));
    else if (arg == "--policy")
      o.policy = value();
    else
      usage("unknown argument '" + arg + "'");
  }
  return o;
}

// Values in [0,1): two bumps, so that the bins differ.
std::vector<double> make_data(std::int64_t n) {
  std::mt19937_64 rng(20240607);
  std::normal_distribution<double> low(0.3, 0.08), high(0.72, 0.05);
  std::bernoulli_distribution pick_low(0.65);
  std::vector<double> data(static_cast<std::size_t>(n));
  for (auto& v : data) {
    double x = pick_low(rng) ? low(rng) : high(rng);
    v = std::clamp(x, 0.0, 0.999999);
  }
  return data;
}

// The bin of `v`, the same way the kernel computes it.
std::int32_t bin_of(double v, std::int32_t bins) {
  return std::clamp(static_cast<std::int32_t>(v * bins), std::int32_t(0), bins - 1);
}

std::string pieces_text(const RegionStats& region) {
  std::string text;
  for (const auto& p : region.pieces)
    text += " " + p.leaf + "[" + std::to_string(p.begin) + "," + std::to_string(p.end) + ")";
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  try {
    Runtime rt;
    const Hierarchy tree = rt.hierarchy();
    std::printf("Canopy histogram: %lld values in %d bins over [0,1), policy %s\nleaves:",
                static_cast<long long>(o.size), o.bins, o.policy.c_str());
    for (const Location* leaf : tree.leaves(*tree.root()))
      std::printf(" %s (%s)", leaf->name().c_str(), std::string(name_of(leaf->kind())).c_str());
    std::printf("\n");

    const std::vector<double> data = make_data(o.size);
    auto values = rt.array<double>(o.size, named("values"));
    auto counts = rt.array<std::int32_t>(o.bins, merge(MergeOp::Sum) | named("counts"));
    std::copy(data.begin(), data.end(), values.host().begin());

    Kernel histogram("histogram", [](InOut<std::int32_t> counts, In<double> values, Val<std::int32_t> bins) {
      Idx i = index(0);
      Value<std::int32_t> bin = max(min(cast<std::int32_t>(values[i] * cast<double>(bins)), bins - 1), 0);
      atomic_add(counts[bin], 1);
    });
    rt.region(histogram).over(o.size).policy(o.policy).launch(counts, values, o.bins);
    rt.pause();
    const RegionStats region = rt.stats().recent.back();
    std::printf("histogram ran at %s:%s\n", region.location.c_str(), pieces_text(region).c_str());

    // The host view combines the leaves' private copies into the array.
    auto bins = counts.host_read();
    std::vector<std::int64_t> serial(static_cast<std::size_t>(o.bins), 0);
    for (double v : data) serial[static_cast<std::size_t>(bin_of(v, o.bins))] += 1;

    std::int64_t total = 0, differ = 0;
    std::int32_t largest = 0, smallest = 0;
    for (std::int32_t b = 0; b < o.bins; ++b) {
      total += bins[b];
      differ += bins[b] != serial[static_cast<std::size_t>(b)];
      if (bins[b] > bins[largest]) largest = b;
      if (bins[b] < bins[smallest]) smallest = b;
    }
    std::printf("bins: total %lld, mean %.1f, largest %d in bin %d, smallest %d in bin %d\n",
                static_cast<long long>(total), double(total) / o.bins, bins[largest], largest, bins[smallest],
                smallest);
    const std::int32_t rows = std::min<std::int32_t>(o.bins, 32);  // at most 32 lines: bins grouped
    const std::int32_t per_row = (o.bins + rows - 1) / rows;
    std::int64_t widest = 1;
    std::vector<std::int64_t> grouped;
    for (std::int32_t b = 0; b < o.bins; b += per_row) {
      std::int64_t sum = 0;
      for (std::int32_t k = b; k < std::min(o.bins, b + per_row); ++k) sum += bins[k];
      grouped.push_back(sum);
      widest = std::max(widest, sum);
    }
    for (std::size_t r = 0; r < grouped.size(); ++r) {
      const double lo = double(std::int64_t(r) * per_row) / o.bins;
      const double hi = std::min(1.0, double(std::int64_t(r + 1) * per_row) / o.bins);
      std::printf("  [%.3f,%.3f) %9lld %s\n", lo, hi, static_cast<long long>(grouped[r]),
                  std::string(static_cast<std::size_t>(grouped[r] * 50 / widest), '#').c_str());
    }

    const Stats stats = rt.stats();
    std::printf(
        "bytes moved: host->device %lld, device->host %lld, device->device %lld; not moved (already current) "
        "%lld\n",
        static_cast<long long>(stats.transfers.host_to_device), static_cast<long long>(stats.transfers.device_to_host),
        static_cast<long long>(stats.transfers.device_to_device),
        static_cast<long long>(stats.transfers.bytes_avoided));
    for (const auto& a : stats.arrays)
      std::printf("  %s: host->device %lld, device->host %lld\n", a.array.c_str(),
                  static_cast<long long>(a.host_to_device), static_cast<long long>(a.device_to_host));

    if (differ == 0 && total == o.size) {
      std::printf("Validation: ok (every bin matches a serial count)\n");
      return 0;
    }
    std::printf("Validation: FAILED (%lld of %d bins differ from a serial count; total %lld of %lld)\n",
                static_cast<long long>(differ), o.bins, static_cast<long long>(total), static_cast<long long>(o.size));
    return 1;
  } catch (const Error& e) {
    std::fprintf(stderr, "histogram: %s\n", e.what());
    return 1;
  }
}
