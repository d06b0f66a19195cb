// A program's own signal handlers stay its own when Canopy starts OpenCL and
// builds a kernel there. PoCL's LLVM installs handlers of its own the first
// time PoCL starts (SIGINT, SIGTERM, SIGSEGV, SIGUSR1 and others) and an
// alternate signal stack on the calling thread: a new user's SIGUSR1 handler
// (a batch system's checkpoint warning) never ran again. A process of its
// own (CTest's `signals`), with the caches off so that PoCL really starts
// here: a test in a process where PoCL had started before would see nothing.
#include <doctest/doctest.h>
#include <signal.h>

#include <csignal>
#include <cstdint>
#include <string>

#include <canopy/canopy.hpp>
#include "common/skip.hpp"

using namespace canopy;

namespace {

volatile std::sig_atomic_t usr1_seen = 0;
void on_usr1(int) { usr1_seen = usr1_seen + 1; }
void on_term(int) {}

// The handler of `signal` as a number doctest can print (0 for SIG_DFL).
std::uintptr_t handler_of(int signal) {
  struct sigaction now {};
  REQUIRE(sigaction(signal, nullptr, &now) == 0);
  return (now.sa_flags & SA_SIGINFO) ? reinterpret_cast<std::uintptr_t>(now.sa_sigaction)
                                     : reinterpret_cast<std::uintptr_t>(now.sa_handler);
}

std::uintptr_t address_of(void (*handler)(int)) { return reinterpret_cast<std::uintptr_t>(handler); }

std::string first_opencl_leaf(const Runtime& rt) {
  std::string found;
  const Hierarchy tree = rt.hierarchy();
  if (!tree.root()) return found;
  for (const Location* leaf : tree.leaves(*tree.root()))
    if (leaf->kind() == LocationKind::OpenCL && found.empty()) found = leaf->name();
  return found;
}

}  // namespace

TEST_CASE("signals: the program's handlers and alternate stack stay as they were after OpenCL builds a kernel") {
  const bool installed = std::signal(SIGUSR1, on_usr1) != SIG_ERR && std::signal(SIGTERM, on_term) != SIG_ERR;
  REQUIRE(installed);
  stack_t stack_before{};
  REQUIRE(sigaltstack(nullptr, &stack_before) == 0);
  // The default, or doctest's or a sanitizer's.
  const std::uintptr_t segv_before = handler_of(SIGSEGV), int_before = handler_of(SIGINT);
  {
    Runtime rt;
    const std::string leaf = first_opencl_leaf(rt);
    if (leaf.empty()) CANOPY_TEST_SKIP(OpenCL, "no OpenCL leaf (CANOPY_DEVICES=cpu,opencl and PoCL)");
    static const Kernel square("signals_square", [](Out<std::int64_t> o) {
      Idx i = index(0);
      o[i] = i * i;
    });
    auto o = rt.array<std::int64_t>(1000);
    rt.region(square).over(1000).at(leaf).launch(o);
    const auto values = o.host_read();
    std::int64_t wrong = 0;
    for (std::int64_t i = 0; i < 1000; ++i) wrong += values[i] != i * i;
    CHECK(wrong == 0);
    CHECK(handler_of(SIGUSR1) == address_of(on_usr1));
    CHECK(handler_of(SIGTERM) == address_of(on_term));
    CHECK(handler_of(SIGINT) == int_before);
    CHECK(handler_of(SIGSEGV) == segv_before);
    stack_t stack_now{};
    REQUIRE(sigaltstack(nullptr, &stack_now) == 0);
    CHECK(stack_now.ss_sp == stack_before.ss_sp);
    CHECK((stack_now.ss_flags & SS_DISABLE) == (stack_before.ss_flags & SS_DISABLE));
  }
  std::raise(SIGUSR1);
  CHECK(usr1_seen == 1);
}
