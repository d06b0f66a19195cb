#include "disk_cache.hpp"

#include <signal.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <set>

#include "hash.hpp"

namespace canopy::jit {

namespace {

constexpr char kMagic[6] = {'C', 'N', 'P', 'Y', 'K', 'C'};
constexpr unsigned char kFormatVersion = 2;                  // 2: the checksum is checked_file's
constexpr std::size_t kHeaderSize = sizeof(kMagic) + 2 + 4;  // magic, version, reserved, key length
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
  std::string entry;
  entry.reserve(kHeaderSize + key.size() + payload.size());
  entry.append(kMagic, sizeof(kMagic));
  entry.push_back(static_cast<char>(kFormatVersion));
  entry.push_back(0);
  append_le(entry, key.size(), 4);
  entry.append(key);
  entry.append(payload);
  return entry;
}

enum class Decoded { Valid, OtherVersion, OtherKey, Corrupt };

// Checks a whole entry and, when it is one for `key`, sets `payload`.
Decoded decode(std::string_view entry, const std::string& key, std::string& payload) {
  if (entry.size() < kHeaderSize || std::memcmp(entry.data(), kMagic, sizeof(kMagic)) != 0) return Decoded::Corrupt;
  if (static_cast<unsigned char>(entry[sizeof(kMagic)]) != kFormatVersion) return Decoded::OtherVersion;
  const std::uint64_t key_length = read_le(entry, sizeof(kMagic) + 2, 4);
  if (key_length > entry.size() - kHeaderSize) return Decoded::Corrupt;
  if (entry.substr(kHeaderSize, key_length) != key) return Decoded::OtherKey;
  payload.assign(entry.substr(kHeaderSize + key_length));
  return Decoded::Valid;
}

bool is_plain_file_name(const std::string& key) {
  if (key.empty() || key.size() > 128 || key[0] == '.') return false;
  for (char c : key)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.')) return false;
  return true;
}

}  // namespace

DiskCache::DiskCache(std::string directory, CacheSharing sharing)
    : directory_(std::move(directory)), sharing_(sharing) {}

std::size_t DiskCache::remove_abandoned_temporaries() {
  namespace fs = std::filesystem;
  std::error_code error;
  std::size_t removed = 0;
  const auto old_enough = fs::file_time_type::clock::now() - std::chrono::minutes(10);
  for (fs::directory_iterator it(directory_, error), end; !error && it != end; it.increment(error)) {
    const std::string name = it->path().filename().string();
    const std::size_t at = name.find(".tmp.");
    if (at == std::string::npos) continue;
    const char* digits = name.c_str() + at + 5;
    char* stop = nullptr;
    const long pid = std::strtol(digits, &stop, 10);
    if (stop == digits || *stop != '.' || pid <= 0 || pid == ::getpid()) continue;
    // A writer that lives (or that this process may not signal) keeps its file.
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;
    std::error_code stat_error;
    const auto written = fs::last_write_time(it->path(), stat_error);
    if (stat_error || written > old_enough) continue;  // on a shared folder, another node's writer may be at work
    if (fs::remove(it->path(), stat_error)) ++removed;
  }
  return removed;
}

std::string DiskCache::file_of(const std::string& key, const char* extension) const {
  const std::string name = is_plain_file_name(key) ? key : hash_hex(key);
  return (std::filesystem::path(directory_) / (name + extension)).string();
}

std::string DiskCache::path_of(const std::string& key) const { return file_of(key, kExtension); }

std::string DiskCache::loadable_path_of(const std::string& key) const { return file_of(key, ".so"); }

std::optional<std::string> DiskCache::get(const std::string& key) {
  const CheckedRead read = read_checked(path_of(key));
  std::string payload;
  if (read.state == FileState::Whole) {
    switch (decode(read.payload, key, payload)) {
      case Decoded::Valid: ++hits_; return payload;
      case Decoded::Corrupt: ++corrupt_; break;
      case Decoded::OtherVersion:
      case Decoded::OtherKey: break;
    }
  }
  ++misses_;
  return std::nullopt;
}

std::optional<std::string> DiskCache::get_loadable(const std::string& key) {
  const std::string path = loadable_path_of(key);
  if (read_checked(path).state != FileState::Whole) return std::nullopt;
  ++hits_;
  return path;
}

std::optional<DiskCache::Stored> DiskCache::get_stored(const std::string& key) {
  CheckedRead read = read_checked(loadable_path_of(key));
  if (read.state == FileState::Whole) {
    ++hits_;
    return Stored{std::move(read.payload), true};
  }
  if (auto payload = get(key)) return Stored{std::move(*payload), false};
  return std::nullopt;
}

void DiskCache::put_stored(const std::string& key, const Stored& entry) {
  if (entry.loadable)
    put_loadable(key, entry.payload);
  else
    put(key, entry.payload);
}

CheckedRead DiskCache::read_checked(const std::string& path) {
  CheckedRead read = read_checked_file(path, sharing_);
  if (read.state == FileState::Damaged) ++corrupt_;
  if (read.state == FileState::Untrusted) {
    ++untrusted_;
    remember_problem(read.why);  // checked_file has said so on stderr
  }
  return read;
}

void DiskCache::put(const std::string& key, std::string_view payload) { write(path_of(key), encode(key, payload)); }

void DiskCache::put_loadable(const std::string& key, std::string_view payload) {
  write(loadable_path_of(key), payload);
}

namespace {

// Whether no cache of the process has warned of `directory` yet: the CPU
// compiler's, the devices' program cache and the discovery cache may share
// one, and the same warning came three times.
bool first_warning_for(const std::string& directory) {
  static std::mutex mutex;
  static std::set<std::string> warned;
  std::lock_guard lock(mutex);
  return warned.insert(directory).second;
}

}  // namespace

void DiskCache::write(const std::string& path, std::string_view bytes) {
  const CheckedWrite wrote = write_checked_file(path, bytes, sharing_);
  if (wrote.written) return;
  if (wrote.untrusted) {
    ++untrusted_;
    remember_problem(wrote.why);  // checked_file has said so on stderr
    return;
  }
  ++write_failures_;
  if (remember_problem(wrote.why) && first_warning_for(directory_))
    std::fprintf(stderr, "canopy: kernel cache at %s is not usable (%s); kernels will be compiled on every run\n",
                 directory_.c_str(), wrote.why.c_str());
}

DiskCache::Counters DiskCache::counters() const {
  return Counters{hits_.load(), misses_.load(), corrupt_.load(), write_failures_.load(), untrusted_.load()};
}

std::string DiskCache::problem() const {
  std::lock_guard lock(problem_mutex_);
  return problem_;
}

bool DiskCache::remember_problem(const std::string& reason) {
  std::lock_guard lock(problem_mutex_);
  if (!problem_.empty()) return false;
  problem_ = reason;
  return true;
}

}  // namespace canopy::jit
