#include "dump.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "error.hpp"

namespace canopy {

namespace {

bool list_names(std::string_view list, std::string_view wanted) {
  while (!list.empty()) {
    auto comma = list.find(',');
    auto item = list.substr(0, comma);
    if (item == wanted || item == "all") return true;
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return false;
}

}  // namespace

void check_dump_setting() {
  static constexpr std::string_view kKinds[] = {"ir",     "llvm", "asm",   "cost", "program",
                                                "opencl", "cuda", "spirv", "all"};
  const char* value = std::getenv("CANOPY_DUMP");
  if (!value) return;
  std::string_view list = value;
  while (!list.empty()) {
    const auto comma = list.find(',');
    const std::string_view word = list.substr(0, comma);
    if (!word.empty() && std::find(std::begin(kKinds), std::end(kKinds), word) == std::end(kKinds))
      throw Error("CANOPY_DUMP='" + std::string(value) + "': '" + std::string(word) +
                  "' is not something Canopy dumps; give a comma-separated list of ir, llvm, asm, cost, program, "
                  "opencl, cuda, spirv, or all");
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
}

bool dump_enabled(std::string_view kind) {
  const char* value = std::getenv("CANOPY_DUMP");
  return value && list_names(value, kind);
}

std::string dump(std::string_view kind, std::string_view name, std::string_view text) {
  if (!dump_enabled(kind)) return {};
  const char* dir_env = std::getenv("CANOPY_DUMP_DIR");
  std::filesystem::path dir = dir_env && *dir_env ? dir_env : "canopy-dump";
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  auto path = dir / (std::string(name) + "." + std::string(kind));
  std::ofstream out(path, std::ios::binary);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  return out ? path.string() : std::string();
}

}  // namespace canopy
