// What the emulated Level Zero driver reads from a SPIR-V module itself: its
// kernels and each kernel's parameters (a value of so many bytes, or a
// pointer to global or to work-group memory), and the capabilities that a
// device must have to run it. zeKernelSetArgumentValue checks arguments
// against these, as a driver checks them against the module it built.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace canopy_emulated_ze {

struct SpirvParameter {
  enum class Kind : std::uint8_t { Value, GlobalPointer, LocalPointer, OtherPointer };
  Kind kind = Kind::Value;
  std::uint32_t bytes = 0;  ///< a value's size; 8 for pointers (Physical64)
};

struct SpirvEntry {
  std::string name;
  std::vector<SpirvParameter> parameters;
};

struct SpirvModule {
  std::vector<SpirvEntry> entries;
  bool float64 = false;        ///< declares the Float64 capability
  bool int64_atomics = false;  ///< declares the Int64Atomics capability
};

/// The kernels and capabilities of the SPIR-V module `binary`. Returns
/// false with `problem` set when it is not a SPIR-V module this driver can
/// read (wrong magic number, truncated instructions, no kernel).
bool parse_spirv(const std::string& binary, SpirvModule& module, std::string& problem);

}  // namespace canopy_emulated_ze
