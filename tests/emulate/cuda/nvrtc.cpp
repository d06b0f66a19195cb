// A stand-in for NVRTC, for the emulated CUDA device (driver.cpp): Canopy
// opens it through CANOPY_NVRTC exactly as it opens libnvrtc.so, and it
// exports the functions of Canopy's NVRTC table (backends/cuda/api.hpp)
// with NVRTC's signatures and status codes. It compiles the CUDA C++ it is
// given for the host instead of a GPU: with clang++ (14), prelude.hpp
// included first, no contraction of a * b + c (--fmad=false), into a shared
// object that exports each __global__ function through an entry taking
// cuLaunchKernel's kernelParams (kernel_abi.hpp). The compiled "cubin"
// (nvrtcGetCUBIN, for sm_XX) is that shared object's ELF image; the "PTX"
// (nvrtcGetPTX) is the same image in hexadecimal after a header line, text
// the emulated driver's cuModuleLoadDataEx reads up to its NUL like PTX.
//
// A test-only library: nothing in Canopy's product opens it unless told to.
// It reads prelude.hpp from the source tree it was built from.
//
// Environment (the emulator's own variables, not Canopy's settings):
//   CANOPY_EMULATED_CUDA_CLANG   the C++ compiler (default clang++-14)
//   CANOPY_EMULATED_CUDA_KEEP=1  keep each program's scratch directory
//                                (source, prelude, object) and name it in the log
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "kernel_abi.hpp"

struct _nvrtcProgram;
using nvrtcProgram = _nvrtcProgram*;
using nvrtcResult = int;

namespace {

// NVRTC's status codes (nvrtc.h).
constexpr nvrtcResult kSuccess = 0;
constexpr nvrtcResult kOutOfMemory = 1;
constexpr nvrtcResult kInvalidInput = 3;
constexpr nvrtcResult kInvalidProgram = 4;
constexpr nvrtcResult kInvalidOption = 5;
constexpr nvrtcResult kCompilation = 6;
constexpr nvrtcResult kInternal = 11;

// The architectures this NVRTC says it compiles for, as 10 * major + minor.
constexpr int kArchitectures[] = {50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 89, 90};

}  // namespace

struct _nvrtcProgram {
  std::string source, name;
  std::string log;
  std::string image;  // the kernel library's ELF bytes, after a compilation that succeeded
  bool compiled = false, is_cubin = false;
};

namespace {

std::mutex programs_mutex;
std::set<nvrtcProgram> programs;

bool known(nvrtcProgram program) {
  std::lock_guard lock(programs_mutex);
  return program && programs.count(program);
}

// The names of the source's __global__ functions, in order.
std::vector<std::string> kernel_names(const std::string& source) {
  static const std::regex global(R"(__global__\s+void\s+([A-Za-z_][A-Za-z0-9_]*)\s*\()");
  std::vector<std::string> names;
  for (auto it = std::sregex_iterator(source.begin(), source.end(), global); it != std::sregex_iterator(); ++it)
    names.push_back((*it)[1].str());
  return names;
}

// The source with what the driver needs appended: an entry per kernel, the
// list of kernels, and whether its threads must cooperate.
std::string with_entries(const std::string& source) {
  const std::vector<std::string> names = kernel_names(source);
  std::ostringstream text;
  text << source << "\n\n// ---- added by Canopy's emulated NVRTC ----\n";
  for (const auto& name : names)
    text << "extern \"C\" void " << canopy_emulated::kEntryPrefix << name << "(void** params) { canopy_emulated_call("
         << name << ", params); }\n";
  text << "extern \"C\" const char* const canopy_emulated_kernels[] = {";
  for (const auto& name : names) text << "\"" << name << "\", ";
  text << "nullptr};\n";
  const bool cooperates = source.find("__syncthreads") != std::string::npos ||
                          source.find("__shfl") != std::string::npos || source.find("__syncwarp") != std::string::npos;
  text << "extern \"C\" const int canopy_emulated_uses_barrier = " << (cooperates ? 1 : 0) << ";\n";
  return text.str();
}

std::string quoted(const std::string& text) {
  std::string result = "'";
  for (char c : text) result += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return result + "'";
}

// Runs `command` with the shell; its output (stdout and stderr) goes to `output`.
int run_command(const std::string& command, std::string& output) {
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (!pipe) return -1;
  char buffer[4096];
  std::size_t got = 0;
  while ((got = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) output.append(buffer, got);
  const int status = pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// Reads the architecture from NVRTC's options; "" where an option is not
// one NVRTC would take from Canopy (the log says which).
std::string architecture_of(int count, const char* const* options, std::string& log, bool& fmad) {
  std::string architecture = "compute_52";
  for (int k = 0; k < count; ++k) {
    const std::string option = options[k] ? options[k] : "";
    if (option.rfind("--gpu-architecture=", 0) == 0) {
      architecture = option.substr(std::strlen("--gpu-architecture="));
    } else if (option.rfind("-arch=", 0) == 0) {
      architecture = option.substr(std::strlen("-arch="));
    } else if (option == "--fmad=false" || option == "-fmad=false") {
      fmad = false;
    } else if (option == "--fmad=true" || option.rfind("--prec-", 0) == 0 || option.rfind("--ftz=", 0) == 0 ||
               option.rfind("-std=", 0) == 0 || option.rfind("--std=", 0) == 0 || option == "-lineinfo" ||
               option.rfind("-D", 0) == 0) {
    } else {
      log += "nvrtc: error: unrecognized option '" + option + "'\n";
      return "";
    }
  }
  const bool cubin = architecture.rfind("sm_", 0) == 0;
  if (!cubin && architecture.rfind("compute_", 0) != 0) {
    log += "nvrtc: error: invalid value for --gpu-architecture (-arch): " + architecture + "\n";
    return "";
  }
  const int number = std::atoi(architecture.c_str() + (cubin ? 3 : 8));
  bool supported = false;
  for (int known_architecture : kArchitectures) supported = supported || known_architecture == number;
  if (!supported) {
    log += "nvrtc: error: invalid value for --gpu-architecture (-arch): " + architecture + "\n";
    return "";
  }
  return architecture;
}

nvrtcResult compile(_nvrtcProgram& program, int count, const char* const* options) {
  bool fmad = true;
  const std::string architecture = architecture_of(count, options, program.log, fmad);
  if (architecture.empty()) return kInvalidOption;
  const bool cubin = architecture.rfind("sm_", 0) == 0;
  const int number = std::atoi(architecture.c_str() + (cubin ? 3 : 8));

  char pattern[] = "/tmp/canopy-emulated-nvrtc-XXXXXX";
  if (!mkdtemp(pattern)) {
    program.log += "nvrtc (emulated): cannot make a scratch directory in /tmp\n";
    return kInternal;
  }
  const std::filesystem::path scratch = pattern;
  const std::string file = program.name.empty() ? "program.cu" : program.name;
  std::ofstream(scratch / file) << with_entries(program.source);
  const char* chosen = std::getenv("CANOPY_EMULATED_CUDA_CLANG");
  const std::string compiler = chosen && *chosen ? chosen : "clang++-14";
  const std::string object = (scratch / "module.so").string();
  const std::string command = quoted(compiler) + " -x c++ -std=c++17 -O1 -fPIC -shared -w -fno-math-errno " +
                              (fmad ? "-ffp-contract=fast" : "-ffp-contract=off") +
                              " -DCANOPY_EMULATED_CUDA_ARCH=" + std::to_string(number * 10) + " -include " +
                              quoted(std::string(CANOPY_EMULATED_CUDA_SOURCE_DIR) + "/prelude.hpp") + " " +
                              quoted((scratch / file).string()) + " -o " + quoted(object);
  std::string output;
  const int status = run_command(command, output);
  program.log += output;
  if (status == 0) {
    std::ifstream in(object, std::ios::binary);
    program.image.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  const char* keep = std::getenv("CANOPY_EMULATED_CUDA_KEEP");
  if (keep && std::string(keep) == "1") {
    program.log += "nvrtc (emulated): kept " + scratch.string() + " (" + command + ")\n";
  } else {
    std::error_code ignored;
    std::filesystem::remove_all(scratch, ignored);
  }
  if (status != 0 || program.image.empty()) {
    program.log += "nvrtc (emulated): " + compiler + " failed (status " + std::to_string(status) + ")\n";
    return kCompilation;
  }
  program.compiled = true;
  program.is_cubin = cubin;
  return kSuccess;
}

std::string ptx_of(const _nvrtcProgram& program) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string text = canopy_emulated::kPtxHeader;
  text.reserve(text.size() + 2 * program.image.size() + program.image.size() / 32 + 1);
  for (std::size_t k = 0; k < program.image.size(); ++k) {
    const auto byte = static_cast<unsigned char>(program.image[k]);
    text += kDigits[byte >> 4];
    text += kDigits[byte & 15];
    if (k % 64 == 63) text += '\n';
  }
  return text + "\n";
}

}  // namespace

extern "C" {

const char* nvrtcGetErrorString(nvrtcResult result) {
  switch (result) {
    case 0: return "NVRTC_SUCCESS";
    case 1: return "NVRTC_ERROR_OUT_OF_MEMORY";
    case 2: return "NVRTC_ERROR_PROGRAM_CREATION_FAILURE";
    case 3: return "NVRTC_ERROR_INVALID_INPUT";
    case 4: return "NVRTC_ERROR_INVALID_PROGRAM";
    case 5: return "NVRTC_ERROR_INVALID_OPTION";
    case 6: return "NVRTC_ERROR_COMPILATION";
    case 7: return "NVRTC_ERROR_BUILTIN_OPERATION_FAILURE";
    case 11: return "NVRTC_ERROR_INTERNAL_ERROR";
    default: return "NVRTC_ERROR unknown";
  }
}

nvrtcResult nvrtcVersion(int* major, int* minor) {
  if (!major || !minor) return kInvalidInput;
  *major = 12;
  *minor = 4;
  return kSuccess;
}

nvrtcResult nvrtcGetNumSupportedArchs(int* count) {
  if (!count) return kInvalidInput;
  *count = static_cast<int>(std::size(kArchitectures));
  return kSuccess;
}

nvrtcResult nvrtcGetSupportedArchs(int* architectures) {
  if (!architectures) return kInvalidInput;
  std::copy(std::begin(kArchitectures), std::end(kArchitectures), architectures);
  return kSuccess;
}

nvrtcResult nvrtcCreateProgram(nvrtcProgram* program, const char* source, const char* name, int headers,
                               const char* const* header_sources, const char* const* header_names) {
  if (!program || !source || headers < 0 || (headers > 0 && (!header_sources || !header_names))) return kInvalidInput;
  auto* created = new (std::nothrow) _nvrtcProgram;
  if (!created) return kOutOfMemory;
  created->source = source;
  created->name = name ? name : "";
  if (created->name.find('/') != std::string::npos) created->name = "program.cu";
  std::lock_guard lock(programs_mutex);
  programs.insert(created);
  *program = created;
  return kSuccess;
}

nvrtcResult nvrtcDestroyProgram(nvrtcProgram* program) {
  if (!program || !known(*program)) return kInvalidProgram;
  {
    std::lock_guard lock(programs_mutex);
    programs.erase(*program);
  }
  delete *program;
  *program = nullptr;
  return kSuccess;
}

nvrtcResult nvrtcCompileProgram(nvrtcProgram program, int count, const char* const* options) {
  if (!known(program)) return kInvalidProgram;
  if (count < 0 || (count > 0 && !options)) return kInvalidInput;
  program->log.clear();
  program->image.clear();
  program->compiled = false;
  return compile(*program, count, options);
}

nvrtcResult nvrtcGetProgramLogSize(nvrtcProgram program, std::size_t* size) {
  if (!known(program)) return kInvalidProgram;
  if (!size) return kInvalidInput;
  *size = program->log.size() + 1;
  return kSuccess;
}

nvrtcResult nvrtcGetProgramLog(nvrtcProgram program, char* log) {
  if (!known(program)) return kInvalidProgram;
  if (!log) return kInvalidInput;
  std::memcpy(log, program->log.c_str(), program->log.size() + 1);
  return kSuccess;
}

nvrtcResult nvrtcGetPTXSize(nvrtcProgram program, std::size_t* size) {
  if (!known(program)) return kInvalidProgram;
  if (!size) return kInvalidInput;
  if (!program->compiled) return kInvalidProgram;
  *size = ptx_of(*program).size() + 1;
  return kSuccess;
}

nvrtcResult nvrtcGetPTX(nvrtcProgram program, char* ptx) {
  if (!known(program)) return kInvalidProgram;
  if (!ptx) return kInvalidInput;
  if (!program->compiled) return kInvalidProgram;
  const std::string text = ptx_of(*program);
  std::memcpy(ptx, text.c_str(), text.size() + 1);
  return kSuccess;
}

// As NVRTC: a program compiled for a virtual architecture (compute_XX) has
// no cubin, and its size is 0.
nvrtcResult nvrtcGetCUBINSize(nvrtcProgram program, std::size_t* size) {
  if (!known(program)) return kInvalidProgram;
  if (!size) return kInvalidInput;
  if (!program->compiled) return kInvalidProgram;
  *size = program->is_cubin ? program->image.size() : 0;
  return kSuccess;
}

nvrtcResult nvrtcGetCUBIN(nvrtcProgram program, char* cubin) {
  if (!known(program)) return kInvalidProgram;
  if (!cubin) return kInvalidInput;
  if (!program->compiled) return kInvalidProgram;
  if (program->is_cubin) std::memcpy(cubin, program->image.data(), program->image.size());
  return kSuccess;
}

}  // extern "C"
