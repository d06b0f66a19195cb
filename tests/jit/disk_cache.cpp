// The kernel cache's file store and its hash: entries round-trip, a file
// for another key is a miss, every damaged or truncated file is detected and
// replaced, an unusable directory or a failing write never throws, and
// several threads and processes publishing one entry leave one valid file.
#include <doctest/doctest.h>

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <canopy/jit/checked_file.hpp>
#include <canopy/jit/disk_cache.hpp>
#include <canopy/jit/hash.hpp>

#include "jit_test_support.hpp"

using namespace canopy::jit;

#if defined(__SANITIZE_THREAD__)
#define CANOPY_TEST_UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define CANOPY_TEST_UNDER_TSAN 1
#endif
#endif
using canopy::jit::testing::read_all;
using canopy::jit::testing::StderrCapture;
using canopy::jit::testing::TempDir;
using canopy::jit::testing::write_all;

namespace {

std::string binary_payload(std::size_t size, int seed) {
  std::string payload(size, '\0');
  for (std::size_t i = 0; i < size; ++i) payload[i] = static_cast<char>((i * 131 + seed * 7) % 256);
  return payload;
}

// Files in `dir` whose name is not an entry (temporary files left behind).
int leftover_files(const std::filesystem::path& dir) {
  int count = 0;
  for (const auto& file : std::filesystem::directory_iterator(dir))
    if (file.path().extension() != ".cnpy") ++count;
  return count;
}

}  // namespace

TEST_CASE("hash128: 32 hex characters, stable, different for every one-bit change") {
  const std::string text = "kernel triad(out a: f64[1], in b: f64[1]) dims 1";
  CHECK(hash_hex(text).size() == 32);
  CHECK(hash_hex(text) == hash_hex(std::string(text)));
  CHECK(hash_hex(text).find_first_not_of("0123456789abcdef") == std::string::npos);
  CHECK(hash_hex("") != hash_hex(std::string(1, '\0')));
  CHECK(hash_hex(std::string(1, '\0')) != hash_hex(std::string(2, '\0')));
  CHECK(hash64("abc") != hash128("abc").low);
  CHECK(hash64("abc") != hash128("abc").high);
  // Every single-bit flip of a 64-byte input gives a new value, in both halves.
  std::set<std::string> seen{hash_hex(text)};
  std::set<std::uint64_t> lows{hash128(text).low}, highs{hash128(text).high};
  for (std::size_t bit = 0; bit < text.size() * 8; ++bit) {
    std::string flipped = text;
    flipped[bit / 8] = static_cast<char>(flipped[bit / 8] ^ (1 << (bit % 8)));
    seen.insert(hash_hex(flipped));
    lows.insert(hash128(flipped).low);
    highs.insert(hash128(flipped).high);
  }
  CHECK(seen.size() == text.size() * 8 + 1);
  CHECK(lows.size() == seen.size());
  CHECK(highs.size() == seen.size());
  CHECK(to_hex(Hash128{0x0123456789abcdefull, 0xfedcba9876543210ull}) == "fedcba98765432100123456789abcdef");
}

TEST_CASE("DiskCache: put then get returns the payload; a missing key is a miss") {
  TempDir dir;
  DiskCache cache(dir.str());
  const std::string payload = binary_payload(5000, 1);  // zero bytes included
  CHECK_FALSE(cache.get("k1").has_value());
  cache.put("k1", payload);
  auto got = cache.get("k1");
  REQUIRE(got.has_value());
  CHECK(*got == payload);
  cache.put("k1", "replaced");
  CHECK(cache.get("k1").value_or("") == "replaced");
  cache.put("empty", "");
  CHECK(cache.get("empty").value_or("x") == "");
  // A key that is no plain file name still works (the file is named by its hash).
  cache.put("a/b c", "odd key");
  CHECK(cache.get("a/b c").value_or("") == "odd key");
  const auto counters = cache.counters();
  CHECK(counters.hits == 4);
  CHECK(counters.misses == 1);
  CHECK(counters.corrupt == 0);
  CHECK(counters.write_failures == 0);
  CHECK(cache.problem().empty());
  CHECK(leftover_files(dir.path()) == 0);
  // A second cache on the directory (a later run) sees the entries.
  DiskCache later(dir.str());
  CHECK(later.get("k1").value_or("") == "replaced");
}

TEST_CASE("DiskCache: the file of another key is a miss, not a wrong hit") {
  TempDir dir;
  DiskCache cache(dir.str());
  cache.put("first", "payload of first");
  std::filesystem::copy_file(cache.path_of("first"), cache.path_of("second"));
  CHECK_FALSE(cache.get("second").has_value());
  CHECK(cache.counters().corrupt == 0);
  CHECK(cache.get("first").value_or("") == "payload of first");
}

TEST_CASE("DiskCache: every truncation and a flipped byte anywhere are detected, then replaced") {
  TempDir dir;
  DiskCache cache(dir.str());
  const std::string payload = binary_payload(300, 2);
  cache.put("key", payload);
  const std::string path = cache.path_of("key");
  const std::string good = read_all(path);
  std::uint64_t damaged = 0;
  for (std::size_t length = 0; length < good.size(); ++length) {
    write_all(path, good.substr(0, length));
    REQUIRE_FALSE(cache.get("key").has_value());
    ++damaged;
  }
  for (std::size_t at = 0; at < good.size(); at += 7) {
    std::string bad = good;
    bad[at] = static_cast<char>(bad[at] ^ 0x5a);
    write_all(path, bad);
    REQUIRE_FALSE(cache.get("key").has_value());
    ++damaged;
  }
  CHECK(cache.counters().corrupt == damaged);
  cache.put("key", payload);
  CHECK(read_all(path) == good);
  CHECK(cache.get("key").value_or("") == payload);

  // A whole file of another format version is a plain miss (not damage), and replaced too.
  std::string other_version(unframe_checked(good).value());
  other_version[6] = static_cast<char>(other_version[6] + 1);
  write_all(path, frame_checked(other_version));
  CHECK_FALSE(cache.get("key").has_value());
  CHECK(cache.counters().corrupt == damaged);
  cache.put("key", payload);
  CHECK(cache.get("key").value_or("") == payload);
}

TEST_CASE("DiskCache: a directory that cannot be created never throws and warns once") {
  TempDir dir;
  write_all(dir.path() / "plain-file", "not a directory");
  const std::string cache_dir = (dir.path() / "plain-file" / "cache").string();
  DiskCache cache(cache_dir);
  StderrCapture captured;
  CHECK_NOTHROW(cache.put("k", "payload"));
  CHECK_NOTHROW(cache.put("k2", "payload"));
  // Another cache of the process on the same folder (the devices' programs,
  // discovery) says nothing more: a new user saw the warning three times.
  DiskCache other(cache_dir);
  CHECK_NOTHROW(other.put("k3", "payload"));
  CHECK(other.counters().write_failures == 1);
  const std::string warnings = captured.finish();
  CHECK(warnings == "canopy: kernel cache at " + cache_dir + " is not usable (cannot create " + cache_dir +
                        ": Not a directory); kernels will be compiled on every run\n");
  CHECK_FALSE(cache.get("k").has_value());
  CHECK(cache.counters().write_failures == 2);
  CHECK(cache.problem().find("cannot create " + cache_dir) != std::string::npos);
}

TEST_CASE("DiskCache: a write that fails part way (file size limit, as on a full disk) leaves nothing behind") {
  TempDir dir;
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    // In the child: writes above 4 KiB fail with EFBIG, as ENOSPC would.
    signal(SIGXFSZ, SIG_IGN);
    if (!std::freopen("/dev/null", "w", stderr)) _exit(3);  // the expected warning is not news
    rlimit limit{4096, 4096};
    setrlimit(RLIMIT_FSIZE, &limit);
    DiskCache cache(dir.str());
    cache.put("big", binary_payload(1 << 20, 3));
    cache.put("small", "fits");
    const bool ok =
        cache.counters().write_failures == 1 && !cache.get("big") && cache.get("small") && !cache.problem().empty();
    _exit(ok ? 0 : 1);
  }
  int status = 0;
  waitpid(child, &status, 0);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(leftover_files(dir.path()) == 0);
  DiskCache cache(dir.str());
  CHECK(cache.get("small").value_or("") == "fits");
  CHECK_FALSE(cache.get("big").has_value());
}

TEST_CASE("DiskCache: threads and processes publishing one entry at once leave one valid file") {
  TempDir dir;
  const int processes = 4, threads = 3, rounds = 40;
  std::vector<std::string> payloads;
  for (int p = 0; p < processes * threads; ++p) payloads.push_back(binary_payload(20000 + 1000 * p, p));
  // One writer process: its threads publish and read back through one cache
  // object; 0 when every read was whole and every write published.
  auto writer_process = [&](int p) {
    DiskCache cache(dir.str());
    std::atomic<bool> torn{false};
    std::vector<std::thread> writers;
    for (int t = 0; t < threads; ++t)
      writers.emplace_back([&, t] {
        for (int r = 0; r < rounds; ++r) {
          cache.put("shared", payloads[p * threads + t]);
          auto got = cache.get("shared");  // whatever is there is whole
          if (got && std::find(payloads.begin(), payloads.end(), *got) == payloads.end()) torn = true;
        }
      });
    for (auto& writer : writers) writer.join();
    if (torn) return 2;
    return cache.counters().corrupt == 0 && cache.counters().write_failures == 0 ? 0 : 1;
  };
#if CANOPY_TEST_UNDER_TSAN
  // ThreadSanitizer cannot start threads in a child forked from a process
  // that has threads; there each "process" is a group of threads with its own
  // cache object (tests/runtime/load.cpp covers separate processes by exec).
  std::vector<int> results(processes, -1);
  std::vector<std::thread> groups;
  for (int p = 0; p < processes; ++p) groups.emplace_back([&, p] { results[std::size_t(p)] = writer_process(p); });
  for (auto& group : groups) group.join();
  for (int result : results) CHECK(result == 0);
#else
  std::vector<pid_t> children;
  for (int p = 0; p < processes; ++p) {
    const pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) _exit(writer_process(p));
    children.push_back(child);
  }
  for (pid_t child : children) {
    int status = 0;
    waitpid(child, &status, 0);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }
#endif
  DiskCache cache(dir.str());
  auto got = cache.get("shared");
  REQUIRE(got.has_value());
  CHECK(std::find(payloads.begin(), payloads.end(), *got) != payloads.end());
  CHECK(leftover_files(dir.path()) == 0);
}

TEST_CASE("disk cache: temporary files of writers that died are removed, others are kept") {
  // Found by a new user: a program killed while it stored an entry left its
  // `.tmp.` file in the cache for good.
  TempDir dir;
  DiskCache cache(dir.str());
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) std::_Exit(0);
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);  // `child` is a pid no process has now
  const std::string dead = std::to_string(child), alive = std::to_string(::getppid());
  const auto old = std::filesystem::file_time_type::clock::now() - std::chrono::hours(1);
  auto make = [&](const std::string& name, bool aged) {
    const auto path = std::filesystem::path(dir.str()) / name;
    write_all(path, "half an entry");
    if (aged) std::filesystem::last_write_time(path, old);
    return path;
  };
  const auto abandoned = make("k1.bin.tmp." + dead + ".7.1", true);
  const auto recent = make("k2.bin.tmp." + dead + ".7.2", false);  // maybe another node's writer at work
  const auto living = make("k3.bin.tmp." + alive + ".7.3", true);
  const auto own = make("k4.bin.tmp." + std::to_string(::getpid()) + ".7.4", true);
  const auto entry = make("k5.bin", true);
  CHECK(cache.remove_abandoned_temporaries() == 1);
  CHECK_FALSE(std::filesystem::exists(abandoned));
  for (const auto& kept : {recent, living, own, entry}) CHECK(std::filesystem::exists(kept));
}
