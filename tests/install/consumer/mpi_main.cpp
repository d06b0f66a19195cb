// Built against an installed Canopy and its MPI library (Canopy::canopy_mpi):
// every rank sums its own array and the job adds the ranks' sums.
#include <canopy/canopy.hpp>
#include <canopy/runtime/mpi/job.hpp>

#include <cstdio>

int main(int argc, char** argv) {
  using namespace canopy;
  mpi::Job job(argc, argv);
  Runtime& rt = job.runtime();
  const std::int64_t n = 1000;
  auto x = rt.array<double>(n);
  Kernel fill("fill", [](Out<double> x) {
    Idx i = index(0);
    x[i] = cast<double>(i) * 0.5;
  });
  Kernel total("total", [](In<double> x, Sum<double> s) { s += x[index(0)]; });
  rt.region(fill).over(n).launch(x);
  const double mine = rt.region(total).over(n).reduce(x);
  const double sum = job.allreduce(mine, mpi::Op::Sum);
  if (job.rank() == 0) std::printf("ranks %d sum %.1f\n", job.size(), sum);  // 249750 per rank
  return sum == 249750.0 * job.size() ? 0 : 1;
}
