// The recorder (runtime/internal/recorder.hpp): chains of element-wise
// regions run as one fused kernel with the results of the regions run one by
// one (checked against serial loops), intermediates the program dropped are
// kept in registers, and what must not fuse (a stencil, a reduction's place
// in a chain, different ranges, host access between launches) does not.
#include <doctest/doctest.h>

#include <canopy/canopy.hpp>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include "engine_trees.hpp"
#include "scoped_setting.hpp"
#include "trace_json.hpp"

using namespace canopy;

namespace {

using Step = Kernel<void(In<double>, Out<double>, Val<double>, Val<double>)>;

const Step& step() {
  static const Step kernel("fu_step",
                           [](In<double> x, Out<double> y, Val<double> m, Val<double> k) {
                             Idx i = index(0);
                             y[i] = x[i] * m + k;
                           },
                           {"x", "y", "m", "k"});
  return kernel;
}

const Kernel<void(Out<double>, Out<double>)>& init() {
  static const Kernel kernel("fu_init",
                             [](Out<double> a, Out<double> b) {
                               Idx i = index(0);
                               a[i] = cast<double>(i % 13);
                               b[i] = cast<double>(i % 7) - 3.0;
                             },
                             {"a", "b"});
  return kernel;
}

const Kernel<void(InOut<double>, In<double>)>& add_into() {
  static const Kernel kernel("fu_add_into",
                             [](InOut<double> a, In<double> b) {
                               Idx i = index(0);
                               a[i] = a[i] + b[i];
                             },
                             {"a", "b"});
  return kernel;
}

const Kernel<void(In<double>, In<double>, Sum<double>)>& dot() {
  static const Kernel kernel("fu_dot",
                             [](In<double> a, In<double> b, Sum<double> total) {
                               Idx i = index(0);
                               total += a[i] * b[i];
                             },
                             {"a", "b", "total"});
  return kernel;
}

const Kernel<void(In<double>, Out<double>)>& shift() {
  static const Kernel kernel("fu_shift",
                             [](In<double> x, Out<double> y) {
                               Idx i = index(0);
                               y[i] = 0.0;
                               If(i > 0, [&] { y[i] = x[i - 1]; });
                             },
                             {"x", "y"});
  return kernel;
}

const RegionStats* last_fused(const Stats& stats) {
  for (auto r = stats.recent.rbegin(); r != stats.recent.rend(); ++r)
    if (!r->fused.empty()) return &*r;
  return nullptr;
}

// Runs `round` until a fused kernel of `parts` regions has run (it compiles
// in the background the first time its chain is seen; in a slow run, under a
// sanitizer, a round's last launches may come too late to join and a shorter
// chain fuse first); at most 30 s.
template <class F>
void until_fused(Runtime& rt, F round, std::size_t parts) {
  auto done = [&] {
    const Stats stats = rt.stats();
    const RegionStats* fused = last_fused(stats);
    return fused && fused->fused.size() == parts;
  };
  const auto start = std::chrono::steady_clock::now();
  while (!done() && std::chrono::steady_clock::now() - start < std::chrono::seconds(30)) {
    round();
    rt.pause();
    if (!done()) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  REQUIRE(done());
}

// Runs `round` (launches) and a pause until the regions that round ran
// satisfy `done`, at most 20 rounds, and returns them. A chain starts 1 to
// 2 ms after its first launch, so in a slow run (under a sanitizer) the
// launches of a round may come too far apart to wait together; a round
// whose launches do shows what the recorder makes of them.
template <class F, class P>
std::vector<RegionStats> round_until(Runtime& rt, F round, P done) {
  std::vector<RegionStats> ran;
  for (int attempt = 0; attempt < 20; ++attempt) {
    const Stats before = rt.stats();
    const std::uint64_t last = before.recent.empty() ? 0 : before.recent.back().id;
    round();
    rt.pause();
    ran.clear();
    for (const auto& region : rt.stats().recent)
      if (region.id > last) ran.push_back(region);
    if (done(ran)) break;
  }
  return ran;
}

}  // namespace

TEST_CASE("fusion: init -> add -> dot runs as one kernel with the serial loop's values") {
  Runtime rt;
  REQUIRE(rt.fusing());
  const std::int64_t n = 10007;
  auto a = rt.array<double>(n), b = rt.array<double>(n);
  double sum = 0;
  until_fused(
      rt,
      [&] {
        rt.region(init()).over(n).launch(a, b);
        rt.region(add_into()).over(n).launch(a, b);
        sum = rt.region(dot()).over(n).reduce(a, b);
      },
      3);
  double serial = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    const double bi = static_cast<double>(i % 7) - 3.0;
    serial += (static_cast<double>(i % 13) + bi) * bi;
  }
  CHECK(sum == doctest::Approx(serial).epsilon(1e-12));
  auto av = a.host_read();
  for (std::int64_t i = 0; i < n; ++i) REQUIRE(av[i] == static_cast<double>(i % 13) + static_cast<double>(i % 7) - 3.0);
  const Stats stats = rt.stats();
  const RegionStats* fused = last_fused(stats);
  REQUIRE(fused);
  CHECK(fused->fused == std::vector<std::string>{"fu_init", "fu_add_into", "fu_dot"});
  CHECK(fused->kernel == "fu_init.fu_add_into.fu_dot");
  CHECK(fused->arrays_in_registers == 0);  // the program holds a and b
  CHECK(stats.fused_regions >= 3);
  CHECK(stats.modeled_dram_bytes > 0);
}

TEST_CASE("fusion: a pipeline's dropped intermediates are kept in registers; results as unfused") {
  Runtime rt;
  const std::int64_t n = 4099;
  auto in = rt.array<double>(n), out = rt.array<double>(n), unfused_out = rt.array<double>(n);
  {
    auto v = in.host();
    for (std::int64_t i = 0; i < n; ++i) v[i] = 0.5 * static_cast<double>(i % 101) - 7.0;
  }
  const double steps[4][2] = {{1.5, 1.0}, {-0.5, 2.0}, {2.0, -0.25}, {0.75, 3.0}};
  auto pipeline = [&](Array<double>& result) {
    auto t1 = rt.array<double>(n), t2 = rt.array<double>(n), t3 = rt.array<double>(n);
    rt.region(step()).over(n).launch(in, t1, steps[0][0], steps[0][1]);
    rt.region(step()).over(n).launch(t1, t2, steps[1][0], steps[1][1]);
    rt.region(step()).over(n).launch(t2, t3, steps[2][0], steps[2][1]);
    rt.region(step()).over(n).launch(t3, result, steps[3][0], steps[3][1]);
  };  // t1..t3 dropped here, before pause()
  until_fused(
      rt, [&] { pipeline(out); }, 4);
  const Stats stats = rt.stats();
  const RegionStats* fused = last_fused(stats);
  REQUIRE(fused);
  CHECK(fused->fused.size() == 4);
  CHECK(fused->arrays_in_registers == 3);
  rt.fuse(false);
  CHECK_FALSE(rt.fusing());
  const auto fused_before = rt.stats().fused_kernels;
  pipeline(unfused_out);
  rt.pause();
  CHECK(rt.stats().fused_kernels == fused_before);
  auto iv = in.host_read();
  auto fv = out.host_read();
  auto uv = unfused_out.host_read();
  for (std::int64_t i = 0; i < n; ++i) {
    double x = iv[i];
    for (const auto& s : steps) x = x * s[0] + s[1];
    REQUIRE(fv[i] == doctest::Approx(x).epsilon(1e-14));
    REQUIRE(fv[i] == uv[i]);
  }
}

TEST_CASE("fusion: host access, a stencil, another range and CANOPY_FUSE=off end or prevent a chain") {
  SUBCASE("host() between launches sees the first region's writes") {
    Runtime rt;
    const std::int64_t n = 1000;
    auto a = rt.array<double>(n), b = rt.array<double>(n);
    for (int round = 0; round < 20; ++round) {
      rt.region(init()).over(n).launch(a, b);
      CHECK(a.host_read()[12] == 12.0);  // waits for the recorded region
      rt.region(add_into()).over(n).launch(a, b);
      CHECK(a.host_read()[12] == 12.0 + (12 % 7) - 3.0);
    }
  }
  SUBCASE("a stencil does not fuse, and reads what the region before it wrote") {
    Runtime rt;
    const std::int64_t n = 777;
    auto a = rt.array<double>(n), b = rt.array<double>(n), y = rt.array<double>(n);
    for (int round = 0; round < 20; ++round) {
      rt.region(init()).over(n).launch(a, b);
      rt.region(shift()).over(n).launch(a, y);
      rt.pause();
      auto yv = y.host_read();
      for (std::int64_t i = 1; i < n; ++i) REQUIRE(yv[i] == static_cast<double>((i - 1) % 13));
    }
    for (const auto& r : rt.stats().recent) CHECK(r.fused.empty());
  }
  SUBCASE("regions over different ranges run one by one") {
    Runtime rt;
    auto a = rt.array<double>(100), b = rt.array<double>(100);
    for (int round = 0; round < 20; ++round) {
      rt.region(init()).over(100).launch(a, b);
      rt.region(add_into()).over(50).launch(a, b);
      rt.pause();
      CHECK(a.host_read()[49] == 49 % 13 + 49 % 7 - 3.0);
      CHECK(a.host_read()[50] == 50 % 13);
    }
    CHECK(rt.stats().fused_kernels == 0);
  }
  SUBCASE("CANOPY_FUSE=off") {
    canopy::testing::ScopedSetting off("CANOPY_FUSE", "off");
    Runtime rt;
    CHECK_FALSE(rt.fusing());
    auto a = rt.array<double>(100), b = rt.array<double>(100);
    for (int round = 0; round < 20; ++round) {
      rt.region(init()).over(100).launch(a, b);
      rt.region(add_into()).over(100).launch(a, b);
      rt.pause();
    }
    CHECK(rt.stats().fused_kernels == 0);
    CHECK(rt.stats().regions == 40);
  }
  SUBCASE("a bad CANOPY_FUSE is refused") {
    canopy::testing::ScopedSetting bad("CANOPY_FUSE", "maybe");
    CHECK_THROWS_WITH_AS(Runtime(), doctest::Contains("CANOPY_FUSE"), Error);
  }
}

TEST_CASE("fusion: a region that cannot join runs at once; the chain waits on unless they share an array") {
  canopy::testing::ScopedSetting eager("CANOPY_FUSE", "eager");
  Runtime rt;
  const std::int64_t n = 4099;
  auto a = rt.array<double>(n), b = rt.array<double>(n), u = rt.array<double>(n), v = rt.array<double>(n);
  auto w = rt.array<double>(n);
  {
    auto hu = u.host();
    for (std::int64_t i = 0; i < n; ++i) hu[i] = static_cast<double>(i % 5);
  }
  rt.compile(init(), shift(), add_into()).wait();  // launches that do not compile come close together
  // init and add_into over a and b; between them a stencil over u and v alone.
  const std::vector<std::string> chain{"fu_init", "fu_add_into"};
  const auto ran = round_until(
      rt,
      [&] {
        rt.region(init()).over(n).launch(a, b);
        rt.region(shift()).over(n).launch(u, v);
        rt.region(add_into()).over(n).launch(a, b);
      },
      [&](const std::vector<RegionStats>& regions) { return regions.size() == 2 && regions[1].fused == chain; });
  REQUIRE(ran.size() == 2);
  CHECK(ran[0].kernel == "fu_shift");  // it ran first: nothing orders it after init
  CHECK(ran[1].fused == chain);
  {
    auto av = a.host_read(), vv = v.host_read();
    for (std::int64_t i = 0; i < n; ++i) {
      REQUIRE(av[i] == static_cast<double>(i % 13) + static_cast<double>(i % 7) - 3.0);
      REQUIRE(vv[i] == (i > 0 ? static_cast<double>((i - 1) % 5) : 0.0));
    }
  }
  // A stencil that reads what init wrote runs after it, and splits the chain.
  const auto split = round_until(
      rt,
      [&] {
        rt.region(init()).over(n).launch(a, b);
        rt.region(shift()).over(n).launch(a, w);
        rt.region(add_into()).over(n).launch(a, b);
      },
      [](const std::vector<RegionStats>&) { return true; });  // the same however the launches are timed
  REQUIRE(split.size() == 3);
  CHECK(split[0].kernel == "fu_init");
  CHECK(split[0].fused.empty());
  CHECK(split[1].kernel == "fu_shift");
  CHECK(split[2].kernel == "fu_add_into");
  auto wv = w.host_read();
  for (std::int64_t i = 1; i < n; ++i) REQUIRE(wv[i] == static_cast<double>((i - 1) % 13));
}

TEST_CASE("fusion: two pipelines over different ranges launched in turn fuse each") {
  canopy::testing::ScopedSetting eager("CANOPY_FUSE", "eager");
  Runtime rt;
  const std::int64_t n = 3001, m = 1703;
  auto a = rt.array<double>(n), b = rt.array<double>(n), c = rt.array<double>(m), d = rt.array<double>(m);
  rt.compile(init(), add_into()).wait();
  const std::vector<std::string> longer{"fu_init", "fu_add_into", "fu_add_into"}, shorter{"fu_init", "fu_add_into"};
  const auto ran = round_until(
      rt,
      [&] {
        rt.region(init()).over(n).launch(a, b);
        rt.region(init()).over(m).launch(c, d);
        rt.region(add_into()).over(n).launch(a, b);
        rt.region(add_into()).over(m).launch(c, d);
        rt.region(add_into()).over(n).launch(a, b);
      },
      [&](const std::vector<RegionStats>& regions) {
        return regions.size() == 2 && regions[0].fused == longer && regions[1].fused == shorter;
      });
  REQUIRE(ran.size() == 2);
  CHECK(ran[0].fused == longer);
  CHECK(ran[0].range == Shape(n));
  CHECK(ran[1].fused == shorter);
  CHECK(ran[1].range == Shape(m));
  auto av = a.host_read(), cv = c.host_read();
  for (std::int64_t i = 0; i < n; ++i)
    REQUIRE(av[i] == static_cast<double>(i % 13) + 2 * (static_cast<double>(i % 7) - 3.0));
  for (std::int64_t i = 0; i < m; ++i) REQUIRE(cv[i] == static_cast<double>(i % 13) + static_cast<double>(i % 7) - 3.0);
}

TEST_CASE("fusion: CANOPY_DUMP=program shows each region's arrays and the regions a fused kernel ran") {
  const auto dir = std::filesystem::temp_directory_path() / ("canopy-fusion-dump-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  {
    canopy::testing::ScopedSetting dump("CANOPY_DUMP", "program"), where("CANOPY_DUMP_DIR", dir.c_str()),
        eager("CANOPY_FUSE", "eager");
    Runtime rt;
    const std::int64_t n = 2048;
    auto a = rt.array<double>(n, named("a")), b = rt.array<double>(n);
    until_fused(
        rt,
        [&] {
          rt.region(init()).over(n).launch(a, b);
          rt.region(add_into()).over(n).launch(a, b);
        },
        2);
  }  // the record is written when the Runtime ends
  std::ifstream in(dir / "canopy.program");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::filesystem::remove_all(dir);
  CHECK(text.find(" fu_init.fu_add_into over 2048 at ") != std::string::npos);
  CHECK(text.find("  fused: launched as fu_init fu_add_into; one kernel, 0 array(s) kept in registers") !=
        std::string::npos);
  // init writes a and b, add_into reads them back: the fused kernel only
  // writes them (the values read come from its stores).
  CHECK(text.find("  arrays: out a#") != std::string::npos);
  CHECK(text.find(", out #") != std::string::npos);
  MESSAGE(text);
}

TEST_CASE("fusion: a recorded region starts on its own soon after its launch, without a pause") {
  Runtime rt;
  const std::int64_t n = 1000;
  std::vector<double> memory(n, -1.0), other(n, -1.0);
  auto a = rt.wrap(memory.data(), n), b = rt.wrap(other.data(), n);
  rt.region(init()).over(n).launch(a, b);
  // Nothing waits (stats() would start it): the recorder's delay (1 ms) starts
  // it, and its writes appear in the program's own memory.
  const volatile double* last = &memory[n - 1];
  bool ran = false;
  for (int i = 0; i < 1000 && !ran; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    ran = *last == static_cast<double>((n - 1) % 13);
  }
  CHECK(ran);
  rt.pause();
  CHECK(rt.stats().regions == 1);
}

TEST_CASE("fusion: recorded regions start on their own after pauses and idle times of every length") {
  // The recorder's timer is armed by the launch that begins a chain and left
  // armed when a pause starts the chain first: a launch right after such a
  // pause, one while the timer fires for nothing, and one after a long idle
  // time each start on their own again.
  Runtime rt;
  const std::int64_t n = 1000;
  std::vector<double> memory(n, -1.0), other(n, -1.0);
  auto a = rt.wrap(memory.data(), n), b = rt.wrap(other.data(), n);
  const volatile double* last = &memory[n - 1];
  auto runs_on_its_own = [&] {
    memory[n - 1] = -1.0;
    rt.region(init()).over(n).launch(a, b);
    for (int i = 0; i < 2000; ++i) {
      if (*last == static_cast<double>((n - 1) % 13)) return true;
      std::this_thread::sleep_for(std::chrono::microseconds(500));
    }
    return false;
  };
  int regions = 0;
  for (int idle_us : {0, 300, 900, 1100, 2500, 12000}) {
    CAPTURE(idle_us);
    rt.region(init()).over(n).launch(a, b);  // a chain a pause starts at once
    rt.pause();
    std::this_thread::sleep_for(std::chrono::microseconds(idle_us));
    CHECK(runs_on_its_own());
    rt.pause();
    regions += 2;
  }
  CHECK(rt.stats().regions == regions);
}

namespace {

// The names of the process's threads that Canopy named (name_current_thread).
std::multiset<std::string> canopy_threads() {
  std::multiset<std::string> names;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(task.path() / "comm");
    std::string name;
    std::getline(comm, name);
    if (name.rfind("canopy:", 0) == 0) names.insert(name);
  }
  return names;
}

}  // namespace

TEST_CASE("fusion: a recorded region the caller waits for next runs on the caller's thread") {
  Runtime rt;
  canopy::engine_tests::use_tree(rt, canopy::engine_tests::one_leaf_tree());
  const std::int64_t n = std::int64_t{1} << 20;  // far past what runs inline anyway
  auto a = rt.array<double>(n), b = rt.array<double>(n);
  rt.region(init()).over(n).launch(a, b);
  {
    auto view = b.host_read();  // starts the recorded region: this thread runs it
    std::int64_t wrong = 0;
    for (std::int64_t i = 0; i < n; ++i) wrong += view[i] != static_cast<double>(i % 7) - 3.0 ? 1 : 0;
    CHECK(wrong == 0);
  }
  CHECK(canopy_threads().count("canopy:cpu0") == 0);  // the leaf's worker never started

  // Unrecorded, a region goes to the leaf's worker, which the count sees.
  rt.fuse(false);
  rt.region(step()).over(n).launch(a, b, 2.0, 1.0);
  rt.pause();
  CHECK(canopy_threads().count("canopy:cpu0") == 1);
  auto view = b.host_read();
  std::int64_t wrong = 0;
  for (std::int64_t i = 0; i < n; ++i) wrong += view[i] != static_cast<double>(i % 13) * 2.0 + 1.0 ? 1 : 0;
  CHECK(wrong == 0);
}

TEST_CASE("fusion: the trace names the regions a fused kernel ran") {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("canopy-fusion-trace-" + std::to_string(::getpid()) + ".json"))
          .string();
  {
    canopy::testing::ScopedSetting trace("CANOPY_TRACE", path.c_str()), eager("CANOPY_FUSE", "eager");
    Runtime rt;
    const std::int64_t n = 5000;
    auto a = rt.array<double>(n), b = rt.array<double>(n);
    until_fused(
        rt,
        [&] {  // a slow run may start init before add_into comes
          rt.region(init()).over(n).launch(a, b);
          rt.region(add_into()).over(n).launch(a, b);
        },
        2);
    CHECK(a.host_read()[20] == 20 % 13 + 20 % 7 - 3.0);
  }
  const canopy::trace_tests::Trace trace = canopy::trace_tests::read_trace(path);
  int fused = 0;
  for (const auto& piece : trace.of("piece")) {
    if (!piece.args.has("fused")) continue;
    ++fused;
    CHECK(piece.text("fused") == "fu_init,fu_add_into");
    CHECK(piece.text("kernel") == "fu_init.fu_add_into");
    CHECK(piece.number("arrays_in_registers") == 0);
  }
  CHECK(fused >= 1);
  std::filesystem::remove(path);
}

TEST_CASE("fusion: an array two Runtimes use sees their regions in launch order, recorded ones included") {
  // Each Runtime records its element-wise regions to fuse them; a region or
  // copy of the other Runtime, or a host view, that uses the same array
  // starts them first. Before, a reduction of rt2 read what rt1's recorded
  // region had not written yet: sum 0 instead of n.
  static const Kernel add_one("fusion_two_add_one", [](InOut<double> a) { a[index(0)] = a[index(0)] + 1.0; }, {"a"});
  static const Kernel twice("fusion_two_twice", [](InOut<double> a) { a[index(0)] = 2.0 * a[index(0)]; }, {"a"});
  static const Kernel total("fusion_two_total", [](In<double> a, Sum<double> s) { s += a[index(0)]; }, {"a", "s"});
  const std::int64_t n = 1000;
  Runtime rt1, rt2;
  auto a = rt1.array<double>(n, named("a"));
  auto b = rt2.array<double>(n, named("b"));
  std::vector<double> want(static_cast<std::size_t>(n));
  {
    auto view = a.host();
    for (std::int64_t i = 0; i < n; ++i) view[i] = want[std::size_t(i)] = double(i % 7);
  }
  auto sum_of = [&] {
    double s = 0;
    for (double x : want) s += x;
    return s;
  };
  for (int round = 0; round < 3; ++round) {
    CAPTURE(round);
    // rt1 records, rt2 reduces.
    rt1.region(add_one).over(n).launch(a);
    for (auto& x : want) x += 1.0;
    CHECK(rt2.region(total).over(n).reduce(a) == sum_of());
    // Both record, one after the other; the host view of a waits for both.
    rt2.region(add_one).over(n).launch(a);
    rt1.region(twice).over(n).launch(a);
    for (auto& x : want) x = 2.0 * (x + 1.0);
    {
      const auto view = a.host_read();
      std::int64_t wrong = 0;
      for (std::int64_t i = 0; i < n; ++i) wrong += view[i] != want[std::size_t(i)];
      CHECK(wrong == 0);
    }
    // rt1 records, rt2 copies.
    rt1.region(add_one).over(n).launch(a);
    for (auto& x : want) x += 1.0;
    rt2.copy(b, a);  // into b, from a
    const auto copied = b.host_read();
    std::int64_t wrong = 0;
    for (std::int64_t i = 0; i < n; ++i) wrong += copied[i] != want[std::size_t(i)];
    CHECK(wrong == 0);
  }
  rt1.pause();
  rt2.pause();
}

TEST_CASE("fusion: the threads Canopy starts carry their own names, not the recorder's") {
  // The background compiler, started from the recorder's thread, showed as a
  // second canopy:recorder in `ps -L` (found by a new user).
  canopy::testing::ScopedSetting leaves("CANOPY_CPU_LEAVES", "core"), cache("CANOPY_CACHE_DIR", "off");
  Runtime rt;
  const std::int64_t n = 1 << 16;
  auto a = rt.array<double>(n), b = rt.array<double>(n), c = rt.array<double>(n);
  static const Kernel init("thread_names_init", [](Out<double> b, Out<double> c) {
    Idx i = index(0);
    b[i] = 1.0;
    c[i] = cast<double>(i);
  });
  static const Kernel triad("thread_names_triad", [](Out<double> a, In<double> b, In<double> c) {
    Idx i = index(0);
    a[i] = b[i] + 0.5 * c[i];
  });
  for (int round = 0; round < 3; ++round) {
    rt.region(init).over(n).launch(b, c);
    rt.region(triad).over(n).launch(a, b, c);
    rt.pause();
  }
  CHECK(a.host_read()[10] == 6.0);
  int recorders = 0, compilers = 0;  // two leaves: the other leaf's programs compile in the background
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(task.path() / "comm");
    std::string name;
    std::getline(comm, name);
    recorders += name == "canopy:recorder";
    compilers += name == "canopy:compile";
  }
  CHECK(recorders <= 1);
  CHECK(compilers >= 1);
}
