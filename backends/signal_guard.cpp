#include "signal_guard.hpp"

#include <signal.h>

#include <array>
#include <cstring>
#include <mutex>

namespace canopy::backends {

namespace {

struct Saved {
  std::mutex mutex;
  int depth = 0;
  std::array<struct sigaction, NSIG> actions{};
  std::array<bool, NSIG> known{};
};

Saved& saved() {
  static Saved* state = new Saved;  // never destroyed: guards may run during exit
  return *state;
}

bool same_handler(const struct sigaction& a, const struct sigaction& b) {
  const bool a_info = (a.sa_flags & SA_SIGINFO) != 0, b_info = (b.sa_flags & SA_SIGINFO) != 0;
  if (a_info != b_info) return false;
  return a_info ? a.sa_sigaction == b.sa_sigaction : a.sa_handler == b.sa_handler;
}

}  // namespace

KeepSignals::KeepSignals() {
  stack_known_ = sigaltstack(nullptr, &stack_) == 0;
  Saved& state = saved();
  std::lock_guard lock(state.mutex);
  if (state.depth++ > 0) return;
  for (int signal = 1; signal < NSIG; ++signal)
    state.known[static_cast<std::size_t>(signal)] =
        signal != SIGKILL && signal != SIGSTOP && sigaction(signal, nullptr, &state.actions[std::size_t(signal)]) == 0;
}

KeepSignals::~KeepSignals() {
  // This thread goes back to the alternate stack it had, or to none; the
  // driver's stack is left allocated (the driver may still name it).
  stack_t now{};
  if (stack_known_ && sigaltstack(nullptr, &now) == 0 && !(now.ss_flags & SS_ONSTACK) &&
      (now.ss_sp != stack_.ss_sp || (now.ss_flags & SS_DISABLE) != (stack_.ss_flags & SS_DISABLE))) {
    stack_t before = stack_;
    before.ss_flags &= SS_DISABLE;
    sigaltstack(&before, nullptr);
  }
  Saved& state = saved();
  std::lock_guard lock(state.mutex);
  if (--state.depth > 0) return;
  for (int signal = 1; signal < NSIG; ++signal) {
    if (!state.known[static_cast<std::size_t>(signal)]) continue;
    struct sigaction now_action {};
    if (sigaction(signal, nullptr, &now_action) != 0) continue;
    const struct sigaction& before = state.actions[static_cast<std::size_t>(signal)];
    if (!same_handler(now_action, before)) sigaction(signal, &before, nullptr);
  }
}

}  // namespace canopy::backends
