#include "disk_cache.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <thread>

#include "hash.hpp"

namespace canopy::jit {

namespace {

constexpr char kMagic[6] = {'C', 'N', 'P', 'Y', 'K', 'C'};
constexpr unsigned char kFormatVersion = 1;
constexpr std::size_t kHeaderSize = sizeof(kMagic) + 2 + 4;  // magic, version, reserved, key length
constexpr std::size_t kChecksumSize = 8;
constexpr const char* kExtension = ".cnpy";

void append_le(std::string& out, std::uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

std::uint64_t read_le(std::string_view in, std::size_t at, int bytes) {
  std::uint64_t value = 0;
  for (int i = 0; i < bytes; ++i)
    value |= static_cast<std::uint64_t>(static_cast<unsigned char>(in[at + i])) << (8 * i);
  return value;
}

std::string encode(const std::string& key, std::string_view payload) {
  std::string file;
  file.reserve(kHeaderSize + key.size() + 8 + payload.size() + kChecksumSize);
  file.append(kMagic, sizeof(kMagic));
  file.push_back(static_cast<char>(kFormatVersion));
  file.push_back(0);
  append_le(file, key.size(), 4);
  file.append(key);
  append_le(file, payload.size(), 8);
  file.append(payload);
  append_le(file, hash64(file), 8);
  return file;
}

enum class Decoded { Valid, OtherVersion, OtherKey, Corrupt };

// Checks `file` and, when it is a valid entry for `key`, sets `payload`.
Decoded decode(std::string_view file, const std::string& key, std::string& payload) {
  if (file.size() < kHeaderSize + 8 + kChecksumSize || std::memcmp(file.data(), kMagic, sizeof(kMagic)) != 0)
    return Decoded::Corrupt;
  if (static_cast<unsigned char>(file[sizeof(kMagic)]) != kFormatVersion) return Decoded::OtherVersion;
  const std::size_t body = file.size() - kChecksumSize;
  if (hash64(file.substr(0, body)) != read_le(file, body, 8)) return Decoded::Corrupt;
  const std::uint64_t key_length = read_le(file, sizeof(kMagic) + 2, 4);
  if (key_length > body - kHeaderSize - 8) return Decoded::Corrupt;
  const std::size_t payload_at = kHeaderSize + key_length + 8;
  if (read_le(file, payload_at - 8, 8) != body - payload_at) return Decoded::Corrupt;
  if (file.substr(kHeaderSize, key_length) != key) return Decoded::OtherKey;
  payload.assign(file.substr(payload_at, body - payload_at));
  return Decoded::Valid;
}

// Reads the whole file; false when it cannot be opened or read.
bool read_file(const std::string& path, std::string& out) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  out.clear();
  char buffer[1 << 16];
  bool ok = true;
  for (;;) {
    const ssize_t got = ::read(fd, buffer, sizeof(buffer));
    if (got > 0) {
      out.append(buffer, static_cast<std::size_t>(got));
    } else if (got == 0) {
      break;
    } else if (errno != EINTR) {
      ok = false;
      break;
    }
  }
  ::close(fd);
  return ok;
}

// Writes all of `bytes` to a new file `path`; on failure returns the reason.
std::string write_new_file(const std::string& path, std::string_view bytes) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return std::strerror(errno);
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t wrote = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (wrote < 0 && errno == EINTR) continue;
    if (wrote <= 0) {
      const std::string reason = wrote < 0 ? std::strerror(errno) : "short write";
      ::close(fd);
      ::unlink(path.c_str());
      return reason;
    }
    done += static_cast<std::size_t>(wrote);
  }
  if (::close(fd) != 0) {
    const std::string reason = std::strerror(errno);
    ::unlink(path.c_str());
    return reason;
  }
  return {};
}

bool is_plain_file_name(const std::string& key) {
  if (key.empty() || key.size() > 128 || key[0] == '.') return false;
  for (char c : key)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.')) return false;
  return true;
}

// Distinguishes the temporary files of one process's threads and puts.
std::atomic<std::uint64_t> temporary_counter{0};

}  // namespace

DiskCache::DiskCache(std::string directory) : directory_(std::move(directory)) {}

std::string DiskCache::path_of(const std::string& key) const {
  const std::string name = is_plain_file_name(key) ? key : hash_hex(key);
  return (std::filesystem::path(directory_) / (name + kExtension)).string();
}

std::optional<std::string> DiskCache::get(const std::string& key) {
  std::string file;
  std::string payload;
  if (read_file(path_of(key), file)) {
    switch (decode(file, key, payload)) {
      case Decoded::Valid: ++hits_; return payload;
      case Decoded::Corrupt: ++corrupt_; break;
      case Decoded::OtherVersion:
      case Decoded::OtherKey: break;
    }
  }
  ++misses_;
  return std::nullopt;
}

void DiskCache::put(const std::string& key, std::string_view payload) {
  std::error_code error;
  std::filesystem::create_directories(directory_, error);
  if (error) {
    report_failure("cannot create the directory: " + error.message());
    return;
  }
  const std::string final_path = path_of(key);
  const std::uint64_t thread_tag = std::hash<std::thread::id>{}(std::this_thread::get_id()) & 0xffffffffull;
  const std::string temporary_path = final_path + ".tmp." + std::to_string(::getpid()) + "." +
                                     std::to_string(thread_tag) + "." + std::to_string(++temporary_counter);
  if (std::string reason = write_new_file(temporary_path, encode(key, payload)); !reason.empty()) {
    report_failure("cannot write " + temporary_path + ": " + reason);
    return;
  }
  if (std::rename(temporary_path.c_str(), final_path.c_str()) != 0) {
    const std::string reason = std::strerror(errno);
    ::unlink(temporary_path.c_str());
    report_failure("cannot rename a file to " + final_path + ": " + reason);
  }
}

DiskCache::Counters DiskCache::counters() const {
  return Counters{hits_.load(), misses_.load(), corrupt_.load(), write_failures_.load()};
}

std::string DiskCache::problem() const {
  std::lock_guard lock(problem_mutex_);
  return problem_;
}

void DiskCache::report_failure(const std::string& reason) {
  ++write_failures_;
  std::lock_guard lock(problem_mutex_);
  if (!problem_.empty()) return;
  problem_ = reason;
  std::fprintf(stderr, "canopy: kernel cache at %s is not usable (%s); kernels will be compiled on every run\n",
               directory_.c_str(), reason.c_str());
}

}  // namespace canopy::jit
