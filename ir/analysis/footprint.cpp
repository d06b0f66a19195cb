#include "footprint.hpp"

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "../error.hpp"
#include "../passes/internal/equality.hpp"
#include "../visitor.hpp"

namespace canopy::ir {

namespace {

using Coeffs = std::array<std::int64_t, 3>;
constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
/// Nesting (through operators and looked-through locals) beyond which an index
/// is given up as unbounded rather than risk the stack.
constexpr int kMaxDepth = 1000;

// ---- checked 64-bit and exact 128-bit arithmetic ---------------------------

std::optional<std::int64_t> checked_add(std::int64_t a, std::int64_t b) {
  std::int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}
std::optional<std::int64_t> checked_sub(std::int64_t a, std::int64_t b) {
  std::int64_t r;
  if (__builtin_sub_overflow(a, b, &r)) return std::nullopt;
  return r;
}
std::optional<std::int64_t> checked_mul(std::int64_t a, std::int64_t b) {
  std::int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

// 128 bits hold any product of two int64 values plus an int64, exactly.
__extension__ typedef __int128 Wide;

/// floor(a / b) and ceil(a / b) for b > 0.
Wide floor_div(Wide a, Wide b) { return a / b - ((a % b != 0 && a < 0) ? 1 : 0); }
Wide ceil_div(Wide a, Wide b) { return -floor_div(-a, b); }

/// [first, last] (inclusive) clamped to [0, extent), as a half-open Interval.
Interval clamp_rows(Wide first, Wide last, std::int64_t extent) {
  first = std::max<Wide>(first, 0);
  last = std::min<Wide>(last, Wide{extent} - 1);
  if (first > last) return {};
  return {static_cast<std::int64_t>(first), static_cast<std::int64_t>(last + 1)};
}

// ---- the abstract values the index expressions evaluate to ----------------

/// The affine value of an expression, or nothing when it cannot be bounded
/// (the caller then decides between Whole and DataDependent).
using Bound = std::optional<DimFootprint>;

DimFootprint constant(std::int64_t value) { return DimFootprint::affine({}, value, value); }
DimFootprint interval(std::int64_t lo, std::int64_t hi) { return DimFootprint::affine({}, lo, hi); }
/// An invariant value with a single possible value.
bool is_exact(const DimFootprint& v) { return v.is_invariant() && v.lo == v.hi; }

/// Every coefficient and offset through `op`; nothing if one overflows.
template <class Op>
Bound combine(const DimFootprint& a, const DimFootprint& b, Op op) {
  Coeffs coeff{};
  for (std::size_t d = 0; d < coeff.size(); ++d) {
    auto c = op(a.coeff[d], b.coeff[d]);
    if (!c) return std::nullopt;
    coeff[d] = *c;
  }
  return DimFootprint::affine(coeff, 0, 0);
}

Bound add(const DimFootprint& a, const DimFootprint& b) {
  auto r = combine(a, b, checked_add);
  auto lo = checked_add(a.lo, b.lo), hi = checked_add(a.hi, b.hi);
  if (!r || !lo || !hi) return std::nullopt;
  r->lo = *lo;
  r->hi = *hi;
  return r;
}

Bound scale(const DimFootprint& a, std::int64_t factor) {
  DimFootprint r = DimFootprint::affine({}, 0, 0);
  for (std::size_t d = 0; d < r.coeff.size(); ++d) {
    auto c = checked_mul(a.coeff[d], factor);
    if (!c) return std::nullopt;
    r.coeff[d] = *c;
  }
  auto lo = checked_mul(a.lo, factor), hi = checked_mul(a.hi, factor);
  if (!lo || !hi) return std::nullopt;
  r.lo = std::min(*lo, *hi);
  r.hi = std::max(*lo, *hi);
  return r;
}

Bound negate(const DimFootprint& a) { return scale(a, -1); }

Bound subtract(const DimFootprint& a, const DimFootprint& b) {
  auto minus_b = negate(b);
  return minus_b ? add(a, *minus_b) : std::nullopt;
}

Bound multiply(const DimFootprint& a, const DimFootprint& b) {
  if (is_exact(b)) return scale(a, b.lo);
  if (is_exact(a)) return scale(b, a.lo);
  if (!a.is_invariant() || !b.is_invariant()) return std::nullopt;  // i*i, i*k
  std::int64_t lo = kMax, hi = kMin;
  for (auto x : {a.lo, a.hi})
    for (auto y : {b.lo, b.hi}) {
      auto p = checked_mul(x, y);
      if (!p) return std::nullopt;
      lo = std::min(lo, *p);
      hi = std::max(hi, *p);
    }
  return interval(lo, hi);
}

/// Integer division truncating toward zero; x / 0 is 0 (the IR's rule).
Bound divide(const DimFootprint& a, const DimFootprint& b) {
  if (!is_exact(b) || !a.is_invariant()) return std::nullopt;  // i/2 is not affine
  const std::int64_t divisor = b.lo;
  if (divisor == 0) return constant(0);
  if (divisor == -1) return negate(a);  // fails on kMin, whose quotient wraps
  // Truncating division by a constant is monotone in the dividend.
  const std::int64_t x = a.lo / divisor, y = a.hi / divisor;
  return interval(std::min(x, y), std::max(x, y));
}

/// C's remainder: the sign of the dividend, magnitude below |divisor|; x % 0 is 0.
Bound remainder(const DimFootprint& a, const DimFootprint& b) {
  if (!is_exact(b)) return std::nullopt;
  const std::int64_t divisor = b.lo;
  if (divisor == 0 || divisor == -1) return constant(0);
  if (is_exact(a)) return constant(a.lo % divisor);
  const std::int64_t largest = divisor == kMin ? kMax : std::abs(divisor) - 1;
  if (!a.is_affine()) return interval(-largest, largest);
  if (a.is_invariant() && a.lo >= -largest && a.hi <= largest && (a.lo >= 0 || a.hi <= 0)) return a;
  // index(d) >= 0, so non-negative coefficients and offsets give a non-negative dividend.
  const bool non_negative = a.lo >= 0 && std::all_of(a.coeff.begin(), a.coeff.end(), [](auto c) { return c >= 0; });
  const bool non_positive = a.hi <= 0 && std::all_of(a.coeff.begin(), a.coeff.end(), [](auto c) { return c <= 0; });
  if (non_negative) return interval(0, largest);
  if (non_positive) return interval(-largest, 0);
  return interval(-largest, largest);
}

Bound minimum_or_maximum(const DimFootprint& a, const DimFootprint& b, bool maximum) {
  if (a.coeff != b.coeff) return std::nullopt;
  // min(c.i + x, c.i + y) = c.i + min(x, y), and the same for max.
  if (maximum) return DimFootprint::affine(a.coeff, std::max(a.lo, b.lo), std::max(a.hi, b.hi));
  return DimFootprint::affine(a.coeff, std::min(a.lo, b.lo), std::min(a.hi, b.hi));
}

/// x & y with y >= 0 lies in [0, y] whatever x is.
Bound bitwise_and(const DimFootprint& a, const DimFootprint& b) {
  if (is_exact(a) && is_exact(b)) return constant(a.lo & b.lo);
  std::optional<std::int64_t> upper;
  for (const auto* side : {&a, &b})
    if (side->is_invariant() && side->lo >= 0) upper = std::min(upper.value_or(kMax), side->hi);
  if (!upper) return std::nullopt;
  return interval(0, *upper);
}

/// x | y and x ^ y of non-negative values keep to the bits of the larger one.
Bound bitwise_or_xor(const DimFootprint& a, const DimFootprint& b, BinaryOp op) {
  if (is_exact(a) && is_exact(b)) return constant(op == BinaryOp::Or ? (a.lo | b.lo) : (a.lo ^ b.lo));
  if (!a.is_invariant() || !b.is_invariant() || a.lo < 0 || b.lo < 0) return std::nullopt;
  std::uint64_t mask = static_cast<std::uint64_t>(std::max(a.hi, b.hi));
  for (int shift = 1; shift < 64; shift *= 2) mask |= mask >> shift;
  return interval(0, static_cast<std::int64_t>(mask));
}

/// The shift amount as the IR takes it: modulo the bit width of `type`.
std::int64_t shift_amount(const DimFootprint& b, ScalarType type) { return b.lo & (type == ScalarType::I32 ? 31 : 63); }

Bound shift_left(const DimFootprint& a, const DimFootprint& b, ScalarType type) {
  if (!is_exact(b)) return std::nullopt;
  const std::int64_t amount = shift_amount(b, type);
  if (amount > 62) return std::nullopt;
  return scale(a, std::int64_t{1} << amount);  // x << s is x * 2^s in wrapping arithmetic
}

Bound shift_right(const DimFootprint& a, const DimFootprint& b, ScalarType type) {
  if (!is_exact(b) || !a.is_invariant()) return std::nullopt;
  const std::int64_t amount = shift_amount(b, type);
  return interval(a.lo >> amount, a.hi >> amount);  // arithmetic shift is monotone
}

Bound absolute(const DimFootprint& a) {
  if (!a.is_invariant() || a.lo == kMin) return std::nullopt;
  if (a.lo >= 0) return a;
  if (a.hi <= 0) return interval(-a.hi, -a.lo);
  return interval(0, std::max(-a.lo, a.hi));
}

/// Two sites (or two branches) together: the offsets' union when the
/// coefficients agree; otherwise unbounded, DataDependent winning over Whole.
DimFootprint join(const DimFootprint& a, const DimFootprint& b) {
  if (a.pattern == IndexPattern::DataDependent || b.pattern == IndexPattern::DataDependent)
    return DimFootprint::data_dependent();
  if (a.is_affine() && b.is_affine() && a.coeff == b.coeff)
    return DimFootprint::affine(a.coeff, std::min(a.lo, b.lo), std::max(a.hi, b.hi));
  return DimFootprint::whole();
}

/// Calls `f` on each child expression of `node` (null children included).
template <class F>
void for_each_child(const ExprNode& node, F&& f) {
  switch (node.kind) {
    case ExprKind::Const:
    case ExprKind::Index:
    case ExprKind::Param:
    case ExprKind::Var:
    case ExprKind::Extent: return;
    case ExprKind::Load:
      for (const auto& i : node.as<Load>().indices) f(i);
      return;
    case ExprKind::Unary: f(node.as<Unary>().operand); return;
    case ExprKind::Binary:
      f(node.as<Binary>().lhs);
      f(node.as<Binary>().rhs);
      return;
    case ExprKind::Compare:
      f(node.as<Compare>().lhs);
      f(node.as<Compare>().rhs);
      return;
    case ExprKind::Cast: f(node.as<Cast>().operand); return;
    case ExprKind::Call:
      for (const auto& a : node.as<Call>().args) f(a);
      return;
    case ExprKind::Select:
      f(node.as<Select>().cond);
      f(node.as<Select>().if_true);
      f(node.as<Select>().if_false);
      return;
  }
}

// ---- locals and loop counters ----------------------------------------------

/// Everything that gives a name a value: declarations, assignments, loops.
struct Definitions {
  int decls = 0;
  int assigns = 0;
  std::vector<Expr> values;       ///< declaration initialisers and assigned values
  std::vector<const For*> loops;  ///< loops counting with this name
};

/// Collects the Definitions of every name in a body. Expressions are not
/// walked: only statements define names.
class DefinitionScan : public Visitor {
 public:
  std::unordered_map<std::string, Definitions> names;

 protected:
  void visit(const Decl& node) override {
    auto& d = names[node.name];
    ++d.decls;
    d.values.push_back(node.init);
  }
  void visit(const Assign& node) override {
    auto& d = names[node.name];
    ++d.assigns;
    d.values.push_back(node.value);
  }
  void visit(const Store&) override {}
  void visit(const AtomicAdd&) override {}
  void visit(const Reduce&) override {}
  void visit(const If& node) override {
    walk(node.then_body);
    walk(node.else_body);
  }
  void visit(const For& node) override {
    names[node.var].loops.push_back(&node);
    walk(node.body);
  }
};

/// Whether a loop's body runs for every point, for none, or maybe.
enum class Trips { Never, Always, Maybe };

/// Evaluates index expressions to DimFootprints, memoised per node (kernels
/// traced from C++ share subtrees, so trees may be DAGs) and per local.
class IndexEvaluator {
 public:
  /// `values`: what a launch binds (null: nothing). `inputs`: where to note
  /// each scalar parameter and extent looked at (null: nowhere).
  IndexEvaluator(const Kernel& kernel, const LaunchValues* values, FootprintInputs* inputs)
      : kernel_(kernel), launch_(values), inputs_(inputs) {
    DefinitionScan scan;
    scan.walk(kernel.body);
    names_ = std::move(scan.names);
  }

  DimFootprint evaluate(const Expr& expr) { return evaluate(expr, 0); }

  /// True when every point that evaluates `expr` surely takes both ends of
  /// evaluate(expr), given that the loops around it run: `expr` adds and
  /// scales constants, indices and at most one counter of a loop with exact
  /// bounds (`b[j]` for j in 0..200 takes 0 and 199), so a site there that
  /// every point makes reaches both.
  bool takes_both_ends(const Expr& expr) { return counters_reaching_ends(expr, 0) >= 0; }

  Trips trips(const For& loop) {
    if (!positive_step(loop)) return Trips::Maybe;
    const auto begin = evaluate(loop.begin), end = evaluate(loop.end);
    if (!begin.is_affine() || !end.is_affine() || begin.coeff != end.coeff) return Trips::Maybe;
    // end - begin lies in [end.lo - begin.hi, end.hi - begin.lo].
    if (end.hi <= begin.lo) return Trips::Never;
    if (end.lo > begin.hi) return Trips::Always;
    return Trips::Maybe;
  }

 private:
  DimFootprint evaluate(const Expr& expr, int depth) {
    if (!expr) return DimFootprint::whole();
    if (auto it = values_.find(expr.get()); it != values_.end()) return it->second;
    DimFootprint value;
    Bound bound = depth < kMaxDepth ? bound_of(*expr, depth + 1) : std::nullopt;
    // An i32 offset out of i32's range means the kernel's arithmetic wraps.
    if (bound && expr->type == ScalarType::I32 &&
        (bound->lo < std::numeric_limits<std::int32_t>::min() || bound->hi > std::numeric_limits<std::int32_t>::max()))
      bound.reset();
    value = bound ? *bound : unbounded(expr);
    values_.emplace(expr.get(), value);
    return value;
  }

  DimFootprint unbounded(const Expr& expr) {
    return reads_memory(expr) ? DimFootprint::data_dependent() : DimFootprint::whole();
  }

  Bound bound_of(const ExprNode& node, int depth) {
    switch (node.kind) {
      case ExprKind::Const: return constant_value(node.as<Const>());
      case ExprKind::Index: {
        const int dim = node.as<Index>().dim;
        if (dim < 0 || dim >= std::min(kernel_.dims, 3)) return std::nullopt;
        Coeffs coeff{};
        coeff[static_cast<std::size_t>(dim)] = 1;
        return DimFootprint::affine(coeff, 0, 0);
      }
      case ExprKind::Param: return launch_scalar(node.as<ParamRef>());
      case ExprKind::Extent: return launch_extent(node.as<Extent>());
      case ExprKind::Load: return std::nullopt;
      case ExprKind::Var: {
        auto v = variable(node.as<VarRef>().name, depth);
        return v.is_affine() ? Bound{v} : std::nullopt;
      }
      case ExprKind::Unary: return unary(node.as<Unary>(), depth);
      case ExprKind::Binary: return binary(node.as<Binary>(), depth);
      case ExprKind::Compare: {
        const auto& c = node.as<Compare>();
        if (is_const(c.lhs) && is_const(c.rhs) && is_int(c.lhs->type) && is_int(c.rhs->type))
          return constant(compare(c.op, c.lhs->as<Const>().int_value, c.rhs->as<Const>().int_value));
        return interval(0, 1);
      }
      case ExprKind::Cast: return cast(node.as<Cast>(), depth);
      case ExprKind::Call: {
        const auto& call = node.as<Call>();
        if (call.fn != MathFn::Abs || !is_int(call.type) || call.args.size() != 1) return std::nullopt;
        auto arg = evaluate(call.args[0], depth);
        return arg.is_affine() ? absolute(arg) : std::nullopt;
      }
      case ExprKind::Select: {
        // Whatever the condition, the value is one of the two sides.
        const auto& s = node.as<Select>();
        auto joined = join(evaluate(s.if_true, depth), evaluate(s.if_false, depth));
        return joined.is_affine() ? Bound{joined} : std::nullopt;
      }
    }
    return std::nullopt;
  }

  // A scalar parameter's value at the launch, where it is an integer the launch gives.
  Bound launch_scalar(const ParamRef& node) {
    if (is_float(node.type)) return std::nullopt;
    if (inputs_ && std::find(inputs_->scalars.begin(), inputs_->scalars.end(), node.param) == inputs_->scalars.end())
      inputs_->scalars.push_back(node.param);
    const auto p = static_cast<std::size_t>(node.param);
    if (!launch_ || node.param < 0 || p >= launch_->scalars.size() || !launch_->scalars[p]) return std::nullopt;
    return constant(*launch_->scalars[p]);
  }

  // An array's extent at the launch, where the launch gives it.
  Bound launch_extent(const Extent& node) {
    const std::pair<int, int> key{node.param, node.dim};
    if (inputs_ && std::find(inputs_->extents.begin(), inputs_->extents.end(), key) == inputs_->extents.end())
      inputs_->extents.push_back(key);
    const auto p = static_cast<std::size_t>(node.param), d = static_cast<std::size_t>(node.dim);
    if (!launch_ || node.param < 0 || node.dim < 0 || p >= launch_->extents.size() || d >= launch_->extents[p].size())
      return std::nullopt;
    return constant(launch_->extents[p][d]);
  }

  static Bound constant_value(const Const& c) {
    if (!is_float(c.type)) return constant(c.int_value);
    return std::nullopt;
  }

  static bool compare(CompareOp op, std::int64_t a, std::int64_t b) {
    switch (op) {
      case CompareOp::Eq: return a == b;
      case CompareOp::Ne: return a != b;
      case CompareOp::Lt: return a < b;
      case CompareOp::Le: return a <= b;
      case CompareOp::Gt: return a > b;
      case CompareOp::Ge: return a >= b;
    }
    return false;
  }

  Bound unary(const Unary& node, int depth) {
    if (is_float(node.type)) return std::nullopt;
    if (node.type == ScalarType::Bool) {
      auto x = evaluate(node.operand, depth);
      return is_exact(x) ? constant(x.lo == 0 ? 1 : 0) : interval(0, 1);
    }
    auto x = evaluate(node.operand, depth);
    if (!x.is_affine()) return std::nullopt;
    auto negated = negate(x);
    if (!negated || node.op == UnaryOp::Neg) return negated;
    return add(*negated, constant(-1));  // ~x == -x - 1
  }

  Bound binary(const Binary& node, int depth) {
    if (is_float(node.type)) return std::nullopt;
    const auto a = evaluate(node.lhs, depth), b = evaluate(node.rhs, depth);
    // A mask or a remainder bounds even an unbounded operand (idx[i] & 7).
    if (node.op == BinaryOp::And) return bitwise_and(a, b);
    if (node.op == BinaryOp::Rem) return remainder(a, b);
    if (!a.is_affine() || !b.is_affine()) return std::nullopt;
    switch (node.op) {
      case BinaryOp::Add: return add(a, b);
      case BinaryOp::Sub: return subtract(a, b);
      case BinaryOp::Mul: return multiply(a, b);
      case BinaryOp::Div: return divide(a, b);
      case BinaryOp::Rem: return remainder(a, b);
      case BinaryOp::Min: return clamp(a, b, false);
      case BinaryOp::Max: return clamp(a, b, true);
      case BinaryOp::And: return bitwise_and(a, b);
      case BinaryOp::Or:
      case BinaryOp::Xor: return bitwise_or_xor(a, b, node.op);
      case BinaryOp::Shl: return shift_left(a, b, node.type);
      case BinaryOp::Shr: return shift_right(a, b, node.type);
    }
    return std::nullopt;
  }

  // min or max of two affine values. With one of them the same for every
  // point (a bound: x[min(i + 1, n - 1)]), the other's offsets widen by how
  // far the bound lies from it at the range's farthest point: min(c.i + x, u)
  // - c.i = min(x, u - c.i) >= min(x, u - max(c.i)), and max(c.i + x, u) - c.i
  // <= max(x, u - min(c.i)). For a stencil's clamped neighbour over the
  // whole array that is one element (i + [0, 1]), where the bound had made
  // the whole array each piece's (found by a new user: a split 512x512
  // stencil moved the whole grid both ways every iteration).
  Bound clamp(const DimFootprint& a, const DimFootprint& b, bool maximum) {
    if (a.coeff == b.coeff) return minimum_or_maximum(a, b, maximum);
    if (!a.is_invariant() && !b.is_invariant()) return std::nullopt;
    const DimFootprint& line = a.is_invariant() ? b : a;
    const DimFootprint& bound = a.is_invariant() ? a : b;
    if (!launch_ || launch_->range.empty()) {
      if (inputs_) inputs_->range = true;
      return std::nullopt;
    }
    Wide lowest = 0, highest = 0;  // of c . index over the range's points
    for (std::size_t d = 0; d < line.coeff.size(); ++d) {
      if (line.coeff[d] == 0) continue;
      if (d >= launch_->range.size()) return std::nullopt;
      if (launch_->range[d] <= 0) return line;  // no points: nothing is touched
      const Wide far = Wide{line.coeff[d]} * (Wide{launch_->range[d]} - 1);
      lowest += std::min<Wide>(far, 0);
      highest += std::max<Wide>(far, 0);
    }
    const Wide widened =
        maximum ? std::max<Wide>(line.hi, Wide{bound.hi} - lowest) : std::min<Wide>(line.lo, Wide{bound.lo} - highest);
    if (widened < kMin || widened > kMax) return std::nullopt;
    const auto offset = static_cast<std::int64_t>(widened);
    return maximum ? DimFootprint::affine(line.coeff, line.lo, offset)
                   : DimFootprint::affine(line.coeff, offset, line.hi);
  }

  Bound cast(const Cast& node, int depth) {
    if (!node.operand) return std::nullopt;
    if (is_float(node.type)) return std::nullopt;
    if (is_float(node.operand->type)) {
      // A float literal converts by the IR's rules (round toward zero, saturate).
      if (!is_const(node.operand)) return node.type == ScalarType::Bool ? Bound{interval(0, 1)} : std::nullopt;
      return constant(make_const(node.type, node.operand->as<Const>().float_value)->as<Const>().int_value);
    }
    auto x = evaluate(node.operand, depth);
    if (node.type == ScalarType::Bool) {
      if (is_exact(x)) return constant(x.lo != 0 ? 1 : 0);
      return interval(0, 1);
    }
    // Between integer types (and from bool) the value is unchanged as long as
    // it fits; evaluate() drops i32 results whose offsets do not.
    return x.is_affine() ? Bound{x} : std::nullopt;
  }

  // ---- locals ----

  DimFootprint variable(const std::string& name, int depth) {
    if (auto it = variables_.find(name); it != variables_.end()) return it->second;
    auto defs = names_.find(name);
    if (defs == names_.end()) return DimFootprint::whole();              // not declared (the verifier rejects this)
    if (!evaluating_.insert(name).second) return DimFootprint::whole();  // defined through itself
    const Definitions& d = defs->second;
    DimFootprint value;
    if (d.loops.size() == 1 && d.decls == 0 && d.assigns == 0)
      value = loop_counter(*d.loops.front(), depth);
    else if (d.loops.empty() && d.decls == 1 && d.assigns == 0)
      value = evaluate(d.values.front(), depth);  // declared once, never assigned: look through
    else
      value = variable_reads_memory(name) ? DimFootprint::data_dependent() : DimFootprint::whole();
    evaluating_.erase(name);
    variables_.emplace(name, value);
    return value;
  }

  // The loop counters in `expr` when it takes both ends of its values (see
  // takes_both_ends); -1 when it may not.
  int counters_reaching_ends(const Expr& expr, int depth) {
    if (!expr || depth > kMaxDepth || !is_int(expr->type)) return -1;
    switch (expr->kind) {
      case ExprKind::Const:
      case ExprKind::Index: return 0;
      case ExprKind::Cast: {
        const auto& cast = expr->as<Cast>();
        return cast.operand->type == ScalarType::I32 && cast.type == ScalarType::I64
                   ? counters_reaching_ends(cast.operand, depth + 1)
                   : -1;
      }
      case ExprKind::Var: {
        auto defs = names_.find(expr->as<VarRef>().name);
        if (defs == names_.end()) return -1;
        const Definitions& d = defs->second;
        if (d.loops.size() == 1 && d.decls == 0 && d.assigns == 0) {
          const For& loop = *d.loops.front();
          const auto begin = evaluate(loop.begin, depth), end = evaluate(loop.end, depth);
          const bool exact = positive_step(loop) && begin.is_affine() && end.is_affine() && begin.coeff == end.coeff &&
                             begin.lo == begin.hi && end.lo == end.hi;
          return exact ? 1 : -1;
        }
        if (d.loops.empty() && d.decls == 1 && d.assigns == 0)
          return counters_reaching_ends(d.values.front(), depth + 1);
        return -1;
      }
      case ExprKind::Binary: {
        const auto& b = expr->as<Binary>();
        if (b.op == BinaryOp::Add || b.op == BinaryOp::Sub) {
          const int lhs = counters_reaching_ends(b.lhs, depth + 1), rhs = counters_reaching_ends(b.rhs, depth + 1);
          return lhs < 0 || rhs < 0 || lhs + rhs > 1 ? -1 : lhs + rhs;
        }
        if (b.op == BinaryOp::Mul) {
          if (is_exact(evaluate(b.lhs, depth))) return counters_reaching_ends(b.rhs, depth + 1);
          if (is_exact(evaluate(b.rhs, depth))) return counters_reaching_ends(b.lhs, depth + 1);
        }
        return -1;
      }
      default: return -1;
    }
  }

  static bool positive_step(const For& loop) {
    return is_const(loop.step) && is_int(loop.step->type) && loop.step->as<Const>().int_value > 0;
  }

  /// The values a loop counter takes: begin, begin+step, ... below end.
  DimFootprint loop_counter(const For& loop, int depth) {
    const auto begin = evaluate(loop.begin, depth), end = evaluate(loop.end, depth);
    const bool shapes_agree = begin.is_affine() && end.is_affine() && begin.coeff == end.coeff;
    if (!positive_step(loop) || !shapes_agree) {
      const bool memory = reads_memory(loop.begin) || reads_memory(loop.end) || reads_memory(loop.step);
      return memory ? DimFootprint::data_dependent() : DimFootprint::whole();
    }
    const std::int64_t step = loop.step->as<Const>().int_value;
    // A loop that never runs gives its counter no value; its body is skipped.
    if (end.hi <= begin.lo) return DimFootprint::affine(begin.coeff, begin.lo, begin.lo);
    const std::int64_t last_below_end = end.hi - 1;  // end.hi > begin.lo >= kMin, no overflow
    if (begin.lo == begin.hi && end.lo == end.hi) {
      // Exact bounds: the last value is begin + step * floor((end - 1 - begin) / step).
      if (auto span = checked_sub(last_below_end, begin.lo))
        return DimFootprint::affine(begin.coeff, begin.lo, begin.lo + *span / step * step);
    }
    return DimFootprint::affine(begin.coeff, begin.lo, last_below_end);
  }

  // ---- whether a value comes from memory ----

  bool variable_reads_memory(const std::string& name) {
    if (auto it = name_reads_memory_.find(name); it != name_reads_memory_.end()) return it->second;
    auto defs = names_.find(name);
    if (defs == names_.end() || !checking_.insert(name).second) return false;
    bool memory = false;
    for (const auto& v : defs->second.values) memory = memory || reads_memory(v);
    for (const For* loop : defs->second.loops)
      memory = memory || reads_memory(loop->begin) || reads_memory(loop->end) || reads_memory(loop->step);
    checking_.erase(name);
    name_reads_memory_.emplace(name, memory);
    return memory;
  }

  /// True when `root` involves a Load, directly or through locals. Iterative
  /// (explicit stack) and memoised per node, so deep or shared trees are cheap.
  bool reads_memory(const Expr& root) {
    if (!root) return false;
    std::vector<std::pair<const ExprNode*, bool>> stack{{root.get(), false}};
    while (!stack.empty()) {
      auto [node, expanded] = stack.back();
      if (node_reads_memory_.count(node)) {
        stack.pop_back();
        continue;
      }
      if (!expanded) {
        stack.back().second = true;
        for_each_child(*node, [&](const Expr& child) {
          if (child && !node_reads_memory_.count(child.get())) stack.emplace_back(child.get(), false);
        });
        continue;
      }
      stack.pop_back();
      bool memory = node->kind == ExprKind::Load ||
                    (node->kind == ExprKind::Var && variable_reads_memory(node->as<VarRef>().name));
      for_each_child(*node, [&](const Expr& child) {
        if (child) memory = memory || node_reads_memory_.at(child.get());
      });
      node_reads_memory_.emplace(node, memory);
    }
    return node_reads_memory_.at(root.get());
  }

  const Kernel& kernel_;
  const LaunchValues* launch_;
  FootprintInputs* inputs_;
  std::unordered_map<std::string, Definitions> names_;
  std::unordered_map<const ExprNode*, DimFootprint> values_;
  std::unordered_map<std::string, DimFootprint> variables_;
  std::unordered_set<std::string> evaluating_;
  std::unordered_map<const ExprNode*, bool> node_reads_memory_;
  std::unordered_map<std::string, bool> name_reads_memory_;
  std::unordered_set<std::string> checking_;
};

// ---- the walk over the body, recording each access site --------------------

class SiteScan : public Visitor {
 public:
  SiteScan(const Kernel& kernel, Footprint& footprint, const LaunchValues* values = nullptr,
           FootprintInputs* inputs = nullptr)
      : kernel_(kernel), footprint_(footprint), evaluator_(kernel, values, inputs) {
    for (std::size_t i = 0; i < footprint_.arrays.size(); ++i)
      slot_of_param_[footprint_.arrays[i].param] = static_cast<int>(i);
  }

  /// Sets `unconditional` and the sure sites on the reads from what the walk saw.
  void finish() {
    for (auto& a : footprint_.arrays) a.reads.unconditional = a.reads.present;
    for (const auto& [load, conditional] : load_conditional_) {
      auto& reads = footprint_.arrays[static_cast<std::size_t>(slot_of_param_.at(load->param))].reads;
      if (conditional)
        reads.unconditional = false;
      else
        add_sure_site(reads, load->indices);
    }
  }

 protected:
  void visit(const Decl& node) override { scan(node.init); }
  void visit(const Assign& node) override { scan(node.value); }
  void visit(const Reduce& node) override { scan(node.value); }
  void visit(const Store& node) override {
    // Its twin in the other branch covers the rest: the write is as good as
    // unconditional, but not the loads of either branch's value.
    write(node.param, node.indices, node.value, false, conditional_ && !both_branches_.count(&node));
  }
  void visit(const AtomicAdd& node) override { write(node.param, node.indices, node.value, true, conditional_); }

  void visit(const If& node) override {
    scan(node.cond);
    if (is_const(node.cond) && !is_float(node.cond->type)) {  // a literal condition picks one side
      walk(node.cond->as<Const>().int_value != 0 ? node.then_body : node.else_body);
      return;
    }
    const bool outer = conditional_;
    if (!outer) mark_stores_in_both_branches(node);
    conditional_ = true;
    walk(node.then_body);
    walk(node.else_body);
    conditional_ = outer;
  }

  void visit(const For& node) override {
    scan(node.begin);
    scan(node.end);
    scan(node.step);
    const Trips trips = evaluator_.trips(node);
    if (trips == Trips::Never) return;  // its sites touch nothing
    const bool outer = conditional_;
    conditional_ = outer || trips == Trips::Maybe;
    walk(node.body);
    conditional_ = outer;
  }

 private:
  /// The Stores directly in both branches of an If to the same array at the
  /// same indices (a stencil's interior and boundary cases): every point
  /// writes that element whichever branch it takes, so the write is as good as
  /// unconditional.
  void mark_stores_in_both_branches(const If& node) {
    auto stores_of = [](const Stmt& body) {
      std::vector<const Store*> stores;
      if (body && body->kind == StmtKind::Block)
        for (const auto& s : body->as<Block>().stmts)
          if (s && s->kind == StmtKind::Store) stores.push_back(&s->as<Store>());
      return stores;
    };
    const auto then_stores = stores_of(node.then_body), else_stores = stores_of(node.else_body);
    for (const Store* a : then_stores)
      for (const Store* b : else_stores)
        if (a->param == b->param && same_indices(a->indices, b->indices)) {
          both_branches_.insert(a);
          both_branches_.insert(b);
        }
  }

  static bool same_indices(const std::vector<Expr>& a, const std::vector<Expr>& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
      if (!passes_internal::equal(a[i], b[i])) return false;
    return true;
  }

  ArrayFootprint* array_of(int param) {
    auto it = slot_of_param_.find(param);
    return it == slot_of_param_.end() ? nullptr : &footprint_.arrays[static_cast<std::size_t>(it->second)];
  }

  /// Adds one site's indices to an access.
  void record(AccessFootprint& access, int param, const std::vector<Expr>& indices) {
    const bool first = !access.present;
    if (first) {
      access.present = true;
      access.dims.assign(
          static_cast<std::size_t>(std::clamp(kernel_.params[static_cast<std::size_t>(param)].rank, 0, 3)),
          DimFootprint::whole());
    }
    ++access.sites;
    for (std::size_t d = 0; d < access.dims.size(); ++d) {
      const DimFootprint v = d < indices.size() ? evaluator_.evaluate(indices[d]) : DimFootprint::whole();
      access.dims[d] = first ? v : join(access.dims[d], v);
    }
  }

  /// Adds a site every point performs to `access.sure_sites` (once). A
  /// dimension whose every point takes both ends of its interval (a loop's
  /// counter) gives two sites, one at each end: each is then a position
  /// every point touches.
  void add_sure_site(AccessFootprint& access, const std::vector<Expr>& indices) {
    std::vector<DimFootprint> site, at_low, at_high;
    bool ends = false;
    for (std::size_t d = 0; d < access.dims.size(); ++d) {
      const DimFootprint v = d < indices.size() ? evaluator_.evaluate(indices[d]) : DimFootprint::whole();
      site.push_back(v);
      at_low.push_back(v);
      at_high.push_back(v);
      if (v.is_affine() && v.lo != v.hi && evaluator_.takes_both_ends(indices[d])) {
        at_low.back().hi = v.lo;
        at_high.back().lo = v.hi;
        ends = true;
      }
    }
    auto add = [&](std::vector<DimFootprint> one) {
      if (std::find(access.sure_sites.begin(), access.sure_sites.end(), one) == access.sure_sites.end())
        access.sure_sites.push_back(std::move(one));
    };
    if (!ends) return add(std::move(site));
    add(std::move(at_low));
    add(std::move(at_high));
  }

  void write(int param, const std::vector<Expr>& indices, const Expr& value, bool atomic, bool conditional) {
    for (const auto& i : indices) scan(i);
    scan(value);
    ArrayFootprint* array = array_of(param);
    if (!array) return;
    auto& writes = array->writes;
    const bool first = !writes.present;
    record(writes, param, indices);
    writes.unconditional = (first || writes.unconditional) && !conditional;
    writes.atomic = writes.atomic || atomic;
    writes.atomic_sites += atomic ? 1 : 0;
    if (!conditional) add_sure_site(writes, indices);
  }

  /// Records every Load in `root`. Each node is walked at most twice (once
  /// under a condition, once without), so shared subtrees stay cheap.
  void scan(const Expr& root) {
    std::vector<const ExprNode*> stack;
    if (root) stack.push_back(root.get());
    while (!stack.empty()) {
      const ExprNode* node = stack.back();
      stack.pop_back();
      auto [it, fresh] = seen_unconditionally_.emplace(node, !conditional_);
      if (!fresh) {
        if (it->second || conditional_) continue;  // nothing new to learn
        it->second = true;
      }
      if (node->kind == ExprKind::Load) read(node->as<Load>());
      for_each_child(*node, [&](const Expr& child) {
        if (child) stack.push_back(child.get());
      });
    }
  }

  void read(const Load& load) {
    ArrayFootprint* array = array_of(load.param);
    if (!array) return;
    auto [it, fresh] = load_conditional_.emplace(&load, conditional_);
    if (fresh)
      record(array->reads, load.param, load.indices);
    else
      it->second = it->second && conditional_;
  }

  const Kernel& kernel_;
  Footprint& footprint_;
  IndexEvaluator evaluator_;
  std::unordered_map<int, int> slot_of_param_;
  bool conditional_ = false;
  std::unordered_set<const Store*> both_branches_;
  std::unordered_map<const ExprNode*, bool> seen_unconditionally_;
  std::unordered_map<const Load*, bool> load_conditional_;
};

std::string describe_access(const AccessFootprint& access) {
  std::string text;
  for (std::size_t d = 0; d < access.dims.size(); ++d) {
    if (d > 0) text += ' ';
    text += "dim" + std::to_string(d) + ' ' + describe(access.dims[d]);
  }
  return text;
}

std::string describe_array(const ArrayFootprint& array, const std::string& name) {
  std::string text = name + ": ";
  if (!array.reads.present && !array.writes.present) return text + "unused";
  if (array.reads.present) text += "read " + describe_access(array.reads);
  if (array.writes.present) {
    if (array.reads.present) text += "; ";
    text += "written";
    if (array.writes.atomic) text += " atomically";
    if (!array.writes.unconditional) text += " conditionally";
    text += ' ' + describe_access(array.writes);
  }
  return text;
}

}  // namespace

std::string_view name_of(IndexPattern pattern) {
  switch (pattern) {
    case IndexPattern::Affine: return "affine";
    case IndexPattern::Whole: return "whole";
    case IndexPattern::DataDependent: return "data-dependent";
  }
  return "?";
}

DimFootprint DimFootprint::affine(std::array<std::int64_t, 3> coeff, std::int64_t lo, std::int64_t hi) {
  return DimFootprint{IndexPattern::Affine, coeff, lo, hi};
}
DimFootprint DimFootprint::whole() { return DimFootprint{IndexPattern::Whole, {}, 0, 0}; }
DimFootprint DimFootprint::data_dependent() { return DimFootprint{IndexPattern::DataDependent, {}, 0, 0}; }

const ArrayFootprint* Footprint::of(int param) const {
  for (const auto& a : arrays)
    if (a.param == param) return &a;
  return nullptr;
}

bool at_own_point(const AccessFootprint& access, int dims) {
  if (!access.present || access.atomic || access.dims.size() != static_cast<std::size_t>(dims)) return false;
  for (std::size_t d = 0; d < access.dims.size(); ++d) {
    const DimFootprint& dim = access.dims[d];
    if (!dim.is_affine() || dim.lo != 0 || dim.hi != 0) return false;
    for (std::size_t k = 0; k < dim.coeff.size(); ++k)
      if (dim.coeff[k] != (k == d ? 1 : 0)) return false;
  }
  return true;
}

namespace {

Footprint analyse(const Kernel& kernel, const LaunchValues* values, FootprintInputs* inputs) {
  Footprint footprint;
  for (std::size_t p = 0; p < kernel.params.size(); ++p)
    if (kernel.params[p].is_array()) {
      ArrayFootprint array;
      array.param = static_cast<int>(p);
      array.name = kernel.params[p].name;
      footprint.arrays.push_back(std::move(array));
    }
  SiteScan scan(kernel, footprint, values, inputs);
  scan.walk(kernel.body);
  scan.finish();
  return footprint;
}

}  // namespace

Footprint footprint_of(const Kernel& kernel) { return analyse(kernel, nullptr, nullptr); }

Footprint footprint_of(const Kernel& kernel, const LaunchValues& values) { return analyse(kernel, &values, nullptr); }

FootprintInputs footprint_inputs(const Kernel& kernel) {
  // Bound to stand-in values, every index is evaluated as far as a launch's
  // values would take it, and each scalar and extent it reaches is noted.
  LaunchValues stand_in;
  for (const Param& param : kernel.params) {
    stand_in.scalars.push_back(param.kind == ParamKind::Scalar ? std::optional<std::int64_t>(1) : std::nullopt);
    stand_in.extents.emplace_back(static_cast<std::size_t>(param.is_array() ? param.rank : 0), 1);
  }
  FootprintInputs inputs;
  analyse(kernel, &stand_in, &inputs);
  return inputs;
}

ArrayFootprint footprint_of(const Kernel& kernel, int param) {
  if (param < 0 || static_cast<std::size_t>(param) >= kernel.params.size())
    throw Error("footprint_of: kernel '" + kernel.name + "' has no parameter number " + std::to_string(param) +
                " (it has " + std::to_string(kernel.params.size()) + "); pass the position of an array parameter");
  const Param& p = kernel.params[static_cast<std::size_t>(param)];
  if (!p.is_array())
    throw Error("footprint_of: parameter " + std::to_string(param) + " ('" + p.name + "') of kernel '" + kernel.name +
                "' is a " + std::string(name_of(p.kind)) + ", not an array; pass the position of an array parameter");
  return *footprint_of(kernel).of(param);
}

Interval rows_touched(const AccessFootprint& access, int dim, std::int64_t begin, std::int64_t end,
                      std::int64_t extent) {
  if (!access.present || begin >= end || extent <= 0) return {};
  if (dim < 0 || static_cast<std::size_t>(dim) >= access.dims.size())
    throw Error("rows_touched: dimension " + std::to_string(dim) + " is out of range for an access of rank " +
                std::to_string(access.dims.size()) + "; pass a dimension from 0 to " +
                std::to_string(static_cast<int>(access.dims.size()) - 1));
  const DimFootprint& f = access.dims[static_cast<std::size_t>(dim)];
  if (!f.is_affine() || f.coeff[1] != 0 || f.coeff[2] != 0) return {0, extent};
  // Point i touches the window [c*i + lo, c*i + hi]. With j = sign(c) * i the
  // windows move up with j, so the points whose window meets [0, extent) are
  // the j in [j_first, j_last] below, and the hull of what they touch is exact.
  const Wide c = f.coeff[0], lo = f.lo, hi = f.hi, last_row = Wide{extent} - 1;
  if (c == 0) return clamp_rows(lo, hi, extent);
  const Wide step = c > 0 ? c : -c;
  const Wide j_begin = c > 0 ? Wide{begin} : -(Wide{end} - 1), j_end = c > 0 ? Wide{end} - 1 : -Wide{begin};
  const Wide j_first = std::max(j_begin, ceil_div(-hi, step));          // step*j + hi >= 0
  const Wide j_last = std::min(j_end, floor_div(last_row - lo, step));  // step*j + lo <= extent - 1
  if (j_first > j_last) return {};
  return clamp_rows(step * j_first + lo, step * j_last + hi, extent);
}

std::string describe(const DimFootprint& dim) {
  if (!dim.is_affine()) return std::string(name_of(dim.pattern));
  std::string text;
  for (std::size_t d = 0; d < dim.coeff.size(); ++d) {
    const std::int64_t c = dim.coeff[d];
    if (c == 0) continue;
    if (c < 0)
      text += '-';
    else if (!text.empty())
      text += '+';
    // The magnitude without negating kMin.
    const std::string magnitude = c < 0 ? std::to_string(c).substr(1) : std::to_string(c);
    if (magnitude != "1") text += magnitude + '*';
    text += 'i' + std::to_string(d);
  }
  if (dim.lo != dim.hi) {
    const std::string range = '[' + std::to_string(dim.lo) + ',' + std::to_string(dim.hi) + ']';
    return text.empty() ? range : text + '+' + range;
  }
  if (text.empty()) return std::to_string(dim.lo);
  if (dim.lo > 0) return text + '+' + std::to_string(dim.lo);
  if (dim.lo < 0) return text + std::to_string(dim.lo);
  return text;
}

std::string describe(const AccessFootprint& access) {
  return access.present ? describe_access(access) : std::string("none");
}

std::string describe(const ArrayFootprint& array) { return describe_array(array, array.name); }

std::string describe(const Footprint& footprint, const Kernel& kernel) {
  std::string text;
  for (const auto& array : footprint.arrays) {
    const bool named = array.param >= 0 && static_cast<std::size_t>(array.param) < kernel.params.size();
    if (!text.empty()) text += '\n';
    text += describe_array(array, named ? kernel.params[static_cast<std::size_t>(array.param)].name : array.name);
  }
  return text;
}

std::ostream& operator<<(std::ostream& out, IndexPattern pattern) { return out << name_of(pattern); }
std::ostream& operator<<(std::ostream& out, const DimFootprint& dim) { return out << describe(dim); }
std::ostream& operator<<(std::ostream& out, const AccessFootprint& access) { return out << describe(access); }
std::ostream& operator<<(std::ostream& out, const Interval& interval) {
  return out << '[' << interval.begin << ',' << interval.end << ')';
}
std::ostream& operator<<(std::ostream& out, const Footprint& footprint) {
  for (std::size_t i = 0; i < footprint.arrays.size(); ++i) {
    if (i > 0) out << '\n';
    out << describe(footprint.arrays[i]);
  }
  return out;
}

}  // namespace canopy::ir
