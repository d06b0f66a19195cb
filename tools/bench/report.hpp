// What every canopy-bench command shares: its command line, the rows of
// results it prints as a table and writes as JSON, and a Runtime started off
// the first core (for the benches that pair a CPU leaf with PoCL).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace canopy {
class Hierarchy;
class Runtime;
}  // namespace canopy

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

/// Waits until the threads of the run before have gone idle, so that a timed
/// run starts on quiet cores: after a parallel region libgomp's threads spin
/// for some milliseconds before they sleep (GOMP_SPINCOUNT), and a Canopy
/// pool polls briefly too. Called before each timed run of a side-by-side
/// bench, it keeps one side's spinning from being charged to the other.
void settle();

/// Prints "canopy-bench: MESSAGE" and exits with status 2.
[[noreturn]] void fail(const std::string& message);

/// A Runtime started with the calling thread kept off the first core it may
/// use (its cores are given back before this returns). Threads started
/// meanwhile keep the narrower set: an OpenCL device that computes on the
/// host's cores (PoCL) starts its threads when the runtime discovers it, so
/// they stay off the core of the first one-core CPU leaf. Left free, the
/// scheduler sometimes woke PoCL's thread on that core, behind the leaf's
/// pinned worker, and the device's piece of a split waited for the CPU's.
/// With one usable core it is a plain Runtime.
Runtime runtime_off_first_core();

/// The two leaves a bench of a CPU leaf beside a device runs on: `wanted`
/// ("A,B", from --leaves) when given, else the tree's first CPU leaf and its
/// first device leaf; fails naming `command` when there are none.
std::pair<std::string, std::string> pick_cpu_and_device(const Hierarchy& tree, const std::string& wanted,
                                                        const std::string& command);
/// Removes every executing leaf of `rt`'s tree but the two in `keep`.
void keep_only_leaves(Runtime& rt, const std::pair<std::string, std::string>& keep);
/// The deepest location at or above both leaves: where the bench's regions
/// run, so that percentage:[p,100-p] gives p to the first leaf's side.
std::string common_parent(const Hierarchy& tree, const std::pair<std::string, std::string>& leaves);

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

}  // namespace canopy::bench
