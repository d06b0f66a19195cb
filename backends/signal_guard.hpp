// KeepSignals: the process's signal handlers and the calling thread's
// alternate signal stack, as they were before a driver call that changes
// them.
//
// Why it exists: PoCL's LLVM installs its own handlers the first time PoCL
// makes a temporary file (at its start, in clGetPlatformIDs): for SIGINT,
// SIGTERM, SIGSEGV, SIGBUS, SIGABRT, SIGUSR1 and others, and an alternate
// signal stack on the thread that called. A program's own SIGUSR1 handler (a
// batch system's checkpoint warning) then never ran again, SIGUSR1 no longer
// ended a program without one, and whether it did depended on whether the
// device list came from the discovery cache. Every call into a driver that
// may start it (discovery, program builds) runs under a KeepSignals.
#pragma once

#include <signal.h>

namespace canopy::backends {

/// While one or more live on any thread, the first one's construction saved
/// every signal's disposition, and the last one to go puts back each that
/// changed; each puts back its own thread's alternate stack. Never throws.
class KeepSignals {
 public:
  KeepSignals();
  ~KeepSignals();
  KeepSignals(const KeepSignals&) = delete;
  KeepSignals& operator=(const KeepSignals&) = delete;

 private:
  stack_t stack_{};
  bool stack_known_ = false;
};

}  // namespace canopy::backends
