// What a kernel library of the emulated CUDA device exports: the contract
// between the emulated NVRTC (nvrtc.cpp), which compiles Canopy's CUDA C++
// into a host shared object, and the emulated driver (driver.cpp), which
// loads that object as a module and runs its kernels. Both sides include
// this file; prelude.hpp builds the kernel side on it.
//
// A kernel library exports, all with C linkage:
//  - the built-in variables, which the driver writes before it runs each
//    thread: threadIdx, blockIdx (uint3), blockDim, gridDim (dim3);
//  - canopy_emulated_barrier and canopy_emulated_warp_barrier, function
//    pointers the driver sets: __syncthreads and the warp shuffles call them
//    to wait for the other threads of the block or of the warp;
//  - canopy_emulated_warp_slots: where the threads of a warp leave the value
//    a shuffle reads (one 8-byte slot per thread of the block, set by the
//    driver before a launch);
//  - canopy_emulated_warp_size, set by the driver;
//  - for each kernel K, canopy_emulated_entry_K(void** params): K called
//    with its arguments read from cuLaunchKernel's kernelParams;
//  - canopy_emulated_kernels: the kernels' names, ending with a null;
//  - canopy_emulated_uses_barrier: nonzero when the source calls
//    __syncthreads or a warp shuffle, so that its threads must run as
//    cooperating fibers (else the driver runs them one after the other).
#pragma once

namespace canopy_emulated {

inline constexpr const char* kEntryPrefix = "canopy_emulated_entry_";
/// The first line of the "PTX" the emulated NVRTC gives: the kernel
/// library's bytes follow in hexadecimal.
inline constexpr const char* kPtxHeader = "// Canopy emulated CUDA module: a host shared object, in hexadecimal\n";

using Entry = void (*)(void** params);
using Barrier = void (*)();

}  // namespace canopy_emulated
