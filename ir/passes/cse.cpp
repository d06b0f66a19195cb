#include "cse.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <unordered_map>

#include "../mutator.hpp"
#include "internal/equality.hpp"
#include "internal/uses.hpp"

namespace canopy::ir {

namespace {

using passes_internal::expressions_of;
using passes_internal::ExprMap;
using passes_internal::ExprReads;
using passes_internal::FreshNames;
using passes_internal::HashCache;
using passes_internal::is_leaf;
using passes_internal::ReadsCache;

// Statements whose expressions are evaluated unconditionally, in order, and
// that may sit in the middle of a run.
bool is_simple(const Stmt& s) {
  switch (s->kind) {
    case StmtKind::Decl:
    case StmtKind::Assign:
    case StmtKind::Store:
    case StmtKind::AtomicAdd:
    case StmtKind::Reduce: return true;
    default: return false;
  }
}

// One expression that may be shared: the statements (within the run) of its
// first and last counted occurrence, and how often it occurs there.
struct Candidate {
  Expr expr;
  std::size_t first = 0, last = 0;
  int count = 0;
  std::size_t finished = 0;  // post-order position of the first occurrence: parts before wholes
  const ExprReads* reads = nullptr;
  std::string var;           // set when shared
  bool reuses_decl = false;  // var is the local that the statement at `first` declares with this value
};

using ExprToVar = ExprMap<Expr>;

// What every run of one pass shares: memoized facts about expressions and the names it hands out.
struct PassState {
  PassState(const Kernel& kernel, std::set<std::string> assigned_locals, Arrays arrays)
      : reads(assigned_locals), assigned(std::move(assigned_locals)), names(kernel, "cse") {
    if (arrays == Arrays::MayAlias)
      for (const auto& param : kernel.params) element_types.push_back(param.type);
  }
  HashCache hashes;
  ReadsCache reads;                // only assigned locals can end a range: the only ones tracked
  std::set<std::string> assigned;  // locals assigned anywhere in the kernel
  FreshNames names;
  // Per parameter, unless the arrays are distinct: its (element) type. Two
  // array parameters of one element type may be one array passed twice (the
  // program may pass it as In and InOut), so a store to either ends what was
  // read from both.
  std::vector<ScalarType> element_types;
};

// Replaces, top-down, each subexpression found in the map by its variable.
class ReplaceShared final : public Mutator {
 public:
  explicit ReplaceShared(const ExprToVar& shared) : shared_(shared) {}
  Expr replace(const Expr& e) { return mutate(e); }
  /// `e` itself kept, its operands replaced (the definition of e's variable).
  Expr replace_inside(const Expr& e) {
    keep_ = e.get();
    return mutate(e);
  }

  using Mutator::mutate;
  // The shared variable for `self`, or else `self` with its operands replaced.
  Expr mutate(const Expr& self) override {
    if (self.get() != keep_ && !is_leaf(self)) {
      auto it = shared_.find(self);
      if (it != shared_.end()) return it->second;
    }
    return Mutator::mutate(self);
  }

 private:
  const ExprToVar& shared_;
  const ExprNode* keep_ = nullptr;
};

// One straight-line run: count, choose, then rewrite.
class RunRewriter {
 public:
  RunRewriter(const std::vector<Stmt>& run, PassState& state)
      : run_(run), state_(state), live_(passes_internal::make_expr_map<std::size_t>(state.hashes)) {}

  std::vector<Stmt> rewrite() {
    for (std::size_t k = 0; k < run_.size(); ++k) {
      for (const auto& e : expressions_of(run_[k])) count(e, k);
      end_ranges_written_by(run_[k]);
    }
    std::vector<Candidate*> chosen;
    for (auto& c : candidates_)
      if (c.count >= 2) chosen.push_back(&c);
    if (chosen.empty()) return run_;
    std::sort(chosen.begin(), chosen.end(), [](const Candidate* a, const Candidate* b) {
      return a->first != b->first ? a->first < b->first : a->finished < b->finished;
    });
    for (auto* c : chosen) name_local(*c);

    // Candidates by the statement after which they are no longer used.
    std::vector<Candidate*> by_last = chosen;
    std::sort(by_last.begin(), by_last.end(), [](const Candidate* a, const Candidate* b) { return a->last < b->last; });

    std::vector<Stmt> out;
    auto active = passes_internal::make_expr_map<Expr>(state_.hashes);
    std::size_t next_decl = 0, next_end = 0;
    for (std::size_t k = 0; k < run_.size(); ++k) {
      // Ranges never overlap for one expression, so a key is in `active` at most once.
      const std::size_t starting = next_decl;
      for (std::size_t i = starting; i < chosen.size() && chosen[i]->first == k; ++i)
        active.emplace(chosen[i]->expr, make_var(chosen[i]->expr->type, chosen[i]->var));
      bool declares_shared = false;
      for (; next_decl < chosen.size() && chosen[next_decl]->first == k; ++next_decl) {
        const auto* c = chosen[next_decl];
        if (c->reuses_decl)
          declares_shared = true;
        else
          out.push_back(make_decl(c->var, ReplaceShared(active).replace_inside(c->expr)));
      }
      out.push_back(rewrite_statement(run_[k], active, declares_shared));
      for (; next_end < by_last.size() && by_last[next_end]->last == k; ++next_end)
        active.erase(by_last[next_end]->expr);
    }
    return out;
  }

 private:
  // `var x = e` where e is shared and x never changes: x is e's local already.
  void name_local(Candidate& c) {
    const auto& s = run_[c.first];
    if (s->kind == StmtKind::Decl && passes_internal::equal(s->as<Decl>().init, c.expr) &&
        !state_.assigned.count(s->as<Decl>().name)) {
      c.var = s->as<Decl>().name;
      c.reuses_decl = true;
    } else {
      c.var = state_.names.next();
    }
  }

  void count(const Expr& e, std::size_t k) {
    if (is_leaf(e)) return;
    auto it = live_.find(e);
    if (it != live_.end()) {  // a repeat: its operands were counted with the first one
      auto& c = candidates_[it->second];
      ++c.count;
      c.last = k;
      return;
    }
    Candidate c;
    c.expr = e;
    c.first = c.last = k;
    c.count = 1;
    c.reads = &state_.reads.reads(e);
    const std::size_t index = candidates_.size();
    live_.emplace(e, index);
    for (const auto& local : c.reads->locals) live_by_local_[local].push_back(index);
    for (const int array : c.reads->arrays) live_by_array_[array].push_back(index);
    candidates_.push_back(std::move(c));
    count_children(e, k);
    candidates_[index].finished = finished_++;
  }

  void count_children(const Expr& e, std::size_t k) {
    switch (e->kind) {
      case ExprKind::Load:
        for (const auto& i : e->as<Load>().indices) count(i, k);
        break;
      case ExprKind::Unary: count(e->as<Unary>().operand, k); break;
      case ExprKind::Binary:
        count(e->as<Binary>().lhs, k);
        count(e->as<Binary>().rhs, k);
        break;
      case ExprKind::Compare:
        count(e->as<Compare>().lhs, k);
        count(e->as<Compare>().rhs, k);
        break;
      case ExprKind::Cast: count(e->as<Cast>().operand, k); break;
      case ExprKind::Call:
        for (const auto& a : e->as<Call>().args) count(a, k);
        break;
      case ExprKind::Select:
        count(e->as<Select>().cond, k);
        count(e->as<Select>().if_true, k);
        count(e->as<Select>().if_false, k);
        break;
      default: break;
    }
  }

  // After statement `s` runs, expressions reading what it wrote have new
  // values: their current ranges end, and a later occurrence starts anew. (A
  // Decl ends nothing: no expression can read a local before its Decl.)
  void end_ranges_written_by(const Stmt& s) {
    switch (s->kind) {
      case StmtKind::Assign: end_ranges(live_by_local_[s->as<Assign>().name]); break;
      case StmtKind::Store: end_ranges_of_arrays_like(s->as<Store>().param); break;
      case StmtKind::AtomicAdd: end_ranges_of_arrays_like(s->as<AtomicAdd>().param); break;
      default: break;
    }
  }

  // A store to array `written` may change every array of its element type.
  void end_ranges_of_arrays_like(int written) {
    const auto& types = state_.element_types;
    for (auto& [array, readers] : live_by_array_)
      if (array == written || (array >= 0 && written >= 0 && static_cast<std::size_t>(array) < types.size() &&
                               static_cast<std::size_t>(written) < types.size() &&
                               types[static_cast<std::size_t>(array)] == types[static_cast<std::size_t>(written)]))
        end_ranges(readers);
  }

  void end_ranges(std::vector<std::size_t>& readers) {
    for (const std::size_t index : readers) {
      auto it = live_.find(candidates_[index].expr);
      if (it != live_.end() && it->second == index) live_.erase(it);
    }
    readers.clear();
  }

  // `declares_shared`: s is a Decl whose value is a shared expression that it
  // names itself; only that value's operands are replaced.
  static Stmt rewrite_statement(const Stmt& s, const ExprToVar& active, bool declares_shared) {
    if (active.empty()) return s;
    ReplaceShared replacer(active);
    bool changed = false;
    auto replace = [&](const Expr& e) {
      auto r = replacer.replace(e);
      changed = changed || r != e;
      return r;
    };
    auto replace_all = [&](const std::vector<Expr>& exprs) {
      std::vector<Expr> out;
      for (const auto& e : exprs) out.push_back(replace(e));
      return out;
    };
    switch (s->kind) {
      case StmtKind::Decl: {
        const auto& d = s->as<Decl>();
        auto init = declares_shared ? replacer.replace_inside(d.init) : replace(d.init);
        changed = changed || init != d.init;
        return changed ? std::make_shared<Decl>(d.name, d.type, init) : s;
      }
      case StmtKind::Assign: {
        auto value = replace(s->as<Assign>().value);
        return changed ? make_assign(s->as<Assign>().name, value) : s;
      }
      case StmtKind::Store: {
        const auto& st = s->as<Store>();
        auto indices = replace_all(st.indices);
        auto value = replace(st.value);
        return changed ? make_store(st.param, indices, value) : s;
      }
      case StmtKind::AtomicAdd: {
        const auto& st = s->as<AtomicAdd>();
        auto indices = replace_all(st.indices);
        auto value = replace(st.value);
        return changed ? make_atomic_add(st.param, indices, value) : s;
      }
      case StmtKind::Reduce: {
        auto value = replace(s->as<Reduce>().value);
        return changed ? make_reduce(s->as<Reduce>().param, value) : s;
      }
      case StmtKind::If: {
        const auto& i = s->as<If>();
        auto cond = replace(i.cond);
        return changed ? make_if(cond, i.then_body, i.else_body) : s;
      }
      default: return s;
    }
  }

  const std::vector<Stmt>& run_;
  PassState& state_;
  std::vector<Candidate> candidates_;
  std::size_t finished_ = 0;
  ExprMap<std::size_t> live_;  // expression -> its candidate whose range is still open
  // Open candidates (and some closed ones) by what they read, to close them fast.
  std::map<std::string, std::vector<std::size_t>> live_by_local_;
  std::map<int, std::vector<std::size_t>> live_by_array_;
};

class CommonSubexpressionEliminator final : public Mutator {
 public:
  CommonSubexpressionEliminator(const Kernel& kernel, Arrays arrays)
      : state_(kernel, passes_internal::writes_of(kernel.body).assigned, arrays) {}

 protected:
  Stmt visit(const Block& node, const Stmt& self) override {
    std::vector<Stmt> children;
    for (const auto& s : node.stmts)
      if (auto m = mutate(s)) children.push_back(std::move(m));
    auto out = share_within_runs(children);
    if (out == node.stmts) return self;
    return make_block(std::move(out));
  }

  Stmt visit(const If& node, const Stmt& self) override {
    auto then_body = body(node.then_body);
    auto else_body = node.else_body ? body(node.else_body) : nullptr;
    if (then_body == node.then_body && else_body == node.else_body) return self;
    return make_if(node.cond, std::move(then_body), std::move(else_body));
  }

  Stmt visit(const For& node, const Stmt& self) override {
    auto new_body = body(node.body);
    if (new_body == node.body) return self;
    return make_for(node.var, node.begin, node.end, node.step, std::move(new_body));
  }

 private:
  // A body that is a single statement gets a block only if it needs one.
  Stmt body(const Stmt& b) {
    auto m = mutate_body(b);
    if (m->kind == StmtKind::Block) return m;
    auto out = share_within_runs({m});
    return out.size() == 1 ? out[0] : make_block(std::move(out));
  }

  std::vector<Stmt> share_within_runs(const std::vector<Stmt>& stmts) {
    std::vector<Stmt> out, run;
    auto flush = [&] {
      for (auto& s : RunRewriter(run, state_).rewrite()) out.push_back(std::move(s));
      run.clear();
    };
    for (const auto& s : stmts) {
      if (is_simple(s)) {
        run.push_back(s);
      } else if (s->kind == StmtKind::If) {  // its condition closes the run
        run.push_back(s);
        flush();
      } else {
        flush();
        out.push_back(s);
      }
    }
    flush();
    return out;
  }

  PassState state_;
};

}  // namespace

Kernel eliminate_common_subexpressions(const Kernel& kernel, Arrays arrays) {
  return CommonSubexpressionEliminator(kernel, arrays).mutate(kernel);
}

}  // namespace canopy::ir
