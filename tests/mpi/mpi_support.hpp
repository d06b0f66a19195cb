// What the MPI test cases share: the job of this rank (started once by
// tests/mpi/main.cpp, before doctest runs the cases on every rank).
#pragma once

#include <canopy/runtime/mpi/job.hpp>

namespace mpi_test {

/// This rank's job.
canopy::mpi::Job& job();

/// True on every rank when every rank's own `condition` is true (collective).
bool all_ranks(canopy::mpi::Job& job, bool condition);

}  // namespace mpi_test
