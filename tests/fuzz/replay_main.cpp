// main() of the fuzz targets when they are built without libFuzzer: runs
// LLVMFuzzerTestOneInput once on every file named on the command line, and on
// every regular file below each directory named there (in sorted order, so
// that runs are repeatable). This is how CTest replays the seed corpus with
// the project's normal compiler, and how a finding is re-run under a debugger.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <system_error>
#include <vector>

#include "fuzz_support.hpp"

namespace {

std::vector<std::filesystem::path> inputs_named(const std::vector<std::string>& arguments) {
  std::vector<std::filesystem::path> inputs;
  for (const std::string& argument : arguments) {
    const std::filesystem::path path(argument);
    if (!std::filesystem::is_directory(path)) {
      inputs.push_back(path);
      continue;
    }
    std::vector<std::filesystem::path> found;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(path))
      if (entry.is_regular_file()) found.push_back(entry.path());
    std::sort(found.begin(), found.end());
    inputs.insert(inputs.end(), found.begin(), found.end());
  }
  return inputs;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> arguments(argv + 1, argv + argc);
  // libFuzzer's own switches (-runs=N, ...) are accepted and ignored, so that
  // the same command line works with either build.
  arguments.erase(std::remove_if(arguments.begin(), arguments.end(),
                                 [](const std::string& argument) { return argument.starts_with("-"); }),
                  arguments.end());
  if (arguments.empty()) {
    std::fprintf(stderr, "usage: %s FILE_OR_DIRECTORY...\n  runs the fuzz target once on each input\n", argv[0]);
    return 2;
  }
  std::vector<std::filesystem::path> inputs;
  try {
    inputs = inputs_named(arguments);
  } catch (const std::filesystem::filesystem_error& error) {
    std::fprintf(stderr, "cannot list the inputs: %s\n", error.what());
    return 1;
  }
  if (inputs.empty()) {
    std::fprintf(stderr, "no inputs found in the files and directories named\n");
    return 1;
  }
  for (const auto& input : inputs) {
    std::ifstream file(input, std::ios::binary);
    if (!file) {
      std::fprintf(stderr, "cannot read %s\n", input.c_str());
      return 1;
    }
    const std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    // Named first, so that a failed check or a sanitizer report follows the input's name.
    std::fprintf(stderr, "input %s (%zu bytes)\n", input.c_str(), bytes.size());
    LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
  }
  std::printf("replayed %zu inputs\n", inputs.size());
  return 0;
}
