// Distribution policies (Gecko, section 4): how a region's index range is
// split over the executing leaves below the location it runs at.
//
// A policy is written as text ("static", "percentage:[25,75]", ...) in
// rt.region(...).policy(...), in CANOPY_POLICY and in dumps; parse_policy()
// reads it and Policy::text() writes it back. split() turns a policy, a
// location and a range into pieces, one or more per leaf that takes part.
//
// Guarantees, whatever the tree, range and policy: the pieces cover [begin,end)
// exactly once (no iteration dropped or repeated), come out ordered by begin,
// are never empty, and go only to executing locations (Location::executes())
// at or below the chosen one. Rounding happens on cumulative boundaries, so a
// rounding error never accumulates into a gap or an overlap.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/ostream.h>

#include "hierarchy.hpp"

namespace canopy {

/// A distribution policy as written by the user.
struct Policy {
  enum class Kind {
    /// Even among the children of the location that have executing leaves below
    /// them, and again at every level below (leaves nearer the root get more).
    Static,
    /// Even among all the executing leaves below the location.
    Flatten,
    /// `values` are percentages of the whole range (>= 0, summing to 100 within
    /// 0.01), one per child with executing leaves, in order; each child's share
    /// is split statically below it. More numbers than children fold: the range
    /// is cut into consecutive chunks of those sizes and chunk k goes to child
    /// k mod (number of children).
    Percentage,
    /// Like Percentage with whole iteration counts (>= 0, at most 2^53) that must
    /// sum to the range's length; folds the same way.
    Range,
    /// The whole range to one executing leaf: among the idle ones the one
    /// predicted fastest (SplitContext::predicted_seconds; without
    /// predictions the first idle one in tree order), else the least loaded;
    /// ties to the first in tree order.
    Any,
    /// Read from CANOPY_POLICY by the runtime (resolve_runtime_policy()); split()
    /// refuses it unresolved.
    Runtime,
    /// Over all executing leaves below the location, in tree order, by the
    /// fractions SplitContext::shares gives (the runtime's learned split, see
    /// adaptive.hpp); like Static when the context gives none.
    Adaptive,
  };

  Kind kind = Kind::Static;
  /// The numbers of Percentage and Range; empty for the other kinds.
  std::vector<double> values;

  /// The canonical text: "static", "flatten", "percentage:[5,5,22.5]",
  /// "range:[100,200,700]", "any", "runtime", "adaptive"; numbers in their
  /// shortest form that reads back to the same double. parse_policy(text())
  /// gives this policy back.
  std::string text() const;

  bool operator==(const Policy&) const = default;
};

/// "static", "flatten", ... (the word before any ':').
std::string_view name_of(Policy::Kind kind);

/// Reads a policy. Names are lower case; spaces, tabs and line breaks are
/// allowed around every word, ':', '[', ',', and ']'. Throws canopy::Error
/// naming the text (escaped and shortened when long), the 1-based character
/// position and what was expected there, for an empty text, an unknown name,
/// a list after a name that takes none or none after one that needs it, an
/// empty list, a number that does not parse or is negative, NaN or infinite,
/// a range count that is not a whole number or exceeds 2^53, percentages that
/// do not sum to 100 within 0.01, and anything after the closing ']'.
Policy parse_policy(std::string_view text);

/// `policy` itself unless it is Runtime; then the policy written in
/// `environment_value` (CANOPY_POLICY's value, null when the variable is not
/// set). Throws canopy::Error when the variable is unset or empty, does not
/// parse (the message names CANOPY_POLICY), or says "runtime" again.
Policy resolve_runtime_policy(const Policy& policy, const char* environment_value);

/// CANOPY_POLICY's value (`text`, as the settings read it; `variable` names
/// where it came from: CANOPY_POLICY, or Gecko's GECKO_POLICY) resolved once,
/// for every region of policy "runtime"; nothing when it is empty. Throws
/// canopy::Error in bad_setting's form, naming `variable`, when it is not a policy.
std::optional<Policy> runtime_policy_of(const std::string& text, const std::string& variable = "CANOPY_POLICY");

/// A share of a region's range: iterations [begin, end) of the outermost
/// dimension, run by `leaf`.
struct Piece {
  const Location* leaf = nullptr;  ///< an executing location
  std::int64_t begin = 0;
  std::int64_t end = 0;

  std::int64_t size() const { return end - begin; }
  bool operator==(const Piece&) const = default;
};

/// What split() may ask about the leaves, for the Any and Adaptive
/// policies. Any may be empty: no `idle` means no leaf is known to be idle;
/// no `load` means every leaf carries the same load; no `predicted_seconds`
/// means every leaf is as fast; no `shares` makes Adaptive split like Static.
struct SplitContext {
  /// True when the leaf has nothing queued or running.
  std::function<bool(const Location&)> idle;
  /// How busy the leaf is (queued work, in any unit that compares); a NaN
  /// counts as busier than any number.
  std::function<double(const Location&)> load;
  /// Any: how long the whole range would take on the leaf (smaller is
  /// faster); NaN counts as slower than any number.
  std::function<double(const Location&)> predicted_seconds;
  /// Any: false for a leaf that cannot run the region at all (its device
  /// memory cannot hold what one row touches); such leaves are chosen only
  /// when every leaf is one.
  std::function<bool(const Location&)> can_run;
  /// Adaptive: the fraction of the range each of `leaves` (every executing
  /// leaf below the location, in tree order) takes. Fractions that are not
  /// one per leaf, finite and >= 0 with a positive sum make the split Static.
  std::function<std::vector<double>(const std::vector<const Location*>& leaves)> shares;
};

/// Splits [begin, end) below `at` by `policy` (see Policy::Kind). Only
/// executing leaves take pieces: subtrees without one take no share, and when
/// `at` executes it takes the whole range. Pieces are ordered by begin, never
/// empty (an empty range gives no pieces; a leaf whose share rounds to nothing
/// gets no piece), and adjacent pieces of the same leaf are merged into one.
///
/// Throws canopy::Error for begin > end; a range longer than INT64_MAX; no
/// executing leaf at or below `at` (even for an empty range, since the
/// region could never run there); an unresolved Runtime policy; fewer
/// percentage or range numbers than children with executing leaves (naming the
/// location and both counts); range numbers that do not sum to the range's
/// length (naming both); and values that parse_policy() would refuse.
std::vector<Piece> split(const Location& at, const Policy& policy, std::int64_t begin, std::int64_t end,
                         const SplitContext& context = {});

/// Where the adaptive split puts the boundaries between leaves that take
/// `shares` (finite, >= 0, positive sum) of `length` rows: shares.size() + 1
/// values from 0 to length, each rounded from the cumulative share, so that
/// leaf i takes rows [bounds[i], bounds[i + 1]). Shares that are row counts
/// summing to `length` give exactly those rows.
std::vector<std::int64_t> share_boundaries(const std::vector<double>& shares, std::int64_t length);

/// Writes policy.text().
std::ostream& operator<<(std::ostream& out, const Policy& policy);
/// Writes "name:[begin,end)".
std::ostream& operator<<(std::ostream& out, const Piece& piece);

}  // namespace canopy

/// fmt::format("{}", policy) gives policy.text().
template <>
struct fmt::formatter<canopy::Policy> : fmt::ostream_formatter {};
/// fmt::format("{}", piece) gives "name:[begin,end)".
template <>
struct fmt::formatter<canopy::Piece> : fmt::ostream_formatter {};
