#include "cost.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "../visitor.hpp"
#include "footprint.hpp"

namespace canopy::ir {

namespace {

// ---- operation counts -------------------------------------------------------

/// Operations and access-site executions per point, before bytes.
struct Tally {
  double f32 = 0;
  double f64 = 0;
  double ints = 0;
  std::vector<double> reads;   ///< executions of load sites, by parameter position
  std::vector<double> writes;  ///< executions of store and atomic sites, by parameter position

  explicit Tally(std::size_t params = 0) : reads(params, 0.0), writes(params, 0.0) {}

  void add(const Tally& other, double times) {
    f32 += other.f32 * times;
    f64 += other.f64 * times;
    ints += other.ints * times;
    for (std::size_t p = 0; p < reads.size(); ++p) {
      reads[p] += other.reads[p] * times;
      writes[p] += other.writes[p] * times;
    }
  }

  /// Each count the larger of the two (the costlier branch of an If).
  static Tally larger(const Tally& a, const Tally& b) {
    Tally r(a.reads.size());
    r.f32 = std::max(a.f32, b.f32);
    r.f64 = std::max(a.f64, b.f64);
    r.ints = std::max(a.ints, b.ints);
    for (std::size_t p = 0; p < r.reads.size(); ++p) {
      r.reads[p] = std::max(a.reads[p], b.reads[p]);
      r.writes[p] = std::max(a.writes[p], b.writes[p]);
    }
    return r;
  }
};

/// Locals declared once and never assigned: their initial values, by name.
class SingleDefinitions : public Visitor {
 public:
  std::unordered_map<std::string, Expr> values;
  std::unordered_set<std::string> excluded;

 protected:
  void visit(const Decl& node) override {
    if (excluded.count(node.name)) return;
    if (!values.emplace(node.name, node.init).second) exclude(node.name);
  }
  void visit(const Assign& node) override { exclude(node.name); }
  void visit(const For& node) override {
    exclude(node.var);
    walk(node.body);
  }
  void visit(const Store&) override {}
  void visit(const AtomicAdd&) override {}
  void visit(const Reduce&) override {}

 private:
  void exclude(const std::string& name) {
    values.erase(name);
    excluded.insert(name);
  }
};

/// Walks a kernel body counting operations and site executions per point.
class Counter {
 public:
  Counter(const Kernel& kernel, const CostOptions& options) : kernel_(kernel), options_(options) {
    SingleDefinitions scan;
    scan.walk(kernel.body);
    locals_ = std::move(scan.values);
  }

  Tally count(const Stmt& stmt) {
    Tally t(kernel_.params.size());
    if (!stmt) return t;
    switch (stmt->kind) {
      case StmtKind::Block:
        for (const auto& s : stmt->as<Block>().stmts) t.add(count(s), 1.0);
        break;
      case StmtKind::Decl: expression(t, {stmt->as<Decl>().init}); break;
      case StmtKind::Assign: expression(t, {stmt->as<Assign>().value}); break;
      case StmtKind::Store: {
        const auto& s = stmt->as<Store>();
        std::vector<Expr> roots = s.indices;
        roots.push_back(s.value);
        expression(t, roots);
        site(t.writes, s.param);
        break;
      }
      case StmtKind::AtomicAdd: {
        const auto& s = stmt->as<AtomicAdd>();
        std::vector<Expr> roots = s.indices;
        roots.push_back(s.value);
        expression(t, roots);
        site(t.writes, s.param);
        if (s.value) operation(t, s.value->type, options_.weights.add);
        break;
      }
      case StmtKind::Reduce: {
        const auto& r = stmt->as<Reduce>();
        expression(t, {r.value});
        if (r.value) {
          const bool sum =
              valid_param(r.param) && kernel_.params[static_cast<std::size_t>(r.param)].reduce == ReduceOp::Sum;
          operation(t, r.value->type, sum ? options_.weights.add : options_.weights.min_max);
        }
        break;
      }
      case StmtKind::If: {
        const auto& node = stmt->as<If>();
        expression(t, {node.cond});
        t.add(Tally::larger(count(node.then_body), count(node.else_body)), 1.0);
        break;
      }
      case StmtKind::For: {
        const auto& loop = stmt->as<For>();
        expression(t, {loop.begin, loop.end, loop.step});
        const double trips = trip_count(loop);
        loops_.push_back({loop.var, middle_of(loop)});
        Tally body = count(loop.body);
        loops_.pop_back();
        body.ints += 2;  // increment and test
        t.add(body, trips);
        break;
      }
    }
    return t;
  }

  /// The loop's trip count: from its bounds, the caller, or the default.
  double trip_count(const For& loop) {
    if (auto it = options_.trip_counts.find(loop.var); it != options_.trip_counts.end())
      return std::max(0.0, it->second);
    const auto begin = value_of(loop.begin), end = value_of(loop.end), step = value_of(loop.step);
    if (begin && end && step && *step > 0) return std::max(0.0, std::ceil((*end - *begin) / *step));
    return std::max(0.0, options_.default_trip_count);
  }

 private:
  bool valid_param(int p) const { return p >= 0 && static_cast<std::size_t>(p) < kernel_.params.size(); }

  void site(std::vector<double>& executions, int param) {
    if (valid_param(param)) executions[static_cast<std::size_t>(param)] += 1;
  }

  /// Adds `weight` flops of a float type, or one integer operation.
  static void operation(Tally& t, ScalarType type, double weight) {
    if (type == ScalarType::F32)
      t.f32 += weight;
    else if (type == ScalarType::F64)
      t.f64 += weight;
    else
      t.ints += 1;
  }

  /// Counts the operations of the trees in `roots`, each node once, and the
  /// Loads among them as read-site executions.
  void expression(Tally& t, const std::vector<Expr>& roots) {
    std::unordered_set<const ExprNode*> seen;
    std::vector<const ExprNode*> stack;
    for (const auto& r : roots)
      if (r) stack.push_back(r.get());
    while (!stack.empty()) {
      const ExprNode* node = stack.back();
      stack.pop_back();
      if (!seen.insert(node).second) continue;
      node_operations(t, *node);
      auto push = [&](const Expr& child) {
        if (child) stack.push_back(child.get());
      };
      switch (node->kind) {
        case ExprKind::Load:
          site(t.reads, node->as<Load>().param);
          for (const auto& i : node->as<Load>().indices) push(i);
          break;
        case ExprKind::Unary: push(node->as<Unary>().operand); break;
        case ExprKind::Binary:
          push(node->as<Binary>().lhs);
          push(node->as<Binary>().rhs);
          break;
        case ExprKind::Compare:
          push(node->as<Compare>().lhs);
          push(node->as<Compare>().rhs);
          break;
        case ExprKind::Cast: push(node->as<Cast>().operand); break;
        case ExprKind::Call:
          for (const auto& a : node->as<Call>().args) push(a);
          break;
        case ExprKind::Select:
          push(node->as<Select>().cond);
          push(node->as<Select>().if_true);
          push(node->as<Select>().if_false);
          break;
        default: break;
      }
    }
  }

  void node_operations(Tally& t, const ExprNode& node) {
    const OpWeights& w = options_.weights;
    switch (node.kind) {
      case ExprKind::Unary:
        if (is_float(node.type))
          operation(t, node.type, w.add);
        else
          t.ints += 1;
        break;
      case ExprKind::Binary: {
        if (!is_float(node.type)) {
          t.ints += 1;
          break;
        }
        switch (node.as<Binary>().op) {
          case BinaryOp::Add:
          case BinaryOp::Sub: operation(t, node.type, w.add); break;
          case BinaryOp::Mul: operation(t, node.type, w.mul); break;
          case BinaryOp::Div:
          case BinaryOp::Rem: operation(t, node.type, w.div); break;
          case BinaryOp::Min:
          case BinaryOp::Max: operation(t, node.type, w.min_max); break;
          default: operation(t, node.type, 1.0); break;
        }
        break;
      }
      case ExprKind::Compare: {
        const auto& c = node.as<Compare>();
        const ScalarType operand = c.lhs ? c.lhs->type : ScalarType::I64;
        if (is_float(operand))
          operation(t, operand, w.compare);
        else
          t.ints += 1;
        break;
      }
      case ExprKind::Call: {
        if (!is_float(node.type)) {
          t.ints += 1;
          break;
        }
        operation(t, node.type, weight_of(node.as<Call>().fn));
        break;
      }
      default: break;
    }
  }

  double weight_of(MathFn fn) const {
    const OpWeights& w = options_.weights;
    switch (fn) {
      case MathFn::Sqrt: return w.sqrt;
      case MathFn::Exp: return w.exp;
      case MathFn::Log: return w.log;
      case MathFn::Sin: return w.sin;
      case MathFn::Cos: return w.cos;
      case MathFn::Floor: return w.floor;
      case MathFn::Pow: return w.pow;
      case MathFn::Abs: return w.abs;
      case MathFn::Fma: return w.fma;
    }
    return 1.0;
  }

  /// The middle value a loop's counter takes, when its bounds are numbers.
  std::optional<double> middle_of(const For& loop) {
    const auto begin = value_of(loop.begin), end = value_of(loop.end);
    if (!begin || !end) return std::nullopt;
    if (*end <= *begin) return *begin;
    return (*begin + *end - 1) / 2;
  }

  /// The number an integer expression stands for (see the top of cost.hpp), if known.
  std::optional<double> value_of(const Expr& expr, int depth = 0) {
    if (!expr || depth > 200) return std::nullopt;
    switch (expr->kind) {
      case ExprKind::Const: return expr->as<Const>().as_double();
      case ExprKind::Index: {
        const int d = expr->as<Index>().dim;
        if (d < 0 || d > 2 || options_.range[static_cast<std::size_t>(d)] <= 0) return std::nullopt;
        return static_cast<double>(options_.range[static_cast<std::size_t>(d)] - 1) / 2;
      }
      case ExprKind::Param: {
        auto it = options_.scalar_values.find(expr->as<ParamRef>().param);
        return it == options_.scalar_values.end() ? std::nullopt : std::optional<double>(it->second);
      }
      case ExprKind::Extent: {
        const auto& e = expr->as<Extent>();
        auto it = options_.array_extents.find(e.param);
        if (it == options_.array_extents.end() || e.dim < 0 || static_cast<std::size_t>(e.dim) >= it->second.size())
          return std::nullopt;
        return static_cast<double>(it->second[static_cast<std::size_t>(e.dim)]);
      }
      case ExprKind::Var: {
        const auto& name = expr->as<VarRef>().name;
        for (auto it = loops_.rbegin(); it != loops_.rend(); ++it)
          if (it->first == name) return it->second;
        if (auto it = locals_.find(name); it != locals_.end()) return value_of(it->second, depth + 1);
        return std::nullopt;
      }
      case ExprKind::Cast: {
        auto v = value_of(expr->as<Cast>().operand, depth + 1);
        if (v && !is_float(expr->type)) v = std::trunc(*v);
        return v;
      }
      case ExprKind::Binary: {
        const auto& b = expr->as<Binary>();
        const auto x = value_of(b.lhs, depth + 1), y = value_of(b.rhs, depth + 1);
        if (!x || !y) return std::nullopt;
        const bool integer = !is_float(expr->type);
        switch (b.op) {
          case BinaryOp::Add: return *x + *y;
          case BinaryOp::Sub: return *x - *y;
          case BinaryOp::Mul: return *x * *y;
          case BinaryOp::Div:
            if (*y == 0) return 0.0;
            return integer ? std::trunc(*x / *y) : *x / *y;
          case BinaryOp::Min: return std::min(*x, *y);
          case BinaryOp::Max: return std::max(*x, *y);
          default: return std::nullopt;
        }
      }
      default: return std::nullopt;
    }
  }

  const Kernel& kernel_;
  const CostOptions& options_;
  std::unordered_map<std::string, Expr> locals_;
  /// Enclosing loops, innermost last: counter name and its middle value.
  std::vector<std::pair<std::string, std::optional<double>>> loops_;
};

// ---- bytes ------------------------------------------------------------------

struct Traffic {
  double bytes = 0;
  AccessPattern pattern = AccessPattern::None;
};

/// Bytes per point of one access (reads or writes) of one array.
class TrafficModel {
 public:
  TrafficModel(const Kernel& kernel, const CostOptions& options)
      : options_(options), dims_(std::clamp(kernel.dims, 1, 3)), line_(std::max(1, options.line_bytes)) {}

  /// `executions`: executions of the access's sites per point; `extents`:
  /// the array's extents when known (else empty).
  Traffic of(const AccessFootprint& access, double element, double executions,
             const std::vector<std::int64_t>& extents) const {
    if (!access.present || access.dims.empty()) return {};
    for (const auto& d : access.dims)
      if (d.pattern == IndexPattern::DataDependent)
        return cap({executions * line_, AccessPattern::Gather}, element, extents);
    return cap(along(access, element, executions, extents, dims_ - 1), element, extents);
  }

 private:
  static double width(const DimFootprint& d) { return static_cast<double>(d.hi) - static_cast<double>(d.lo) + 1; }
  static bool moves(const DimFootprint& d, int index) {
    return d.is_affine() && d.coeff[static_cast<std::size_t>(index)] != 0;
  }
  /// The fastest index dimension (at most `below`) that moves `d`, or -1.
  static int fastest_index(const DimFootprint& d, int below) {
    for (int i = below; i >= 0; --i)
      if (moves(d, i)) return i;
    return -1;
  }

  /// Extents of index dims (from, to], multiplied; nothing when one is unknown.
  std::optional<double> points_between(int from, int to) const {
    double n = 1;
    for (int i = from + 1; i <= to; ++i) {
      const auto extent = options_.range[static_cast<std::size_t>(i)];
      if (extent <= 0) return std::nullopt;
      n *= static_cast<double>(extent);
    }
    return n;
  }

  /// Bytes of the lines covering `elements` contiguous elements.
  double lines_for(double elements, double element) const { return std::ceil(elements * element / line_) * line_; }

  /// The cost per step of index dim `fastest`, the faster ones held still.
  Traffic along(const AccessFootprint& access, double element, double executions,
                const std::vector<std::int64_t>& extents, int fastest) const {
    const auto& dims = access.dims;
    const std::size_t inner = dims.size() - 1;
    const double sites = std::max(1, access.sites);

    bool any_moves = false;
    for (const auto& d : dims) any_moves = any_moves || moves(d, fastest);
    if (!any_moves && dims[inner].is_affine()) {
      // Held still by this index: reused by consecutive steps.
      int slower = -1;
      for (const auto& d : dims) slower = std::max(slower, fastest_index(d, fastest - 1));
      bool unbounded = false;
      for (const auto& d : dims) unbounded = unbounded || !d.is_affine();
      if (slower < 0 && !unbounded) {
        // Touches the same elements at every point: once per launch.
        const auto points = points_between(-1, dims_ - 1);
        double volume = lines_for(width(dims[inner]), element);
        for (std::size_t k = 0; k < inner; ++k) volume *= width(dims[k]);
        return {points ? volume / *points : 0.0, AccessPattern::Reused};
      }
      if (slower >= 0) {
        const auto steps = points_between(slower, fastest);
        const Traffic per_step = along(access, element, executions, extents, slower);
        return {steps ? per_step.bytes / *steps : 0.0, AccessPattern::Reused};
      }
    }

    Traffic t;
    const DimFootprint& last = dims[inner];
    bool column = false;
    for (std::size_t k = 0; k < inner; ++k) column = column || moves(dims[k], fastest);
    if (!last.is_affine()) {
      t = {executions * element, AccessPattern::Unbounded};
    } else if (column) {
      t = {lines_for(width(last), element), AccessPattern::Column};
    } else if (moves(last, fastest)) {
      const double stride = std::abs(static_cast<double>(last.coeff[static_cast<std::size_t>(fastest)]));
      const double w = width(last);
      const bool contiguous = stride * element <= line_ || w >= stride;
      t.bytes = contiguous ? stride * element : std::min(stride * element, lines_for(w, element));
      t.pattern = stride > 1 ? AccessPattern::Strided : (w > 1 ? AccessPattern::Stencil : AccessPattern::Streaming);
    } else {
      // Not moved by this index but by a slower one, with an unbounded outer dimension.
      t = {lines_for(width(last), element), AccessPattern::Unbounded};
    }

    // Outer dimensions from the fastest-varying (just outside the contiguous
    // one) outwards, so that the reuse test below sees the rows inside.
    for (std::size_t k = inner; k-- > 0;) {
      const DimFootprint& d = dims[k];
      if (!d.is_affine()) {
        double rows = std::max(1.0, executions / sites);
        if (k < extents.size() && extents[k] > 0) rows = std::min(rows, static_cast<double>(extents[k]));
        t.bytes *= rows;
        if (t.pattern != AccessPattern::Unbounded) t.pattern = AccessPattern::Unbounded;
        continue;
      }
      const double w = width(d);
      if (moves(d, fastest)) {
        t.bytes *= std::min(std::abs(static_cast<double>(d.coeff[static_cast<std::size_t>(fastest)])), w);
        continue;
      }
      const int index = fastest_index(d, fastest - 1);
      if (index < 0) {
        t.bytes *= w;  // rows no index moves: a stream each
        if (w > 1 && t.pattern == AccessPattern::Streaming) t.pattern = AccessPattern::Stencil;
        continue;
      }
      const double stride = std::abs(static_cast<double>(d.coeff[static_cast<std::size_t>(index)]));
      // The w rows live at once are reused by the next step of `index` when they fit.
      bool reused = true;
      if (options_.cache_bytes > 0)
        if (auto steps = points_between(index, fastest)) reused = w * t.bytes * *steps <= options_.cache_bytes;
      t.bytes *= reused ? std::min(stride, w) : w;
      if (w > 1 && t.pattern == AccessPattern::Streaming) t.pattern = AccessPattern::Stencil;
    }
    return t;
  }

  /// An array that fits in cache costs at most its size once per launch.
  Traffic cap(Traffic t, double element, const std::vector<std::int64_t>& extents) const {
    if (options_.cache_bytes <= 0 || extents.empty()) return t;
    const auto points = points_between(-1, dims_ - 1);
    if (!points || *points <= 0) return t;
    double bytes = element;
    for (auto e : extents) {
      if (e < 0) return t;
      bytes *= static_cast<double>(e);
    }
    if (bytes <= options_.cache_bytes) t.bytes = std::min(t.bytes, bytes / *points);
    return t;
  }

  const CostOptions& options_;
  int dims_;
  double line_;
};

std::string number(double value) {
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  return fmt::format("{:.4g}", value);
}

}  // namespace

std::string_view name_of(AccessPattern pattern) {
  switch (pattern) {
    case AccessPattern::None: return "none";
    case AccessPattern::Streaming: return "streaming";
    case AccessPattern::Strided: return "strided";
    case AccessPattern::Stencil: return "stencil";
    case AccessPattern::Column: return "column";
    case AccessPattern::Reused: return "reused";
    case AccessPattern::Gather: return "gather";
    case AccessPattern::Unbounded: return "unbounded";
  }
  return "?";
}

double KernelCost::intensity() const {
  if (bytes() > 0) return flops / bytes();
  return flops > 0 ? std::numeric_limits<double>::infinity() : 0.0;
}

std::string KernelCost::describe() const {
  std::string text = "per point: " + number(flops) + " flops";
  if (flops_f32 > 0 && flops_f64 > 0)
    text += " (f32 " + number(flops_f32) + ", f64 " + number(flops_f64) + ")";
  else if (flops_f32 > 0)
    text += " (f32)";
  else if (flops_f64 > 0)
    text += " (f64)";
  text += ", " + number(int_ops) + " int ops, " + number(loads) + " loads, " + number(stores) + " stores, " +
          number(bytes()) + " bytes (read " + number(bytes_read) + ", written " + number(bytes_written) +
          "); intensity " + number(intensity()) + " flop/byte";
  for (const auto& a : arrays) {
    if (a.read_pattern == AccessPattern::None && a.write_pattern == AccessPattern::None) continue;
    text += "\n  " + a.name + ":";
    if (a.read_pattern != AccessPattern::None)
      text += fmt::format(" read {} {} B", name_of(a.read_pattern), number(a.bytes_read - a.allocating_read));
    if (a.write_pattern != AccessPattern::None) {
      if (a.read_pattern != AccessPattern::None) text += ",";
      text += fmt::format(" written {} {} B", name_of(a.write_pattern), number(a.bytes_written));
    }
    if (a.allocating_read > 0) text += " + allocating read " + number(a.allocating_read) + " B";
  }
  return text;
}

KernelCost cost_of(const Kernel& kernel, const CostOptions& options) {
  Counter counter(kernel, options);
  const Tally tally = counter.count(kernel.body);
  KernelCost cost;
  cost.flops_f32 = tally.f32;
  cost.flops_f64 = tally.f64;
  cost.flops = tally.f32 + tally.f64;
  cost.int_ops = tally.ints;
  for (std::size_t p = 0; p < tally.reads.size(); ++p) {
    cost.loads += tally.reads[p];
    cost.stores += tally.writes[p];
  }

  const Footprint footprint = footprint_of(kernel);
  const TrafficModel traffic(kernel, options);
  static const std::vector<std::int64_t> unknown;
  for (const auto& array : footprint.arrays) {
    const auto p = static_cast<std::size_t>(array.param);
    const Param& param = kernel.params[p];
    const double element = static_cast<double>(size_of(param.type));
    auto known = options.array_extents.find(array.param);
    const auto& extents = known == options.array_extents.end() ? unknown : known->second;

    ArrayCost a;
    a.param = array.param;
    a.name = param.name;
    const Traffic read = traffic.of(array.reads, element, tally.reads[p], extents);
    const Traffic written = traffic.of(array.writes, element, tally.writes[p], extents);
    a.read_pattern = read.pattern;
    a.write_pattern = written.pattern;
    a.bytes_written = written.bytes;
    // Lines written that the loads did not bring in are read first.
    const bool streamed =
        options.streaming_stores && written.pattern == AccessPattern::Streaming && !array.reads.present;
    const bool allocates = array.writes.atomic || (options.write_allocate && !streamed);
    if (array.writes.present && allocates) a.allocating_read = std::max(0.0, written.bytes - read.bytes);
    a.bytes_read = read.bytes + a.allocating_read;
    cost.bytes_read += a.bytes_read;
    cost.bytes_written += a.bytes_written;
    cost.arrays.push_back(std::move(a));
  }
  return cost;
}

std::string describe_cost(const Kernel& kernel, const KernelCost& cost) {
  return "kernel " + kernel.name + " (dims " + std::to_string(kernel.dims) + "): " + cost.describe() + "\n";
}

std::ostream& operator<<(std::ostream& out, AccessPattern pattern) { return out << name_of(pattern); }
std::ostream& operator<<(std::ostream& out, const KernelCost& cost) { return out << cost.describe(); }

}  // namespace canopy::ir
