#include "licm.hpp"

#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "../mutator.hpp"
#include "internal/equality.hpp"
#include "internal/uses.hpp"

namespace canopy::ir {

namespace {

using passes_internal::ExprMap;
using passes_internal::FreshNames;
using passes_internal::HashCache;
using passes_internal::is_leaf;

// Loads a loop may read once before it runs: those its every iteration
// evaluates (found by HoistableLoads), from an array that nothing in the
// loop writes, nor any array that may be the same memory.
using LoadSet = ExprMap<bool>;

// Whether an expression may be computed once before the loop whose body
// changes the locals in `variant`: it reads none of them, loads only what
// `loads` holds and divides no integers. Remembered per node, for one loop
// and one `variant`.
class Invariance {
 public:
  Invariance(const std::set<std::string>& variant, const LoadSet& loads) : variant_(variant), loads_(loads) {}

  bool operator()(const Expr& e) {
    auto it = memo_.find(e.get());
    if (it != memo_.end()) return it->second.second;
    const bool invariant = compute(e);
    memo_.emplace(e.get(), std::make_pair(e, invariant));
    return invariant;
  }

 private:
  bool compute(const Expr& e) {
    switch (e->kind) {
      case ExprKind::Var: return !variant_.count(e->as<VarRef>().name);
      case ExprKind::Load: {
        if (!loads_.count(e)) return false;
        for (const auto& i : e->as<Load>().indices)
          if (!(*this)(i)) return false;
        return true;
      }
      case ExprKind::Unary: return (*this)(e->as<Unary>().operand);
      case ExprKind::Binary: {
        const auto& b = e->as<Binary>();
        if (is_int(b.type) && (b.op == BinaryOp::Div || b.op == BinaryOp::Rem)) return false;
        return (*this)(b.lhs) && (*this)(b.rhs);
      }
      case ExprKind::Compare: return (*this)(e->as<Compare>().lhs) && (*this)(e->as<Compare>().rhs);
      case ExprKind::Cast: return (*this)(e->as<Cast>().operand);
      case ExprKind::Call:
        for (const auto& a : e->as<Call>().args)
          if (!(*this)(a)) return false;
        return true;
      case ExprKind::Select: {
        const auto& s = e->as<Select>();
        return (*this)(s.cond) && (*this)(s.if_true) && (*this)(s.if_false);
      }
      default: return true;  // literals, indices, parameters, extents
    }
  }

  const std::set<std::string>& variant_;
  const LoadSet& loads_;
  std::unordered_map<const ExprNode*, std::pair<Expr, bool>> memo_;
};

// Whether an expression contains a load.
bool loads_memory(const Expr& e) { return !passes_internal::reads_of(e).arrays.empty(); }

// The loads every iteration of a loop evaluates: those in the expressions
// of the statements at the top of its body (not under an If, nor in an
// inner loop's body, whose bounds are evaluated all the same), outside the
// arms of a select and the right side of a logical and/or (which the C
// backends evaluate only when needed), from an array that may be read before
// the loop: nothing in the loop writes it, nor an array of its element type
// (two arrays of different element types are never the same memory; two of
// one type may be, passed twice or wrapped over one buffer).
class HoistableLoads {
 public:
  HoistableLoads(const Kernel& kernel, const std::set<int>& written, HashCache& hashes)
      : kernel_(kernel), loads_(passes_internal::make_expr_map<bool>(hashes)) {
    for (const int p : written) written_types_.insert(kernel.params[static_cast<std::size_t>(p)].type);
  }

  const LoadSet& of(const std::vector<Stmt>& body) {
    for (const auto& s : body) statement(s);
    return loads_;
  }

 private:
  void statement(const Stmt& s) {
    if (s->kind == StmtKind::Block) {
      for (const auto& inner : s->as<Block>().stmts) statement(inner);
      return;
    }
    for (const auto& e : passes_internal::expressions_of(s)) expression(e);
  }

  void expression(const Expr& e) {
    if (e->kind == ExprKind::Load &&
        !written_types_.count(kernel_.params[static_cast<std::size_t>(e->as<Load>().param)].type))
      loads_.emplace(e, true);
    auto operands = passes_internal::operands_of(e);
    // A select's condition, not its arms; a logical and/or's left side only.
    const bool logical = e->kind == ExprKind::Binary && e->type == ScalarType::Bool &&
                         (e->as<Binary>().op == BinaryOp::And || e->as<Binary>().op == BinaryOp::Or);
    if (e->kind == ExprKind::Select || logical) operands.resize(1);
    for (const Expr* operand : operands) expression(*operand);
  }

  const Kernel& kernel_;
  std::set<ScalarType> written_types_;
  LoadSet loads_;
};

// Replaces the largest invariant subexpressions of one loop's body by locals,
// one local per distinct expression, remembered in order of first use.
class InvariantReplacer final : public Mutator {
 public:
  InvariantReplacer(const std::set<std::string>& variant, const LoadSet& loads, FreshNames& names, HashCache& hashes)
      : invariant_(variant, loads), names_(names), locals_(passes_internal::make_expr_map<Expr>(hashes)) {}

  /// (name, value) of every local introduced, in order.
  const std::vector<std::pair<std::string, Expr>>& hoisted() const { return hoisted_; }

 public:
  using Mutator::mutate;
  // The local for `self` when it is invariant, or else `self` with its operands replaced.
  Expr mutate(const Expr& self) override {
    if (is_leaf(self) || !invariant_(self)) return Mutator::mutate(self);
    auto it = locals_.find(self);
    if (it != locals_.end()) return it->second;
    auto name = names_.next();
    auto var = make_var(self->type, name);
    locals_.emplace(self, var);
    hoisted_.emplace_back(name, self);
    return var;
  }

 private:
  Invariance invariant_;
  FreshNames& names_;
  ExprMap<Expr> locals_;
  std::vector<std::pair<std::string, Expr>> hoisted_;
};

class LoopInvariantHoister final : public Mutator {
 public:
  explicit LoopInvariantHoister(const Kernel& kernel)
      : kernel_(kernel), names_(kernel, "licm"), bindings_(passes_internal::binding_counts(kernel)) {}

 protected:
  // Splices the statements a loop turned into (hoisted locals, then the loop).
  Stmt visit(const Block& node, const Stmt& self) override {
    std::vector<Stmt> stmts;
    bool changed = false;
    for (const auto& s : node.stmts) {
      auto m = mutate(s);
      changed = changed || m != s;
      if (!m) continue;
      if (splice_.count(m.get())) {
        for (const auto& inner : m->as<Block>().stmts) stmts.push_back(inner);
      } else {
        stmts.push_back(std::move(m));
      }
    }
    return changed ? make_block(std::move(stmts)) : self;
  }

  Stmt visit(const For& node, const Stmt& self) override {
    auto body = mutate_body(node.body);  // inner loops first
    auto loop = body == node.body ? self : make_for(node.var, node.begin, node.end, node.step, body);
    return hoist_out_of(loop);
  }

 private:
  Stmt hoist_out_of(const Stmt& loop_stmt) {
    const auto& loop = loop_stmt->as<For>();
    const auto writes = passes_internal::writes_of(loop.body);
    std::set<std::string> variant = writes.declared;
    variant.insert(writes.assigned.begin(), writes.assigned.end());
    variant.insert(loop.var);

    const bool body_is_block = loop.body->kind == StmtKind::Block;
    const std::vector<Stmt> stmts = body_is_block ? loop.body->as<Block>().stmts : std::vector<Stmt>{loop.body};

    HoistableLoads hoistable(kernel_, writes.arrays, hashes_);
    const LoadSet& loads = hoistable.of(stmts);

    // Whole Decls first: each one moved makes its local invariant for the rest.
    std::vector<Stmt> before, kept;
    bool loaded = false;  // something moved reads memory
    for (const auto& s : stmts) {
      if (s->kind == StmtKind::Decl && can_move_decl(s->as<Decl>(), writes.assigned, variant, loads)) {
        variant.erase(s->as<Decl>().name);
        loaded = loaded || loads_memory(s->as<Decl>().init);
        before.push_back(s);
      } else {
        kept.push_back(s);
      }
    }

    InvariantReplacer replacer(variant, loads, names_, hashes_);
    bool changed = before.size() > 0;
    for (auto& s : kept) {
      auto m = replacer.mutate(s);
      changed = changed || m != s;
      s = m;
    }
    if (!changed) return loop_stmt;
    for (const auto& [name, value] : replacer.hoisted()) {
      loaded = loaded || loads_memory(value);
      before.push_back(make_decl(name, value));
    }

    Stmt body = body_is_block || kept.size() != 1 ? make_block(std::move(kept)) : kept[0];
    before.push_back(make_for(loop.var, loop.begin, loop.end, loop.step, std::move(body)));
    auto block = make_block(std::move(before));
    // A load moved out runs only when the loop would run, as in its first
    // iteration: out of bounds where the loop runs zero times is never read.
    if (loaded) block = make_block({make_if(make_compare(CompareOp::Lt, loop.begin, loop.end), block)});
    splice_.emplace(block.get(), block);  // held, so no later block reuses the address
    return block;
  }

  bool can_move_decl(const Decl& decl, const std::set<std::string>& assigned, const std::set<std::string>& variant,
                     const LoadSet& loads) {
    if (assigned.count(decl.name)) return false;
    auto it = bindings_.find(decl.name);
    if (it != bindings_.end() && it->second > 1) return false;
    return Invariance(variant, loads)(decl.init);
  }

  const Kernel& kernel_;
  FreshNames names_;
  std::map<std::string, int> bindings_;
  HashCache hashes_;
  std::map<const StmtNode*, Stmt> splice_;
};

}  // namespace

Kernel hoist_loop_invariants(const Kernel& kernel) { return LoopInvariantHoister(kernel).mutate(kernel); }

}  // namespace canopy::ir
