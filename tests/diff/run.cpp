#include "run.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <cstring>

#include <canopy/ir/error.hpp>
#include <canopy/runtime/engine.hpp>
#include <canopy/runtime/internal/engine_access.hpp>
#include "scoped_setting.hpp"

namespace canopy::diff {

namespace {

const ir::Kernel& kernel_of(const Program& program, const Step& step) {
  return *program.kernels[std::size_t(step.kernel)];
}

}  // namespace

// ---- the reference -------------------------------------------------------------

Expectation expect(const Program& program) {
  Expectation expected;
  std::vector<ir::RefArray> arrays;
  for (const auto& spec : program.arrays) arrays.push_back(initial_contents(spec));
  expected.reductions.resize(program.steps.size());
  expected.reads.resize(program.steps.size());
  for (std::size_t s = 0; s < program.steps.size(); ++s) {
    const Step& step = program.steps[s];
    switch (step.kind) {
      case StepKind::Launch: {
        std::vector<ir::RefArgument> args;
        for (const auto& arg : step.args) {
          if (auto* array = std::get_if<int>(&arg))
            args.emplace_back(&arrays[std::size_t(*array)]);
          else if (auto* value = std::get_if<ir::RefValue>(&arg))
            args.emplace_back(*value);
          else
            args.emplace_back(ir::RefReduction{});
        }
        try {
          const ir::RefOutcome outcome = ir::interpret(kernel_of(program, step), step.range, args);
          expected.reductions[s] = outcome.reductions;
          expected.unsure_points += outcome.unsure_points;
        } catch (const Error& e) {
          throw Error(fmt::format("step {} (the reference): {}", s + 1, e.what()));
        }
        break;
      }
      case StepKind::HostWrite:
        host_write(program.arrays[std::size_t(step.array)], step.seed, step.count, arrays[std::size_t(step.array)]);
        break;
      case StepKind::HostRead: expected.reads[s] = arrays[std::size_t(step.array)]; break;
      case StepKind::Faulty:  // checked runs skip the faulting loads, unchecked ones the step: unknown
        for (std::size_t p = 0; p < step.args.size(); ++p)
          if (auto* array = std::get_if<int>(&step.args[p]); array && kernel_of(program, step).params[p].writes())
            for (auto& element : arrays[std::size_t(*array)].elements) element.unsure = true;
        break;
      case StepKind::Pause:
      case StepKind::Tree:
      case StepKind::Refused: break;
    }
  }
  expected.arrays = std::move(arrays);
  return expected;
}

// ---- values in Canopy's memory -------------------------------------------------

namespace {

ir::RefValue element_at(ir::ScalarType type, const void* data, std::int64_t e) {
  const auto k = std::size_t(e);
  switch (type) {
    case ir::ScalarType::Bool: return ir::RefValue::boolean(static_cast<const std::uint8_t*>(data)[k] != 0);
    case ir::ScalarType::I32: return ir::RefValue::i32(static_cast<const std::int32_t*>(data)[k]);
    case ir::ScalarType::I64: return ir::RefValue::i64(static_cast<const std::int64_t*>(data)[k]);
    case ir::ScalarType::F32: return ir::RefValue::f32(static_cast<const float*>(data)[k]);
    case ir::ScalarType::F64: return ir::RefValue::f64(static_cast<const double*>(data)[k]);
  }
  return {};
}

void set_element(ir::ScalarType type, void* data, std::int64_t e, const ir::RefValue& v) {
  const auto k = std::size_t(e);
  switch (type) {
    case ir::ScalarType::Bool: static_cast<std::uint8_t*>(data)[k] = v.i != 0; break;
    case ir::ScalarType::I32: static_cast<std::int32_t*>(data)[k] = static_cast<std::int32_t>(v.i); break;
    case ir::ScalarType::I64: static_cast<std::int64_t*>(data)[k] = v.i; break;
    case ir::ScalarType::F32: static_cast<float*>(data)[k] = static_cast<float>(v.f); break;
    case ir::ScalarType::F64: static_cast<double*>(data)[k] = v.f; break;
  }
}

ir::RefValue reduction_value(const backends::ReductionValue& r) {
  ir::RefValue v;
  v.type = r.type;
  v.i = r.int_value;
  v.f = r.float_value;
  return v;
}

backends::ScalarArg scalar_arg(const ir::RefValue& v) {
  backends::ScalarArg arg;
  arg.type = v.type;
  arg.int_value = v.i;
  arg.float_value = v.f;
  return arg;
}

std::string got_text(const ir::RefValue& v) {
  if (ir::is_float(v.type)) return fmt::format("{} ({:a})", v.f, v.f);
  return std::to_string(v.i);
}

// "[3]" or "[2, 17]": the position of element `e` in an array of `extents`.
std::string position(const std::vector<std::int64_t>& extents, std::int64_t e) {
  std::vector<std::int64_t> at(extents.size());
  for (std::size_t d = extents.size(); d-- > 0;) {
    at[d] = e % extents[d];
    e /= extents[d];
  }
  std::string text;
  for (auto i : at) text += (text.empty() ? "" : ", ") + std::to_string(i);
  return "[" + text + "]";
}

// The elements of Canopy's `array` that do not conform to `expected`: how
// many, and the first few.
std::optional<std::string> compare_array(const ArraySpec& spec, const runtime::ArrayStorage& array,
                                         const ir::RefArray& expected, Counts& counts) {
  std::int64_t wrong = 0;
  std::string first;
  for (std::int64_t e = 0; e < spec.size(); ++e) {
    const ir::RefValue& want = expected.elements[std::size_t(e)];
    ++counts.values;
    if (want.unsure) ++counts.unsure;
    const ir::RefValue got = element_at(spec.type, array.host_data(), e);
    if (ir::conforms(want, got)) continue;
    if (++wrong <= 3)
      first += fmt::format("\n    {}{}: got {}, want {}", spec.name, position(spec.extents, e), got_text(got),
                           ir::describe(want));
  }
  if (wrong == 0) return std::nullopt;
  return fmt::format("array {} ({} {}): {} of {} elements differ:{}", spec.name, ir::name_of(spec.type),
                     range_text(spec.extents), wrong, spec.size(), first);
}

// ---- trees -------------------------------------------------------------------------

// The tree of `discovered` that keeps only `names` and their ancestors.
Hierarchy tree_with_leaves(const Hierarchy& discovered, const std::vector<std::string>& names) {
  Hierarchy tree;
  for (const Location* location : discovered.all()) {
    bool keep = false;
    for (const auto& name : names) keep = keep || Hierarchy::is_above_or_same(*location, discovered.at(name));
    if (keep)
      tree.add(location->name(), location->kind(), location->traits(),
               location->parent() ? location->parent()->name() : std::string());
  }
  return tree;
}

// node -> numa0 -> cpuA, cpuB: a CPU leaf on each of two cores.
Hierarchy one_core_leaves(const NodeInventory& node) {
  Hierarchy tree;
  tree.add("node", LocationKind::Virtual, {}, "");
  tree.add("numa0", LocationKind::HostMemory, {}, "node");
  for (std::size_t k = 0; k < 2; ++k) {
    LocationTraits traits;
    traits.cores = 1;
    traits.pus = {node.cores[k % node.cores.size()].pu};
    tree.add(k == 0 ? "cpuA" : "cpuB", LocationKind::Cpu, traits, "numa0");
  }
  return tree;
}

std::vector<const Location*> executing_leaves(const Hierarchy& tree) {
  std::vector<const Location*> leaves;
  if (!tree.root()) return leaves;
  for (const Location* leaf : tree.leaves(*tree.root()))
    if (leaf->executes()) leaves.push_back(leaf);
  return leaves;
}

// A new CPU leaf on core `core` (modulo the cores), beside the first leaf.
void add_leaf(Hierarchy& tree, int core, const NodeInventory& node) {
  const auto leaves = executing_leaves(tree);
  const Location* beside = leaves.empty() ? nullptr : leaves.front()->parent();
  if (!beside || node.cores.empty()) return;
  std::string name;
  for (int k = 0; name.empty() || tree.find(name); ++k) name = "extra" + std::to_string(k);
  LocationTraits traits;
  traits.cores = 1;
  traits.pus = {node.cores[std::size_t(core) % node.cores.size()].pu};
  tree.add(name, LocationKind::Cpu, traits, beside->name());
}

// The tree after `step` changes `tree` (a change that would leave some
// memory without a leaf, or the tree without one, is left out).
void change_tree(Hierarchy& tree, const Step& step, const Hierarchy& placed, const NodeInventory& node) {
  if (step.change == TreeChange::Restore) {
    tree = placed;
    return;
  }
  if (step.change == TreeChange::Add) return add_leaf(tree, step.leaf, node);
  const auto leaves = executing_leaves(tree);
  if (leaves.size() < 2) return;
  const Location* leaf = leaves[std::size_t(step.leaf) % leaves.size()];
  const Location* parent = leaf->parent();
  if (!parent || parent == tree.root() || tree.leaves(*parent).size() < 2) return;
  const std::string name = leaf->name();
  if (step.change == TreeChange::Drop)
    tree.remove(name);
  else
    tree.move(name, tree.root()->name());
}

// The policy text of a launch at `at` (numbers drawn from the step's seed:
// one to two per child of `at` that has leaves, folded over them in turn).
std::string policy_text(PolicyKind kind, const Step& step, const Hierarchy& tree, const Location& at) {
  if (kind != PolicyKind::Percentage && kind != PolicyKind::Range) return std::string(name_of(kind));
  std::size_t children = 0;
  for (const Location* child : at.children()) children += tree.leaves(*child).empty() ? 0 : 1;
  Rng rng(step.policy_seed);
  const std::size_t count = std::max<std::size_t>(1, children) * (rng.chance(0.3) ? 2 : 1);
  std::vector<std::int64_t> weights(count);
  std::int64_t total = 0;
  for (auto& w : weights) total += (w = rng.between(0, 9));
  if (total == 0) total = weights[0] = 1;
  const std::int64_t whole = kind == PolicyKind::Range ? step.range[0] : 100;
  std::string numbers;
  std::int64_t given = 0;
  for (std::size_t k = 0; k < count; ++k) {
    const std::int64_t share = k + 1 == count ? whole - given : whole * weights[k] / total;
    given += share;
    numbers += (k ? "," : "") + std::to_string(share);
  }
  return fmt::format("{}:[{}]", name_of(kind), numbers);
}

}  // namespace

// ---- the runner --------------------------------------------------------------------

namespace {

// A runtime made with the environment variable `name` set to `value` (it reads
// its settings when made), the variable as it was afterwards.
std::unique_ptr<Runtime> runtime_with(const char* name, const char* value) {
  canopy::testing::ScopedSetting setting(name, value);
  return std::make_unique<Runtime>();
}

// Unchecked runs merge what each memory wrote wherever a technique fits, so
// that every merge is exercised; checked runs choose by cost (the default),
// so that regions put on one memory are too.
// Fused chains are made when first seen (CANOPY_FUSE=eager), not when their
// kernel happens to be compiled, so that every program's chains run fused.
// An adaptive region follows the split its inputs were left in wherever it
// differs (CANOPY_SEQUENCE_PLACEMENT=always), not only where that pays on
// this machine, so that following is exercised. The CPU writes every array
// that may take streaming stores with them (CANOPY_STREAMING_STORES=on),
// not only in launches larger than its caches.
std::unique_ptr<Runtime> unchecked_runtime() {
  canopy::testing::ScopedSetting eager("CANOPY_FUSE", "eager"), follow("CANOPY_SEQUENCE_PLACEMENT", "always"),
      streaming("CANOPY_STREAMING_STORES", "on");
  return runtime_with("CANOPY_SPLIT_WRITES", "merge");
}

}  // namespace

CanopyRunner::CanopyRunner() : runtime_(unchecked_runtime()) {
  discovered_ = runtime_->hierarchy();
  std::vector<std::string> devices;
  std::string cpu;
  for (const Location* leaf : executing_leaves(discovered_)) {
    leaves_.push_back(leaf->name());
    if (leaf->kind() == LocationKind::Cpu && cpu.empty()) cpu = leaf->name();
    if (leaf->kind() != LocationKind::Cpu) devices.push_back(leaf->name());
  }
  auto add = [&](std::string name, std::vector<std::string> leaves, std::optional<PolicyKind> policy, bool checked) {
    placements_.push_back(Placement{std::move(name), std::move(leaves), policy, checked});
  };
  for (const auto& leaf : leaves_) add(leaf, {leaf}, PolicyKind::Static, false);
  std::vector<std::vector<std::string>> groups;
  if (!cpu.empty() && !devices.empty()) groups.push_back({cpu, devices[0]});
  if (devices.size() >= 2) groups.push_back({devices[0], devices[1]});
  if (runtime_->node().cores.size() >= 2) groups.push_back({"cpuA", "cpuB"});
  if (!cpu.empty() && devices.size() >= 2) groups.push_back({cpu, devices[0], devices[1]});
  for (const auto& group : groups) {
    std::string joined;
    for (const auto& leaf : group) joined += (joined.empty() ? "" : "+") + leaf;
    for (int p = 0; p < 6; ++p) add(joined + "/" + std::string(name_of(PolicyKind(p))), group, PolicyKind(p), false);
    add(joined + "/mixed", group, std::nullopt, false);
    add("checked:" + joined + "/mixed", group, std::nullopt, true);
  }
  for (const auto& leaf : leaves_) add("checked:" + leaf, {leaf}, PolicyKind::Static, true);
  // The same programs with fusion off, beside the fused runs above.
  const std::size_t fused = placements_.size();
  for (std::size_t p = 0; p < fused; ++p) {
    if (placements_[p].checked || (placements_[p].policy && *placements_[p].policy != PolicyKind::Static)) continue;
    Placement unfused = placements_[p];
    unfused.name = "unfused:" + unfused.name;
    unfused.fuse = false;
    placements_.push_back(std::move(unfused));
  }
}

CanopyRunner::~CanopyRunner() = default;

const Placement& CanopyRunner::placement(const std::string& name) const {
  std::string known;
  for (const auto& p : placements_) {
    if (p.name == name) return p;
    known += (known.empty() ? "" : ", ") + p.name;
  }
  throw Error(fmt::format("no placement '{}' on this node; there are: {}", name, known));
}

void CanopyRunner::renew() {
  runtime_.reset();
  checked_.reset();
  runtime_ = unchecked_runtime();
}

Runtime& CanopyRunner::runtime(bool checked) {
  if (!checked) return *runtime_;
  if (!checked_) checked_ = runtime_with("CANOPY_CHECK", "bounds");
  return *checked_;
}

namespace {

/// One program's run on one runtime.
class Run {
 public:
  Run(Runtime& rt, const Program& program, const Expectation& expected, const Placement& placement, Hierarchy placed,
      Counts& counts)
      : rt_(rt),
        program_(program),
        expected_(expected),
        placement_(placement),
        placed_(std::move(placed)),
        counts_(counts) {}

  std::optional<Mismatch> go() {
    tree_ = placed_;
    canopy::runtime::engine_of(rt_).reconfigure([&](Hierarchy& h) { h = tree_; });
    for (const auto& spec : program_.arrays) arrays_.push_back(make_array(spec));
    for (std::size_t s = 0; s < program_.steps.size(); ++s) {
      std::optional<std::string> problem;
      try {
        problem = step(s);
      } catch (const std::exception& e) {
        if (refused_as_expected(e)) return std::nullopt;
        problem = fmt::format("Canopy threw: {}", e.what());
      }
      // A refused region's error comes at pause(); a host view before it
      // shows the arrays as they were.
      if (problem && refusal_pending()) return std::nullopt;
      if (problem) return Mismatch{int(s), *problem};
    }
    try {
      rt_.pause();
      for (std::size_t a = 0; a < arrays_.size(); ++a)
        if (auto problem = read_and_compare(a, expected_.arrays[a])) return Mismatch{-1, *problem};
    } catch (const std::exception& e) {
      if (refused_as_expected(e)) return std::nullopt;
      return Mismatch{-1, fmt::format("Canopy threw: {}", e.what())};
    }
    // With CANOPY_DEVICE_MEMORY, no device may have held more than it allows.
    for (const auto& memory : rt_.stats().device_memory)
      if (memory.capacity_bytes > 0 && memory.peak_bytes > memory.capacity_bytes)
        return Mismatch{-1, fmt::format("device {} held {} bytes, more than its capacity of {}", memory.leaf,
                                        memory.peak_bytes, memory.capacity_bytes)};
    return std::nullopt;
  }

 private:
  // A region whose own arrays do not fit the memory of a device it runs on
  // (CANOPY_DEVICE_MEMORY) is refused, and that is the outcome checked: true
  // when `e` is such a refusal and some launch of the program has more bytes
  // of arrays than the smallest device memory holds.
  bool refused_as_expected(const std::exception& e) {
    if (std::string_view(e.what()).find("does not fit a device memory") == std::string_view::npos) return false;
    // Any device memory with a capacity (a tree change in the program may
    // have taken the placement's leaf away, and its name with it).
    std::int64_t smallest = 0;
    for (const auto& memory : rt_.stats().device_memory)
      if (memory.capacity_bytes > 0)
        smallest = smallest == 0 ? memory.capacity_bytes : std::min(smallest, memory.capacity_bytes);
    if (smallest == 0) return false;
    for (const auto& step : program_.steps) {
      if (step.kind != StepKind::Launch) continue;
      std::set<int> used;
      for (const auto& arg : step.args)
        if (const int* array = std::get_if<int>(&arg)) used.insert(*array);
      std::int64_t bytes = 0;
      for (int a : used) {
        const auto& spec = program_.arrays[static_cast<std::size_t>(a)];
        bytes += spec.size() * static_cast<std::int64_t>(ir::size_of(spec.type));
      }
      if (bytes > smallest) {
        ++counts_.refused;
        return true;
      }
    }
    return false;
  }

  // True when pause() now raises a refusal refused_as_expected accepts.
  bool refusal_pending() {
    try {
      rt_.pause();
    } catch (const std::exception& e) {
      return refused_as_expected(e);
    }
    return false;
  }

  std::shared_ptr<runtime::ArrayStorage> make_array(const ArraySpec& spec) {
    Shape shape = spec.extents.size() == 1   ? Shape(spec.extents[0])
                  : spec.extents.size() == 2 ? Shape(spec.extents[0], spec.extents[1])
                                             : Shape(spec.extents[0], spec.extents[1], spec.extents[2]);
    auto array = canopy::runtime::engine_of(rt_).allocate(spec.type, shape, named(spec.name));
    write_all(*array, spec, initial_contents(spec));
    return array;
  }

  static void write_all(runtime::ArrayStorage& array, const ArraySpec& spec, const ir::RefArray& contents) {
    array.wait_idle();
    array.sync_host(true);
    for (std::int64_t e = 0; e < spec.size(); ++e)
      set_element(spec.type, array.host_data(), e, contents.elements[std::size_t(e)]);
  }

  std::optional<std::string> read_and_compare(std::size_t a, const ir::RefArray& want) {
    auto& array = *arrays_[a];
    array.wait_idle();
    array.sync_host(false);
    return compare_array(program_.arrays[a], array, want, counts_);
  }

  std::optional<std::string> step(std::size_t s) {
    const Step& step = program_.steps[s];
    switch (step.kind) {
      case StepKind::Launch: return launch(s, step);
      case StepKind::Refused: return refused(step);
      case StepKind::Faulty: return faulty(step);
      case StepKind::HostWrite: {
        auto& array = *arrays_[std::size_t(step.array)];
        const ArraySpec& spec = program_.arrays[std::size_t(step.array)];
        array.wait_idle();
        array.sync_host(true);
        ir::RefArray now = ir::RefArray::zeros(spec.type, spec.extents);
        for (std::int64_t e = 0; e < spec.size(); ++e)
          now.elements[std::size_t(e)] = element_at(spec.type, array.host_data(), e);
        host_write(spec, step.seed, step.count, now);
        write_all(array, spec, now);
        return std::nullopt;
      }
      case StepKind::HostRead: return read_and_compare(std::size_t(step.array), *expected_.reads[s]);
      case StepKind::Pause: rt_.pause(); return std::nullopt;
      case StepKind::Tree:
        change_tree(tree_, step, placed_, rt_.node());
        canopy::runtime::engine_of(rt_).reconfigure([&](Hierarchy& h) { h = tree_; });
        return std::nullopt;
    }
    return std::nullopt;
  }

  runtime::RegionRequest request(const Step& step) {
    runtime::RegionRequest request;
    request.kernel = program_.kernels[std::size_t(step.kernel)];
    request.range = step.range.size() == 1   ? Shape(step.range[0])
                    : step.range.size() == 2 ? Shape(step.range[0], step.range[1])
                                             : Shape(step.range[0], step.range[1], step.range[2]);
    for (const auto& arg : step.args) {
      if (auto* array = std::get_if<int>(&arg))
        request.args.emplace_back(arrays_[std::size_t(*array)]);
      else if (auto* value = std::get_if<ir::RefValue>(&arg))
        request.args.emplace_back(scalar_arg(*value));
      else
        request.args.emplace_back(backends::ReductionArg{});
    }
    return request;
  }

  std::optional<std::string> launch(std::size_t s, const Step& step) {
    runtime::RegionRequest region = request(step);
    const auto leaves = executing_leaves(tree_);
    const Location* at = tree_.root();
    if (step.at_leaf >= 0 && !leaves.empty()) {
      at = leaves[std::size_t(step.at_leaf) % leaves.size()];
      region.location = at->name();
    }
    region.policy = policy_text(placement_.policy.value_or(step.policy), step, tree_, *at);
    runtime::RegionHandle handle = canopy::runtime::engine_of(rt_).submit(std::move(region));
    const auto& want = expected_.reductions[s];
    if (want.empty()) return std::nullopt;
    handle.completion->wait();
    for (std::size_t r = 0; r < want.size(); ++r) {
      const ir::RefValue got = reduction_value(handle.results->at(r));
      ++counts_.values;
      if (want[r].unsure) ++counts_.unsure;
      if (!ir::conforms(want[r], got))
        return fmt::format("reduction {} of kernel {}: got {}, want {}", r,
                           program_.kernels[std::size_t(step.kernel)]->name, got_text(got), ir::describe(want[r]));
    }
    return std::nullopt;
  }

  std::optional<std::string> refused(const Step& step) {
    try {
      canopy::runtime::engine_of(rt_).submit(request(step));
    } catch (const Error&) {
      return std::nullopt;
    }
    return fmt::format("the launch of {} over {} reaches outside an array but was not refused",
                       program_.kernels[std::size_t(step.kernel)]->name, range_text(step.range));
  }

  // In checked mode the pause after the launch reports the read past the end.
  std::optional<std::string> faulty(const Step& step) {
    if (!placement_.checked) return std::nullopt;
    const std::string name = program_.kernels[std::size_t(step.kernel)]->name;
    canopy::runtime::engine_of(rt_).submit(request(step));
    try {
      rt_.pause();
    } catch (const Error& e) {
      const std::string message = e.what();
      if (message.find("kernel '" + name + "' read array 'x' out of bounds") != std::string::npos) return std::nullopt;
      // A device too small for the arrays refused this region or an earlier
      // one: the run ends there, judged as any refusal (go()).
      if (message.find("does not fit a device memory") != std::string::npos) throw;
      return "checked mode reported another error for " + name + ": " + message;
    }
    return "checked mode did not report the reads past the end of " + name;
  }

  Runtime& rt_;
  const Program& program_;
  const Expectation& expected_;
  const Placement& placement_;
  Hierarchy placed_;
  Hierarchy tree_;
  std::vector<std::shared_ptr<runtime::ArrayStorage>> arrays_;
  Counts& counts_;
};

}  // namespace

std::optional<Mismatch> CanopyRunner::run(const Program& program, const Expectation& expected,
                                          const Placement& placement, Counts& counts) {
  Runtime& rt = runtime(placement.checked);
  rt.fuse(placement.fuse);
  const bool one_core = placement.leaves == std::vector<std::string>{"cpuA", "cpuB"};
  Hierarchy placed = one_core ? one_core_leaves(rt.node()) : tree_with_leaves(discovered_, placement.leaves);
  const Stats before = rt.stats();
  std::optional<Mismatch> mismatch = Run(rt, program, expected, placement, std::move(placed), counts).go();
  try {
    rt.pause();  // a failed region of this program must not fail the next one
  } catch (...) {
  }
  const Stats after = rt.stats();
  counts.fused += after.fused_regions - before.fused_regions;
  counts.followed += after.followed_regions - before.followed_regions;
  return mismatch;
}

}  // namespace canopy::diff
