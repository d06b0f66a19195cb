#include "discover.hpp"

#include "cuda/cuda_device.hpp"
#include "level_zero/level_zero_device.hpp"
#include "opencl/opencl_device.hpp"
#include "signal_guard.hpp"

namespace canopy::backends {

const std::vector<std::string_view>& backend_names() {
  static const std::vector<std::string_view> names{"cuda", "level_zero", "opencl"};
  return names;
}

BackendDevices discover_backend(std::string_view backend) {
  const KeepSignals keep;  // a driver's start may install handlers of its own (signal_guard.hpp)
  if (backend == "cuda") return cuda::discover_cuda();
  if (backend == "level_zero") return level_zero::discover_level_zero();
  if (backend == "opencl") return opencl::discover_opencl();
  return BackendDevices{std::string(backend), {}, "no such backend"};
}

std::vector<BackendDevices> discover_devices(const std::function<bool(std::string_view)>& wanted,
                                             const std::string& why_not) {
  std::vector<BackendDevices> found;
  for (std::string_view backend : backend_names())
    found.push_back(wanted(backend) ? discover_backend(backend) : BackendDevices{std::string(backend), {}, why_not});
  return found;
}

}  // namespace canopy::backends
