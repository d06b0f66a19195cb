// Running a case of the battery on a device and checking what it computed
// against the reference interpreter (battery.hpp).
#include <doctest/doctest.h>

#include <map>
#include <mutex>

#include <canopy/canopy.hpp>
#include <canopy/ir/interpreter.hpp>
#include <canopy/ir/mutator.hpp>
#include <canopy/ir/passes/optimize.hpp>

#include "battery/battery.hpp"

namespace battery {

using canopy::ir::RefArray;
using canopy::ir::RefValue;

Range range_of(std::initializer_list<i64> begin, std::initializer_list<i64> end) {
  Range range;
  range.dims = static_cast<int>(begin.size());
  std::copy(begin.begin(), begin.end(), range.begin.begin());
  std::copy(end.begin(), end.end(), range.end.begin());
  return range;
}

Range range_of(i64 n) { return range_of({0}, {n}); }

std::shared_ptr<const canopy::ir::Kernel> optimized(const canopy::KernelBase& kernel) {
  return std::make_shared<const canopy::ir::Kernel>(canopy::ir::optimize(kernel.ir()));
}

Results run_program(canopy::backends::Device& device, const canopy::backends::Program& program,
                    const std::vector<HostArg>& args, const Range& range) {
  Results results;
  results.arrays.resize(args.size());
  std::vector<canopy::backends::Buffer> buffers(args.size());
  std::vector<canopy::backends::KernelArg> launch;
  for (std::size_t p = 0; p < args.size(); ++p) {
    if (const auto* array = std::get_if<HostArray>(&args[p])) {
      buffers[p] = device.allocate(array->bytes.size());
      device.copy_in(buffers[p], 0, array->bytes.data(), array->bytes.size());
      launch.push_back(canopy::backends::ArrayArg{buffers[p].handle, array->extents});
      results.arrays[p] = *array;
    } else if (const auto* value = std::get_if<ScalarArg>(&args[p])) {
      launch.push_back(*value);
    } else if (const auto* same = std::get_if<SameArrayAs>(&args[p])) {
      launch.push_back(launch.at(static_cast<std::size_t>(same->param)));
    } else {
      launch.push_back(ReductionArg{});
    }
  }
  try {
    results.reductions = device.run(program, launch, range);
  } catch (...) {
    for (auto& buffer : buffers)
      if (buffer) device.free(buffer);
    throw;
  }
  for (std::size_t p = 0; p < args.size(); ++p) {
    if (!buffers[p]) continue;
    device.copy_out(buffers[p], 0, results.arrays[p].bytes.data(), results.arrays[p].bytes.size());
    device.free(buffers[p]);
  }
  return results;
}

Results run_on(canopy::backends::Device& device, const Case& c) {
  const auto program = device.compile(c.kernel);
  return run_program(device, *program, c.args, c.range);
}

namespace {

/// Element `k` of `array` as the interpreter holds values.
RefValue value_at(const HostArray& array, i64 k) {
  const unsigned char* at = array.bytes.data() + k * static_cast<i64>(canopy::ir::size_of(array.type));
  auto load = [at](auto value) {
    std::memcpy(&value, at, sizeof value);
    return value;
  };
  switch (array.type) {
    case ScalarType::Bool: return RefValue::boolean(load(std::uint8_t{}) != 0);
    case ScalarType::I32: return RefValue::i32(load(i32{}));
    case ScalarType::I64: return RefValue::i64(load(i64{}));
    case ScalarType::F32: return RefValue::f32(load(float{}));
    case ScalarType::F64: return RefValue::f64(load(double{}));
  }
  return {};
}

/// A scalar argument or a reduction's value as the interpreter holds values.
RefValue value_of_scalar(const ScalarArg& value) {
  switch (value.type) {
    case ScalarType::Bool: return RefValue::boolean(value.int_value != 0);
    case ScalarType::I32: return RefValue::i32(static_cast<i32>(value.int_value));
    case ScalarType::I64: return RefValue::i64(value.int_value);
    case ScalarType::F32: return RefValue::f32(static_cast<float>(value.float_value));
    case ScalarType::F64: return RefValue::f64(value.float_value);
  }
  return {};
}

RefArray ref_array_of(const HostArray& array) {
  RefArray ref;
  ref.type = array.type;
  ref.extents.assign(array.extents.begin(), array.extents.begin() + array.rank);
  ref.elements.reserve(static_cast<std::size_t>(array.size()));
  for (i64 k = 0; k < array.size(); ++k) ref.elements.push_back(value_at(array, k));
  return ref;
}

/// The kernel with index(d) read as index(d) + begin[d]: the interpreter
/// runs ranges that start at 0, so a piece [begin, end) runs as [0, end - begin).
class StartAt final : public canopy::ir::Mutator {
 public:
  explicit StartAt(const std::array<i64, 3>& begin) : begin_(begin) {}

 protected:
  canopy::ir::Expr visit(const canopy::ir::Index& node, const canopy::ir::Expr& self) override {
    const i64 begin = begin_[static_cast<std::size_t>(node.dim)];
    if (begin == 0) return self;
    return canopy::ir::make_binary(canopy::ir::BinaryOp::Add, self, canopy::ir::make_int(ScalarType::I64, begin));
  }

 private:
  std::array<i64, 3> begin_;
};

/// What the interpreter computes for one case: every array argument after
/// the run (empty where the argument is not an array) and the reductions.
struct Reference {
  std::vector<RefArray> arrays;
  std::vector<RefValue> reductions;
};

Reference interpret(const Case& c) {
  Reference reference;
  reference.arrays.resize(c.args.size());
  for (std::size_t p = 0; p < c.args.size(); ++p)
    if (const auto* array = std::get_if<HostArray>(&c.args[p])) reference.arrays[p] = ref_array_of(*array);
  std::vector<canopy::ir::RefArgument> args;
  for (std::size_t p = 0; p < c.args.size(); ++p) {
    if (std::holds_alternative<HostArray>(c.args[p]))
      args.emplace_back(&reference.arrays[p]);
    else if (const auto* value = std::get_if<ScalarArg>(&c.args[p]))
      args.emplace_back(value_of_scalar(*value));
    else if (const auto* same = std::get_if<SameArrayAs>(&c.args[p]))
      args.emplace_back(&reference.arrays.at(static_cast<std::size_t>(same->param)));
    else
      args.emplace_back(canopy::ir::RefReduction{});
  }
  std::vector<i64> extents;
  for (int d = 0; d < c.range.dims; ++d) extents.push_back(std::max<i64>(0, c.range.end[d] - c.range.begin[d]));
  const canopy::ir::Kernel kernel = StartAt(c.range.begin).mutate(*c.kernel);
  reference.reductions = canopy::ir::interpret(kernel, extents, args).reductions;
  return reference;
}

/// The reference of `c`, computed the first time a backend asks for it.
const Reference& reference_of(const Case& c) {
  static std::mutex mutex;
  static std::map<const Case*, Reference> computed;
  std::lock_guard lock(mutex);
  auto found = computed.find(&c);
  if (found == computed.end()) found = computed.emplace(&c, interpret(c)).first;
  return found->second;
}

/// How many values were compared, how many the reference is unsure of, how
/// many did not conform, and the first that did not.
struct Tally {
  i64 compared = 0, unsure = 0, wrong = 0;
  std::string first;

  void add(const RefValue& want, const RefValue& got, const std::string& where) {
    if (want.unsure) {
      ++unsure;
      return;
    }
    ++compared;
    if (canopy::ir::conforms(want, got)) return;
    if (wrong++ == 0) first = where + ": got " + canopy::ir::describe(got) + ", want " + canopy::ir::describe(want);
  }
};

}  // namespace

i64 check(const Case& c, const Results& got, const std::string& backend) {
  const Reference& want = reference_of(c);
  REQUIRE(got.arrays.size() == c.args.size());
  Tally tally;
  for (std::size_t p = 0; p < c.args.size(); ++p) {
    if (!std::holds_alternative<HostArray>(c.args[p])) continue;
    const RefArray& ref = want.arrays[p];
    const HostArray& have = got.arrays[p];
    REQUIRE(have.size() == ref.size());
    const std::string& name = c.kernel->params[p].name;
    for (i64 k = 0; k < have.size(); ++k)
      tally.add(ref.elements[static_cast<std::size_t>(k)], value_at(have, k), name + "[" + std::to_string(k) + "]");
  }
  REQUIRE(got.reductions.size() == want.reductions.size());
  for (std::size_t r = 0; r < want.reductions.size(); ++r)
    tally.add(want.reductions[r], value_of_scalar(got.reductions[r]), "reduction " + std::to_string(r));

  INFO(backend, ", ", c.what, ": ", tally.wrong, " of ", tally.compared, " values differ from the reference; ",
       tally.first);
  CHECK(tally.wrong == 0);
  // A case whose reference is unsure of every value would check nothing.
  INFO(tally.unsure, " values the reference is unsure of");
  CHECK((tally.compared > 0 || tally.unsure == 0));
  if (c.closed_form) c.closed_form(got);
  return tally.compared;
}

int run_group(const std::string& group, const std::string& backend, const std::function<Results(const Case&)>& run) {
  int ran = 0;
  i64 compared = 0;
  for (const Case& c : cases()) {
    if (c.group != group) continue;
    INFO(backend, ", ", c.what);
    compared += check(c, run(c), backend);
    ++ran;
  }
  MESSAGE(backend << ", " << group << ": " << ran << " cases, " << compared << " values compared");
  CHECK(ran > 0);
  CHECK(compared > 0);
  return ran;
}

}  // namespace battery
