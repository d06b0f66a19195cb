#include "cpu_device.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>

#include <canopy/ir/analysis/footprint.hpp>
#include <canopy/ir/error.hpp>
#include <canopy/ir/visitor.hpp>
#include <canopy/jit/cpu_compiler.hpp>

#include "../fault_injection.hpp"

namespace canopy::backends::cpu {

namespace {

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

// Where the streaming entry may start so that every vector store it makes
// into its arrays is aligned: at the points phase + k * period of a
// one-dimensional range (every array reaches a 64-byte boundary there; a
// chunk runs its points before the first of them with the plain entry, see
// run()), or, in a kernel of two or three dimensions, only where each array
// starts on a 64-byte boundary and so do its rows and the range's first
// column (phase 0, the range as a whole). Empty when no point aligns them all:
// memory a program wraps is often 16-byte aligned only, and arrays of one
// element size then still stream, from the same point on.
struct StreamingStart {
  std::int64_t phase = 0, period = 1;
  std::int64_t first_at_or_after(std::int64_t b) const { return b + ((phase - b) % period + period) % period; }
};

std::optional<StreamingStart> streaming_start(const CpuProgram& program, const std::vector<KernelArg>& args,
                                              const Range& range) {
  constexpr std::int64_t kLine = 64;
  const int last = program.ir->dims - 1;
  StreamingStart start;
  std::int64_t smallest = kLine;
  for (int p : program.streaming->params) {
    const auto size = static_cast<std::int64_t>(ir::size_of(program.ir->params[static_cast<std::size_t>(p)].type));
    smallest = std::min(smallest, size);
  }
  start.period = last == 0 ? kLine / smallest : 1;
  auto aligned_at = [&](std::int64_t point) {
    for (int p : program.streaming->params) {
      const auto& array = std::get<ArrayArg>(args[static_cast<std::size_t>(p)]);
      const auto size = static_cast<std::int64_t>(ir::size_of(program.ir->params[static_cast<std::size_t>(p)].type));
      if ((static_cast<std::int64_t>(reinterpret_cast<std::uintptr_t>(array.data) % kLine) + point * size) % kLine != 0)
        return false;
      if (last > 0 && (array.extents[static_cast<std::size_t>(last)] * size % kLine != 0 ||
                       range.begin[static_cast<std::size_t>(last)] * size % kLine != 0))
        return false;
    }
    return true;
  };
  for (start.phase = 0; start.phase < start.period; ++start.phase)
    if (aligned_at(start.phase)) return start;
  return std::nullopt;
}

// The entry of one of `program`'s variants: compiled here when no thread has
// started it; null while another thread compiles it (the caller runs the
// plain entry rather than wait). Throws as the compiler does; a later call
// tries again.
jit::CpuEntry variant_entry(const CpuProgram& program, EntryVariant& variant) {
  int state = variant.state.load(std::memory_order_acquire);
  if (state == EntryVariant::kReady) return variant.entry;
  if (state == EntryVariant::kCompiling ||
      !variant.state.compare_exchange_strong(state, EntryVariant::kCompiling, std::memory_order_acq_rel))
    return nullptr;
  try {
    jit::CpuCompiler::CodeOptions code;
    (variant.plain_adds ? code.plain_adds : code.streaming_stores) = variant.params;
    variant.entry = jit::CpuCompiler::shared().compile(*program.ir, code).entry;
  } catch (...) {
    variant.state.store(EntryVariant::kNone, std::memory_order_release);
    throw;
  }
  variant.state.store(EntryVariant::kReady, std::memory_order_release);
  return variant.entry;
}

jit::CpuEntry streaming_entry_of(const CpuProgram& program) { return variant_entry(program, *program.streaming); }

// Bytes a launch over `range` writes into the streaming arrays.
std::size_t streaming_bytes(const CpuProgram& program, const Range& range) {
  std::size_t bytes = 0;
  for (int p : program.streaming->params)
    bytes +=
        static_cast<std::size_t>(range.points()) * ir::size_of(program.ir->params[static_cast<std::size_t>(p)].type);
  return bytes;
}

}  // namespace

std::size_t automatic_streaming_threshold(const std::vector<unsigned>& pus) {
  return streaming_threshold_for_cache(last_level_cache_bytes(pus));
}

namespace {

// An array a launch's chunks add into privately (CpuDevice::run): the
// argument slot of its pointer, the array, and one zeroed copy per chunk.
struct PrivateArray {
  std::size_t slot = 0;
  void* data = nullptr;
  std::int64_t elements = 0;
  ir::ScalarType type = ir::ScalarType::F64;
  std::size_t bytes = 0;  ///< of one copy, a multiple of 64
  std::unique_ptr<std::byte, decltype(&std::free)> copies{nullptr, &std::free};
};

struct PrivateAdds {
  std::vector<PrivateArray> arrays;
};

// A copy is worth its zeroing and its sum when the array fits a core's cache
// (64 KiB) and a chunk makes at least four adds' worth of points per element.
PrivateAdds private_adds_of(const CpuProgram& program, const std::vector<KernelArg>& args, const Range& range,
                            int chunks) {
  PrivateAdds privatized;
  if (chunks < 2 || !program.private_adds) return privatized;
  constexpr std::size_t kMostBytes = 64 * 1024;
  for (int p : program.private_adds->params) {
    const auto& param = program.ir->params[static_cast<std::size_t>(p)];
    if (param.type != ir::ScalarType::I32 && param.type != ir::ScalarType::I64 && param.type != ir::ScalarType::F32 &&
        param.type != ir::ScalarType::F64)
      continue;
    const auto& array = std::get<ArrayArg>(args[static_cast<std::size_t>(p)]);
    std::int64_t elements = 1;
    for (int d = 0; d < param.rank; ++d) elements *= array.extents[static_cast<std::size_t>(d)];
    const std::size_t bytes = static_cast<std::size_t>(elements) * ir::size_of(param.type);
    if (elements <= 0 || bytes > kMostBytes || range.points() < 4 * elements * chunks) continue;
    PrivateArray copy;
    copy.slot = static_cast<std::size_t>(program.layout.first_slot[static_cast<std::size_t>(p)]);
    copy.data = array.data;
    copy.elements = elements;
    copy.type = param.type;
    copy.bytes = (bytes + 63) / 64 * 64;
    const std::size_t total = copy.bytes * static_cast<std::size_t>(chunks);
    copy.copies.reset(static_cast<std::byte*>(std::aligned_alloc(64, total)));
    if (!copy.copies) continue;  // no memory for copies: the chunks add into the array itself
    std::memset(copy.copies.get(), 0, total);
    privatized.arrays.push_back(std::move(copy));
  }
  return privatized;
}

// The chunks' copies summed into the first, in chunk order, then added into
// the array atomically: the pieces of another CPU leaf may be adding to it
// at the same time. Integers add as unsigned, wrapping as the atomic adds do.
template <class T>
void add_each(T* into, std::byte* copies, std::size_t stride, std::int64_t elements, int chunks) {
  T* first = reinterpret_cast<T*>(copies);
  for (int c = 1; c < chunks; ++c) {
    const T* from = reinterpret_cast<const T*>(copies + static_cast<std::size_t>(c) * stride);
    for (std::int64_t e = 0; e < elements; ++e) first[e] += from[e];
  }
  for (std::int64_t e = 0; e < elements; ++e)
    if (first[e] != T{0}) std::atomic_ref<T>(into[e]).fetch_add(first[e], std::memory_order_relaxed);
}

void add_copies(const PrivateArray& array, int chunks) {
  std::byte* copies = array.copies.get();
  switch (array.type) {
    case ir::ScalarType::I32:
      return add_each(static_cast<std::uint32_t*>(array.data), copies, array.bytes, array.elements, chunks);
    case ir::ScalarType::I64:
      return add_each(static_cast<std::uint64_t*>(array.data), copies, array.bytes, array.elements, chunks);
    case ir::ScalarType::F32:
      return add_each(static_cast<float*>(array.data), copies, array.bytes, array.elements, chunks);
    case ir::ScalarType::F64:
      return add_each(static_cast<double*>(array.data), copies, array.bytes, array.elements, chunks);
    default: break;
  }
}

}  // namespace

CpuDevice::CpuDevice(std::string name, std::vector<unsigned> pus) : name_(std::move(name)), pool_(std::move(pus)) {
  streaming_threshold_ = streaming_threshold_from_environment(automatic_streaming_threshold(pool_.pus()));
  // What info() promises (it was left empty before, so the engine took a CPU
  // leaf for a device with memory of its own and compiled its program twice).
  info_.id = name_;
  info_.name = name_;
  info_.backend = "cpu";
  info_.host_memory = true;
}

std::shared_ptr<CpuProgram> CpuDevice::compile_program(std::shared_ptr<const ir::Kernel> optimized) {
  if (inject_fault("cpu", FaultOperation::Compile))
    throw Error("Canopy's JIT cannot compile kernel '" + optimized->name + "' for the CPU" +
                injected_note("cpu", FaultOperation::Compile));
  auto program = std::make_shared<CpuProgram>();
  const auto compiled = jit::CpuCompiler::shared().compile(*optimized);
  program->entry = compiled.entry;
  program->source = compiled.source;
  program->layout = jit::cpu_arg_layout(*optimized);
  // A point with a loop may be any amount of work: spread every range of two
  // points or more over the threads.
  program->inline_below = ir::has_loops(*optimized) ? 2 : 16384;
  // A kernel that also reduces keeps them (a fused init -> triad -> dot).
  if (auto candidates = jit::streaming_candidates(*optimized); !candidates.empty()) {
    program->streaming = std::make_shared<EntryVariant>();
    program->streaming->params = std::move(candidates);
  }
  std::vector<int> private_adds;
  for (const auto& array : ir::footprint_of(*optimized).arrays)
    if (array.writes.only_atomic() && !array.reads.present) private_adds.push_back(array.param);
  if (!private_adds.empty()) {
    program->private_adds = std::make_shared<EntryVariant>();
    program->private_adds->params = std::move(private_adds);
    program->private_adds->plain_adds = true;
  }
  program->ir = std::move(optimized);
  return program;
}

void CpuDevice::compile_together(const std::vector<std::shared_ptr<const ir::Kernel>>& optimized) {
  std::vector<const ir::Kernel*> kernels;
  for (const auto& kernel : optimized) kernels.push_back(kernel.get());
  jit::CpuCompiler::shared().compile_together(kernels);
}

void CpuDevice::compile_variants(const Program& any_program) {
  const auto* program = dynamic_cast<const CpuProgram*>(&any_program);
  if (!program) return;
  for (const auto& variant : {program->streaming, program->private_adds}) {
    if (!variant) continue;
    try {
      variant_entry(*program, *variant);
    } catch (const Error&) {  // the launch that wants it compiles it again and reports it
    }
  }
}

std::shared_ptr<Program> CpuDevice::compile(std::shared_ptr<const ir::Kernel> optimized) {
  return compile_program(std::move(optimized));
}

Buffer CpuDevice::allocate(std::size_t bytes) {
  const std::size_t rounded = (std::max<std::size_t>(bytes, 1) + 63) / 64 * 64;
  void* p = inject_fault("cpu", FaultOperation::Alloc) ? nullptr : std::aligned_alloc(64, rounded);
  if (!p) throw Error("CPU device '" + name_ + "' cannot allocate " + std::to_string(bytes) + " bytes of host memory");
  std::memset(p, 0, rounded);
  return Buffer{p, bytes};
}

void CpuDevice::free(Buffer buffer) noexcept { std::free(buffer.handle); }

void CpuDevice::copy_in(Buffer buffer, std::size_t offset, const void* source, std::size_t bytes) {
  if (inject_fault("cpu", FaultOperation::Copy))
    throw Error("CPU device '" + name_ + "' could not copy " + std::to_string(bytes) + " bytes in" +
                injected_note("cpu", FaultOperation::Copy));
  if (bytes > 0)
    std::memcpy(static_cast<char*>(buffer.handle) + offset, source, bytes);  // an empty array's data may be null
}

void CpuDevice::copy_out(Buffer buffer, std::size_t offset, void* destination, std::size_t bytes) {
  if (inject_fault("cpu", FaultOperation::Copy))
    throw Error("CPU device '" + name_ + "' could not copy " + std::to_string(bytes) + " bytes out" +
                injected_note("cpu", FaultOperation::Copy));
  if (bytes > 0) std::memcpy(destination, static_cast<const char*>(buffer.handle) + offset, bytes);
}

void CpuDevice::fill(Buffer buffer, std::size_t first, std::size_t count, const ScalarArg& value) {
  auto fill_as = [&](auto typed) {
    using T = decltype(typed);
    T* data = static_cast<T*>(buffer.handle) + first;
    const T v = ir::is_float(value.type) ? static_cast<T>(value.float_value) : static_cast<T>(value.int_value);
    std::fill(data, data + count, v);
  };
  switch (value.type) {
    case ir::ScalarType::Bool: fill_as(std::uint8_t{}); break;
    case ir::ScalarType::I32: fill_as(std::int32_t{}); break;
    case ir::ScalarType::I64: fill_as(std::int64_t{}); break;
    case ir::ScalarType::F32: fill_as(float{}); break;
    case ir::ScalarType::F64: fill_as(double{}); break;
  }
}

// A long one-dimensional range splits on whole vectors of every type (16
// points: 64 bytes of floats).
constexpr std::int64_t kPointGrain = 16;

int CpuDevice::chunk_count(const CpuProgram& program, const Range& range) const {
  // Several chunks per thread, so that threads that finish early help the
  // others (see ThreadPool).
  constexpr int kChunksPerThread = 8;
  const std::int64_t rows = std::max<std::int64_t>(0, range.end[0] - range.begin[0]);
  if (range.points() < program.inline_below || rows < 2 || threads() == 1) return 1;
  return static_cast<int>(std::min<std::int64_t>(threads() * kChunksPerThread, rows));
}

void CpuDevice::expect_run(const Program& program, const Range& range) {
  const auto* cpu = dynamic_cast<const CpuProgram*>(&program);
  if (cpu && chunk_count(*cpu, range) > 1) pool_.wake_helpers();
}

std::vector<ReductionValue> CpuDevice::run(const Program& any_program, const std::vector<KernelArg>& args,
                                           const Range& range) {
  const auto& program = dynamic_cast<const CpuProgram&>(any_program);
  const auto& kernel = *program.ir;
  if (args.size() != kernel.params.size())
    throw Error("kernel '" + kernel.name + "' takes " + std::to_string(kernel.params.size()) + " arguments, " +
                std::to_string(args.size()) + " were given");
  if (inject_fault("cpu", FaultOperation::Launch))
    throw Error("CPU device '" + name_ + "' could not run kernel '" + kernel.name + "'" +
                injected_note("cpu", FaultOperation::Launch));

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
  const int chunks = chunk_count(program, range);
  const std::int64_t grain = kernel.dims == 1 && rows >= kPointGrain * chunks ? kPointGrain : 1;

  // A small array that the points only add to atomically, from many more
  // points than it has elements (a histogram): each chunk adds into a copy
  // of its own starting at zero, and the copies are added into the array
  // once every chunk ran. The chunks on two cores no longer take the same
  // cache lines from each other at every add, and once every such array of
  // the kernel has copies, the variant whose adds there are plain ones runs
  // (a 256-bin histogram of 64M keys on 2 cores: 1.43 s with atomic adds
  // into the array, 80 ms into copies, 19-22 ms with plain adds; an OpenMP loop
  // with private bins took 13 ms).
  const PrivateAdds privatized = private_adds_of(program, args, range, chunks);
  jit::CpuEntry plain_adds_entry = nullptr;
  if (!privatized.arrays.empty() && privatized.arrays.size() == program.private_adds->params.size())
    plain_adds_entry = variant_entry(program, *program.private_adds);

  // Streaming stores for launches that pass far more through their arrays
  // than the caches hold (takes_streaming_stores). A one-dimensional chunk
  // runs its first points, up to where its arrays reach 64-byte boundaries,
  // with the plain entry, since the streaming entry's stores assume aligned
  // starts; a range of more dimensions is aligned as a whole or not at all.
  jit::CpuEntry streaming_entry = nullptr;
  std::optional<StreamingStart> streaming_from;
  if (program.streaming && !plain_adds_entry &&
      takes_streaming_stores(streaming_bytes(program, range), bytes_passed(kernel, range.points(), args),
                             streaming_threshold_) &&
      (streaming_from = streaming_start(program, args, range))) {
    streaming_entry = streaming_entry_of(program);
  }

  // Each chunk's partial reductions: one set per entry it runs (the head
  // before a 64-byte boundary and the streaming rest of a one-dimensional
  // range are two), combined in order.
  const bool aligns_head = streaming_entry && kernel.dims == 1;
  const int parts = aligns_head ? 2 : 1;
  const std::size_t sets = static_cast<std::size_t>(chunks) * static_cast<std::size_t>(parts);
  std::vector<jit::ArgSlot> partials(reductions.size() * sets);
  std::vector<char> ran(sets, 0);
  auto run_part = [&](std::size_t set, jit::CpuEntry entry, std::int64_t b, std::int64_t e) {
    if (reductions.empty() && privatized.arrays.empty()) {
      entry(b, e, block.data());
      return;
    }
    std::vector<jit::ArgSlot> own = block;
    for (std::size_t r = 0; r < reductions.size(); ++r)
      own[static_cast<std::size_t>(program.layout.first_slot[static_cast<std::size_t>(reductions[r])])].pointer =
          &partials[set * reductions.size() + r];
    for (const auto& array : privatized.arrays)
      own[array.slot].pointer = array.copies.get() + (set / static_cast<std::size_t>(parts)) * array.bytes;
    entry(b, e, own.data());
    ran[set] = 1;
  };
  auto run_chunk = [&](int chunk, std::int64_t b, std::int64_t e) {
    const auto set = static_cast<std::size_t>(chunk) * static_cast<std::size_t>(parts);
    if (!aligns_head) {
      run_part(set, plain_adds_entry ? plain_adds_entry : streaming_entry ? streaming_entry : program.entry, b, e);
      return;
    }
    const std::int64_t aligned = std::min(e, streaming_from->first_at_or_after(b));
    if (aligned > b) run_part(set, program.entry, b, aligned);
    if (e > aligned) run_part(set + 1, streaming_entry, aligned, e);
  };
  if (chunks == 1)
    run_chunk(0, range.begin[0], range.end[0]);
  else
    pool_.run(range.begin[0], range.end[0], chunks, grain, run_chunk);
  for (const auto& array : privatized.arrays) add_copies(array, chunks);

  std::vector<ReductionValue> results;
  for (std::size_t r = 0; r < reductions.size(); ++r) {
    const auto& param = kernel.params[static_cast<std::size_t>(reductions[r])];
    auto total = identity_value(param.reduce, param.type);
    for (std::size_t set = 0; set < sets; ++set)
      if (ran[set]) total = combine(param.reduce, total, partial_of(partials[set * reductions.size() + r], param.type));
    results.push_back(total);
  }
  return results;
}

}  // namespace canopy::backends::cpu
