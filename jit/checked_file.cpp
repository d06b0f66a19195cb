#include "checked_file.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include <canopy/ir/error.hpp>
#include <canopy/ir/settings.hpp>

#include "hash.hpp"

namespace canopy::jit {

namespace {

constexpr std::string_view kTrailer = "\ncanopy-checksum ";

std::string octal_mode(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
  return text;
}

bool user_is_in_group(gid_t group) {
  if (group == ::getegid()) return true;
  const int count = ::getgroups(0, nullptr);
  if (count <= 0) return false;
  std::vector<gid_t> groups(static_cast<std::size_t>(count));
  const int got = ::getgroups(count, groups.data());
  for (int i = 0; i < got; ++i)
    if (groups[static_cast<std::size_t>(i)] == group) return true;
  return false;
}

bool owned_by_user(const struct stat& info) { return info.st_uid == ::geteuid() || info.st_uid == 0; }

// Why a file Canopy is about to read is not trusted, or empty.
std::string distrust_of_file(const std::string& path, const struct stat& info, CacheSharing sharing) {
  if (!S_ISREG(info.st_mode)) return path + " is not a regular file";
  if (info.st_mode & S_IWOTH) return path + " may be written by others (mode " + octal_mode(info.st_mode) + ")";
  if (sharing == CacheSharing::Private) {
    if (!owned_by_user(info)) return path + " is owned by user id " + std::to_string(info.st_uid) + ", not by you";
    if (info.st_mode & S_IWGRP)
      return path + " may be written by its group (mode " + octal_mode(info.st_mode) +
             "); set CANOPY_CACHE_SHARED=group to share a cache with a group";
  }
  return {};
}

// Prints `warning` once per process for `directory`.
void warn_once(const std::string& directory, const std::string& warning) {
  static std::mutex mutex;
  static std::set<std::string> warned;
  std::lock_guard lock(mutex);
  if (!warned.insert(directory).second) return;
  std::fprintf(stderr, "canopy: not using the cache directory %s: %s; Canopy computes what it would have read\n",
               directory.c_str(), warning.c_str());
}

std::string parent_of(const std::string& path) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  return parent.empty() ? std::string(".") : parent.string();
}

// Creates `directory` and its missing parents; the last one gets `mode`
// exactly, parents 0700 (0750 for a group cache). Empty on success.
std::string make_directories(const std::string& directory, CacheSharing sharing) {
  struct stat info {};
  if (::stat(directory.c_str(), &info) == 0)
    return S_ISDIR(info.st_mode) ? std::string() : directory + " exists and is not a directory";
  const std::string parent = parent_of(directory);
  if (parent != directory && ::stat(parent.c_str(), &info) != 0) {
    if (std::string why = make_directories(parent, sharing); !why.empty()) return why;
  }
  const bool group = sharing == CacheSharing::Group;
  if (::mkdir(directory.c_str(), group ? 0750 : 0700) != 0 && errno != EEXIST)
    return "cannot create " + directory + ": " + std::strerror(errno);
  if (group) ::chmod(directory.c_str(), 02770);
  return {};
}

// Makes `directory` where it is missing and checks that it is trusted.
// Empty when files may go there; else why not, with `*untrusted` set when
// the reason is trust (warned about once per directory).
std::string usable_directory(const std::string& directory, CacheSharing sharing, bool* untrusted) {
  if (std::string why = make_directories(directory, sharing); !why.empty()) return why;
  std::string why = distrust_of_directory(directory, sharing);
  if (why.empty()) return why;
  warn_once(directory, why);
  *untrusted = true;
  return directory + ": " + why;
}

// Writes all of `bytes` to the new file `path` with `mode`; empty on success.
std::string write_new_file(const std::string& path, std::string_view bytes, mode_t mode) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd < 0) return "cannot create " + path + ": " + std::strerror(errno);
  std::size_t done = 0;
  std::string why;
  while (done < bytes.size() && why.empty()) {
    const ssize_t wrote = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (wrote < 0 && errno == EINTR) continue;
    if (wrote <= 0)
      why = "cannot write " + path + ": " + (wrote < 0 ? std::string(std::strerror(errno)) : "short write");
    else
      done += static_cast<std::size_t>(wrote);
  }
  if (::close(fd) != 0 && why.empty()) why = "cannot write " + path + ": " + std::strerror(errno);
  if (!why.empty()) ::unlink(path.c_str());
  return why;
}

// Distinguishes the temporary files of one process's threads and writes.
std::atomic<std::uint64_t> temporary_counter{0};

}  // namespace

CacheSharing cache_sharing_from_environment() {
  return settings().cache_shared == "group" ? CacheSharing::Group : CacheSharing::Private;
}

std::string cache_directory(const std::string& option) {
  if (!option.empty()) return option;
  const Settings& s = settings();
  if (!s.cache_dir.empty()) return s.cache_dir;
  if (!s.home.empty()) return s.home + "/.cache/canopy";
  return "off";
}

std::string distrust_of_directory(const std::string& directory, CacheSharing sharing) {
  struct stat info {};
  if (::stat(directory.c_str(), &info) != 0) return {};
  if (!S_ISDIR(info.st_mode)) return "it is not a directory";
  const std::string mode = " (mode " + octal_mode(info.st_mode) + ")";
  if (info.st_mode & S_IWOTH) return "others may write it" + mode;
  if (owned_by_user(info) && !(info.st_mode & S_IWGRP)) return {};
  if (sharing == CacheSharing::Group) {
    if (user_is_in_group(info.st_gid)) return {};
    return "its group (id " + std::to_string(info.st_gid) + ") is not one of yours";
  }
  if (!owned_by_user(info)) return "it is owned by user id " + std::to_string(info.st_uid) + ", not by you";
  return "its group may write it" + mode + "; set CANOPY_CACHE_SHARED=group to share a cache with a group";
}

std::string frame_checked(std::string_view payload) {
  char line[64];
  std::snprintf(line, sizeof line, "%016" PRIx64 " %zu\n", hash64(payload), payload.size());
  std::string file;
  file.reserve(payload.size() + kTrailer.size() + 40);
  file.append(payload);
  file.append(kTrailer);
  file.append(line);
  return file;
}

std::optional<std::string_view> unframe_checked(std::string_view file) {
  const auto at = file.rfind(kTrailer);
  if (at == std::string_view::npos) return std::nullopt;
  const std::string_view payload = file.substr(0, at);
  if (frame_checked(payload) != file) return std::nullopt;
  return payload;
}

CheckedRead read_checked_file(const std::string& path, CacheSharing sharing) {
  CheckedRead result;
  const std::string directory = parent_of(path);
  if (std::string why = distrust_of_directory(directory, sharing); !why.empty()) {
    warn_once(directory, why);
    result.state = FileState::Untrusted;
    result.why = directory + ": " + why;
    return result;
  }
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    if (errno == ENOENT || errno == ENOTDIR) return result;  // Missing
    result.state = errno == ELOOP ? FileState::Untrusted : FileState::Damaged;
    result.why = errno == ELOOP ? path + " is a symbolic link" : "cannot open " + path + ": " + std::strerror(errno);
    if (result.state == FileState::Untrusted) warn_once(directory, result.why);
    return result;
  }
  struct stat info {};
  std::string why = ::fstat(fd, &info) != 0 ? "cannot inspect " + path : distrust_of_file(path, info, sharing);
  if (!why.empty()) {
    ::close(fd);
    warn_once(directory, why);
    result.state = FileState::Untrusted;
    result.why = why;
    return result;
  }
  std::string file;
  file.reserve(static_cast<std::size_t>(info.st_size));
  char buffer[1 << 16];
  for (;;) {
    const ssize_t got = ::read(fd, buffer, sizeof buffer);
    if (got > 0) {
      file.append(buffer, static_cast<std::size_t>(got));
    } else if (got == 0) {
      break;
    } else if (errno != EINTR) {
      ::close(fd);
      result.state = FileState::Damaged;
      result.why = "cannot read " + path + ": " + std::strerror(errno);
      return result;
    }
  }
  ::close(fd);
  const auto payload = unframe_checked(file);
  if (!payload) {
    result.state = FileState::Damaged;
    result.why = path + " is damaged (its checksum line does not match)";
    return result;
  }
  result.state = FileState::Whole;
  result.payload.assign(*payload);
  return result;
}

CheckedWrite write_checked_file(const std::string& path, std::string_view payload, CacheSharing sharing) {
  CheckedWrite result;
  if (std::string why = usable_directory(parent_of(path), sharing, &result.untrusted); !why.empty()) {
    result.why = why;
    return result;
  }
  const std::uint64_t thread_tag = std::hash<std::thread::id>{}(std::this_thread::get_id()) & 0xffffffffull;
  const std::string temporary = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(thread_tag) + "." +
                                std::to_string(++temporary_counter);
  const mode_t mode = sharing == CacheSharing::Group ? 0640 : 0600;
  if (std::string why = write_new_file(temporary, frame_checked(payload), mode); !why.empty()) {
    result.why = why;
    return result;
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    result.why = "cannot rename a file to " + path + ": " + std::strerror(errno);
    ::unlink(temporary.c_str());
    return result;
  }
  result.written = true;
  return result;
}

CacheLock::CacheLock(const std::string& path, CacheSharing sharing) {
  bool untrusted = false;
  if (!usable_directory(parent_of(path), sharing, &untrusted).empty()) return;
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, sharing == CacheSharing::Group ? 0640 : 0600);
  if (fd_ < 0) return;
  while (::flock(fd_, LOCK_EX) != 0) {
    if (errno == EINTR) continue;
    ::close(fd_);
    fd_ = -1;
    return;
  }
}

CacheLock::~CacheLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the file releases its lock
}

}  // namespace canopy::jit
