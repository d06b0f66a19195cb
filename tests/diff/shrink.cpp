#include "shrink.hpp"

#include <algorithm>

#include <canopy/ir/error.hpp>
#include <canopy/ir/mutator.hpp>
#include <canopy/ir/verifier.hpp>
#include <canopy/ir/visitor.hpp>

namespace canopy::diff {

namespace {

using ir::Stmt;

// The plainest value of `type`: a literal one (true for bool).
ir::Expr simplest(ir::ScalarType type) { return ir::make_int(type, 1); }

// Each way of making `stmt` one step smaller: a statement of a block left
// out, a value replaced by a literal, an If replaced by one of its bodies or
// given a literal condition, a loop cut to one trip, and the same inside.
std::vector<Stmt> smaller(const Stmt& stmt) {
  std::vector<Stmt> found;
  switch (stmt->kind) {
    case ir::StmtKind::Block: {
      const auto& stmts = stmt->as<ir::Block>().stmts;
      for (std::size_t k = 0; k < stmts.size(); ++k) {
        auto without = stmts;
        without.erase(without.begin() + std::ptrdiff_t(k));
        found.push_back(ir::make_block(without));
      }
      for (std::size_t k = 0; k < stmts.size(); ++k)
        for (const Stmt& child : smaller(stmts[k])) {
          auto changed = stmts;
          changed[k] = child;
          found.push_back(ir::make_block(changed));
        }
      break;
    }
    case ir::StmtKind::Store: {
      const auto& node = stmt->as<ir::Store>();
      if (!ir::is_const(node.value))
        found.push_back(ir::make_store(node.param, node.indices, simplest(node.value->type)));
      break;
    }
    case ir::StmtKind::AtomicAdd: {
      const auto& node = stmt->as<ir::AtomicAdd>();
      if (!ir::is_const(node.value))
        found.push_back(ir::make_atomic_add(node.param, node.indices, simplest(node.value->type)));
      break;
    }
    case ir::StmtKind::Reduce: {
      const auto& node = stmt->as<ir::Reduce>();
      if (!ir::is_const(node.value)) found.push_back(ir::make_reduce(node.param, simplest(node.value->type)));
      break;
    }
    case ir::StmtKind::Decl: {
      const auto& node = stmt->as<ir::Decl>();
      if (!ir::is_const(node.init)) found.push_back(ir::make_decl(node.name, simplest(node.type)));
      break;
    }
    case ir::StmtKind::Assign: {
      const auto& node = stmt->as<ir::Assign>();
      if (!ir::is_const(node.value)) found.push_back(ir::make_assign(node.name, simplest(node.value->type)));
      break;
    }
    case ir::StmtKind::If: {
      const auto& node = stmt->as<ir::If>();
      found.push_back(node.then_body);
      if (!ir::is_const(node.cond)) {
        found.push_back(ir::make_if(ir::make_bool(true), node.then_body, node.else_body));
        found.push_back(ir::make_if(ir::make_bool(false), node.then_body, node.else_body));
      }
      if (node.else_body) {
        found.push_back(node.else_body);
        found.push_back(ir::make_if(node.cond, node.then_body));
      }
      for (const Stmt& child : smaller(node.then_body)) found.push_back(ir::make_if(node.cond, child, node.else_body));
      if (node.else_body)
        for (const Stmt& child : smaller(node.else_body))
          found.push_back(ir::make_if(node.cond, node.then_body, child));
      break;
    }
    case ir::StmtKind::For: {
      const auto& node = stmt->as<ir::For>();
      if (!ir::is_const(node.end))  // one trip
        found.push_back(ir::make_for(node.var, node.begin,
                                     ir::make_binary(ir::BinaryOp::Add, node.begin, ir::make_int(node.begin->type, 1)),
                                     node.step, node.body));
      for (const Stmt& child : smaller(node.body))
        found.push_back(ir::make_for(node.var, node.begin, node.end, node.step, child));
      break;
    }
    default: break;
  }
  return found;
}

// The parameters the body of `kernel` refers to.
std::vector<bool> used_params(const ir::Kernel& kernel) {
  struct Uses : ir::Visitor {
    std::vector<bool> used;
    void mark(int param) { used[std::size_t(param)] = true; }
    void visit(const ir::ParamRef& node) override { mark(node.param); }
    void visit(const ir::Extent& node) override { mark(node.param); }
    void visit(const ir::Load& node) override {
      mark(node.param);
      ir::Visitor::visit(node);
    }
    void visit(const ir::Store& node) override {
      mark(node.param);
      ir::Visitor::visit(node);
    }
    void visit(const ir::AtomicAdd& node) override {
      mark(node.param);
      ir::Visitor::visit(node);
    }
    void visit(const ir::Reduce& node) override {
      mark(node.param);
      ir::Visitor::visit(node);
    }
  } uses;
  uses.used.assign(kernel.params.size(), false);
  uses.walk(kernel.body);
  return uses.used;
}

// Renumbers the parameters after `dropped` one down.
class WithoutParam : public ir::Mutator {
 public:
  explicit WithoutParam(int dropped) : dropped_(dropped) {}

 protected:
  int number(int param) const { return param > dropped_ ? param - 1 : param; }
  ir::Expr visit(const ir::ParamRef& node, const ir::Expr&) override {
    return ir::make_param(node.type, number(node.param));
  }
  ir::Expr visit(const ir::Extent& node, const ir::Expr&) override {
    return ir::make_extent(number(node.param), node.dim);
  }
  ir::Expr visit(const ir::Load& node, const ir::Expr&) override {
    bool changed = false;
    return ir::make_load(node.type, number(node.param), mutate_all(node.indices, changed));
  }
  Stmt visit(const ir::Store& node, const Stmt&) override {
    bool changed = false;
    return ir::make_store(number(node.param), mutate_all(node.indices, changed), mutate(node.value));
  }
  Stmt visit(const ir::AtomicAdd& node, const Stmt&) override {
    bool changed = false;
    return ir::make_atomic_add(number(node.param), mutate_all(node.indices, changed), mutate(node.value));
  }
  Stmt visit(const ir::Reduce& node, const Stmt&) override {
    return ir::make_reduce(number(node.param), mutate(node.value));
  }

 private:
  int dropped_;
};

// The program with parameter `param` of kernel `k` gone (it must be unused),
// from the kernel and from every launch of it.
Program without_param(const Program& program, std::size_t k, int param) {
  Program out = program;
  ir::Kernel kernel = WithoutParam(param).mutate(*program.kernels[k]);
  kernel.params.erase(kernel.params.begin() + param);
  out.kernels[k] = std::make_shared<const ir::Kernel>(kernel);
  for (Step& step : out.steps)
    if (step.kernel == int(k)) step.args.erase(step.args.begin() + param);
  return out;
}

bool verifies(const ir::Kernel& kernel) {
  try {
    ir::verify(kernel);
    return true;
  } catch (const Error&) {
    return false;
  }
}

// The program without the kernels and arrays no step uses (renumbered).
Program without_unused(const Program& program) {
  std::vector<int> kernel_at(program.kernels.size(), -1), array_at(program.arrays.size(), -1);
  Program out;
  out.seed = program.seed;
  for (const Step& step : program.steps) {
    if (step.kernel >= 0) kernel_at[std::size_t(step.kernel)] = 0;
    if (step.array >= 0) array_at[std::size_t(step.array)] = 0;
    for (const auto& arg : step.args)
      if (auto* a = std::get_if<int>(&arg)) array_at[std::size_t(*a)] = 0;
  }
  for (std::size_t k = 0; k < program.kernels.size(); ++k)
    if (kernel_at[k] == 0) {
      kernel_at[k] = int(out.kernels.size());
      out.kernels.push_back(program.kernels[k]);
    }
  for (std::size_t a = 0; a < program.arrays.size(); ++a)
    if (array_at[a] == 0) {
      array_at[a] = int(out.arrays.size());
      out.arrays.push_back(program.arrays[a]);
    }
  for (Step step : program.steps) {
    if (step.kernel >= 0) step.kernel = kernel_at[std::size_t(step.kernel)];
    if (step.array >= 0) step.array = array_at[std::size_t(step.array)];
    for (auto& arg : step.args)
      if (auto* a = std::get_if<int>(&arg)) *a = array_at[std::size_t(*a)];
    out.steps.push_back(step);
  }
  return out;
}

class Shrinker {
 public:
  Shrinker(const std::function<bool(const Program&)>& fails, int attempts) : fails_(fails), attempts_(attempts) {}

  // True when `candidate` still fails (and it becomes the best so far).
  bool keep(const Program& candidate) {
    if (attempts_ <= 0) return false;
    --attempts_;
    if (!fails_(candidate)) return false;
    best_ = candidate;
    return true;
  }

  Program run(Program program, int mismatch_step) {
    best_ = std::move(program);
    if (mismatch_step >= 0 && std::size_t(mismatch_step) + 1 < best_.steps.size()) {
      Program cut = best_;
      cut.steps.resize(std::size_t(mismatch_step) + 1);
      keep(cut);
    }
    drop_steps();
    best_ = without_unused(best_);  // what no step uses cannot make a difference
    simplify_kernels();
    drop_params();
    best_ = without_unused(best_);
    halve_ranges();
    return best_;
  }

 private:
  void drop_steps() {
    for (std::size_t s = best_.steps.size(); s-- > 0 && attempts_ > 0;) {
      if (s >= best_.steps.size()) continue;
      Program candidate = best_;
      candidate.steps.erase(candidate.steps.begin() + std::ptrdiff_t(s));
      keep(candidate);
    }
  }

  void simplify_kernels() {
    for (std::size_t k = 0; k < best_.kernels.size(); ++k) {
      bool smaller_found = true;
      while (smaller_found && attempts_ > 0) {
        smaller_found = false;
        for (const Stmt& body : smaller(best_.kernels[k]->body)) {
          ir::Kernel kernel = *best_.kernels[k];
          kernel.body = body->kind == ir::StmtKind::Block ? body : ir::make_block({body});
          if (!verifies(kernel)) continue;
          Program candidate = best_;
          candidate.kernels[k] = std::make_shared<const ir::Kernel>(kernel);
          if (keep(candidate)) {
            smaller_found = true;
            break;
          }
          if (attempts_ <= 0) break;
        }
      }
    }
  }

  void drop_params() {
    for (std::size_t k = 0; k < best_.kernels.size(); ++k) {
      const auto used = used_params(*best_.kernels[k]);
      for (int p = int(used.size()); p-- > 0 && attempts_ > 0;)
        if (!used[std::size_t(p)]) keep(without_param(best_, k, p));
    }
  }

  void halve_ranges() {
    for (std::size_t s = 0; s < best_.steps.size(); ++s) {
      if (best_.steps[s].kind != StepKind::Launch) continue;
      for (std::size_t d = 0; d < best_.steps[s].range.size(); ++d)
        while (best_.steps[s].range[d] > 1 && attempts_ > 0) {
          Program candidate = best_;
          candidate.steps[s].range[d] /= 2;
          if (!keep(candidate)) break;
        }
    }
  }

  const std::function<bool(const Program&)>& fails_;
  int attempts_;
  Program best_;
};

}  // namespace

Program shrink(const Program& program, int mismatch_step, const std::function<bool(const Program&)>& fails,
               int attempts) {
  return Shrinker(fails, attempts).run(program, mismatch_step);
}

}  // namespace canopy::diff
