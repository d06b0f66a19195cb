// CANOPY_TRACE on a split: a 2-D stencil iterated over cpu0 + opencl0 (static,
// half each) is traced, and the trace read back must show what the runtime
// did: per region one piece on each leaf's track, their rows adjacent and
// covering the region; every copy on opencl0's copy track with its bytes and
// direction, the bytes each way adding up to the halo traffic worked out by
// hand (and to rt.stats()), the copies in arriving inside opencl0's pieces;
// and one compile per backend.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "hetero_support.hpp"
#include "runtime/trace_json.hpp"
#include "temporary_folder.hpp"

using namespace canopy;
using namespace canopy::hetero_tests;
using namespace canopy::trace_tests;

namespace {

constexpr std::int64_t kRows = 64, kCols = 32, kHalf = kRows / 2;
constexpr std::int64_t kRow = kCols * std::int64_t(sizeof(double));
constexpr int kIterations = 4;

double initial(std::int64_t i, std::int64_t j) { return std::sin(0.3 * double(i)) * double(j); }

// The same iterations on the host: the grid the split must leave.
std::vector<double> expected_grid() {
  std::vector<double> grid(kRows * kCols), scratch(kRows * kCols);
  for (std::int64_t i = 0; i < kRows; ++i)
    for (std::int64_t j = 0; j < kCols; ++j) grid[i * kCols + j] = initial(i, j);
  for (int k = 1; k <= kIterations; ++k) {
    const auto& in = k % 2 ? grid : scratch;
    auto& out = k % 2 ? scratch : grid;
    for (std::int64_t i = 0; i < kRows; ++i)
      for (std::int64_t j = 0; j < kCols; ++j)
        out[i * kCols + j] = i > 0 && i < kRows - 1 && j > 0 && j < kCols - 1
                                 ? 0.25 * (in[(i - 1) * kCols + j] + in[(i + 1) * kCols + j] + in[i * kCols + j - 1] +
                                           in[i * kCols + j + 1])
                                 : in[i * kCols + j];
  }
  return grid;
}

}  // namespace

TEST_CASE("hetero: the trace of a stencil split over cpu0 and opencl0" * doctest::test_suite("opencl")) {
  const testing::TemporaryFolder folder("trace-split");
  const std::string path = folder / "split.json";
  Moved total;
  {
    engine_tests::EnvironmentFor trace("CANOPY_TRACE", path.c_str());
    Runtime rt;
    const Hierarchy discovered = rt.hierarchy();
    if (!has_leaves(discovered, {"cpu0", accelerator(0)})) return;
    use_leaves(rt, discovered, {"cpu0", accelerator(0)});
    auto grid = rt.array<double, 2>(Shape(kRows, kCols), at("numa0") | named("grid"));
    auto scratch = rt.array<double, 2>(Shape(kRows, kCols), at("numa0") | named("scratch"));
    {
      auto g = grid.host();
      for (std::int64_t i = 0; i < kRows; ++i)
        for (std::int64_t j = 0; j < kCols; ++j) g(i, j) = initial(i, j);
    }
    for (int k = 1; k <= kIterations; ++k) {
      if (k % 2)
        rt.region(halo_stencil()).over(kRows, kCols).launch(scratch, grid);
      else
        rt.region(halo_stencil()).over(kRows, kCols).launch(grid, scratch);
    }
    rt.pause();
    auto result = grid.host_read();  // the last iteration wrote grid: opencl0's rows come back
    const std::vector<double> want = expected_grid();
    for (std::size_t e = 0; e < want.size(); ++e) REQUIRE(result.begin()[e] == doctest::Approx(want[e]));
    total = moved(rt);
  }
  // Iteration 1 copies grid rows [H-1,R) in; each later one a halo row each
  // way; reading grid back brings opencl0's rows [H,R) home.
  const std::int64_t to_device = (kRows - kHalf + 1) * kRow + (kIterations - 1) * kRow;
  const std::int64_t to_host = (kIterations - 1) * kRow + (kRows - kHalf) * kRow;
  CHECK(total.host_to_device == to_device);
  CHECK(total.device_to_host == to_host);

  const Trace trace = read_trace(path);
  const std::string device = accelerator_backend() + ":0";
  for (const std::string& track :
       {std::string("host thread 1"), std::string("cpu0"), accelerator(0), "copies " + device})
    CHECK_MESSAGE(std::count(trace.tracks.begin(), trace.tracks.end(), track) == 1, "track " << track);

  // Per region: one piece on cpu0 and one on opencl0, adjacent, covering the rows.
  std::map<int, std::vector<TraceEvent>> regions;
  for (const auto& piece : trace.of("piece")) regions[int(piece.number("region"))].push_back(piece);
  REQUIRE(regions.size() == std::size_t(kIterations));
  std::vector<TraceEvent> opencl_pieces;
  for (auto& [id, pieces] : regions) {
    INFO("region " << id);
    REQUIRE(pieces.size() == 2);
    std::sort(pieces.begin(), pieces.end(),
              [](const TraceEvent& a, const TraceEvent& b) { return a.number("begin") < b.number("begin"); });
    CHECK(pieces[0].track == "cpu0");
    CHECK(pieces[1].track == accelerator(0));
    CHECK(pieces[0].number("begin") == 0);
    CHECK(pieces[0].number("end") == pieces[1].number("begin"));
    CHECK(pieces[1].number("end") == double(kRows));
    CHECK(pieces[0].number("end") == double(kHalf));
    for (const auto& piece : pieces) {
      CHECK(piece.name == "halo_stencil");
      CHECK(piece.text("policy") == "static");
      CHECK(piece.number("points") == (piece.number("end") - piece.number("begin")) * double(kCols));
    }
    opencl_pieces.push_back(pieces[1]);
  }

  // Every copy: opencl0's track, bytes, a direction; the sums are the traffic.
  std::int64_t traced_to_device = 0, traced_to_host = 0;
  for (const auto& copy : trace.of("copy")) {
    if (copy.phase == "C") continue;                      // the running totals
    CHECK(copy.track.rfind("copies " + device, 0) == 0);  // "copies opencl:0 (2)" when two copies overlap
    CHECK(copy.text("device") == device);
    const auto bytes = std::int64_t(copy.number("bytes"));
    CHECK(bytes > 0);
    CHECK(bytes % kRow == 0);
    const std::string direction = copy.text("direction");
    if (direction == "host->device") {
      traced_to_device += bytes;
      // opencl0's worker copies its data in at the start of its piece.
      const bool inside = std::any_of(opencl_pieces.begin(), opencl_pieces.end(), [&](const TraceEvent& piece) {
        return copy.ts >= piece.ts - 0.001 && copy.ts + copy.dur <= piece.ts + piece.dur + 0.002;
      });
      CHECK_MESSAGE(inside, "a copy in at " << copy.ts << " lies in no piece of opencl0");
    } else {
      CHECK(direction == "device->host");
      traced_to_host += bytes;
    }
  }
  CHECK(traced_to_device == to_device);
  CHECK(traced_to_host == to_host);
  // The counter's last values are the same totals.
  const auto copies = trace.of("copy");
  const auto last_counter = std::find_if(copies.rbegin(), copies.rend(), [](const auto& e) { return e.phase == "C"; });
  REQUIRE(last_counter != copies.rend());
  CHECK(last_counter->number("host->device") == double(to_device));
  CHECK(last_counter->number("device->host") == double(to_host));

  // One compile of the stencil per backend.
  std::map<std::string, int> compiles;
  for (const auto& compile : trace.of("compile")) {
    CHECK(compile.text("kernel") == "halo_stencil");
    const std::string cache = compile.text("cache");
    CHECK((cache == "hit" || cache == "miss" || cache == "memory"));
    compiles[compile.text("backend") + " " + compile.text("device")] += 1;
  }
  CHECK(compiles == std::map<std::string, int>{{"cpu cpu", 1}, {accelerator_backend() + " " + device, 1}});
}
