// DiskCache: compiled kernels kept on disk between runs, so that a program's
// second run skips compilation. One checked file per entry (checked_file.hpp:
// written whole or not at all, checksummed, and read only from a directory
// and a file no one else could have written), named by its key, holding
// (integers little-endian):
//
//   magic "CNPYKC" | format version byte | reserved byte | key length (u32) | key | payload
//
// The full key is stored so that two keys that map to one file name are a
// miss, not a wrong hit. A damaged or truncated file is counted and replaced
// by the next put. An entry in a directory or file that others could have
// written is never loaded: it is a miss, counted as untrusted, and
// checked_file warns once naming the directory. A cache that cannot be used
// (directory not creatable or not writable, disk full) never throws: it warns
// once on stderr and the program goes on compiling every kernel.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "checked_file.hpp"

namespace canopy::jit {

class DiskCache {
 public:
  /// What the cache has done so far.
  struct Counters {
    std::uint64_t hits = 0;            ///< get() found a valid entry
    std::uint64_t misses = 0;          ///< get() found none (or a corrupt one, which also counts below)
    std::uint64_t corrupt = 0;         ///< entries found damaged or truncated
    std::uint64_t write_failures = 0;  ///< put() calls that could not publish their entry
    std::uint64_t untrusted = 0;       ///< gets and puts refused: the directory or entry is not trusted
  };

  /// A cache in `directory`, created (0700) on the first put when missing;
  /// `sharing` says whom besides the user it trusts.
  explicit DiskCache(std::string directory, CacheSharing sharing = cache_sharing_from_environment());

  /// Removes the temporary files that writers left when they died before
  /// publishing them (a process killed while it stored an entry): named
  /// `<entry>.tmp.<pid>.<...>`, ten minutes old or more, of a process that
  /// no longer exists on this node. Returns how many went. Never throws.
  std::size_t remove_abandoned_temporaries();

  /// The payload stored under `key`, or nothing when there is no valid entry.
  std::optional<std::string> get(const std::string& key);
  /// Stores `payload` under `key`, replacing any entry there. Never throws; a
  /// failure is counted and reported once on stderr.
  void put(const std::string& key, std::string_view payload);

  /// Entries that the system's loader opens itself (a CPU kernel as a shared
  /// object): a checked file of their own, `<name>.so`, holding the payload
  /// from its first byte (the checksum line trails it, which ELF loaders
  /// ignore), so no copy is made to load it. get_loadable() checks it as
  /// get() does and returns its path, or nothing; put_loadable() stores it
  /// as put() does. A hit counts as one; a miss does not, since a caller
  /// that finds no loadable entry asks get() for the same key next.
  std::optional<std::string> get_loadable(const std::string& key);
  void put_loadable(const std::string& key, std::string_view payload);
  /// The path of `key`'s loadable entry (whether or not it exists).
  std::string loadable_path_of(const std::string& key) const;

  /// An entry in either form, for copying it to another cache (MPI ranks
  /// share what one of them compiled): get_stored() prefers the loadable
  /// form; put_stored() stores it in the form it came in.
  struct Stored {
    std::string payload;
    bool loadable = false;
  };
  std::optional<Stored> get_stored(const std::string& key);
  void put_stored(const std::string& key, const Stored& entry);

  const std::string& directory() const { return directory_; }
  /// The path of the file that holds `key`'s entry (whether or not it exists).
  std::string path_of(const std::string& key) const;
  Counters counters() const;
  /// Why the cache is not usable, or empty while it is (as far as it knows).
  std::string problem() const;

 private:
  /// The file of `key` in the directory, with `extension`.
  std::string file_of(const std::string& key, const char* extension) const;
  /// read_checked_file, counting damaged and untrusted files.
  CheckedRead read_checked(const std::string& path);
  /// write_checked_file, counting and reporting failures.
  void write(const std::string& path, std::string_view bytes);
  /// Keeps the first problem's reason; true when this was the first.
  bool remember_problem(const std::string& reason);

  std::string directory_;
  CacheSharing sharing_;
  std::atomic<std::uint64_t> hits_{0}, misses_{0}, corrupt_{0}, write_failures_{0}, untrusted_{0};
  mutable std::mutex problem_mutex_;
  std::string problem_;  ///< the first failure's reason; guarded by problem_mutex_
};

}  // namespace canopy::jit
