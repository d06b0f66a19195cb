// The CPU thread pool: how a range is cut into chunks, that every chunk runs
// exactly once even when a member is held up and the others take over the
// rest of its block, and that a run does not wait for a helper that never
// came once its chunks are done.
#include <doctest/doctest.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <canopy/backends/cpu/thread_pool.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <future>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

using canopy::backends::cpu::ThreadPool;

namespace {

// Every chunk of [begin, end), in order.
std::vector<std::pair<std::int64_t, std::int64_t>> all_chunks(std::int64_t begin, std::int64_t end, int chunks,
                                                              std::int64_t grain) {
  std::vector<std::pair<std::int64_t, std::int64_t>> out;
  for (int c = 0; c < chunks; ++c) out.push_back(ThreadPool::chunk_bounds(begin, end, chunks, c, grain));
  return out;
}

// The threads of the process named canopy:helper (ThreadPool's), by id.
std::set<long> helper_threads() {
  std::set<long> ids;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(task.path() / "comm");
    std::string name;
    std::getline(comm, name);
    if (name == "canopy:helper") ids.insert(std::stol(task.path().filename().string()));
  }
  return ids;
}

// A thread sent SIGUSR1 waits in the handler until `thawed`: frozen wherever
// it was (polling, asleep, between two instructions). `frozen` and `left`
// say that it entered the handler and returned from it: the signal is
// delivered only once the thread is scheduled, and one still pending when
// the test restores the default action would end the process.
std::atomic<bool> thawed{false}, frozen{false}, left{false};
void wait_for_thaw(int) {
  frozen.store(true);
  while (!thawed.load()) {
    const timespec millisecond{0, 1000000};
    nanosleep(&millisecond, nullptr);
  }
  left.store(true);
}

// Waits up to 5 s for `flag`; its value then.
bool wait_for(const std::atomic<bool>& flag) {
  for (int k = 0; k < 5000 && !flag.load(); ++k) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return flag.load();
}

}  // namespace

TEST_CASE("chunk_bounds: chunks tile the range in order, nearly equal, inner bounds on the grain") {
  struct Case {
    std::int64_t begin, end;
    int chunks;
    std::int64_t grain;
  };
  const std::vector<Case> cases = {{0, 1024, 16, 1}, {0, 1000, 16, 16}, {5, 1003, 16, 16}, {-37, 4099, 7, 16},
                                   {0, 3, 16, 1},    {0, 15, 4, 16},    {100, 100, 4, 1},  {0, 1 << 20, 16, 16},
                                   {17, 18, 2, 16},  {0, 33, 2, 16}};
  for (const auto& c : cases) {
    CAPTURE(c.begin);
    CAPTURE(c.end);
    CAPTURE(c.chunks);
    CAPTURE(c.grain);
    const auto chunks = all_chunks(c.begin, c.end, c.chunks, c.grain);
    REQUIRE(chunks.size() == std::size_t(c.chunks));
    CHECK(chunks.front().first == c.begin);
    CHECK(chunks.back().second == c.end);
    std::int64_t smallest = c.end - c.begin, largest = 0;
    for (std::size_t k = 0; k < chunks.size(); ++k) {
      CHECK(chunks[k].first <= chunks[k].second);
      if (k > 0) CHECK(chunks[k].first == chunks[k - 1].second);
      if (k > 0 && chunks[k].first != c.begin) CHECK(((chunks[k].first % c.grain) + c.grain) % c.grain == 0);
      smallest = std::min(smallest, chunks[k].second - chunks[k].first);
      largest = std::max(largest, chunks[k].second - chunks[k].first);
    }
    // Without a grain the sizes differ by one at most; with one, by less
    // than two grains (each bound moves down by less than one).
    CHECK(largest - smallest <= (c.grain <= 1 ? 1 : 2 * c.grain - 1));
  }
  // The exact cut of a range that divides evenly.
  CHECK(ThreadPool::chunk_bounds(0, 1024, 16, 3) == std::pair<std::int64_t, std::int64_t>{192, 256});
  // 1000 / 16 = 62.5 points each: the bound after chunk 0 (62) rounds down to 48.
  CHECK(ThreadPool::chunk_bounds(0, 1000, 16, 0, 16) == std::pair<std::int64_t, std::int64_t>{0, 48});
}

TEST_CASE("thread pool: every chunk runs once, with its bounds, however many chunks per member") {
  ThreadPool pool({0, 0, 0});  // three members; all on processing unit 0, which every machine has
  REQUIRE(pool.size() == 3);
  for (int chunks : {1, 2, 3, 5, 24, 97}) {
    CAPTURE(chunks);
    std::vector<std::atomic<int>> runs(static_cast<std::size_t>(chunks));
    std::vector<std::pair<std::int64_t, std::int64_t>> seen(static_cast<std::size_t>(chunks));
    pool.run(10, 10 + 1000, chunks, 1, [&](int chunk, std::int64_t b, std::int64_t e) {
      runs[static_cast<std::size_t>(chunk)].fetch_add(1);
      seen[static_cast<std::size_t>(chunk)] = {b, e};
    });
    const auto expected = all_chunks(10, 1010, chunks, 1);
    for (int c = 0; c < chunks; ++c) {
      CAPTURE(c);
      CHECK(runs[static_cast<std::size_t>(c)].load() == 1);
      CHECK(seen[static_cast<std::size_t>(c)] == expected[static_cast<std::size_t>(c)]);
    }
  }
}

TEST_CASE("thread pool: a member held up in its first chunk has the rest of its block run by the others") {
  ThreadPool pool({0, 0});
  const int chunks = 16;  // member 0 owns chunks 0..7, member 1 chunks 8..15
  std::mutex mutex;
  std::vector<std::thread::id> ran_on(chunks);
  std::atomic<int> done{0};
  const auto caller = std::this_thread::get_id();
  // Both members share a core here: a helper that gets it first may run every
  // chunk, chunk 0 included, before the caller takes one. Then the case did
  // not happen, and the run is tried again (5 times at most).
  for (int attempt = 0; attempt < 5 && (attempt == 0 || ran_on[0] != caller); ++attempt) {
    done = 0;
    pool.run(0, 1600, chunks, 1, [&](int chunk, std::int64_t, std::int64_t) {
      // Member 0 (the calling thread) stalls in its first chunk until member 1
      // has run everything else (or 10 s have passed: a pool that does not
      // take over fails the checks below rather than hanging); member 1 must
      // take chunks 1..7 from it.
      const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      if (chunk == 0 && std::this_thread::get_id() == caller)
        while (done.load() < chunks - 1 && std::chrono::steady_clock::now() < give_up)
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
      std::lock_guard lock(mutex);
      ran_on[chunk] = std::this_thread::get_id();
      done.fetch_add(1);
    });
  }
  CHECK(done.load() == chunks);
  CHECK(ran_on[0] == caller);
  std::set<std::thread::id> helpers(ran_on.begin() + 1, ran_on.end());
  CHECK(helpers.size() == 1);
  CHECK(*helpers.begin() != caller);
}

TEST_CASE("thread pool: an exception from a chunk comes back from run, and the pool runs the next job") {
  ThreadPool pool({0, 0});
  std::atomic<int> ran{0};
  CHECK_THROWS_WITH_AS(pool.run(0, 100, 8, 1,
                                [&](int chunk, std::int64_t, std::int64_t) {
                                  ran.fetch_add(1);
                                  if (chunk == 5) throw std::runtime_error("chunk 5 failed");
                                }),
                       "chunk 5 failed", std::runtime_error);
  CHECK(ran.load() >= 1);
  std::atomic<std::int64_t> points{0};
  pool.run(0, 100, 8, 1, [&](int, std::int64_t b, std::int64_t e) { points.fetch_add(e - b); });
  CHECK(points.load() == 100);
}

TEST_CASE("thread pool: helpers woken early (wake_helpers) go back to sleep without a job and run the next one") {
  auto count_points = [](ThreadPool& pool) {
    std::atomic<std::int64_t> points{0};
    std::mutex mutex;
    std::set<std::thread::id> threads;
    pool.run(0, 1000, 8, 1, [&](int, std::int64_t b, std::int64_t e) {
      // Whichever member comes first waits in its chunk for the other to
      // take one, so that both take part, the helper included (10 s at
      // most: then the checks fail). The caller may come second: it first
      // moves to member 0's core, here the helper's.
      auto members = [&] {
        std::lock_guard lock(mutex);
        threads.insert(std::this_thread::get_id());
        return threads.size();
      };
      const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (members() < 2 && std::chrono::steady_clock::now() < give_up)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      points.fetch_add(e - b);
    });
    CHECK(threads.size() == 2);
    return points.load();
  };
  {
    ThreadPool pool({0, 0});
    pool.wake_helpers();  // before the first run: no helper exists yet, nothing to wake
    CHECK(count_points(pool) == 1000);
    for (int round = 0; round < 3; ++round) {
      // Long enough for the helper to stop polling and sleep; then woken
      // with no job, it polls again and sleeps again.
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      pool.wake_helpers();
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      pool.wake_helpers();  // and woken just before the job, as the runtime does
      CHECK(count_points(pool) == 1000);
    }
  }
  {
    // Destroyed right after a wake-up without a job: the helper stops.
    ThreadPool pool({0, 0});
    CHECK(count_points(pool) == 1000);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    pool.wake_helpers();
  }
}

TEST_CASE("thread pool: a run whose chunks are all taken does not wait for a helper that has not joined") {
  ThreadPool pool({0, 0});
  const auto before = helper_threads();
  std::atomic<std::int64_t> points{0};
  pool.run(0, 1000, 8, 1, [&](int, std::int64_t b, std::int64_t e) { points.fetch_add(e - b); });  // starts it
  REQUIRE(points.load() == 1000);
  std::set<long> ours;
  for (long id : helper_threads())
    if (!before.count(id)) ours.insert(id);
  REQUIRE(ours.size() == 1);

  struct sigaction freeze {};
  freeze.sa_handler = wait_for_thaw;
  sigemptyset(&freeze.sa_mask);
  struct sigaction previous {};
  REQUIRE(sigaction(SIGUSR1, &freeze, &previous) == 0);
  thawed = false;
  frozen = false;
  left = false;
  REQUIRE(syscall(SYS_tgkill, getpid(), *ours.begin(), SIGUSR1) == 0);
  // The helper is in the handler before the run starts. If it never gets
  // there, a late delivery must find the handler installed and pass through.
  const bool got_frozen = wait_for(frozen);
  if (!got_frozen) thawed = true;
  REQUIRE(got_frozen);

  // The helper is frozen: the caller takes every chunk and returns (5 s at
  // most: a pool that waits for the helper fails here, and is thawed).
  std::vector<int> runs(8, 0);  // written by the caller alone; a stale helper would touch it later
  auto job = std::async(std::launch::async, [&] {
    pool.run(0, 800, 8, 1, [&](int chunk, std::int64_t, std::int64_t) { ++runs[static_cast<std::size_t>(chunk)]; });
  });
  const bool returned = job.wait_for(std::chrono::seconds(5)) == std::future_status::ready;
  CHECK(returned);
  thawed = true;
  job.wait();
  REQUIRE(wait_for(left));
  for (int c = 0; c < 8; ++c) CHECK(runs[static_cast<std::size_t>(c)] == 1);

  // Thawed, the helper finds the run over and skips it, then takes part in
  // the next ones; the first run's chunks ran once each, whatever it did.
  for (int round = 0; round < 200; ++round) {
    std::atomic<std::int64_t> sum{0};
    pool.run(0, 1000, 8, 1, [&](int, std::int64_t b, std::int64_t e) { sum.fetch_add(e - b); });
    CHECK(sum.load() == 1000);
  }
  for (int c = 0; c < 8; ++c) CHECK(runs[static_cast<std::size_t>(c)] == 1);
  sigaction(SIGUSR1, &previous, nullptr);
}

TEST_CASE(
    "thread pool: a calling thread on a helper's core, or bound there, runs its part on member 0's core, its affinity "
    "kept") {
  cpu_set_t allowed;
  REQUIRE(sched_getaffinity(0, sizeof allowed, &allowed) == 0);
  std::vector<unsigned> cpus;
  for (unsigned cpu = 0; cpu < CPU_SETSIZE && cpus.size() < 2; ++cpu)
    if (CPU_ISSET(cpu, &allowed)) cpus.push_back(cpu);
  if (cpus.size() < 2) {
    MESSAGE("SKIPPED: the process may use one CPU; the case needs two");
    return;
  }
  cpu_set_t helper_core;
  CPU_ZERO(&helper_core);
  CPU_SET(cpus[1], &helper_core);
  cpu_set_t both;
  CPU_ZERO(&both);
  CPU_SET(cpus[0], &both);
  CPU_SET(cpus[1], &both);

  ThreadPool pool(cpus);
  const auto caller = std::this_thread::get_id();
  // Runs two chunks, checks that both ran and that the caller's mask is
  // `mask` again after; true when the caller's part ran on cpus[0].
  auto ran_on_member_0 = [&](const cpu_set_t& mask) {
    std::mutex mutex;
    std::vector<int> caller_cpus;
    std::atomic<int> chunks_run{0};
    pool.run(0, 2, 2, 1, [&](int, std::int64_t, std::int64_t) {
      // Long enough that the helper comes: it then runs on its core beside
      // the caller, were the caller still there.
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      chunks_run.fetch_add(1);
      if (std::this_thread::get_id() != caller) return;
      std::lock_guard lock(mutex);
      caller_cpus.push_back(sched_getcpu());
    });
    CHECK(chunks_run.load() == 2);
    cpu_set_t after;
    REQUIRE(sched_getaffinity(0, sizeof after, &after) == 0);
    CHECK(CPU_EQUAL(&after, &mask));
    return !caller_cpus.empty() && std::all_of(caller_cpus.begin(), caller_cpus.end(),
                                               [&](int cpu) { return cpu == static_cast<int>(cpus[0]); });
  };
  // The caller moves to the helper's core, then may use both again: it stays
  // where it is until the scheduler moves it. Under load the scheduler may
  // move it to cpus[0] before the run looks (then nothing narrows it) and
  // back during a chunk: three tries, where a pool that never moves the
  // caller fails all three.
  bool placed = false;
  for (int attempt = 0; attempt < 3 && !placed; ++attempt) {
    REQUIRE(sched_setaffinity(0, sizeof helper_core, &helper_core) == 0);
    REQUIRE(sched_setaffinity(0, sizeof both, &both) == 0);
    REQUIRE(sched_getcpu() == static_cast<int>(cpus[1]));
    placed = ran_on_member_0(both);
  }
  CHECK(placed);
  // A caller bound to the helper's core alone (an OpenMP runtime whose first
  // place is that core binds a program's initial thread so) moves too.
  REQUIRE(sched_setaffinity(0, sizeof helper_core, &helper_core) == 0);
  CHECK(ran_on_member_0(helper_core));
  REQUIRE(sched_setaffinity(0, sizeof allowed, &allowed) == 0);
}
