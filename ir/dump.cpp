#include "dump.hpp"

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "error.hpp"
#include "settings.hpp"

namespace canopy {

bool dump_enabled(std::string_view kind) { return settings().dumps(kind); }

std::string dump(std::string_view kind, std::string_view name, std::string_view text) {
  if (!dump_enabled(kind)) return {};
  const std::string& dir_setting = settings().dump_dir;
  std::filesystem::path dir = dir_setting.empty() ? "canopy-dump" : dir_setting;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  auto path = dir / (std::string(name) + "." + std::string(kind));
  std::ofstream out(path, std::ios::binary);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  out.close();
  if (out) return path.string();
  // Said once per process: a folder that cannot hold the dumps had lost
  // every one of them without a word.
  static std::atomic<bool> said{false};
  if (!said.exchange(true))
    std::fprintf(stderr, "canopy: cannot write the dump '%s' (CANOPY_DUMP_DIR='%s'); the dumps are not written\n",
                 path.string().c_str(), dir_setting.c_str());
  return {};
}

}  // namespace canopy
