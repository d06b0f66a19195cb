// nw: Rodinia's Needleman-Wunsch on Canopy. Reads Rodinia's command line,
// builds the same sequences (the C library's generator seeded with 7) and
// writes the same result.txt (the traceback from the bottom-right corner).
//
//   nw <max_rows/max_cols> <penalty> <num_threads> [--generate] [--check]
//      [--block B] [--policy P] [--at LOCATION] [--stats]
//
// <num_threads> is read and ignored: Canopy runs on the leaves of its
// location tree. The input is always generated, as in Rodinia; --generate is
// accepted for symmetry with the other programs.
#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "rodinia/common/rodinia.hpp"
#include "rodinia/nw/nw.hpp"

namespace {

constexpr const char* kUsage =
    "nw <max_rows/max_cols> <penalty> <num_threads> [--generate] [--check] [--block B] [--policy P] [--at LOCATION] "
    "[--stats]\n"
    "  <max_rows/max_cols>  the length of both sequences, a multiple of 16\n"
    "  <penalty>            the gap penalty (a positive integer)\n"
    "  <num_threads>        read and ignored (Canopy runs on its leaves)\n"
    "  --generate           the sequences are always generated as Rodinia does (seed 7)\n"
    "  --check              compare every score with a serial computation\n"
    "  --block B            the block size (default: the largest of 64, 32, 16 that divides the length)\n"
    "  --policy P           how each region splits over the leaves (default static)\n"
    "  --at LOCATION        where the regions run (default: where the arrays are)\n"
    "  --stats              print the runtime's statistics at the end";

// The scores cell by cell, row by row, in plain C++.
std::vector<std::int32_t> align_serially(const std::int32_t* score, const std::int32_t* reference, std::int64_t side,
                                         std::int32_t penalty) {
  std::vector<std::int32_t> s(score, score + side * side);
  for (std::int64_t i = 1; i < side; ++i)
    for (std::int64_t j = 1; j < side; ++j) {
      const auto at = [&](std::int64_t r, std::int64_t c) { return s[static_cast<std::size_t>(r * side + c)]; };
      s[static_cast<std::size_t>(i * side + j)] =
          std::max({at(i - 1, j - 1) + reference[i * side + j], at(i, j - 1) - penalty, at(i - 1, j) - penalty});
    }
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  const char* program = "nw";
  std::vector<const char*> positional;
  bool check = false, stats = false;
  std::int64_t block = 0;
  rodinia::nw::Where where;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) rodinia::usage_error(program, arg + " needs a value", kUsage);
      return argv[++i];
    };
    if (arg == "--generate") {
      // The input is generated in any case.
    } else if (arg == "--check") {
      check = true;
    } else if (arg == "--block") {
      block = rodinia::parse_integer(program, "--block", value(), kUsage);
    } else if (arg == "--policy") {
      where.policy = value();
    } else if (arg == "--at") {
      where.location = value();
    } else if (arg == "--stats") {
      stats = true;
    } else if (arg == "-h" || arg == "--help") {
      std::printf("usage: %s\n", kUsage);
      return 0;
    } else if (!arg.empty() && arg[0] == '-' && arg.size() > 1 && !std::isdigit(static_cast<unsigned char>(arg[1]))) {
      rodinia::usage_error(program, "unknown option '" + arg + "'", kUsage);
    } else {
      positional.push_back(argv[i]);
    }
  }
  if (positional.size() != 3) rodinia::usage_error(program, "expected three arguments", kUsage);
  const std::int64_t dim = rodinia::parse_integer(program, "<max_rows/max_cols>", positional[0], kUsage);
  const auto penalty =
      static_cast<std::int32_t>(rodinia::parse_integer(program, "<penalty>", positional[1], kUsage, 0));
  rodinia::parse_integer(program, "<num_threads>", positional[2], kUsage);
  if (block == 0) block = rodinia::nw::default_block(dim);
  if (block == 0 || dim % block != 0)
    rodinia::usage_error(
        program, "the sequence length " + std::to_string(dim) + " must be a multiple of 16 (and of the block)", kUsage);

  try {
    const std::int64_t side = dim + 1;
    canopy::Runtime rt;
    // Generated straight into the runtime's arrays by a region (uninitialized:
    // each element is written once, by the leaf that later aligns its row),
    // so the process holds each matrix once, on huge pages where the system
    // allows them, and the leaves share the filling and the first touch of
    // its pages.
    auto score = rt.array<std::int32_t, 2>(canopy::Shape(side, side), canopy::named("score") | canopy::uninitialized());
    auto reference =
        rt.array<std::int32_t, 2>(canopy::Shape(side, side), canopy::named("reference") | canopy::uninitialized());
    rodinia::nw::Generator(dim).launch(rt, reference, score, penalty, where);
    // The serial check starts from the scores before the run, which aligns in place.
    const auto expected = check ? align_serially(score.host_read().data(), reference.host_read().data(), side, penalty)
                                : std::vector<std::int32_t>();
    std::printf("Start Needleman-Wunsch\n");
    rodinia::nw::Aligner aligner(dim, block);

    std::printf("Processing top-left matrix\n");
    const auto start = std::chrono::steady_clock::now();
    aligner.launch(rt, score, reference, penalty, where);
    rt.pause();
    const auto result = score.host_read();
    const double seconds = rodinia::seconds_since(start);
    std::printf("Processing bottom-right matrix\n");
    std::printf("Total time: %.3f seconds (%lld regions, blocks of %lldx%lld)\n", seconds,
                static_cast<long long>(aligner.regions()), static_cast<long long>(block),
                static_cast<long long>(block));

    const std::string text = rodinia::nw::traceback(result.data(), reference.host_read().data(), dim, penalty);
    std::FILE* out = std::fopen("result.txt", "w");
    if (!out) throw canopy::Error("cannot write result.txt in the current directory");
    std::fwrite(text.data(), 1, text.size(), out);
    std::fclose(out);

    if (check) {
      std::int64_t differ = 0;
      for (std::size_t k = 0; k < expected.size(); ++k) differ += expected[k] != result.data()[k];
      if (differ == 0)
        std::printf("Validation: ok\n");
      else
        std::printf("Validation: %lld scores differ from a serial computation\n", static_cast<long long>(differ));
    }
    if (stats) std::printf("%s", rt.stats().to_text().c_str());
  } catch (const canopy::Error& e) {
    rodinia::report_error("nw", e.what());
    return 1;
  }
  return 0;
}
