// Polling before sleeping: a thread that waits for something that usually
// comes within microseconds (the end of a short region, the next launch)
// checks for it a few hundred times, then yields its core a while, and only
// then sleeps on a futex. Yielding matters when the waiter shares a core
// with the thread it waits for (a program's main thread and a leaf worker on
// a small machine): plain spinning would keep that thread off the core.
//
// The yields stop after a time as well as a count. Where another thread is
// runnable on the core (the program's own thread, parsing input between two
// regions), each yield hands it the core and takes it back: hundreds of
// context switches per wait, each costing that thread its caches. A waiter
// that has yielded for longer than the budget sleeps instead.
#pragma once

#include <sched.h>

#include <chrono>

namespace canopy::backends::cpu {

/// One CPU pause instruction (or nothing where there is none).
inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

/// Polls `ready` (pausing between checks, then yielding the core) and returns
/// true as soon as it holds; false when the caller should sleep instead.
/// `yields` bounds how many yields, `budget` how long they may take in all.
/// On a core where nothing else is runnable a yield returns in under a
/// microsecond, so the count ends the polling (512 yields: a few hundred
/// microseconds); where another thread is runnable, one yield may give it the
/// core for a whole time slice, and the budget ends the polling after the
/// first such turn or two.
template <class Ready>
bool poll_until(const Ready& ready, int pauses = 16, int yields = 64,
                std::chrono::microseconds budget = std::chrono::microseconds(500)) {
  for (int i = 0; i < pauses; ++i) {
    if (ready()) return true;
    cpu_relax();
  }
  const auto give_up = std::chrono::steady_clock::now() + budget;
  for (int i = 0; i < yields; ++i) {
    if (ready()) return true;
    sched_yield();
    if ((i & 7) == 7 && std::chrono::steady_clock::now() > give_up) break;
  }
  return ready();
}

}  // namespace canopy::backends::cpu
