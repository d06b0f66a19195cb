// DiskCache: compiled kernels kept on disk between runs, so that a program's
// second run skips compilation. One file per entry, named by its key, in the
// format (all integers little-endian):
//
//   magic "CNPYKC" | format version byte | reserved byte | key length (u32) | key
//   | payload length (u64) | payload | checksum (u64, hash64 of everything before it)
//
// The full key is stored so that two keys that map to one file name are a
// miss, not a wrong hit. A file is written to a unique temporary file in the
// same directory and renamed over the final name, so readers see either no
// entry or a whole one, even when several processes publish the same entry at
// once. A damaged or truncated file is detected by the checksum, counted, and
// replaced by the next put. A cache that cannot be used (directory not
// creatable or not writable, disk full) never throws: it warns once on stderr
// and the program goes on compiling every kernel.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

namespace canopy::jit {

class DiskCache {
 public:
  /// What the cache has done so far.
  struct Counters {
    std::uint64_t hits = 0;            ///< get() found a valid entry
    std::uint64_t misses = 0;          ///< get() found none (or a corrupt one, which also counts below)
    std::uint64_t corrupt = 0;         ///< entries found damaged or truncated
    std::uint64_t write_failures = 0;  ///< put() calls that could not publish their entry
  };

  /// A cache in `directory`, created on the first put when missing.
  explicit DiskCache(std::string directory);

  /// The payload stored under `key`, or nothing when there is no valid entry.
  std::optional<std::string> get(const std::string& key);
  /// Stores `payload` under `key`, replacing any entry there. Never throws; a
  /// failure is counted and reported once on stderr.
  void put(const std::string& key, std::string_view payload);

  const std::string& directory() const { return directory_; }
  /// The path of the file that holds `key`'s entry (whether or not it exists).
  std::string path_of(const std::string& key) const;
  Counters counters() const;
  /// Why the cache is not usable, or empty while it is (as far as it knows).
  std::string problem() const;

 private:
  void report_failure(const std::string& reason);

  std::string directory_;
  std::atomic<std::uint64_t> hits_{0}, misses_{0}, corrupt_{0}, write_failures_{0};
  mutable std::mutex problem_mutex_;
  std::string problem_;  ///< the first failure's reason; guarded by problem_mutex_
};

}  // namespace canopy::jit
