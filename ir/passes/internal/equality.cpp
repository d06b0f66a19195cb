#include "equality.hpp"

#include <bit>
#include <functional>

namespace canopy::ir::passes_internal {

namespace {

bool equal_all(const std::vector<Expr>& a, const std::vector<Expr>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!equal(a[i], b[i])) return false;
  return true;
}

std::size_t combine(std::size_t seed, std::size_t value) {
  return seed ^ (value + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2));
}

}  // namespace

bool is_leaf(const Expr& e) {
  switch (e->kind) {
    case ExprKind::Const:
    case ExprKind::Index:
    case ExprKind::Param:
    case ExprKind::Var:
    case ExprKind::Extent: return true;
    default: return false;
  }
}

bool equal(const Expr& a, const Expr& b) {
  if (a == b) return true;
  if (!a || !b || a->kind != b->kind || a->type != b->type) return false;
  switch (a->kind) {
    case ExprKind::Const: {
      const auto& x = a->as<Const>();
      const auto& y = b->as<Const>();
      return x.int_value == y.int_value &&
             std::bit_cast<std::uint64_t>(x.float_value) == std::bit_cast<std::uint64_t>(y.float_value);
    }
    case ExprKind::Index: return a->as<Index>().dim == b->as<Index>().dim;
    case ExprKind::Param: return a->as<ParamRef>().param == b->as<ParamRef>().param;
    case ExprKind::Var: return a->as<VarRef>().name == b->as<VarRef>().name;
    case ExprKind::Extent:
      return a->as<Extent>().param == b->as<Extent>().param && a->as<Extent>().dim == b->as<Extent>().dim;
    case ExprKind::Load:
      return a->as<Load>().param == b->as<Load>().param && equal_all(a->as<Load>().indices, b->as<Load>().indices);
    case ExprKind::Unary:
      return a->as<Unary>().op == b->as<Unary>().op && equal(a->as<Unary>().operand, b->as<Unary>().operand);
    case ExprKind::Binary: {
      const auto& x = a->as<Binary>();
      const auto& y = b->as<Binary>();
      return x.op == y.op && equal(x.lhs, y.lhs) && equal(x.rhs, y.rhs);
    }
    case ExprKind::Compare: {
      const auto& x = a->as<Compare>();
      const auto& y = b->as<Compare>();
      return x.op == y.op && equal(x.lhs, y.lhs) && equal(x.rhs, y.rhs);
    }
    case ExprKind::Cast: return equal(a->as<Cast>().operand, b->as<Cast>().operand);
    case ExprKind::Call:
      return a->as<Call>().fn == b->as<Call>().fn && equal_all(a->as<Call>().args, b->as<Call>().args);
    case ExprKind::Select: {
      const auto& x = a->as<Select>();
      const auto& y = b->as<Select>();
      return equal(x.cond, y.cond) && equal(x.if_true, y.if_true) && equal(x.if_false, y.if_false);
    }
  }
  return false;
}

namespace {

// The hash of one node, given a way to hash its children.
template <class ChildHash>
std::size_t hash_node(const Expr& e, ChildHash&& child) {
  std::size_t h = combine(static_cast<std::size_t>(e->kind), static_cast<std::size_t>(e->type));
  switch (e->kind) {
    case ExprKind::Const: {
      const auto& c = e->as<Const>();
      h = combine(h, static_cast<std::size_t>(c.int_value));
      return combine(h, std::bit_cast<std::uint64_t>(c.float_value));
    }
    case ExprKind::Index: return combine(h, static_cast<std::size_t>(e->as<Index>().dim));
    case ExprKind::Param: return combine(h, static_cast<std::size_t>(e->as<ParamRef>().param));
    case ExprKind::Var: return combine(h, std::hash<std::string>{}(e->as<VarRef>().name));
    case ExprKind::Extent:
      return combine(combine(h, static_cast<std::size_t>(e->as<Extent>().param)),
                     static_cast<std::size_t>(e->as<Extent>().dim));
    case ExprKind::Load:
      h = combine(h, static_cast<std::size_t>(e->as<Load>().param));
      for (const auto& i : e->as<Load>().indices) h = combine(h, child(i));
      return h;
    case ExprKind::Unary:
      return combine(combine(h, static_cast<std::size_t>(e->as<Unary>().op)), child(e->as<Unary>().operand));
    case ExprKind::Binary: {
      const auto& b = e->as<Binary>();
      return combine(combine(combine(h, static_cast<std::size_t>(b.op)), child(b.lhs)), child(b.rhs));
    }
    case ExprKind::Compare: {
      const auto& c = e->as<Compare>();
      return combine(combine(combine(h, static_cast<std::size_t>(c.op)), child(c.lhs)), child(c.rhs));
    }
    case ExprKind::Cast: return combine(h, child(e->as<Cast>().operand));
    case ExprKind::Call:
      h = combine(h, static_cast<std::size_t>(e->as<Call>().fn));
      for (const auto& a : e->as<Call>().args) h = combine(h, child(a));
      return h;
    case ExprKind::Select: {
      const auto& s = e->as<Select>();
      return combine(combine(combine(h, child(s.cond)), child(s.if_true)), child(s.if_false));
    }
  }
  return h;
}

}  // namespace

std::size_t hash_of(const Expr& e) {
  return hash_node(e, [](const Expr& c) { return hash_of(c); });
}

std::size_t HashCache::hash(const Expr& e) {
  auto it = memo_.find(e.get());
  if (it != memo_.end()) return it->second.second;
  const std::size_t h = hash_node(e, [this](const Expr& c) { return hash(c); });
  memo_.emplace(e.get(), std::make_pair(e, h));
  return h;
}

}  // namespace canopy::ir::passes_internal
