#include "visitor.hpp"

namespace canopy::ir {

void Visitor::walk(const Expr& expr) {
  switch (expr->kind) {
    case ExprKind::Const: return visit(expr->as<Const>());
    case ExprKind::Index: return visit(expr->as<Index>());
    case ExprKind::Param: return visit(expr->as<ParamRef>());
    case ExprKind::Var: return visit(expr->as<VarRef>());
    case ExprKind::Extent: return visit(expr->as<Extent>());
    case ExprKind::Load: return visit(expr->as<Load>());
    case ExprKind::Unary: return visit(expr->as<Unary>());
    case ExprKind::Binary: return visit(expr->as<Binary>());
    case ExprKind::Compare: return visit(expr->as<Compare>());
    case ExprKind::Cast: return visit(expr->as<Cast>());
    case ExprKind::Call: return visit(expr->as<Call>());
    case ExprKind::Select: return visit(expr->as<Select>());
  }
}

void Visitor::walk(const Stmt& stmt) {
  if (!stmt) return;
  switch (stmt->kind) {
    case StmtKind::Block: return visit(stmt->as<Block>());
    case StmtKind::Decl: return visit(stmt->as<Decl>());
    case StmtKind::Assign: return visit(stmt->as<Assign>());
    case StmtKind::Store: return visit(stmt->as<Store>());
    case StmtKind::AtomicAdd: return visit(stmt->as<AtomicAdd>());
    case StmtKind::Reduce: return visit(stmt->as<Reduce>());
    case StmtKind::If: return visit(stmt->as<If>());
    case StmtKind::For: return visit(stmt->as<For>());
  }
}

void Visitor::visit(const Load& node) {
  for (const auto& i : node.indices) walk(i);
}
void Visitor::visit(const Unary& node) { walk(node.operand); }
void Visitor::visit(const Binary& node) {
  walk(node.lhs);
  walk(node.rhs);
}
void Visitor::visit(const Compare& node) {
  walk(node.lhs);
  walk(node.rhs);
}
void Visitor::visit(const Cast& node) { walk(node.operand); }
void Visitor::visit(const Call& node) {
  for (const auto& a : node.args) walk(a);
}
void Visitor::visit(const Select& node) {
  walk(node.cond);
  walk(node.if_true);
  walk(node.if_false);
}

void Visitor::visit(const Block& node) {
  for (const auto& s : node.stmts) walk(s);
}
void Visitor::visit(const Decl& node) { walk(node.init); }
void Visitor::visit(const Assign& node) { walk(node.value); }
void Visitor::visit(const Store& node) {
  for (const auto& i : node.indices) walk(i);
  walk(node.value);
}
void Visitor::visit(const AtomicAdd& node) {
  for (const auto& i : node.indices) walk(i);
  walk(node.value);
}
void Visitor::visit(const Reduce& node) { walk(node.value); }
void Visitor::visit(const If& node) {
  walk(node.cond);
  walk(node.then_body);
  walk(node.else_body);
}
void Visitor::visit(const For& node) {
  walk(node.begin);
  walk(node.end);
  walk(node.step);
  walk(node.body);
}

bool has_loops(const Kernel& kernel) {
  struct Finder : Visitor {
    bool found = false;
    void visit(const For&) override { found = true; }
  } finder;
  finder.walk(kernel.body);
  return finder.found;
}

}  // namespace canopy::ir
