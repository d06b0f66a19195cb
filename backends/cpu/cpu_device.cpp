#include "cpu_device.hpp"

#include <cstring>

#include <canopy/ir/error.hpp>
#include <canopy/ir/visitor.hpp>
#include <canopy/jit/cpu_compiler.hpp>

namespace canopy::backends::cpu {

namespace {

// True when the kernel's body has loops: each point may then be a lot of work.
bool has_loops(const ir::Kernel& kernel) {
  struct Finder : ir::Visitor {
    bool found = false;
    void visit(const ir::For&) override { found = true; }
  } finder;
  finder.walk(kernel.body);
  return finder.found;
}

// Writes a scalar argument into its slot as the ABI says.
jit::ArgSlot slot_of(const ScalarArg& arg) {
  jit::ArgSlot slot;
  slot.integer = 0;
  switch (arg.type) {
    case ir::ScalarType::F32: slot.f32 = static_cast<float>(arg.float_value); break;
    case ir::ScalarType::F64: slot.f64 = arg.float_value; break;
    default: slot.integer = arg.int_value; break;
  }
  return slot;
}

// Reads the partial result an entry stored for a reduction of `type`.
ReductionValue partial_of(const jit::ArgSlot& slot, ir::ScalarType type) {
  ReductionValue v;
  v.type = type;
  switch (type) {
    case ir::ScalarType::F32: v.float_value = slot.f32; break;
    case ir::ScalarType::F64: v.float_value = slot.f64; break;
    case ir::ScalarType::I32: {
      std::int32_t x;
      std::memcpy(&x, &slot, sizeof x);
      v.int_value = x;
      break;
    }
    default: v.int_value = slot.integer; break;
  }
  return v;
}

}  // namespace

CpuDevice::CpuDevice(std::string name, std::vector<unsigned> pus) : name_(std::move(name)), pool_(std::move(pus)) {}

CpuProgram CpuDevice::compile(std::shared_ptr<const ir::Kernel> optimized) {
  CpuProgram program;
  program.entry = jit::CpuCompiler::shared().compile(*optimized).entry;
  program.layout = jit::cpu_arg_layout(*optimized);
  program.inline_points = has_loops(*optimized) ? 256 : 16384;
  program.kernel = std::move(optimized);
  return program;
}

std::vector<ReductionValue> CpuDevice::run(const CpuProgram& program, const std::vector<KernelArg>& args,
                                           const Range& range) {
  const auto& kernel = *program.kernel;
  if (args.size() != kernel.params.size())
    throw Error("kernel '" + kernel.name + "' takes " + std::to_string(kernel.params.size()) + " arguments, " +
                std::to_string(args.size()) + " were given");

  // The argument block shared by every chunk; reductions get their own
  // partial-result slots per chunk below.
  std::vector<jit::ArgSlot> block(static_cast<std::size_t>(program.layout.slot_count));
  std::vector<int> reductions;
  for (std::size_t p = 0; p < args.size(); ++p) {
    auto* slot = &block[static_cast<std::size_t>(program.layout.first_slot[p])];
    const auto& param = kernel.params[p];
    if (param.is_array()) {
      const auto& array = std::get<ArrayArg>(args[p]);
      slot[0].pointer = array.data;
      for (int d = 0; d < param.rank; ++d) slot[1 + d].integer = array.extents[static_cast<std::size_t>(d)];
    } else if (param.is_scalar()) {
      slot[0] = slot_of(std::get<ScalarArg>(args[p]));
    } else {
      reductions.push_back(static_cast<int>(p));
    }
  }
  for (int d = 1; d < kernel.dims; ++d) {
    block[static_cast<std::size_t>(program.layout.range_slot + 2 * (d - 1))].integer = range.begin[d];
    block[static_cast<std::size_t>(program.layout.range_slot + 2 * (d - 1) + 1)].integer = range.end[d];
  }

  const std::int64_t rows = std::max<std::int64_t>(0, range.end[0] - range.begin[0]);
  const std::int64_t points = range.points();
  int chunks =
      points < program.inline_points || rows < 2 ? 1 : static_cast<int>(std::min<std::int64_t>(threads(), rows));

  std::vector<jit::ArgSlot> partials(reductions.size() * static_cast<std::size_t>(chunks));
  auto run_chunk = [&](int chunk, std::int64_t b, std::int64_t e) {
    if (reductions.empty()) {
      program.entry(b, e, block.data());
      return;
    }
    std::vector<jit::ArgSlot> own = block;
    for (std::size_t r = 0; r < reductions.size(); ++r)
      own[static_cast<std::size_t>(program.layout.first_slot[static_cast<std::size_t>(reductions[r])])].pointer =
          &partials[static_cast<std::size_t>(chunk) * reductions.size() + r];
    program.entry(b, e, own.data());
  };
  if (chunks == 1)
    run_chunk(0, range.begin[0], range.end[0]);
  else
    pool_.run(range.begin[0], range.end[0], chunks, run_chunk);

  std::vector<ReductionValue> results;
  for (std::size_t r = 0; r < reductions.size(); ++r) {
    const auto& param = kernel.params[static_cast<std::size_t>(reductions[r])];
    auto total = identity_value(param.reduce, param.type);
    for (int c = 0; c < chunks; ++c)
      total = combine(param.reduce, total,
                      partial_of(partials[static_cast<std::size_t>(c) * reductions.size() + r], param.type));
    results.push_back(total);
  }
  return results;
}

}  // namespace canopy::backends::cpu
