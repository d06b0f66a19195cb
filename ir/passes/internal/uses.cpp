#include "uses.hpp"

#include <utility>
#include <vector>

#include "../../visitor.hpp"

namespace canopy::ir::passes_internal {

namespace {

class ReadCollector final : public Visitor {
 public:
  ExprReads reads;

 protected:
  void visit(const VarRef& node) override { reads.locals.insert(node.name); }
  void visit(const Load& node) override {
    reads.arrays.insert(node.param);
    Visitor::visit(node);
  }
  void visit(const Binary& node) override {
    if (is_int(node.type) && (node.op == BinaryOp::Div || node.op == BinaryOp::Rem)) reads.integer_division = true;
    Visitor::visit(node);
  }
};

class WriteCollector final : public Visitor {
 public:
  StmtWrites writes;

 protected:
  // Expressions write nothing; skip them.
  void visit(const Decl& node) override { writes.declared.insert(node.name); }
  void visit(const Assign& node) override { writes.assigned.insert(node.name); }
  void visit(const Store& node) override { writes.arrays.insert(node.param); }
  void visit(const AtomicAdd& node) override { writes.arrays.insert(node.param); }
  void visit(const Reduce&) override {}
  void visit(const If& node) override {
    walk(node.then_body);
    walk(node.else_body);
  }
  void visit(const For& node) override {
    writes.declared.insert(node.var);
    walk(node.body);
  }
};

class BindingCounter final : public Visitor {
 public:
  std::map<std::string, int> counts;

 protected:
  void visit(const Decl& node) override { ++counts[node.name]; }
  void visit(const For& node) override {
    ++counts[node.var];
    walk(node.body);
  }
  void visit(const Assign&) override {}
  void visit(const Store&) override {}
  void visit(const AtomicAdd&) override {}
  void visit(const Reduce&) override {}
  void visit(const If& node) override {
    walk(node.then_body);
    walk(node.else_body);
  }
};

// Every name that appears anywhere: bindings and references.
class NameCollector final : public Visitor {
 public:
  std::set<std::string>& names;
  explicit NameCollector(std::set<std::string>& n) : names(n) {}

 protected:
  void visit(const VarRef& node) override { names.insert(node.name); }
  void visit(const Decl& node) override {
    names.insert(node.name);
    Visitor::visit(node);
  }
  void visit(const Assign& node) override {
    names.insert(node.name);
    Visitor::visit(node);
  }
  void visit(const For& node) override {
    names.insert(node.var);
    Visitor::visit(node);
  }
};

}  // namespace

ExprReads reads_of(const Expr& expr) {
  ReadCollector collector;
  collector.walk(expr);
  return std::move(collector.reads);
}

ExprReads reads_of(const Stmt& stmt) {
  ReadCollector collector;
  collector.walk(stmt);
  return std::move(collector.reads);
}

std::vector<const Expr*> operands_of(const Expr& expr) {
  switch (expr->kind) {
    case ExprKind::Load: {
      std::vector<const Expr*> operands;
      for (const auto& i : expr->as<Load>().indices) operands.push_back(&i);
      return operands;
    }
    case ExprKind::Unary: return {&expr->as<Unary>().operand};
    case ExprKind::Binary: return {&expr->as<Binary>().lhs, &expr->as<Binary>().rhs};
    case ExprKind::Compare: return {&expr->as<Compare>().lhs, &expr->as<Compare>().rhs};
    case ExprKind::Cast: return {&expr->as<Cast>().operand};
    case ExprKind::Call: {
      std::vector<const Expr*> operands;
      for (const auto& a : expr->as<Call>().args) operands.push_back(&a);
      return operands;
    }
    case ExprKind::Select: return {&expr->as<Select>().cond, &expr->as<Select>().if_true, &expr->as<Select>().if_false};
    default: return {};  // literals, indices, parameters and extents read nothing that changes
  }
}

std::vector<Expr> expressions_of(const Stmt& s) {
  switch (s->kind) {
    case StmtKind::Decl: return {s->as<Decl>().init};
    case StmtKind::Assign: return {s->as<Assign>().value};
    case StmtKind::Store: {
      auto exprs = s->as<Store>().indices;
      exprs.push_back(s->as<Store>().value);
      return exprs;
    }
    case StmtKind::AtomicAdd: {
      auto exprs = s->as<AtomicAdd>().indices;
      exprs.push_back(s->as<AtomicAdd>().value);
      return exprs;
    }
    case StmtKind::Reduce: return {s->as<Reduce>().value};
    case StmtKind::If: return {s->as<If>().cond};
    case StmtKind::For: return {s->as<For>().begin, s->as<For>().end};
    default: return {};
  }
}

const ExprReads& ReadsCache::reads(const Expr& expr) {
  if (auto it = memo_.find(expr.get()); it != memo_.end()) return it->second.second;
  // Operands before the expression that uses them, with a stack of our own:
  // a traced chain thousands of operations deep would overflow the thread's
  // stack if this recursed (it did under AddressSanitizer's larger frames).
  std::vector<std::pair<const Expr*, bool>> pending{{&expr, false}};
  while (!pending.empty()) {
    const auto [node, operands_done] = pending.back();
    if (memo_.count(node->get())) {
      pending.pop_back();
      continue;
    }
    const std::vector<const Expr*> operands = operands_of(*node);
    if (!operands_done) {
      pending.back().second = true;
      for (const Expr* operand : operands)
        if (!memo_.count(operand->get())) pending.emplace_back(operand, false);
      continue;
    }
    pending.pop_back();
    ExprReads r;
    if ((*node)->kind == ExprKind::Var && tracked_.count((*node)->as<VarRef>().name))
      r.locals.insert((*node)->as<VarRef>().name);
    if ((*node)->kind == ExprKind::Load) r.arrays.insert((*node)->as<Load>().param);
    if ((*node)->kind == ExprKind::Binary) {
      const auto& b = (*node)->as<Binary>();
      if (is_int(b.type) && (b.op == BinaryOp::Div || b.op == BinaryOp::Rem)) r.integer_division = true;
    }
    for (const Expr* operand : operands) merge_child(r, memo_.at(operand->get()).second);
    memo_.emplace(node->get(), std::make_pair(*node, std::move(r)));
  }
  return memo_.at(expr.get()).second;
}

void ReadsCache::merge_child(ExprReads& into, const ExprReads& child) {
  into.locals.insert(child.locals.begin(), child.locals.end());
  into.arrays.insert(child.arrays.begin(), child.arrays.end());
  into.integer_division = into.integer_division || child.integer_division;
}

StmtWrites writes_of(const Stmt& stmt) {
  WriteCollector collector;
  collector.walk(stmt);
  return std::move(collector.writes);
}

std::map<std::string, int> binding_counts(const Kernel& kernel) {
  BindingCounter counter;
  counter.walk(kernel.body);
  return std::move(counter.counts);
}

FreshNames::FreshNames(const Kernel& kernel, std::string prefix) : prefix_(std::move(prefix)) {
  taken_.insert(kernel.name);
  for (const auto& p : kernel.params) taken_.insert(p.name);
  NameCollector collector(taken_);
  collector.walk(kernel.body);
}

std::string FreshNames::next() {
  for (;;) {
    auto name = prefix_ + std::to_string(counter_++);
    if (taken_.insert(name).second) return name;
  }
}

}  // namespace canopy::ir::passes_internal
