// Communication of Canopy arrays and slices between ranks, checked by value:
// send/recv, sendrecv, allreduce and bcast. Run with CANOPY_DEVICES=cpu (the
// arrays live in host memory) and with CANOPY_DEVICES=opencl (each rank's
// only leaf is a PoCL device, so regions leave the current copy on the
// device): then only the slice's elements may move to the host for a send,
// and after a receive only the received elements move back to the device.
#include <doctest/doctest.h>

#include <canopy/canopy.hpp>

#include "mpi_support.hpp"

using namespace canopy;

namespace {

// True when every leaf of the rank's tree is a device (no CPU leaf), so the
// regions' results stay in device memory.
bool device_only(Runtime& rt) {
  const Hierarchy tree = rt.hierarchy();
  bool any = false;
  for (const Location* leaf : tree.leaves(*tree.root())) {
    if (leaf->kind() == LocationKind::Cpu) return false;
    any = any || !leaf->traits().device.empty();
  }
  return any;
}

const Kernel<void(Out<double, 2>, Val<double>)>& fill_kernel() {
  static const Kernel<void(Out<double, 2>, Val<double>)> kernel("mpi_fill", [](Out<double, 2> a, Val<double> base) {
    Idx i = index(0), j = index(1);
    a(i, j) = base + cast<double>(i * 100 + j);
  });
  return kernel;
}

const Kernel<void(Out<double, 2>, In<double, 2>)>& plus_one_kernel() {
  static const Kernel<void(Out<double, 2>, In<double, 2>)> kernel("mpi_plus_one",
                                                                  [](Out<double, 2> out, In<double, 2> in) {
                                                                    Idx i = index(0), j = index(1);
                                                                    out(i, j) = in(i, j) + 1.0;
                                                                  });
  return kernel;
}

}  // namespace

TEST_CASE("mpi: send and recv of a slice, staged through the host only where stale") {
  auto& job = mpi_test::job();
  auto& rt = job.runtime();
  REQUIRE(job.size() >= 2);
  const bool on_device = mpi_test::all_ranks(job, device_only(rt));
  MESSAGE(std::string(on_device ? "arrays on devices" : "arrays in host memory"));
  const std::int64_t cols = 5, row_bytes = cols * 8;

  auto a = rt.array<double, 2>(Shape(8, cols));
  rt.region(fill_kernel()).over(8, cols).launch(a, 1000.0 * job.rank());
  rt.pause();
  if (job.rank() == 0) {
    const auto before = rt.stats().transfers;
    job.send(a.slice(2, 5), 1, 7);
    const auto after = rt.stats().transfers;
    // Only the three rows sent came back from the device.
    if (on_device) CHECK(after.device_to_host - before.device_to_host == 3 * row_bytes);
    CHECK(after.host_to_device == before.host_to_device);
  } else if (job.rank() == 1) {
    auto b = rt.array<double, 2>(Shape(4, cols));
    rt.region(fill_kernel()).over(4, cols).launch(b, -1e6);
    rt.pause();
    job.recv(b.slice(1, 4), 0, 7);
    // b's copy on the device is stale in rows 1-3 only: a region there
    // copies in just those.
    auto c = rt.array<double, 2>(Shape(4, cols));
    const auto before = rt.stats().transfers;
    rt.region(plus_one_kernel()).over(4, cols).launch(c, b);
    rt.pause();
    const auto after = rt.stats().transfers;
    if (on_device) CHECK(after.host_to_device - before.host_to_device == 3 * row_bytes);
    auto view = c.host_read();
    for (std::int64_t j = 0; j < cols; ++j) {
      CHECK(view(0, j) == -1e6 + double(j) + 1.0);
      for (std::int64_t i = 1; i < 4; ++i) CHECK(view(i, j) == double((i + 1) * 100 + j) + 1.0);
    }
    auto host = b.host_read();
    CHECK(host(3, 4) == 404.0);
  }
  job.barrier();
}

TEST_CASE("mpi: whole arrays around a ring with sendrecv") {
  auto& job = mpi_test::job();
  auto& rt = job.runtime();
  const int next = (job.rank() + 1) % job.size(), previous = (job.rank() + job.size() - 1) % job.size();
  auto out = rt.array<float>(100), in = rt.array<float>(100);
  {
    auto h = out.host();
    for (int i = 0; i < 100; ++i) h[i] = float(job.rank() * 1000 + i);
  }
  job.sendrecv(out.slice(), next, in.slice(), previous);
  auto h = in.host_read();
  for (int i = 0; i < 100; ++i) CHECK(h[i] == float(previous * 1000 + i));
  // Edges of a domain: no_rank sends and receives nothing.
  auto untouched = rt.array<float>(10);
  job.sendrecv(out.slice(0, 10), mpi::no_rank, untouched.slice(), mpi::no_rank);
  CHECK(untouched.host_read()[3] == 0.0f);
  // Slices of one array must not overlap.
  CHECK_THROWS_AS(job.sendrecv(out.slice(0, 10), next, out.slice(5, 15), previous), Error);
  CHECK_THROWS_AS(out.slice(50, 101), Error);
}

TEST_CASE("mpi: allreduce and bcast of device- or host-resident arrays and slices") {
  auto& job = mpi_test::job();
  auto& rt = job.runtime();
  const std::int64_t size = job.size(), rows = 6, cols = 4;
  auto a = rt.array<double, 2>(Shape(rows, cols));
  rt.region(fill_kernel()).over(rows, cols).launch(a, double(job.rank()));
  rt.pause();
  job.allreduce(a, mpi::Op::Sum);
  // Then a region reads the reduced values where the array's copies are.
  auto b = rt.array<double, 2>(Shape(rows, cols));
  rt.region(plus_one_kernel()).over(rows, cols).launch(b, a);
  rt.pause();
  {
    auto view = b.host_read();
    const double ranks_sum = double(size * (size - 1) / 2);
    for (std::int64_t i = 0; i < rows; ++i)
      for (std::int64_t j = 0; j < cols; ++j) CHECK(view(i, j) == ranks_sum + double(size * (i * 100 + j)) + 1.0);
  }
  // Max over a slice: rows 2-3 only change.
  rt.region(fill_kernel()).over(rows, cols).launch(a, double(job.rank()));
  rt.pause();
  job.allreduce(a.slice(2, 4), mpi::Op::Max);
  {
    auto view = a.host_read();
    CHECK(view(1, 0) == double(job.rank()) + 100.0);
    CHECK(view(2, 1) == double(size - 1) + 201.0);
    CHECK(view(3, 3) == double(size - 1) + 303.0);
    CHECK(view(4, 0) == double(job.rank()) + 400.0);
  }
  // bcast of a slice from the last rank into rows 0-1 of everyone's array.
  rt.region(fill_kernel()).over(rows, cols).launch(a, 10000.0 * double(job.rank()));
  rt.pause();
  job.bcast(a.slice(0, 2), int(size - 1));
  rt.region(plus_one_kernel()).over(rows, cols).launch(b, a);
  rt.pause();
  auto view = b.host_read();
  CHECK(view(1, 2) == 10000.0 * double(size - 1) + 102.0 + 1.0);
  CHECK(view(5, 0) == 10000.0 * double(job.rank()) + 500.0 + 1.0);
  // Scalars.
  CHECK(job.allreduce(double(job.rank()), mpi::Op::Max) == double(size - 1));
  CHECK(job.allreduce(std::int64_t{job.rank()} + 1, mpi::Op::Sum) == size * (size + 1) / 2);
  const auto all = job.allgather(double(job.rank()) * 2.0);
  REQUIRE(all.size() == static_cast<std::size_t>(size));
  CHECK(all.back() == double(size - 1) * 2.0);
}

TEST_CASE("mpi: a receive of another length than the slice is an error that names both") {
  auto& job = mpi_test::job();
  auto& rt = job.runtime();
  auto a = rt.array<std::int32_t>(8);
  // Rank 0 sends `sent` elements, rank 1 receives them into 4, which must fail naming both.
  auto refused = [&](std::int64_t sent, int tag) {
    if (job.rank() == 0) {
      job.send(a.slice(0, sent), 1, tag);
    } else if (job.rank() == 1) {
      try {
        job.recv(a.slice(0, 4), 0, tag);
        FAIL("recv of " << sent << " elements into 4 did not throw");
      } catch (const Error& e) {
        CHECK(std::string(e.what()).find("sent " + std::to_string(sent) + " elements, the slice holds 4") !=
              std::string::npos);
      }
    }
  };
  refused(3, 9);
  // A longer message too: it is taken whole and named by its length (MPI
  // alone says MPI_ERR_TRUNCATE), and the next message still arrives.
  refused(6, 10);
  if (job.rank() == 0) job.send(a.slice(0, 2), 1, 10);
  if (job.rank() == 1) job.recv(a.slice(0, 2), 0, 10);
  // A peer is a rank or no_rank (-2 was taken for no_rank), a tag 0 or more
  // (-1 is MPI's wildcard in a receive).
  CHECK_THROWS_WITH_AS(job.send(a.slice(0, 2), -2, 3), doctest::Contains("rank -2 is not a rank of this job"), Error);
  CHECK_THROWS_WITH_AS(job.recv(a.slice(0, 2), job.size(), 3), doctest::Contains("is not a rank of this job"), Error);
  CHECK_THROWS_WITH_AS(job.recv(a.slice(0, 2), 0, -1), doctest::Contains("tag -1 is negative"), Error);
  // sendrecv between ranks 0 and 1: each sends 6 into the other's 4 (MPI's
  // raw MPI_ERR_TRUNCATE before), then 2 into 2 still arrives.
  if (job.rank() < 2 && job.size() > 1) {
    auto b = rt.array<std::int32_t>(16);
    const int other = 1 - job.rank();
    try {
      job.sendrecv(b.slice(0, 6), other, b.slice(8, 12), other, 11);
      FAIL("sendrecv of 6 elements into 4 did not throw");
    } catch (const Error& e) {
      CHECK(std::string(e.what()).find("sent 6 elements, the slice holds 4") != std::string::npos);
    }
    {
      auto view = b.host();
      view[0] = 40 + job.rank();
      view[1] = 50 + job.rank();
    }
    job.sendrecv(b.slice(0, 2), other, b.slice(8, 10), other, 11);
    CHECK(b.host_read()[8] == 40 + other);
    CHECK(b.host_read()[9] == 50 + other);
  }
  job.barrier();
}

TEST_CASE("mpi: allreduce and bcast of slices of different lengths or types on the ranks: every rank throws") {
  // Before, MPI truncated on some ranks and left another waiting for ever.
  auto& job = mpi_test::job();
  auto& rt = job.runtime();
  auto a = rt.array<double>(10 + job.rank());  // a length of each rank's own
  auto expect_refusal = [&](const char* what, auto&& call) {
    CAPTURE(what);
    try {
      call();
      FAIL("no error");
    } catch (const Error& e) {
      CHECK(std::string(e.what()).find(std::string(what) + " of ") == 0);
      CHECK(std::string(e.what()).find("the ranks give slices of 10 to " + std::to_string(9 + job.size()) +
                                       " elements (this rank " + std::to_string(10 + job.rank()) + ")") !=
            std::string::npos);
    }
  };
  if (job.size() > 1) {
    expect_refusal("allreduce", [&] { job.allreduce(a, mpi::Op::Sum); });
    expect_refusal("bcast", [&] { job.bcast(a, 0); });
    // One length, two types.
    auto b = rt.array<double>(4);
    auto c = rt.array<float>(4);
    try {
      if (job.rank() == 0)
        job.allreduce(c, mpi::Op::Sum);
      else
        job.allreduce(b, mpi::Op::Sum);
      FAIL("no error");
    } catch (const Error& e) {
      CHECK(std::string(e.what()).find("different element types") != std::string::npos);
    }
  }
  if (job.size() > 1) {
    // One length and type, two roots: rank 0 kept its data and another rank
    // took a third's (found by a new user).
    auto d = rt.array<double>(4);
    try {
      job.bcast(d, job.rank() == 0 ? 0 : 1);
      FAIL("no error");
    } catch (const Error& e) {
      CHECK(std::string(e.what()).find("the ranks name roots 0 to 1") != std::string::npos);
    }
  }
  // A sum of bools is not a bool (it gave bytes of 3); Max is any rank's true.
  auto flags = rt.array<bool>(3);
  {
    auto view = flags.host();
    for (std::int64_t i = 0; i < 3; ++i) view[i] = i == job.rank() % 3;
  }
  CHECK_THROWS_WITH_AS(job.allreduce(flags, mpi::Op::Sum), doctest::Contains("a sum of bools is not a bool"), Error);
  job.allreduce(flags, mpi::Op::Max);
  {
    const auto view = flags.host_read();
    for (std::int64_t i = 0; i < 3; ++i) CHECK(view[i] == (i < job.size()));
  }
  // The same lengths still reduce.
  auto same = rt.array<double>(5);
  {
    auto view = same.host();
    for (std::int64_t i = 0; i < 5; ++i) view[i] = double(job.rank() + i);
  }
  job.allreduce(same, mpi::Op::Sum);
  const auto view = same.host_read();
  const double ranks = job.size(), rank_sum = ranks * (ranks - 1) / 2;
  for (std::int64_t i = 0; i < 5; ++i) CHECK(view[i] == rank_sum + ranks * double(i));
  job.barrier();
}
