// Bounds checking: the checked mode's rewrite of a kernel (CANOPY_CHECK=bounds).
//
// Why it exists: an index outside an array's extents reads or writes memory
// the array does not own. Unchecked, that is silent corruption on a CPU and a
// fault or garbage on a device; checked, it must become a canopy::Error that
// names the kernel, the array, the index and the extent. Doing it as an IR
// pass, before any backend sees the kernel, gives every backend (CPU, OpenCL,
// CUDA, Level Zero) the same checks with no backend code at all.
//
// The rewrite appends one hidden parameter, the fault record: an inout i64
// array of kFaultRecordSize elements, zero when the launch starts. Every Load
// becomes a local filled by a guarded load (hoisted just before the statement
// that used it, which is safe because expressions have no side effects), and
// every Store and AtomicAdd is guarded the same way. An index outside
// [0, extent) skips the access (a load gives 0) and writes the record:
//   record[kFaultFlag]   = 1
//   record[kFaultParam]  = the array's parameter position
//   record[kFaultDim]    = the dimension whose index was outside its extent
//   record[kFaultIndex]  = that index
//   record[kFaultExtent] = that dimension's extent
//   record[kFaultWrite]  = 1 for a store or atomic add, 0 for a load
// A point writes the record only when the flag is still 0, so usually the
// first fault is the one reported; two points faulting at the same moment may
// both write it (the flag is not an atomic), which can mix their fields. Each
// field still comes from a real fault, and the check never faults itself.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "../kernel.hpp"

namespace canopy::ir {

/// Positions in the fault record.
enum FaultField : int { kFaultFlag = 0, kFaultParam, kFaultDim, kFaultIndex, kFaultExtent, kFaultWrite };
/// Elements of the fault record.
inline constexpr int kFaultRecordSize = 6;
/// The fault record parameter is called this with the first number appended
/// that the kernel does not use as a name (canopy_fault0, usually).
inline constexpr const char* kFaultRecordName = "canopy_fault";

/// The fault record as the host reads it back after a launch.
using FaultRecord = std::array<std::int64_t, kFaultRecordSize>;

/// `kernel` with every array access checked and the fault record appended as
/// its last parameter. The kernel's other parameters keep their positions.
/// Verifies its input and its result (throws canopy::Error like optimize()).
Kernel check_bounds(const Kernel& kernel);

/// The message for a fault record that a launch of `kernel` (the checked
/// kernel or the one it came from) left behind; empty when the record holds
/// no fault. Example: "kernel 'shift' read array 'a' out of bounds: index 100
/// in dimension 0, whose extent is 100 (found by CANOPY_CHECK=bounds; the
/// access was skipped); keep every index in [0, extent)".
std::string describe_fault(const Kernel& kernel, const FaultRecord& record);

}  // namespace canopy::ir
