// The recorder: the program as a sequence of regions, held briefly before it
// runs so that it can be optimized as a whole.
//
// Engine::submit checks, places and splits every region as it always did
// (every refusal is still thrown by launch()); then, instead of queuing it,
// it may hand it here. Regions that can run as one kernel wait together as a
// chain:
//  - every array access of each kernel is at the point's own index
//    (ir::accesses_only_own_point), no array of it has a distance, a moving or
//    per-region lifetime or a merge trait, and checked mode is off;
//  - they have the same range, the same policy and the same location (the
//    one given with .at(), and the one it resolved to);
//  - a region with a reduction ends its chain (reduce() waits for it).
// The recorded program is a graph: two regions depend on each other only
// through an array they both pass (the runtime orders regions by array
// identity, runtime/array.hpp), and regions that share none need no order.
// So up to kMaxChains chains wait at once, one per range, policy and
// location, no two of them passing an array in common:
//  - a region that could wait joins the chain over its range, policy and
//    location, or begins one; every other waiting chain it shares an array
//    with starts first;
//  - a region that cannot wait (a stencil, a gather, an atomic, ...) starts
//    the chains it shares an array with, then runs; the others keep waiting.
// Two pipelines over different ranges launched in turn thus fuse each, and
// an unrelated region launched between two regions of a chain does not split
// it. What runs first is also what the statistics list first.
//
// When a recorded chain starts:
//  - something waits: pause(), pause(location), host() and host_read() of an
//    array it uses (ArrayStorage::wait_idle), MPI transfers of such arrays,
//    rt.copy and rt.move, tree changes, the Runtime's destruction (each
//    starts every chain);
//  - a launch depends on it or it on the launch (above), or it reaches
//    kMaxChain regions, or a fifth chain begins (the oldest starts);
//  - kDelay has passed since its first region was recorded (a timer wakes
//    the recorder's thread then; see timer_fd): the leaves it needs would
//    otherwise idle, and host work after a launch still overlaps
//    the region as it did before (one short wait, not the whole host work).
// stats() starts them too (without waiting), so that what was launched is in it.
//
// When it starts, a chain of one region runs as recorded. A longer chain runs
// as one kernel (ir::fuse_kernels), named after its kernels joined by '.':
//  - an array only the chain uses (no handle of the program holds it any
//    more, not memory given with wrap()) and that the chain first writes on
//    every path becomes a local of the fused kernel: never written to memory
//    (and, its pages never touched, never given physical memory);
//  - the fused kernel is compiled in the background the first time its chain
//    (kernels, and which arrays are shared or local) is seen, and cached by
//    that signature; until it is ready, and when it fails to compile (a
//    recovery), the chain runs region by region.
// Every launched region's completion (reduce() results included) completes
// when the fused kernel's does.
#pragma once

#include <chrono>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "../engine.hpp"
#include "../hierarchy.hpp"
#include "../policy.hpp"
#include "region_run.hpp"

namespace canopy::runtime {

/// A region checked, placed and split, waiting in the recorder.
struct RecordedRegion {
  std::shared_ptr<RegionRun> run;
  RegionRequest request;
  Policy policy;
  const Location* at = nullptr;
  std::vector<Piece> pieces;
};

struct Recorder {
  /// How long a chain waits for its next region at most, from its first.
  static constexpr std::chrono::microseconds kDelay{1000};
  static constexpr std::size_t kMaxChain = 16;

  /// Taken before tree_mutex. Recursive: starting a chain may wait on an
  /// array, which asks for the (then empty) chain to start.
  std::recursive_mutex mutex;
  /// A chain waiting, and when its first region was recorded.
  struct Chain {
    std::vector<RecordedRegion> regions;
    std::chrono::steady_clock::time_point first_recorded;
  };
  /// The chains waiting, oldest first. No two pass an array in common, so
  /// they may start in any order.
  std::vector<Chain> chains;
  static constexpr std::size_t kMaxChains = 4;
  bool enabled = true;  ///< CANOPY_FUSE=off, Runtime::fuse(false)
  /// CANOPY_FUSE=eager: a chain seen for the first time waits for its fused
  /// kernel's compile instead of running region by region meanwhile.
  bool eager = false;

  /// A fused kernel per chain signature, and whether it can run yet.
  struct Fused {
    std::shared_ptr<const ir::Kernel> kernel;
    std::vector<std::shared_future<void>> ready;
    bool failed = false;
  };
  std::map<std::string, Fused> fused;

  /// The thread that starts a chain once kDelay has passed. It sleeps on a
  /// timer the kernel keeps (a timerfd), armed for the oldest chain's
  /// deadline by the launch that begins a chain while none is armed: arming
  /// is one system call, and no launch ever wakes the thread (a wake-up per
  /// launch cost 15 to 30 us on two cores: the woken thread took the
  /// launching thread's core). It wakes only when a deadline passes: it
  /// starts what is due and arms the timer again while chains wait. A chain
  /// started earlier (a pause, a host view) leaves the timer armed, and the
  /// thread wakes once for nothing; disarming it there would cost every
  /// launch-and-pause of a tight loop a second system call instead.
  int timer_fd = -1;
  /// The timer will fire (armed and not yet handled by the thread).
  bool armed = false;
  bool stopping = false;
  std::thread timer;
};

}  // namespace canopy::runtime
