// Device discovery remembered per node. Starting a device API is most of what
// `Runtime rt;` costs: PoCL loads libLLVM and libclang (about 25 ms and 50 MB
// here), cuInit and zeInit take hundreds of milliseconds on real GPUs. What
// discovery found is kept in Canopy's cache folder, and a later process with
// the same key gets the same devices as stand-ins (DeviceInfo from the file)
// that start their backend at their first real use: an allocation, a copy, a
// compile or disk_cache(). A program that never uses a device never starts
// its API.
//
// The key holds everything discovery's result can depend on that is cheap to
// read without starting a driver: Canopy's build (the file of
// libcanopy_backends), the boot (/proc/sys/kernel/random/boot_id: a driver
// update or a new card needs one), the loader's cache (/etc/ld.so.cache
// changes whenever libraries are installed), the OpenCL ICD files and their
// contents, the thread's CPU affinity, and every environment variable that
// may steer a driver or Canopy (CANOPY_*, POCL_*, OCL_*, OPENCL_*, CUDA_*,
// ZE_*, NEO_*, LD_LIBRARY_PATH), with the size and time of each file such a
// variable names (the emulated drivers). A stand-in whose backend, once
// started, no longer shows the same device (same id and fingerprint) throws
// canopy::Error saying so and removes the file, so that the next run
// discovers afresh.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "device.hpp"

namespace canopy::backends {

/// discover_devices (discover.hpp) through the cache in `cache_dir` ("off" or
/// empty: no cache, every wanted backend starts now). The file remembers what
/// was found for this key, the backends `wanted` declined included (the
/// selection is in the key through CANOPY_DEVICES). When `wanted` declines
/// every backend nothing is read or written. `key` is discovery_key(),
/// computed here when empty (a caller that also keys other files on it passes
/// it, so the files and ICD folder are read once). Never throws.
std::vector<BackendDevices> discover_devices_cached(const std::function<bool(std::string_view backend)>& wanted,
                                                    const std::string& why_not, const std::string& cache_dir,
                                                    const std::string& key = {});

/// The key of this process's discovery (hex), as described above.
std::string discovery_key();

/// The device behind a stand-in, started now if it was not; `device` itself
/// when it is not a stand-in. Throws canopy::Error when the backend cannot
/// start it.
Device& started(Device& device);

}  // namespace canopy::backends
