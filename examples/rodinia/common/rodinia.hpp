// What the Rodinia examples share: a seeded random generator for generated
// inputs (the same numbers on every machine), a timer, command-line helpers
// that fail with a usage message, a reader for the numbers of a text file, a
// writer of numbers as text and the container the programs load data into.
#pragma once

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <system_error>
#include <vector>

#ifndef RODINIA_PLAIN_VECTORS
#include <canopy/runtime/host_allocator.hpp>
#endif

namespace rodinia {

/// What the programs hold their inputs and results in. The Canopy examples
/// use Canopy's host memory (canopy::HostVector: a large block on huge
/// pages), which is where the README tells a Canopy program to load the data
/// it then wraps. The OpenMP ports they are compared with (rodinia-openmp and
/// the baselines of canopy-bench) define RODINIA_PLAIN_VECTORS and use
/// std::vector, as Rodinia's own programs use malloc.
#ifdef RODINIA_PLAIN_VECTORS
template <class T>
using Vector = std::vector<T>;
#else
template <class T>
using Vector = canopy::HostVector<T>;
#endif

/// A small, fast generator (splitmix64) whose sequence is fixed by its seed.
class Random {
 public:
  explicit Random(std::uint64_t seed = 7) : state_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  /// Uniform in [0, 1).
  double uniform() { return double(next() >> 11) * 0x1.0p-53; }
  /// Uniform in [lo, hi).
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  /// Uniform integer in [0, n).
  std::int64_t below(std::int64_t n) { return n > 0 ? static_cast<std::int64_t>(next() % std::uint64_t(n)) : 0; }

 private:
  std::uint64_t state_;
};

/// Seconds since `start`.
/// The larger of a running worst difference and the next one, where a NaN
/// on either side wins: std::max(worst, NaN) keeps `worst`, and a check
/// over a result of NaNs said "ok".
inline double worse(double worst, double difference) {
  return std::isnan(worst) || difference <= worst ? worst : difference;
}

/// Prints "program: message" on stderr, once: a message that already names
/// the program (the readers' errors do) is printed as it is.
inline void report_error(const char* program, const char* message) {
  const std::string prefix = std::string(program) + ": ";
  std::fprintf(stderr, "%s%s\n", std::string(message).rfind(prefix, 0) == 0 ? "" : prefix.c_str(), message);
}

inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

/// Prints "PROGRAM: PROBLEM" and the usage to stderr, then exits with status 2.
[[noreturn]] inline void usage_error(const char* program, const std::string& problem, const char* usage) {
  std::fprintf(stderr, "%s: %s\nusage: %s\n", program, problem.c_str(), usage);
  std::exit(2);
}

/// The whole number in `text`; exits through usage_error when it is not one
/// or is below `least`.
inline long long parse_integer(const char* program, const char* what, const char* text, const char* usage,
                               long long least = 1) {
  char* end = nullptr;
  const long long value = std::strtoll(text, &end, 10);
  if (!*text || *end || value < least)
    usage_error(
        program,
        std::string(what) + " must be a whole number of at least " + std::to_string(least) + ", got '" + text + "'",
        usage);
  return value;
}

/// The number in `text`; exits through usage_error when it is not one.
inline double parse_number(const char* program, const char* what, const char* text, const char* usage) {
  char* end = nullptr;
  const double value = std::strtod(text, &end);
  if (!*text || *end) usage_error(program, std::string(what) + " must be a number, got '" + text + "'", usage);
  return value;
}

/// The numbers of a text file separated by white space, in order: the file
/// is mapped into memory whole (read whole where it cannot be mapped, as a
/// pipe) and parsed in place (std::from_chars), several times faster than
/// formatted stream input, which Rodinia's text formats would otherwise take
/// (a matrix of 2048 x 2048 floats is 4 million numbers). Mapping spares the
/// copy out of the page cache and the growing buffer of a read: for
/// gaussian's 52 MB input, 180 ms in all against 310 ms read into a string.
class Numbers {
 public:
  explicit Numbers(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    struct stat status {};
    if (::fstat(fd, &status) == 0 && S_ISREG(status.st_mode) && status.st_size > 0) {
      int flags = MAP_PRIVATE;
#ifdef MAP_POPULATE
      flags |= MAP_POPULATE;  // the page tables filled in one call, not a fault per page
#endif
      void* mapped = ::mmap(nullptr, static_cast<std::size_t>(status.st_size), PROT_READ, flags, fd, 0);
      if (mapped != MAP_FAILED) {
        mapped_ = mapped;
        mapped_bytes_ = static_cast<std::size_t>(status.st_size);
        at_ = static_cast<const char*>(mapped);
        end_ = at_ + mapped_bytes_;
        opened_ = true;
        ::close(fd);
        return;
      }
    }
    char buffer[1 << 16];
    ssize_t got = 0;
    while ((got = ::read(fd, buffer, sizeof buffer)) > 0 || (got < 0 && errno == EINTR))
      if (got > 0) text_.append(buffer, static_cast<std::size_t>(got));
    opened_ = got == 0;
    ::close(fd);
    at_ = text_.data();
    end_ = at_ + text_.size();
  }
  ~Numbers() {
    if (mapped_) ::munmap(mapped_, mapped_bytes_);
  }
  Numbers(const Numbers&) = delete;
  Numbers& operator=(const Numbers&) = delete;

  /// False when the file could not be read.
  bool opened() const { return opened_; }
  /// The next number as T (an integer or a float); false when there is none
  /// or the next word is not a T.
  template <class T>
  bool next(T& value) {
    while (at_ < end_ && (*at_ == ' ' || *at_ == '\t' || *at_ == '\n' || *at_ == '\r')) ++at_;
    if (at_ < end_ && *at_ == '+') ++at_;  // accepted by stream input, not by from_chars
    const auto [stop, error] = std::from_chars(at_, end_, value);
    if (error != std::errc()) return false;
    at_ = stop;
    return true;
  }

 private:
  void* mapped_ = nullptr;  ///< the file's mapping, or null when read into text_
  std::size_t mapped_bytes_ = 0;
  std::string text_;
  const char* at_ = nullptr;
  const char* end_ = nullptr;
  bool opened_ = false;
};

/// A text file written through a large buffer, its numbers formatted with
/// std::to_chars exactly as printf's "%lld" and "%g" would write them (the C
/// standard library's rules), several times faster: Rodinia's outputs are a
/// million lines and more.
class TextOut {
 public:
  explicit TextOut(const std::string& path) : file_(std::fopen(path.c_str(), "w")), owned_(true) {
    failed_ = file_ == nullptr;  // close() says so: hotspot said nothing of an output it could not open
  }
  /// Writes to an open stream (stdout, say), which close() flushes but leaves open.
  explicit TextOut(std::FILE* stream) : file_(stream), owned_(false) {}
  ~TextOut() { close(); }
  TextOut(const TextOut&) = delete;
  TextOut& operator=(const TextOut&) = delete;

  /// False when the file could not be opened or written.
  bool good() const { return file_ != nullptr && !failed_; }
  TextOut& integer(long long value) {
    reserve(24);
    used_ = std::to_chars(buffer_ + used_, buffer_ + kSize, value).ptr - buffer_;
    return *this;
  }
  /// As "%g": six significant digits, the shorter of fixed and exponent form.
  TextOut& general(double value) {
    reserve(32);
    used_ = std::to_chars(buffer_ + used_, buffer_ + kSize, value, std::chars_format::general, 6).ptr - buffer_;
    return *this;
  }
  /// As "%.Nf": `digits` digits after the point.
  TextOut& fixed(double value, int digits) {
    reserve(350);  // the widest double in fixed form
    used_ = std::to_chars(buffer_ + used_, buffer_ + kSize, value, std::chars_format::fixed, digits).ptr - buffer_;
    return *this;
  }
  TextOut& text(const char* characters) {
    for (; *characters; ++characters) put(*characters);
    return *this;
  }
  TextOut& put(char c) {
    reserve(1);
    buffer_[used_++] = c;
    return *this;
  }
  /// Writes what is buffered and closes the file; false when anything failed.
  bool close() {
    if (file_) {
      flush();
      failed_ = (owned_ ? std::fclose(file_) : std::fflush(file_)) != 0 || failed_;
      file_ = nullptr;
    }
    return !failed_;
  }

 private:
  static constexpr std::ptrdiff_t kSize = 1 << 16;
  void reserve(std::ptrdiff_t bytes) {
    if (used_ + bytes > kSize) flush();
  }
  void flush() {
    if (file_ && used_ > 0 && std::fwrite(buffer_, 1, static_cast<std::size_t>(used_), file_) != std::size_t(used_))
      failed_ = true;
    used_ = 0;
  }
  std::FILE* file_;
  bool owned_;
  bool failed_ = false;
  std::ptrdiff_t used_ = 0;
  char buffer_[kSize];
};

}  // namespace rodinia
