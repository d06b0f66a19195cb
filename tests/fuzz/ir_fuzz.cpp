// Fuzz target "ir": the IR's text parser (ir/parser.hpp) on any bytes.
//
// Properties checked on every input:
//  - parse() either returns a kernel or throws canopy::Error whose message
//    starts with the source name (no crash, hang, other exception or
//    sanitizer report);
//  - a parsed kernel verifies, prints to text that parses again, and that
//    kernel prints to the same text (the printer's round trip);
//  - the optimization pipeline accepts it (optimize() only throws for a pass
//    that breaks a kernel, which is a bug) and its result round-trips too;
//  - the access-footprint analysis never throws for it, and every interval
//    rows_touched() gives lies inside [0, extent).
#include <array>
#include <cstdint>
#include <string>

#include <canopy/ir/analysis/footprint.hpp>
#include <canopy/ir/error.hpp>
#include <canopy/ir/parser.hpp>
#include <canopy/ir/passes/optimize.hpp>
#include <canopy/ir/printer.hpp>
#include <canopy/ir/verifier.hpp>

#include "fuzz_support.hpp"

namespace {

using canopy::fuzz::check;
using namespace canopy::ir;

constexpr std::string_view kSource = "fuzz.ir";

// `printed` parses back to a kernel that prints the same.
void check_round_trip(const std::string& printed, std::string_view what) {
  Kernel again;
  try {
    again = parse(printed, "printed");
  } catch (const canopy::Error& error) {
    canopy::fuzz::fail(std::string(what) + " does not parse back", printed + "\nerror: " + error.what());
  }
  const std::string reprinted = print(again);
  check(reprinted == printed, std::string(what) + " prints differently after a round trip",
        "first:\n" + printed + "second:\n" + reprinted);
}

// rows_touched() stays inside the array for a few pieces of work and extents.
void check_rows_touched(const AccessFootprint& access) {
  if (!access.present) return;
  static constexpr std::array<std::array<std::int64_t, 3>, 6> kCases{{
      {0, 10, 10},  // the whole range of a small array
      {3, 7, 10},   // a piece in the middle
      {5, 5, 10},   // an empty piece
      {0, 1000, 7},  // more points than rows
      {INT64_MAX - 4, INT64_MAX, INT64_MAX},  // at the top of int64
      {0, 4, 0},    // an empty array
  }};
  for (int dim = 0; dim < static_cast<int>(access.dims.size()); ++dim) {
    for (const auto& [begin, end, extent] : kCases) {
      const Interval rows = rows_touched(access, dim, begin, end, extent);
      if (rows.empty()) continue;
      check(rows.begin >= 0 && rows.end <= extent, "rows_touched() left the array",
            describe(access) + " dim " + std::to_string(dim) + " piece [" + std::to_string(begin) + "," +
                std::to_string(end) + ") extent " + std::to_string(extent) + " gave [" +
                std::to_string(rows.begin) + "," + std::to_string(rows.end) + ")");
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Kernel kernel;
  try {
    kernel = parse(canopy::fuzz::text_of(data, size), kSource);
  } catch (const canopy::Error& error) {
    const std::string_view message = error.what();
    check(message.starts_with(kSource), "a parse error does not name the source", message);
    return 0;
  }
  const std::string printed = print(kernel);
  try {
    verify(kernel);
  } catch (const canopy::Error& error) {
    canopy::fuzz::fail("a parsed kernel does not verify", printed + "\nerror: " + error.what());
  }
  check_round_trip(printed, "a parsed kernel");

  Kernel optimized;
  try {
    optimized = optimize(kernel);
  } catch (const canopy::Error& error) {
    canopy::fuzz::fail("optimize() refused a kernel that verifies", printed + "\nerror: " + error.what());
  }
  check_round_trip(print(optimized), "an optimized kernel");

  for (const Kernel* analysed : {&kernel, &optimized}) {
    const Footprint footprint = footprint_of(*analysed);
    describe(footprint, *analysed);
    for (const ArrayFootprint& array : footprint.arrays) {
      check_rows_touched(array.reads);
      check_rows_touched(array.writes);
    }
  }
  return 0;
}
