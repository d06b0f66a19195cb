// Rodinia's bfs on Canopy: reads a graph in Rodinia's format and writes
// result.txt with every node's cost, as Rodinia 3.1's bfs does. It can also
// generate its graph (--generate, fixed seed), run where --at and --policy
// say, and check itself against a plain queue on the host (--verify).
//
//   bfs graph1MW_6.txt
//   bfs 4 graph1MW_6.txt                (the OpenMP version's form: a thread count first, ignored)
//   bfs graph.txt --generate 100000 --verify
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "../common/rodinia.hpp"
#include "bfs.hpp"

namespace {

constexpr const char* kProgram = "bfs";
constexpr const char* kUsage =
    "bfs [threads] <input_file> [options]\n"
    "  input_file      a graph in Rodinia's format (the OpenMP version's thread count before it is ignored)\n"
    "  --generate N    first write a generated graph of N nodes (fixed seed) to input_file\n"
    "  --output FILE   where the costs go (default result.txt)\n"
    "  --at LOCATION   run the regions at LOCATION (default: where the arrays are)\n"
    "  --policy P      how the nodes are split over the leaves (default static)\n"
    "  --verify        also search with a plain queue on the host and compare";

struct Options {
  std::string input, output = "result.txt";
  long long generate = 0;
  bool verify = false;
  std::string location, policy = "static";
};

Options parse(int argc, char** argv) {
  Options o;
  std::vector<std::string> positional;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) rodinia::usage_error(kProgram, arg + " needs a value", kUsage);
      return argv[++i];
    };
    if (arg == "--generate")
      o.generate = rodinia::parse_integer(kProgram, "--generate", value(), kUsage, 1);
    else if (arg == "--output")
      o.output = value();
    else if (arg == "--at")
      o.location = value();
    else if (arg == "--policy")
      o.policy = value();
    else if (arg == "--verify")
      o.verify = true;
    else if (arg.size() > 1 && arg[0] == '-')
      rodinia::usage_error(kProgram, "unknown option '" + arg + "'", kUsage);
    else
      positional.push_back(arg);
  }
  if (positional.size() == 2) {  // the OpenMP version: <num_threads> <input_file>
    rodinia::parse_integer(kProgram, "the thread count", positional[0].c_str(), kUsage, 1);
    positional.erase(positional.begin());
  }
  if (positional.size() != 1) rodinia::usage_error(kProgram, "expected one input file", kUsage);
  o.input = positional[0];
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  namespace bfs = rodinia::bfs;
  const Options o = parse(argc, argv);
  try {
    if (o.generate) {
      bfs::write_graph(o.input, bfs::generate(o.generate));
      std::printf("Generated a graph of %lld nodes into %s\n", o.generate, o.input.c_str());
    }
    std::printf("Reading File\n");
    const bfs::Graph graph = bfs::read_graph(o.input);
    std::printf("Start traversing the tree\n");
    canopy::Runtime rt;
    bfs::Search search(rt, o.location, o.policy);
    std::vector<std::int32_t> cost;
    const auto start = std::chrono::steady_clock::now();
    const int levels = search.run(graph, cost);
    std::printf("Compute time: %f\n", rodinia::seconds_since(start));
    std::printf("Levels: %d\n", levels);
    bfs::write_result(o.output, cost);
    std::printf("Result stored in %s\n", o.output.c_str());
    if (o.verify) {
      const std::vector<std::int32_t> serial = bfs::search_serially(graph);
      std::size_t differ = 0, reached = 0;
      for (std::size_t i = 0; i < cost.size(); ++i) {
        differ += cost[i] != serial[i];
        reached += cost[i] >= 0;
      }
      if (differ) {
        std::printf("Verification: FAILED (%zu of %zu costs differ from a plain queue on the host)\n", differ,
                    cost.size());
        return 1;
      }
      std::printf("Verification: ok (%zu of %zu nodes reached, every cost equal to a plain queue on the host)\n",
                  reached, cost.size());
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", kProgram, e.what());
    return 1;
  }
}
