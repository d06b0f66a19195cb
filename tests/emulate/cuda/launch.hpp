// How the emulated CUDA driver runs a launch: every block of the grid, one
// after another in a scrambled order (a GPU promises none;
// CANOPY_EMULATED_CUDA_ORDER=in-order keeps the grid's), on the calling
// thread, with the module's built-in variables set for each thread
// (kernel_abi.hpp). The threads of a block
// run one after another when the kernel has no barrier, else as fibers
// that switch at __syncthreads and warp shuffles; a barrier that not every
// thread of the block (or warp) reaches fails the launch. A kernel's access
// to a page no allocation may touch (driver.cpp maps one after each
// allocation's end and one before it) or to any address no allocation has
// fails it with CUDA_ERROR_ILLEGAL_ADDRESS: SIGSEGV and SIGBUS are caught
// while a launch runs, and go to the handler installed before at any other
// time. A launch that runs longer than CANOPY_EMULATED_CUDA_TIMEOUT seconds
// (default 120; 0: no limit; read at each launch) fails with
// CUDA_ERROR_LAUNCH_TIMEOUT (not under ThreadSanitizer, which holds the
// timer's signal back until the thread calls into it).
#pragma once

#include <string>

#include "driver_state.hpp"

namespace canopy_emulated {

/// Runs `function` over `grid` blocks of `block` threads with the kernel
/// parameters `params`. Returns an empty string, or why the launch failed,
/// with `status` set to the error that sticks to the context.
std::string run_grid(Function& function, const unsigned int grid[3], const unsigned int block[3], void** params,
                     int warp_size, CUresult& status);

}  // namespace canopy_emulated
