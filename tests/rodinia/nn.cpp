// Rodinia's nn (examples/rodinia/nn) at a small size against a serial
// reference written here: on cpu0, on opencl0, and split over both (numa0
// with percentage:[50,50]). Canopy's CPU and OpenCL code computes each
// distance with the same float operations as the reference (no fused
// multiply-add: OpenCL code is generated with FP_CONTRACT OFF), so the
// records and distances must be equal exactly.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "hetero/hetero_support.hpp"
#include "rodinia/nn/nn.hpp"
#include "temporary_folder.hpp"

using namespace canopy;
using namespace canopy::hetero_tests;
namespace nn = rodinia::nn;

namespace {

// Every record's distance, then the k smallest by (distance, record).
std::vector<nn::Neighbour> reference(const nn::Records& records, int k, float latitude, float longitude,
                                     std::vector<float>* distances = nullptr) {
  std::vector<float> d(static_cast<std::size_t>(records.size()));
  for (std::size_t i = 0; i < d.size(); ++i) {
    const float dy = records.latitude[i] - latitude, dx = records.longitude[i] - longitude;
    d[i] = std::sqrt(dy * dy + dx * dx);
  }
  std::vector<std::int64_t> order(d.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::int64_t a, std::int64_t b) {
    return d[static_cast<std::size_t>(a)] < d[static_cast<std::size_t>(b)];
  });
  std::vector<nn::Neighbour> out;
  for (int i = 0; i < k && i < static_cast<int>(order.size()); ++i)
    out.push_back(
        {order[static_cast<std::size_t>(i)], d[static_cast<std::size_t>(order[static_cast<std::size_t>(i)])]});
  if (distances) *distances = d;
  return out;
}

void check_same(const std::vector<nn::Neighbour>& got, const std::vector<nn::Neighbour>& want) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    CAPTURE(i);
    CHECK(got[i].record == want[i].record);
    CHECK(got[i].distance == want[i].distance);
  }
}

// Every distance of a search equals the reference's.
void check_distances(const std::vector<float>& got, const std::vector<float>& want) {
  REQUIRE(got.size() == want.size());
  std::size_t differ = 0;
  for (std::size_t i = 0; i < want.size(); ++i) differ += got[i] != want[i];
  CHECK(differ == 0);
}

// nearest_in_database over the files `list` names against the reference on
// `read`, the same files read whole by the line reader: every record
// searched, the same neighbours, each with its line.
void check_database_search(Runtime& rt, const std::string& list, const nn::Records& read, int k, float latitude,
                           float longitude, const std::string& location, const std::string& policy,
                           std::int64_t block) {
  std::int64_t records = 0;
  const auto found = nn::nearest_in_database(rt, list, k, latitude, longitude, records, location, policy, block);
  CHECK(records == read.size());
  std::vector<nn::Neighbour> got;
  for (const nn::Found& f : found) {
    got.push_back(f.neighbour);
    CHECK(f.line == read.line(f.neighbour.record));
  }
  check_same(got, reference(read, k, latitude, longitude, nullptr));
}

const nn::Records& records() {
  static const nn::Records generated = nn::generate(50001);
  return generated;
}

}  // namespace

TEST_CASE("rodinia nn: picking the nearest keeps ties in record order and handles k above the records") {
  const std::vector<float> d = {5, 1, 3, 1, 0.5f, 3, 9};
  const auto best = nn::pick_nearest(d.data(), 7, 4);
  REQUIRE(best.size() == 4);
  CHECK(best[0].record == 4);
  CHECK(best[1].record == 1);
  CHECK(best[2].record == 3);
  CHECK(best[3].record == 2);
  CHECK(nn::pick_nearest(d.data(), 7, 10).size() == 7);
  CHECK(nn::pick_nearest(d.data(), 7, 0).empty());
  // Runs of 64 records are skipped by a count: a nearer record late in a run is still found.
  std::vector<float> many(1000, 50.0f);
  many[700] = 1.0f;
  many[127] = 2.0f;
  const auto two = nn::pick_nearest(many.data(), 1000, 2);
  REQUIRE(two.size() == 2);
  CHECK(two[0].record == 700);
  CHECK(two[1].record == 127);
}

TEST_CASE("rodinia nn: on cpu0 the nearest records and every distance equal a serial reference") {
  Runtime rt;
  if (!has_leaves(rt.hierarchy(), {"cpu0"})) return;
  for (int k : {1, 5, 40}) {
    CAPTURE(k);
    std::vector<float> distances, want_distances;
    const auto want = reference(records(), k, 30.0f, 90.0f, &want_distances);
    check_same(nn::nearest(rt, records(), k, 30.0f, 90.0f, distances, "cpu0"), want);
    check_distances(distances, want_distances);
  }
}

TEST_CASE("rodinia nn: on opencl0 the nearest records equal a serial reference") {
  Runtime rt;
  if (!has_leaves(rt.hierarchy(), {"opencl0"})) return;
  std::vector<float> distances, want_distances;
  const auto want = reference(records(), 10, 45.5f, 12.25f, &want_distances);
  check_same(nn::nearest(rt, records(), 10, 45.5f, 12.25f, distances, "opencl0"), want);
  check_distances(distances, want_distances);
}

TEST_CASE(
    "rodinia nn: split over cpu0 and opencl0 (numa0, percentage:[50,50]) the nearest records equal a serial "
    "reference") {
  Runtime rt;
  const Hierarchy discovered = rt.hierarchy();
  if (!has_leaves(discovered, {"cpu0", "opencl0"})) return;
  use_leaves(rt, discovered, {"cpu0", "opencl0"});
  std::vector<float> distances, want_distances;
  const auto want = reference(records(), 10, 60.0f, 3.0f, &want_distances);
  check_same(nn::nearest(rt, records(), 10, 60.0f, 3.0f, distances, "numa0", "percentage:[50,50]"), want);
  check_distances(distances, want_distances);
  CHECK(joined(pieces_of(last_region(rt))) == "cpu0[0,25001) opencl0[25001,50001)");
}

TEST_CASE("rodinia nn: a database written and read back gives the same locations") {
  const std::string list = "rodinia-nn-test-list.txt";
  const nn::Records generated = nn::generate(1000, 3);
  nn::write_database(list, generated, 3);
  const nn::Records read = nn::read_database(list);
  CHECK(read.latitude == generated.latitude);
  CHECK(read.longitude == generated.longitude);
  CHECK(read.text.size() == 1000 * nn::kRecordChars);
  CHECK(read.line(999).size() == nn::kRecordChars);
  CHECK(std::stof(read.line(5).substr(28, 5)) == generated.latitude[5]);
  for (int f = 0; f < 3; ++f) std::remove((list + "_" + std::to_string(f) + ".db").c_str());
  std::remove(list.c_str());
}

TEST_CASE("rodinia nn: the files searched block by block as they are read equal a serial reference") {
  const std::string list = "rodinia-nn-blocks-list.txt";
  nn::write_database(list, nn::generate(5000, 11), 3);
  const nn::Records read = nn::read_database(list);  // the locations as the text rounds them
  Runtime rt;
  const Hierarchy discovered = rt.hierarchy();
  struct Placed {
    std::vector<std::string> leaves;
    const char* location;
    const char* policy;
  };
  for (const Placed& placed :
       {Placed{{"cpu0"}, "cpu0", "static"}, Placed{{"cpu0", "opencl0"}, "numa0", "percentage:[50,50]"}}) {
    if (!has_leaves(discovered, placed.leaves)) continue;
    use_leaves(rt, discovered, placed.leaves);
    // Blocks of 300 records: 17 of them, the last one of 200; k both below and above a block's size.
    for (int k : {1, 7, 400}) {
      CAPTURE(placed.location);
      CAPTURE(k);
      check_database_search(rt, list, read, k, 30.0f, 90.0f, placed.location, placed.policy, 300);
    }
  }
  for (int f = 0; f < 3; ++f) std::remove((list + "_" + std::to_string(f) + ".db").c_str());
  std::remove(list.c_str());
}

namespace {

// A record line of 48 characters with `latitude` and `longitude` (five
// characters each) in columns 28-37 and `tag` at its start.
std::string record_line(const std::string& latitude, const std::string& longitude, int tag) {
  std::string line = std::to_string(1900 + tag % 100) + " " + std::to_string(tag);
  line.resize(nn::kLatitudeColumn, ' ');
  line += latitude.substr(0, nn::kCoordinateChars) + longitude.substr(0, nn::kCoordinateChars);
  line.resize(nn::kRecordChars, ' ');
  return line;
}

void write_text(const std::string& path, const std::string& text) {
  std::FILE* file = std::fopen(path.c_str(), "wb");
  REQUIRE(file);
  REQUIRE(std::fwrite(text.data(), 1, text.size(), file) == text.size());
  REQUIRE(std::fclose(file) == 0);
}

// Every distance the parsing kernel gives for `lines` (each 48 characters,
// written as Rodinia's files hold them), at `location`.
std::vector<float> kernel_distances(Runtime& rt, const std::vector<std::string>& lines, float latitude, float longitude,
                                    const std::string& location) {
  const auto n = static_cast<std::int64_t>(lines.size());
  std::vector<std::int32_t> words(static_cast<std::size_t>((n * nn::kRecordBytes + 3) / 4));
  char* bytes = reinterpret_cast<char*>(words.data());
  for (std::int64_t r = 0; r < n; ++r) {
    std::memcpy(bytes + r * nn::kRecordBytes, lines[static_cast<std::size_t>(r)].data(), nn::kRecordChars);
    bytes[(r + 1) * nn::kRecordBytes - 1] = '\n';
  }
  std::vector<float> distances(static_cast<std::size_t>(n));
  auto text = rt.wrap(words.data(), static_cast<std::int64_t>(words.size()), read_only());
  auto out = rt.wrap(distances.data(), n);
  rt.region(nn::parse_distance_kernel()).over(n).at(location).launch(out, text, latitude, longitude);
  auto view = out.host_read();
  return std::vector<float>(view.data(), view.data() + n);
}

}  // namespace

TEST_CASE("rodinia nn: the parsing kernel reads every coordinate of the common form as the host's parser does") {
  // Integers, one to three decimals, signs, blanks before and after: 24,000
  // fields, each the latitude of one record and the longitude of another.
  std::vector<std::string> fields;
  char field[16];
  auto add = [&](const char* format, auto value) {
    std::snprintf(field, sizeof field, format, value);
    REQUIRE(std::strlen(field) == nn::kCoordinateChars);
    fields.push_back(field);
  };
  for (int v = 0; v < 100000; v += 37) {
    add("%5d", v);
    add("%-5d", v);
    add("%5.1f", v % 10000 / 10.0);
    add("%5.2f", v % 10000 / 100.0);
    add("%5.3f", v % 10000 / 1000.0);
    add("%5.1f", -(v % 1000) / 10.0);
    add("%-5.2f", -(v % 1000) / 100.0);
    add("%4.1f ", v % 1000 / 10.0);
    add("%5d", -(v % 10000));
  }
  std::vector<std::string> lines;
  for (std::size_t f = 0; f < fields.size(); ++f)
    lines.push_back(record_line(fields[f], fields[(f * 7 + 3) % fields.size()], static_cast<int>(f)));
  Runtime rt;
  for (const char* leaf : {"cpu0", "opencl0"}) {
    if (!has_leaves(rt.hierarchy(), {leaf})) continue;
    CAPTURE(leaf);
    const std::vector<float> got = kernel_distances(rt, lines, 31.5f, -12.25f, leaf);
    std::size_t differ = 0;
    for (std::size_t r = 0; r < lines.size(); ++r) {
      const char* line = lines[r].data();
      const float want = nn::distance_between(nn::parse_coordinate(line + nn::kLatitudeColumn),
                                              nn::parse_coordinate(line + nn::kLongitudeColumn), 31.5f, -12.25f);
      if (got[r] != want && differ++ < 5) FAIL_CHECK("'" << lines[r] << "': " << got[r] << " against " << want);
    }
    CHECK(differ == 0);
  }
}

TEST_CASE("rodinia nn: coordinates out of the common form are marked for the host, which parses them") {
  const std::vector<std::string> odd = {"+31.5", " 1e1 ", "  .5 ", "3 1.4", "abcde", "5.   ", "- 3.0",
                                        "--3.0", "3.0.1", "     ", "3.-14", " 12 x", "\t12.5"};
  std::vector<std::string> lines;
  for (std::size_t f = 0; f < odd.size(); ++f) {
    lines.push_back(record_line(odd[f], " 10.0", static_cast<int>(f)));
    lines.push_back(record_line(" 20.0", odd[f], static_cast<int>(f)));
  }
  Runtime rt;
  if (!has_leaves(rt.hierarchy(), {"cpu0"})) return;
  const std::vector<float> got = kernel_distances(rt, lines, 0.0f, 0.0f, "cpu0");
  for (std::size_t r = 0; r < lines.size(); ++r) {
    CAPTURE(lines[r]);
    CHECK(got[r] == -1.0f);
  }
  // The pick asks the host for those distances.
  std::vector<float> want(lines.size());
  for (std::size_t r = 0; r < lines.size(); ++r)
    want[r] = nn::distance_between(nn::parse_coordinate(lines[r].data() + nn::kLatitudeColumn),
                                   nn::parse_coordinate(lines[r].data() + nn::kLongitudeColumn), 0.0f, 0.0f);
  const auto n = static_cast<std::int64_t>(lines.size());
  const auto picked =
      nn::pick_nearest(got.data(), n, 5, [&](std::int64_t r) { return want[static_cast<std::size_t>(r)]; });
  check_same(picked, [&] {
    std::vector<nn::Neighbour> all;
    for (std::int64_t r = 0; r < n; ++r) all.push_back({r, want[static_cast<std::size_t>(r)]});
    std::stable_sort(all.begin(), all.end(),
                     [](const nn::Neighbour& a, const nn::Neighbour& b) { return a.distance < b.distance; });
    all.resize(5);
    return all;
  }());
}

TEST_CASE("rodinia nn: files out of Rodinia's layout are searched as the line reader reads them") {
  canopy::testing::TemporaryFolder folder("rodinia-nn-layout");
  rodinia::Random random(5);
  auto location = [&] {
    char field[16];
    std::snprintf(field, sizeof field, "%5.1f", static_cast<double>(random.below(1000)) / 10.0);
    return std::string(field);
  };
  std::vector<std::string> files(5);
  int tag = 0;
  for (int r = 0; r < 300; ++r) files[0] += record_line(location(), location(), tag++) + "\n";    // the layout
  for (int r = 0; r < 300; ++r) files[1] += record_line(location(), location(), tag++) + "\r\n";  // CRLF
  for (int r = 0; r < 300; ++r) {  // the layout, a short line, a blank line, odd fields
    std::string line = record_line(r % 50 == 7 ? "+12.5" : location(), location(), tag++);
    if (r == 150) line.resize(40);
    files[2] += line + (r == 200 ? "\n\n" : "\n");
  }
  for (int r = 0; r < 300; ++r) files[3] += record_line(location(), location(), tag++) + (r < 299 ? "\n" : "");
  for (int r = 0; r < 300; ++r)
    files[4] += record_line(location(), location(), tag++) + std::string(r == 250 ? 3 : 0, 'x') + "\n";
  std::string names;
  for (std::size_t f = 0; f < files.size(); ++f) {
    const std::string name = folder / ("part" + std::to_string(f) + ".db");
    write_text(name, files[f]);
    names += name + "\n";
  }
  const std::string list = folder / "list.txt";
  write_text(list, names);
  const nn::Records read = nn::read_database(list);  // the line reader: the reference's records
  REQUIRE(read.size() == 1500);
  Runtime rt;
  const Hierarchy discovered = rt.hierarchy();
  for (const char* leaf : {"cpu0", "opencl0"}) {
    if (!has_leaves(discovered, {leaf})) continue;
    for (std::int64_t block : {std::int64_t{7}, std::int64_t{128}, nn::kSearchBlock}) {
      for (int k : {1, 40, 1500}) {
        CAPTURE(leaf);
        CAPTURE(block);
        CAPTURE(k);
        check_database_search(rt, list, read, k, 40.0f, 60.0f, leaf, "static", block);
      }
    }
  }
}
