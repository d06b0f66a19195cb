// canopy-diff: the differential runner. Generates random programs
// (generate.hpp), computes what each must give on the reference interpreter,
// runs it on Canopy on every backend this node has and on a random subset of
// placements (trees of leaves and split policies, checked mode), and compares.
// A mismatch prints the seed and the placement, shrinks the program to a
// small reproducer (shrink.hpp), writes it to a file and prints the command
// that replays it.
//
//   canopy-diff [--seed S] [--programs N | --seconds T] [--placements K]
//               [--placement NAME] [--replay FILE]... [--max-kernels K] [--print]
//               [--renew N] [--out DIR] [--list] [--keep-going] [--self-check] [--no-shrink] [--shrink-seconds T]
//               [--progress N]
//
// --progress N prints the running totals every N programs, so that a long run
// that is stopped still says how far it got with how many mismatches. Given
// both --programs and --seconds, it stops at whichever comes first. One
// process should not run many more than a few thousand programs: every
// kernel it compiles stays mapped (the CPU JIT keeps its code, PoCL its
// kernel libraries), and Linux allows a process 65,530 mappings;
// `tools/canopy fuzz diff` runs a fresh process every 1,000 programs.
//
// Deterministic from its seed: program S is the same on every run, and so is
// the choice of its placements. Exit status 0 when nothing differed, 1 on a
// mismatch, 2 on bad arguments.
#include <fmt/format.h>

#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <canopy/ir/error.hpp>

#include "generate.hpp"
#include "run.hpp"
#include "shrink.hpp"

using namespace canopy;
using namespace canopy::diff;

namespace {

struct Options {
  std::uint64_t seed = 1;
  std::int64_t programs = 0;        ///< > 0: stop after this many programs (100 when neither this nor seconds is given)
  double seconds = 0;               ///< > 0: stop when this much time has passed
  int placements = 3;               ///< random placements per program, besides one leaf of each backend
  std::string placement;            ///< only this placement
  std::vector<std::string> replay;  ///< program files instead of generated programs, run in order
  int max_kernels = 3;
  int renew = 50;         ///< fresh runtimes every this many programs
  std::string out = ".";  ///< where reproducers go
  bool list = false;
  bool keep_going = false;
  bool print = false;           ///< print each program's text instead of running it
  bool self_check = false;      ///< only check the generator (see self_check())
  bool shrink = true;           ///< shrink a program that shows a mismatch
  double shrink_seconds = 180;  ///< for at most this long
  std::int64_t progress = 0;    ///< > 0: print the totals every this many programs
};

[[noreturn]] void usage(const std::string& problem) {
  std::fprintf(stderr, "canopy-diff: %s\n", problem.c_str());
  std::fprintf(stderr,
               "usage: canopy-diff [--seed S] [--programs N | --seconds T] [--placements K] [--placement NAME]\n"
               "                   [--replay FILE]... [--max-kernels K] [--renew N] [--out DIR] [--list] "
               "[--keep-going] [--print] [--self-check] [--no-shrink] [--shrink-seconds T]\n"
               "                   [--progress N]\n");
  std::exit(2);
}

Options parse_options(int argc, char** argv) {
  Options o;
  auto value = [&](int& i) -> std::string {
    if (i + 1 >= argc) usage(std::string(argv[i]) + " needs a value");
    return argv[++i];
  };
  auto number = [&](int& i) {
    const std::string text = value(i);
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    if (text.empty() || *end || v < 0)
      usage(fmt::format("{} takes a number of 0 or more, not '{}'", argv[i - 1], text));
    return v;
  };
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--seed")
      o.seed = std::uint64_t(number(i));
    else if (arg == "--programs")
      o.programs = std::int64_t(number(i));
    else if (arg == "--seconds")
      o.seconds = number(i);
    else if (arg == "--placements")
      o.placements = int(number(i));
    else if (arg == "--placement")
      o.placement = value(i);
    else if (arg == "--replay")
      o.replay.push_back(value(i));
    else if (arg == "--max-kernels")
      o.max_kernels = std::max(1, int(number(i)));
    else if (arg == "--renew")
      o.renew = std::max(1, int(number(i)));
    else if (arg == "--out")
      o.out = value(i);
    else if (arg == "--list")
      o.list = true;
    else if (arg == "--keep-going")
      o.keep_going = true;
    else if (arg == "--print")
      o.print = true;
    else if (arg == "--self-check")
      o.self_check = true;
    else if (arg == "--no-shrink")
      o.shrink = false;
    else if (arg == "--shrink-seconds")
      o.shrink_seconds = number(i);
    else if (arg == "--progress")
      o.progress = std::int64_t(number(i));
    else
      usage("unknown argument '" + arg + "'");
  }
  return o;
}

// What a crash prints: the program and placement it happened on.
char crash_note[512] = "canopy-diff: crashed before running a program\n";

void on_crash(int signal) {
  const ssize_t written = write(2, crash_note, std::strlen(crash_note));
  (void)written;
  std::signal(signal, SIG_DFL);
  std::raise(signal);
}

void note_running(const std::string& what) {
  std::snprintf(crash_note, sizeof crash_note, "canopy-diff: crashed while running %s\n", what.c_str());
}

// One leaf of each backend, one leaf with fusion off, then `count` other
// placements drawn from `seed`.
std::vector<const Placement*> placements_for(const CanopyRunner& runner, std::uint64_t seed, int count) {
  std::vector<const Placement*> chosen, others;
  std::map<std::string, bool> backend_seen;
  bool unfused_seen = false;
  for (const auto& p : runner.placements()) {
    if (!p.fuse && !unfused_seen && p.leaves.size() == 1) {
      unfused_seen = true;
      chosen.push_back(&p);
      continue;
    }
    const bool single = p.leaves.size() == 1 && !p.checked && p.fuse;
    const std::string backend = p.leaves[0].substr(0, p.leaves[0].find_first_of("0123456789"));
    if (single && !backend_seen[backend]) {
      backend_seen[backend] = true;
      chosen.push_back(&p);
    } else {
      others.push_back(&p);
    }
  }
  Rng rng(seed * 0x2545F4914F6CDD1DULL + 17);
  for (int k = 0; k < count && !others.empty(); ++k) {
    const std::size_t at = rng.below(others.size());
    chosen.push_back(others[at]);
    others.erase(others.begin() + std::ptrdiff_t(at));
  }
  return chosen;
}

struct Totals {
  std::int64_t programs = 0, runs = 0, kernels = 0, steps = 0, mismatches = 0, unsure_points = 0;
  Counts counts;
  std::map<std::string, std::int64_t> by_placement;
};

// The one-line summary of a run, so far or at its end.
void print_totals(CanopyRunner& runner, const Options& options, const Totals& totals, std::uint64_t next_seed,
                  double seconds) {
  std::string backends;
  for (const auto& leaf : runner.leaves()) backends += (backends.empty() ? "" : ", ") + leaf;
  const std::string which = options.replay.empty() ? fmt::format("seeds {}..{}", options.seed, next_seed - 1)
                                                   : fmt::format("replayed from {} file(s)", options.replay.size());
  std::printf(
      "canopy-diff: %lld programs (%s, %lld kernels, %lld steps), %lld runs on %zu placements, "
      "leaves %s; %lld values compared, %lld unsure (not compared), %lld unsure points; %lld regions ran fused; "
      "%lld followed their inputs' split; %s%lld mismatches; %.1f s\n",
      (long long)totals.programs, which.c_str(), (long long)totals.kernels, (long long)totals.steps,
      (long long)totals.runs, totals.by_placement.size(), backends.c_str(), (long long)totals.counts.values,
      (long long)totals.counts.unsure, (long long)totals.unsure_points, (long long)totals.counts.fused,
      (long long)totals.counts.followed,
      totals.counts.refused > 0
          ? fmt::format("{} runs refused as expected (arrays beyond CANOPY_DEVICE_MEMORY); ", totals.counts.refused)
                .c_str()
          : "",
      (long long)totals.mismatches, seconds);
  std::fflush(stdout);
}

// Runs `program` on `placement`; on a mismatch prints it, shrinks the
// program, writes the reproducer and prints the command that replays it.
bool check(CanopyRunner& runner, const Program& program, const Expectation& expected, const Placement& placement,
           const Options& options, Totals& totals, const char* self) {
  note_running(fmt::format("program seed {} on placement {}", program.seed, placement.name));
  auto mismatch = runner.run(program, expected, placement, totals.counts);
  ++totals.runs;
  ++totals.by_placement[placement.name];
  if (!mismatch) return true;
  ++totals.mismatches;
  std::printf(
      "MISMATCH: program seed %llu on placement %s, %s: %s\n", (unsigned long long)program.seed, placement.name.c_str(),
      mismatch->step < 0 ? "at the end" : fmt::format("step {}", mismatch->step + 1).c_str(), mismatch->what.c_str());
  std::fflush(stdout);
  if (!options.shrink) return false;
  Counts ignored;
  const auto shrinking = std::chrono::steady_clock::now();
  auto fails = [&](const Program& candidate) {
    // Small enough by now.
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - shrinking).count() > options.shrink_seconds)
      return false;
    try {
      const Expectation e = expect(candidate);
      return runner.run(candidate, e, placement, ignored).has_value();
    } catch (const Error&) {
      return false;  // not a valid program
    }
  };
  const Program small = shrink(program, mismatch->step, fails, 400);
  std::string what = "(the shrunk program no longer differs; the full one is replayed with --seed)";
  try {
    const Expectation e = expect(small);
    if (auto m = runner.run(small, e, placement, ignored)) what = m->what;
  } catch (const Error& e) {
    what = e.what();
  }
  const std::string file = fmt::format("{}/canopy-diff-{}.txt", options.out, program.seed);
  std::string commented;
  for (std::istringstream lines(what); std::getline(lines, what);) commented += "# " + what + "\n";
  std::ofstream(file) << "# canopy-diff reproducer: program seed " << program.seed << ", placement " << placement.name
                      << "\n"
                      << commented << print(small);
  std::printf("shrunk to %zu step(s), %zu kernel(s), %zu array(s):\n%s\n%s\n", small.steps.size(), small.kernels.size(),
              small.arrays.size(), what.c_str(), print(small).c_str());
  std::printf("replay: %s --replay %s --placement %s\n", self, file.c_str(), placement.name.c_str());
  std::printf("the whole program: %s --seed %llu --programs 1 --placement %s\n", self, (unsigned long long)program.seed,
              placement.name.c_str());
  std::fflush(stdout);
  return false;
}

// The generator alone, without Canopy: each program is the same when drawn
// twice, reads back from its text form to the same text, and is valid (the
// reference runs it without an index out of bounds). Returns the failures.
int self_check(const Options& options) {
  int failures = 0;
  GeneratorOptions generator;
  generator.max_kernels = options.max_kernels;
  for (std::int64_t k = 0; k < options.programs; ++k) {
    const std::uint64_t seed = options.seed + std::uint64_t(k);
    const Program program = generate_program(seed, generator);
    const std::string text = print(program);
    std::string problem;
    try {
      if (print(generate_program(seed, generator)) != text)
        problem = "drawn twice, it differs";
      else if (print(parse_program(text)) != text)
        problem = "its text does not read back to the same text";
      else
        expect(program);
    } catch (const Error& e) {
      problem = e.what();
    }
    if (problem.empty()) continue;
    ++failures;
    std::printf("GENERATOR: program seed %llu: %s\n%s\n", (unsigned long long)seed, problem.c_str(), text.c_str());
  }
  std::printf("canopy-diff --self-check: %lld programs (seeds %llu..%llu), %d failures\n", (long long)options.programs,
              (unsigned long long)options.seed, (unsigned long long)(options.seed + options.programs - 1), failures);
  return failures;
}

int list_placements(const CanopyRunner& runner) {
  for (const auto& p : runner.placements()) std::printf("%s\n", p.name.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const Options options = parse_options(argc, argv);
  std::signal(SIGSEGV, on_crash);
  std::signal(SIGABRT, on_crash);
  std::signal(SIGBUS, on_crash);
  std::signal(SIGFPE, on_crash);
  try {
    if (options.self_check) return self_check(options) == 0 ? 0 : 1;
    CanopyRunner runner;
    if (options.list) return list_placements(runner);
    const auto start = std::chrono::steady_clock::now();
    const auto elapsed = [&] {
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    };
    Totals totals;
    GeneratorOptions generator;
    generator.max_kernels = options.max_kernels;
    std::uint64_t seed = options.seed;
    bool ok = true;
    for (;;) {
      if (options.replay.empty()) {
        const std::int64_t most = options.programs > 0 ? options.programs : options.seconds > 0 ? 0 : 100;
        if ((options.seconds > 0 && elapsed() >= options.seconds) || (most > 0 && totals.programs >= most)) break;
      } else if (totals.programs >= std::int64_t(options.replay.size())) {
        break;
      }
      Program program;
      if (!options.replay.empty()) {
        const std::string& file = options.replay[std::size_t(totals.programs)];
        std::ifstream in(file);
        if (!in) usage("cannot read " + file);
        std::stringstream text;
        text << in.rdbuf();
        program = parse_program(text.str());
      } else {
        note_running(fmt::format("the generator on seed {}", seed));
        program = generate_program(seed++, generator);
      }
      if (options.print) {
        std::printf("%s", print(program).c_str());
        ++totals.programs;
        continue;
      }
      if (totals.programs > 0 && totals.programs % options.renew == 0) runner.renew();
      ++totals.programs;
      totals.kernels += std::int64_t(program.kernels.size());
      totals.steps += std::int64_t(program.steps.size());
      const Expectation expected = expect(program);
      totals.unsure_points += expected.unsure_points;
      std::vector<const Placement*> where;
      if (!options.placement.empty())
        where = {&runner.placement(options.placement)};
      else
        where = placements_for(runner, program.seed, options.placements);
      for (const Placement* p : where) {
        ok = check(runner, program, expected, *p, options, totals, argv[0]) && ok;
        if (!ok && !options.keep_going) break;
      }
      if (!ok && !options.keep_going) break;
      if (options.progress > 0 && totals.programs % options.progress == 0)
        print_totals(runner, options, totals, seed, elapsed());
    }
    if (options.progress <= 0 || totals.programs % options.progress != 0)
      print_totals(runner, options, totals, seed, elapsed());
    return ok ? 0 : 1;
  } catch (const Error& e) {
    std::fprintf(stderr, "canopy-diff: %s\n", e.what());
    return 1;
  }
}
