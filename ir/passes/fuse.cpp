#include "fuse.hpp"

#include <set>

#include "../error.hpp"
#include "../mutator.hpp"
#include "../visitor.hpp"
#include "internal/uses.hpp"

namespace canopy::ir {

namespace {

std::string slot_local(int slot) { return "fused_s" + std::to_string(slot); }

// The array parameters a body loads from, and those it stores or adds to.
struct ArrayUses {
  std::set<int> loaded, stored;
};

ArrayUses array_uses(const Stmt& body) {
  return {passes_internal::reads_of(body).arrays, passes_internal::writes_of(body).arrays};
}

// Which parameters' extents a body reads.
class ExtentReads final : public Visitor {
 public:
  std::set<int> params;

 protected:
  void visit(const Extent& node) override { params.insert(node.param); }
};

// The parameters a statement directly in the body's outermost block stores:
// every point runs those stores.
std::set<int> stored_on_every_path(const Kernel& kernel) {
  std::set<int> stored;
  if (kernel.body->kind != StmtKind::Block) return stored;
  for (const auto& s : kernel.body->as<Block>().stmts)
    if (s && s->kind == StmtKind::Store) stored.insert(s->as<Store>().param);
  return stored;
}

// One part's body in the fused kernel: parameters renumbered to the fused
// kernel's, locals renamed, local slots read and written as locals, and
// forwarded slots' loads taken from their shadow local.
class PartRewriter final : public Mutator {
 public:
  PartRewriter(int part, const FusedPart& source, const std::vector<FusedSlot>& slots,
               const std::vector<int>& param_of_slot, const std::set<int>& shadowed, const std::set<int>& forwarded)
      : prefix_("p" + std::to_string(part) + "_"),
        source_(source),
        slots_(slots),
        param_of_slot_(param_of_slot),
        shadowed_(shadowed),
        forwarded_(forwarded) {}

 protected:
  Expr visit(const ParamRef& node, const Expr&) override { return make_param(node.type, param(node.param)); }
  Expr visit(const VarRef& node, const Expr&) override { return make_var(node.type, prefix_ + node.name); }
  Expr visit(const Extent& node, const Expr&) override {
    if (is_local(node.param))
      throw Error("fusing '" + source_.kernel->name + "': the extent of '" + source_.kernel->params[node.param].name +
                  "' is read, so it cannot be kept in a local");
    return make_extent(param(node.param), node.dim);
  }
  Expr visit(const Load& node, const Expr& self) override {
    const int slot = slot_of(node.param);
    if (slots_[static_cast<std::size_t>(slot)].local || forwarded_.count(slot))
      return make_var(node.type, slot_local(slot));
    bool changed = false;
    auto indices = mutate_all(node.indices, changed);
    (void)self;
    return make_load(node.type, param(node.param), std::move(indices));
  }

  Stmt visit(const Decl& node, const Stmt&) override {
    return std::make_shared<Decl>(prefix_ + node.name, node.type, mutate(node.init));
  }
  Stmt visit(const Assign& node, const Stmt&) override { return make_assign(prefix_ + node.name, mutate(node.value)); }
  Stmt visit(const Store& node, const Stmt&) override {
    const int slot = slot_of(node.param);
    auto value = mutate(node.value);
    if (slots_[static_cast<std::size_t>(slot)].local) return make_assign(slot_local(slot), std::move(value));
    bool changed = false;
    auto indices = mutate_all(node.indices, changed);
    if (!shadowed_.count(slot)) return make_store(param(node.param), std::move(indices), std::move(value));
    const ScalarType type = value->type;
    return make_block({make_assign(slot_local(slot), std::move(value)),
                       make_store(param(node.param), std::move(indices), make_var(type, slot_local(slot)))});
  }
  Stmt visit(const AtomicAdd& node, const Stmt&) override {
    bool changed = false;
    auto indices = mutate_all(node.indices, changed);
    return make_atomic_add(param(node.param), std::move(indices), mutate(node.value));
  }
  Stmt visit(const Reduce& node, const Stmt&) override { return make_reduce(param(node.param), mutate(node.value)); }
  Stmt visit(const For& node, const Stmt&) override {
    return make_for(prefix_ + node.var, mutate(node.begin), mutate(node.end), mutate(node.step),
                    mutate_body(node.body));
  }

 private:
  int slot_of(int p) const { return source_.slots.at(static_cast<std::size_t>(p)); }
  bool is_local(int p) const { return slots_[static_cast<std::size_t>(slot_of(p))].local; }
  int param(int p) const { return param_of_slot_[static_cast<std::size_t>(slot_of(p))]; }

  std::string prefix_;
  const FusedPart& source_;
  const std::vector<FusedSlot>& slots_;
  const std::vector<int>& param_of_slot_;
  const std::set<int>& shadowed_;
  const std::set<int>& forwarded_;
};

}  // namespace

bool accesses_only_own_point(const Kernel& kernel, const Footprint& footprint) {
  for (const auto& array : footprint.arrays) {
    const auto& param = kernel.params.at(static_cast<std::size_t>(array.param));
    if (!array.reads.present && !array.writes.present) continue;
    if (param.rank != kernel.dims) return false;
    if (array.reads.present && !at_own_point(array.reads, kernel.dims)) return false;
    if (array.writes.present && !at_own_point(array.writes, kernel.dims)) return false;
  }
  return true;
}

bool reads_extent_of(const Kernel& kernel, int param) {
  ExtentReads extents;
  extents.walk(kernel.body);
  return extents.params.count(param) > 0;
}

Kernel fuse_kernels(std::string name, const std::vector<FusedSlot>& slots, const std::vector<FusedPart>& parts) {
  if (parts.empty()) throw Error("fuse_kernels: no kernel to fuse");
  Kernel fused;
  fused.name = std::move(name);
  fused.dims = parts.front().kernel->dims;

  // The fused parameters: every slot that is not local, in slot order.
  std::vector<int> param_of_slot(slots.size(), -1);
  for (std::size_t s = 0; s < slots.size(); ++s) {
    if (slots[s].local && !slots[s].param.is_array())
      throw Error("fusing into '" + fused.name + "': only arrays can be kept in locals");
    if (slots[s].local) continue;
    param_of_slot[s] = static_cast<int>(fused.params.size());
    fused.params.push_back(slots[s].param);
  }

  // Forwarding: a slot stored on every path by part j is read from its
  // shadow local in the parts after j; every store of it feeds the shadow.
  std::set<int> shadowed;
  std::vector<std::set<int>> forwarded(parts.size());
  std::set<int> stored_so_far;
  std::vector<ArrayUses> uses_of;         // per part
  std::vector<std::set<int>> every_path;  // per part: stored on every path
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const auto& part = parts[i];
    if (part.kernel->dims != fused.dims)
      throw Error("fusing into '" + fused.name + "': '" + part.kernel->name + "' has " +
                  std::to_string(part.kernel->dims) + " dimension(s), the chain " + std::to_string(fused.dims));
    if (part.slots.size() != part.kernel->params.size())
      throw Error("fusing into '" + fused.name + "': '" + part.kernel->name + "' needs one slot per parameter");
    for (std::size_t p = 0; p < part.slots.size(); ++p) {
      const auto& slot = slots.at(static_cast<std::size_t>(part.slots[p])).param;
      const auto& param = part.kernel->params[p];
      if (slot.kind != param.kind || slot.type != param.type || slot.rank != param.rank)
        throw Error("fusing into '" + fused.name + "': parameter '" + param.name + "' of '" + part.kernel->name +
                    "' does not match its slot '" + slot.name + "'");
    }
    uses_of.push_back(array_uses(part.kernel->body));
    every_path.push_back(stored_on_every_path(*part.kernel));
    for (int p : uses_of.back().loaded) {
      const int slot = part.slots[static_cast<std::size_t>(p)];
      if (!slots[static_cast<std::size_t>(slot)].local && stored_so_far.count(slot)) {
        forwarded[i].insert(slot);
        shadowed.insert(slot);
      }
    }
    for (int p : every_path.back()) stored_so_far.insert(part.slots[static_cast<std::size_t>(p)]);
  }

  // A part is dead when it reduces nothing and every array it writes is
  // stored on every path by a later part, with no part in between (nor that
  // one) reading it: nothing can see what it wrote.
  std::vector<bool> dead(parts.size(), false);
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
    const auto& kernel = *parts[i].kernel;
    bool reduces = false;
    for (const auto& p : kernel.params) reduces = reduces || p.is_reduction();
    if (reduces || uses_of[i].stored.empty()) continue;
    bool all_overwritten = true;
    for (int p : uses_of[i].stored) {
      const int slot = parts[i].slots[static_cast<std::size_t>(p)];
      bool overwritten = false;
      for (std::size_t j = i + 1; j < parts.size() && !overwritten; ++j) {
        bool read = false;
        for (int q : uses_of[j].loaded) read = read || parts[j].slots[static_cast<std::size_t>(q)] == slot;
        if (read) break;
        for (int q : every_path[j]) overwritten = overwritten || parts[j].slots[static_cast<std::size_t>(q)] == slot;
      }
      all_overwritten = all_overwritten && overwritten;
    }
    dead[i] = all_overwritten;
  }

  std::vector<Stmt> body;
  for (std::size_t s = 0; s < slots.size(); ++s)
    if (slots[s].local || shadowed.count(static_cast<int>(s)))
      body.push_back(make_decl(slot_local(static_cast<int>(s)), make_const(slots[s].param.type, 0)));
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (dead[i]) continue;
    PartRewriter rewriter(static_cast<int>(i), parts[i], slots, param_of_slot, shadowed, forwarded[i]);
    body.push_back(rewriter.mutate(parts[i].kernel->body));
  }
  fused.body = make_block(std::move(body));

  // Each array parameter's access, from what the fused body does with it.
  const ArrayUses uses = array_uses(fused.body);
  for (std::size_t p = 0; p < fused.params.size(); ++p) {
    auto& param = fused.params[p];
    if (!param.is_array()) continue;
    const bool reads = uses.loaded.count(static_cast<int>(p)) > 0;
    const bool writes = uses.stored.count(static_cast<int>(p)) > 0;
    param.access = writes ? (reads ? Access::InOut : Access::Out) : Access::In;
  }
  return fused;
}

}  // namespace canopy::ir
