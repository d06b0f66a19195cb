// Load: many regions from several host threads while the tree changes under
// them, and several processes filling one kernel cache at once.
//
// - 10,000 region launches from 4 host threads, with locations added, removed
//   and reconfigured by the main thread between them: every launch runs once
//   (the arrays hold the exact counts), nothing waits forever (a watchdog
//   aborts the process after 10 minutes), and the resident memory measured
//   after a warm-up and at the end grows by a bounded amount. Under the
//   address sanitizer LeakSanitizer checks for leaks at exit instead of the
//   RSS bound (its quarantine keeps freed memory resident on purpose).
// - 8 processes (this test program run again with CANOPY_LOAD_CHILD set)
//   compile the same kernels into one empty CANOPY_CACHE_DIR at the same
//   moment: each gets the right results, and the directory ends with exactly
//   one valid entry per kernel and no temporary files.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <canopy/jit/disk_cache.hpp>

#include "engine_trees.hpp"

using namespace canopy;
using namespace canopy::engine_tests;

extern char** environ;

namespace {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

const Kernel<void(InOut<std::int64_t>)>& increment() {
  static const Kernel kernel("increment", [](InOut<std::int64_t> x) { x[index(0)] += 1; }, {"x"});
  return kernel;
}

const Kernel<void(Out<std::int64_t>, Val<std::int64_t>)>& fill_scaled() {
  static const Kernel kernel("fill_scaled",
                             [](Out<std::int64_t> x, Val<std::int64_t> k) { x[index(0)] = index(0) * k; }, {"x", "k"});
  return kernel;
}

const Kernel<void(InOut<std::int64_t>, In<std::int64_t>)>& accumulate() {
  static const Kernel kernel("accumulate",
                             [](InOut<std::int64_t> x, In<std::int64_t> y) { x[index(0)] += y[index(0)]; }, {"x", "y"});
  return kernel;
}

/// Aborts the process, saying what hung, unless disarmed within `limit`: a
/// deadlock fails the test instead of stalling CTest until its own timeout.
class Watchdog {
 public:
  Watchdog(std::string what, std::chrono::seconds limit)
      : what_(std::move(what)), thread_([this, limit] {
          std::unique_lock lock(mutex_);
          if (!done_.wait_for(lock, limit, [this] { return disarmed_; })) {
            std::fprintf(stderr, "load test: %s did not finish within %lld s (deadlock?)\n", what_.c_str(),
                         static_cast<long long>(limit.count()));
            std::abort();
          }
        }) {}
  ~Watchdog() {
    {
      std::lock_guard lock(mutex_);
      disarmed_ = true;
    }
    done_.notify_one();
    thread_.join();
  }
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

 private:
  std::string what_;
  std::mutex mutex_;
  std::condition_variable done_;
  bool disarmed_ = false;
  std::thread thread_;
};

/// This process's resident set in bytes, from /proc/self/statm (0 where there is none).
std::int64_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  std::int64_t pages = 0, resident = 0;
  if (!(statm >> pages >> resident)) return 0;
  return resident * static_cast<std::int64_t>(::sysconf(_SC_PAGESIZE));
}

constexpr int kThreads = 4;
constexpr std::int64_t kPoints = 2000;

/// Launches `per_thread` regions from each of 4 threads (every 50th on a new
/// array that is checked and dropped, the rest incrementing the thread's own
/// array) while this thread changes the tree until they are done (at least
/// once per 100 launches of each thread). Returns the number of tree changes made.
int launch_while_reconfiguring(Runtime& rt, std::vector<Array<std::int64_t>>& own, int per_thread,
                               std::atomic<int>& wrong_results) {
  std::atomic<int> running{kThreads};
  std::atomic<int> changes{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int r = 0; r < per_thread; ++r) {
        // Every 100 launches wait for the next change of the tree, so that
        // changes fall between launches however fast the launches are.
        while (r % 100 == 0 && changes < r / 100) std::this_thread::yield();
        if (r % 50 == 49) {
          auto scratch = rt.array<std::int64_t>(kPoints, at("numa0"));
          rt.region(fill_scaled()).over(kPoints).launch(scratch, t + 1);
          const auto h = scratch.host();
          if (h[kPoints - 1] != (kPoints - 1) * (t + 1)) ++wrong_results;
        } else {
          rt.region(increment()).over(kPoints).launch(own[std::size_t(t)]);
        }
      }
      --running;
    });
  const std::string second = std::to_string(core(1));
  while (running > 0) {
    switch (changes % 4) {
      case 0: rt.add_location("extra", LocationKind::Cpu, cpu_on({core(0)}), "numa0"); break;
      case 1: rt.remove_location("extra"); break;
      case 2: rt.configure("hierarchy;children,-,cpuB;parent,numa0"); break;
      case 3:
        rt.configure("location;name,cpuB;type,cpu;pus," + second + "\nhierarchy;children,+,cpuB;parent,numa0");
        break;
    }
    ++changes;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  for (auto& thread : threads) thread.join();
  // Back to the starting tree, so that every phase begins alike.
  if (changes % 4 == 1) rt.remove_location("extra");
  if (changes % 4 == 3)
    rt.configure("location;name,cpuB;type,cpu;pus," + second + "\nhierarchy;children,+,cpuB;parent,numa0");
  rt.pause();
  return changes;
}

}  // namespace

TEST_CASE("load: 10,000 regions from 4 threads with reconfiguration in between; memory stays flat") {
  Watchdog watchdog("10,000 regions from 4 threads", std::chrono::seconds(600));
  Runtime rt;
  use_tree(rt, two_leaf_tree());
  std::vector<Array<std::int64_t>> own;
  for (int t = 0; t < kThreads; ++t) own.push_back(rt.array<std::int64_t>(kPoints, at("numa0")));
  std::atomic<int> wrong_results{0};

  const int warm_up = 500, rest = 2000;  // 4 x (500 + 2000) = 10,000 launches
  int changes = launch_while_reconfiguring(rt, own, warm_up, wrong_results);
  const std::int64_t rss_after_warm_up = resident_bytes();
  changes += launch_while_reconfiguring(rt, own, rest, wrong_results);
  const std::int64_t rss_at_end = resident_bytes();

  const std::int64_t increments = (warm_up - warm_up / 50) + (rest - rest / 50);
  CHECK(wrong_results == 0);
  for (auto& mine : own) {
    const auto h = mine.host();
    CHECK(h[0] == increments);
    CHECK(h[kPoints - 1] == increments);
  }
  CHECK(rt.stats().regions == kThreads * (warm_up + rest));
  CHECK(changes >= 20);  // at least 4 + 19 by the waits in the launching threads
  CHECK(rt.hierarchy().find("extra") == nullptr);
  CHECK(rt.hierarchy().find("cpuB") != nullptr);
  MESSAGE("RSS after warm-up " << rss_after_warm_up / 1024 << " KiB, at the end " << rss_at_end / 1024 << " KiB; "
                               << changes << " tree changes");
  if (!kSanitized) {
    // 8,000 launches after the warm-up may add allocator slack, not memory per launch.
    CHECK(rss_at_end - rss_after_warm_up < std::int64_t{16} << 20);
  }
}

namespace {

/// The kernels every child process compiles.
constexpr int kCachedKernels = 3;

}  // namespace

// Run only as a child of the next test (CANOPY_LOAD_CHILD=<directory>, and
// --no-skip: doctest lists it as skipped in every other run): waits for
// <directory>/go, then compiles and runs three kernels in a fresh runtime.
TEST_CASE("load: a pause() in a second thread waits for what another thread's pause() waits for") {
  // Thread one launches a long region, then pauses; thread two pauses while
  // thread one waits. pause() had taken the list of regions in flight off
  // the Runtime, and the second pause returned at once, before the region
  // that was launched before it had run.
  static const Kernel slow("load_slow_fill", [](Out<double> out, Val<std::int64_t> work) {
    Idx i = index(0);
    Var<double> acc = 0.0;
    For(Idx(0), work, [&](Idx k) { acc = acc + cast<double>((k + i) % 7); });
    out[i] = acc;
  });
  Runtime rt;
  rt.fuse(false);  // queued to the leaf at launch, not run by the pausing thread
  constexpr std::int64_t n = 4096, work = 50000;
  std::vector<double> buffer(n, -1.0);
  auto out = rt.wrap<double, 1>(buffer.data(), Shape(n));
  std::vector<double> expected(n, 0.0);
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t k = 0; k < work; ++k) expected[static_cast<std::size_t>(i)] += double((k + i) % 7);
  std::atomic<bool> launched{false};
  std::thread first([&] {
    rt.region(slow).over(n).launch(out, work);
    launched = true;
    rt.pause();
  });
  while (!launched) std::this_thread::yield();
  std::this_thread::sleep_for(std::chrono::milliseconds(5));  // thread one is in its pause by now, mostly
  rt.pause();
  std::int64_t unfinished = 0;
  for (std::size_t i = 0; i < buffer.size(); ++i) unfinished += buffer[i] != expected[i];
  first.join();
  CHECK(unfinished == 0);
}

TEST_CASE("load: child process compiling into a shared cache" * doctest::skip()) {
  const char* rendezvous = std::getenv("CANOPY_LOAD_CHILD");
  REQUIRE_MESSAGE(rendezvous, "run only by the 8-process load test, with CANOPY_LOAD_CHILD set");
  const std::filesystem::path go = std::filesystem::path(rendezvous) / "go";
  for (int tries = 0; !std::filesystem::exists(go) && tries < 30000; ++tries)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  REQUIRE(std::filesystem::exists(go));
  Runtime rt;
  rt.fuse(false);  // the fused chain's kernel would be a fourth entry, written only if compiled before exit
  use_tree(rt, one_leaf_tree());
  const std::int64_t n = 1000;
  auto x = rt.array<std::int64_t>(n, at("numa0"));
  auto y = rt.array<std::int64_t>(n, at("numa0"));
  rt.region(fill_scaled()).over(n).launch(x, 3);
  rt.region(fill_scaled()).over(n).launch(y, 1);
  rt.region(accumulate()).over(n).launch(x, y);
  rt.region(increment()).over(n).launch(x);
  const auto h = x.host();
  bool exact = true;
  for (std::int64_t i = 0; i < n; ++i) exact = exact && h[i] == 4 * i + 1;
  CHECK(exact);
}

TEST_CASE("load: 8 processes compile the same kernels into one cache directory at once") {
  Watchdog watchdog("8 processes sharing a cache", std::chrono::seconds(600));
  char pattern[] = "/tmp/canopy-load-XXXXXX";
  REQUIRE(::mkdtemp(pattern) != nullptr);
  const std::filesystem::path root(pattern);
  const std::filesystem::path cache = root / "cache", rendezvous = root / "rendezvous";
  std::filesystem::create_directories(cache);
  std::filesystem::create_directories(rendezvous);

  std::vector<std::string> environment;
  for (char** entry = environ; *entry; ++entry) {
    const std::string_view variable(*entry);
    if (!variable.starts_with("CANOPY_CACHE_DIR=") && !variable.starts_with("CANOPY_LOAD_CHILD="))
      environment.emplace_back(variable);
  }
  environment.push_back("CANOPY_CACHE_DIR=" + cache.string());
  environment.push_back("CANOPY_LOAD_CHILD=" + rendezvous.string());
  std::vector<char*> child_environment;
  for (std::string& variable : environment) child_environment.push_back(variable.data());
  child_environment.push_back(nullptr);

  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  std::string filter = "-tc=load: child process*", no_skip = "--no-skip";
  constexpr int kChildren = 8;
  std::vector<pid_t> children;
  for (int c = 0; c < kChildren; ++c) {
    const std::string output = (root / ("child-" + std::to_string(c) + ".txt")).string();
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, output.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
    std::string program = self;
    char* argv[] = {program.data(), filter.data(), no_skip.data(), nullptr};
    pid_t pid = 0;
    const int spawned = ::posix_spawn(&pid, self.c_str(), &actions, nullptr, argv, child_environment.data());
    posix_spawn_file_actions_destroy(&actions);
    REQUIRE(spawned == 0);
    children.push_back(pid);
  }
  std::ofstream(rendezvous / "go") << "go\n";
  int succeeded = 0;
  for (int c = 0; c < kChildren; ++c) {
    int status = 0;
    REQUIRE(::waitpid(children[std::size_t(c)], &status, 0) == children[std::size_t(c)]);
    const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (!ok) {
      std::ifstream output(root / ("child-" + std::to_string(c) + ".txt"));
      const std::string text((std::istreambuf_iterator<char>(output)), std::istreambuf_iterator<char>());
      MESSAGE("child " << c << " failed (status " << status << "):\n" << text);
    }
    succeeded += ok;
  }
  CHECK(succeeded == kChildren);

  // Besides the kernels, the eight processes wrote the same discovery files
  // at once: one of the devices (backends/discovery_cache.hpp) and one of
  // the node (runtime/discovery.hpp), each whole.
  int entries = 0, valid = 0, others = 0, discoveries = 0, nodes = 0;
  jit::DiskCache reader(cache.string());
  for (const auto& file : std::filesystem::directory_iterator(cache)) {
    const std::filesystem::path path = file.path();
    // Kernels are shared objects (".so"); the discovery file is a ".cnpy" entry.
    const bool kernel = path.extension() == ".so", entry = path.extension() == ".cnpy";
    if (!kernel && !entry) {
      ++others;
      MESSAGE("unexpected file in the cache: " << path.filename().string());
      continue;
    }
    const bool whole =
        kernel ? reader.get_loadable(path.stem().string()).has_value() : reader.get(path.stem().string()).has_value();
    if (path.stem().string().starts_with("devices-")) {
      CHECK(whole);
      ++discoveries;
      continue;
    }
    if (path.stem().string().starts_with("node-")) {
      CHECK(whole);
      ++nodes;
      continue;
    }
    ++entries;
    valid += whole;
  }
  CHECK(discoveries == 1);
  CHECK(nodes == 1);
  CHECK(entries == kCachedKernels);
  CHECK(valid == kCachedKernels);
  CHECK(others == 0);
  std::filesystem::remove_all(root);
}
