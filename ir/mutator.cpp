#include "mutator.hpp"

namespace canopy::ir {

Expr Mutator::mutate(const Expr& expr) {
  switch (expr->kind) {
    case ExprKind::Const: return visit(expr->as<Const>(), expr);
    case ExprKind::Index: return visit(expr->as<Index>(), expr);
    case ExprKind::Param: return visit(expr->as<ParamRef>(), expr);
    case ExprKind::Var: return visit(expr->as<VarRef>(), expr);
    case ExprKind::Extent: return visit(expr->as<Extent>(), expr);
    case ExprKind::Load: return visit(expr->as<Load>(), expr);
    case ExprKind::Unary: return visit(expr->as<Unary>(), expr);
    case ExprKind::Binary: return visit(expr->as<Binary>(), expr);
    case ExprKind::Compare: return visit(expr->as<Compare>(), expr);
    case ExprKind::Cast: return visit(expr->as<Cast>(), expr);
    case ExprKind::Call: return visit(expr->as<Call>(), expr);
    case ExprKind::Select: return visit(expr->as<Select>(), expr);
  }
  return expr;
}

Stmt Mutator::mutate(const Stmt& stmt) {
  if (!stmt) return stmt;
  switch (stmt->kind) {
    case StmtKind::Block: return visit(stmt->as<Block>(), stmt);
    case StmtKind::Decl: return visit(stmt->as<Decl>(), stmt);
    case StmtKind::Assign: return visit(stmt->as<Assign>(), stmt);
    case StmtKind::Store: return visit(stmt->as<Store>(), stmt);
    case StmtKind::AtomicAdd: return visit(stmt->as<AtomicAdd>(), stmt);
    case StmtKind::Reduce: return visit(stmt->as<Reduce>(), stmt);
    case StmtKind::If: return visit(stmt->as<If>(), stmt);
    case StmtKind::For: return visit(stmt->as<For>(), stmt);
  }
  return stmt;
}

Kernel Mutator::mutate(const Kernel& kernel) {
  Kernel out = kernel;
  out.body = mutate_body(kernel.body);
  if (out.body->kind != StmtKind::Block) out.body = make_block({out.body});
  return out;
}

std::vector<Expr> Mutator::mutate_all(const std::vector<Expr>& exprs, bool& changed) {
  std::vector<Expr> out;
  out.reserve(exprs.size());
  for (const auto& e : exprs) {
    out.push_back(mutate(e));
    changed = changed || out.back() != e;
  }
  return out;
}

Stmt Mutator::mutate_body(const Stmt& body) {
  auto out = mutate(body);
  return out ? out : make_block({});
}

Expr Mutator::visit(const Load& node, const Expr& self) {
  bool changed = false;
  auto indices = mutate_all(node.indices, changed);
  return changed ? make_load(node.type, node.param, std::move(indices)) : self;
}

Expr Mutator::visit(const Unary& node, const Expr& self) {
  auto x = mutate(node.operand);
  return x == node.operand ? self : make_unary(node.op, std::move(x));
}

Expr Mutator::visit(const Binary& node, const Expr& self) {
  auto a = mutate(node.lhs);
  auto b = mutate(node.rhs);
  return a == node.lhs && b == node.rhs ? self : make_binary(node.op, std::move(a), std::move(b));
}

Expr Mutator::visit(const Compare& node, const Expr& self) {
  auto a = mutate(node.lhs);
  auto b = mutate(node.rhs);
  return a == node.lhs && b == node.rhs ? self : make_compare(node.op, std::move(a), std::move(b));
}

Expr Mutator::visit(const Cast& node, const Expr& self) {
  auto x = mutate(node.operand);
  return x == node.operand ? self : make_cast(node.type, std::move(x));
}

Expr Mutator::visit(const Call& node, const Expr& self) {
  bool changed = false;
  auto args = mutate_all(node.args, changed);
  return changed ? make_call(node.fn, std::move(args)) : self;
}

Expr Mutator::visit(const Select& node, const Expr& self) {
  auto c = mutate(node.cond);
  auto t = mutate(node.if_true);
  auto f = mutate(node.if_false);
  if (c == node.cond && t == node.if_true && f == node.if_false) return self;
  return make_select(std::move(c), std::move(t), std::move(f));
}

Stmt Mutator::visit(const Block& node, const Stmt& self) {
  std::vector<Stmt> stmts;
  stmts.reserve(node.stmts.size());
  bool changed = false;
  for (const auto& s : node.stmts) {
    auto m = mutate(s);
    changed = changed || m != s;
    if (m) stmts.push_back(std::move(m));
  }
  return changed ? make_block(std::move(stmts)) : self;
}

Stmt Mutator::visit(const Decl& node, const Stmt& self) {
  auto init = mutate(node.init);
  return init == node.init ? self : std::make_shared<Decl>(node.name, node.type, std::move(init));
}

Stmt Mutator::visit(const Assign& node, const Stmt& self) {
  auto value = mutate(node.value);
  return value == node.value ? self : make_assign(node.name, std::move(value));
}

Stmt Mutator::visit(const Store& node, const Stmt& self) {
  bool changed = false;
  auto indices = mutate_all(node.indices, changed);
  auto value = mutate(node.value);
  if (!changed && value == node.value) return self;
  return make_store(node.param, std::move(indices), std::move(value));
}

Stmt Mutator::visit(const AtomicAdd& node, const Stmt& self) {
  bool changed = false;
  auto indices = mutate_all(node.indices, changed);
  auto value = mutate(node.value);
  if (!changed && value == node.value) return self;
  return make_atomic_add(node.param, std::move(indices), std::move(value));
}

Stmt Mutator::visit(const Reduce& node, const Stmt& self) {
  auto value = mutate(node.value);
  return value == node.value ? self : make_reduce(node.param, std::move(value));
}

Stmt Mutator::visit(const If& node, const Stmt& self) {
  auto cond = mutate(node.cond);
  auto then_body = mutate_body(node.then_body);
  auto else_body = mutate(node.else_body);
  if (cond == node.cond && then_body == node.then_body && else_body == node.else_body) return self;
  return make_if(std::move(cond), std::move(then_body), std::move(else_body));
}

Stmt Mutator::visit(const For& node, const Stmt& self) {
  auto begin = mutate(node.begin);
  auto end = mutate(node.end);
  auto step = mutate(node.step);
  auto body = mutate_body(node.body);
  if (begin == node.begin && end == node.end && step == node.step && body == node.body) return self;
  return make_for(node.var, std::move(begin), std::move(end), std::move(step), std::move(body));
}

}  // namespace canopy::ir
