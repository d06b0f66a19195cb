// canopy-bench startup: what a program pays before its first kernel, timed as
// users time it, a whole process from exec to exit. The child is
// canopy-startup-child (beside this binary), linked as a Canopy program is:
// doing nothing; making `Runtime rt;` with every device and with
// CANOPY_DEVICES=cpu; running one small kernel with a warm kernel cache and
// with an empty cache folder (a first run on a new node: the kernel is
// compiled and the devices discovered). Where Canopy has MPI, this binary
// itself (which links MPI) runs two ranks under mpirun, each making an
// mpi::Job, beside two ranks that only start and end MPI (MPI_Init_thread,
// MPI_Finalize). Wall time from spawn to exit and peak memory from the OS's
// accounting of the finished children (ru_maxrss: the largest process),
// medians of N runs.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <canopy/ir/error.hpp>
#if CANOPY_WITH_MPI
#include <mpi.h>

#include <canopy/runtime/mpi/job.hpp>
#endif

#include "process.hpp"
#include "report.hpp"

namespace canopy::bench {

int startup_command(int argc, char** argv) {
#if CANOPY_WITH_MPI
  if (argc >= 1 && !std::strcmp(argv[0], "--child-job")) {
    mpi::Job job(argc, argv);
    return 0;
  }
  if (argc >= 1 && !std::strcmp(argv[0], "--child-mpi")) {
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Finalize();
    return 0;
  }
#endif
  Args args(argc, argv, {});
  const int runs = static_cast<int>(args.count("--runs", 10));
  std::printf("startup: whole processes from spawn to exit, median of %d runs each (peak memory: ru_maxrss)\n", runs);
  std::printf("%-52s %10s %10s\n", "program", "wall ms", "peak MB");
  struct Case {
    const char* name;
    std::vector<std::string> args;
    std::vector<std::string> environment;
    std::string program;
    bool fresh_cache = false;  ///< an empty CANOPY_CACHE_DIR for every run
  };
  const std::string child = (std::filesystem::path(this_program()).parent_path() / "canopy-startup-child").string();
  if (!std::filesystem::exists(child)) throw Error("startup needs " + child + " (built with canopy-bench)");
  std::vector<Case> cases = {
      {"main() returns at once (Canopy's libraries loaded)", {"empty"}, {}, child, false},
      {"Runtime rt; (every device)", {"runtime"}, {}, child, false},
      {"Runtime rt; with CANOPY_DEVICES=cpu", {"runtime"}, {"CANOPY_DEVICES=cpu"}, child, false},
      {"one kernel, warm kernel cache", {"kernel"}, {}, child, false},
      {"one kernel, empty cache folder (cold)", {"kernel"}, {}, child, true},
  };
#if CANOPY_WITH_MPI
  {
    const std::string self = this_program();
    const std::vector<std::string> mpirun{"--allow-run-as-root", "--oversubscribe", "-np", "2"};
    auto under_mpirun = [&](std::vector<std::string> rest) {
      std::vector<std::string> all = mpirun;
      all.insert(all.end(), rest.begin(), rest.end());
      return all;
    };
    cases.push_back({"mpirun -np 2, each rank MPI_Init_thread, MPI_Finalize",
                     under_mpirun({self, "startup", "--child-mpi"}),
                     {},
                     CANOPY_MPIEXEC});
    cases.push_back(
        {"mpirun -np 2, each rank an mpi::Job", under_mpirun({self, "startup", "--child-job"}), {}, CANOPY_MPIEXEC});
  }
#endif
  for (const Case& c : cases) {
    std::vector<double> seconds, megabytes;
    auto once = [&] {
      std::vector<std::string> environment = c.environment;
      std::string folder;
      if (c.fresh_cache) {
        char pattern[] = "/tmp/canopy-startup-XXXXXX";
        if (!mkdtemp(pattern)) throw Error("startup: cannot make a temporary folder");
        folder = pattern;
        environment.push_back("CANOPY_CACHE_DIR=" + folder);
      }
      const ProcessSample s = run_process({c.program, c.args, environment, "", ""});
      if (!folder.empty()) std::filesystem::remove_all(folder);
      return s;
    };
    once();  // warms the page cache and Canopy's disk cache
    for (int k = 0; k < runs; ++k) {
      const ProcessSample s = once();
      seconds.push_back(s.seconds);
      megabytes.push_back(s.megabytes);
    }
    std::printf("%-52s %10.1f %10.1f\n", c.name, median(seconds) * 1e3, median(megabytes));
  }
  return 0;
}

}  // namespace canopy::bench
