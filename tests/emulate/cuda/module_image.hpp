// A module of the emulated CUDA driver: the host shared object the emulated
// NVRTC (nvrtc.cpp) made, given to cuModuleLoadDataEx as its ELF image (a
// "cubin") or as that image in hexadecimal (its "PTX"). It is written to a
// temporary file, opened with dlopen and checked for the kernel ABI
// (kernel_abi.hpp); anything else, real PTX or a real cubin included, is
// refused.
#pragma once

#include <memory>
#include <string>

#include "driver_state.hpp"

namespace canopy_emulated {

/// The module in `image`, opened; null with `error` set when it is not one.
std::unique_ptr<Module> open_module(const void* image, std::string& error);

}  // namespace canopy_emulated
