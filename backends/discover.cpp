#include "discover.hpp"

#include "cuda/cuda_device.hpp"
#include "level_zero/level_zero_device.hpp"
#include "opencl/opencl_device.hpp"

namespace canopy::backends {

std::vector<BackendDevices> discover_devices(const std::function<bool(std::string_view)>& wanted,
                                             const std::string& why_not) {
  std::vector<BackendDevices> found;
  auto discover = [&](const char* backend, auto&& start) {
    if (wanted(backend))
      found.push_back(start());
    else
      found.push_back(BackendDevices{backend, {}, why_not});
  };
  discover("cuda", [] { return cuda::discover_cuda(); });
  discover("level_zero", [] { return level_zero::discover_level_zero(); });
  discover("opencl", [] { return opencl::discover_opencl(); });
  return found;
}

}  // namespace canopy::backends
