// Whole processes timed as users time them, for canopy-bench startup and
// rodinia --whole-process: spawned, waited for, and measured from the
// outside (wall time from spawn to exit; peak memory from the OS's
// accounting of the finished child, ru_maxrss).
#pragma once

#include <string>
#include <vector>

namespace canopy::bench {

struct ProcessRun {
  std::string program;            ///< a path, or a name looked up on the PATH
  std::vector<std::string> args;  ///< without the program's name
  /// Added to this process's environment (replacing variables of the same name).
  std::vector<std::string> environment;
  std::string directory;  ///< where it runs; empty: here
  std::string output;     ///< where its standard output and error go; empty: /dev/null
};

struct ProcessSample {
  double seconds = 0;
  double megabytes = 0;  ///< peak resident memory
};

/// Runs `run` to its end. Throws canopy::Error naming the program when it
/// cannot start or does not exit with status 0.
ProcessSample run_process(const ProcessRun& run);

/// This program's own path (/proc/self/exe).
std::string this_program();

/// The median of `values` (not empty).
double median(std::vector<double> values);

}  // namespace canopy::bench
