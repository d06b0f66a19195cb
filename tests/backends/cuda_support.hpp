// Shared by the CUDA backend tests (tests/backends/cuda_*.cpp), which need
// no GPU: NVRTC as the backend loads it (through its function table), the
// toolkit's ptxas run as a subprocess to assemble the PTX NVRTC makes, and
// small helpers. Where NVRTC is missing (CI has no CUDA toolkit), the tests
// that need it are skipped, saying why (tests/common/skip.hpp).
#pragma once

#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <canopy/backends/cuda/api.hpp>
#include <canopy/backends/cuda/cuda_device.hpp>
#include <canopy/ir/error.hpp>
#include "scoped_setting.hpp"
#include "temporary_folder.hpp"

#include "common/skip.hpp"

namespace cuda_test {

/// NVRTC as discovery loads it ($CANOPY_NVRTC or the usual names and places).
inline const canopy::backends::cuda::LoadedNvrtc& nvrtc() {
  return canopy::backends::cuda::load_nvrtc(canopy::backends::cuda::default_nvrtc_library());
}

/// Declares `name` as the NVRTC table, or skips the test saying why there is none.
#define NVRTC_OR_SKIP(name)                                                                 \
  const auto* name = cuda_test::nvrtc().api.get();                                          \
  if (!name) {                                                                              \
    canopy_test::skip("NVRTC is not available (" + cuda_test::nvrtc().absent_reason + ")"); \
    return;                                                                                 \
  }

/// The toolkit's ptxas: $CUDA_HOME/bin/ptxas, /usr/local/cuda/bin/ptxas, or
/// one on PATH; empty when there is none.
inline std::string ptxas_path() {
  std::vector<std::string> candidates;
  if (const char* home = std::getenv("CUDA_HOME"); home && *home)
    candidates.push_back(std::string(home) + "/bin/ptxas");
  candidates.push_back("/usr/local/cuda/bin/ptxas");
  if (const char* path = std::getenv("PATH")) {
    std::string list = path;
    for (std::size_t start = 0; start <= list.size();) {
      const auto end = std::min(list.find(':', start), list.size());
      if (end > start) candidates.push_back(list.substr(start, end - start) + "/ptxas");
      start = end + 1;
    }
  }
  for (const auto& candidate : candidates)
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  return "";
}

/// What a subprocess printed (stdout and stderr) and its exit status.
struct ProcessResult {
  int status = -1;
  std::string output;
};

/// Runs `command` with the shell, capturing its output.
inline ProcessResult run_command(const std::string& command) {
  ProcessResult result;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (!pipe) return result;
  std::array<char, 4096> buffer{};
  std::size_t got = 0;
  while ((got = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0) result.output.append(buffer.data(), got);
  const int status = pclose(pipe);
  result.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

/// A directory of this process's own under the system's temporary
/// directory, removed with everything in it at the end of the scope.
class ScratchDirectory : public canopy::testing::TemporaryFolder {
 public:
  ScratchDirectory() : TemporaryFolder("cuda-test") {}
};

/// Assembles `ptx` with ptxas for `architecture` ("sm_80") into a cubin;
/// the result's status is 0 when it assembled. `ptxas` is ptxas_path().
inline ProcessResult assemble(const std::string& ptxas, const std::string& ptx, const std::string& architecture,
                              const std::string& name) {
  ScratchDirectory scratch;
  const auto input = scratch.path() / (name + ".ptx");
  const auto output = scratch.path() / (name + "." + architecture + ".cubin");
  std::ofstream(input, std::ios::binary) << ptx;
  ProcessResult result =
      run_command("'" + ptxas + "' -arch=" + architecture + " '" + input.string() + "' -o '" + output.string() + "'");
  // A cubin is an ELF file: check that one was written.
  std::ifstream cubin(output, std::ios::binary);
  char magic[4] = {};
  cubin.read(magic, 4);
  if (result.status == 0 && !(cubin && magic[0] == 0x7f && magic[1] == 'E' && magic[2] == 'L' && magic[3] == 'F')) {
    result.status = -1;
    result.output += "\n(ptxas wrote no ELF cubin)";
  }
  return result;
}

inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

/// The message of the canopy::Error `action` throws ("" when it throws none).
template <class F>
std::string error_of(F&& action) {
  try {
    action();
  } catch (const canopy::Error& error) {
    return error.what();
  }
  return "";
}

using ScopedEnvironment = canopy::testing::ScopedSetting;

}  // namespace cuda_test
