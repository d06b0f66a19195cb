// Building a device program through its disk cache, the same for every
// backend that keeps binaries between runs (OpenCL, CUDA, Level Zero): a
// cached binary the driver accepts is used; otherwise the program is built
// and its binary stored for the next run.
#pragma once

#include <functional>
#include <string>

#include "device.hpp"

namespace canopy::backends {

/// Loads the binary cached under `key` with `load` (false: the driver
/// refused it, so it is built instead), or else runs `build`, which builds
/// the program and returns its binary (empty: nothing to store). `disk` may
/// be null (no cache). Returns where the program came from.
ProgramOrigin load_or_build(jit::DiskCache* disk, const std::string& key,
                            const std::function<bool(const std::string& binary)>& load,
                            const std::function<std::string()>& build);

}  // namespace canopy::backends
