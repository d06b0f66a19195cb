// What every canopy-bench command shares: its command line, the rows of
// results it prints as a table and writes as JSON.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

namespace canopy::bench {

/// A command line: flags with values (--size 100) and switches (--compare).
class Args {
 public:
  /// `switches` lists the flags that take no value; any other --flag takes one.
  Args(int argc, char** argv, std::vector<std::string> switches);
  bool has(const std::string& flag) const;
  std::string get(const std::string& flag, const std::string& fallback) const;
  /// A positive whole number; exits with a message when the value is not one.
  std::int64_t count(const std::string& flag, std::int64_t fallback) const;
  /// Words that are not flags, in order.
  const std::vector<std::string>& words() const { return words_; }

 private:
  std::map<std::string, std::string> values_;
  std::vector<std::string> words_;
};

/// Prints "canopy-bench: MESSAGE" and exits with status 2.
[[noreturn]] void fail(const std::string& message);

/// Runs `start` (which creates a Runtime) with the calling thread kept off
/// the first core it may use, then gives the thread its cores back. Threads
/// started meanwhile keep the narrower set: an OpenCL device that computes
/// on the host's cores (PoCL) starts its threads when the runtime discovers
/// it, so they stay off the core of the first one-core CPU leaf. Left free,
/// the scheduler sometimes woke PoCL's thread on that core, behind the leaf's
/// pinned worker, and the device's piece of a split waited for the CPU's.
/// With one usable core it just runs `start`.
template <class Start>
auto with_first_core_left_free(Start&& start);

/// One result: ordered fields, each a string or a number.
struct Row {
  std::vector<std::pair<std::string, std::variant<std::string, double>>> fields;
  Row& set(const std::string& key, std::string value);
  Row& set(const std::string& key, const char* value) { return set(key, std::string(value)); }
  Row& set(const std::string& key, double value);
};

/// Writes {"results":[rows...]} (plus extra top-level numbers) to `path`; exits on failure.
void write_json(const std::string& path, const std::vector<Row>& rows,
                const std::vector<std::pair<std::string, double>>& extra = {});

namespace detail {
/// Narrows the calling thread's cores to all but the first; false (nothing
/// changed) when it may use only one. `saved` receives the previous set.
bool leave_first_core(std::vector<unsigned char>& saved);
/// Restores what leave_first_core() saved.
void restore_cores(const std::vector<unsigned char>& saved);
}  // namespace detail

template <class Start>
auto with_first_core_left_free(Start&& start) {
  std::vector<unsigned char> saved;
  const bool narrowed = detail::leave_first_core(saved);
  struct Restore {
    bool active;
    const std::vector<unsigned char>& saved;
    ~Restore() {
      if (active) detail::restore_cores(saved);
    }
  } restore{narrowed, saved};
  return start();
}

}  // namespace canopy::bench
