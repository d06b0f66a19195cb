// The job itself: ranks on one node hold disjoint parts of it, every rank's
// tree reaches rank 0, and a kernel is compiled once per kind of device in
// the whole job (the others load the binary it shared), while ranks sharing
// one cache directory never see a damaged entry.
#include <doctest/doctest.h>
#include <mpi.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>

#include <canopy/canopy.hpp>
#include <canopy/jit/disk_cache.hpp>

#include "mpi_support.hpp"

using namespace canopy;

TEST_CASE("mpi job: ranks on one node take disjoint cores and devices; rank 0 sees every tree") {
  auto& job = mpi_test::job();
  CHECK(job.local_size() <= job.size());
  CHECK(job.local_rank() < job.local_size());
  const RankShare& share = job.share();
  CHECK(share.local_rank == job.local_rank());
  // Each rank's PUs and devices as bit masks; on one node no bit is in two
  // ranks' masks unless the assignment said it shares.
  double pus = 0, devices = 0;
  for (unsigned pu : share.pus) pus += double(1ull << pu);
  for (const auto& id : share.device_ids) {
    const auto colon = id.find(':');
    const int backend = id.substr(0, colon) == "opencl" ? 0 : id.substr(0, colon) == "cuda" ? 16 : 32;
    devices += double(1ull << (backend + std::stoi(id.substr(colon + 1))));
  }
  const auto all_pus = job.allgather(pus), all_devices = job.allgather(devices);
  const bool sharing =
      job.allreduce(std::int64_t{share.shares_cores || !share.shared_devices.empty()}, mpi::Op::Max) == 1;
  if (!sharing && job.nodes() == 1) {
    for (std::size_t r = 0; r < all_pus.size(); ++r)
      for (std::size_t s = r + 1; s < all_pus.size(); ++s) {
        CHECK((static_cast<unsigned long long>(all_pus[r]) & static_cast<unsigned long long>(all_pus[s])) == 0);
        CHECK((static_cast<unsigned long long>(all_devices[r]) & static_cast<unsigned long long>(all_devices[s])) == 0);
      }
  }
  // The rank's runtime uses only its share.
  const Hierarchy tree = job.runtime().hierarchy();
  for (const Location* leaf : tree.leaves(*tree.root())) {
    for (unsigned pu : leaf->traits().pus) CHECK(std::count(share.pus.begin(), share.pus.end(), pu) == 1);
    if (!leaf->traits().device.empty())
      CHECK(std::count(share.device_ids.begin(), share.device_ids.end(), leaf->traits().device) == 1);
  }
  const auto ranks = job.hierarchies();
  if (job.rank() == 0) {
    REQUIRE(ranks.size() == static_cast<std::size_t>(job.size()));
    for (int r = 0; r < job.size(); ++r) {
      CHECK(ranks[r].rank == r);
      CHECK(ranks[r].hierarchy.rfind("node [virtual]", 0) == 0);
      CHECK(ranks[r].share.rfind("local rank ", 0) == 0);
    }
    const std::string text = mpi::job_text(ranks);
    CHECK(text.find("job: " + std::to_string(job.size()) + " rank(s) on 1 node(s)") == 0);
    CHECK(text.find("  rank " + std::to_string(job.size() - 1) + " (local rank") != std::string::npos);
  } else {
    CHECK(ranks.empty());
  }
}

TEST_CASE("mpi job: a rank's cores are cores its process may use (taskset, the launcher's binding)") {
  // CTest runs this under `taskset -c 1 mpirun --bind-to none` too: every
  // rank may use core 1 alone, and until 2026-11-29 rank 0 was given core 0.
  auto& job = mpi_test::job();
  cpu_set_t mask;
  CPU_ZERO(&mask);
  REQUIRE(sched_getaffinity(0, sizeof mask, &mask) == 0);
  const RankShare& share = job.share();
  const char* devices = std::getenv("CANOPY_DEVICES");
  if (devices && std::string(devices) == "cpu") REQUIRE_FALSE(share.pus.empty());  // a CPU leaf on every rank
  for (unsigned pu : share.pus) CHECK(CPU_ISSET(pu, &mask));
  const Hierarchy tree = job.runtime().hierarchy();
  for (const Location* leaf : tree.leaves(*tree.root()))
    for (unsigned pu : leaf->traits().pus) CHECK(CPU_ISSET(pu, &mask));
}

// Whether MPI's control variable `name` (an integer or a bool, read through
// MPI_T) is other than 0; nullopt where this MPI has none of that name.
std::optional<bool> control_variable_set(const std::string& name) {
  int provided = 0, count = 0;
  if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS) return std::nullopt;
  std::optional<bool> value;
  MPI_T_cvar_get_num(&count);
  for (int i = 0; i < count && !value; ++i) {
    char found[256];
    int found_length = sizeof found, verbosity = 0, binding = 0, scope = 0, description_length = 0, size = 0;
    MPI_Datatype type;
    MPI_T_enum values;
    if (MPI_T_cvar_get_info(i, found, &found_length, &verbosity, &type, &values, nullptr, &description_length, &binding,
                            &scope) != MPI_SUCCESS ||
        name != found || MPI_Type_size(type, &size) != MPI_SUCCESS || size > 8)
      continue;
    MPI_T_cvar_handle handle;
    int elements = 0;
    unsigned char bytes[16] = {};
    if (MPI_T_cvar_handle_alloc(i, nullptr, &handle, &elements) != MPI_SUCCESS) continue;
    if (elements == 1 && MPI_T_cvar_read(handle, bytes) == MPI_SUCCESS)
      value = std::any_of(bytes, bytes + size, [](unsigned char b) { return b != 0; });
    MPI_T_cvar_handle_free(&handle);
  }
  MPI_T_finalize();
  return value;
}

TEST_CASE("mpi job: a rank waiting in MPI yields its core to the rank's leaves (Open MPI)") {
  // CTest runs this without --mca mpi_yield_when_idle, on no more ranks
  // than cores, where Open MPI spins: the Job asked for yielding before
  // MPI_Init.
  mpi_test::job();
  const auto yield = control_variable_set("mpi_yield_when_idle");
#ifdef OPEN_MPI
  REQUIRE(yield.has_value());
  CHECK(*yield);
#else
  MESSAGE("not Open MPI: mpi_yield_when_idle is " << (yield ? (*yield ? "set" : "not set") : "absent"));
#endif
}

TEST_CASE("mpi job: a kernel is compiled once per kind of device, and the others load it") {
  auto& job = mpi_test::job();
  auto& rt = job.runtime();
  // A constant no earlier run has used, so no cache holds the kernel yet.
  const double salt = job.allreduce(
      job.rank() == 0 ? double(std::chrono::system_clock::now().time_since_epoch().count() % 1000003) : 0.0,
      mpi::Op::Sum);
  Kernel<void(Out<double>, In<double>)> salted("mpi_salted", [salt](Out<double> out, In<double> in) {
    Idx i = index(0);
    out[i] = in[i] * 2.0 + salt;
  });
  const mpi::CompileReport first = job.compile(salted);
  CHECK(first.kernel == "mpi_salted");
  REQUIRE_FALSE(first.kinds.empty());
  // Every rank of these tests runs on one kind of node: the same kinds, in the same order.
  const auto kinds = job.allreduce(std::int64_t(first.kinds.size()), mpi::Op::Min);
  REQUIRE(kinds == std::int64_t(first.kinds.size()));
  for (const auto& kind : first.kinds) {
    CAPTURE(kind.fingerprint);
    CHECK(kind.ranks == job.size());
    const auto built = job.allreduce(std::int64_t{kind.built}, mpi::Op::Sum);
    CHECK(built == 1);  // one compile of this kind in the whole job
    const auto shared = job.allreduce(std::int64_t{kind.shared}, mpi::Op::Sum);
    CHECK(shared == job.size() - 1);  // the others loaded the shared binary
  }
  MESSAGE("rank " << job.rank() << " built " << first.built() << " of " << first.kinds.size() << " kind(s)");
  // Asked again, nobody compiles.
  const mpi::CompileReport again = job.compile(salted);
  CHECK(job.allreduce(std::int64_t{again.built()}, mpi::Op::Sum) == 0);
  // And the program runs.
  auto in = rt.array<double>(1000), out = rt.array<double>(1000);
  {
    auto h = in.host();
    for (int i = 0; i < 1000; ++i) h[i] = i;
  }
  rt.region(salted).over(1000).launch(out, in);
  rt.pause();
  auto h = out.host_read();
  CHECK(h[0] == salt);
  CHECK(h[999] == 1998.0 + salt);
}

TEST_CASE("mpi job: ranks writing one cache directory at once never read a damaged entry") {
  auto& job = mpi_test::job();
  const double stamp = job.allreduce(
      job.rank() == 0 ? double(std::chrono::steady_clock::now().time_since_epoch().count() % 1000000007) : 0.0,
      mpi::Op::Sum);
  const auto directory = std::filesystem::temp_directory_path() / ("canopy-mpi-cache-" + std::to_string(long(stamp)));
  jit::DiskCache cache(directory.string());
  job.barrier();
  int valid = 0, absent = 0, wrong = 0;
  for (int round = 0; round < 200; ++round) {
    const std::string key = "entry" + std::to_string(round % 7);
    // Every rank writes its own payload (of its own length) under the same keys.
    const std::string payload(std::size_t(1000 + 97 * job.rank() + round % 7), char('a' + job.rank()));
    cache.put(key, payload);
    const auto got = cache.get("entry" + std::to_string((round + 3) % 7));
    if (!got) {
      ++absent;
      continue;
    }
    bool whole = false;
    for (int r = 0; r < job.size(); ++r)
      whole = whole || *got == std::string(std::size_t(1000 + 97 * r + (round + 3) % 7), char('a' + r));
    whole ? ++valid : ++wrong;
  }
  CHECK(wrong == 0);
  CHECK(cache.counters().corrupt == 0);
  CHECK(cache.counters().write_failures == 0);
  CHECK(valid + absent == 200);
  job.barrier();
  if (job.rank() == 0) std::filesystem::remove_all(directory);
}
