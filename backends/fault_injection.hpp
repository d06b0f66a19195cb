// Fault injection: makes chosen calls of a backend fail on purpose, so that
// tests can show that the runtime survives what real devices do (a launch
// that fails, a copy that fails, a kernel a driver will not build, memory a
// device does not have).
//
// CANOPY_FAULT=<backend>.<operation>:<n>[,<backend>.<operation>:<n>...]
//   backend:   cpu, opencl, cuda, level_zero
//   operation: compile, alloc, copy, launch
//   n:         1 for the first such call in the process, 2 for the second, ...
// makes the n-th call of that operation on any device of that backend fail
// as the device API would (OpenCL: CL_BUILD_PROGRAM_FAILURE,
// CL_MEM_OBJECT_ALLOCATION_FAILURE, CL_OUT_OF_RESOURCES; CUDA:
// NVRTC_ERROR_COMPILATION, CUDA_ERROR_OUT_OF_MEMORY, CUDA_ERROR_LAUNCH_FAILED;
// Level Zero: ZE_RESULT_ERROR_MODULE_BUILD_FAILURE,
// ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY, ZE_RESULT_ERROR_DEVICE_LOST; the CPU
// throws the canopy::Error its own failure would). Each backend asks
// inject_fault() at its compile, alloc, copy (to and from the device) and
// launch call sites, just before calling the real API, and reports the
// injected status through the same error path as a real one.
//
// The variable is read the first time a backend asks. Tests change the plan
// in-process with set_fault_plan(), which also restarts the counts.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace canopy::backends {

/// The calls a fault can be injected into.
enum class FaultOperation : std::uint8_t { Compile, Alloc, Copy, Launch };

/// "compile", "alloc", "copy", "launch".
std::string_view name_of(FaultOperation operation);

/// Counts one `operation` call on `backend` ("cpu", "opencl", "cuda",
/// "level_zero"); true when the plan says this call must fail.
bool inject_fault(std::string_view backend, FaultOperation operation);

/// Replaces the plan by `text` (CANOPY_FAULT's syntax; empty: no faults) and
/// restarts every count. Throws canopy::Error naming the bad entry when the
/// text does not parse; the plan is then unchanged.
void set_fault_plan(std::string_view text);

/// Throws canopy::Error naming CANOPY_FAULT, `text` and the syntax when
/// `text` does not parse (the Runtime checks the variable when it is made).
void check_fault_plan(std::string_view text);

/// The plan in CANOPY_FAULT's syntax ("" when no fault is planned).
std::string fault_plan();

/// The text that injected faults add to their error messages, e.g.
/// " [injected by CANOPY_FAULT=opencl.launch:1]".
std::string injected_note(std::string_view backend, FaultOperation operation);

}  // namespace canopy::backends
