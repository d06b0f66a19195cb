// A reader of the few SPIR-V instructions the emulated driver needs: types,
// entry points, functions and their parameters, and capabilities.
#include "spirv_module.hpp"

#include <cstring>
#include <map>

namespace canopy_emulated_ze {

namespace {

// Opcodes and enumerants of the SPIR-V specification used here.
constexpr std::uint32_t kMagic = 0x07230203;
constexpr std::uint32_t kOpCapability = 17, kOpEntryPoint = 15, kOpTypeBool = 20, kOpTypeInt = 21, kOpTypeFloat = 22,
                        kOpTypeVector = 23, kOpTypePointer = 32, kOpFunction = 54, kOpFunctionParameter = 55;
constexpr std::uint32_t kCapabilityFloat64 = 10, kCapabilityInt64Atomics = 12;
constexpr std::uint32_t kStorageWorkgroup = 4, kStorageCrossWorkgroup = 5;

}  // namespace

bool parse_spirv(const std::string& binary, SpirvModule& module, std::string& problem) {
  if (binary.size() < 20 || binary.size() % 4 != 0) {
    problem = "the module is not SPIR-V: " + std::to_string(binary.size()) + " bytes, not a whole number of words";
    return false;
  }
  std::vector<std::uint32_t> words(binary.size() / 4);
  std::memcpy(words.data(), binary.data(), binary.size());
  if (words[0] != kMagic) {
    problem = "the module is not SPIR-V: its first word is not the SPIR-V magic number";
    return false;
  }
  std::map<std::uint32_t, std::uint32_t> value_bytes;  // type id -> bytes
  std::map<std::uint32_t, SpirvParameter::Kind> pointers;
  std::map<std::uint32_t, std::string> entry_names;  // function id -> name
  std::map<std::uint32_t, std::vector<SpirvParameter>> functions;
  std::uint32_t current = 0;
  for (std::size_t at = 5; at < words.size();) {
    const std::uint32_t count = words[at] >> 16, opcode = words[at] & 0xffffu;
    if (count == 0 || at + count > words.size()) {
      problem = "the module is truncated or malformed at word " + std::to_string(at);
      return false;
    }
    const std::uint32_t* op = &words[at];
    switch (opcode) {
      case kOpCapability:
        if (count >= 2 && op[1] == kCapabilityFloat64) module.float64 = true;
        if (count >= 2 && op[1] == kCapabilityInt64Atomics) module.int64_atomics = true;
        break;
      case kOpEntryPoint:
        if (count >= 4) {
          const char* name = reinterpret_cast<const char*>(op + 3);
          entry_names[op[2]] = std::string(name, strnlen(name, (count - 3) * 4));
        }
        break;
      case kOpTypeBool:
        if (count >= 2) value_bytes[op[1]] = 1;
        break;
      case kOpTypeInt:
      case kOpTypeFloat:
        if (count >= 3) value_bytes[op[1]] = op[2] / 8;
        break;
      case kOpTypeVector:
        if (count >= 4) value_bytes[op[1]] = value_bytes[op[2]] * op[3];
        break;
      case kOpTypePointer:
        if (count >= 3)
          pointers[op[1]] = op[2] == kStorageCrossWorkgroup ? SpirvParameter::Kind::GlobalPointer
                            : op[2] == kStorageWorkgroup    ? SpirvParameter::Kind::LocalPointer
                                                            : SpirvParameter::Kind::OtherPointer;
        break;
      case kOpFunction:
        if (count >= 3) {
          current = op[2];
          functions[current];  // a kernel without parameters has an empty list
        }
        break;
      case kOpFunctionParameter:
        if (count >= 3 && current) {
          SpirvParameter parameter;
          if (auto pointer = pointers.find(op[1]); pointer != pointers.end()) {
            parameter.kind = pointer->second;
            parameter.bytes = 8;
          } else {
            parameter.bytes = value_bytes.count(op[1]) ? value_bytes[op[1]] : 0;
          }
          functions[current].push_back(parameter);
        }
        break;
      default: break;
    }
    at += count;
  }
  for (const auto& [function, name] : entry_names) module.entries.push_back({name, functions[function]});
  if (module.entries.empty()) {
    problem = "the module has no kernel entry point";
    return false;
  }
  return true;
}

}  // namespace canopy_emulated_ze
