// gaussian: Rodinia's Gaussian elimination on Canopy. Reads Rodinia's command
// line and input file and prints what Rodinia prints (the multipliers, the
// eliminated matrix, b and the solution, unless -q).
//
//   gaussian -s SIZE | -f FILE [--generate SIZE] [-q] [--check]
//            [--policy P] [--at LOCATION] [--stats]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>

#include "rodinia/common/rodinia.hpp"
#include "rodinia/gaussian/gaussian.hpp"

namespace {

constexpr const char* kUsage =
    "gaussian -s SIZE | -f FILE [--generate SIZE] [-q] [--check] [--policy P] [--at LOCATION] [--stats]\n"
    "  -s SIZE          Rodinia's internal system: a(i,j) = 10*exp(-0.01*|i-j|), b = 1\n"
    "  -f FILE          a system in Rodinia's format: n, the n*n matrix, then the n values of b\n"
    "  --generate SIZE  a random diagonally dominant system (fixed seed), written to the -f file first if one is "
    "given\n"
    "  -q               quiet: do not print the matrices and the solution\n"
    "  --check          check that the solution solves the system (the residual, in double)\n"
    "  --policy P       how each step splits over the leaves (default static)\n"
    "  --at LOCATION    where the steps run (default: where the arrays are)\n"
    "  --stats          print the runtime's statistics at the end";

void print_matrix(const float* m, std::int64_t rows, std::int64_t cols) {
  for (std::int64_t i = 0; i < rows; ++i) {
    for (std::int64_t j = 0; j < cols; ++j) std::printf("%8.2f ", double(m[i * cols + j]));
    std::printf("\n");
  }
  std::printf("\n");
}

void print_vector(const float* v, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) std::printf("%.2f ", double(v[i]));
  std::printf("\n\n");
}

// The largest |(A x - b)_i| over the largest |b_i|, in double.
double relative_residual(const rodinia::gaussian::System& s, const std::vector<float>& x) {
  double worst = 0, scale = 0;
  for (std::int64_t i = 0; i < s.n; ++i) {
    double row = 0;
    for (std::int64_t j = 0; j < s.n; ++j)
      row += double(s.a[static_cast<std::size_t>(i * s.n + j)]) * double(x[static_cast<std::size_t>(j)]);
    worst = rodinia::worse(worst, std::fabs(row - double(s.b[static_cast<std::size_t>(i)])));
    scale = std::max(scale, std::fabs(double(s.b[static_cast<std::size_t>(i)])));
  }
  return scale > 0 ? worst / scale : worst;
}

}  // namespace

int main(int argc, char** argv) {
  const char* program = "gaussian";
  std::string file;
  std::int64_t size = 0, generate = 0;
  rodinia::gaussian::Where where;
  bool verbose = true, check = false, stats = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) rodinia::usage_error(program, arg + " needs a value", kUsage);
      return argv[++i];
    };
    if (arg == "-s") {
      size = rodinia::parse_integer(program, "-s", value(), kUsage);
    } else if (arg == "-f") {
      file = value();
    } else if (arg == "--generate") {
      generate = rodinia::parse_integer(program, "--generate", value(), kUsage);
    } else if (arg == "-q") {
      verbose = false;
    } else if (arg == "--check") {
      check = true;
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
  if (size == 0 && file.empty() && generate == 0)
    rodinia::usage_error(program, "give -s SIZE, -f FILE or --generate SIZE", kUsage);

  try {
    rodinia::gaussian::System system;
    if (generate > 0) {
      std::printf("Generate a random system, size = %lld \n", static_cast<long long>(generate));
      system = rodinia::gaussian::generated_system(generate);
      if (!file.empty()) rodinia::gaussian::write_system(file, system);
    }
    if (!file.empty()) {
      std::printf("Read file from %s \n", file.c_str());
      system = rodinia::gaussian::read_system(file);
    } else if (generate == 0) {
      std::printf("Create matrix internally in parse, size = %lld \n", static_cast<long long>(size));
      system = rodinia::gaussian::internal_system(size);
    }
    const std::int64_t n = system.n;
    // The check takes the residual against the system before the run, which eliminates in place.
    const auto original = check ? system : decltype(system)();
    canopy::Runtime rt;
    // The system's own memory, not a copy (rt.wrap): the process holds it once.
    auto a = rt.wrap<float, 2>(system.a.data(), canopy::Shape(n, n), canopy::named("a"));
    auto b = rt.wrap(system.b.data(), canopy::Shape(n), canopy::named("b"));
    auto m = rt.array<float, 2>(canopy::Shape(n, n), canopy::named("m"));
    rodinia::gaussian::Eliminator eliminator(n);

    const auto start = std::chrono::steady_clock::now();
    eliminator.launch(rt, a, b, m, where);
    rt.pause();
    const auto eliminated = a.host_read();
    const auto rhs = b.host_read();
    const auto multipliers = m.host_read();
    const double forward = rodinia::seconds_since(start);
    const auto solution = rodinia::gaussian::back_substitute(eliminated.data(), rhs.data(), n);
    const double total = rodinia::seconds_since(start);
    if (verbose) {
      std::printf("Matrix m is: \n");
      print_matrix(multipliers.data(), n, n);
      std::printf("Matrix a is: \n");
      print_matrix(eliminated.data(), n, n);
      std::printf("Array b is: \n");
      print_vector(rhs.data(), n);
      std::printf("The final solution is: \n");
      print_vector(solution.data(), n);
    }
    std::printf("\nTime total (including memory transfers)\t%f sec\n", total);
    std::printf("Time for Canopy regions:\t%f sec (%lld regions)\n", forward,
                static_cast<long long>(eliminator.regions()));
    if (check) {
      // Float elimination of a well-conditioned system leaves a residual of a
      // few float roundings per element of a row.
      const double residual = relative_residual(original, solution);
      if (residual <= 1e-4)
        std::printf("Validation: ok (residual %.3g)\n", residual);
      else
        std::printf("Validation: the residual is %.3g of |b|\n", residual);
    }
    if (stats) std::printf("%s", rt.stats().to_text().c_str());
  } catch (const canopy::Error& e) {
    rodinia::report_error("gaussian", e.what());
    return 1;
  }
  return 0;
}
