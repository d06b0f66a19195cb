// A test program of the differential runner: arrays with their initial
// contents, kernels (IR), and the steps a user's program would take with
// them (launches, host reads and writes, pauses, changes of the location
// tree, launches that must be refused). The generator (generate.hpp) makes
// them at random; the reference (reference.hpp) and Canopy (canopy_run.hpp)
// run them, and the two must agree.
//
// Programs have a text form (print/parse) so that a shrunk reproducer can be
// read, kept and replayed (`canopy-diff --replay FILE`):
//
//   seed 42
//   array a0 f64 60x40 values 8812
//   array a1 i64 60 permutation 3
//   array a2 i64 500 indices 9 below 60
//   kernel
//   kernel k0(out f64[2] a0, in i64[1] a1, val f64 s0) dims 2 {
//     a0[a1[index(0)], index(1)] = s0
//   }
//   end
//   launch k0 over 58x38 policy percentage 991 at - args a0 a1 f64:0x1p+0
//   hostwrite a0 seed 7 count 5
//   hostread a0
//   pause
//   tree drop 1
//   refused k0 over 61x38 args a0 a1 f64:0x1p+0
//   faulty k1 over 10 args a3 a0 i64:60
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include <canopy/ir/interpreter.hpp>
#include <canopy/ir/kernel.hpp>

namespace canopy::diff {

/// A small, portable pseudo-random generator (splitmix64): the same seed
/// gives the same program on every machine and library.
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next();
  /// Uniform in [0, n) (n > 0).
  std::uint64_t below(std::uint64_t n) { return next() % n; }
  /// Uniform in [lo, hi].
  std::int64_t between(std::int64_t lo, std::int64_t hi);
  /// True with probability `p`.
  bool chance(double p) { return static_cast<double>(next() >> 11) * 0x1p-53 < p; }
  /// Uniform in [0, 1).
  double unit() { return static_cast<double>(next() >> 11) * 0x1p-53; }

 private:
  std::uint64_t state_;
};

/// What an array holds, and what host writes put in it.
enum class Contents : std::uint8_t {
  Values,       ///< values of its type: small numbers mostly, edge cases sometimes
  Indices,      ///< i64 values in [0, bound): gathers, colliding atomic adds
  Permutation,  ///< i64, rank 1: a permutation of [0, extent): scatters
};

struct ArraySpec {
  std::string name;
  ir::ScalarType type = ir::ScalarType::F64;
  std::vector<std::int64_t> extents;
  Contents contents = Contents::Values;
  std::int64_t bound = 0;  ///< Indices: every value is below it
  std::uint64_t seed = 0;  ///< draws the initial contents

  std::int64_t size() const;
};

/// The initial contents of `array`, drawn from its seed.
ir::RefArray initial_contents(const ArraySpec& array);
/// What a host write with `seed` does to `count` elements of `contents`
/// (new values of the array's kind; a permutation swaps pairs and stays one).
void host_write(const ArraySpec& array, std::uint64_t seed, std::int64_t count, ir::RefArray& contents);
/// A random value of `type`: small numbers mostly, edge cases (0, -0, the
/// largest and smallest values, infinities, NaN) now and then.
ir::RefValue random_value(ir::ScalarType type, Rng& rng);

/// One argument of a launch: an array (its position in Program::arrays), a
/// scalar's value, or nothing for a reduction parameter.
struct NoArgument {};
using Argument = std::variant<int, ir::RefValue, NoArgument>;

enum class StepKind : std::uint8_t {
  Launch,     ///< a region of a kernel (waited for when the kernel reduces)
  HostWrite,  ///< the host changes some elements of an array (host())
  HostRead,   ///< the host reads an array (host_read()): compared
  Pause,      ///< waits for every region
  Tree,       ///< a change of the location tree
  Refused,    ///< a launch whose range reaches outside an array: must be refused
  Faulty,     ///< a launch that reads outside an array: checked mode reports it at the pause; skipped unchecked
};

enum class TreeChange : std::uint8_t {
  Drop,     ///< removes leaf `leaf` (modulo the leaves there are; never the last)
  Lift,     ///< moves leaf `leaf` from its memory to just below the root
  Restore,  ///< back to the placement's tree
  Add,      ///< a new CPU leaf on core `leaf` (modulo the cores) beside the first leaf
};

/// How a launch splits (the placement may choose for every launch).
enum class PolicyKind : std::uint8_t { Static, Flatten, Percentage, Range, Any, Adaptive };

struct Step {
  StepKind kind = StepKind::Launch;
  // Launch, Refused and Faulty:
  int kernel = -1;
  std::vector<std::int64_t> range;
  std::vector<Argument> args;
  PolicyKind policy = PolicyKind::Static;
  std::uint64_t policy_seed = 0;  ///< draws percentage and range numbers
  int at_leaf = -1;               ///< runs at leaf `at_leaf` (modulo the leaves); -1: where its arrays are
  // HostWrite and HostRead:
  int array = -1;
  std::uint64_t seed = 0;
  std::int64_t count = 0;
  // Tree:
  TreeChange change = TreeChange::Restore;
  int leaf = 0;
};

struct Program {
  std::uint64_t seed = 0;
  std::vector<ArraySpec> arrays;
  std::vector<std::shared_ptr<const ir::Kernel>> kernels;
  std::vector<Step> steps;
};

/// The text form (see the file comment).
std::string print(const Program& program);
/// Reads the text form back; throws canopy::Error naming the line at fault.
Program parse_program(const std::string& text);

std::string_view name_of(PolicyKind policy);
std::string_view name_of(TreeChange change);
/// "f64:0x1.8p+1", "i32:-5", "bool:1": exact, and read back by parse_program.
std::string value_text(const ir::RefValue& value);
/// "58x38".
std::string range_text(const std::vector<std::int64_t>& range);

}  // namespace canopy::diff
