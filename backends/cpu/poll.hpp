// Polling before sleeping: a thread that waits for something that usually
// comes within microseconds (the end of a short region, the next launch)
// checks for it a few hundred times, then yields its core a while, and only
// then sleeps on a futex. Yielding matters when the waiter shares a core
// with the thread it waits for (a program's main thread and a leaf worker on
// a small machine): plain spinning would keep that thread off the core.
#pragma once

#include <sched.h>

namespace canopy::backends::cpu {

/// One CPU pause instruction (or nothing where there is none).
inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

/// Polls `ready` (pausing between checks, then yielding the core) and returns
/// true as soon as it holds; false when the caller should sleep instead.
/// `yields` sets how long: each yield costs about a microsecond when another
/// thread is runnable on the core, less when none is.
template <class Ready>
bool poll_until(const Ready& ready, int pauses = 16, int yields = 64) {
  for (int i = 0; i < pauses; ++i) {
    if (ready()) return true;
    cpu_relax();
  }
  for (int i = 0; i < yields; ++i) {
    if (ready()) return true;
    sched_yield();
  }
  return ready();
}

}  // namespace canopy::backends::cpu
