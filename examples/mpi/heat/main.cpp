// heat: a 2-D heat solver over MPI ranks (heat.hpp), one binary on ranks
// that may each hold different devices.
//
//   mpirun -np 3 ./heat --rows 512 --cols 512 --iterations 40 --check
//   mpirun -np 1 -x CANOPY_DEVICES=cpu ./heat --check : -np 2 -x CANOPY_DEVICES=opencl ./heat --check
//
// Options: --rows N (256) --cols N (256) --iterations K (40)
// --rebalance-after K (6; 0 keeps the even split) --rebalances R (1: how
// many times, every K iterations) --policy P (static) --at LOCATION (where
// each rank runs its regions; default: where its arrays are)
// --check (rank 0 also runs the whole grid alone and compares, bit for bit).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "heat.hpp"

namespace {

[[noreturn]] void usage_error(const char* what) {
  std::fprintf(stderr,
               "heat: %s\nusage: heat [--rows N] [--cols N] [--iterations K] [--rebalance-after K] [--rebalances R] "
               "[--policy P] [--at LOCATION] [--check]\n",
               what);
  std::exit(2);
}

heat::Options parse(int argc, char** argv) {
  heat::Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--check") {
      options.check = true;
      continue;
    }
    if (i + 1 >= argc) usage_error(("missing value after " + flag).c_str());
    const char* value = argv[++i];
    char* end = nullptr;
    const long long number = std::strtoll(value, &end, 10);
    const bool whole = end && *end == '\0';
    if (flag == "--policy") {
      options.policy = value;
    } else if (flag == "--at") {
      options.location = value;
    } else if (!whole || number < 0) {
      usage_error((flag + " takes a whole number, not '" + value + "'").c_str());
    } else if (flag == "--rows") {
      options.rows = number;
    } else if (flag == "--cols") {
      options.cols = number;
    } else if (flag == "--iterations") {
      options.iterations = static_cast<int>(number);
    } else if (flag == "--rebalance-after") {
      options.rebalance_after = static_cast<int>(number);
    } else if (flag == "--rebalances") {
      options.rebalances = static_cast<int>(number);
    } else {
      usage_error(("unknown option " + flag).c_str());
    }
  }
  if (options.rows < 1 || options.cols < 1) usage_error("the grid needs at least one row and one column");
  return options;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    canopy::mpi::Job job(argc, argv);
    const heat::Options options = parse(argc, argv);
    const auto ranks = job.hierarchies();
    if (job.rank() == 0) {
      std::printf("heat: %lldx%lld grid, %d iterations, %d rank(s) on %d node(s), rebalancing after %d\n",
                  static_cast<long long>(options.rows), static_cast<long long>(options.cols), options.iterations,
                  job.size(), job.nodes(), options.rebalance_after);
      for (const auto& r : ranks) {
        std::string leaves;
        for (std::size_t at = 0; at < r.hierarchy.size();) {
          std::size_t end = r.hierarchy.find('\n', at);
          if (end == std::string::npos) end = r.hierarchy.size();
          const std::string line = r.hierarchy.substr(at, end - at);
          if (line.find("[cpu]") != std::string::npos || line.find("[opencl]") != std::string::npos ||
              line.find("[cuda]") != std::string::npos || line.find("[level_zero]") != std::string::npos)
            leaves += " " + line.substr(line.find_first_not_of(' '),
                                        line.find(' ', line.find_first_not_of(' ')) - line.find_first_not_of(' '));
          at = end + 1;
        }
        std::printf("  rank %d on %s: leaves%s (%s)\n", r.rank, r.node_name.c_str(), leaves.c_str(), r.share.c_str());
      }
    }
    const heat::Result result = heat::run(job, options);
    if (job.rank() == 0) {
      for (std::size_t r = 0; r < result.ranks.size(); ++r) {
        const auto& rr = result.ranks[r];
        std::printf("  rank %zu: rows %lld -> %lld, compute per iteration %.3f ms -> %.3f ms\n", r,
                    static_cast<long long>(rr.rows_before), static_cast<long long>(rr.rows_after),
                    rr.seconds_before * 1e3, rr.seconds_after * 1e3);
      }
      for (const std::string& line : result.rebalances) std::printf("  rebalancing: %s\n", line.c_str());
      std::printf("time: %.3f s, checksum %.10e\n", result.seconds, result.checksum);
      if (result.checked) {
        if (result.identical)
          std::printf("Validation: ok (equal to the single-process run, bit for bit)\n");
        else
          std::printf("Validation: FAILED (%lld values differ from the single-process run)\n",
                      static_cast<long long>(result.differing));
      }
    }
    return result.checked && !result.identical ? 1 : 0;
  } catch (const canopy::Error& e) {
    std::fprintf(stderr, "heat: %s\n", e.what());
    return 1;
  }
}
