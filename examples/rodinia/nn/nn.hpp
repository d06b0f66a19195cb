// Rodinia's nn (nearest neighbours) in Canopy: the distance from a target
// latitude/longitude to every record's location, computed by one region over
// all records, then the k nearest picked on the host in one pass (Rodinia's
// OpenMP version keeps the k best and replaces the farthest of them). Shared
// by the nn program and canopy-bench.
//
// Records are lines of text in the files a file list names (Rodinia's
// hurricane data): 48 characters each, the latitude in columns 28-32 and the
// longitude in columns 33-37. Searching the files, the program reads them a
// block at a time and hands each block's text, as read, to a region that
// parses every record's location and measures its distance (as Rodinia's
// OpenMP nn parses with atof inside its parallel loop), while the host reads
// the next block.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <canopy/canopy.hpp>

#include "../common/rodinia.hpp"
#include "record_format.hpp"

namespace rodinia::nn {

/// Every record's location (structure of arrays: the region reads both
/// contiguously) and, when read from files, its text.
struct Records {
  Vector<float> latitude, longitude;
  std::string text;  ///< kRecordChars per record, back to back (empty for generated locations)

  std::int64_t size() const { return static_cast<std::int64_t>(latitude.size()); }
  /// No records, the memory kept for the next ones.
  void clear() {
    latitude.clear();
    longitude.clear();
    text.clear();
  }
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

/// Records a search reads and searches at a time (3.2 MB of text): small
/// enough that the block just read is still in the caches when it is searched.
inline constexpr std::int64_t kSearchBlock = std::int64_t{1} << 16;

namespace detail {

using File = std::unique_ptr<std::FILE, int (*)(std::FILE*)>;

/// Calls `visit(file, path)` on every database file that `list` names, in
/// order (one name per line; a name that does not open as given is looked
/// for beside the list). Throws std::runtime_error for a file that does not open.
template <class Visit>
void for_each_database_file(const std::string& list, Visit&& visit) {
  File names(std::fopen(list.c_str(), "r"), std::fclose);
  if (!names) throw std::runtime_error("cannot open the file list '" + list + "'");
  const auto slash = list.find_last_of('/');
  const std::string beside = slash == std::string::npos ? "" : list.substr(0, slash + 1);
  char name[4096];
  while (std::fscanf(names.get(), "%4095s", name) == 1) {
    std::string path = name;
    File file(std::fopen(name, "r"), std::fclose);
    if (!file && !beside.empty()) file.reset(std::fopen((path = beside + name).c_str(), "r"));
    if (!file) throw std::runtime_error("cannot open the database '" + std::string(name) + "' named in '" + list + "'");
    visit(file.get(), path);
  }
}

/// Hands `records`, the first of them record `first` of the database, to
/// `visit(records, first)` and empties them for the next; nothing when empty.
template <class Visit>
void hand_over(Records& records, std::int64_t& first, Visit& visit) {
  if (records.size() == 0) return;
  visit(static_cast<const Records&>(records), first);
  first += records.size();
  records.clear();
}

/// Reads `file`'s lines from where it stands (`number` lines of it read
/// before) into `records`, calling `hand_over()` whenever `block` are held.
/// Throws std::runtime_error naming the file and line of a record too short
/// to hold a location.
template <class HandOver>
void read_lines(std::FILE* file, const std::string& path, std::int64_t number, std::int64_t block, Records& records,
                HandOver&& hand_over) {
  char line[512];
  while (std::fgets(line, sizeof line, file)) {
    ++number;
    std::size_t length = std::strlen(line);
    while (length > 0 && (line[length - 1] == '\n' || line[length - 1] == '\r')) --length;
    if (length == 0) continue;
    if (length < kLongitudeColumn + kCoordinateChars)
      throw std::runtime_error(path + ":" + std::to_string(number) + ": a record of " + std::to_string(length) +
                               " characters; expected " + std::to_string(kRecordChars) +
                               " with the location in columns 28-37");
    for (std::size_t c = length; c < kRecordChars; ++c) line[c] = ' ';
    records.latitude.push_back(parse_coordinate(line + kLatitudeColumn));
    records.longitude.push_back(parse_coordinate(line + kLongitudeColumn));
    records.text.append(line, kRecordChars);
    if (records.size() == block) hand_over();
  }
  if (std::ferror(file)) throw std::runtime_error("cannot read '" + path + "'");
}

/// The zero bytes of `v`, exactly: the high bit of each byte that is zero.
constexpr std::uint64_t zero_bytes(std::uint64_t v) {
  constexpr std::uint64_t kLow7 = 0x7f7f7f7f7f7f7f7f;
  return ~(((v & kLow7) + kLow7) | v | kLow7);
}

/// How many of `bytes[0..size)` end or cut a line for the line reader: a
/// newline, a carriage return or a NUL. Eight bytes at a time, each byte's
/// count in its own byte of a word.
inline std::int64_t line_cuts(const char* bytes, std::int64_t size) {
  constexpr std::uint64_t kEvery = 0x0101010101010101;
  std::int64_t cuts = 0, at = 0;
  while (at + 8 <= size) {
    // At most 31 words before the byte counts are added up: 8 * 31 fits a byte.
    const std::int64_t end = std::min(size - 7, at + 31 * 8);
    std::uint64_t counts = 0;
    for (; at < end; at += 8) {
      std::uint64_t word;
      std::memcpy(&word, bytes + at, 8);
      counts += (zero_bytes(word ^ (kEvery * '\n')) | zero_bytes(word ^ (kEvery * '\r')) | zero_bytes(word)) >> 7;
    }
    cuts += static_cast<std::int64_t>((counts * kEvery) >> 56);
  }
  for (; at < size; ++at) cuts += bytes[at] == '\n' || bytes[at] == '\r' || bytes[at] == 0;
  return cuts;
}

/// How many of the `count` records at `bytes` lie in Rodinia's layout from
/// the first on: 48 characters, none of them a newline, carriage return or
/// NUL (which the line reader would cut or strip), then a newline.
inline std::int64_t records_in_layout(const char* bytes, std::int64_t count) {
  // First the common case, at memory speed: the bytes that end or cut a
  // line are as many as the records, and every record ends with a newline.
  std::int64_t ends = 0;
  for (std::int64_t r = 0; r < count; ++r) ends += bytes[(r + 1) * kRecordBytes - 1] == '\n';
  if (ends == count && line_cuts(bytes, count * static_cast<std::int64_t>(kRecordBytes)) == count) return count;
  // Else record by record, up to the first out of the layout.
  for (std::int64_t r = 0; r < count; ++r) {
    const char* record = bytes + r * kRecordBytes;
    if (record[kRecordChars] != '\n') return r;
    for (std::size_t c = 0; c < kRecordChars; ++c)
      if (record[c] == '\n' || record[c] == '\r' || record[c] == 0) return r;
  }
  return count;
}

}  // namespace detail

/// Reads every database file that `list` names (one name per line; a name
/// that does not open as given is looked for beside the list), handing
/// `visit(records, first)` the records `block` at a time: `records` holds at
/// most `block` of them (their locations and lines), `first` is the number
/// of the first in the whole database. Throws std::runtime_error naming the
/// file and line at fault.
template <class Visit>
void read_database_blocks(const std::string& list, std::int64_t block, Visit&& visit) {
  Records records;
  std::int64_t first = 0;
  auto hand_over = [&] { detail::hand_over(records, first, visit); };
  detail::for_each_database_file(list, [&](std::FILE* file, const std::string& path) {
    detail::read_lines(file, path, 0, block, records, hand_over);
  });
  hand_over();
}

/// Records as they lie in a database file in Rodinia's layout, not parsed
/// yet: `count` records of kRecordBytes at `bytes` (each its 48 characters
/// and a newline), the first of them record `first` of the database. The
/// bytes sit in 32-bit words (`words`, the first byte in the low bits of a
/// word, as on every little-endian host), which is how a kernel reads them.
struct RawRecords {
  const std::int32_t* words = nullptr;
  std::int64_t count = 0, first = 0;

  const char* bytes() const { return reinterpret_cast<const char*>(words); }
  /// Words that hold every record's bytes.
  std::int64_t word_count() const { return (count * static_cast<std::int64_t>(kRecordBytes) + 3) / 4; }
  std::string line(std::int64_t record) const {
    return std::string(bytes() + record * static_cast<std::int64_t>(kRecordBytes), kRecordChars);
  }
  float latitude(std::int64_t record) const {
    return parse_coordinate(bytes() + record * static_cast<std::int64_t>(kRecordBytes) + kLatitudeColumn);
  }
  float longitude(std::int64_t record) const {
    return parse_coordinate(bytes() + record * static_cast<std::int64_t>(kRecordBytes) + kLongitudeColumn);
  }
};

/// The two buffers read_database_raw fills in turn, kept by its caller so
/// that the last block's bytes outlive the read.
struct RawBuffers {
  std::vector<std::int32_t> words[2];
};

/// Reads the database files that `list` names as read_database_blocks does,
/// `block` records at a time, but hands records in Rodinia's layout over
/// unparsed: `raw(records)` gets a RawRecords; from the first record of a
/// file that is not in the layout (another length, a carriage return, a last
/// line without its newline) to that file's end, `parsed(records, first)`
/// gets them parsed as read_database_blocks does. Records reach the two in
/// the database's order. The bytes handed to `raw` lie in `buffers`, filled
/// in turn: they stay as they are until the call to `raw` after the next
/// one returns, or for the last block until `buffers` go, so a consumer may
/// still read a block while the next one is read.
template <class Raw, class Parsed>
void read_database_raw(const std::string& list, std::int64_t block, RawBuffers& buffers, Raw&& raw, Parsed&& parsed) {
  static_assert(std::endian::native == std::endian::little, "RawRecords are read as little-endian words");
  block = std::max<std::int64_t>(block, 1);
  const std::int64_t block_bytes = block * static_cast<std::int64_t>(kRecordBytes);
  int turn = 0;
  std::int64_t first = 0;
  Records records;
  auto hand_over = [&] { detail::hand_over(records, first, parsed); };
  detail::for_each_database_file(list, [&](std::FILE* file, const std::string& path) {
    std::int64_t in_file = 0;  // records of this file handed over
    for (;;) {
      std::vector<std::int32_t>& buffer = buffers.words[turn];
      if (buffer.empty()) buffer.resize(static_cast<std::size_t>(block_bytes / 4 + 1));
      char* bytes = reinterpret_cast<char*>(buffer.data());
      const auto got = static_cast<std::int64_t>(std::fread(bytes, 1, static_cast<std::size_t>(block_bytes), file));
      if (std::ferror(file)) throw std::runtime_error("cannot read '" + path + "'");
      const std::int64_t whole = got / static_cast<std::int64_t>(kRecordBytes);
      const std::int64_t regular = detail::records_in_layout(bytes, whole);
      if (regular > 0) {
        raw(RawRecords{buffer.data(), regular, first});
        first += regular;
        in_file += regular;
        turn ^= 1;
      }
      if (regular == whole && got == block_bytes) continue;
      if (regular == whole && got == whole * static_cast<std::int64_t>(kRecordBytes)) return;  // the end
      // From the first record out of the layout on, line by line.
      if (std::fseek(file, static_cast<long>(in_file * static_cast<std::int64_t>(kRecordBytes)), SEEK_SET) != 0)
        throw std::runtime_error("cannot go back in '" + path + "' to read its lines");
      detail::read_lines(file, path, in_file, block, records, hand_over);
      hand_over();
      return;
    }
  });
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
/// A distance below zero marks a record whose distance is not known yet:
/// `measure(record)` gives it (no distance is negative without a mark).
template <class Measure>
std::vector<Neighbour> pick_nearest(const float* distances, std::int64_t n, int k, Measure&& measure) {
  std::vector<Neighbour> best;
  if (k <= 0) return best;
  best.reserve(static_cast<std::size_t>(k) + 1);
  for (std::int64_t first = 0; first < n; first += kPickRun) {
    const std::int64_t last = std::min(n, first + kPickRun);
    if (static_cast<int>(best.size()) == k) {
      const float farthest = best.back().distance;
      if (count_nearer(distances, first, last, farthest) == 0) continue;
    }
    for (std::int64_t i = first; i < last; ++i) {
      float d = distances[i];
      if (d < 0) d = measure(i);
      if (static_cast<int>(best.size()) == k && !(d < best.back().distance)) continue;
      auto at = std::upper_bound(best.begin(), best.end(), d,
                                 [](float value, const Neighbour& b) { return value < b.distance; });
      best.insert(at, Neighbour{i, d});
      if (static_cast<int>(best.size()) > k) best.pop_back();
    }
  }
  return best;
}
/// pick_nearest of distances that are all known.
inline std::vector<Neighbour> pick_nearest(const float* distances, std::int64_t n, int k) {
  return pick_nearest(distances, n, k, [](std::int64_t) { return 0.0f; });
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

/// The distance from (latitude, longitude) to a record at (record_latitude,
/// record_longitude), in float as the kernels compute it.
inline float distance_between(float record_latitude, float record_longitude, float latitude, float longitude) {
  const float dy = record_latitude - latitude, dx = record_longitude - longitude;
  return std::sqrt(dy * dy + dx * dx);
}

/// The kernel that reads records as they lie in the files (RawRecords: point
/// i is the record at bytes [49 i, 49 i + 49) of `text`, in 32-bit words)
/// and writes each one's distance to the target. It parses the two
/// coordinates of the common form, blanks, an optional '-', digits, an
/// optional '.' followed by digits, blanks, to the float parse_coordinate
/// gives: the digits as an integer over a power of ten, divided in double
/// and rounded to float (a quotient of two floats rounded through double is
/// the float nearest to it, and with at most five digits both are exact).
/// A record with anything else in its coordinates gets -1 (pick_nearest asks
/// the host for its distance). The division needs double precision on the
/// device (an OpenCL device without cl_khr_fp64 refuses the kernel, saying so).
inline const canopy::Kernel<void(canopy::Out<float>, canopy::In<std::int32_t>, canopy::Val<float>, canopy::Val<float>)>&
parse_distance_kernel() {
  using namespace canopy;
  // The parser's states: before the number, after its '-', in its whole
  // digits, after its '.', in its fraction digits, in the blanks after it,
  // and out of the common form (for good).
  static constexpr std::int32_t kLead = 0, kSign = 1, kWhole = 2, kDot = 3, kFraction = 4, kTrail = 5, kOther = 6;
  // For each kind of character, the state after it from each state, 3 bits a state.
  auto table = [](std::initializer_list<std::int32_t> next) {
    std::int32_t packed = 0, shift = 0;
    for (std::int32_t state : next) packed |= state << shift, shift += 3;
    return packed;
  };
  static const std::int32_t on_blank = table({kLead, kOther, kTrail, kOther, kTrail, kTrail, kOther}),
                            on_minus = table({kSign, kOther, kOther, kOther, kOther, kOther, kOther}),
                            on_digit = table({kWhole, kWhole, kWhole, kFraction, kFraction, kOther, kOther}),
                            on_dot = table({kOther, kOther, kDot, kOther, kOther, kOther, kOther}),
                            on_other = table({kOther, kOther, kOther, kOther, kOther, kOther, kOther});
  static constexpr std::int32_t kComplete = (1 << kWhole) | (1 << kFraction) | (1 << kTrail);
  static const Kernel kernel(
      "nn_parse_distance",
      [](Out<float> distance, In<std::int32_t> text, Val<float> target_latitude, Val<float> target_longitude) {
        Idx i = index(0);
        // The ten bytes of the two coordinates lie in four words from `word`
        // on, from byte `offset` (0 to 3) of the first.
        Value<std::int64_t> first_byte = i * static_cast<std::int64_t>(kRecordBytes) + kLatitudeColumn;
        Value<std::int64_t> word = first_byte >> 2;
        Value<std::int32_t> offset = cast<std::int32_t>(first_byte & 3);
        const Value<std::int32_t> words[4] = {text[word], text[word + 1], text[word + 2], text[word + 3]};
        auto byte = [&](std::size_t column) {
          const auto c = static_cast<std::int32_t>(column - kLatitudeColumn);
          Value<std::int32_t> at = offset + c;  // 0 to 12: in word c / 4, or the next one
          Value<std::int32_t> in = select(at >= (c & ~3) + 4, words[c / 4 + 1], words[c / 4]);
          return (in >> ((at & 3) * 8)) & 255;
        };
        // A coordinate's value and whether it had the common form.
        auto coordinate = [&](std::size_t column) {
          Var<std::int32_t> state("state", kLead), digits("digits", 0), scale("scale", 1);
          Var<bool> negative("negative", false);
          for (std::size_t c = 0; c < kCoordinateChars; ++c) {
            Value<std::int32_t> ch = byte(column + c);
            Value<bool> digit = ch >= '0' && ch <= '9';
            Value<std::int32_t> next =
                select(digit, on_digit,
                       select(ch == ' ', on_blank,
                              select(ch == '.', on_dot, select(ch == '-', Value<std::int32_t>(on_minus), on_other))));
            state = (next >> (state * 3)) & 7;
            digits = select(digit, digits * 10 + (ch - '0'), digits);
            scale = select(state == kFraction, scale * 10, scale);
            negative = negative || state == kSign;
          }
          Value<float> value = cast<float>(cast<double>(digits) / cast<double>(scale));
          return std::pair{select(negative, -value, value), ((kComplete >> state) & 1) == 1};
        };
        auto [latitude, latitude_ok] = coordinate(kLatitudeColumn);
        auto [longitude, longitude_ok] = coordinate(kLongitudeColumn);
        Value<float> dy = latitude - target_latitude, dx = longitude - target_longitude;
        distance[i] = select(latitude_ok && longitude_ok, sqrt(dy * dy + dx * dx), -1.0f);
      },
      {"distance", "text", "target_latitude", "target_longitude"});
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

/// The k nearest records seen so far, nearest first (ties: the earlier
/// record first, as in pick_nearest), as blocks of records are searched in
/// the database's order.
class NearestSoFar {
 public:
  explicit NearestSoFar(int k) : k_(std::max(k, 0)) {}

  /// Merges a block's nearest (`found`, numbered within the block, whose
  /// first record is record `first` of the database); `line(record)` gives
  /// a record's line. `records` becomes first + `count`, the block's size.
  template <class Line>
  void merge(const std::vector<Neighbour>& found, std::int64_t first, std::int64_t count, Line&& line) {
    for (const Neighbour& n : found) best_.push_back(Found{Neighbour{first + n.record, n.distance}, line(n.record)});
    std::stable_sort(best_.begin(), best_.end(),
                     [](const Found& a, const Found& b) { return a.neighbour.distance < b.neighbour.distance; });
    if (best_.size() > static_cast<std::size_t>(k_)) best_.resize(static_cast<std::size_t>(k_));
    records_ = first + count;
  }
  const std::vector<Found>& best() const { return best_; }
  /// How many records the blocks merged so far hold.
  std::int64_t records() const { return records_; }

 private:
  int k_;
  std::vector<Found> best_;
  std::int64_t records_ = 0;
};

/// The k nearest records of the database files that `list` names, found a
/// block of `block` records at a time as the files are read:
/// `search(records)` gives a block's k nearest (numbered within the block),
/// which are merged with the k nearest so far. The process holds one block,
/// never the whole database, as Rodinia's nn, which reads and searches a few
/// records at a time. `records` is set to the number of records read.
template <class Search>
std::vector<Found> nearest_by_blocks(const std::string& list, int k, std::int64_t block, std::int64_t& records,
                                     Search&& search) {
  NearestSoFar best(k);
  read_database_blocks(list, block, [&](const Records& part, std::int64_t first) {
    best.merge(search(part), first, part.size(), [&](std::int64_t r) { return part.line(r); });
  });
  records = best.records();
  return best.best();
}

/// The k nearest records of the database files that `list` names to
/// (latitude, longitude), searched on `rt` a block of `block` records at a
/// time as the files are read (read_database_raw): a block in Rodinia's
/// layout is parsed and measured by one region (parse_distance_kernel)
/// while the host reads the next block and picks the nearest of the one
/// before; any other is parsed on the host and searched by nearest().
/// `records` is set to the number of records read.
inline std::vector<Found> nearest_in_database(canopy::Runtime& rt, const std::string& list, int k, float latitude,
                                              float longitude, std::int64_t& records, const std::string& location = "",
                                              const std::string& policy = "static", std::int64_t block = kSearchBlock) {
  using namespace canopy;
  NearestSoFar best(k);
  // The memory the regions use, declared first so that it outlives them.
  RawBuffers buffers;
  std::vector<float> distances[2];  // for the raw blocks, in turn as the reader's buffers
  std::vector<float> parsed_distances;
  int turn = 0;
  // The raw block searched last, not picked yet.
  struct Pending {
    Array<std::int32_t> text;
    Array<float> distances;
    RawRecords records;
  };
  std::optional<Pending> pending;
  // When the reader throws, the last region still reads `buffers`: wait for it.
  struct WaitForPending {
    Runtime& rt;
    std::optional<Pending>& pending;
    ~WaitForPending() {
      if (!pending) return;
      try {
        rt.pause();
      } catch (...) {  // the reader's error is the one to report
      }
    }
  } wait_for_pending{rt, pending};
  auto pick_pending = [&] {
    if (!pending) return;
    const RawRecords& raw = pending->records;
    auto view = pending->distances.host_read();
    best.merge(pick_nearest(view.data(), raw.count, k,
                            [&](std::int64_t r) {
                              return distance_between(raw.latitude(r), raw.longitude(r), latitude, longitude);
                            }),
               raw.first, raw.count, [&](std::int64_t r) { return raw.line(r); });
    pending.reset();
  };
  read_database_raw(
      list, block, buffers,
      [&](const RawRecords& raw) {
        std::vector<float>& out = distances[turn];
        turn ^= 1;
        out.resize(static_cast<std::size_t>(raw.count));
        // The reader's buffer and ours, wrapped: on the CPU nothing is copied.
        Pending next{rt.wrap(const_cast<std::int32_t*>(raw.words), raw.word_count(), read_only() | named("records")),
                     rt.wrap(out.data(), raw.count, named("distances")), raw};
        auto region = rt.region(parse_distance_kernel()).over(raw.count).policy(policy);
        if (!location.empty()) region.at(location);
        region.launch(next.distances, next.text, latitude, longitude);
        pick_pending();  // the block before, while this one runs
        pending.emplace(std::move(next));
      },
      [&](const Records& part, std::int64_t first) {
        pick_pending();
        best.merge(nearest(rt, part, k, latitude, longitude, parsed_distances, location, policy), first, part.size(),
                   [&](std::int64_t r) { return part.line(r); });
      });
  pick_pending();
  records = best.records();
  return best.best();
}

}  // namespace rodinia::nn
