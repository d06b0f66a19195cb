// Checked files: what Canopy keeps between runs (compiled kernels, the
// machine model, learned splits), each written whole or not at all, checked
// when read, and read only from a place no one else could have written.
//
// Why it exists: three stores had three temporary-file-and-rename writers
// and three checksum formats. And the kernel cache holds native code that
// Canopy loads and runs: a checksum catches a torn write, not a person who
// can write the directory, and MPI users put caches on shared file systems.
// So, like ssh with its keys:
//  - A directory is trusted when it is owned by the user (or root) and
//    neither group nor others may write it. With CANOPY_CACHE_SHARED=group,
//    a directory whose group is one of the user's and that others may not
//    write is trusted too (a cache shared by a project's members).
//  - A file is trusted when it is a regular file (not a symbolic link) that
//    others may not write and, for a private cache, owned by the user (or
//    root) and not writable by the group.
//  - Nothing is read from, or written to, a place that is not trusted: the
//    read reports Untrusted and the caller computes the value afresh. A
//    warning naming the place is printed once per directory.
//  - Directories Canopy creates are 0700 (02770, group-inherited, for a group
//    cache); files are 0600 (0640). A file is written to a new temporary
//    file in the same directory (O_EXCL | O_NOFOLLOW: never through a
//    symbolic link) and renamed over its name, so a reader sees no file or a
//    whole one, even with several processes writing the same name.
//
// The format: the payload, then one line
//   "\ncanopy-checksum <16 hex digits of hash64(payload)> <payload bytes>\n"
// so a text payload stays readable with `cat`. A file that does not end in a
// matching line is Damaged, whatever else it holds.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace canopy::jit {

/// Who besides its owner may write a cache directory Canopy trusts.
enum class CacheSharing : std::uint8_t {
  Private,  ///< no one (the default)
  Group,    ///< members of the directory's group, when the user is one (CANOPY_CACHE_SHARED=group)
};

/// CANOPY_CACHE_SHARED: unset or empty is Private, `group` is Group; any other
/// value throws canopy::Error naming the variable, the value and what is allowed.
CacheSharing cache_sharing_from_environment();

/// Where Canopy keeps files between runs: `option` when not empty, else
/// $CANOPY_CACHE_DIR, else ~/.cache/canopy; "off" (no files kept) when none
/// of them is set.
std::string cache_directory(const std::string& option = {});

/// What reading a checked file found.
enum class FileState : std::uint8_t {
  Whole,      ///< the payload, as written
  Missing,    ///< no such file (or directory)
  Damaged,    ///< torn, truncated, changed, or not a checked file at all
  Untrusted,  ///< the file or its directory could have been written by someone else
};

struct CheckedRead {
  FileState state = FileState::Missing;
  std::string payload;  ///< set when state is Whole
  std::string why;      ///< for Damaged and Untrusted: what was wrong
};

/// Reads the checked file at `path`. Never throws.
CheckedRead read_checked_file(const std::string& path, CacheSharing sharing);

struct CheckedWrite {
  bool written = false;
  bool untrusted = false;  ///< refused because the directory is not trusted (already warned about)
  std::string why;         ///< when not written: the reason, naming the path
};

/// Writes `payload` to `path` atomically, creating its directory (and missing
/// parents) when needed. Never throws.
CheckedWrite write_checked_file(const std::string& path, std::string_view payload, CacheSharing sharing);

/// An exclusive advisory lock (flock) on the file `path` in a cache
/// directory, for work that several processes of a node would otherwise all
/// do at once (calibrating the machine model). The lock file is created like
/// a checked file's directory and mode, never through a symbolic link, and
/// kept (empty) after use. flock locks an open file, so Runtimes of one
/// process wait for each other too. Where the directory is not trusted
/// (warned about once, as for checked files) or the file cannot be made, the
/// lock is not held and the work goes on unlocked: a lock only saves doing
/// the work twice.
class CacheLock {
 public:
  /// Waits for the lock; `held()` says whether it was taken.
  CacheLock(const std::string& path, CacheSharing sharing);
  ~CacheLock();  ///< releases it
  CacheLock(const CacheLock&) = delete;
  CacheLock& operator=(const CacheLock&) = delete;
  bool held() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

/// Why `directory` is not trusted, or empty when it is (or does not exist).
std::string distrust_of_directory(const std::string& directory, CacheSharing sharing);

/// The bytes write_checked_file stores for `payload`, and the payload back
/// from such bytes (nothing when they are not whole). For tests and tools.
std::string frame_checked(std::string_view payload);
std::optional<std::string_view> unframe_checked(std::string_view file);

}  // namespace canopy::jit
