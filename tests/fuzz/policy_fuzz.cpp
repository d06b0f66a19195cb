// Fuzz target "policy": distribution policy strings (runtime/policy.hpp).
//
// Properties checked on every input:
//  - parse_policy() returns a policy or throws canopy::Error naming the text
//    ("invalid policy ..."), nothing else;
//  - a parsed policy's text() parses back to the same policy, and reading the
//    input as CANOPY_POLICY's value (resolve_runtime_policy) agrees with
//    parse_policy();
//  - split() of a parsed policy over a small tree, at several locations and
//    ranges, gives pieces that cover the range exactly once (every iteration
//    in one piece, in order, none empty, adjacent pieces on different leaves),
//    each on an executing leaf at or below the location; the policies that
//    need no numbers (static, flatten, any, adaptive) always split.
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <fmt/format.h>

#include <canopy/ir/error.hpp>
#include <canopy/runtime/policy.hpp>

#include "fuzz_support.hpp"

namespace {

using canopy::fuzz::check;
using namespace canopy;

// node
//   numa0 (host memory): cpu0 cpu1 opencl0
//   numa1 (host memory): cpu2, gpus (virtual): cuda0 cuda1
//   empty (virtual)
//   disk (file memory)
const Hierarchy& small_tree() {
  static const Hierarchy tree = [] {
    Hierarchy built;
    built.add("node", LocationKind::Virtual, {}, "");
    built.add("numa0", LocationKind::HostMemory, {}, "node");
    built.add("cpu0", LocationKind::Cpu, {}, "numa0");
    built.add("cpu1", LocationKind::Cpu, {}, "numa0");
    built.add("opencl0", LocationKind::OpenCL, {}, "numa0");
    built.add("numa1", LocationKind::HostMemory, {}, "node");
    built.add("cpu2", LocationKind::Cpu, {}, "numa1");
    built.add("gpus", LocationKind::Virtual, {}, "numa1");
    built.add("cuda0", LocationKind::Cuda, {}, "gpus");
    built.add("cuda1", LocationKind::Cuda, {}, "gpus");
    built.add("empty", LocationKind::Virtual, {}, "node");
    built.add("disk", LocationKind::FileMemory, {}, "node");
    return built;
  }();
  return tree;
}

struct Range {
  std::int64_t begin;
  std::int64_t end;
};

constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();

// Ranges of every shape: empty, tiny, uneven, far from zero, the longest
// that fits, and ones split() must refuse (reversed, longer than INT64_MAX).
constexpr Range kRanges[] = {{0, 0},     {0, 1},          {0, 5},           {-7, 93},        {3, 1000003},
                             {kMin, kMin + 11}, {kMax - 9, kMax}, {kMin / 2, kMax / 2}, {0, kMax}, {kMin, kMax},
                             {10, 4}};

// A cheap hash of the input: which leaves the Any policy sees as idle and how loaded.
std::uint64_t hash_of(std::string_view text) {
  std::uint64_t hash = 1469598103934665603ull;
  for (char c : text) hash = (hash ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return hash;
}

std::string describe(const std::vector<Piece>& pieces) {
  std::string out;
  for (const Piece& piece : pieces) out += fmt::format("{} ", piece);
  return out;
}

void check_split(const Policy& policy, const Location& at, Range range, const SplitContext& context) {
  const Hierarchy& tree = small_tree();
  const bool has_leaves = !tree.leaves(at).empty();
  const bool range_ok = range.begin <= range.end && !(range.begin < 0 && range.end > kMax + range.begin);
  const bool needs_no_numbers = policy.kind == Policy::Kind::Static || policy.kind == Policy::Kind::Flatten ||
                                policy.kind == Policy::Kind::Any || policy.kind == Policy::Kind::Adaptive;
  const std::string what = fmt::format("split({}, {}, {}, {})", policy, at.name(), range.begin, range.end);
  std::vector<Piece> pieces;
  try {
    pieces = split(at, policy, range.begin, range.end, context);
  } catch (const Error& error) {
    check(!(needs_no_numbers && has_leaves && range_ok), what + " refused a range it must split", error.what());
    return;
  }
  check(has_leaves && range_ok, what + " split a range it must refuse", describe(pieces));
  if (range.begin == range.end) {
    check(pieces.empty(), what + " gave pieces for an empty range", describe(pieces));
    return;
  }
  check(!pieces.empty(), what + " gave no pieces");
  std::int64_t next = range.begin;
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    const Piece& piece = pieces[i];
    check(piece.begin == next, what + " left a gap or an overlap", describe(pieces));
    check(piece.begin < piece.end, what + " gave an empty or reversed piece", describe(pieces));
    check(piece.leaf != nullptr && tree.find(piece.leaf->name()) == piece.leaf && piece.leaf->executes() &&
              Hierarchy::is_above_or_same(at, *piece.leaf),
          what + " gave a piece to a location that does not execute below it", describe(pieces));
    check(i == 0 || pieces[i - 1].leaf != piece.leaf, what + " did not merge adjacent pieces of one leaf",
          describe(pieces));
    next = piece.end;
  }
  check(next == range.end, what + " stopped short of the end", describe(pieces));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = canopy::fuzz::text_of(data, size);
  Policy policy;
  try {
    policy = parse_policy(text);
  } catch (const Error& error) {
    const std::string_view message = error.what();
    check(message.starts_with("invalid policy "), "a parse error does not name the policy", message);
    // As CANOPY_POLICY's value the text is refused too (a NUL ends it there).
    if (text.find('\0') == std::string_view::npos) {
      const std::string value(text);
      bool refused = false;
      try {
        resolve_runtime_policy(Policy{Policy::Kind::Runtime, {}}, value.c_str());
      } catch (const Error&) {
        refused = true;
      }
      check(refused, "CANOPY_POLICY accepts what parse_policy() refuses", value);
    }
    return 0;
  }

  const std::string canonical = policy.text();
  Policy again;
  try {
    again = parse_policy(canonical);
  } catch (const Error& error) {
    canopy::fuzz::fail("text() of a parsed policy does not parse", canonical + "\nerror: " + error.what());
  }
  check(again == policy, "text() of a parsed policy reads back as another policy", canonical + " / " + again.text());

  if (text.find('\0') == std::string_view::npos) {
    const std::string value(text);
    try {
      const Policy resolved = resolve_runtime_policy(Policy{Policy::Kind::Runtime, {}}, value.c_str());
      check(policy.kind != Policy::Kind::Runtime && resolved == policy,
            "CANOPY_POLICY reads the text as another policy", value);
    } catch (const Error& error) {
      check(policy.kind == Policy::Kind::Runtime, "CANOPY_POLICY refuses a policy parse_policy() accepts",
            value + "\nerror: " + error.what());
    }
  }
  if (policy.kind == Policy::Kind::Runtime) return 0;

  const std::uint64_t hash = hash_of(text);
  SplitContext context;
  context.idle = [hash](const Location& leaf) { return ((hash >> (leaf.name().size() % 8)) & 3) == 0; };
  context.load = [hash](const Location& leaf) {
    const std::uint64_t bits = hash >> (leaf.name().back() % 16);
    return (bits & 15) == 15 ? std::numeric_limits<double>::quiet_NaN() : static_cast<double>(bits & 7);
  };
  const Hierarchy& tree = small_tree();
  for (const char* at : {"node", "numa0", "numa1", "gpus", "cpu2", "empty"})
    for (const Range& range : kRanges) check_split(policy, tree.at(at), range, context);
  // Without a context, Any picks by tree order alone.
  check_split(policy, tree.at("node"), {0, 100}, {});
  return 0;
}
