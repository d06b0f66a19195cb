// canopy-bench mpi: the heat example (examples/mpi/heat) over two MPI ranks
// of different speeds, one CPU-only and one OpenCL-only, first with an even
// split of the rows and then rebalanced in proportion to each rank's
// measured throughput. It prints each rank's compute time per iteration
// after rebalancing (they should differ by at most 10%) and both runs'
// total times (the rebalanced one should be faster).
//
// Run outside MPI, it starts itself under mpirun:
//   mpirun --allow-run-as-root --oversubscribe --mca btl self,vader --mca mpi_yield_when_idle 1
//     -np 1 -x CANOPY_DEVICES=cpu -x CANOPY_CPU_LEAVES=core -x CANOPY_BENCH_MPI_AT=cpu0 canopy-bench mpi ...
//     : -np 1 -x CANOPY_DEVICES=opencl -x POCL_MAX_PTHREAD_COUNT=1 canopy-bench mpi ...
// so the CPU rank runs its regions on one core (cpu0) and the OpenCL rank on
// the OpenCL device. On a machine without a GPU that device is PoCL on the
// same cores: one PoCL thread (unless POCL_MAX_PTHREAD_COUNT is set) leaves
// each rank a core of its own, as a GPU would, and a rank waiting in MPI
// yields its core rather than spinning on it.
// Under mpirun already (2 ranks), it runs as it is launched.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <canopy/canopy.hpp>
#include <canopy/runtime/mpi/job.hpp>

#include "mpi/heat/heat.hpp"
#include "report.hpp"

namespace canopy::bench {

namespace {

bool under_mpi() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "MPI_LOCALNRANKS"})
    if (std::getenv(name)) return true;
  return false;
}

// Replaces this process by mpirun running two ranks of this program.
int launch_under_mpirun(int argc, char** argv) {
  char self[4096];
  const ssize_t length = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (length <= 0) fail("mpi: cannot find this program's path to start it under mpirun");
  self[length] = '\0';
  const char* mpirun = std::getenv("CANOPY_MPIRUN");
  std::vector<std::string> command{mpirun && *mpirun ? mpirun : CANOPY_MPIEXEC,
                                   "--allow-run-as-root",
                                   "--oversubscribe",
                                   "--mca",
                                   "btl",
                                   "self,vader",
                                   "--mca",
                                   "btl_vader_single_copy_mechanism",
                                   "none",
                                   "--mca",
                                   "mpi_yield_when_idle",
                                   "1"};
  auto rank = [&](std::vector<std::string> environment) {
    command.insert(command.end(), {"-np", "1"});
    for (auto& variable : environment) command.insert(command.end(), {"-x", variable});
    command.push_back(self);
    for (int i = 1; i < argc; ++i) command.push_back(argv[i]);
  };
  rank({"CANOPY_DEVICES=cpu", "CANOPY_CPU_LEAVES=core", "CANOPY_BENCH_MPI_AT=cpu0"});
  command.push_back(":");
  const char* pocl_threads = std::getenv("POCL_MAX_PTHREAD_COUNT");
  rank({"CANOPY_DEVICES=opencl",
        std::string("POCL_MAX_PTHREAD_COUNT=") + (pocl_threads && *pocl_threads ? pocl_threads : "1")});
  std::string shown;
  for (const auto& word : command) shown += (shown.empty() ? "" : " ") + word;
  std::printf("canopy-bench mpi: starting %s\n", shown.c_str());
  std::fflush(stdout);
  std::vector<char*> words;
  for (auto& word : command) words.push_back(word.data());
  words.push_back(nullptr);
  ::execvp(words[0], words.data());
  fail("mpi: cannot start " + command[0] + " (install openmpi-bin, or set CANOPY_MPIRUN)");
}

}  // namespace

int mpi_command(int argc, char** argv) {
  if (!under_mpi()) return launch_under_mpirun(argc, argv);
  mpi::Job job(argc, argv);
  Args args(argc - 2, argv + 2, {});
  if (job.size() != 2) fail("mpi: run it on 2 ranks (or outside mpirun, and it starts them)");
  heat::Options options;
  options.rows = args.count("--rows", 2048);
  options.cols = args.count("--cols", 1024);
  options.iterations = static_cast<int>(args.count("--iterations", 400));
  // A rebalancing every 25 iterations: each phase gives the rank models two
  // dozen steps to take a median of (with 8, one noisy phase on this shared
  // machine could move too many rows, and a run ended 10-13% apart).
  const int rebalance_after = static_cast<int>(args.count("--rebalance-after", 25));
  options.rebalances = static_cast<int>(args.count("--rebalances", 6));
  const int repeat = static_cast<int>(args.count("--repeat", 3));
  if (const char* at = std::getenv("CANOPY_BENCH_MPI_AT")) options.location = at;

  const auto ranks = job.hierarchies();
  const auto where = job.allgather(options.location.empty() ? 0.0 : 1.0);
  if (job.rank() == 0) {
    std::printf("heat %lldx%lld doubles, %d iterations, 2 ranks:\n", static_cast<long long>(options.rows),
                static_cast<long long>(options.cols), options.iterations);
    for (const auto& r : ranks) {
      std::printf("  rank %d (%s)%s\n", r.rank, r.share.c_str(),
                  where[static_cast<std::size_t>(r.rank)] > 0 ? ", regions at its one-core leaf cpu0" : "");
      std::printf("%s", r.hierarchy.c_str());
    }
  }
  const int runs = static_cast<int>(args.count("--runs", 1));
  int within = 0;
  for (int run = 1; run <= runs; ++run) {
    // The two runs alternate `repeat` times; the fastest of each is kept (a
    // busy machine only ever makes a run slower).
    heat::Result even, balanced;
    for (int round = 0; round < repeat; ++round) {
      options.rebalance_after = 0;
      const heat::Result e = heat::run(job, options);
      if (round == 0 || e.seconds < even.seconds) even = e;
      options.rebalance_after = rebalance_after;
      const heat::Result b = heat::run(job, options);
      if (round == 0 || b.seconds < balanced.seconds) balanced = b;
    }
    if (job.rank() != 0) continue;
    const double a = balanced.ranks[0].seconds_after, b = balanced.ranks[1].seconds_after;
    const double difference = std::abs(a - b) / std::max(a, b) * 100.0;
    within += difference <= 10.0;
    if (runs > 1) {
      std::printf(
          "run %2d: rows %lld/%lld, ms/iteration %.3f/%.3f (even split %.3f/%.3f): %4.1f%% apart %s; %.2fx "
          "the even split's total\n",
          run, static_cast<long long>(balanced.ranks[0].rows_after),
          static_cast<long long>(balanced.ranks[1].rows_after), a * 1e3, b * 1e3, even.ranks[0].seconds_after * 1e3,
          even.ranks[1].seconds_after * 1e3, difference, difference <= 10.0 ? "ok" : "NOT MET",
          even.seconds / balanced.seconds);
      continue;
    }
    std::printf("\nbest of %d runs each; compute times are medians over the iterations of the last phase\n", repeat);
    std::printf("rebalancings of the best run (canopy::mpi::Partition):\n");
    for (const std::string& line : balanced.rebalances) std::printf("  %s\n", line.c_str());
    std::printf("\n%-28s %12s %12s\n", "", "rank 0", "rank 1");
    std::printf("%-28s %12lld %12lld\n", "rows, even split", static_cast<long long>(even.ranks[0].rows_after),
                static_cast<long long>(even.ranks[1].rows_after));
    std::printf("%-28s %12.3f %12.3f\n", "ms/iteration, even split", even.ranks[0].seconds_after * 1e3,
                even.ranks[1].seconds_after * 1e3);
    std::printf("%-28s %12lld %12lld\n", "rows, rebalanced", static_cast<long long>(balanced.ranks[0].rows_after),
                static_cast<long long>(balanced.ranks[1].rows_after));
    std::printf("%-28s %12.3f %12.3f\n", "ms/iteration, rebalanced", balanced.ranks[0].seconds_after * 1e3,
                balanced.ranks[1].seconds_after * 1e3);
    std::printf("\nafter rebalancing the ranks' compute times per iteration differ by %.1f%% (goal: <= 10%%): %s\n",
                difference, difference <= 10.0 ? "ok" : "NOT MET");
    std::printf("total time of %d iterations: even split %.3f s, rebalanced %.3f s (%.2fx): %s\n", options.iterations,
                even.seconds, balanced.seconds, even.seconds / balanced.seconds,
                balanced.seconds < even.seconds ? "rebalanced is faster" : "NOT FASTER");
    std::printf("both runs equal bit for bit: %s\n", even.checksum == balanced.checksum ? "yes (same checksum)" : "NO");
  }
  if (job.rank() == 0 && runs > 1)
    std::printf("%d of %d runs within 10%% after rebalancing (best of %d each)\n", within, runs, repeat);
  return 0;
}

}  // namespace canopy::bench
