// Skipping a test case whose hardware or driver is absent, so that the skip
// is seen: a test that returned early used to pass as if it had checked
// something. skip() prints "SKIPPED: <reason>"; when every test case an
// executable ran was skipped, its main() (tests/main.cpp) exits with
// kSkipExitCode, which CTest reports as "Skipped" (SKIP_RETURN_CODE in
// tests/CMakeLists.txt). Where OpenCL must be present
// (CANOPY_TEST_REQUIRE_OPENCL=1, which CI sets: it installs PoCL), a test
// skipped for lack of OpenCL fails instead.
//
// A test case that skipped any part of itself (one leaf set of several, one
// subcase) counts as skipped; a failure in the parts that ran still fails
// the executable. Test cases that need hardware are tagged with a doctest
// test suite ("opencl", "cuda-device", "level-zero-device") and CTest runs
// each such suite as a test of its own, so a machine without the hardware
// shows that test as skipped while the rest of the executable passes.
//
//   auto* device = opencl_test::device();
//   if (!device) return canopy_test::skip("no OpenCL device", canopy_test::Needs::OpenCL);
#pragma once

#include <sstream>
#include <string>

namespace canopy_test {

/// The exit code of a test executable all of whose test cases were skipped.
inline constexpr int kSkipExitCode = 77;

/// What a skipped test lacks: OpenCL, which CANOPY_TEST_REQUIRE_OPENCL=1
/// makes a requirement, or something this machine may well lack for good
/// (a CUDA or Level Zero driver, NVRTC, a tool).
enum class Needs { OpenCL, Other };

/// True when CANOPY_TEST_REQUIRE_OPENCL=1: a test without OpenCL fails.
bool opencl_required();

/// Marks the running test case as skipped for `reason` and prints
/// "SKIPPED: <reason>" (the caller returns right after); for Needs::OpenCL
/// under CANOPY_TEST_REQUIRE_OPENCL=1 it fails the test case instead.
void skip(const std::string& reason, Needs needs = Needs::Other);

}  // namespace canopy_test

/// Skips the running test case (see skip()) with a reason written as a
/// stream, `CANOPY_TEST_SKIP(Other, "no stub library at " << path)`, and
/// returns from it.
#define CANOPY_TEST_SKIP(needs, reason)                                     \
  do {                                                                      \
    std::ostringstream canopy_skip_reason;                                  \
    canopy_skip_reason << reason;                                           \
    canopy_test::skip(canopy_skip_reason.str(), canopy_test::Needs::needs); \
    return;                                                                 \
  } while (false)
