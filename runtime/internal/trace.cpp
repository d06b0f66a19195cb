// The trace recorder behind trace.hpp: events in memory under one mutex,
// tracks named as they first appear, and the JSON written at a Session's end.
#include "trace.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <unordered_map>
#include <vector>

#include <unistd.h>

#include <canopy/ir/error.hpp>
#include <canopy/ir/settings.hpp>

namespace canopy::runtime::trace {

std::atomic<bool> recording{false};

namespace {

// What a track holds, which also orders the tracks in a viewer: the threads
// that launched and paused first, then the leaves, then the copies.
enum class TrackKind { Thread = 0, Leaf = 1, Copies = 2 };

struct Track {
  std::string name;
  TrackKind kind;
};

// One event as the Trace Event Format has it: ph "X" (complete, with a
// duration) or "C" (counter); times in microseconds since the trace began.
struct Event {
  char phase;
  int track;
  const char* category;
  std::string name;
  double ts;
  double dur;
  std::string args;  ///< a JSON object
};

// Appends `text` to `out` as a JSON string, quotes included.
void append_string(std::string& out, std::string_view text) {
  out += '"';
  for (const char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char escaped[8];
          std::snprintf(escaped, sizeof escaped, "\\u%04x", static_cast<unsigned>(c));
          out += escaped;
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

// A JSON object written field by field into one string (an event's arguments
// are built while tracing, so as few allocations as it can).
class JsonObject {
 public:
  JsonObject() { text_.reserve(160); }
  JsonObject& string(const char* key, std::string_view value) {
    append_string(start(key), value);
    return *this;
  }
  JsonObject& integer(const char* key, std::int64_t value) {
    start(key) += std::to_string(value);
    return *this;
  }
  /// Microseconds, to the nanosecond.
  JsonObject& time(const char* key, double microseconds) {
    char digits[32];
    std::snprintf(digits, sizeof digits, "%.3f", microseconds);
    start(key) += digits;
    return *this;
  }
  /// `json`, already encoded.
  JsonObject& raw(const char* key, std::string_view json) {
    start(key) += json;
    return *this;
  }
  std::string done() { return std::move(text_) + "}"; }

 private:
  std::string& start(const char* key) {
    text_ += text_.size() > 1 ? ",\"" : "\"";
    text_ += key;
    text_ += "\":";
    return text_;
  }
  std::string text_ = "{";
};

// A metadata event of track `tid`: its `name` ("thread_name", ...) with one argument.
std::string metadata(const std::string& pid, int tid, const char* name, const std::string& args) {
  return JsonObject()
      .string("ph", "M")
      .raw("pid", pid)
      .integer("tid", tid)
      .string("name", name)
      .raw("args", args)
      .done();
}

// The process-wide recorder (trace.hpp says why there is one).
struct Recorder {
  /// Events are kept in memory until the file is written (a few hundred bytes
  /// each): past this many, later ones are dropped and counted.
  static constexpr std::size_t kMostEvents = 4'000'000;
  std::int64_t dropped = 0;
  std::mutex mutex;
  int sessions = 0;
  std::uint64_t generation = 0;  ///< counts recordings, so thread tracks of an earlier one are not reused
  Clock::time_point began;
  std::vector<Track> tracks;
  std::unordered_map<std::string, int> track_ids;
  std::vector<Event> events;
  int threads = 0;                          ///< host threads named so far
  std::int64_t to_device = 0, to_host = 0;  ///< bytes copied so far, for the counter track
  int rank = -1;                            ///< set_rank's, or -1
  /// Per leaf or device, its tracks and when the last slice on each ended (lane()).
  std::unordered_map<std::string, std::vector<std::pair<int, double>>> lanes;

  // The id of the track `name` (call with mutex held).
  int track(const std::string& name, TrackKind kind) {
    auto [it, added] = track_ids.emplace(name, static_cast<int>(tracks.size()));
    if (added) tracks.push_back({name, kind});
    return it->second;
  }

  // The track named `name` for a slice from `start` to `end` (call with
  // mutex held), or "<name> (2)", ... when a slice another thread recorded
  // there overlaps it: slices on one track must nest for a viewer to show
  // them. Two threads copy to one device at once, or a leaf runs a piece
  // while another leaf's failed piece runs again on it.
  int lane(const std::string& name, TrackKind kind, Clock::time_point start, Clock::time_point end) {
    auto& known = lanes[name];
    const double from = since_began(start);
    for (auto& [id, last_end] : known)
      if (from >= last_end) {
        last_end = since_began(end);
        return id;
      }
    const std::string suffix = known.empty() ? "" : " (" + std::to_string(known.size() + 1) + ")";
    known.emplace_back(track(name + suffix, kind), since_began(end));
    return known.back().first;
  }

  // The calling thread's own track (call with mutex held): "host thread N",
  // numbered in the order threads first record something.
  int thread_track() {
    thread_local std::uint64_t known_generation = 0;
    thread_local int known_track = -1;
    if (known_generation != generation) {
      known_generation = generation;
      known_track = track("host thread " + std::to_string(++threads), TrackKind::Thread);
    }
    return known_track;
  }

  double since_began(Clock::time_point t) const { return std::chrono::duration<double, std::micro>(t - began).count(); }

  void add(char phase, int track, const char* category, std::string name, Clock::time_point start,
           Clock::time_point end, std::string args) {
    if (events.size() >= kMostEvents) {
      ++dropped;
      return;
    }
    const double ts = since_began(start);
    events.push_back(
        {phase, track, category, std::move(name), ts, std::max(0.0, since_began(end) - ts), std::move(args)});
  }
};

Recorder& recorder() {
  static Recorder* the = new Recorder;  // never destroyed: a worker may record while the process exits
  return *the;
}

// The rank this process writes as: set_rank's, else mpirun's (settings'
// mpi_rank), else -1.
int rank_of_process(int told) {
  if (told >= 0) return told;
  const std::string& text = settings().mpi_rank;
  if (text.empty()) return -1;
  char* end = nullptr;
  const long rank = std::strtol(text.c_str(), &end, 10);
  return *end == '\0' && rank >= 0 ? static_cast<int>(rank) : -1;
}

}  // namespace

std::optional<std::string> trace_path_from_settings() {
  const std::optional<std::string>& setting = settings().trace;
  if (!setting) return std::nullopt;
  const std::string& path = *setting;
  auto refuse = [&](const std::string& why) {
    bad_setting("CANOPY_TRACE", path,
                "the path of a JSON file to write, in a folder that exists (e.g. run.json), or leave it unset to "
                "trace nothing (this value " +
                    why + ")");
  };
  if (path.empty()) refuse("is empty");
  std::error_code error;
  const std::filesystem::path file(path);
  if (path.back() == '/' || std::filesystem::is_directory(file, error)) refuse("is a directory");
  const std::filesystem::path folder = file.parent_path();
  if (!folder.empty() && !std::filesystem::is_directory(folder, error))
    refuse("is in the folder '" + folder.string() + "', which does not exist");
  // The trace is renamed over the path when the program ends: over a device
  // (/dev/null, which a root process had replaced by a JSON file), a pipe, a
  // socket or a file the process may not write, that would destroy it.
  const auto status = std::filesystem::symlink_status(file, error);
  if (std::filesystem::exists(status)) {
    if (!std::filesystem::is_regular_file(status))
      refuse(std::filesystem::is_symlink(status) ? "is a symbolic link, which the trace would replace"
                                                 : "names a device, pipe or socket, not a file");
    if (::access(path.c_str(), W_OK) != 0) refuse("is a file this process may not write");
  }
  return path;
}

void set_rank(int rank) {
  auto& r = recorder();
  std::lock_guard lock(r.mutex);
  r.rank = rank;
}

std::string path_for_rank(const std::string& path, int rank) {
  if (rank < 0) return path;
  const std::filesystem::path file(path);
  std::filesystem::path ranked = file;
  ranked.replace_filename(file.stem().string() + "." + std::to_string(rank) + file.extension().string());
  return ranked.string();
}

Session::Session(std::string path) : path_(std::move(path)) {
  auto& r = recorder();
  std::lock_guard lock(r.mutex);
  if (r.sessions++ == 0) {
    r.began = Clock::now();
    r.tracks.clear();
    r.track_ids.clear();
    r.lanes.clear();
    r.events.clear();
    r.threads = 0;
    r.dropped = 0;
    r.to_device = r.to_host = 0;
    ++r.generation;
    r.thread_track();  // the thread that made the runtime is host thread 1
    recording.store(true, std::memory_order_relaxed);
  }
}

Session::~Session() {
  write();
  auto& r = recorder();
  std::lock_guard lock(r.mutex);
  if (--r.sessions == 0) {
    recording.store(false, std::memory_order_relaxed);
    r.events.clear();
    r.events.shrink_to_fit();
  }
}

std::string Session::write() const {
  auto& r = recorder();
  std::string text;
  std::string path;
  {
    std::lock_guard lock(r.mutex);
    const int rank = rank_of_process(r.rank);
    path = path_for_rank(path_, rank);
    const std::string pid = std::to_string(rank < 0 ? 0 : rank);
    text = "{\"traceEvents\":[\n";
    const std::string process = rank < 0 ? "canopy" : "canopy rank " + std::to_string(rank);
    text += metadata(pid, 0, "process_name", JsonObject().string("name", process).done());
    for (std::size_t t = 0; t < r.tracks.size(); ++t) {
      const int tid = static_cast<int>(t) + 1;
      const int order = static_cast<int>(r.tracks[t].kind) * 1000 + static_cast<int>(t);
      text += ",\n" + metadata(pid, tid, "thread_name", JsonObject().string("name", r.tracks[t].name).done());
      text += ",\n" + metadata(pid, tid, "thread_sort_index", JsonObject().integer("sort_index", order).done());
    }
    for (const Event& e : r.events) {
      JsonObject event;
      event.string("ph", std::string_view(&e.phase, 1))
          .raw("pid", pid)
          .integer("tid", e.phase == 'C' ? 0 : e.track + 1);
      event.string("cat", e.category).string("name", e.name).time("ts", e.ts);
      if (e.phase == 'X') event.time("dur", e.dur);
      text += ",\n" + event.raw("args", e.args).done();
    }
    text += "\n],\"displayTimeUnit\":\"ms\",\"otherData\":" + JsonObject().integer("dropped_events", r.dropped).done() +
            "}\n";
    if (r.dropped > 0)
      std::fprintf(stderr, "canopy: the trace (CANOPY_TRACE) kept its first %zu events and dropped %lld later ones\n",
                   Recorder::kMostEvents, static_cast<long long>(r.dropped));
  }
  // A temporary file, then a rename: a reader never sees half a trace.
  const std::string temporary = path + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    out.close();
    if (!out) {
      std::fprintf(stderr, "canopy: cannot write the trace (CANOPY_TRACE) to '%s': %s\n", temporary.c_str(),
                   std::strerror(errno));
      std::remove(temporary.c_str());
      return {};
    }
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    std::fprintf(stderr, "canopy: cannot write the trace (CANOPY_TRACE) to '%s': %s\n", path.c_str(),
                 std::strerror(errno));
    std::remove(temporary.c_str());
    return {};
  }
  return path;
}

std::unique_ptr<Session> session_from_environment() {
  auto path = trace_path_from_settings();
  return path ? std::make_unique<Session>(std::move(*path)) : nullptr;
}

void piece(const std::string& leaf, const RegionStats& region, std::size_t index, const backends::Range& range,
           Clock::time_point start, Clock::time_point launched, double run_seconds, Clock::time_point end) {
  const std::int64_t begin = range.begin[0], stop = range.end[0];
  JsonObject object;
  object.string("kernel", region.kernel)
      .integer("region", static_cast<std::int64_t>(region.id))
      .integer("piece", static_cast<std::int64_t>(index))
      .integer("begin", begin)
      .integer("end", stop)
      .integer("points", range.points())
      .string("policy", region.policy)
      .string("location", region.location);
  if (!region.fused.empty()) {  // a fused kernel: the regions it ran, as launched
    std::string launched;
    for (const auto& kernel : region.fused) launched += (launched.empty() ? "" : ",") + kernel;
    object.string("fused", launched).integer("arrays_in_registers", region.arrays_in_registers);
  }
  std::string args = object.done();
  auto& r = recorder();
  std::lock_guard lock(r.mutex);
  const int track = r.lane(leaf, TrackKind::Leaf, start, end);
  r.add('X', track, "piece", region.kernel, start, end, std::move(args));
  if (run_seconds > 0) {
    const auto ran = launched + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(run_seconds));
    r.add('X', track, "launch", "run " + region.kernel, launched, ran,
          JsonObject().string("kernel", region.kernel).integer("region", static_cast<std::int64_t>(region.id)).done());
  }
}

std::string_view cache_word(const backends::Program& program) {
  return program.origin() == backends::ProgramOrigin::Disk ? "hit" : "miss";
}

std::string_view cache_word(const backends::cpu::CpuProgram& program) {
  switch (program.source) {
    case jit::CpuCompiler::Source::Disk: return "hit";
    case jit::CpuCompiler::Source::Memory: return "memory";
    case jit::CpuCompiler::Source::Compiled: break;
  }
  return "miss";
}

void compile(std::string_view kernel, std::string_view backend, std::string_view device, std::string_view cache,
             Clock::time_point start) {
  const auto end = Clock::now();
  std::string args = JsonObject()
                         .string("kernel", kernel)
                         .string("backend", backend)
                         .string("device", device)
                         .string("cache", cache)
                         .done();
  auto& r = recorder();
  std::lock_guard lock(r.mutex);
  r.add('X', r.thread_track(), "compile", "compile " + std::string(kernel) + " (" + std::string(backend) + ")", start,
        end, std::move(args));
}

CopySpan::~CopySpan() {
  if (!device_) return;
  const auto end = Clock::now();
  const bool to_device = direction_ == Direction::HostToDevice;
  const char* direction = to_device ? "host->device" : "device->host";
  const auto bytes = static_cast<std::int64_t>(bytes_);
  std::string args =
      JsonObject().integer("bytes", bytes).string("direction", direction).string("device", device_->id).done();
  auto& r = recorder();
  std::lock_guard lock(r.mutex);
  (to_device ? r.to_device : r.to_host) += bytes;
  r.add('X', r.lane("copies " + device_->id, TrackKind::Copies, start_, end), "copy", std::string("copy ") + direction,
        start_, end, std::move(args));
  // A counter of the bytes moved so far each way (a counter has no track: it gets one of its own).
  r.add('C', 0, "copy", "bytes copied", end, end,
        JsonObject().integer("host->device", r.to_device).integer("device->host", r.to_host).done());
}

PauseSpan::~PauseSpan() {
  if (!active_) return;
  const auto end = Clock::now();
  const std::string what = location_ ? *location_ : std::string();
  auto& r = recorder();
  std::lock_guard lock(r.mutex);
  r.add('X', r.thread_track(), "pause", what.empty() ? "pause" : "pause " + what, start_, end,
        JsonObject().string("location", what.empty() ? "all" : what).done());
}

}  // namespace canopy::runtime::trace
