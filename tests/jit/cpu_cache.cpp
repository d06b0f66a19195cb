// CpuCompiler's caches: the same kernel again comes from memory, a second
// compiler on the same directory (a second run) loads it from disk and
// computes the same values, damaged entries are recompiled and replaced, an
// unusable directory only costs a warning, and threads asking for one kernel
// at once get it compiled once.
#include <doctest/doctest.h>

#include <barrier>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <canopy/ir/dump.hpp>
#include <canopy/ir/error.hpp>
#include <canopy/jit/cpu_compiler.hpp>
#include <canopy/jit/disk_cache.hpp>

#include "jit_test_support.hpp"
#include "scoped_setting.hpp"

using namespace canopy;
using namespace canopy::ir;
using namespace canopy::jit;
using namespace canopy::jit::testing;
using Source = CpuCompiler::Source;

namespace {

// a[i] = b[i] * s + i, over n elements; the name makes each test's kernel its own.
Kernel scaled_kernel(const std::string& name, double offset = 0.0) {
  auto i = make_index(0);
  return make_kernel(
      name, {Param::array("a", F64, 1, Access::Out), Param::array("b", F64, 1, Access::In), Param::scalar("s", F64)}, 1,
      {make_store(0, {i},
                  make_binary(BinaryOp::Add, make_binary(BinaryOp::Mul, make_load(F64, 1, {i}), make_param(F64, 2)),
                              make_binary(BinaryOp::Add, make_cast(F64, i), make_const(F64, offset))))});
}

// Runs a scaled_kernel entry and checks every element; returns whether all matched.
bool runs_correctly(const Kernel& kernel, CpuEntry entry, double offset = 0.0) {
  const std::int64_t n = 333;
  std::vector<double> a(n, -1.0), b(n);
  for (std::int64_t i = 0; i < n; ++i) b[i] = std::sqrt(static_cast<double>(i));
  ArgBlock args(kernel);
  args.array(0, a.data(), {n}).array(1, b.data(), {n}).f64(2, 1.5);
  entry(0, n, args.data());
  for (std::int64_t i = 0; i < n; ++i)
    if (a[i] != b[i] * 1.5 + (static_cast<double>(i) + offset)) return false;
  return true;
}

// An entry as an address doctest can print.
const void* address(CpuEntry entry) { return reinterpret_cast<const void*>(entry); }

}  // namespace

TEST_CASE("the same kernel again comes from memory; a second compiler on the directory loads it from disk") {
  TempDir dir;
  Kernel kernel = scaled_kernel("cache_roundtrip");
  CpuCompiler first(CpuCompiler::Options{dir.str()});
  auto compiled = first.compile(kernel);
  CHECK(compiled.source == Source::Compiled);
  CHECK(compiled.key.size() == 32);
  CHECK(compiled.key == first.cache_key(kernel));
  CHECK(compiled.seconds > 0.0);
  CHECK(runs_correctly(kernel, compiled.entry));
  // Kept as a shared object (the system linker is here: it built Canopy),
  // which a later run opens without LLVM.
  CHECK(std::filesystem::exists(first.disk_cache()->loadable_path_of(compiled.key)));
  CHECK_FALSE(std::filesystem::exists(first.disk_cache()->path_of(compiled.key)));

  auto again = first.compile(kernel);
  CHECK(again.source == Source::Memory);
  CHECK(address(again.entry) == address(compiled.entry));

  CpuCompiler second(CpuCompiler::Options{dir.str()});  // a second run of the program
  auto loaded = second.compile(kernel);
  CHECK(loaded.source == Source::Disk);
  CHECK(loaded.key == compiled.key);
  CHECK(address(loaded.entry) != address(compiled.entry));  // its own copy, in its own JIT library
  CHECK(runs_correctly(kernel, loaded.entry));
  CHECK(second.disk_cache()->counters().hits == 1);
  CHECK(second.compile(kernel).source == Source::Memory);

  // A different kernel is a different entry.
  Kernel other = scaled_kernel("cache_roundtrip", 2.0);
  auto other_compiled = second.compile(other);
  CHECK(other_compiled.source == Source::Compiled);
  CHECK(other_compiled.key != compiled.key);
  CHECK(runs_correctly(other, other_compiled.entry, 2.0));
}

TEST_CASE("with CANOPY_DUMP asking for generated code, a kernel on disk is compiled again, and written out") {
  // A warm cache had left the dumps a user asked for unwritten (found by a
  // new user following the README).
  TempDir dir, dumps;
  Kernel kernel = scaled_kernel("cache_dumped");
  {
    CpuCompiler first(CpuCompiler::Options{dir.str()});
    CHECK(first.compile(kernel).source == Source::Compiled);
  }
  for (const char* kind : {"llvm", "asm", "ir"}) {
    CAPTURE(kind);
    canopy::testing::ScopedSetting dump("CANOPY_DUMP", kind), where("CANOPY_DUMP_DIR", dumps.str().c_str());
    CpuCompiler again(CpuCompiler::Options{dir.str()});
    CHECK(again.compile(kernel).source == Source::Compiled);
    const std::string file =
        std::string(kernel.name) + (std::string(kind) == "ir" ? ".cpu.ir" : "." + std::string(kind));
    CHECK(std::filesystem::exists(dumps.path() / file));
  }
  CpuCompiler later(CpuCompiler::Options{dir.str()});  // without dumps: from disk again
  CHECK(later.compile(kernel).source == Source::Disk);
}

TEST_CASE("stored in the background: the entry runs at once, and is on disk after a flush or the compiler's end") {
  TempDir dir;
  CpuCompiler::Options options{dir.str()};
  options.store_in_background = true;
  std::vector<std::string> keys;
  {
    CpuCompiler first(options);
    // Without a disk cache there is nothing to wait for.
    CpuCompiler::Options off{"off"};
    off.store_in_background = true;
    CpuCompiler without(off);
    without.flush_disk_cache();

    Kernel flushed = scaled_kernel("background_flushed");
    auto compiled = first.compile(flushed);
    CHECK(compiled.source == Source::Compiled);
    CHECK(runs_correctly(flushed, compiled.entry));  // before the store is done
    first.flush_disk_cache();
    CHECK(std::filesystem::exists(first.disk_cache()->loadable_path_of(compiled.key)));
    keys.push_back(compiled.key);
    // Several at once, left to the destructor.
    for (int k = 0; k < 3; ++k) {
      Kernel kernel = scaled_kernel("background_" + std::to_string(k), k);
      auto result = first.compile(kernel);
      CHECK(runs_correctly(kernel, result.entry, k));
      keys.push_back(result.key);
    }
  }
  CpuCompiler second(CpuCompiler::Options{dir.str()});
  for (const auto& key : keys) CHECK(std::filesystem::exists(second.disk_cache()->loadable_path_of(key)));
  for (int k = 0; k < 3; ++k) {
    Kernel kernel = scaled_kernel("background_" + std::to_string(k), k);
    auto loaded = second.compile(kernel);
    CHECK(loaded.source == Source::Disk);
    CHECK(runs_correctly(kernel, loaded.entry, k));
  }
  CHECK(second.disk_cache()->counters().corrupt == 0);
}

TEST_CASE("a damaged cache entry is recompiled, counted, and replaced by a valid one") {
  struct Damage {
    const char* what;
    std::string (*apply)(std::string);
  };
  const Damage damages[] = {
      {"bytes flipped in the middle",
       [](std::string file) {
         for (std::size_t i = file.size() / 2; i < file.size() / 2 + 16; ++i) file[i] = static_cast<char>(~file[i]);
         return file;
       }},
      {"truncated to half", [](std::string file) { return file.substr(0, file.size() / 2); }},
      {"truncated to 3 bytes", [](std::string file) { return file.substr(0, 3); }},
      {"emptied", [](std::string) { return std::string(); }},
  };
  for (const Damage& damage : damages) {
    CAPTURE(damage.what);
    TempDir dir;
    Kernel kernel = scaled_kernel("cache_damage");
    std::string path, good;
    {
      CpuCompiler first(CpuCompiler::Options{dir.str()});
      auto compiled = first.compile(kernel);
      REQUIRE(compiled.source == Source::Compiled);
      path = first.disk_cache()->loadable_path_of(compiled.key);
      good = read_all(path);
    }
    write_all(path, damage.apply(good));

    CpuCompiler second(CpuCompiler::Options{dir.str()});
    auto recompiled = second.compile(kernel);
    CHECK(recompiled.source == Source::Compiled);
    CHECK(runs_correctly(kernel, recompiled.entry));
    CHECK(second.disk_cache()->counters().corrupt == 1);
    CHECK(second.disk_cache()->counters().hits == 0);
    CHECK(read_all(path).size() == good.size());

    CpuCompiler third(CpuCompiler::Options{dir.str()});
    auto loaded = third.compile(kernel);
    CHECK(loaded.source == Source::Disk);
    CHECK(runs_correctly(kernel, loaded.entry));
  }
}

TEST_CASE("the cache key follows the SIMD and prefetch settings in force at each compile, on one compiler") {
  TempDir dir;
  Kernel kernel = scaled_kernel("cache_simd_key");
  CpuCompiler compiler(CpuCompiler::Options{dir.str()});
  const std::string plain = compiler.cache_key(kernel);
  std::string off, wide;
  {
    canopy::testing::ScopedSetting simd("CANOPY_SIMD", "off");
    off = compiler.cache_key(kernel);
  }
  {
    canopy::testing::ScopedSetting width("CANOPY_SIMD_WIDTH", "16");
    wide = compiler.cache_key(kernel);
  }
  std::string unprefetched;
  {
    canopy::testing::ScopedSetting prefetch("CANOPY_PREFETCH", "off");
    unprefetched = compiler.cache_key(kernel);
  }
  CHECK(off != plain);
  CHECK(wide != plain);
  CHECK(wide != off);
  CHECK(unprefetched != plain);
  CHECK(compiler.cache_key(kernel) == plain);  // the settings are back as they were
}

TEST_CASE("a cached shared object the loader refuses is compiled again, and the object file kept instead") {
  TempDir dir;
  Kernel kernel = scaled_kernel("cache_unloadable");
  std::string key;
  {
    CpuCompiler first(CpuCompiler::Options{dir.str()});
    key = first.compile(kernel).key;
  }
  // A whole, checksummed entry that is not a loadable object (its ELF header
  // says shared object; the rest is not), as a folder mounted noexec or a
  // foreign file would look to the loader.
  DiskCache cache(dir.str());
  const std::string real = read_all(cache.loadable_path_of(key));
  REQUIRE(real.size() > 64);
  cache.put_loadable(key, real.substr(0, 64) + std::string(4096, '\0'));

  CpuCompiler second(CpuCompiler::Options{dir.str()});
  const auto again = second.compile(kernel);
  CHECK(again.source == Source::Compiled);
  CHECK(runs_correctly(kernel, again.entry));
  CHECK(std::filesystem::exists(cache.path_of(key)));  // the object file, for the JIT

  CpuCompiler third(CpuCompiler::Options{dir.str()});
  const auto loaded = third.compile(kernel);
  CHECK(loaded.source == Source::Disk);
  CHECK(runs_correctly(kernel, loaded.entry));
}

TEST_CASE("kernels compiled together: each runs, compile() reports it once as compiled, later runs load each") {
  TempDir dir;
  const Kernel one = scaled_kernel("together_one", 1.0), two = scaled_kernel("together_two", 2.0),
               three = scaled_kernel("together_three", 3.0);
  // Stores an f64 into an i32 array: left for compile() to refuse.
  const Kernel wrong = make_kernel("together_wrong", {Param::array("a", I32, 1, Access::Out)}, 1,
                                   {make_store(0, {make_index(0)}, make_const(F64, 1.0))});
  std::vector<std::string> keys;
  {
    CpuCompiler compiler(CpuCompiler::Options{dir.str()});
    compiler.compile_together({&one, &wrong, &two, &three});
    double offset = 1.0;
    for (const Kernel* kernel : {&one, &two, &three}) {
      CAPTURE(kernel->name);
      const auto compiled = compiler.compile(*kernel);
      CHECK(compiled.source == Source::Compiled);
      CHECK(runs_correctly(*kernel, compiled.entry, offset));
      CHECK(compiler.compile(*kernel).source == Source::Memory);
      keys.push_back(compiled.key);
      offset += 1.0;
    }
    CHECK_THROWS_AS(compiler.compile(wrong), canopy::Error);
  }
  {
    CpuCompiler later(CpuCompiler::Options{dir.str()});
    const auto loaded = later.compile(two);
    CHECK(loaded.source == Source::Disk);
    CHECK(runs_correctly(two, loaded.entry, 2.0));
  }
  // Where no shared object loads, each key keeps the one object file the
  // kernels were compiled into: the first kernel a run meets links it, the
  // others are found in it. (Not `two`: this process has its shared object
  // open, and the loader would hand that back.)
  DiskCache cache(dir.str());
  for (std::size_t k : {std::size_t{0}, std::size_t{2}}) {
    const std::string real = read_all(cache.loadable_path_of(keys[k]));
    cache.put_loadable(keys[k], real.substr(0, 64) + std::string(4096, '\0'));
  }
  {
    CpuCompiler compiler(CpuCompiler::Options{dir.str()});
    compiler.compile_together({&one, &two, &three});  // one and three compiled again, their object kept
    CHECK(compiler.compile(one).source == Source::Compiled);
    CHECK(compiler.compile(two).source == Source::Disk);
    CHECK(compiler.compile(three).source == Source::Compiled);
  }
  CHECK(std::filesystem::exists(cache.path_of(keys[0])));
  CHECK(std::filesystem::exists(cache.path_of(keys[2])));
  CpuCompiler last(CpuCompiler::Options{dir.str()});
  const auto third = last.compile(three), first = last.compile(one);
  CHECK(third.source == Source::Disk);
  CHECK(first.source == Source::Disk);
  CHECK(runs_correctly(three, third.entry, 3.0));
  CHECK(runs_correctly(one, first.entry, 1.0));
}

TEST_CASE("an unusable cache directory still compiles and runs, with one warning") {
  TempDir dir;
  write_all((dir.path() / "regular-file").string(), "a file, not a directory");
  const std::string cache_dir = (dir.path() / "regular-file" / "cache").string();
  CpuCompiler compiler(CpuCompiler::Options{cache_dir});
  StderrCapture captured;
  Kernel first = scaled_kernel("unusable_one"), second = scaled_kernel("unusable_two", 1.0);
  auto one = compiler.compile(first);
  auto two = compiler.compile(second);
  const std::string warnings = captured.finish();
  CHECK(one.source == Source::Compiled);
  CHECK(two.source == Source::Compiled);
  CHECK(runs_correctly(first, one.entry));
  CHECK(runs_correctly(second, two.entry, 1.0));
  CHECK(compiler.disk_cache()->counters().write_failures == 2);
  CHECK(warnings.find("canopy: kernel cache at " + cache_dir + " is not usable (") == 0);
  CHECK(warnings.find("kernels will be compiled on every run\n") != std::string::npos);
  CHECK(warnings.find("canopy:", 1) == std::string::npos);  // once
}

TEST_CASE("threads compiling the same kernel at once all get a working entry, compiled once") {
  TempDir dir;
  CpuCompiler compiler(CpuCompiler::Options{dir.str()});
  const int threads = 4;
  for (int round = 0; round < 3; ++round) {
    CAPTURE(round);
    Kernel kernel = scaled_kernel("concurrent" + std::to_string(round));
    std::vector<CpuCompiler::Compiled> results(threads);
    std::barrier start(threads);
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t)
      workers.emplace_back([&, t] {
        start.arrive_and_wait();
        results[t] = compiler.compile(kernel);
      });
    for (auto& worker : workers) worker.join();
    int compiled = 0;
    for (const auto& result : results) {
      compiled += result.source == Source::Compiled;
      CHECK(result.source != Source::Disk);
      CHECK(address(result.entry) == address(results[0].entry));
      CHECK(runs_correctly(kernel, result.entry));
    }
    CHECK(compiled == 1);
  }
  // Different kernels compile in parallel on different threads.
  std::vector<CpuCompiler::Compiled> results(threads);
  std::vector<Kernel> kernels;
  for (int t = 0; t < threads; ++t) kernels.push_back(scaled_kernel("parallel" + std::to_string(t), t));
  std::barrier start(threads);
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t)
    workers.emplace_back([&, t] {
      start.arrive_and_wait();
      results[t] = compiler.compile(kernels[t]);
    });
  for (auto& worker : workers) worker.join();
  for (int t = 0; t < threads; ++t) {
    CHECK(results[t].source == Source::Compiled);
    CHECK(runs_correctly(kernels[t], results[t].entry, t));
  }
}

TEST_CASE("cache directory choice: \"off\", $CANOPY_CACHE_DIR, and the target in the key") {
  CpuCompiler off(CpuCompiler::Options{"off"});
  CHECK(off.disk_cache() == nullptr);
  Kernel kernel = scaled_kernel("cache_off");
  auto compiled = off.compile(kernel);
  CHECK(compiled.source == Source::Compiled);
  CHECK(runs_correctly(kernel, compiled.entry));

  TempDir dir;
  std::optional<canopy::testing::ScopedSetting> cache_dir(std::in_place, "CANOPY_CACHE_DIR", dir.str().c_str());
  CpuCompiler from_environment;
  cache_dir.reset();
  REQUIRE(from_environment.disk_cache() != nullptr);
  CHECK(from_environment.disk_cache()->directory() == dir.str());

  // Keys: equal for equal kernels, 32 hex characters, and the target is described.
  CHECK(off.cache_key(scaled_kernel("k")) == off.cache_key(scaled_kernel("k")));
  CHECK(off.cache_key(scaled_kernel("k")) != off.cache_key(scaled_kernel("k", 1.0)));
  CHECK(off.cache_key(scaled_kernel("k")).find_first_not_of("0123456789abcdef") == std::string::npos);
  CHECK(off.target_description().find(';') != std::string::npos);
  CHECK(name_of(Source::Disk) == "disk");
}

TEST_CASE("a kernel that does not verify is refused with canopy::Error before anything compiles") {
  // Stores an f64 into an i32 array.
  Kernel kernel = make_kernel("wrong_type", {Param::array("a", I32, 1, Access::Out)}, 1,
                              {make_store(0, {make_index(0)}, make_const(F64, 1.0))});
  TempDir dir;
  CpuCompiler compiler(CpuCompiler::Options{dir.str()});
  CHECK_THROWS_AS(compiler.compile(kernel), canopy::Error);
  CHECK(compiler.disk_cache()->counters().misses == 0);
}

TEST_CASE("CANOPY_DUMP=llvm shows vectorized STREAM loops: triad's vector loads and stores, dot's vector sum") {
  TempDir cache, dumps;
  std::optional<canopy::testing::ScopedSetting> dump(std::in_place, "CANOPY_DUMP", "llvm"),
      dump_dir(std::in_place, "CANOPY_DUMP_DIR", dumps.str().c_str());
  auto i = make_index(0);
  auto load = [&](int param) { return make_load(F64, param, {i}); };
  Kernel triad = make_kernel(
      "stream.triad",
      {Param::array("a", F64, 1, Access::Out), Param::array("b", F64, 1, Access::In),
       Param::array("c", F64, 1, Access::In), Param::scalar("s", F64)},
      1,
      {make_store(0, {i},
                  make_binary(BinaryOp::Add, load(1), make_binary(BinaryOp::Mul, make_param(F64, 3), load(2))))});
  Kernel dot = make_kernel("stream.dot",
                           {Param::array("a", F64, 1, Access::In), Param::array("b", F64, 1, Access::In),
                            Param::reduction("s", F64, ReduceOp::Sum)},
                           1, {make_reduce(2, make_binary(BinaryOp::Mul, load(0), load(1)))});
  CpuCompiler compiler(CpuCompiler::Options{cache.str()});
  auto triad_compiled = compiler.compile(triad);
  auto dot_compiled = compiler.compile(dot);
  dump_dir.reset();
  dump.reset();

  const std::string triad_ir = read_all((dumps.path() / "stream.triad.llvm").string());
  const std::string dot_ir = read_all((dumps.path() / "stream.dot.llvm").string());
  CHECK(triad_ir.find("define void @canopy_stream_triad_" + triad_compiled.key.substr(0, 16)) != std::string::npos);
  CHECK(triad_ir.find("load <") != std::string::npos);
  CHECK(triad_ir.find("store <") != std::string::npos);
  CHECK(triad_ir.find("fmul fast") == std::string::npos);  // no fast-math beyond the reduction
  CHECK(dot_ir.find("x double> @llvm.fma") == std::string::npos);
  CHECK(dot_ir.find("@llvm.vector.reduce.fadd") != std::string::npos);

  const std::int64_t n = 1001;
  std::vector<double> a(n), b(n), c(n);
  for (std::int64_t k = 0; k < n; ++k) b[k] = static_cast<double>(k), c[k] = 2.0;
  ArgBlock triad_args(triad);
  triad_args.array(0, a.data(), {n}).array(1, b.data(), {n}).array(2, c.data(), {n}).f64(3, 0.5);
  triad_compiled.entry(0, n, triad_args.data());
  double sum = 0.0;
  ArgBlock dot_args(dot);
  dot_args.array(0, a.data(), {n}).array(1, c.data(), {n}).partial(2, &sum);
  dot_compiled.entry(0, n, dot_args.data());
  double want = 0.0;
  for (std::int64_t k = 0; k < n; ++k) want += (b[k] + 0.5 * c[k]) * c[k];
  CHECK(sum == want);  // integer-valued terms: exact in any order
}

TEST_CASE("a planted entry in a cache directory others may write is never loaded") {
  // The attack: someone who can write the directory plants, under the key of
  // a kernel, the object of another kernel of the same name, its symbol
  // renamed to match. Here `offset 0` is the victim and `offset 5` the plant.
  Kernel victim = scaled_kernel("planted"), impostor = scaled_kernel("planted", 5.0);
  TempDir dir, elsewhere;
  std::string key, planted;
  {
    // Without a system linker on the PATH the entry is the object file, which
    // the JIT links: the plant below is one.
    canopy::testing::ScopedSetting no_linker("PATH", "/nonexistent");
    CpuCompiler compiler(CpuCompiler::Options{elsewhere.str()});
    key = compiler.cache_key(victim);
    const auto compiled = compiler.compile(impostor);
    planted = DiskCache(elsewhere.str()).get(compiled.key).value();
    for (auto at = planted.find(compiled.key.substr(0, 16)); at != std::string::npos;
         at = planted.find(compiled.key.substr(0, 16), at))
      planted.replace(at, 16, key.substr(0, 16));
  }
  const auto plant = [&] { DiskCache(dir.str()).put(key, planted); };

  // The plant works where the directory is trusted (so this test can fail):
  // a compiler there loads it and computes the impostor's values.
  plant();
  {
    CpuCompiler fooled(CpuCompiler::Options{dir.str()});
    const auto loaded = fooled.compile(victim);
    REQUIRE(loaded.source == Source::Disk);
    CHECK_FALSE(runs_correctly(victim, loaded.entry));
    CHECK(runs_correctly(victim, loaded.entry, 5.0));
  }

  // A directory others may write: refused with one warning naming it; the
  // kernel is compiled and right, and nothing is written there.
  std::filesystem::permissions(dir.path(), std::filesystem::perms::all);  // 0777; the plant is still there
  StderrCapture captured;
  CpuCompiler careful(CpuCompiler::Options{dir.str()});
  const auto compiled = careful.compile(victim);
  const std::string warnings = captured.finish();
  CHECK(compiled.source == Source::Compiled);
  CHECK(runs_correctly(victim, compiled.entry));
  CHECK(careful.disk_cache()->counters().untrusted == 3);  // the two gets (loadable, object) and the put
  CHECK(careful.disk_cache()->counters().hits == 0);
  CHECK(warnings == "canopy: not using the cache directory " + dir.str() +
                        ": others may write it (mode 0777); Canopy computes what it would have read\n");
  CHECK(careful.disk_cache()->problem().find(dir.str()) == 0);

  // Owned by another user (as root, the test can make it so).
  if (::geteuid() == 0) {
    std::filesystem::permissions(dir.path(), std::filesystem::perms::owner_all);  // 0700
    REQUIRE(::chown(dir.str().c_str(), 65534, 65534) == 0);
    CpuCompiler other_owner(CpuCompiler::Options{dir.str()});
    const auto again = other_owner.compile(victim);
    CHECK(again.source == Source::Compiled);
    CHECK(runs_correctly(victim, again.entry));
    CHECK(other_owner.disk_cache()->problem().find("owned by user id 65534") != std::string::npos);
  } else {
    MESSAGE("not root: the directory owned by another user is checked in tests/jit/checked_file.cpp only");
  }
}

// Which lowering a kernel got (jit/internal/simd_lowering.hpp) is the first
// line of its LLVM dump: lanes for a point whose loop reads the same element
// in every lane (an n-body force) or consecutive ones, or walks its own row
// of a read-only array (through a row block), the scalar loop for a point
// that walks a row picked by data (a gather in the innermost loop) or that
// gathers with little arithmetic beside unless CANOPY_SIMD=on, and the scalar
// loop for everything with CANOPY_SIMD=off.
// It also names the LLVM pipeline: O3 for the scalar loop, O2 without the
// vectorizers for lanes with a loop in the body, the light one for a
// straight-line body.
TEST_CASE("CANOPY_DUMP=llvm says whether a kernel runs one point per SIMD lane, and why not") {
  TempDir cache, dumps;
  canopy::testing::ScopedSetting dump("CANOPY_DUMP", "llvm,ir"), dump_dir("CANOPY_DUMP_DIR", dumps.str().c_str());
  auto i = make_index(0);
  auto k = make_var(I64, "k");
  // out[i] = sum over k of in[k] * in[i]: in[k] is one element for all lanes.
  auto all_pairs = [&](const std::string& name) {
    return make_kernel(
        name, {Param::array("out", F64, 1, Access::Out), Param::array("in", F64, 1, Access::In)}, 1,
        {make_decl("acc", make_const(F64, 0.0)),
         make_for("k", make_int(I64, 0), make_extent(1, 0),
                  make_block({make_assign("acc", make_binary(BinaryOp::Add, make_var(F64, "acc"),
                                                             make_binary(BinaryOp::Mul, make_load(F64, 1, {k}),
                                                                         make_load(F64, 1, {i}))))})),
         make_store(0, {i}, make_var(F64, "acc"))});
  };
  // out[i] = sum over k of m[pick[i]][k]: a row per point, picked by data.
  Kernel picked_rows = make_kernel(
      "simd.picked_rows",
      {Param::array("out", F64, 1, Access::Out), Param::array("m", F64, 2, Access::In),
       Param::array("pick", I64, 1, Access::In)},
      1,
      {make_decl("acc", make_const(F64, 0.0)),
       make_for("k", make_int(I64, 0), make_extent(1, 1),
                make_block({make_assign("acc", make_binary(BinaryOp::Add, make_var(F64, "acc"),
                                                           make_load(F64, 1, {make_load(I64, 2, {i}), k})))})),
       make_store(0, {i}, make_var(F64, "acc"))});
  // out[i] = sum over k of m[i][k]: the point's own row, read along the row.
  Kernel row_sums = make_kernel(
      "simd.row_sums", {Param::array("out", F64, 1, Access::Out), Param::array("m", F64, 2, Access::In)}, 1,
      {make_decl("acc", make_const(F64, 0.0)),
       make_for("k", make_int(I64, 0), make_extent(1, 1),
                make_block(
                    {make_assign("acc", make_binary(BinaryOp::Add, make_var(F64, "acc"), make_load(F64, 1, {i, k})))})),
       make_store(0, {i}, make_var(F64, "acc"))});
  // out[i] = f(in[pick[i]]) without a loop: one gather, then either one
  // addition (the scalar loop) or a chain of twelve x * x - 0.5 (lanes: the
  // arithmetic outweighs the gather).
  auto picked = [&](const std::string& name, int squarings) {
    std::vector<Stmt> body = {make_decl("x0", make_load(F64, 1, {make_load(I64, 2, {i})}))};
    Expr x = make_var(F64, "x0");
    if (squarings == 0) x = make_binary(BinaryOp::Add, x, make_const(F64, 1.0));
    for (int s = 1; s <= squarings; ++s) {
      const std::string next = "x" + std::to_string(s);
      body.push_back(
          make_decl(next, make_binary(BinaryOp::Sub, make_binary(BinaryOp::Mul, x, x), make_const(F64, 0.5))));
      x = make_var(F64, next);
    }
    body.push_back(make_store(0, {i}, x));
    return make_kernel(name,
                       {Param::array("out", F64, 1, Access::Out), Param::array("in", F64, 1, Access::In),
                        Param::array("pick", I64, 1, Access::In)},
                       1, std::move(body));
  };
  // out[i] = 2 in[i]: a straight-line body, which gets the light pipeline;
  // so does out[i] = exp(in[i]), its vector exp inlined.
  Kernel scaled =
      make_kernel("simd.scaled", {Param::array("out", F64, 1, Access::Out), Param::array("in", F64, 1, Access::In)}, 1,
                  {make_store(0, {i}, make_binary(BinaryOp::Mul, make_const(F64, 2.0), make_load(F64, 1, {i})))});
  Kernel exponential =
      make_kernel("simd.exp", {Param::array("out", F64, 1, Access::Out), Param::array("in", F64, 1, Access::In)}, 1,
                  {make_store(0, {i}, make_call(MathFn::Exp, {make_load(F64, 1, {i})}))});
  // out[0] = sum over k of in[k], never reading the point's index: a task
  // for one point, every lane of which would do the same work.
  Kernel task = make_kernel(
      "simd.task", {Param::array("out", F64, 1, Access::Out), Param::array("in", F64, 1, Access::In)}, 1,
      {make_decl("acc", make_const(F64, 0.0)),
       make_for(
           "k", make_int(I64, 0), make_extent(1, 0),
           make_block({make_assign("acc", make_binary(BinaryOp::Add, make_var(F64, "acc"), make_load(F64, 1, {k})))})),
       make_store(0, {make_int(I64, 0)}, make_var(F64, "acc"))});
  // out(j, i) = in(i, j): a strided store beside a consecutive load keeps the
  // lanes (a transpose ran 1.5x faster in lanes than in the scalar loop);
  // out(i, j) = in(j, i), a strided load beside a consecutive store, does not.
  const Expr row = make_index(0), column = make_index(1);
  auto transposing = [&](const std::string& name, bool strided_store) {
    const std::vector<Expr> along = {row, column}, across = {column, row};
    return make_kernel(
        name, {Param::array("out", F64, 2, Access::Out), Param::array("in", F64, 2, Access::In)}, 2,
        {make_store(0, strided_store ? across : along, make_load(F64, 1, strided_store ? along : across))});
  };
  // y[i] = x[max(i-1, 0)] + x[i] + x[min(i+1, n-1)]: clamped neighbours load
  // whole vectors away from the ends, so they do not count as gathers.
  const Expr at = make_index(0);
  const Kernel clamped = make_kernel(
      "simd.clamped", {Param::array("y", F64, 1, Access::Out), Param::array("x", F64, 1, Access::In)}, 1,
      {make_store(
          0, {at},
          make_binary(
              BinaryOp::Add,
              make_binary(BinaryOp::Add,
                          make_load(F64, 1,
                                    {make_binary(BinaryOp::Max, make_binary(BinaryOp::Sub, at, make_int(I64, 1)),
                                                 make_int(I64, 0))}),
                          make_load(F64, 1, {at})),
              make_load(F64, 1,
                        {make_binary(BinaryOp::Min, make_binary(BinaryOp::Add, at, make_int(I64, 1)),
                                     make_binary(BinaryOp::Sub, make_extent(1, 0), make_int(I64, 1)))})))});
  auto first_line = [&](const std::string& name) {
    const std::string text = read_all((dumps.path() / (name + ".llvm")).string());
    return text.substr(0, text.find('\n'));
  };
  {
    canopy::testing::ScopedSetting simd("CANOPY_SIMD", nullptr), width("CANOPY_SIMD_WIDTH", "8");
    CpuCompiler compiler(CpuCompiler::Options{cache.str()});
    compiler.compile(all_pairs("simd.pairs"));
    compiler.compile(row_sums);
    compiler.compile(picked_rows);
    compiler.compile(scaled);
    compiler.compile(exponential);
    compiler.compile(picked("simd.picked_once", 0));
    compiler.compile(picked("simd.picked_squared", 12));
    compiler.compile(task);
    compiler.compile(transposing("simd.transpose_store", true));
    compiler.compile(transposing("simd.transpose_load", false));
    compiler.compile(clamped);
    const std::string lanes = "; canopy: SIMD across points: 8 lanes of dimension 0 (CANOPY_SIMD_WIDTH)";
    CHECK(first_line("simd.transpose_store").rfind("; canopy: SIMD across points: 8 lanes of dimension 1", 0) == 0);
    CHECK(first_line("simd.transpose_load").rfind("; canopy: scalar point loop: ", 0) == 0);
    CHECK(first_line("simd.clamped").rfind(lanes, 0) == 0);
    CHECK(first_line("simd.transpose_load").find("gathers or scatters in a point beside") != std::string::npos);
    CHECK(first_line("simd.pairs") == lanes + "; LLVM pipeline: O2 without vectorizers");
    CHECK(first_line("simd.row_sums") == lanes + "; LLVM pipeline: O2 without vectorizers");
    CHECK(first_line("simd.scaled") == lanes + "; LLVM pipeline: light");
    CHECK(first_line("simd.exp") == lanes + "; LLVM pipeline: light");
    const std::string exp_ir = read_all((dumps.path() / "simd.exp.llvm").string());
    CHECK(exp_ir.find("define internal") == std::string::npos);  // the vector exp was inlined
    CHECK(exp_ir.find("x double>") != std::string::npos);
    CHECK(read_all((dumps.path() / "simd.row_sums.llvm").string()).find("m.rows") != std::string::npos);
    CHECK(first_line("simd.picked_rows").find("; canopy: scalar point loop: ") == 0);
    CHECK(first_line("simd.picked_rows").find("; LLVM pipeline: O3") != std::string::npos);
    CHECK(first_line("simd.picked_rows").find("gathers or scatters in the innermost loop") != std::string::npos);
    CHECK(
        first_line("simd.picked_once").find("; canopy: scalar point loop: 2 gathers or scatters in a point beside ") ==
        0);
    CHECK(first_line("simd.picked_squared") == lanes + "; LLVM pipeline: light");
    CHECK(first_line("simd.task") ==
          "; canopy: scalar point loop: the kernel does not read index(0), so every lane would do the same work; "
          "LLVM pipeline: O3");
    const std::string pairs_ir = read_all((dumps.path() / "simd.pairs.llvm").string());
    CHECK(pairs_ir.find("x double>") != std::string::npos);
    // And beside the IR dump.
    CHECK(read_all((dumps.path() / "simd.picked_rows.cpu.ir").string())
              .rfind("// simd.picked_rows on the CPU: scalar point loop: ", 0) == 0);
  }
  {
    canopy::testing::ScopedSetting simd("CANOPY_SIMD", "off");
    CpuCompiler compiler(CpuCompiler::Options{cache.str()});
    compiler.compile(all_pairs("simd.pairs_off"));
    CHECK(first_line("simd.pairs_off") == "; canopy: scalar point loop: CANOPY_SIMD=off; LLVM pipeline: O3");
  }
}

TEST_CASE(
    "the loop over whole vectors of points has a trip count LLVM knows: a kernel that does nothing keeps no loop") {
  // Its exit test compares the next counter with the end of the whole
  // vectors, which it meets exactly; a test with an overflow guard beside it
  // left LLVM a loop it could neither count nor delete.
  TempDir cache, dumps;
  std::optional<canopy::testing::ScopedSetting> dump(std::in_place, "CANOPY_DUMP", "llvm"),
      dump_dir(std::in_place, "CANOPY_DUMP_DIR", dumps.str().c_str()), simd(std::in_place, "CANOPY_SIMD", "on");
  Kernel empty = make_kernel("nothing", {Param::array("a", F64, 1, Access::In)}, 1, {});
  auto i = make_index(0);
  Kernel copy = make_kernel("copy", {Param::array("a", F64, 1, Access::Out), Param::array("b", F64, 1, Access::In)}, 1,
                            {make_store(0, {i}, make_load(F64, 1, {i}))});
  CpuCompiler compiler(CpuCompiler::Options{cache.str()});
  auto empty_compiled = compiler.compile(empty);
  auto copy_compiled = compiler.compile(copy);
  dump_dir.reset();
  dump.reset();
  simd.reset();

  const std::string empty_ir = read_all((dumps.path() / "nothing.llvm").string());
  const std::string copy_ir = read_all((dumps.path() / "copy.llvm").string());
  CHECK(empty_ir.find("SIMD across points") != std::string::npos);
  CHECK(empty_ir.find("phi ") == std::string::npos);
  CHECK(empty_ir.find("br ") == std::string::npos);
  CHECK(copy_ir.find("phi ") != std::string::npos);  // the copy does loop

  // Both still run every point, at any offset and length.
  std::vector<double> a(300, -1.0), b(300);
  for (std::size_t k = 0; k < b.size(); ++k) b[k] = static_cast<double>(k) + 0.5;
  ArgBlock empty_args(empty);
  empty_args.array(0, b.data(), {300});
  empty_compiled.entry(3, 297, empty_args.data());
  ArgBlock copy_args(copy);
  copy_args.array(0, a.data(), {300}).array(1, b.data(), {300});
  for (auto [begin, end] : {std::pair{0, 0}, {3, 5}, {5, 6}, {6, 300}, {64, 128}})
    copy_compiled.entry(begin, end, copy_args.data());
  for (std::size_t k = 0; k < a.size(); ++k) CHECK(a[k] == (k >= 3 ? b[k] : -1.0));
}

TEST_CASE("the linker's folder (TMPDIR) and search path (PATH) come from the settings' snapshot, not the environment") {
  // The process-wide compiler links kernels on a thread of its own while the
  // program's threads may change the environment, so it reads neither
  // variable itself (getenv beside setenv can crash).
  Kernel kernel = scaled_kernel("link_snapshot");
  const char* const nowhere = "/nonexistent/canopy-link-test";
  TempDir first, second, third;  // made before TMPDIR points nowhere
  {
    // In the snapshot: no folder to link in, so the entry is the object file.
    canopy::testing::ScopedSetting tmp("TMPDIR", nowhere);
    CpuCompiler compiler(CpuCompiler::Options{first.str()});
    const auto compiled = compiler.compile(kernel);
    CHECK(runs_correctly(kernel, compiled.entry));
    CHECK_FALSE(std::filesystem::exists(compiler.disk_cache()->loadable_path_of(compiled.key)));
    CHECK(std::filesystem::exists(compiler.disk_cache()->path_of(compiled.key)));
  }
  {
    // Only in the environment, the snapshot not read again: linked as before.
    const char* before = std::getenv("TMPDIR");
    const std::optional<std::string> saved = before ? std::optional<std::string>(before) : std::nullopt;
    ::setenv("TMPDIR", nowhere, 1);
    CpuCompiler compiler(CpuCompiler::Options{second.str()});
    const auto compiled = compiler.compile(kernel);
    saved ? ::setenv("TMPDIR", saved->c_str(), 1) : ::unsetenv("TMPDIR");
    CHECK(std::filesystem::exists(compiler.disk_cache()->loadable_path_of(compiled.key)));
  }
  {
    // The same for PATH: no linker in the snapshot's search path.
    canopy::testing::ScopedSetting path("PATH", nowhere);
    CpuCompiler compiler(CpuCompiler::Options{third.str()});
    const auto compiled = compiler.compile(kernel);
    CHECK_FALSE(std::filesystem::exists(compiler.disk_cache()->loadable_path_of(compiled.key)));
  }
}

TEST_CASE("dumps into a folder that cannot hold them are said on stderr, once") {
  // Found by a new user: CANOPY_DUMP_DIR under /proc (or a file) lost every
  // dump without a word.
  TempDir dir;
  const std::string file = (std::filesystem::path(dir.str()) / "a-file").string();
  write_all(file, "not a folder");
  canopy::testing::ScopedSetting dump_kind("CANOPY_DUMP", "ir"), where("CANOPY_DUMP_DIR", file.c_str());
  StderrCapture captured;
  CHECK(canopy::dump("ir", "first", "text").empty());
  CHECK(canopy::dump("ir", "second", "text").empty());
  const std::string said = captured.finish();
  CHECK(said.find("canopy: cannot write the dump '" + file + "/first.ir' (CANOPY_DUMP_DIR='" + file +
                  "'); the dumps are not written") != std::string::npos);
  CHECK(said.find("second") == std::string::npos);
}
