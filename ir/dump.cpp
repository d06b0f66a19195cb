#include "dump.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>

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
