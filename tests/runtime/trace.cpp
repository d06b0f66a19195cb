// CANOPY_TRACE on the CPU: a hello-style program's trace is read back and
// must show each region's piece on the leaf that ran it with the kernel, the
// rows and the policy the runtime reported, the kernel's run inside its piece,
// one CPU compile per kernel, the pause on the launching thread, and no copy
// (CPU leaves work in host memory in place). A runtime that made no region
// still writes valid JSON; a bad value is refused when the Runtime is made;
// under MPI the rank goes into the file name.
#include <doctest/doctest.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <canopy/runtime/internal/trace.hpp>

#include "engine_trees.hpp"
#include "temporary_folder.hpp"
#include "trace_json.hpp"

using namespace canopy;
using namespace canopy::engine_tests;
using namespace canopy::trace_tests;

namespace {

// Enough points that each region is queued on its leaf's worker.
constexpr std::int64_t kPoints = 100000;

}  // namespace

TEST_CASE("trace: a hello-style program on one CPU leaf") {
  const testing::TemporaryFolder folder("trace-hello");
  const std::string path = folder / "run.json";
  std::vector<RegionStats> regions;
  double dot = 0;
  {
    EnvironmentFor trace("CANOPY_TRACE", path.c_str());
    Runtime rt;
    rt.fuse(false);  // init.triad would compile in the background, traced or not by the end
    use_tree(rt, one_leaf_tree());
    auto a = rt.array<double>(kPoints), b = rt.array<double>(kPoints), c = rt.array<double>(kPoints);
    Kernel init("trace_init", [](Out<double> b, Out<double> c) {
      Idx i = index(0);
      b[i] = 1.0;
      c[i] = cast<double>(i);
    });
    Kernel triad("trace_triad", [](Out<double> a, In<double> b, In<double> c, Val<double> s) {
      Idx i = index(0);
      a[i] = b[i] + s * c[i];
    });
    Kernel sum("trace_dot", [](In<double> a, In<double> b, Sum<double> total) {
      Idx i = index(0);
      total += a[i] * b[i];
    });
    rt.region(init).over(kPoints).launch(b, c);
    rt.region(triad).over(kPoints).launch(a, b, c, 0.5);
    rt.pause();
    dot = rt.region(sum).over(kPoints).reduce(a, b);
    regions = rt.stats().recent;
    CHECK_FALSE(std::filesystem::exists(path));  // written when the runtime goes
  }
  // b is all ones: the dot product is the sum of 1 + i/2.
  CHECK(dot == doctest::Approx(double(kPoints) + 0.25 * double(kPoints) * double(kPoints - 1)));
  const Trace trace = read_trace(path);
  CHECK(trace.process_name == "canopy");

  // One piece per region, on cpu0, as rt.stats() recorded it.
  REQUIRE(regions.size() == 3);
  const auto pieces = trace.of("piece");
  REQUIRE(pieces.size() == regions.size());
  std::map<std::uint64_t, TraceEvent> by_region;
  for (const auto& piece : pieces) by_region[static_cast<std::uint64_t>(piece.number("region"))] = piece;
  for (const RegionStats& region : regions) {
    INFO("region " << region.id << " of " << region.kernel);
    REQUIRE(by_region.count(region.id) == 1);
    const TraceEvent& piece = by_region[region.id];
    CHECK(piece.track == "cpu0");
    CHECK(piece.name == region.kernel);
    CHECK(piece.text("kernel") == region.kernel);
    CHECK(piece.text("policy") == "static");
    CHECK(piece.text("location") == region.location);
    REQUIRE(region.pieces.size() == 1);
    CHECK(piece.number("begin") == double(region.pieces[0].begin));
    CHECK(piece.number("end") == double(region.pieces[0].end));
    CHECK(piece.number("end") - piece.number("begin") == double(kPoints));
    CHECK(piece.number("points") == double(kPoints));
  }
  CHECK(by_region.begin()->second.name == "trace_init");

  // The kernel's own run lies inside its piece, on the same track.
  const auto launches = trace.of("launch");
  CHECK(launches.size() == pieces.size());
  for (const auto& launch : launches) {
    const TraceEvent& piece = by_region[static_cast<std::uint64_t>(launch.number("region"))];
    CHECK(launch.track == piece.track);
    CHECK(launch.ts >= piece.ts - 0.001);
    CHECK(launch.ts + launch.dur <= piece.ts + piece.dur + 0.002);
  }

  // One CPU compile per kernel, each saying what the disk cache did.
  std::set<std::string> compiled;
  for (const auto& compile : trace.of("compile")) {
    CHECK(compile.text("backend") == "cpu");
    const std::string cache = compile.text("cache");
    CHECK((cache == "hit" || cache == "miss" || cache == "memory"));
    CHECK(compile.track == "host thread 1");
    compiled.insert(compile.text("kernel"));
  }
  CHECK(compiled == std::set<std::string>{"trace_init", "trace_triad", "trace_dot"});
  CHECK(trace.of("compile").size() == 3);

  // The explicit pause, on the thread that made the runtime and waited.
  const auto pauses = trace.of("pause");
  REQUIRE(!pauses.empty());
  CHECK(pauses.front().track == "host thread 1");
  CHECK(pauses.front().text("location") == "all");
  // The pause ends after the first two pieces do.
  for (const auto& piece : pieces)
    if (piece.name != "trace_dot") CHECK(piece.ts + piece.dur <= pauses.front().ts + pauses.front().dur + 0.002);

  CHECK(trace.of("copy").empty());
  for (const auto& e : trace.events) {
    CHECK(e.ts >= 0);
    CHECK(e.dur >= 0);
  }
}

TEST_CASE("trace: a runtime that made no region writes valid JSON") {
  const testing::TemporaryFolder folder("trace-empty");
  const std::string path = folder / "nothing.json";
  {
    EnvironmentFor trace("CANOPY_TRACE", path.c_str());
    Runtime rt;
  }
  const Trace trace = read_trace(path);
  CHECK(trace.process_name == "canopy");
  CHECK(trace.of("piece").empty());
  CHECK(trace.of("copy").empty());
}

TEST_CASE("trace: CANOPY_TRACE unset traces nothing") {
  EnvironmentFor trace("CANOPY_TRACE", nullptr);
  Runtime rt;
  CHECK_FALSE(runtime::trace::trace_path_from_settings().has_value());
  CHECK_FALSE(runtime::trace::on());
}

TEST_CASE("trace: a bad CANOPY_TRACE is an error naming it when the runtime is made") {
  const testing::TemporaryFolder temporary("trace-bad");
  const std::string folder = temporary.path().string();
  for (const std::string& value : {std::string(), folder, folder + "/", folder + "/missing/run.json"}) {
    INFO("CANOPY_TRACE='" << value << "'");
    EnvironmentFor trace("CANOPY_TRACE", value.c_str());
    const std::string message = error_of([] { Runtime rt; });
    CHECK(message.find("CANOPY_TRACE='" + value + "'") != std::string::npos);
    CHECK(message.find("path of a JSON file") != std::string::npos);
    CHECK_FALSE(runtime::trace::on());
  }
  EnvironmentFor trace("CANOPY_TRACE", "");
  CHECK(error_of([] { Runtime rt; }).find("is empty") != std::string::npos);
}

TEST_CASE("trace: CANOPY_TRACE naming a device or a pipe is refused, and the device is left as it was") {
  // Found by a new user: as root, CANOPY_TRACE=/dev/null replaced the
  // system's /dev/null with the trace (a rename over the path at exit).
  const testing::TemporaryFolder temporary("trace-special");
  const std::string pipe = (temporary.path() / "pipe").string();
  REQUIRE(::mkfifo(pipe.c_str(), 0600) == 0);
  for (const std::string& value : {std::string("/dev/null"), pipe}) {
    INFO("CANOPY_TRACE='" << value << "'");
    EnvironmentFor trace("CANOPY_TRACE", value.c_str());
    const std::string message = error_of([] {
      Runtime rt;
      rt.pause();
    });
    CHECK(message.find("names a device, pipe or socket, not a file") != std::string::npos);
    CHECK_FALSE(runtime::trace::on());
  }
  struct stat null_status {};
  REQUIRE(::stat("/dev/null", &null_status) == 0);
  CHECK(S_ISCHR(null_status.st_mode));
  CHECK(std::filesystem::is_fifo(pipe));
}

TEST_CASE("trace: each rank of an MPI job writes its own file") {
  using runtime::trace::path_for_rank;
  CHECK(path_for_rank("run.json", 3) == "run.3.json");
  CHECK(path_for_rank("out/run.json", 0) == "out/run.0.json");
  CHECK(path_for_rank("run", 12) == "run.12");
  CHECK(path_for_rank("run.json", -1) == "run.json");

  // mpirun's variable stands in when no MPI job told the rank.
  const testing::TemporaryFolder temporary("trace-rank");
  const std::string folder = temporary.path().string();
  {
    EnvironmentFor trace("CANOPY_TRACE", (folder + "/run.json").c_str());
    EnvironmentFor rank("OMPI_COMM_WORLD_RANK", "2");
    Runtime rt;
  }
  CHECK(read_trace(folder + "/run.2.json").process_name == "canopy rank 2");
  CHECK_FALSE(std::filesystem::exists(folder + "/run.json"));
  // The MPI job's word wins over the variable.
  runtime::trace::set_rank(5);
  {
    EnvironmentFor trace("CANOPY_TRACE", (folder + "/run.json").c_str());
    EnvironmentFor rank("OMPI_COMM_WORLD_RANK", "2");
    Runtime rt;
  }
  runtime::trace::set_rank(-1);
  CHECK(read_trace(folder + "/run.5.json").process_name == "canopy rank 5");
}

TEST_CASE("trace: slices that overlap on one leaf go to a second track of it; names are escaped") {
  // Perfetto shows only slices that nest on a track; a piece that runs again
  // on a leaf busy with its own (recovery) must not overlap it there.
  const testing::TemporaryFolder folder("trace-lanes");
  const std::string path = folder / "lanes.json";
  {
    runtime::trace::Session session(path);
    RegionStats region;
    region.id = 7;
    region.kernel = "k";
    region.policy = "a \"quoted\" back\\slash,\ttab\nline \x01";
    backends::Range range;
    range.dims = 1;
    range.end[0] = 10;
    const auto t0 = runtime::trace::Clock::now();
    const auto ms = [&](int n) { return t0 + std::chrono::milliseconds(n); };
    runtime::trace::piece("leafA", region, 0, range, ms(0), ms(0), 0.0, ms(10));
    runtime::trace::piece("leafA", region, 1, range, ms(5), ms(6), 0.002, ms(20));  // overlaps piece 0
    runtime::trace::piece("leafA", region, 2, range, ms(30), ms(30), 0.0, ms(40));  // after both
  }
  CHECK_FALSE(runtime::trace::on());
  const Trace trace = read_trace(path);
  std::map<int, std::string> track_of;
  for (const auto& piece : trace.of("piece")) track_of[int(piece.number("piece"))] = piece.track;
  CHECK(track_of == std::map<int, std::string>{{0, "leafA"}, {1, "leafA (2)"}, {2, "leafA"}});
  CHECK(trace.of("piece").front().text("policy") == "a \"quoted\" back\\slash,\ttab\nline \x01");
  // The kernel's run of piece 1 stays with its piece.
  const auto launches = trace.of("launch");
  REQUIRE(launches.size() == 1);
  CHECK(launches[0].track == "leafA (2)");
  CHECK(launches[0].dur == doctest::Approx(2000.0).epsilon(0.01));
}
