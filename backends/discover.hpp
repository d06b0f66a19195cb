// Every device backend's discovery in one call, so that the runtime knows no
// backend by name.
#pragma once

#include <vector>

#include "device.hpp"

namespace canopy::backends {

/// What each device backend found (or why it found nothing), in order of
/// preference for a device more than one of them can drive: CUDA, Level Zero,
/// then OpenCL. Never throws.
std::vector<BackendDevices> discover_devices();

}  // namespace canopy::backends
