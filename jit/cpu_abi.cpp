#include "cpu_abi.hpp"

namespace canopy::jit {

CpuArgLayout cpu_arg_layout(const ir::Kernel& kernel) {
  CpuArgLayout layout;
  int next = 0;
  for (const auto& param : kernel.params) {
    layout.first_slot.push_back(next);
    next += param.is_array() ? 1 + param.rank : 1;
  }
  layout.range_slot = next;
  layout.slot_count = next + 2 * (kernel.dims - 1);
  return layout;
}

}  // namespace canopy::jit
