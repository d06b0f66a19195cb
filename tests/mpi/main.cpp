// The MPI suite's main: starts the job (MPI) once, runs the doctest cases on
// every rank (the collective ones in the same order everywhere), and fails
// when any rank failed.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "mpi_support.hpp"

namespace {
canopy::mpi::Job* the_job = nullptr;
}

namespace mpi_test {

canopy::mpi::Job& job() { return *the_job; }

bool all_ranks(canopy::mpi::Job& job, bool condition) {
  return job.allreduce(std::int64_t{condition ? 1 : 0}, canopy::mpi::Op::Min) == 1;
}

}  // namespace mpi_test

int main(int argc, char** argv) {
  try {
    canopy::mpi::Job job(argc, argv);
    the_job = &job;
    // mpi-job-throw: one rank fails while the others go on to the collective
    // cases. The job must end with its message (it hung, unprinted).
    if (const char* failing = std::getenv("CANOPY_TEST_FAILING_RANK"); failing && std::atoi(failing) == job.rank())
      throw canopy::Error("rank " + std::to_string(job.rank()) + " failed on purpose");
    doctest::Context context(argc, argv);
    const int failed = context.run();
    const std::int64_t any = job.allreduce(std::int64_t{failed != 0}, canopy::mpi::Op::Max);
    return any != 0 ? 1 : 0;
  } catch (const canopy::Error& e) {
    std::fprintf(stderr, "canopy-test-mpi: %s\n", e.what());
    return 1;
  }
}
