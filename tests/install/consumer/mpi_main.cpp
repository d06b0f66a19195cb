// Built against an installed Canopy and its MPI library (Canopy::canopy_mpi):
// every rank computes the sum on its own Runtime and the job adds them.
#include <canopy/canopy.hpp>
#include <canopy/runtime/mpi/job.hpp>

#include <cstdio>

#include "half_sum.hpp"

int main(int argc, char** argv) {
  canopy::mpi::Job job(argc, argv);
  const double sum = job.allreduce(half_sum(job.runtime()), canopy::mpi::Op::Sum);
  if (job.rank() == 0) std::printf("ranks %d sum %.1f\n", job.size(), sum);
  return sum == 249750.0 * job.size() ? 0 : 1;
}
