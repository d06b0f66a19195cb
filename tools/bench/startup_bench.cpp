// canopy-bench startup: what a program pays before its first kernel, timed as
// users time it, a whole process from exec to exit. The child is this same
// binary (linked as a Canopy program is) run with a hidden flag: doing
// nothing; making `Runtime rt;` with every device and with
// CANOPY_DEVICES=cpu; running one small kernel with a warm kernel cache and
// with an empty cache folder (a first run on a new node: the kernel is
// compiled and the devices discovered); and, where Canopy has MPI, two ranks
// under mpirun each making an mpi::Job, beside two ranks that only start
// and end MPI (MPI_Init_thread, MPI_Finalize). Wall time from spawn to exit and peak memory
// from the OS's accounting of the finished children (ru_maxrss: the largest
// process), medians of N runs.
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <canopy/canopy.hpp>
#if CANOPY_WITH_MPI
#include <mpi.h>

#include <canopy/runtime/mpi/job.hpp>
#endif

#include "report.hpp"

extern char** environ;

namespace canopy::bench {

namespace {

struct Sample {
  double seconds = 0;
  double megabytes = 0;
};

// Runs `program` (empty: this binary) with `args` and `extra` added to the environment.
Sample run_child(const std::vector<std::string>& args, const std::vector<std::string>& extra,
                 const std::string& program = "") {
  std::vector<std::string> environment;
  for (char** e = environ; *e; ++e) {
    const std::string entry = *e;
    bool replaced = false;
    for (const std::string& x : extra)
      replaced = replaced || entry.substr(0, entry.find('=')) == x.substr(0, x.find('='));
    if (!replaced) environment.push_back(entry);
  }
  environment.insert(environment.end(), extra.begin(), extra.end());
  std::vector<char*> argv{const_cast<char*>(program.empty() ? "/proc/self/exe" : program.c_str())}, envp;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (const std::string& e : environment) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  char self[4096];
  const ssize_t length = readlink("/proc/self/exe", self, sizeof self - 1);
  if (length <= 0) throw Error("startup: cannot find this program's path");
  self[length] = '\0';
  const std::string path = program.empty() ? std::string(self) : program;
  const auto start = std::chrono::steady_clock::now();
  pid_t child = 0;
  if (posix_spawnp(&child, path.c_str(), nullptr, nullptr, argv.data(), envp.data()) != 0)
    throw Error("startup: cannot start a child process");
  int status = 0;
  rusage usage{};
  wait4(child, &status, 0, &usage);
  Sample sample;
  sample.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  sample.megabytes = static_cast<double>(usage.ru_maxrss) / 1024.0;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) throw Error("startup: a child process failed");
  return sample;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

/// The program of the one-kernel cases: a triad over 2^16 doubles, checked.
int one_kernel() {
  Runtime rt;
  const std::int64_t n = 1 << 16;
  auto a = rt.array<double>(n), b = rt.array<double>(n);
  Kernel triad("startup_triad", [](Out<double> a, In<double> b, Val<double> s) {
    Idx i = index(0);
    a[i] = b[i] * s + 1.0;
  });
  auto bh = b.host();
  for (std::int64_t i = 0; i < n; ++i) bh[i] = double(i);
  rt.region(triad).over(n).launch(a, b, 2.0);
  return a.host()[n - 1] == 2.0 * double(n - 1) + 1.0 ? 0 : 1;
}

}  // namespace

int startup_command(int argc, char** argv) {
  if (argc >= 1 && !std::strcmp(argv[0], "--child-empty")) return 0;
  if (argc >= 1 && !std::strcmp(argv[0], "--child-runtime")) {
    Runtime rt;
    return 0;
  }
  if (argc >= 1 && !std::strcmp(argv[0], "--child-kernel")) return one_kernel();
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
    std::string program;       ///< empty: this binary
    bool fresh_cache = false;  ///< an empty CANOPY_CACHE_DIR for every run
  };
  std::vector<Case> cases = {
      {"main() returns at once (Canopy's libraries loaded)", {"startup", "--child-empty"}, {}, "", false},
      {"Runtime rt; (every device)", {"startup", "--child-runtime"}, {}, "", false},
      {"Runtime rt; with CANOPY_DEVICES=cpu", {"startup", "--child-runtime"}, {"CANOPY_DEVICES=cpu"}, "", false},
      {"one kernel, warm kernel cache", {"startup", "--child-kernel"}, {}, "", false},
      {"one kernel, empty cache folder (cold)", {"startup", "--child-kernel"}, {}, "", true},
  };
#if CANOPY_WITH_MPI
  char self[4096];
  const ssize_t length = readlink("/proc/self/exe", self, sizeof self - 1);
  if (length > 0) {
    self[length] = '\0';
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
      const Sample s = run_child(c.args, environment, c.program);
      if (!folder.empty()) std::filesystem::remove_all(folder);
      return s;
    };
    once();  // warms the page cache and Canopy's disk cache
    for (int k = 0; k < runs; ++k) {
      const Sample s = once();
      seconds.push_back(s.seconds);
      megabytes.push_back(s.megabytes);
    }
    std::printf("%-52s %10.1f %10.1f\n", c.name, median(seconds) * 1e3, median(megabytes));
  }
  return 0;
}

}  // namespace canopy::bench
