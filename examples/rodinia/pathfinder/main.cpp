// pathfinder: Rodinia's dynamic programming over a grid of walls, on Canopy.
// Reads the command line of Rodinia 3.1 (the OpenMP version's two numbers,
// and the GPU versions' third):
//
//   pathfinder <cols> <rows> [<pyramid_height>]
//
// and, like Rodinia, makes the walls itself (rand() seeded with 9, each
// wall 0..9) and prints the first row of walls and then the cheapest cost of
// reaching each column of the last row, each as one line of numbers.
// <pyramid_height> is read and ignored: Canopy runs one region per row.
// Options (anywhere on the line):
//   --generate     accepted for symmetry with the other examples: the walls are always generated
//   --check        compare the result with a serial search and say "Validation: ok"
//   --policy P     how each row is split over the leaves (default static)
//   --at LOCATION  where the rows run (default: where the arrays are, the root)
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <canopy/canopy.hpp>

#include "rodinia/pathfinder/pathfinder.hpp"

namespace {

constexpr const char* kUsage = "pathfinder <cols> <rows> [<pyramid_height>] [--check] [--policy P] [--at LOCATION]";

}  // namespace

int main(int argc, char** argv) {
  std::vector<const char*> positional;
  bool check = false;
  std::string policy = "static", location;
  for (int a = 1; a < argc; ++a) {
    if (!std::strcmp(argv[a], "--generate"))
      continue;
    else if (!std::strcmp(argv[a], "--check"))
      check = true;
    else if (!std::strcmp(argv[a], "--policy") && a + 1 < argc)
      policy = argv[++a];
    else if (!std::strcmp(argv[a], "--at") && a + 1 < argc)
      location = argv[++a];
    else if (argv[a][0] == '-' && argv[a][1] == '-')
      rodinia::usage_error("pathfinder", std::string("unknown option ") + argv[a], kUsage);
    else
      positional.push_back(argv[a]);
  }
  if (positional.size() != 2 && positional.size() != 3)
    rodinia::usage_error("pathfinder", "expected 2 or 3 arguments", kUsage);
  const auto cols = rodinia::parse_integer("pathfinder", "<cols>", positional[0], kUsage);
  const auto rows = rodinia::parse_integer("pathfinder", "<rows>", positional[1], kUsage);
  if (positional.size() == 3) rodinia::parse_integer("pathfinder", "<pyramid_height>", positional[2], kUsage);

  try {
    const rodinia::pathfinder::Walls walls = rodinia::pathfinder::generate(cols, rows);
    canopy::Runtime rt;
    rodinia::pathfinder::Search search(rt, walls, location, policy);
    const auto start = std::chrono::steady_clock::now();
    search.run();
    const std::vector<std::int32_t> result = search.result();
    const double seconds = rodinia::seconds_since(start);
    rodinia::pathfinder::print_row(walls.row(0), cols);
    rodinia::pathfinder::print_row(result.data(), cols);
    std::fprintf(stderr, "pathfinder: %lld rows of %lld columns in %.3f seconds\n", rows, cols, seconds);
    if (check) {
      const std::vector<std::int32_t> expected = rodinia::pathfinder::search_serially(walls);
      std::int64_t wrong = 0;
      for (std::int64_t n = 0; n < cols; ++n) wrong += result[std::size_t(n)] != expected[std::size_t(n)];
      if (wrong) {
        std::printf("Validation: FAILED (%lld of %lld columns differ from a serial search)\n",
                    static_cast<long long>(wrong), cols);
        return 1;
      }
      std::printf("Validation: ok (every column equals a serial search)\n");
    }
  } catch (const canopy::Error& e) {
    rodinia::report_error("pathfinder", e.what());
    return 1;
  }
  return 0;
}
