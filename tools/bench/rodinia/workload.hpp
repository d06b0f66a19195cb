// The Rodinia workloads as canopy-bench runs them: each one generates its
// input for a size, runs on Canopy (on the leaves a Runtime was given) and on
// its plain baselines (OpenMP, and OpenCL for some), and checks that the
// outputs agree. The Canopy half of every workload lives in
// examples/rodinia/<name>/ and is shared with the example programs.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <canopy/canopy.hpp>

namespace canopy::backends::opencl {
class OpenCLDevice;
}

namespace canopy::bench::rodinia {

enum class Size { Small, Medium, Large };

/// "small", "medium", "large".
const char* name_of(Size size);

/// Where and how the Canopy half runs.
struct Placement {
  std::string location;  ///< the location regions run at (empty: where the arrays are)
  std::string policy = "static";
};

class Workload {
 public:
  virtual ~Workload() = default;

  /// The Rodinia name: "hotspot", "srad_v2", ...
  virtual std::string name() const = 0;
  /// A line saying what the size means ("1024x1024 grid, 1000 iterations").
  virtual std::string describe() const = 0;

  /// Generates the input for `size` (fixed seed); the next runs use it.
  virtual void prepare(Size size) = 0;

  /// Runs the computation with Canopy on `rt`, placed as `where` says, and
  /// keeps its output. Returns the seconds of the computation (input already
  /// on the host; creating the arrays it works in, copying the input to
  /// devices and the result back are included, on every side: the
  /// baselines' own arrays and buffers count too).
  virtual double run_canopy(Runtime& rt, const Placement& where) = 0;
  /// Runs the plain OpenMP baseline (same algorithm) and keeps its output.
  virtual double run_openmp() = 0;
  /// True when the workload has a plain OpenCL baseline.
  virtual bool has_opencl() const { return false; }
  /// Runs the plain OpenCL baseline on `device` and keeps its output.
  virtual double run_opencl(backends::opencl::OpenCLDevice& device);

  /// Compares Canopy's last output with the last baseline's: empty when they
  /// agree (exactly for integers, within the workload's stated tolerance for
  /// floating point), else what differs.
  virtual std::string check() const = 0;
};

/// Every workload, in Rodinia's order of the issue (hotspot, srad_v2,
/// pathfinder, lud, nw, gaussian, backprop, kmeans, nn, bfs, lavaMD).
std::vector<std::unique_ptr<Workload>> all_workloads();

/// Registers a workload factory; each <name>_workload.cpp registers its own
/// with a static Registration object.
struct Registration {
  Registration(int order, std::function<std::unique_ptr<Workload>()> factory);
};

}  // namespace canopy::bench::rodinia
