// nw at a small size: Canopy's scores equal a serial fill written here,
// exactly, on cpu0, on opencl0 and split over both (at numa0,
// percentage:[50,50]), with blocks small enough for anti-diagonals to grow
// and shrink over several regions; the traceback is Rodinia's on a matrix
// worked out by hand. Without an OpenCL device the OpenCL cases say so and
// pass.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "hetero/hetero_support.hpp"
#include "rodinia/nw/nw.hpp"

using namespace canopy;

namespace {

constexpr std::int64_t kDim = 160;  // ten blocks of 16 on a side, 19 regions
constexpr std::int32_t kPenalty = 10;

std::vector<std::int32_t> fill_here(const rodinia::nw::Problem& p) {
  const std::int64_t side = p.side();
  std::vector<std::int32_t> s = p.score;
  for (std::int64_t i = 1; i < side; ++i)
    for (std::int64_t j = 1; j < side; ++j) {
      const std::int32_t diagonal = s[std::size_t((i - 1) * side + j - 1)] + p.reference[std::size_t(i * side + j)];
      const std::int32_t left = s[std::size_t(i * side + j - 1)] - p.penalty;
      const std::int32_t up = s[std::size_t((i - 1) * side + j)] - p.penalty;
      s[std::size_t(i * side + j)] = std::max(diagonal, std::max(left, up));
    }
  return s;
}

std::vector<std::int32_t> fill_on(Runtime& rt, const rodinia::nw::Problem& p, std::int64_t block,
                                  const rodinia::nw::Where& where) {
  const std::int64_t side = p.side();
  auto score = rt.array<std::int32_t, 2>(Shape(side, side), named("score"));
  auto reference = rt.array<std::int32_t, 2>(Shape(side, side), named("reference") | read_only());
  std::memcpy(score.host().data(), p.score.data(), p.score.size() * sizeof(std::int32_t));
  std::memcpy(reference.host().data(), p.reference.data(), p.reference.size() * sizeof(std::int32_t));
  rodinia::nw::Aligner aligner(p.dim, block);
  aligner.launch(rt, score, reference, p.penalty, where);
  rt.pause();
  const auto view = score.host_read();
  return std::vector<std::int32_t>(view.begin(), view.end());
}

}  // namespace

TEST_CASE("nw: a serial fill's scores on cpu0, opencl0 and split over both") {
  Runtime rt;
  const Hierarchy discovered = rt.hierarchy();
  const rodinia::nw::Problem problem = rodinia::nw::generate(kDim, kPenalty);
  const std::vector<std::int32_t> expected = fill_here(problem);
  // Some cells come from each of the three moves (the scores are not all penalties).
  CHECK(expected.back() > -kPenalty * kDim);
  CHECK(rodinia::nw::Aligner(kDim, 16).regions() == 19);

  SUBCASE("cpu0, blocks of 16 and of 32") {
    REQUIRE(hetero_tests::has_leaves(discovered, {"cpu0"}));
    CHECK(fill_on(rt, problem, 16, {"cpu0", "static"}) == expected);
    CHECK(fill_on(rt, problem, 32, {"cpu0", "static"}) == expected);
  }
  SUBCASE("opencl0") {
    if (!hetero_tests::has_leaves(discovered, {"opencl0"})) return;
    CHECK(fill_on(rt, problem, 16, {"opencl0", "static"}) == expected);
    CHECK(hetero_tests::pieces_of(hetero_tests::last_region(rt)) == std::vector<std::string>{"opencl0[0,1)"});
  }
  SUBCASE("split over cpu0 and opencl0") {
    if (!hetero_tests::has_leaves(discovered, {"cpu0", "opencl0"})) return;
    hetero_tests::use_leaves(rt, discovered, {"cpu0", "opencl0"});
    CHECK(fill_on(rt, problem, 16, {"numa0", "percentage:[50,50]"}) == expected);
    // The longest anti-diagonal's ten blocks went five to each leaf.
    bool longest_split = false;
    for (const RegionStats& region : rt.stats().recent)
      longest_split =
          longest_split || hetero_tests::pieces_of(region) == std::vector<std::string>{"cpu0[0,5)", "opencl0[5,10)"};
    CHECK(longest_split);
  }
}

TEST_CASE("nw: the generating region writes the host generator's matrices") {
  Runtime rt;
  const Hierarchy discovered = rt.hierarchy();
  const rodinia::nw::Problem expected = rodinia::nw::generate(kDim, kPenalty);
  const std::int64_t side = expected.side();
  auto generate_on = [&](const rodinia::nw::Where& where) {
    auto score = rt.array<std::int32_t, 2>(Shape(side, side), named("score") | uninitialized());
    auto reference = rt.array<std::int32_t, 2>(Shape(side, side), named("reference") | uninitialized());
    rodinia::nw::Generator(kDim).launch(rt, reference, score, kPenalty, where);
    const auto s = score.host_read();
    const auto r = reference.host_read();
    CHECK(std::vector<std::int32_t>(s.begin(), s.end()) == expected.score);
    CHECK(std::vector<std::int32_t>(r.begin(), r.end()) == expected.reference);
  };
  SUBCASE("cpu0") {
    REQUIRE(hetero_tests::has_leaves(discovered, {"cpu0"}));
    generate_on({"cpu0", "static"});
  }
  SUBCASE("opencl0") {
    if (!hetero_tests::has_leaves(discovered, {"opencl0"})) return;
    generate_on({"opencl0", "static"});
  }
  SUBCASE("split over cpu0 and opencl0") {
    if (!hetero_tests::has_leaves(discovered, {"cpu0", "opencl0"})) return;
    hetero_tests::use_leaves(rt, discovered, {"cpu0", "opencl0"});
    generate_on({"numa0", "percentage:[50,50]"});
    // The region split: rows of both leaves, each written where it ran.
    const auto pieces = hetero_tests::pieces_of(hetero_tests::last_region(rt));
    REQUIRE(pieces.size() == 2);
    CHECK(pieces[0].rfind("cpu0[0,", 0) == 0);
    CHECK(pieces[1].rfind("opencl0[", 0) == 0);
    CHECK(pieces[1].find(",161)") != std::string::npos);
  }
  CHECK_THROWS_WITH_AS(rodinia::nw::Generator(kDim).launch(rt, rt.array<std::int32_t, 2>(Shape(4, 4)),
                                                           rt.array<std::int32_t, 2>(Shape(4, 4)), kPenalty, {}),
                       doctest::Contains("must be 161x161"), canopy::Error);
  CHECK_THROWS_WITH_AS(rodinia::nw::Generator(0), doctest::Contains("must be positive, got 0"), canopy::Error);
}

TEST_CASE("nw: Rodinia's input and traceback") {
  const rodinia::nw::Problem p = rodinia::nw::generate(32, 10);
  const std::int64_t side = p.side();
  CHECK(p.score[std::size_t(5 * side)] == -50);
  CHECK(p.score[5] == -50);
  CHECK(p.score[std::size_t(5 * side + 5)] == 0);
  CHECK(p.reference[std::size_t(3)] == 0);
  // Every reference value is a BLOSUM62 score of residues 1..10 against 1..10.
  for (std::int64_t i = 1; i < side; ++i)
    for (std::int64_t j = 1; j < side; ++j) {
      const std::int32_t r = p.reference[std::size_t(i * side + j)];
      CHECK((r >= -4 && r <= 11));
    }

  // By hand, penalty 1: s(1,1) = 0 + 5, s(1,2) = s(1,1) - 1, s(2,1) = s(1,1) - 1,
  // s(2,2) = s(1,1) + 4. Rodinia starts the trace at (dim-1, dim-1) = (1, 1):
  // it prints 5, then moves diagonally (5 = 0 + 5 beats -1 - 1) and prints 0.
  const std::vector<std::int32_t> reference{0, 0, 0, 0, 5, -1, 0, -1, 4};
  std::vector<std::int32_t> score{0, -1, -2, -1, 0, 0, -2, 0, 0};
  score[4] = 5;
  score[5] = 4;
  score[7] = 4;
  score[8] = 9;
  CHECK(rodinia::nw::traceback(score.data(), reference.data(), 2, 1) == "print traceback value GPU:\n5 0 ");
  // With s(1,0) = 9 the best move from (1, 1) is left (9 - 1 beats 0 + 0):
  // it prints 9; from column 0 the only move is up, to s(0,0) = 0.
  const std::vector<std::int32_t> zeros(9, 0);
  const std::vector<std::int32_t> left{0, -1, -2, 9, 9, 9, 9, 9, 9};
  CHECK(rodinia::nw::traceback(left.data(), zeros.data(), 2, 1) == "print traceback value GPU:\n9 9 0 ");
}

TEST_CASE("nw: a length that is not a multiple of the block is refused") {
  CHECK(hetero_tests::error_of([] {
          rodinia::nw::Aligner(100, 16);
        }).find("100 is not a positive multiple of the block 16") != std::string::npos);
  CHECK(rodinia::nw::default_block(16384) == 64);
  CHECK(rodinia::nw::default_block(160) == 32);
  CHECK(rodinia::nw::default_block(100) == 0);
}
