// canopy-bench: Canopy's benchmarks. Each command runs Canopy and a plain
// baseline side by side in one process and prints the ratio.
#include <cstdio>
#include <cstring>
#include <string>

#include <canopy/ir/error.hpp>

namespace canopy::bench {
int stream_command(int argc, char** argv);
int overhead_command(int argc, char** argv);
int leaves_command(int argc, char** argv);
int halo_command(int argc, char** argv);
int rodinia_command(int argc, char** argv);
int sweep_command(int argc, char** argv);
int model_command(int argc, char** argv);
int adaptive_command(int argc, char** argv);
int scatter_command(int argc, char** argv);
int kernels_command(int argc, char** argv);
int compile_command(int argc, char** argv);
int startup_command(int argc, char** argv);
int fusion_command(int argc, char** argv);
int sequence_command(int argc, char** argv);
#ifdef CANOPY_WITH_MPI
int mpi_command(int argc, char** argv);
#endif
}  // namespace canopy::bench

namespace {

void usage(std::FILE* out) {
  std::fprintf(
      out,
      "usage: canopy-bench COMMAND [options]\n"
      "commands:\n"
      "  stream   BabelStream's kernels (copy, mul, add, triad, dot)\n"
      "           --size N (2^25)  --repeat K (20)  --float  --compare (with the OpenMP baseline)\n"
      "           --device cpu|opencl  --policy P  --json FILE\n"
      "  overhead launch + pause of an empty region on one CPU leaf, beside an empty OpenMP parallel for\n"
      "           --repeat N (20000)  --size N (default: 1000 and 1000000 points)  --json FILE\n"
      "  leaves   STREAM triad through the runtime on one-core CPU leaves, beside the CPU backend called\n"
      "           directly with the same cores\n"
      "           --size N (2^25)  --repeat K (20)  --policy P (static)  --json FILE\n"
      "  halo     a 2-D stencil split over the CPU leaf and an OpenCL device (or two devices): bytes moved per\n"
      "           iteration, device memory held\n"
      "           --rows N (2048)  --cols N (2048)  --iterations K (100)  --policy P (50/50 to the two leaves)\n"
      "           --check (the result against plain loops)\n"
      "  rodinia  the Rodinia workloads beside their OpenMP (and OpenCL) baselines\n"
      "           [NAMES...]  --size small|medium|large  --device cpu|opencl|all  --policy P  --repeat K (3)\n"
      "           --json FILE\n"
      "           --whole-process: each example program and its OpenMP port (rodinia-openmp) run whole,\n"
      "           as separate processes on the same files: wall time, peak memory, the cold Canopy run\n"
      "           [NAMES...]  --size small|medium  --runs K (3)\n"
      "  sweep    Rodinia workloads split over two devices' leaves, for percentage:[p,100-p], p = 0..100\n"
      "           NAMES...  --devices cpu,opencl  --size small|medium|large[,...]  --repeat K (3)\n"
      "           --step P (10)  --json FILE (rows: workload, size, split_cpu_percent = p, seconds)\n"
      "  model    predicted and measured times of triad and a 2-D stencil on two leaves, and the\n"
      "           predicted against the measured ratio of their times\n"
      "           --leaves A,B (a CPU and an OpenCL leaf)  --size N (2^23)  --rows N (2048)\n"
      "           --cols N (4098)  --repeat K (5)  --cached (model from the cache dir)  --json FILE\n"
      "  adaptive the adaptive policy's split of a triad and a 2-D stencil over two leaves, launch by\n"
      "           launch, beside percentage:[p,100-p] for p = 0..100 step 10\n"
      "           --leaves A,B (a CPU and a device leaf)  --size N (2^24)  --rows N (2048)\n"
      "           --cols N (4096)  --launches L (20)  --resume  --json FILE\n"
      "  scatter  a histogram (atomic adds) and a permutation scatter split over a CPU leaf and an OpenCL\n"
      "           device, beside each leaf alone: what keeping every write costs\n"
      "           --size N (2^22)  --bins B (64)  --repeat K (10)  --json FILE\n"
      "  kernels  five kernels beside OpenMP loops: n-body (float), a naive matrix product (double),\n"
      "           kmeans' nearest centre, a Mandelbrot set and a branch per point; results checked\n"
      "           [NAMES...]  --repeat K (5)  --bodies N (8192)  --order N (512)  --points N (2^18)\n"
      "           --pixels N (1024)  --elements N (2^23)  --json FILE\n"
      "  compile  first launches of five kernels compiled from scratch: launched at once, and after\n"
      "           rt.compile() and some other work  --size N (100000)  --work MS (30)\n"
      "  startup  whole processes from exec to exit: nothing, `Runtime rt;`, and `Runtime rt;` with\n"
      "           CANOPY_DEVICES=cpu; median wall time and peak memory  --runs N (10)\n"
      "  fusion   chains of element-wise regions fused and unfused, interleaved: init->triad->dot (time,\n"
      "           modelled DRAM bytes), a 5-step pipeline with dropped intermediates (time, host memory they\n"
      "           took), a 50 ms region overlapping 50 ms of host work  --size N (2^25)  --repeat K (7)\n"
      "           --json FILE\n"
      "  sequence a loop of two kernels over the same arrays, split by adaptive over a CPU and a device leaf,\n"
      "           with sequence placement on and off: loop time and bytes moved per iteration\n"
      "           --leaves A,B  --size N (2^22)  --warm W (8)  --iterations I (20)  --repeat K (5)  --json FILE\n"
      "  mpi      2-D heat over 2 MPI ranks, one CPU-only (one core) and one OpenCL-only: per-rank compute\n"
      "           time per iteration after rebalancing, and the run beside the same run with an even split\n"
      "           (starts mpirun itself unless run under it)  --rows N (2048)  --cols N (1024)\n"
      "           --iterations K (400)  --rebalance-after K (25)  --rebalances R (6)  --repeat N (3)\n"
      "           --runs N (1: one report; more: one line per run and how many met the goal)\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
    usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  const std::string command = argv[1];
  try {
    if (command == "stream") return canopy::bench::stream_command(argc - 2, argv + 2);
    if (command == "overhead") return canopy::bench::overhead_command(argc - 2, argv + 2);
    if (command == "leaves") return canopy::bench::leaves_command(argc - 2, argv + 2);
    if (command == "halo") return canopy::bench::halo_command(argc - 2, argv + 2);
    if (command == "rodinia") return canopy::bench::rodinia_command(argc - 2, argv + 2);
    if (command == "sweep") return canopy::bench::sweep_command(argc - 2, argv + 2);
    if (command == "model") return canopy::bench::model_command(argc - 2, argv + 2);
    if (command == "adaptive") return canopy::bench::adaptive_command(argc - 2, argv + 2);
    if (command == "scatter") return canopy::bench::scatter_command(argc - 2, argv + 2);
    if (command == "kernels") return canopy::bench::kernels_command(argc - 2, argv + 2);
    if (command == "compile") return canopy::bench::compile_command(argc - 2, argv + 2);
    if (command == "startup") return canopy::bench::startup_command(argc - 2, argv + 2);
    if (command == "fusion") return canopy::bench::fusion_command(argc - 2, argv + 2);
    if (command == "sequence") return canopy::bench::sequence_command(argc - 2, argv + 2);
    if (command == "mpi") {
#ifdef CANOPY_WITH_MPI
      return canopy::bench::mpi_command(argc, argv);
#else
      std::fprintf(stderr, "canopy-bench mpi: this canopy-bench was built without MPI (install libopenmpi-dev)\n");
      return 1;
#endif
    }
  } catch (const canopy::Error& e) {
    std::fprintf(stderr, "canopy-bench %s: %s\n", command.c_str(), e.what());
    return 1;
  }
  std::fprintf(stderr, "canopy-bench: unknown command '%s'\n", command.c_str());
  usage(stderr);
  return 2;
}
