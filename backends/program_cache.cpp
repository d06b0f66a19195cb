#include "program_cache.hpp"

#include <canopy/jit/disk_cache.hpp>

namespace canopy::backends {

ProgramOrigin load_or_build(jit::DiskCache* disk, const std::string& key,
                            const std::function<bool(const std::string& binary)>& load,
                            const std::function<std::string()>& build) {
  if (disk)
    if (const auto binary = disk->get(key); binary && load(*binary)) return ProgramOrigin::Disk;
  const std::string built = build();
  if (disk && !built.empty()) disk->put(key, built);
  return ProgramOrigin::Built;
}

}  // namespace canopy::backends
