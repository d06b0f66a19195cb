#include "uses.hpp"

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

const ExprReads& ReadsCache::reads(const Expr& expr) {
  auto it = memo_.find(expr.get());
  if (it != memo_.end()) return it->second.second;
  ExprReads r;
  switch (expr->kind) {
    case ExprKind::Var:
      if (tracked_.count(expr->as<VarRef>().name)) r.locals.insert(expr->as<VarRef>().name);
      break;
    case ExprKind::Load:
      r.arrays.insert(expr->as<Load>().param);
      for (const auto& i : expr->as<Load>().indices) merge_child(r, i);
      break;
    case ExprKind::Unary: merge_child(r, expr->as<Unary>().operand); break;
    case ExprKind::Binary: {
      const auto& b = expr->as<Binary>();
      if (is_int(b.type) && (b.op == BinaryOp::Div || b.op == BinaryOp::Rem)) r.integer_division = true;
      merge_child(r, b.lhs);
      merge_child(r, b.rhs);
      break;
    }
    case ExprKind::Compare:
      merge_child(r, expr->as<Compare>().lhs);
      merge_child(r, expr->as<Compare>().rhs);
      break;
    case ExprKind::Cast: merge_child(r, expr->as<Cast>().operand); break;
    case ExprKind::Call:
      for (const auto& a : expr->as<Call>().args) merge_child(r, a);
      break;
    case ExprKind::Select:
      merge_child(r, expr->as<Select>().cond);
      merge_child(r, expr->as<Select>().if_true);
      merge_child(r, expr->as<Select>().if_false);
      break;
    default: break;  // literals, indices, parameters and extents read nothing that changes
  }
  return memo_.emplace(expr.get(), std::make_pair(expr, std::move(r))).first->second.second;
}

void ReadsCache::merge_child(ExprReads& into, const Expr& child) {
  const auto& c = reads(child);
  into.locals.insert(c.locals.begin(), c.locals.end());
  into.arrays.insert(c.arrays.begin(), c.arrays.end());
  into.integer_division = into.integer_division || c.integer_division;
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
