#include "discover.hpp"

#include "cuda/cuda_device.hpp"
#include "level_zero/level_zero_device.hpp"
#include "opencl/opencl_device.hpp"

namespace canopy::backends {

std::vector<BackendDevices> discover_devices() {
  std::vector<BackendDevices> found;
  found.push_back(cuda::discover_cuda());
  found.push_back(level_zero::discover_level_zero());
  found.push_back(opencl::discover_opencl());
  return found;
}

}  // namespace canopy::backends
