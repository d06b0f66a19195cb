// Trace: CANOPY_TRACE=run.json records what a run did, on a timeline, so that
// a user who wonders why a split was slow can see it: each piece on its leaf's
// track, each copy between memories on its device's copy track, each compile
// and each pause on the thread that waited for it. The file is the Chrome
// "Trace Event Format" (ui.perfetto.dev and chrome://tracing open it;
// `canopy-plot timeline` draws it), written when the Runtime is destroyed.
//
// Why a module of its own: the hooks sit in the engine, the copies and the
// compiles, which must not pay for a trace nobody asked for. Each hook first
// calls on(), one relaxed load of a process-wide flag; with tracing off
// nothing else runs (no clock read, no allocation). With tracing on, events
// go under one mutex into a list that is written out at the end.
//
// The recorder is one per process. Each Engine made while CANOPY_TRACE is set
// holds a Session; a Session's end writes every event recorded since the
// first live Session began, and the last one to end stops recording. Under
// MPI each rank writes its own file, run.<rank>.json (set_rank()).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <canopy/backends/cpu/cpu_device.hpp>
#include <canopy/backends/device.hpp>
#include <canopy/backends/launch.hpp>

#include "../stats.hpp"

namespace canopy::runtime::trace {

using Clock = std::chrono::steady_clock;

/// True while a Session is recording. Defined in trace.cpp (one flag for the
/// whole process, shared libraries included); read through on().
extern std::atomic<bool> recording;

/// The one check every hook makes before anything else.
inline bool on() { return recording.load(std::memory_order_relaxed); }

/// CANOPY_TRACE (as ir/settings.hpp read it when the Runtime was made),
/// checked: the path of the file to write, or nothing when the variable is
/// unset. Throws canopy::Error (bad_setting's: the variable, its value and
/// what is allowed) when the value is empty, a directory, or in a folder that
/// does not exist. The only function that looks at CANOPY_TRACE's value.
std::optional<std::string> trace_path_from_settings();

/// The rank of this process in an MPI job: its trace goes to
/// `<stem>.<rank><extension>` (run.json -> run.3.json). The MPI job
/// (runtime/mpi/job.cpp) calls this before it makes its Runtime; without it,
/// OMPI_COMM_WORLD_RANK or PMI_RANK (set by mpirun, read by ir/settings) stand in.
void set_rank(int rank);

/// `path` as the rank `rank` writes it: run.json -> run.3.json, run -> run.3;
/// `path` itself for a negative rank (no MPI).
std::string path_for_rank(const std::string& path, int rank);

/// Recording for one Engine's lifetime: starts recording when made (if none
/// was), writes the file when destroyed (never throws: a file that cannot be
/// written is reported on stderr).
class Session {
 public:
  explicit Session(std::string path);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  /// Writes every event recorded so far; returns the path written, or an
  /// empty string (with a message on stderr) when it could not be.
  std::string write() const;

 private:
  std::string path_;
};

/// A Session for CANOPY_TRACE when it is set (Engine's constructor).
std::unique_ptr<Session> session_from_environment();

/// A piece of `region` that ran `range` on `leaf`: from `start` (when its
/// worker took it; then it waited for earlier regions and copied its data
/// in) to `end`, the kernel itself for `run_seconds` from `launched`.
void piece(const std::string& leaf, const RegionStats& region, std::size_t index, const backends::Range& range,
           Clock::time_point start, Clock::time_point launched, double run_seconds, Clock::time_point end);

/// A compile of `kernel` by `backend` for `device` (on the calling thread's
/// track), from `start` to now; `cache` says what the disk cache did: "hit",
/// "miss" (or no cache), or "memory" (the CPU JIT had compiled it already).
void compile(std::string_view kernel, std::string_view backend, std::string_view device, std::string_view cache,
             Clock::time_point start);

/// What the disk cache did for a device's program, and for a CPU program.
std::string_view cache_word(const backends::Program& program);
std::string_view cache_word(const backends::cpu::CpuProgram& program);

/// Runs `build` (a compile: it returns a shared_ptr to a Program) and, when
/// tracing, records it as a compile of `kernel` by `backend` for `device`.
template <class Build>
auto compiling(std::string_view kernel, std::string_view backend, std::string_view device, Build&& build) {
  if (!on()) return build();
  const auto start = Clock::now();
  auto program = build();
  if (program) compile(kernel, backend, device, cache_word(*program), start);
  return program;
}

/// Which way a copy went. The coherence directory routes a copy between two
/// devices through the host, so a trace shows it as device->host, then
/// host->device.
enum class Direction { HostToDevice, DeviceToHost };

/// A copy of `bytes` bytes between the host and `device`, timed from when it
/// is made to when it is destroyed; recorded on the device's copy track.
/// Made with tracing off, it does nothing.
class CopySpan {
 public:
  CopySpan(const backends::DeviceInfo& device, Direction direction, std::size_t bytes)
      : device_(on() ? &device : nullptr), direction_(direction), bytes_(bytes) {
    if (device_) start_ = Clock::now();
  }
  ~CopySpan();
  CopySpan(const CopySpan&) = delete;
  CopySpan& operator=(const CopySpan&) = delete;

 private:
  const backends::DeviceInfo* device_;
  Direction direction_;
  std::size_t bytes_;
  Clock::time_point start_{};
};

/// A pause() of the calling thread, for every region or for those with a
/// piece below one location, timed from when it is made to when it is
/// destroyed. Made with tracing off, it does nothing.
class PauseSpan {
 public:
  /// A pause for every region.
  PauseSpan() : active_(on()) {
    if (active_) start_ = Clock::now();
  }
  /// A pause for the regions below `location` (which must outlive the span).
  explicit PauseSpan(const std::string& location) : active_(on()), location_(&location) {
    if (active_) start_ = Clock::now();
  }
  ~PauseSpan();
  PauseSpan(const PauseSpan&) = delete;
  PauseSpan& operator=(const PauseSpan&) = delete;

 private:
  bool active_;
  const std::string* location_ = nullptr;
  Clock::time_point start_{};
};

}  // namespace canopy::runtime::trace
