// Rodinia's nn (nearest neighbours) in Canopy: the distance from a target
// latitude/longitude to every record's location, computed by one region over
// all records, then the k nearest picked on the host in one pass (Rodinia's
// OpenMP version keeps the k best and replaces the farthest of them). Shared
// by the nn program and canopy-bench.
//
// Records are lines of text in the files a file list names (Rodinia's
// hurricane data): 48 characters each, the latitude in columns 28-32 and the
// longitude in columns 33-37.
#pragma once

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include <canopy/canopy.hpp>

#include "../common/rodinia.hpp"

namespace rodinia::nn {

/// Characters of a record, without its newline.
inline constexpr std::size_t kRecordChars = 48;
/// Where the latitude and the longitude start in a record; each is 5 characters.
inline constexpr std::size_t kLatitudeColumn = 28, kLongitudeColumn = 33, kCoordinateChars = 5;

/// Every record's location (structure of arrays: the region reads both
/// contiguously) and, when read from files, its text.
struct Records {
  Vector<float> latitude, longitude;
  std::string text;  ///< kRecordChars per record, back to back (empty for generated locations)

  std::int64_t size() const { return static_cast<std::int64_t>(latitude.size()); }
  /// The record's line as Rodinia prints it (or its location when there is no text).
  std::string line(std::int64_t record) const {
    if (text.size() >= static_cast<std::size_t>(record + 1) * kRecordChars)
      return text.substr(static_cast<std::size_t>(record) * kRecordChars, kRecordChars);
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, "record %lld at %.1f %.1f", static_cast<long long>(record),
                  double(latitude[static_cast<std::size_t>(record)]),
                  double(longitude[static_cast<std::size_t>(record)]));
    return buffer;
  }
};

/// One of the nearest records.
struct Neighbour {
  std::int64_t record = 0;
  float distance = 0;
};

/// `count` locations with one decimal, latitude in [7, 70) and longitude in
/// [0, 100) (fixed seed). Both fit five columns with a blank before them,
/// so the records also read with Rodinia's OpenMP parser (a number from
/// column 27 and one from column 32).
inline Records generate(std::int64_t count, std::uint64_t seed = 7) {
  Random random(seed);
  Records records;
  records.latitude.resize(static_cast<std::size_t>(count));
  records.longitude.resize(static_cast<std::size_t>(count));
  for (std::int64_t i = 0; i < count; ++i) {
    records.latitude[static_cast<std::size_t>(i)] = static_cast<float>(70 + random.below(630)) / 10.0f;
    records.longitude[static_cast<std::size_t>(i)] = static_cast<float>(random.below(1000)) / 10.0f;
  }
  return records;
}

/// The record line for location `i` of `records` (generated fields around it,
/// fixed by the seed): year month day hour number name latitude longitude
/// speed pressure.
inline std::string format_record(const Records& records, std::int64_t i, Random& random) {
  static const char* const names[] = {"ALBERTO", "BERYL", "CHRIS", "DEBBY", "ERNESTO", "FLORENCE", "GORDON",
                                      "HELENE",  "ISAAC", "JOYCE", "KIRK",  "LESLIE",  "MICHAEL",  "NADINE"};
  char line[kRecordChars + 8];
  std::snprintf(
      line, sizeof line, "%4d %2d %2d %2d %4d %-9s%5.1f%5.1f %4d %4d", static_cast<int>(1950 + random.below(60)),
      static_cast<int>(1 + random.below(12)), static_cast<int>(1 + random.below(28)),
      static_cast<int>(6 * random.below(4)), static_cast<int>(random.below(1000)), names[random.below(14)],
      double(records.latitude[static_cast<std::size_t>(i)]), double(records.longitude[static_cast<std::size_t>(i)]),
      static_cast<int>(10 + random.below(150)), static_cast<int>(900 + random.below(120)));
  return std::string(line, kRecordChars);
}

/// Writes `records` into `files` database files named "<list>_<n>.db" and
/// the file list `list` naming them (Rodinia's layout).
inline void write_database(const std::string& list, const Records& records, int files) {
  std::FILE* names = std::fopen(list.c_str(), "w");
  if (!names) throw std::runtime_error("cannot open '" + list + "' for writing");
  Random random(11);
  const std::int64_t per_file = (records.size() + files - 1) / std::max(files, 1);
  for (int f = 0; f < files; ++f) {
    const std::string name = list + "_" + std::to_string(f) + ".db";
    std::fprintf(names, "%s\n", name.c_str());
    std::FILE* file = std::fopen(name.c_str(), "w");
    if (!file) {
      std::fclose(names);
      throw std::runtime_error("cannot open '" + name + "' for writing");
    }
    const std::int64_t first = f * per_file, last = std::min(records.size(), first + per_file);
    for (std::int64_t i = first; i < last; ++i) std::fprintf(file, "%s\n", format_record(records, i, random).c_str());
    if (std::fclose(file) != 0) throw std::runtime_error("cannot write '" + name + "'");
  }
  if (std::fclose(names) != 0) throw std::runtime_error("cannot write '" + list + "'");
}

/// Reads every database file that `list` names (one name per line; a name
/// that does not open as given is looked for beside the list), handing
/// `visit(records, first)` the records `block` at a time: `records` holds at
/// most `block` of them (their locations and lines), `first` is the number
/// of the first in the whole database. Throws std::runtime_error naming the
/// file and line at fault.
template <class Visit>
void read_database_blocks(const std::string& list, std::int64_t block, Visit&& visit) {
  std::FILE* names = std::fopen(list.c_str(), "r");
  if (!names) throw std::runtime_error("cannot open the file list '" + list + "'");
  const auto slash = list.find_last_of('/');
  const std::string beside = slash == std::string::npos ? "" : list.substr(0, slash + 1);
  Records records;
  std::int64_t first = 0;
  auto hand_over = [&] {
    if (records.size() == 0) return;
    visit(static_cast<const Records&>(records), first);
    first += records.size();
    records.latitude.clear();
    records.longitude.clear();
    records.text.clear();
  };
  // A coordinate's five columns, parsed in place (std::from_chars, as strtof
  // would: leading blanks skipped, the longest number taken).
  auto coordinate = [](const char* field) {
    const char* at = field;
    const char* const end = field + kCoordinateChars;
    while (at < end && (*at == ' ' || *at == '+')) ++at;
    float value = 0;
    std::from_chars(at, end, value);
    return value;
  };
  char name[4096];
  while (std::fscanf(names, "%4095s", name) == 1) {
    std::FILE* file = std::fopen(name, "r");
    std::string path = name;
    if (!file && !beside.empty()) file = std::fopen((path = beside + name).c_str(), "r");
    if (!file) {
      std::fclose(names);
      throw std::runtime_error("cannot open the database '" + std::string(name) + "' named in '" + list + "'");
    }
    char line[512];
    std::int64_t number = 0;
    while (std::fgets(line, sizeof line, file)) {
      ++number;
      std::size_t length = std::strlen(line);
      while (length > 0 && (line[length - 1] == '\n' || line[length - 1] == '\r')) --length;
      if (length == 0) continue;
      if (length < kLongitudeColumn + kCoordinateChars) {
        std::fclose(file);
        std::fclose(names);
        throw std::runtime_error(path + ":" + std::to_string(number) + ": a record of " + std::to_string(length) +
                                 " characters; expected " + std::to_string(kRecordChars) +
                                 " with the location in columns 28-37");
      }
      for (std::size_t c = length; c < kRecordChars; ++c) line[c] = ' ';
      records.latitude.push_back(coordinate(line + kLatitudeColumn));
      records.longitude.push_back(coordinate(line + kLongitudeColumn));
      records.text.append(line, kRecordChars);
      if (records.size() == block) hand_over();
    }
    std::fclose(file);
  }
  std::fclose(names);
  hand_over();
}

/// Every record of the database files that `list` names, at once.
inline Records read_database(const std::string& list) {
  Records all;
  read_database_blocks(list, std::numeric_limits<std::int64_t>::max(),
                       [&](const Records& records, std::int64_t) { all = records; });
  return all;
}

/// The `k` smallest of `distances[0..n)`, nearest first (ties: the earlier
/// record first), in one pass: the k best so far are kept sorted and the
/// farthest of them is replaced by a nearer record. Once k are kept, a run
/// of 64 records is first only counted against the farthest (a loop the
/// compiler vectorizes), and looked at one by one only when one is nearer.
inline std::vector<Neighbour> pick_nearest(const float* distances, std::int64_t n, int k) {
  std::vector<Neighbour> best;
  if (k <= 0) return best;
  best.reserve(static_cast<std::size_t>(k) + 1);
  constexpr std::int64_t kRun = 64;
  for (std::int64_t first = 0; first < n; first += kRun) {
    const std::int64_t last = std::min(n, first + kRun);
    if (static_cast<int>(best.size()) == k) {
      const float farthest = best.back().distance;
      int nearer = 0;
      for (std::int64_t i = first; i < last; ++i) nearer += distances[i] < farthest;
      if (nearer == 0) continue;
    }
    for (std::int64_t i = first; i < last; ++i) {
      const float d = distances[i];
      if (static_cast<int>(best.size()) == k && !(d < best.back().distance)) continue;
      auto at = std::upper_bound(best.begin(), best.end(), d,
                                 [](float value, const Neighbour& b) { return value < b.distance; });
      best.insert(at, Neighbour{i, d});
      if (static_cast<int>(best.size()) > k) best.pop_back();
    }
  }
  return best;
}

/// The same search on the host alone, plainly (what --verify compares with):
/// every distance, then the k smallest by (distance, record).
inline std::vector<Neighbour> nearest_serially(const Records& records, int k, float latitude, float longitude) {
  std::vector<Neighbour> all(static_cast<std::size_t>(records.size()));
  for (std::int64_t i = 0; i < records.size(); ++i) {
    const float dy = records.latitude[static_cast<std::size_t>(i)] - latitude;
    const float dx = records.longitude[static_cast<std::size_t>(i)] - longitude;
    all[static_cast<std::size_t>(i)] = Neighbour{i, std::sqrt(dy * dy + dx * dx)};
  }
  const auto kept = std::min<std::size_t>(all.size(), static_cast<std::size_t>(std::max(k, 0)));
  std::partial_sort(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(kept), all.end(),
                    [](const Neighbour& a, const Neighbour& b) {
                      return a.distance < b.distance || (a.distance == b.distance && a.record < b.record);
                    });
  all.resize(kept);
  return all;
}

/// Empty when `a` and `b` list the same neighbours: distances equal to a
/// relative `tolerance` place by place, and every record of `a` listed in
/// `b` at its distance, unless it ties with the farthest one kept (which of
/// several equally far records makes the cut is not fixed); else what differs.
inline std::string compare(const std::vector<Neighbour>& a, const std::vector<Neighbour>& b, double tolerance = 1e-6) {
  if (a.size() != b.size()) return std::to_string(a.size()) + " and " + std::to_string(b.size()) + " neighbours";
  auto close = [&](double x, double y) { return std::fabs(x - y) <= tolerance * std::max(1.0, std::fabs(y)); };
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (!close(a[i].distance, b[i].distance))
      return "neighbour " + std::to_string(i) + ": record " + std::to_string(a[i].record) + " at " +
             std::to_string(a[i].distance) + " and record " + std::to_string(b[i].record) + " at " +
             std::to_string(b[i].distance);
    if (a[i].record == b[i].record || close(a[i].distance, b.back().distance)) continue;
    const bool listed = std::any_of(b.begin(), b.end(), [&](const Neighbour& n) {
      return n.record == a[i].record && close(n.distance, a[i].distance);
    });
    if (!listed)
      return "record " + std::to_string(a[i].record) + " at " + std::to_string(a[i].distance) +
             " is listed by one search only";
  }
  return "";
}

/// The distance kernel: every record's Euclidean distance to the target,
/// in float, as Rodinia computes it.
inline const canopy::Kernel<void(canopy::Out<float>, canopy::In<float>, canopy::In<float>, canopy::Val<float>,
                                 canopy::Val<float>)>&
distance_kernel() {
  using namespace canopy;
  static const Kernel kernel("nn_distance",
                             [](Out<float> distance, In<float> latitude, In<float> longitude,
                                Val<float> target_latitude, Val<float> target_longitude) {
                               Idx i = index(0);
                               Value<float> dy = latitude[i] - target_latitude, dx = longitude[i] - target_longitude;
                               distance[i] = sqrt(dy * dy + dx * dx);
                             },
                             {"distance", "latitude", "longitude", "target_latitude", "target_longitude"});
  return kernel;
}

/// The `k` records of `records` nearest to (latitude, longitude), nearest
/// first. The distances are computed on `rt` (at `location` with `policy`)
/// into `distances` (resized to the records; kept by the caller so that
/// repeated searches reuse its memory), then picked on the host.
inline std::vector<Neighbour> nearest(canopy::Runtime& rt, const Records& records, int k, float latitude,
                                      float longitude, std::vector<float>& distances, const std::string& location = "",
                                      const std::string& policy = "static") {
  using namespace canopy;
  const std::int64_t n = records.size();
  distances.resize(static_cast<std::size_t>(n));
  if (n == 0) return {};
  // The caller's memory, wrapped: on the CPU nothing is copied.
  auto lat = rt.wrap(const_cast<float*>(records.latitude.data()), n, read_only() | named("latitude"));
  auto lng = rt.wrap(const_cast<float*>(records.longitude.data()), n, read_only() | named("longitude"));
  auto out = rt.wrap(distances.data(), n, named("distances"));
  auto region = rt.region(distance_kernel()).over(n).policy(policy);
  if (!location.empty()) region.at(location);
  region.launch(out, lat, lng, latitude, longitude);
  auto view = out.host_read();
  return pick_nearest(view.data(), n, k);
}

/// One of the nearest records with its line.
struct Found {
  Neighbour neighbour;
  std::string line;
};

/// The k nearest records of the database files that `list` names, found a
/// block of `block` records at a time as the files are read:
/// `search(records)` gives a block's k nearest (numbered within the block),
/// which are merged with the k nearest so far (ties: the earlier record
/// first, as in pick_nearest). The process holds one block, never the whole
/// database, as Rodinia's nn, which reads and searches a few records at a
/// time. `records` is set to the number of records read.
template <class Search>
std::vector<Found> nearest_by_blocks(const std::string& list, int k, std::int64_t block, std::int64_t& records,
                                     Search&& search) {
  std::vector<Found> best;
  records = 0;
  read_database_blocks(list, block, [&](const Records& part, std::int64_t first) {
    for (const Neighbour& n : search(part))
      best.push_back(Found{Neighbour{first + n.record, n.distance}, part.line(n.record)});
    std::stable_sort(best.begin(), best.end(),
                     [](const Found& a, const Found& b) { return a.neighbour.distance < b.neighbour.distance; });
    if (best.size() > static_cast<std::size_t>(k)) best.resize(static_cast<std::size_t>(k));
    records = first + part.size();
  });
  return best;
}

/// nearest_by_blocks with each block searched by nearest() on `rt`.
inline std::vector<Found> nearest_in_database(canopy::Runtime& rt, const std::string& list, int k, float latitude,
                                              float longitude, std::int64_t& records, const std::string& location = "",
                                              const std::string& policy = "static",
                                              std::int64_t block = std::int64_t{1} << 18) {
  std::vector<float> distances;
  return nearest_by_blocks(list, k, block, records, [&](const Records& part) {
    return nearest(rt, part, k, latitude, longitude, distances, location, policy);
  });
}

}  // namespace rodinia::nn
