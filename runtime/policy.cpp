#include "policy.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <optional>
#include <unordered_set>

#include <canopy/ir/error.hpp>
#include <canopy/ir/settings.hpp>

namespace canopy {

namespace {

constexpr std::string_view kPolicyNames = "static, flatten, percentage, range, any, runtime or adaptive";
// The largest count a double holds exactly (and with it every smaller whole number).
constexpr double kLargestCount = 9007199254740992.0;  // 2^53
constexpr double kPercentageTolerance = 0.01;
constexpr std::size_t kQuotedLength = 80;

bool takes_values(Policy::Kind kind) { return kind == Policy::Kind::Percentage || kind == Policy::Kind::Range; }

std::optional<Policy::Kind> kind_named(std::string_view name) {
  for (Policy::Kind kind : {Policy::Kind::Static, Policy::Kind::Flatten, Policy::Kind::Percentage, Policy::Kind::Range,
                            Policy::Kind::Any, Policy::Kind::Runtime, Policy::Kind::Adaptive}) {
    if (name_of(kind) == name) return kind;
  }
  return std::nullopt;
}

// `text` in double quotes, with control and non-ASCII bytes escaped, cut after kQuotedLength bytes.
std::string quoted(std::string_view text) {
  std::string out = "\"";
  for (std::size_t index = 0; index < text.size() && index < kQuotedLength; ++index) {
    const auto byte = static_cast<unsigned char>(text[index]);
    if (byte == '"' || byte == '\\') {
      out += '\\';
      out += static_cast<char>(byte);
    } else if (byte < 0x20 || byte >= 0x7f) {
      out += fmt::format("\\x{:02x}", byte);
    } else {
      out += static_cast<char>(byte);
    }
  }
  if (text.size() > kQuotedLength) out += "...";
  return out + "\"";
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
bool is_word_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}
bool is_number_char(char c) { return is_word_char(c) || c == '.' || c == '+' || c == '-'; }

// Reads one policy text left to right; every failure names the position and what was expected.
class PolicyReader {
 public:
  explicit PolicyReader(std::string_view text) : text_(text) {}

  Policy read() {
    Policy policy;
    skip_space();
    const std::size_t name_at = position_;
    const std::string_view name = take_while(is_word_char);
    const std::optional<Policy::Kind> kind = kind_named(name);
    if (!kind) expected(name_at, fmt::format("a policy name ({})", kPolicyNames));
    policy.kind = *kind;
    skip_space();
    if (takes_values(policy.kind)) {
      if (!take(':')) {
        expected(position_,
                 fmt::format("':' and a list such as {}",
                             policy.kind == Policy::Kind::Range ? "range:[100,200,700]" : "percentage:[25,75]"));
      }
      policy.values = read_list(policy.kind);
      skip_space();
    }
    if (position_ < text_.size()) {
      expected(position_, takes_values(policy.kind)
                              ? std::string("the end of the text after ']'")
                              : fmt::format("the end of the text ('{}' takes no list)", name_of(policy.kind)));
    }
    return policy;
  }

 private:
  std::vector<double> read_list(Policy::Kind kind) {
    skip_space();
    const std::size_t list_at = position_;
    if (!take('[')) expected(position_, "'['");
    const bool counts = kind == Policy::Kind::Range;
    std::vector<double> values;
    while (true) {
      skip_space();
      values.push_back(read_number(counts));
      skip_space();
      if (take(']')) break;
      if (!take(',')) expected(position_, "',' or ']'");
    }
    if (!counts) {
      double sum = 0;
      for (double value : values) sum += value;
      if (!(std::abs(sum - 100.0) <= kPercentageTolerance)) {
        fail(list_at, fmt::format("the percentages sum to {:.6g}, not 100; make them sum to 100 (within {})", sum,
                                  kPercentageTolerance));
      }
    }
    return values;
  }

  double read_number(bool counts) {
    const std::size_t number_at = position_;
    const std::string_view token = take_while(is_number_char);
    const char* what = counts ? "a number of iterations" : "a percentage";
    if (token.empty()) expected(number_at, what);
    double value = 0;
    const auto [stop, error] = std::from_chars(token.data(), token.data() + token.size(), value);
    if (stop != token.data() + token.size()) expected(number_at, what);
    if (error != std::errc()) expected(number_at, fmt::format("{} that a double can hold", what));
    if (!std::isfinite(value)) expected(number_at, fmt::format("a finite number ({})", what));
    if (value < 0) expected(number_at, fmt::format("{} of 0 or more", what));
    if (counts && value != std::floor(value)) expected(number_at, "a whole number of iterations");
    if (counts && value > kLargestCount) expected(number_at, "at most 9007199254740992 (2^53) iterations");
    return value + 0.0;  // -0 becomes 0
  }

  std::string_view take_while(bool (*accept)(char)) {
    const std::size_t start = position_;
    while (position_ < text_.size() && accept(text_[position_])) ++position_;
    return text_.substr(start, position_ - start);
  }

  bool take(char c) {
    if (position_ >= text_.size() || text_[position_] != c) return false;
    ++position_;
    return true;
  }

  void skip_space() {
    while (position_ < text_.size() && is_space(text_[position_])) ++position_;
  }

  [[noreturn]] void expected(std::size_t at, std::string_view what) const {
    fail(at, fmt::format("expected {}, found {}", what, describe_found(at)));
  }

  std::string describe_found(std::size_t at) const {
    if (at >= text_.size()) return "the end of the text";
    std::size_t stop = at;
    while (stop < text_.size() && is_number_char(text_[stop])) ++stop;
    if (stop == at) stop = at + 1;
    std::string shown = quoted(text_.substr(at, stop - at));
    shown.front() = '\'';
    shown.back() = '\'';
    return shown;
  }

  [[noreturn]] void fail(std::size_t at, std::string_view problem) const {
    throw Error(fmt::format("invalid policy {} at character {}: {}", quoted(text_), at + 1, problem));
  }

  std::string_view text_;
  std::size_t position_ = 0;
};

// The checks parse_policy() makes on the numbers, for policies built by hand.
void check_values(const Policy& policy) {
  if (name_of(policy.kind) == "unknown") {
    throw Error(fmt::format("policy kind {} is not one of Policy::Kind's values", static_cast<int>(policy.kind)));
  }
  if (policy.kind == Policy::Kind::Runtime) {
    throw Error(
        "policy 'runtime' reaches split() unresolved; resolve it from CANOPY_POLICY first "
        "(resolve_runtime_policy)");
  }
  if (!takes_values(policy.kind)) {
    if (!policy.values.empty()) {
      throw Error(fmt::format("policy '{}' takes no numbers but was given {}; leave Policy::values empty",
                              name_of(policy.kind), policy.values.size()));
    }
    return;
  }
  const bool counts = policy.kind == Policy::Kind::Range;
  if (policy.values.empty()) {
    throw Error(fmt::format("policy '{}' has no numbers; give one per child, such as {}", name_of(policy.kind),
                            counts ? "range:[100,200,700]" : "percentage:[25,75]"));
  }
  double sum = 0;
  for (double value : policy.values) {
    const bool whole = value == std::floor(value) && value <= kLargestCount;
    if (!std::isfinite(value) || value < 0 || (counts && !whole)) {
      throw Error(fmt::format("policy {} has the number {}; {} must be {}", policy.text(), value,
                              counts ? "range counts" : "percentages",
                              counts ? "whole numbers from 0 to 2^53" : "finite and 0 or more"));
    }
    sum += value;
  }
  if (!counts && !(std::abs(sum - 100.0) <= kPercentageTolerance)) {
    throw Error(fmt::format("policy {}: the percentages sum to {:.6g}, not 100; make them sum to 100 (within {})",
                            policy.text(), sum, kPercentageTolerance));
  }
}

// The part of a subtree that takes part in a split: its executing leaves and every location on their paths up
// to the top, found in one walk (O(size of the subtree)) so that deep trees split in linear time.
class SharingTree {
 public:
  explicit SharingTree(const Location& top) {
    std::vector<const Location*> pending{&top};
    while (!pending.empty()) {
      const Location* location = pending.back();
      pending.pop_back();
      if (location->executes()) {
        leaves_.push_back(location);
        continue;
      }
      const auto& children = location->children();
      for (auto child = children.rbegin(); child != children.rend(); ++child) pending.push_back(*child);
    }
    for (const Location* leaf : leaves_) {
      for (const Location* step = leaf; sharing_.insert(step).second && step != &top;) step = step->parent();
    }
  }

  /// The executing locations at or below the top, in tree order (nothing below an executing one).
  const std::vector<const Location*>& leaves() const { return leaves_; }

  /// The children of `location` (at or below the top) that have an executing leaf at or below them.
  std::vector<const Location*> sharing_children(const Location& location) const {
    std::vector<const Location*> sharing;
    for (const Location* child : location.children()) {
      if (sharing_.count(child) != 0) sharing.push_back(child);
    }
    return sharing;
  }

 private:
  std::vector<const Location*> leaves_;
  std::unordered_set<const Location*> sharing_;
};

// Appends the pieces, skipping empty ones and merging one that continues the last piece of the same leaf.
class PieceList {
 public:
  void add(const Location* leaf, std::int64_t begin, std::int64_t length) {
    if (length == 0) return;
    if (!pieces_.empty() && pieces_.back().leaf == leaf && pieces_.back().end == begin) {
      pieces_.back().end += length;
      return;
    }
    pieces_.push_back(Piece{leaf, begin, begin + length});
  }
  std::vector<Piece> take() { return std::move(pieces_); }

 private:
  std::vector<Piece> pieces_;
};

// [begin, begin+length) evenly over `parts`: part i's offset and length, remainders to the first parts.
struct EvenShare {
  std::int64_t offset;
  std::int64_t length;
};
EvenShare even_share(std::int64_t length, std::size_t parts, std::size_t index) {
  const auto count = static_cast<std::int64_t>(parts);
  const auto position = static_cast<std::int64_t>(index);
  const std::int64_t base = length / count;
  const std::int64_t extra = length % count;
  return EvenShare{base * position + std::min(position, extra), base + (position < extra ? 1 : 0)};
}

// Static below `top`: even among the sharing children at every level. Iterative, so a deep tree cannot
// exhaust the stack.
void split_static(const SharingTree& tree, const Location& top, std::int64_t begin, std::int64_t length,
                  PieceList& pieces) {
  struct Pending {
    const Location* location;
    std::int64_t begin;
    std::int64_t length;
  };
  std::vector<Pending> pending{{&top, begin, length}};
  while (!pending.empty()) {
    const Pending next = pending.back();
    pending.pop_back();
    if (next.length == 0) continue;
    if (next.location->executes()) {
      pieces.add(next.location, next.begin, next.length);
      continue;
    }
    const std::vector<const Location*> children = tree.sharing_children(*next.location);
    for (std::size_t index = children.size(); index-- > 0;) {  // reversed: the first child comes off first
      const EvenShare share = even_share(next.length, children.size(), index);
      pending.push_back(Pending{children[index], next.begin + share.offset, share.length});
    }
  }
}

void split_flatten(const SharingTree& tree, std::int64_t begin, std::int64_t length, PieceList& pieces) {
  const std::vector<const Location*>& leaves = tree.leaves();
  for (std::size_t index = 0; index < leaves.size(); ++index) {
    const EvenShare share = even_share(length, leaves.size(), index);
    pieces.add(leaves[index], begin + share.offset, share.length);
  }
}

// The chunk boundaries (offsets from begin, first 0, last `length`) for Percentage and Range.
std::vector<std::int64_t> chunk_boundaries(const Policy& policy, std::int64_t length) {
  std::vector<std::int64_t> boundaries{0};
  if (policy.kind == Policy::Kind::Range) {
    std::int64_t offset = 0;
    for (double count : policy.values) {
      offset += static_cast<std::int64_t>(count);  // the caller checked that the counts sum to length
      boundaries.push_back(offset);
    }
    return boundaries;
  }
  double total = 0;
  for (double value : policy.values) total += value;
  double cumulative = 0;
  for (std::size_t index = 0; index < policy.values.size(); ++index) {
    cumulative += policy.values[index];
    std::int64_t boundary = length;
    if (index + 1 < policy.values.size()) {
      const long double exact = static_cast<long double>(length) * cumulative / total;
      boundary = static_cast<std::int64_t>(std::min<long double>(std::roundl(exact), length));
    }
    boundaries.push_back(std::max(boundary, boundaries.back()));
  }
  return boundaries;
}

// Range: the counts must sum to the range's length.
void check_range_sum(const Policy& policy, std::int64_t length) {
  unsigned __int128 sum = 0;
  for (double count : policy.values) sum += static_cast<std::uint64_t>(count);
  if (sum == static_cast<unsigned __int128>(length)) return;
  const std::string listed = sum > std::numeric_limits<std::uint64_t>::max()
                                 ? std::string("more than 2^64")
                                 : fmt::format("{}", static_cast<std::uint64_t>(sum));
  throw Error(fmt::format(
      "policy {} lists {} iterations but the region's range has {}; make the numbers sum to the range's length",
      policy.text(), listed, length));
}

void split_by_numbers(const SharingTree& tree, const Location& region_at, const Policy& policy, std::int64_t begin,
                      std::int64_t length, PieceList& pieces) {
  // Several numbers at a location with one child that shares (node over
  // numa0, the default location): they are for the first location below
  // that splits, when they are enough for its children, as the program
  // means percentage:[30,70] over two leaves. (Else they fold over the one
  // child, as before.)
  const Location* at = &region_at;
  std::vector<const Location*> children = tree.sharing_children(*at);
  while (policy.values.size() > 1 && children.size() == 1) {
    std::vector<const Location*> below = tree.sharing_children(*children.front());
    if (below.empty() || below.size() > policy.values.size()) break;
    at = children.front();
    children = std::move(below);
  }
  if (policy.values.size() < children.size()) {
    throw Error(fmt::format(
        "policy {} gives {} number{} but location '{}' has {} children with executing leaves below them; "
        "give at least one number per child (more fold over them in turn)",
        policy.text(), policy.values.size(), policy.values.size() == 1 ? "" : "s", at->name(), children.size()));
  }
  const std::vector<std::int64_t> boundaries = chunk_boundaries(policy, length);
  for (std::size_t chunk = 0; chunk + 1 < boundaries.size(); ++chunk) {
    const Location& child = *children[chunk % children.size()];
    split_static(tree, child, begin + boundaries[chunk], boundaries[chunk + 1] - boundaries[chunk], pieces);
  }
}

// `value` with NaN as +infinity, so that it compares as the largest.
double nan_as_largest(double value) { return std::isnan(value) ? std::numeric_limits<double>::infinity() : value; }

// Any: among the idle leaves the one predicted fastest, else the least loaded (NaN as the most) and among
// those the one predicted fastest; remaining ties to the first in tree order.
const Location* choose_any(const SharingTree& tree, const SplitContext& context) {
  std::vector<const Location*> leaves = tree.leaves();
  if (context.can_run) {
    std::vector<const Location*> able;
    for (const Location* leaf : leaves)
      if (context.can_run(*leaf)) able.push_back(leaf);
    if (!able.empty()) leaves = std::move(able);
  }
  auto predicted = [&](const Location& leaf) {
    return context.predicted_seconds ? nan_as_largest(context.predicted_seconds(leaf)) : 0.0;
  };
  const Location* best = nullptr;
  double best_time = 0;
  if (context.idle) {
    for (const Location* leaf : leaves) {
      if (!context.idle(*leaf)) continue;
      const double time = predicted(*leaf);
      if (!best || time < best_time) {
        best = leaf;
        best_time = time;
      }
    }
    if (best) return best;
  }
  if (!context.load) return leaves.front();
  double best_load = 0;
  for (const Location* leaf : leaves) {
    const double load = nan_as_largest(context.load(*leaf));
    if (best && load > best_load) continue;
    const double time = predicted(*leaf);
    if (!best || load < best_load || time < best_time) {
      best = leaf;
      best_load = load;
      best_time = time;
    }
  }
  return best;
}

// Adaptive: every executing leaf takes the fraction the context gives it, boundaries rounded cumulatively;
// Static when the fractions are not usable.
void split_adaptive(const SharingTree& tree, const Location& at, const SplitContext& context, std::int64_t begin,
                    std::int64_t length, PieceList& pieces) {
  const std::vector<const Location*>& leaves = tree.leaves();
  std::vector<double> shares;
  if (context.shares) shares = context.shares(leaves);
  double total = 0;
  bool usable = shares.size() == leaves.size();
  for (double share : shares) {
    usable = usable && std::isfinite(share) && share >= 0;
    total += share;
  }
  if (!usable || !(total > 0) || !std::isfinite(total)) {
    split_static(tree, at, begin, length, pieces);
    return;
  }
  const std::vector<std::int64_t> bounds = share_boundaries(shares, length);
  for (std::size_t index = 0; index < leaves.size(); ++index)
    pieces.add(leaves[index], begin + bounds[index], bounds[index + 1] - bounds[index]);
}

}  // namespace

std::vector<std::int64_t> share_boundaries(const std::vector<double>& shares, std::int64_t length) {
  double total = 0;
  for (double share : shares) total += share;
  std::vector<std::int64_t> bounds{0};
  double cumulative = 0;
  for (std::size_t index = 0; index < shares.size(); ++index) {
    cumulative += shares[index];
    std::int64_t boundary = length;
    if (index + 1 < shares.size()) {
      const long double exact = static_cast<long double>(length) * cumulative / total;
      boundary = std::clamp<std::int64_t>(static_cast<std::int64_t>(std::roundl(exact)), bounds.back(), length);
    }
    bounds.push_back(boundary);
  }
  return bounds;
}

std::string_view name_of(Policy::Kind kind) {
  switch (kind) {
    case Policy::Kind::Static: return "static";
    case Policy::Kind::Flatten: return "flatten";
    case Policy::Kind::Percentage: return "percentage";
    case Policy::Kind::Range: return "range";
    case Policy::Kind::Any: return "any";
    case Policy::Kind::Runtime: return "runtime";
    case Policy::Kind::Adaptive: return "adaptive";
  }
  return "unknown";
}

std::string Policy::text() const {
  std::string out(name_of(kind));
  if (!takes_values(kind) && values.empty()) return out;
  out += ":[";
  for (std::size_t index = 0; index < values.size(); ++index) {
    if (index > 0) out += ',';
    out += fmt::format("{}", values[index]);
  }
  return out + "]";
}

Policy parse_policy(std::string_view text) { return PolicyReader(text).read(); }

std::optional<Policy> runtime_policy_of(const std::string& text, const std::string& variable) {
  if (text.empty()) return std::nullopt;
  Policy runtime;
  runtime.kind = Policy::Kind::Runtime;
  try {
    return resolve_runtime_policy(runtime, text.c_str());
  } catch (const Error& e) {
    bad_setting(variable, text,
                "static, flatten, percentage:[...], range:[...], any or adaptive (" + std::string(e.what()) + ")");
  }
}

Policy resolve_runtime_policy(const Policy& policy, const char* environment_value) {
  if (policy.kind != Policy::Kind::Runtime) return policy;
  if (environment_value == nullptr || *environment_value == '\0') {
    throw Error(fmt::format(
        "policy 'runtime' takes the policy from CANOPY_POLICY (or GECKO_POLICY) as it was when the Runtime "
        "was made, and neither was set then; set CANOPY_POLICY to one of static, flatten, percentage:[...], "
        "range:[...], any or adaptive before making the Runtime"));
  }
  Policy resolved;
  try {
    resolved = parse_policy(environment_value);
  } catch (const Error& error) {
    throw Error(fmt::format("CANOPY_POLICY: {}", error.what()));
  }
  if (resolved.kind == Policy::Kind::Runtime) {
    throw Error(
        "CANOPY_POLICY is 'runtime', which names itself; set it to one of static, flatten, percentage:[...], "
        "range:[...], any or adaptive");
  }
  return resolved;
}

std::vector<Piece> split(const Location& at, const Policy& policy, std::int64_t begin, std::int64_t end,
                         const SplitContext& context) {
  if (begin > end) {
    throw Error(fmt::format("the range [{},{}) ends before it begins; give a range with begin <= end", begin, end));
  }
  const __int128 wide_length = static_cast<__int128>(end) - begin;
  if (wide_length > std::numeric_limits<std::int64_t>::max()) {
    throw Error(
        fmt::format("the range [{},{}) holds more than 2^63-1 iterations; split it into smaller regions", begin, end));
  }
  const auto length = static_cast<std::int64_t>(wide_length);
  check_values(policy);
  const SharingTree tree(at);
  if (tree.leaves().empty()) {
    throw Error(fmt::format(
        "location '{}' has no executing leaf (a CPU or device location) at or below it, so no region can run "
        "there; add one below it or run the region at another location",
        at.name()));
  }

  PieceList pieces;
  if (at.executes()) {
    if (policy.kind == Policy::Kind::Range) check_range_sum(policy, length);
    pieces.add(&at, begin, length);
    return pieces.take();
  }
  switch (policy.kind) {
    case Policy::Kind::Static: split_static(tree, at, begin, length, pieces); break;
    case Policy::Kind::Adaptive: split_adaptive(tree, at, context, begin, length, pieces); break;
    case Policy::Kind::Flatten: split_flatten(tree, begin, length, pieces); break;
    case Policy::Kind::Percentage: split_by_numbers(tree, at, policy, begin, length, pieces); break;
    case Policy::Kind::Range:
      check_range_sum(policy, length);
      split_by_numbers(tree, at, policy, begin, length, pieces);
      break;
    case Policy::Kind::Any: pieces.add(choose_any(tree, context), begin, length); break;
    case Policy::Kind::Runtime: break;  // refused by check_values
  }
  return pieces.take();
}

std::ostream& operator<<(std::ostream& out, const Policy& policy) { return out << policy.text(); }

std::ostream& operator<<(std::ostream& out, const Piece& piece) {
  return out << (piece.leaf != nullptr ? piece.leaf->name() : std::string("(no leaf)")) << ":[" << piece.begin << ","
             << piece.end << ")";
}

}  // namespace canopy
