// lud: Rodinia's LU decomposition on Canopy. Reads Rodinia's command line and
// input file and prints what Rodinia prints (the time; with -v, the elements
// where L * U differs from the input).
//
//   lud [-v] [-n threads] -s SIZE | -i FILE [--generate SIZE] [--block B]
//       [--policy P] [--at LOCATION] [--stats]
//
// -n is read and ignored: Canopy runs on the leaves of its location tree.
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "rodinia/common/rodinia.hpp"
#include "rodinia/lud/lud.hpp"

namespace {

constexpr const char* kUsage =
    "lud [-v] [-n threads] -s SIZE | -i FILE [--generate SIZE] [--block B] [--policy P] [--at LOCATION] [--stats]\n"
    "  -s SIZE          Rodinia's internal matrix: a(i,j) = 10*exp(-0.001*|i-j|)\n"
    "  -i FILE          a matrix in Rodinia's format: n, then the n*n elements row by row\n"
    "  --generate SIZE  a random diagonally dominant matrix (fixed seed), written to the -i file first if one is "
    "given\n"
    "  -v               verify: rebuild L*U and list the elements that differ from the input by more than 1e-4\n"
    "  --block B        the block size (default 16)\n"
    "  --policy P       how each region splits over the leaves (default static)\n"
    "  --at LOCATION    where the regions run (default: where the arrays are)\n"
    "  --stats          print the runtime's statistics at the end";

}  // namespace

int main(int argc, char** argv) {
  const char* program = "lud";
  std::string input;
  std::int64_t size = 0, generate = 0, block = 16;
  bool verify = false, stats = false;
  rodinia::lud::Where where;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) rodinia::usage_error(program, arg + " needs a value", kUsage);
      return argv[++i];
    };
    if (arg == "-v" || arg == "--verify") {
      verify = true;
    } else if (arg == "-s" || arg == "--size") {
      size = rodinia::parse_integer(program, "-s", value(), kUsage);
      std::printf("Generate input matrix internally, size =%lld\n", static_cast<long long>(size));
    } else if (arg == "-i" || arg == "--input") {
      input = value();
    } else if (arg == "-n") {
      rodinia::parse_integer(program, "-n", value(), kUsage);
    } else if (arg == "--generate") {
      generate = rodinia::parse_integer(program, "--generate", value(), kUsage);
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
    } else {
      rodinia::usage_error(program, "unknown argument '" + arg + "'", kUsage);
    }
  }

  try {
    rodinia::Vector<float> matrix;
    std::int64_t n = 0;
    if (generate > 0) {
      std::printf("Generating a random matrix, size=%lld\n", static_cast<long long>(generate));
      matrix = rodinia::lud::generated_matrix(generate);
      n = generate;
      if (!input.empty()) rodinia::lud::write_matrix(input, matrix, n);
    }
    if (!input.empty()) {
      std::printf("Reading matrix from file %s\n", input.c_str());
      matrix = rodinia::lud::read_matrix(input, n);
    } else if (generate == 0 && size > 0) {
      std::printf("Creating matrix internally size=%lld\n", static_cast<long long>(size));
      matrix = rodinia::lud::internal_matrix(size);
      n = size;
    } else if (generate == 0) {
      rodinia::usage_error(program, "give -s SIZE, -i FILE or --generate SIZE", kUsage);
    }
    if (verify) std::printf("Before LUD\n");

    // The check compares with the matrix before the run, which decomposes in place.
    const rodinia::Vector<float> original = verify ? matrix : rodinia::Vector<float>();
    canopy::Runtime rt;
    // The matrix's own memory, not a copy (rt.wrap): the process holds it once.
    auto a = rt.wrap<float, 2>(matrix.data(), canopy::Shape(n, n), canopy::named("matrix"));
    rodinia::lud::Decomposer decomposer(n, block);
    auto panel = decomposer.make_panel(rt);

    const auto start = std::chrono::steady_clock::now();
    decomposer.launch(rt, a, panel, where);
    rt.pause();
    const auto lu = a.host_read();
    std::printf("Time consumed(ms): %lf\n", 1000 * rodinia::seconds_since(start));
    if (verify) {
      std::printf("After LUD\n>>>Verify<<<<\n");
      std::string report;
      const std::int64_t mismatches = rodinia::lud::verify(original, lu.data(), n, report);
      std::printf("%s", report.c_str());
      if (mismatches > 20) std::printf("... and %lld more\n", static_cast<long long>(mismatches - 20));
      if (mismatches == 0)
        std::printf("Validation: ok\n");
      else
        std::printf("Validation: %lld elements differ\n", static_cast<long long>(mismatches));
    }
    if (stats) std::printf("%s", rt.stats().to_text().c_str());
  } catch (const canopy::Error& e) {
    rodinia::report_error("lud", e.what());
    return 1;
  }
  return 0;
}
