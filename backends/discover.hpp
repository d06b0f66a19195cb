// Every device backend's discovery in one call, so that the runtime knows no
// backend by name.
#pragma once

#include <functional>
#include <string_view>
#include <vector>

#include "device.hpp"

namespace canopy::backends {

/// The device backends, in order of preference: "cuda", "level_zero", "opencl".
const std::vector<std::string_view>& backend_names();

/// What one backend (a name of backend_names()) found. Never throws.
BackendDevices discover_backend(std::string_view backend);

/// What each device backend found (or why it found nothing), in order of
/// preference for a device more than one of them can drive: CUDA, Level Zero,
/// then OpenCL. Never throws. A backend for which `wanted` says no is not
/// started at all (its library is not even opened); it is reported absent,
/// with `why_not` as the reason.
std::vector<BackendDevices> discover_devices(
    const std::function<bool(std::string_view backend)>& wanted = [](std::string_view) { return true; },
    const std::string& why_not = "");

}  // namespace canopy::backends
