#include "simplify.hpp"

#include <cmath>
#include <map>
#include <string>

#include "../mutator.hpp"
#include "fold.hpp"
#include "internal/equality.hpp"
#include "internal/uses.hpp"

namespace canopy::ir {

namespace {

using passes_internal::equal;

bool is_commutative(BinaryOp op, ScalarType type) {
  switch (op) {
    case BinaryOp::Add:
    case BinaryOp::Mul:
    case BinaryOp::And:
    case BinaryOp::Or:
    case BinaryOp::Xor: return true;
    // fmin / fmax of +0.0 and -0.0 may depend on the order: leave floats be.
    case BinaryOp::Min:
    case BinaryOp::Max: return !is_float(type);
    default: return false;
  }
}

// Integers and bools: the types on which x - x, x == x, ... are exact.
bool is_exact(ScalarType type) { return !is_float(type); }

bool is_float_zero_of_sign(const Expr& e, bool negative) {
  return is_const(e) && is_float(e->type) && e->as<Const>().float_value == 0.0 &&
         std::signbit(e->as<Const>().float_value) == negative;
}

bool compare_of_self(CompareOp op) { return op == CompareOp::Eq || op == CompareOp::Le || op == CompareOp::Ge; }

// x op c where c is a literal: the identities and annihilators of each operator.
Expr simplify_with_literal_rhs(BinaryOp op, const Expr& x, const Expr& c) {
  const auto type = x->type;
  const int width = type == ScalarType::I32 ? 32 : 64;
  if (is_float(type)) {
    if (op == BinaryOp::Add && is_float_zero_of_sign(c, true)) return x;
    if (op == BinaryOp::Sub && is_float_zero_of_sign(c, false)) return x;
    if ((op == BinaryOp::Mul || op == BinaryOp::Div) && is_const_value(c, 1.0)) return x;
    return nullptr;
  }
  if (type == ScalarType::Bool) {
    const bool value = c->as<Const>().int_value != 0;
    if (op == BinaryOp::And) return value ? x : c;
    if (op == BinaryOp::Or) return value ? c : x;
    if (op == BinaryOp::Xor && !value) return x;
    return nullptr;
  }
  const std::int64_t value = c->as<Const>().int_value;
  switch (op) {
    case BinaryOp::Add:
    case BinaryOp::Sub:
    case BinaryOp::Or:
    case BinaryOp::Xor: return value == 0 ? x : nullptr;
    case BinaryOp::Mul: return value == 1 ? x : value == 0 ? c : nullptr;
    case BinaryOp::Div:  // x / 0 is 0 in the IR
      return value == 1 ? x : value == 0 ? c : nullptr;
    case BinaryOp::Rem:  // x % 0 and x % +-1 are 0
      return value == 0 || value == 1 || value == -1 ? make_int(type, 0) : nullptr;
    case BinaryOp::And: return value == 0 ? c : value == -1 ? x : nullptr;
    case BinaryOp::Shl:
    case BinaryOp::Shr: return (value & (width - 1)) == 0 ? x : nullptr;
    default: return nullptr;
  }
}

// (x +- c1) +- c2 on integers, where wrapping makes every regrouping exact.
Expr combine_integer_literals(BinaryOp op, const Expr& lhs, const Expr& c2) {
  if (lhs->kind != ExprKind::Binary) return nullptr;
  const auto& inner = lhs->as<Binary>();
  if ((inner.op != BinaryOp::Add && inner.op != BinaryOp::Sub) || !is_const(inner.rhs)) return nullptr;
  const auto& x = inner.lhs;
  const auto& c1 = inner.rhs;
  const bool inner_add = inner.op == BinaryOp::Add, outer_add = op == BinaryOp::Add;
  if (inner_add && outer_add) return make_binary(BinaryOp::Add, x, fold(make_binary(BinaryOp::Add, c1, c2)));
  if (!inner_add && outer_add) return make_binary(BinaryOp::Add, x, fold(make_binary(BinaryOp::Sub, c2, c1)));
  if (inner_add && !outer_add) return make_binary(BinaryOp::Add, x, fold(make_binary(BinaryOp::Sub, c1, c2)));
  return make_binary(BinaryOp::Sub, x, fold(make_binary(BinaryOp::Add, c1, c2)));
}

// The rules for one Binary node whose operands are already simplified.
Expr simplify_binary(const Expr& e) {
  const auto& node = e->as<Binary>();
  Expr a = node.lhs, b = node.rhs;
  const auto type = e->type;
  if (is_const(a) && is_const(b)) return fold(e);
  if (is_commutative(node.op, type) && is_const(a)) std::swap(a, b);
  if (is_const(b)) {
    if (auto r = simplify_with_literal_rhs(node.op, a, b)) return r;
    if (is_int(type) && (node.op == BinaryOp::Add || node.op == BinaryOp::Sub))
      if (auto r = combine_integer_literals(node.op, a, b)) return simplify_binary(r);
  }
  if (equal(a, b)) {
    if (node.op == BinaryOp::Min || node.op == BinaryOp::Max) return a;  // fmin(x, x) is x too
    if (is_exact(type)) {
      if (node.op == BinaryOp::And || node.op == BinaryOp::Or) return a;
      if (node.op == BinaryOp::Sub || node.op == BinaryOp::Xor) return make_int(type, 0);
    }
  }
  if (a == node.lhs && b == node.rhs) return e;
  return make_binary(node.op, a, b);
}

class Simplifier final : public Mutator {
 public:
  explicit Simplifier(std::map<std::string, int> bindings) : bindings_(std::move(bindings)) {}

 protected:
  Expr visit(const Unary& node, const Expr& self) override {
    auto e = Mutator::visit(node, self);
    const auto& u = e->as<Unary>();
    if (is_const(u.operand)) return fold(e);
    const auto& x = u.operand;
    if (x->kind == ExprKind::Unary && x->as<Unary>().op == u.op) return x->as<Unary>().operand;
    if (u.op == UnaryOp::Not && x->kind == ExprKind::Compare && is_exact(x->as<Compare>().lhs->type)) {
      const auto& c = x->as<Compare>();
      return make_compare(negated(c.op), c.lhs, c.rhs);
    }
    return e;
  }

  Expr visit(const Binary& node, const Expr& self) override { return simplify_binary(Mutator::visit(node, self)); }

  Expr visit(const Compare& node, const Expr& self) override {
    auto e = Mutator::visit(node, self);
    const auto& c = e->as<Compare>();
    if (is_const(c.lhs) && is_const(c.rhs)) return fold(e);
    if (is_const(c.lhs)) return make_compare(mirrored(c.op), c.rhs, c.lhs);
    if (is_exact(c.lhs->type) && equal(c.lhs, c.rhs)) return make_bool(compare_of_self(c.op));
    return e;
  }

  Expr visit(const Cast& node, const Expr& self) override {
    auto e = Mutator::visit(node, self);
    const auto& operand = e->as<Cast>().operand;
    if (operand->type == e->type) return operand;
    return is_const(operand) ? fold(e) : e;
  }

  Expr visit(const Call& node, const Expr& self) override {
    auto e = Mutator::visit(node, self);
    for (const auto& a : e->as<Call>().args)
      if (!is_const(a)) return e;
    return fold(e);
  }

  Expr visit(const Select& node, const Expr& self) override {
    auto e = Mutator::visit(node, self);
    const auto& s = e->as<Select>();
    if (is_const(s.cond)) return s.cond->as<Const>().int_value != 0 ? s.if_true : s.if_false;
    if (equal(s.if_true, s.if_false)) return s.if_true;
    return e;
  }

  Stmt visit(const Block& node, const Stmt& self) override {
    std::vector<Stmt> stmts;
    bool changed = false;
    for (const auto& s : node.stmts) {
      auto m = mutate(s);
      changed = changed || m != s;
      if (!m) continue;
      if (m->kind == StmtKind::Block && can_flatten(m->as<Block>())) {
        changed = true;
        for (const auto& inner : m->as<Block>().stmts) stmts.push_back(inner);
      } else {
        stmts.push_back(std::move(m));
      }
    }
    return changed ? make_block(std::move(stmts)) : self;
  }

  Stmt visit(const If& node, const Stmt& self) override {
    auto cond = mutate(node.cond);
    if (is_const(cond)) return mutate(cond->as<Const>().int_value != 0 ? node.then_body : node.else_body);
    auto then_body = mutate_body(node.then_body);
    auto else_body = mutate(node.else_body);
    if (else_body && else_body->kind == StmtKind::Block && else_body->as<Block>().stmts.empty()) else_body = nullptr;
    if (cond == node.cond && then_body == node.then_body && else_body == node.else_body) return self;
    return make_if(std::move(cond), std::move(then_body), std::move(else_body));
  }

  Stmt visit(const For& node, const Stmt& self) override {
    auto begin = mutate(node.begin);
    auto end = mutate(node.end);
    if (is_const(begin) && is_const(end) && begin->as<Const>().int_value >= end->as<Const>().int_value)
      return nullptr;  // runs zero times
    auto step = mutate(node.step);
    auto body = mutate_body(node.body);
    if (begin == node.begin && end == node.end && step == node.step && body == node.body) return self;
    return make_for(node.var, std::move(begin), std::move(end), std::move(step), std::move(body));
  }

 private:
  // A nested block may merge into its parent unless a local it declares is
  // declared elsewhere too (the merged scopes could then overlap).
  bool can_flatten(const Block& block) const {
    for (const auto& s : block.stmts) {
      if (s->kind != StmtKind::Decl) continue;
      auto it = bindings_.find(s->as<Decl>().name);
      if (it != bindings_.end() && it->second > 1) return false;
    }
    return true;
  }

  std::map<std::string, int> bindings_;
};

}  // namespace

Kernel simplify(const Kernel& kernel) { return Simplifier(passes_internal::binding_counts(kernel)).mutate(kernel); }

Expr simplify(const Expr& expr) { return Simplifier({}).mutate(expr); }

}  // namespace canopy::ir
