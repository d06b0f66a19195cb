// Distribution policies: the text form (reading, writing back, every kind of
// malformed text with its exact message), the exact split of every policy on
// hand-built trees (Gecko's Figure 3 with 1,000,000 iterations, folding,
// remainders, rounding), the errors a split can raise, and a property test
// that random trees, ranges and policies cover every iteration exactly once.
#include <doctest/doctest.h>

#include <canopy/ir/error.hpp>
#include <canopy/runtime/policy.hpp>

#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

using namespace canopy;

namespace {

// A piece as (leaf name, begin, end), so that expectations read as text.
struct Share {
  std::string leaf;
  std::int64_t begin;
  std::int64_t end;
  bool operator==(const Share&) const = default;
};

std::vector<Share> shares(const std::vector<Piece>& pieces) {
  std::vector<Share> result;
  for (const Piece& piece : pieces) result.push_back(Share{piece.leaf->name(), piece.begin, piece.end});
  return result;
}

std::vector<Share> split_text(const Hierarchy& tree, std::string_view at, std::string_view policy, std::int64_t begin,
                              std::int64_t end, const SplitContext& context = {}) {
  return shares(split(tree.at(at), parse_policy(policy), begin, end, context));
}

// Gecko's Figure 3 (a): an uneven tree under "node".
// node
// ├── left (host memory): l0, l1
// ├── disk (file memory, no executing leaf: takes no share)
// └── right (virtual): r0, deep (host memory): d0, d1
Hierarchy uneven_tree() {
  Hierarchy tree;
  tree.add("node", LocationKind::Virtual, {}, "");
  tree.add("left", LocationKind::HostMemory, {}, "node");
  tree.add("l0", LocationKind::Cpu, {}, "left");
  tree.add("l1", LocationKind::Cpu, {}, "left");
  tree.add("disk", LocationKind::FileMemory, {}, "node");
  tree.add("right", LocationKind::Virtual, {}, "node");
  tree.add("r0", LocationKind::Cuda, {}, "right");
  tree.add("deep", LocationKind::HostMemory, {}, "right");
  tree.add("d0", LocationKind::Cpu, {}, "deep");
  tree.add("d1", LocationKind::OpenCL, {}, "deep");
  return tree;
}

// Eight leaves at different depths (Figure 3 (b)): a: a0 a1 a2; b: b0, c: c0 c1 c2 c3.
Hierarchy eight_leaves() {
  Hierarchy tree;
  tree.add("node", LocationKind::Virtual, {}, "");
  tree.add("a", LocationKind::HostMemory, {}, "node");
  for (const char* leaf : {"a0", "a1", "a2"}) tree.add(leaf, LocationKind::Cpu, {}, "a");
  tree.add("b", LocationKind::HostMemory, {}, "node");
  tree.add("b0", LocationKind::Cpu, {}, "b");
  tree.add("c", LocationKind::UnifiedMemory, {}, "b");
  for (const char* leaf : {"c0", "c1", "c2", "c3"}) tree.add(leaf, LocationKind::Cuda, {}, "c");
  return tree;
}

// Six children under "node" (Figure 3 (c)); the last one is a subtree with two leaves; an empty
// memory child between them takes no share.
Hierarchy six_children() {
  Hierarchy tree;
  tree.add("node", LocationKind::Virtual, {}, "");
  for (const char* leaf : {"k0", "k1", "k2", "k3", "k4"}) tree.add(leaf, LocationKind::Cpu, {}, "node");
  tree.add("empty", LocationKind::HostMemory, {}, "node");
  tree.add("k5", LocationKind::HostMemory, {}, "node");
  tree.add("k5a", LocationKind::Cpu, {}, "k5");
  tree.add("k5b", LocationKind::Cpu, {}, "k5");
  return tree;
}

// "node" with three CPU leaves x, y, z.
Hierarchy three_leaves() {
  Hierarchy tree;
  tree.add("node", LocationKind::Virtual, {}, "");
  for (const char* leaf : {"x", "y", "z"}) tree.add(leaf, LocationKind::Cpu, {}, "node");
  return tree;
}

}  // namespace

// Failed comparisons print the pieces as leaf:[begin,end).
template <>
struct doctest::StringMaker<std::vector<Share>> {
  static doctest::String convert(const std::vector<Share>& list) {
    std::string text;
    for (const Share& share : list)
      text += fmt::format("{}{}:[{},{})", text.empty() ? "" : " ", share.leaf, share.begin, share.end);
    return fmt::format("{{{}}}", text).c_str();
  }
};

TEST_CASE("policy text: every name, lists, spaces, and the canonical form read back") {
  CHECK(parse_policy("static") == Policy{Policy::Kind::Static, {}});
  CHECK(parse_policy("flatten") == Policy{Policy::Kind::Flatten, {}});
  CHECK(parse_policy("any") == Policy{Policy::Kind::Any, {}});
  CHECK(parse_policy("runtime") == Policy{Policy::Kind::Runtime, {}});
  CHECK(parse_policy("adaptive") == Policy{Policy::Kind::Adaptive, {}});
  CHECK(parse_policy("percentage:[5,5,22.5,22.5,22.5,22.5]") ==
        Policy{Policy::Kind::Percentage, {5, 5, 22.5, 22.5, 22.5, 22.5}});
  CHECK(parse_policy("range:[100,200,700]") == Policy{Policy::Kind::Range, {100, 200, 700}});

  // Spaces, tabs and line breaks around every part.
  CHECK(parse_policy(" \tstatic \n") == Policy{Policy::Kind::Static, {}});
  CHECK(parse_policy(" percentage : [ 5 , 5 ,\t22.5, 22.5 ,22.5 , 22.5 ] ") ==
        Policy{Policy::Kind::Percentage, {5, 5, 22.5, 22.5, 22.5, 22.5}});
  // Numbers in any form a double reads; range counts that are whole numbers.
  CHECK(parse_policy("range:[1e3,2.0,0]") == Policy{Policy::Kind::Range, {1000, 2, 0}});
  CHECK(parse_policy("percentage:[33.333,33.333,33.333]").values.size() == 3);  // 99.999: within 0.01
  CHECK(parse_policy("percentage:[0,100]") == Policy{Policy::Kind::Percentage, {0, 100}});
  CHECK(parse_policy("range:[9007199254740992]") == Policy{Policy::Kind::Range, {9007199254740992.0}});

  CHECK(parse_policy("static").text() == "static");
  CHECK(parse_policy(" percentage:[ 5,5, 22.50,22.5,22.5,22.5]").text() == "percentage:[5,5,22.5,22.5,22.5,22.5]");
  CHECK(parse_policy("range:[1e3, 2.0]").text() == "range:[1000,2]");
  CHECK(fmt::format("{}", parse_policy("percentage:[0.1,99.9]")) == "percentage:[0.1,99.9]");
  for (const char* text : {"static", "flatten", "any", "runtime", "adaptive", "percentage:[12.5,87.5]",
                           "percentage:[0.30000000000000004,99.69999999999999]", "range:[1,2,3,9007199254740992]"}) {
    CAPTURE(text);
    const Policy policy = parse_policy(text);
    CHECK(policy.text() == text);
    CHECK(parse_policy(policy.text()) == policy);
  }
}

TEST_CASE("policy text: malformed texts fail with the position and what was expected") {
  auto message = [](std::string_view text) -> std::string {
    try {
      parse_policy(text);
    } catch (const Error& error) {
      return error.what();
    }
    return "(parsed)";
  };
  CHECK(message("") ==
        "invalid policy \"\" at character 1: expected a policy name (static, flatten, percentage, range, any, runtime "
        "or adaptive), found the end of the text");
  CHECK(message("   ") ==
        "invalid policy \"   \" at character 4: expected a policy name (static, flatten, percentage, range, any, "
        "runtime or adaptive), found the end of the text");
  CHECK(message("stat") ==
        "invalid policy \"stat\" at character 1: expected a policy name (static, flatten, percentage, range, any, "
        "runtime or adaptive), found 'stat'");
  CHECK(message("Static") ==
        "invalid policy \"Static\" at character 1: expected a policy name (static, flatten, percentage, range, any, "
        "runtime or adaptive), found 'Static'");
  CHECK(message("static:[1]") ==
        "invalid policy \"static:[1]\" at character 7: expected the end of the text ('static' takes no list), "
        "found ':'");
  CHECK(message("any x") ==
        "invalid policy \"any x\" at character 5: expected the end of the text ('any' takes no list), found 'x'");
  CHECK(message("percentage") ==
        "invalid policy \"percentage\" at character 11: expected ':' and a list such as percentage:[25,75], "
        "found the end of the text");
  CHECK(message("range") ==
        "invalid policy \"range\" at character 6: expected ':' and a list such as range:[100,200,700], found the "
        "end of the text");
  CHECK(message("percentage:50") == "invalid policy \"percentage:50\" at character 12: expected '[', found '50'");
  CHECK(message("percentage:[]") ==
        "invalid policy \"percentage:[]\" at character 13: expected a percentage, found ']'");
  CHECK(message("range:[ ]") ==
        "invalid policy \"range:[ ]\" at character 9: expected a number of iterations, "
        "found ']'");
  CHECK(message("percentage:[50,50") ==
        "invalid policy \"percentage:[50,50\" at character 18: expected ',' or ']', found the end of the text");
  CHECK(message("percentage:[50 50]") ==
        "invalid policy \"percentage:[50 50]\" at character 16: expected ',' or ']', found '50'");
  CHECK(message("percentage:[50,,50]") ==
        "invalid policy \"percentage:[50,,50]\" at character 16: expected a percentage, found ','");
  CHECK(message("percentage:[-5,105]") ==
        "invalid policy \"percentage:[-5,105]\" at character 13: expected a percentage of 0 or more, found '-5'");
  CHECK(message("range:[10,-1]") ==
        "invalid policy \"range:[10,-1]\" at character 11: expected a number of iterations of 0 or more, found "
        "'-1'");
  CHECK(message("percentage:[nan,100]") ==
        "invalid policy \"percentage:[nan,100]\" at character 13: expected a finite number (a percentage), found "
        "'nan'");
  CHECK(message("percentage:[inf]") ==
        "invalid policy \"percentage:[inf]\" at character 13: expected a finite number (a percentage), found 'inf'");
  CHECK(message("percentage:[0x10,90]") ==
        "invalid policy \"percentage:[0x10,90]\" at character 13: expected a percentage, found '0x10'");
  CHECK(message("percentage:[50,49]") ==
        "invalid policy \"percentage:[50,49]\" at character 12: the percentages sum to 99, not 100; make them sum "
        "to 100 (within 0.01)");
  CHECK(message("percentage:[33.3,33.3,33.3]") ==
        "invalid policy \"percentage:[33.3,33.3,33.3]\" at character 12: the percentages sum to 99.9, not 100; "
        "make them sum to 100 (within 0.01)");
  CHECK(message("range:[1.5,2]") ==
        "invalid policy \"range:[1.5,2]\" at character 8: expected a whole number of iterations, found '1.5'");
  CHECK(message("range:[1e300]") ==
        "invalid policy \"range:[1e300]\" at character 8: expected at most 9007199254740992 (2^53) iterations, "
        "found '1e300'");
  CHECK(message("range:[1e5000]") ==
        "invalid policy \"range:[1e5000]\" at character 8: expected a number of iterations that a double can "
        "hold, found '1e5000'");
  CHECK(message("range:[1,2]x") ==
        "invalid policy \"range:[1,2]x\" at character 12: expected the end of the text after ']', found 'x'");
  CHECK(message("percentage:[50,50]]") ==
        "invalid policy \"percentage:[50,50]]\" at character 19: expected the end of the text after ']', found "
        "']'");
  // Bytes that do not print are escaped; long texts are cut.
  CHECK(message("st\x01tic") ==
        "invalid policy \"st\\x01tic\" at character 1: expected a policy name (static, flatten, percentage, range, "
        "any, runtime or adaptive), found 'st'");
  const std::string eighty(80, 'x');
  CHECK(message(std::string(100, 'x')) ==
        fmt::format("invalid policy \"{}...\" at character 1: expected a policy name (static, flatten, percentage, "
                    "range, any, runtime or adaptive), found '{}...'",
                    eighty, eighty));
}

TEST_CASE("policy text: mangled texts never crash, only throw canopy::Error") {
  const std::vector<std::string> seeds = {"static", "percentage:[5,5,22.5,22.5,22.5,22.5]", "range:[100,200,700]",
                                          "any"};
  std::string alphabet = "[]:,.-+eE0123456789 \tabcdefnirstuglpx";
  alphabet += '\0';
  alphabet += '\xff';
  std::mt19937 random(7);
  int parsed = 0;
  int refused = 0;
  for (int trial = 0; trial < 20000; ++trial) {
    std::string text = seeds[random() % seeds.size()];
    const int edits = 1 + static_cast<int>(random() % 4);
    for (int edit = 0; edit < edits; ++edit) {
      const std::size_t where = text.empty() ? 0 : random() % (text.size() + 1);
      const char c = alphabet[random() % alphabet.size()];
      switch (random() % 3) {
        case 0: text.insert(text.begin() + static_cast<std::ptrdiff_t>(where), c); break;
        case 1:
          if (where < text.size()) text.erase(where, 1);
          break;
        default:
          if (where < text.size()) text[where] = c;
      }
    }
    try {
      const Policy policy = parse_policy(text);
      ++parsed;
      CHECK(parse_policy(policy.text()) == policy);  // whatever parses writes back to itself
    } catch (const Error& error) {
      ++refused;
      CHECK(std::string(error.what()).rfind("invalid policy \"", 0) == 0);
    }
  }
  CHECK(parsed > 100);
  CHECK(refused > 10000);
}

TEST_CASE("runtime: resolved from CANOPY_POLICY's value") {
  const Policy runtime{Policy::Kind::Runtime, {}};
  CHECK(resolve_runtime_policy(runtime, "flatten") == Policy{Policy::Kind::Flatten, {}});
  CHECK(resolve_runtime_policy(runtime, " range:[1,2] ") == Policy{Policy::Kind::Range, {1, 2}});
  // Any other policy stays what it is, whatever the variable says.
  CHECK(resolve_runtime_policy(parse_policy("any"), "static") == Policy{Policy::Kind::Any, {}});
  CHECK(resolve_runtime_policy(parse_policy("any"), nullptr) == Policy{Policy::Kind::Any, {}});

  const char* unset =
      "policy 'runtime' takes the policy from CANOPY_POLICY (or GECKO_POLICY) as it was when the Runtime "
      "was made, and neither was set then; set CANOPY_POLICY to one of static, flatten, percentage:[...], "
      "range:[...], any or adaptive before making the Runtime";
  CHECK_THROWS_WITH_AS(resolve_runtime_policy(runtime, nullptr), unset, Error);
  CHECK_THROWS_WITH_AS(resolve_runtime_policy(runtime, ""), unset, Error);
  CHECK_THROWS_WITH_AS(resolve_runtime_policy(runtime, "runtime"),
                       "CANOPY_POLICY is 'runtime', which names itself; set it to one of static, flatten, "
                       "percentage:[...], range:[...], any or adaptive",
                       Error);
  CHECK_THROWS_WITH_AS(resolve_runtime_policy(runtime, "fast"),
                       "CANOPY_POLICY: invalid policy \"fast\" at character 1: expected a policy name (static, "
                       "flatten, percentage, range, any, runtime or adaptive), found 'fast'",
                       Error);
}

TEST_CASE("runtime: a policy that does not parse is refused naming the variable it came from") {
  CHECK(runtime_policy_of("") == std::nullopt);
  CHECK(runtime_policy_of("static") == Policy{Policy::Kind::Static, {}});
  CHECK_THROWS_WITH_AS(runtime_policy_of("fast", "GECKO_POLICY"),
                       doctest::Contains("GECKO_POLICY='fast' is not allowed; use static, flatten"), Error);
  CHECK_THROWS_WITH_AS(runtime_policy_of("fast"), doctest::Contains("CANOPY_POLICY='fast' is not allowed"), Error);
}

TEST_CASE("static: Figure 3 (a), even at every level of an uneven tree, 1,000,000 iterations") {
  const Hierarchy tree = uneven_tree();
  // node: left and right get half each ("disk" has no leaf); right: r0 and deep a quarter each; deep: an eighth.
  CHECK(split_text(tree, "node", "static", 0, 1000000) == std::vector<Share>{{"l0", 0, 250000},
                                                                             {"l1", 250000, 500000},
                                                                             {"r0", 500000, 750000},
                                                                             {"d0", 750000, 875000},
                                                                             {"d1", 875000, 1000000}});
  // Below a location, only its subtree takes part; an offset range keeps its offsets.
  CHECK(split_text(tree, "right", "static", 1000, 1900) ==
        std::vector<Share>{{"r0", 1000, 1450}, {"d0", 1450, 1675}, {"d1", 1675, 1900}});
  // Adaptive splits like static for now.
  CHECK(split_text(tree, "node", "adaptive", 0, 1000000) == split_text(tree, "node", "static", 0, 1000000));
}

TEST_CASE("flatten: Figure 3 (b), eight leaves an eighth each") {
  const Hierarchy tree = eight_leaves();
  CHECK(split_text(tree, "node", "flatten", 0, 1000000) == std::vector<Share>{{"a0", 0, 125000},
                                                                              {"a1", 125000, 250000},
                                                                              {"a2", 250000, 375000},
                                                                              {"b0", 375000, 500000},
                                                                              {"c0", 500000, 625000},
                                                                              {"c1", 625000, 750000},
                                                                              {"c2", 750000, 875000},
                                                                              {"c3", 875000, 1000000}});
  // The same tree under static: a and b halve the range, then each halves again below b.
  CHECK(split_text(tree, "node", "static", 0, 1000000) == std::vector<Share>{{"a0", 0, 166667},
                                                                             {"a1", 166667, 333334},
                                                                             {"a2", 333334, 500000},
                                                                             {"b0", 500000, 750000},
                                                                             {"c0", 750000, 812500},
                                                                             {"c1", 812500, 875000},
                                                                             {"c2", 875000, 937500},
                                                                             {"c3", 937500, 1000000}});
}

TEST_CASE("percentage: Figure 3 (c), [5,5,22.5,22.5,22.5,22.5] over six children") {
  const Hierarchy tree = six_children();
  CHECK(split_text(tree, "node", "percentage:[5,5,22.5,22.5,22.5,22.5]", 0, 1000000) ==
        std::vector<Share>{{"k0", 0, 50000},
                           {"k1", 50000, 100000},
                           {"k2", 100000, 325000},
                           {"k3", 325000, 550000},
                           {"k4", 550000, 775000},
                           {"k5a", 775000, 887500},
                           {"k5b", 887500, 1000000}});
  // range with the same shares as counts.
  CHECK(split_text(tree, "node", "range:[50000,50000,225000,225000,225000,225000]", 0, 1000000) ==
        split_text(tree, "node", "percentage:[5,5,22.5,22.5,22.5,22.5]", 0, 1000000));
}

TEST_CASE("percentage and range: shares round on cumulative boundaries") {
  const Hierarchy tree = three_leaves();
  // 3.333 -> 3, 6.666 -> 7, 10: never a gap or an overlap.
  CHECK(split_text(tree, "node", "percentage:[33.33,33.33,33.34]", 0, 10) ==
        std::vector<Share>{{"x", 0, 3}, {"y", 3, 7}, {"z", 7, 10}});
  // Sums a little off 100 are scaled to the whole range.
  CHECK(split_text(tree, "node", "percentage:[33.333,33.333,33.333]", 0, 9) ==
        std::vector<Share>{{"x", 0, 3}, {"y", 3, 6}, {"z", 6, 9}});
  // A zero share gives no piece.
  CHECK(split_text(tree, "node", "percentage:[0,100,0]", 5, 15) == std::vector<Share>{{"y", 5, 15}});
  CHECK(split_text(tree, "node", "range:[0,4,6]", 5, 15) == std::vector<Share>{{"y", 5, 9}, {"z", 9, 15}});
  CHECK(split_text(tree, "node", "percentage:[50,25,25]", 0, 1) == std::vector<Share>{{"x", 0, 1}});
}

TEST_CASE("percentage and range: more numbers than children fold over them in turn") {
  const Hierarchy tree = three_leaves();
  CHECK(split_text(tree, "node", "range:[100,200,300,400]", 0, 1000) ==
        std::vector<Share>{{"x", 0, 100}, {"y", 100, 300}, {"z", 300, 600}, {"x", 600, 1000}});
  CHECK(split_text(tree, "node", "percentage:[10,10,10,10,10,10,10,30]", 0, 100) == std::vector<Share>{{"x", 0, 10},
                                                                                                       {"y", 10, 20},
                                                                                                       {"z", 20, 30},
                                                                                                       {"x", 30, 40},
                                                                                                       {"y", 40, 50},
                                                                                                       {"z", 50, 60},
                                                                                                       {"x", 60, 70},
                                                                                                       {"y", 70, 100}});
  // Folding below a subtree: each chunk is split statically within the child it goes to.
  const Hierarchy uneven = uneven_tree();
  CHECK(split_text(uneven, "node", "percentage:[10,20,30,40]", 0, 1000) == std::vector<Share>{{"l0", 0, 50},
                                                                                              {"l1", 50, 100},
                                                                                              {"r0", 100, 200},
                                                                                              {"d0", 200, 250},
                                                                                              {"d1", 250, 300},
                                                                                              {"l0", 300, 450},
                                                                                              {"l1", 450, 600},
                                                                                              {"r0", 600, 800},
                                                                                              {"d0", 800, 900},
                                                                                              {"d1", 900, 1000}});
  // One child: consecutive chunks of the same leaf come out as one piece.
  Hierarchy single;
  single.add("node", LocationKind::Virtual, {}, "");
  single.add("mem", LocationKind::HostMemory, {}, "node");
  single.add("only", LocationKind::Cpu, {}, "node");
  CHECK(split_text(single, "node", "percentage:[20,30,50]", 0, 100) == std::vector<Share>{{"only", 0, 100}});
  CHECK(split_text(single, "node", "range:[3,0,4]", -7, 0) == std::vector<Share>{{"only", -7, 0}});
}

TEST_CASE("percentage and range: numbers at a location with one child are for the first location below that splits") {
  // The default location (node over numa0 over the leaves): percentage:[30,70]
  // over two leaves gives them 30% and 70%, as the program means.
  Hierarchy tree;
  tree.add("node", LocationKind::Virtual, {}, "");
  tree.add("numa", LocationKind::HostMemory, {}, "node");
  tree.add("a", LocationKind::Cpu, {}, "numa");
  tree.add("b", LocationKind::Cpu, {}, "numa");
  CHECK(split_text(tree, "node", "percentage:[30,70]", 0, 100) == std::vector<Share>{{"a", 0, 30}, {"b", 30, 100}});
  CHECK(split_text(tree, "node", "range:[10,90]", 0, 100) == std::vector<Share>{{"a", 0, 10}, {"b", 10, 100}});
  // One number is the one child's: split evenly below it.
  CHECK(split_text(tree, "node", "percentage:[100]", 0, 100) == std::vector<Share>{{"a", 0, 50}, {"b", 50, 100}});
  // Fewer numbers than the children below: they fold over the one child.
  tree.add("c", LocationKind::Cpu, {}, "numa");
  CHECK(split_text(tree, "node", "percentage:[30,70]", 0, 100) ==
        std::vector<Share>{{"a", 0, 10}, {"b", 10, 20}, {"c", 20, 30}, {"a", 30, 54}, {"b", 54, 77}, {"c", 77, 100}});
}

TEST_CASE("remainders: ranges of length 0, 1 and 7 over three leaves") {
  const Hierarchy tree = three_leaves();
  for (const char* policy : {"static", "flatten", "adaptive", "percentage:[20,30,50]", "any"}) {
    CAPTURE(policy);
    CHECK(split_text(tree, "node", policy, 0, 0).empty());
    CHECK(split_text(tree, "node", policy, 42, 42).empty());
  }
  CHECK(split_text(tree, "node", "range:[0,0,0]", 3, 3).empty());
  for (const char* policy : {"static", "flatten", "adaptive", "any"}) {
    CAPTURE(policy);
    CHECK(split_text(tree, "node", policy, 10, 11) == std::vector<Share>{{"x", 10, 11}});
  }
  for (const char* policy : {"static", "flatten", "adaptive"}) {
    CAPTURE(policy);
    CHECK(split_text(tree, "node", policy, 0, 7) == std::vector<Share>{{"x", 0, 3}, {"y", 3, 5}, {"z", 5, 7}});
    CHECK(split_text(tree, "node", policy, -3, 4) == std::vector<Share>{{"x", -3, 0}, {"y", 0, 2}, {"z", 2, 4}});
  }
  // 0.2 * 7 = 1.4 -> 1; 0.5 * 7 = 3.5 -> 4 (cumulative); 7.
  CHECK(split_text(tree, "node", "percentage:[20,30,50]", 0, 7) ==
        std::vector<Share>{{"x", 0, 1}, {"y", 1, 4}, {"z", 4, 7}});
  CHECK(split_text(tree, "node", "range:[1,0,6]", 0, 7) == std::vector<Share>{{"x", 0, 1}, {"z", 1, 7}});

  // Static remainders at every level: 7 -> A 4, B 3 -> b0 2, b1 1.
  Hierarchy nested;
  nested.add("node", LocationKind::Virtual, {}, "");
  nested.add("A", LocationKind::Cpu, {}, "node");
  nested.add("B", LocationKind::HostMemory, {}, "node");
  nested.add("b0", LocationKind::Cpu, {}, "B");
  nested.add("b1", LocationKind::Cpu, {}, "B");
  CHECK(split_text(nested, "node", "static", 0, 7) == std::vector<Share>{{"A", 0, 4}, {"b0", 4, 6}, {"b1", 6, 7}});
  CHECK(split_text(nested, "node", "flatten", 0, 7) == std::vector<Share>{{"A", 0, 3}, {"b0", 3, 5}, {"b1", 5, 7}});
  CHECK(split_text(nested, "node", "static", 0, 1) == std::vector<Share>{{"A", 0, 1}});
  CHECK(split_text(nested, "node", "static", 0, 2) == std::vector<Share>{{"A", 0, 1}, {"b0", 1, 2}});
}

TEST_CASE("an executing location takes the whole range, whatever the policy") {
  const Hierarchy tree = three_leaves();
  for (const char* policy : {"static", "flatten", "adaptive", "any", "percentage:[10,90]", "range:[5,5]"}) {
    CAPTURE(policy);
    CHECK(split_text(tree, "y", policy, 0, 10) == std::vector<Share>{{"y", 0, 10}});
  }
  // ...but a range's counts must still sum to its length.
  CHECK_THROWS_WITH_AS(split_text(tree, "y", "range:[5,4]", 0, 10),
                       "policy range:[5,4] lists 9 iterations but the region's range has 10; make the numbers sum "
                       "to the range's length",
                       Error);
}

TEST_CASE("any: the first idle leaf, else the least loaded, ties in tree order") {
  const Hierarchy tree = eight_leaves();
  auto named = [](std::initializer_list<const char*> names) {
    return [set = std::vector<std::string>(names.begin(), names.end())](const Location& leaf) {
      for (const std::string& name : set) {
        if (leaf.name() == name) return true;
      }
      return false;
    };
  };
  // Figure 3 (d): the first four are busy; the first idle one after them takes it all.
  SplitContext busy_first_four;
  busy_first_four.idle = [&](const Location& leaf) { return !named({"a0", "a1", "a2", "b0"})(leaf); };
  CHECK(split_text(tree, "node", "any", 0, 1000000, busy_first_four) == std::vector<Share>{{"c0", 0, 1000000}});
  // Below a location, only its own leaves are candidates.
  CHECK(split_text(tree, "a", "any", 0, 10, busy_first_four) == std::vector<Share>{{"a0", 0, 10}});

  std::map<std::string, double> loads{{"a0", 5}, {"a1", 3}, {"a2", 7}, {"b0", 3},
                                      {"c0", 4}, {"c1", 9}, {"c2", 3}, {"c3", 8}};
  SplitContext by_load;
  by_load.idle = [](const Location&) { return false; };
  by_load.load = [&](const Location& leaf) { return loads.at(leaf.name()); };
  CHECK(split_text(tree, "node", "any", 0, 100, by_load) == std::vector<Share>{{"a1", 0, 100}});
  CHECK(split_text(tree, "b", "any", 0, 100, by_load) == std::vector<Share>{{"b0", 0, 100}});  // b0 before c2
  loads["a1"] = std::nan("");
  loads["b0"] = std::nan("");
  CHECK(split_text(tree, "node", "any", 0, 100, by_load) == std::vector<Share>{{"c2", 0, 100}});
  for (auto& [name, load] : loads) load = std::nan("");
  CHECK(split_text(tree, "node", "any", 0, 100, by_load) == std::vector<Share>{{"a0", 0, 100}});

  // An idle leaf wins over any load.
  by_load.idle = named({"c3"});
  CHECK(split_text(tree, "node", "any", 0, 100, by_load) == std::vector<Share>{{"c3", 0, 100}});
  // Nothing known: the first leaf in tree order.
  CHECK(split_text(tree, "node", "any", 0, 100) == std::vector<Share>{{"a0", 0, 100}});
  CHECK(split_text(tree, "c", "any", 0, 100) == std::vector<Share>{{"c0", 0, 100}});

  // A leaf that cannot run the region (its device cannot hold a row's
  // arrays) is passed over, idle or not, unless no leaf can.
  SplitContext some_cannot;
  some_cannot.idle = named({"c3"});
  some_cannot.load = [&](const Location& leaf) { return leaf.name() == "a0" ? 0.0 : 5.0; };
  some_cannot.can_run = [&](const Location& leaf) { return !named({"c3", "a0"})(leaf); };
  CHECK(split_text(tree, "node", "any", 0, 100, some_cannot) == std::vector<Share>{{"a1", 0, 100}});
  some_cannot.idle = named({"c1", "c3"});
  some_cannot.can_run = [&](const Location& leaf) { return !named({"c1"})(leaf); };
  CHECK(split_text(tree, "node", "any", 0, 100, some_cannot) == std::vector<Share>{{"c3", 0, 100}});
  some_cannot.can_run = [](const Location&) { return false; };
  CHECK(split_text(tree, "node", "any", 0, 100, some_cannot) == std::vector<Share>{{"c1", 0, 100}});
}

TEST_CASE("split errors name the location, the policy and the numbers") {
  const Hierarchy tree = uneven_tree();
  const Location& node = tree.at("node");
  CHECK_THROWS_WITH_AS(split(node, parse_policy("percentage:[100]"), 0, 10),
                       "policy percentage:[100] gives 1 number but location 'node' has 2 children with executing "
                       "leaves below them; give at least one number per child (more fold over them in turn)",
                       Error);
  CHECK_THROWS_WITH_AS(split(tree.at("right"), parse_policy("range:[10]"), 0, 10),
                       "policy range:[10] gives 1 number but location 'right' has 2 children with executing leaves "
                       "below them; give at least one number per child (more fold over them in turn)",
                       Error);
  CHECK_THROWS_WITH_AS(split(node, parse_policy("range:[100,200,700]"), 0, 999),
                       "policy range:[100,200,700] lists 1000 iterations but the region's range has 999; make the "
                       "numbers sum to the range's length",
                       Error);
  CHECK_THROWS_WITH_AS(split(node, parse_policy("range:[9007199254740992,9007199254740992]"), 0, 10),
                       "policy range:[9007199254740992,9007199254740992] lists 18014398509481984 iterations but the "
                       "region's range has 10; make the numbers sum to the range's length",
                       Error);
  CHECK_THROWS_WITH_AS(split(node, parse_policy("runtime"), 0, 10),
                       "policy 'runtime' reaches split() unresolved; resolve it from CANOPY_POLICY first "
                       "(resolve_runtime_policy)",
                       Error);
  CHECK_THROWS_WITH_AS(split(tree.at("disk"), parse_policy("static"), 0, 10),
                       "location 'disk' has no executing leaf (a CPU or device location) at or below it, so no "
                       "region can run there; add one below it or run the region at another location",
                       Error);
  CHECK_THROWS_WITH_AS(split(tree.at("disk"), parse_policy("static"), 0, 0),
                       "location 'disk' has no executing leaf (a CPU or device location) at or below it, so no "
                       "region can run there; add one below it or run the region at another location",
                       Error);
  CHECK_THROWS_WITH_AS(split(node, parse_policy("static"), 5, 4),
                       "the range [5,4) ends before it begins; give a range with begin <= end", Error);
  const std::int64_t lowest = std::numeric_limits<std::int64_t>::min();
  const std::int64_t highest = std::numeric_limits<std::int64_t>::max();
  CHECK_THROWS_WITH_AS(split(node, parse_policy("static"), lowest, highest),
                       "the range [-9223372036854775808,9223372036854775807) holds more than 2^63-1 iterations; "
                       "split it into smaller regions",
                       Error);

  // Policies built by hand get the parser's checks.
  CHECK_THROWS_WITH_AS(split(node, Policy{Policy::Kind::Static, {1}}, 0, 10),
                       "policy 'static' takes no numbers but was given 1; leave Policy::values empty", Error);
  CHECK_THROWS_WITH_AS(split(node, Policy{Policy::Kind::Percentage, {}}, 0, 10),
                       "policy 'percentage' has no numbers; give one per child, such as percentage:[25,75]", Error);
  CHECK_THROWS_WITH_AS(split(node, Policy{Policy::Kind::Percentage, {-50, 150}}, 0, 10),
                       "policy percentage:[-50,150] has the number -50; percentages must be finite and 0 or more",
                       Error);
  CHECK_THROWS_WITH_AS(split(node, Policy{Policy::Kind::Percentage, {std::nan(""), 100}}, 0, 10),
                       "policy percentage:[nan,100] has the number nan; percentages must be finite and 0 or more",
                       Error);
  CHECK_THROWS_WITH_AS(split(node, Policy{Policy::Kind::Percentage, {50, 40}}, 0, 10),
                       "policy percentage:[50,40]: the percentages sum to 90, not 100; make them sum to 100 (within "
                       "0.01)",
                       Error);
  CHECK_THROWS_WITH_AS(split(node, Policy{Policy::Kind::Range, {2.5, 7.5}}, 0, 10),
                       "policy range:[2.5,7.5] has the number 2.5; range counts must be whole numbers from 0 to 2^53",
                       Error);
  CHECK_THROWS_WITH_AS(split(node, Policy{Policy::Kind::Range, {1e300}}, 0, 10),
                       "policy range:[1e+300] has the number 1e+300; range counts must be whole numbers from 0 to "
                       "2^53",
                       Error);

  CHECK_THROWS_WITH_AS(split(node, Policy{static_cast<Policy::Kind>(99), {}}, 0, 10),
                       "policy kind 99 is not one of Policy::Kind's values", Error);

  // The widest range that fits still splits exactly.
  const auto pieces = split(node, parse_policy("static"), lowest / 2, highest / 2);
  REQUIRE(pieces.size() == 5);
  CHECK(pieces.front().begin == lowest / 2);
  CHECK(pieces.back().end == highest / 2);
  for (std::size_t index = 1; index < pieces.size(); ++index) CHECK(pieces[index].begin == pieces[index - 1].end);
}

TEST_CASE("a very deep tree splits without deep recursion") {
  Hierarchy tree;
  tree.add("m0", LocationKind::HostMemory, {}, "");
  const int depth = 20000;
  for (int level = 1; level < depth; ++level) {
    tree.add(fmt::format("m{}", level), LocationKind::HostMemory, {}, fmt::format("m{}", level - 1));
  }
  tree.add("bottom", LocationKind::Cpu, {}, fmt::format("m{}", depth - 1));
  tree.add("top", LocationKind::Cpu, {}, "m0");
  CHECK(split_text(tree, "m0", "static", 0, 1000) == std::vector<Share>{{"bottom", 0, 500}, {"top", 500, 1000}});
  CHECK(split_text(tree, "m0", "flatten", 0, 3) == std::vector<Share>{{"bottom", 0, 2}, {"top", 2, 3}});
  CHECK(split_text(tree, "m0", "percentage:[10,90]", 0, 10) == std::vector<Share>{{"bottom", 0, 1}, {"top", 1, 10}});
}

TEST_CASE("pieces print as leaf:[begin,end)") {
  const Hierarchy tree = three_leaves();
  const auto pieces = split(tree.at("node"), parse_policy("flatten"), 0, 3);
  REQUIRE(pieces.size() == 3);
  CHECK(fmt::format("{} {} {}", pieces[0], pieces[1], pieces[2]) == "x:[0,1) y:[1,2) z:[2,3)");
  CHECK(pieces[1].size() == 1);
}

TEST_CASE("property: random trees, ranges and policies cover every iteration exactly once") {
  int nonempty_splits = 0;
  for (unsigned seed = 0; seed < 300; ++seed) {
    std::mt19937_64 random(seed);
    auto below = [&](std::uint64_t bound) { return static_cast<std::int64_t>(random() % bound); };

    Hierarchy tree;
    tree.add("n0", LocationKind::Virtual, {}, "");
    std::vector<std::string> names{"n0"};
    std::vector<std::string> parents{"n0"};
    const int size = 1 + static_cast<int>(below(30));
    for (int index = 1; index < size; ++index) {
      const std::string name = fmt::format("n{}", index);
      const std::string parent = parents[below(parents.size())];
      const bool executes = below(10) < 5;
      const LocationKind kind = executes ? (below(2) == 0 ? LocationKind::Cpu : LocationKind::OpenCL)
                                         : (below(2) == 0 ? LocationKind::HostMemory : LocationKind::Virtual);
      tree.add(name, kind, {}, parent);
      names.push_back(name);
      if (!executes) parents.push_back(name);
    }

    for (int trial = 0; trial < 30; ++trial) {
      const Location& at = tree.at(names[below(names.size())]);
      const std::int64_t begin = below(2001) - 1000;
      const std::int64_t length = below(4) == 0 ? below(8) : below(20000);
      const std::int64_t end = begin + length;

      // How many children take a share at `at`, so that percentage and range get enough numbers.
      const std::vector<const Location*> leaves = tree.leaves(at);
      std::size_t sharing = 0;
      for (const Location* child : at.children()) sharing += tree.leaves(*child).empty() ? 0 : 1;
      const std::size_t numbers = std::max<std::size_t>(1, sharing) + static_cast<std::size_t>(below(4));

      Policy policy;
      switch (below(6)) {
        case 0: policy.kind = Policy::Kind::Static; break;
        case 1: policy.kind = Policy::Kind::Flatten; break;
        case 2: policy.kind = Policy::Kind::Adaptive; break;
        case 3: policy.kind = Policy::Kind::Any; break;
        case 4: {
          policy.kind = Policy::Kind::Percentage;
          std::vector<double> weights;
          double total = 0;
          for (std::size_t index = 0; index < numbers; ++index) {
            weights.push_back(static_cast<double>(below(5) == 0 ? 0 : 1 + below(1000)));
            total += weights.back();
          }
          if (total == 0) weights[0] = total = 1;
          for (double weight : weights) policy.values.push_back(100.0 * weight / total);
          break;
        }
        default: {
          policy.kind = Policy::Kind::Range;
          std::int64_t left = length;
          for (std::size_t index = 0; index + 1 < numbers; ++index) {
            const std::int64_t count = below(static_cast<std::uint64_t>(left) + 1);
            policy.values.push_back(static_cast<double>(count));
            left -= count;
          }
          policy.values.push_back(static_cast<double>(left));
        }
      }
      CAPTURE(seed);
      CAPTURE(trial);
      CAPTURE(at.name());
      CAPTURE(policy.text());
      CAPTURE(begin);
      CAPTURE(end);
      CHECK(parse_policy(policy.text()) == policy);

      if (leaves.empty()) {
        CHECK_THROWS_AS(split(at, policy, begin, end), Error);
        continue;
      }
      SplitContext context;
      context.idle = [&](const Location& leaf) { return leaf.name().size() % 3 == 0; };
      context.load = [&](const Location& leaf) { return static_cast<double>(leaf.name().back() % 5); };
      const std::vector<Piece> pieces = split(at, policy, begin, end, context);

      if (length == 0) {
        CHECK(pieces.empty());
        continue;
      }
      ++nonempty_splits;
      REQUIRE_FALSE(pieces.empty());
      CHECK(pieces.front().begin == begin);
      CHECK(pieces.back().end == end);
      std::int64_t covered = 0;
      for (std::size_t index = 0; index < pieces.size(); ++index) {
        const Piece& piece = pieces[index];
        CHECK(piece.begin < piece.end);
        if (index > 0) {
          CHECK(piece.begin == pieces[index - 1].end);
          CHECK_FALSE(pieces[index - 1].leaf == piece.leaf);  // merged when adjacent
        }
        REQUIRE(piece.leaf != nullptr);
        CHECK(piece.leaf->executes());
        CHECK(Hierarchy::is_above_or_same(at, *piece.leaf));
        covered += piece.size();
      }
      CHECK(covered == length);
      if (policy.kind == Policy::Kind::Any) CHECK(pieces.size() == 1);
      if (policy.kind == Policy::Kind::Flatten) {
        // Every leaf gets length / leaves or one more, and only the first ones the one more.
        std::map<const Location*, std::int64_t> per_leaf;
        for (const Piece& piece : pieces) per_leaf[piece.leaf] += piece.size();
        const auto leaf_count = static_cast<std::int64_t>(leaves.size());
        const std::int64_t even = length / leaf_count;
        CHECK(static_cast<std::int64_t>(per_leaf.size()) == (even > 0 ? leaf_count : length % leaf_count));
        for (const auto& [leaf, count] : per_leaf) CHECK((count == even || count == even + 1));
      }
    }
  }
  CHECK(nonempty_splits > 4000);
}
