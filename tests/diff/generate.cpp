#include "generate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <deque>
#include <limits>
#include <optional>

#include <canopy/ir/expr.hpp>
#include <canopy/ir/stmt.hpp>
#include <canopy/ir/verifier.hpp>

namespace canopy::diff {

namespace {

using ir::BinaryOp;
using ir::Expr;
using ir::ScalarType;
using ir::Stmt;

constexpr ScalarType kTypes[] = {ScalarType::Bool, ScalarType::I32, ScalarType::I64, ScalarType::F32, ScalarType::F64};
constexpr ScalarType kNumeric[] = {ScalarType::I32, ScalarType::I64, ScalarType::F32, ScalarType::F64};

template <class T, std::size_t N>
T pick(Rng& rng, const T (&choices)[N]) {
  return choices[rng.below(N)];
}

Expr i64(std::int64_t v) { return ir::make_int(ScalarType::I64, v); }

// ---- the program: shapes and arrays -----------------------------------------

/// Arrays of rank r have the program's base extents for that rank plus 0 to
/// 2 in each dimension, so that kernels of one program share them.
class ProgramBuilder {
 public:
  ProgramBuilder(std::uint64_t seed, const GeneratorOptions& options)
      : rng_(seed), side_(seed * 0x9E3779B97F4A7C15ull + 0x5851F42D4C957F2Dull), options_(options) {
    program_.seed = seed;
    const double size = rng_.unit();
    base1_ = size < 0.25  ? rng_.between(1, 16)
             : size < 0.6 ? rng_.between(17, 300)
             : size < 0.9 ? rng_.between(301, 3000)
                          : rng_.between(3001, 20000);
    for (auto& b : base2_) b = rng_.between(1, 70);
    for (auto& b : base3_) b = rng_.between(1, 18);
  }

  Rng& rng() { return rng_; }
  /// The element-wise kernels' own stream of decisions.
  Rng& side() { return side_; }
  Program& program() { return program_; }
  const GeneratorOptions& options() const { return options_; }
  const ArraySpec& array(int k) const { return program_.arrays[static_cast<std::size_t>(k)]; }

  /// The base extents of a kernel or array of `rank` dimensions.
  std::vector<std::int64_t> base(int rank) const {
    if (rank == 1) return {base1_};
    if (rank == 2) return {base2_[0], base2_[1]};
    return {base3_[0], base3_[1], base3_[2]};
  }

  /// A Values array of `type` and `rank`: one the program has (not in
  /// `taken`), or a new one.
  int values(ScalarType type, int rank, const std::vector<int>& taken) {
    if (rng_.chance(0.65))
      if (auto found = find(
              [&](const ArraySpec& a) {
                return a.contents == Contents::Values && a.type == type && int(a.extents.size()) == rank;
              },
              taken))
        return *found;
    std::vector<std::int64_t> extents = base(rank);
    for (auto& e : extents) e += rng_.between(0, 2);
    return add(type, extents, Contents::Values, 0);
  }

  /// An i64 array of values below `bound` with at least `length` elements.
  int indices(std::int64_t bound, std::int64_t length, const std::vector<int>& taken) {
    if (auto found = find(
            [&](const ArraySpec& a) {
              return a.contents == Contents::Indices && a.bound == bound && a.extents[0] >= length;
            },
            taken))
      return *found;
    return add(ScalarType::I64, {length + rng_.between(0, 3)}, Contents::Indices, bound);
  }

  /// A permutation of [0, extent).
  int permutation(std::int64_t extent, const std::vector<int>& taken) {
    if (auto found = find(
            [&](const ArraySpec& a) { return a.contents == Contents::Permutation && a.extents[0] == extent; }, taken))
      return *found;
    return add(ScalarType::I64, {extent}, Contents::Permutation, 0);
  }

  std::string next_name(const char* prefix) { return fmt::format("{}{}", prefix, names_++); }

 private:
  template <class Match>
  std::optional<int> find(Match&& match, const std::vector<int>& taken) {
    std::vector<int> found;
    for (std::size_t k = 0; k < program_.arrays.size(); ++k)
      if (match(program_.arrays[k]) && std::find(taken.begin(), taken.end(), int(k)) == taken.end())
        found.push_back(int(k));
    if (found.empty()) return std::nullopt;
    return found[rng_.below(found.size())];
  }

  int add(ScalarType type, std::vector<std::int64_t> extents, Contents contents, std::int64_t bound) {
    ArraySpec a;
    a.name = fmt::format("a{}", program_.arrays.size());
    a.type = type;
    a.extents = std::move(extents);
    a.contents = contents;
    a.bound = bound;
    a.seed = rng_.next() >> 16;
    program_.arrays.push_back(a);
    return int(program_.arrays.size()) - 1;
  }

  Rng rng_;
  Rng side_;
  GeneratorOptions options_;
  Program program_;
  std::int64_t base1_ = 1;
  std::array<std::int64_t, 2> base2_{1, 1};
  std::array<std::int64_t, 3> base3_{1, 1, 1};
  int names_ = 0;
};

// ---- one kernel ------------------------------------------------------------------

/// How a kernel uses one of its array parameters (the rules that keep a
/// region from racing, see generate.hpp).
enum class Role { Read, Own, Atomic };

struct ArrayUse {
  int param = 0;
  int array = 0;
  Role role = Role::Read;
  std::vector<Expr> own;  ///< Own: the element of the point, one index per dimension
  bool read = false;
  bool written = false;
};

struct Local {
  std::string name;
  ScalarType type;
  bool assignable;
};

/// Inside an If that keeps index(dim) in [1, extent - 2]: neighbours at
/// offsets -1..1 along `dim` fit arrays at least `extent` long there.
struct Guard {
  int dim = 0;
  std::int64_t extent = 0;
};

class KernelBuilder {
 public:
  KernelBuilder(ProgramBuilder& program, int dims, std::vector<std::int64_t> range, bool elementwise = false)
      : program_(program), rng_(program.rng()), range_(std::move(range)), elementwise_(elementwise) {
    kernel_.name = program.next_name("k");
    kernel_.dims = dims;
  }

  /// The kernel, and the argument of each parameter (scalars drawn anew at each launch).
  std::shared_ptr<const ir::Kernel> build() {
    const int owners = elementwise_ ? 1 + int(rng_.below(2)) : rng_.chance(0.15) ? 0 : rng_.chance(0.7) ? 1 : 2;
    for (int k = 0; k < owners; ++k) add_owned();
    if (!elementwise_ && rng_.chance(owners == 0 ? 0.6 : 0.25)) add_atomic();
    const int reductions = owners == 0 && atomics_.empty() ? 1 + int(rng_.below(2)) : rng_.chance(0.3) ? 1 : 0;
    for (int k = 0; k < reductions; ++k) add_reduction();
    int budget = program_.options().max_statements;
    std::vector<Stmt> body = block(budget, 0);
    ensure_effects(body);
    kernel_.body = ir::make_block(std::move(body));
    for (const auto& use : uses_)
      kernel_.params[std::size_t(use.param)].access = use.role == Role::Read ? ir::Access::In
                                                      : use.read             ? ir::Access::InOut
                                                      : use.role == Role::Own
                                                          ? ir::Access::Out
                                                          : (rng_.chance(0.5) ? ir::Access::InOut : ir::Access::Out);
    ir::verify(kernel_);
    return std::make_shared<const ir::Kernel>(kernel_);
  }

  /// Launch arguments: arrays as they were bound, fresh scalars.
  std::vector<Argument> arguments() {
    std::vector<Argument> args;
    for (std::size_t p = 0; p < kernel_.params.size(); ++p) {
      const auto& param = kernel_.params[p];
      if (param.is_array())
        args.emplace_back(array_of_param_[p]);
      else if (param.is_scalar())
        args.emplace_back(fixed_[p] ? ir::RefValue::i64(*fixed_[p]) : random_value(param.type, rng_));
      else
        args.emplace_back(NoArgument{});
    }
    return args;
  }

 private:
  // ---- parameters

  int add_param(ir::Param param, int array) {
    kernel_.params.push_back(std::move(param));
    array_of_param_.push_back(array);
    fixed_.emplace_back();
    return int(kernel_.params.size()) - 1;
  }

  // The constant `value` in an index: a literal, or now and then an i64
  // scalar parameter that every launch of the kernel passes as `value`, which
  // the footprint learns only at the launch (`o[i + k]` splits over memories
  // as `o[i + 2]` does).
  Expr offset(std::int64_t value) {
    if (!rng_.chance(0.35)) return i64(value);
    const int p = add_param(ir::Param::scalar(program_.next_name("at"), ScalarType::I64), -1);
    fixed_[std::size_t(p)] = value;
    return ir::make_param(ScalarType::I64, p);
  }

  std::vector<int> arrays_in_use() const {
    std::vector<int> taken;
    for (const auto& use : uses_) taken.push_back(use.array);
    return taken;
  }

  ArrayUse& use_array(int array, Role role) {
    for (auto& use : uses_)
      if (use.array == array) return use;
    const auto& spec = program_.array(array);
    ArrayUse use;
    use.array = array;
    use.role = role;
    use.param = add_param(ir::Param::array(spec.name, spec.type, int(spec.extents.size()), ir::Access::In), array);
    uses_.push_back(use);
    return uses_.back();
  }

  // A scalar parameter of `type` (a new one now and then).
  Expr scalar(ScalarType type) {
    std::vector<int> have;
    for (std::size_t p = 0; p < kernel_.params.size(); ++p)
      if (kernel_.params[p].is_scalar() && kernel_.params[p].type == type) have.push_back(int(p));
    if (have.empty() || rng_.chance(0.3))
      have.push_back(add_param(ir::Param::scalar(program_.next_name("s"), type), -1));
    return ir::make_param(type, have[rng_.below(have.size())]);
  }

  void add_reduction() {
    const ScalarType type = pick(rng_, kNumeric);
    const ir::ReduceOp op = rng_.chance(0.5)   ? ir::ReduceOp::Sum
                            : rng_.chance(0.5) ? ir::ReduceOp::Min
                                               : ir::ReduceOp::Max;
    reductions_.push_back(add_param(ir::Param::reduction(program_.next_name("r"), type, op), -1));
  }

  // ---- the arrays a point writes

  int dims() const { return kernel_.dims; }
  std::int64_t range(int dim) const { return range_[std::size_t(dim)]; }

  // An array the kernel stores to at one element per point: an affine
  // one-to-one map from the kernel's dimensions to some of its dimensions
  // (offset, reversed or doubled), or a permutation along its first.
  void add_owned() {
    const ScalarType type = pick(rng_, kTypes);
    if (elementwise_) {
      // Mostly an array of a type the program has already, so that runs of
      // element-wise kernels write what the next one reads.
      ScalarType own_type = type;
      std::vector<ScalarType> present;
      for (const auto& a : program_.program().arrays)
        if (a.contents == Contents::Values && int(a.extents.size()) == dims()) present.push_back(a.type);
      if (!present.empty() && rng_.chance(0.7)) own_type = present[rng_.below(present.size())];
      const int array = program_.values(own_type, dims(), arrays_in_use());
      ArrayUse& use = use_array(array, Role::Own);
      if (use.role != Role::Own) return;
      use.own = own_point();
      owned_.push_back(array);
      return;
    }
    const int rank = int(rng_.between(dims(), 3));
    for (int attempt = 0; attempt < 4; ++attempt) {
      const int array =
          attempt < 3 ? program_.values(type, rank, arrays_in_use()) : program_.values(type, dims(), arrays_in_use());
      // A copy: one_to_one may add arrays (a permutation), which moves the specs.
      const std::vector<std::int64_t> extents = program_.array(array).extents;
      if (auto own = one_to_one(extents)) {
        ArrayUse& use = use_array(array, Role::Own);
        use.own = std::move(*own);
        owned_.push_back(array);
        return;
      }
    }
  }

  // index(0), index(1), ...: the point itself (element-wise kernels).
  std::vector<Expr> own_point() const {
    std::vector<Expr> indices;
    for (int d = 0; d < dims(); ++d) indices.push_back(ir::make_index(d));
    return indices;
  }

  // Indices for `extents` that give each point its own element, or nothing
  // when this shape cannot (too small along some dimension).
  std::optional<std::vector<Expr>> one_to_one(const std::vector<std::int64_t>& extents) {
    const int rank = int(extents.size());
    if (rank < dims()) return std::nullopt;
    std::vector<int> dim_of(std::size_t(rank), -1);  // the kernel dimension each array dimension follows
    std::vector<int> order(static_cast<std::size_t>(rank));
    for (int a = 0; a < rank; ++a) order[std::size_t(a)] = a;
    for (int a = rank - 1; a > 0; --a) std::swap(order[std::size_t(a)], order[rng_.below(std::uint64_t(a) + 1)]);
    for (int k = 0; k < dims(); ++k) dim_of[std::size_t(order[std::size_t(k)])] = k;
    std::vector<Expr> own(static_cast<std::size_t>(rank));
    bool scattered = false;
    for (int a = 0; a < rank; ++a) {
      const std::int64_t extent = extents[std::size_t(a)];
      const int k = dim_of[std::size_t(a)];
      if (k < 0) {
        own[std::size_t(a)] = i64(rng_.between(0, extent - 1));
        continue;
      }
      if (range(k) > extent) return std::nullopt;
      if (!scattered && rng_.chance(0.3)) {  // a permutation: extent values, each once
        scattered = true;
        const int perm = program_.permutation(extent, arrays_in_use());
        ArrayUse& use = use_array(perm, Role::Read);
        use.read = true;
        own[std::size_t(a)] = ir::make_load(ScalarType::I64, use.param, {ir::make_index(k)});
      } else {
        own[std::size_t(a)] = affine_one_to_one(k, extent);
      }
    }
    return own;
  }

  // index(k) + c, (last + c) - index(k) or 2 * index(k) + c: distinct
  // positions for distinct points, all inside [0, extent).
  Expr affine_one_to_one(int k, std::int64_t extent) {
    const std::int64_t room = extent - range(k);  // >= 0
    const std::int64_t c = rng_.between(0, std::min<std::int64_t>(room, 2));
    const double form = rng_.unit();
    if (form < 0.2) return ir::make_binary(BinaryOp::Sub, offset(range(k) - 1 + c), ir::make_index(k));
    if (form < 0.3 && 2 * (range(k) - 1) + c < extent)
      return ir::make_binary(BinaryOp::Add, ir::make_binary(BinaryOp::Mul, i64(2), ir::make_index(k)), offset(c));
    return c == 0 ? ir::make_index(k) : ir::make_binary(BinaryOp::Add, ir::make_index(k), offset(c));
  }

  void add_atomic() {
    const ScalarType type = pick(rng_, kNumeric);
    const int array = program_.values(type, int(rng_.between(1, 3)), arrays_in_use());
    use_array(array, Role::Atomic);
    atomics_.push_back(array);
  }

  // ---- reading arrays

  // An index into dimension `a` (extent `extent`) of an array the kernel only reads.
  Expr read_index(std::int64_t extent, int depth) {
    const double form = rng_.unit();
    const int k = int(rng_.below(std::uint64_t(dims())));
    if (form < 0.35 && range(k) <= extent) return affine_one_to_one(k, extent);
    if (form < 0.5 && !guards_.empty()) {
      const Guard& g = guards_[rng_.below(guards_.size())];
      if (g.extent <= extent) return ir::make_binary(BinaryOp::Add, ir::make_index(g.dim), i64(rng_.between(-1, 1)));
    }
    if (form < 0.6) {  // clamped into the array
      Expr shifted = ir::make_binary(BinaryOp::Add, ir::make_index(k), i64(rng_.between(-3, 3)));
      return ir::make_binary(BinaryOp::Min, ir::make_binary(BinaryOp::Max, shifted, i64(0)), offset(extent - 1));
    }
    if (form < 0.75 && depth > 0) {  // a gather through an index array
      const int idx = program_.indices(extent, program_.base(1)[0], arrays_in_use());
      ArrayUse& use = use_array(idx, Role::Read);
      use.read = true;
      const std::int64_t length = program_.array(idx).extents[0];
      return ir::make_load(ScalarType::I64, use.param, {read_index(length, 0)});
    }
    if (form < 0.8) return i64(rng_.between(0, extent - 1));
    // Wrapped: ((e % extent) + extent) % extent for any integer e.
    Expr e = depth > 0 ? widen(value(rng_.chance(0.5) ? ScalarType::I32 : ScalarType::I64, 2))
                       : ir::make_binary(BinaryOp::Mul, ir::make_index(k), i64(rng_.between(-7, 7)));
    Expr n = rng_.chance(0.5) ? i64(extent) : nullptr;
    return wrapped(e, n, extent);
  }

  Expr wrapped(const Expr& e, Expr n, std::int64_t extent) {
    if (!n) n = i64(extent);
    return ir::make_binary(BinaryOp::Rem, ir::make_binary(BinaryOp::Add, ir::make_binary(BinaryOp::Rem, e, n), n), n);
  }

  static Expr widen(const Expr& e) { return e->type == ScalarType::I64 ? e : ir::make_cast(ScalarType::I64, e); }

  // In a loop, the point's own row of a read-only array of rank 2 or 3,
  // walked by the loop: a[index(last)][(k % e1 + e1) % e1]... (the CPU's SIMD
  // lanes read such rows through a row block).
  std::optional<Expr> own_row(ScalarType type) {
    if (loop_vars_.empty()) return std::nullopt;
    const int last = dims() - 1;
    const int array = program_.values(type, int(rng_.between(2, 3)), arrays_in_use());
    const auto extents = program_.array(array).extents;
    if (range(last) > extents[0]) return std::nullopt;
    ArrayUse& use = use_array(array, Role::Read);
    if (use.role != Role::Read) return std::nullopt;
    use.read = true;
    const Local& counter = loop_vars_[rng_.below(loop_vars_.size())];
    std::vector<Expr> indices = {ir::make_index(last)};
    for (std::size_t d = 1; d < extents.size(); ++d)
      indices.push_back(d == 1 || rng_.chance(0.5)
                            ? wrapped(widen(ir::make_var(counter.type, counter.name)), nullptr, extents[d])
                            : i64(rng_.between(0, extents[d] - 1)));
    return ir::make_load(type, use.param, std::move(indices));
  }

  // A load of `type`: an owned array's own element, or any element of an
  // array the kernel only reads (a new parameter now and then).
  std::optional<Expr> load(ScalarType type, int depth) {
    if (!elementwise_ && !loop_vars_.empty() && rng_.chance(0.3))
      if (auto row = own_row(type)) return row;
    std::vector<ArrayUse*> owned;
    for (auto& use : uses_)
      if (use.role == Role::Own && program_.array(use.array).type == type) owned.push_back(&use);
    if (!owned.empty() && rng_.chance(0.3)) {
      ArrayUse& use = *owned[rng_.below(owned.size())];
      use.read = true;
      return ir::make_load(type, use.param, use.own);
    }
    int array = -1;
    for (auto& use : uses_)
      if (use.role == Role::Read && program_.array(use.array).type == type &&
          program_.array(use.array).contents == Contents::Values && rng_.chance(0.6))
        array = use.array;
    std::vector<int> taken = arrays_in_use();
    if (elementwise_ && array >= 0 && int(program_.array(array).extents.size()) != dims()) array = -1;
    if (array < 0) array = program_.values(type, elementwise_ ? dims() : int(rng_.between(1, 3)), taken);
    ArrayUse& use = use_array(array, Role::Read);
    if (use.role != Role::Read) return std::nullopt;
    use.read = true;
    if (elementwise_) return ir::make_load(type, use.param, own_point());
    const auto extents = program_.array(array).extents;
    std::vector<Expr> indices;
    for (std::int64_t e : extents) indices.push_back(read_index(e, depth));
    return ir::make_load(type, use.param, std::move(indices));
  }

  // ---- values

  Expr value(ScalarType type, int depth) {
    if (depth <= 0 || rng_.chance(0.25)) return leaf(type, depth);
    switch (type) {
      case ScalarType::Bool: return boolean(depth);
      case ScalarType::I32:
      case ScalarType::I64: return integer(type, depth);
      case ScalarType::F32:
      case ScalarType::F64: return floating(type, depth);
    }
    return leaf(type, depth);
  }

  Expr leaf(ScalarType type, int depth) {
    const double draw = rng_.unit();
    std::vector<const Local*> vars;
    for (const auto& local : locals_)
      if (local.type == type) vars.push_back(&local);
    if (draw < 0.25 && !vars.empty()) {
      const Local& v = *vars[rng_.below(vars.size())];
      return ir::make_var(v.type, v.name);
    }
    if (draw < 0.5)
      if (auto l = load(type, depth)) return *l;
    if (draw < 0.6) return scalar(type);
    if (ir::is_int(type) && draw < 0.8) {
      Expr position =
          rng_.chance(0.8) ? ir::make_index(int(rng_.below(std::uint64_t(dims())))) : extent_of_some_array();
      return type == ScalarType::I64 ? position : ir::make_cast(type, position);
    }
    return literal(type);
  }

  Expr extent_of_some_array() {
    const ArrayUse& use = uses_.empty() ? use_array(program_.values(ScalarType::F64, 1, {}), Role::Read)
                                        : uses_[rng_.below(uses_.size())];
    const int rank = kernel_.params[std::size_t(use.param)].rank;
    return ir::make_extent(use.param, int(rng_.below(std::uint64_t(rank))));
  }

  Expr literal(ScalarType type) {
    const ir::RefValue v = random_value(type, rng_);
    return ir::is_float(type) ? ir::make_const(type, v.f) : ir::make_int(type, v.i);
  }

  Expr boolean(int depth) {
    const double draw = rng_.unit();
    if (draw < 0.5) {
      const ScalarType t = pick(rng_, kTypes);
      const ir::CompareOp op = t == ScalarType::Bool ? (rng_.chance(0.5) ? ir::CompareOp::Eq : ir::CompareOp::Ne)
                                                     : static_cast<ir::CompareOp>(rng_.below(6));
      return ir::make_compare(op, value(t, depth - 1), value(t, depth - 1));
    }
    if (draw < 0.75) {
      const BinaryOp op = static_cast<BinaryOp>(int(BinaryOp::And) + int(rng_.below(3)));
      return ir::make_binary(op, value(ScalarType::Bool, depth - 1), value(ScalarType::Bool, depth - 1));
    }
    if (draw < 0.85) return ir::make_unary(ir::UnaryOp::Not, value(ScalarType::Bool, depth - 1));
    if (draw < 0.95) return ir::make_cast(ScalarType::Bool, value(pick(rng_, kNumeric), depth - 1));
    return select(ScalarType::Bool, depth);
  }

  Expr integer(ScalarType type, int depth) {
    const double draw = rng_.unit();
    if (draw < 0.6) {
      const BinaryOp op = static_cast<BinaryOp>(rng_.below(12));  // every operator, shifts included
      return ir::make_binary(op, value(type, depth - 1), value(type, depth - 1));
    }
    if (draw < 0.7)
      return ir::make_unary(rng_.chance(0.5) ? ir::UnaryOp::Neg : ir::UnaryOp::Not, value(type, depth - 1));
    if (draw < 0.75) return ir::make_call(ir::MathFn::Abs, {value(type, depth - 1)});
    if (draw < 0.9) return ir::make_cast(type, value(pick(rng_, kTypes), depth - 1));
    return select(type, depth);
  }

  Expr floating(ScalarType type, int depth) {
    const double draw = rng_.unit();
    auto operand = [&] { return value(type, depth - 1); };
    if (draw < 0.45) {
      const BinaryOp ops[] = {BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul, BinaryOp::Div,
                              BinaryOp::Rem, BinaryOp::Min, BinaryOp::Max};
      const BinaryOp op = pick(rng_, ops);
      Expr b = operand();
      // Mostly a divisor away from zero, so that quotients stay checkable.
      if ((op == BinaryOp::Div || op == BinaryOp::Rem) && rng_.chance(0.7))
        b = ir::make_binary(BinaryOp::Add, ir::make_call(ir::MathFn::Abs, {b}), ir::make_const(type, 1.0));
      return ir::make_binary(op, operand(), b);
    }
    if (draw < 0.75) return math(type, depth);
    if (draw < 0.8) return ir::make_unary(ir::UnaryOp::Neg, operand());
    if (draw < 0.92) return ir::make_cast(type, value(pick(rng_, kTypes), depth - 1));
    return select(type, depth);
  }

  // A math function, its argument mostly kept in its domain.
  Expr math(ScalarType type, int depth) {
    auto c = [&](double v) { return ir::make_const(type, v); };
    Expr x = value(type, depth - 1);
    const bool tame = rng_.chance(0.75);
    auto abs = [&](const Expr& e) { return ir::make_call(ir::MathFn::Abs, {e}); };
    switch (rng_.below(9)) {
      case 0: return ir::make_call(ir::MathFn::Sqrt, {tame ? abs(x) : x});
      case 1: return ir::make_call(ir::MathFn::Exp, {tame ? ir::make_binary(BinaryOp::Min, x, c(20)) : x});
      case 2: return ir::make_call(ir::MathFn::Log, {tame ? ir::make_binary(BinaryOp::Add, abs(x), c(0.5)) : x});
      case 3: return ir::make_call(ir::MathFn::Sin, {x});
      case 4: return ir::make_call(ir::MathFn::Cos, {x});
      case 5: return ir::make_call(ir::MathFn::Floor, {x});
      case 6: return abs(x);
      case 7: return ir::make_call(ir::MathFn::Fma, {x, value(type, depth - 1), value(type, depth - 1)});
      default: {
        Expr y = value(type, depth - 1);
        if (tame) {
          x = ir::make_binary(BinaryOp::Add, abs(x), c(0.5));
          y = ir::make_binary(BinaryOp::Max, ir::make_binary(BinaryOp::Min, y, c(4)), c(-4));
        }
        return ir::make_call(ir::MathFn::Pow, {x, y});
      }
    }
  }

  Expr select(ScalarType type, int depth) {
    return ir::make_select(value(ScalarType::Bool, depth - 1), value(type, depth - 1), value(type, depth - 1));
  }

  // ---- statements

  std::vector<Stmt> block(int& budget, int depth) {
    std::vector<Stmt> stmts;
    const std::size_t scope = locals_.size();
    const int count = int(rng_.between(1, std::max(1, std::min(budget, 5))));
    for (int k = 0; k < count && budget > 0; ++k) {
      --budget;
      if (auto s = statement(budget, depth)) stmts.push_back(*s);
    }
    // A local's last value, stored where it can be compared: what a branch or
    // a loop assigned to it is then seen (without this most locals are dead).
    if (rng_.chance(0.4))
      if (auto s = sink()) stmts.push_back(*s);
    locals_.resize(scope);
    return stmts;
  }

  std::optional<Stmt> statement(int& budget, int depth) {
    const double draw = rng_.unit();
    const bool nested = depth < 3;
    if (draw < 0.2) return declare();
    if (draw < 0.32) {
      std::vector<const Local*> assignable;
      for (const auto& l : locals_)
        if (l.assignable) assignable.push_back(&l);
      if (!assignable.empty()) {
        const Local& v = *assignable[rng_.below(assignable.size())];
        return ir::make_assign(v.name, value(v.type, 3));
      }
      return declare();
    }
    if (draw < 0.5 && !owned_.empty()) return store();
    if (draw < 0.58 && !atomics_.empty()) return atomic();
    if (draw < 0.65 && !reductions_.empty()) return reduce();
    if (draw < 0.77 && nested) return conditional(budget, depth);
    if (draw < 0.87 && nested && loops_ < 2) return loop(budget, depth);
    if (draw < 0.93 && nested) return guarded(budget, depth);
    return declare();
  }

  Stmt declare() {
    const ScalarType type = pick(rng_, kTypes);
    Local v{program_.next_name("v"), type, true};
    Expr init = value(type, 3);
    locals_.push_back(v);
    return ir::make_decl(v.name, init);
  }

  Stmt store() {
    const int array = owned_[rng_.below(owned_.size())];
    ArrayUse& use = use_array(array, Role::Own);
    use.written = true;
    const ScalarType type = program_.array(array).type;
    return ir::make_store(use.param, use.own, value(type, 3));
  }

  std::optional<Stmt> sink() {
    if (owned_.empty() || locals_.empty()) return std::nullopt;
    const Local& v = locals_[rng_.below(locals_.size())];
    const int array = owned_[rng_.below(owned_.size())];
    ArrayUse& use = use_array(array, Role::Own);
    use.written = true;
    const ScalarType type = program_.array(array).type;
    Expr var = ir::make_var(v.type, v.name);
    return ir::make_store(use.param, use.own, v.type == type ? var : ir::make_cast(type, var));
  }

  Stmt atomic() {
    const int array = atomics_[rng_.below(atomics_.size())];
    ArrayUse& use = use_array(array, Role::Atomic);
    use.written = true;
    std::vector<Expr> indices;
    const std::vector<std::int64_t> extents = program_.array(array).extents;  // read_index may add arrays
    for (std::int64_t e : extents) indices.push_back(read_index(e, 1));
    return ir::make_atomic_add(use.param, std::move(indices), value(program_.array(array).type, 2));
  }

  Stmt reduce() {
    const int param = reductions_[rng_.below(reductions_.size())];
    reduced_.push_back(param);
    return ir::make_reduce(param, value(kernel_.params[std::size_t(param)].type, 3));
  }

  Stmt conditional(int& budget, int depth) {
    Expr cond = value(ScalarType::Bool, 3);
    Stmt then_body = ir::make_block(block(budget, depth + 1));
    Stmt else_body;
    const double draw = rng_.unit();
    if (draw < 0.3)
      else_body = ir::make_block(block(budget, depth + 1));
    else if (draw < 0.5 && budget > 0)  // else if
      else_body = ir::make_block({conditional(budget, depth + 1)});
    return ir::make_if(cond, then_body, else_body);
  }

  // A counted loop of at most a few trips, often as many as a value read from memory says.
  Stmt loop(int& budget, int depth) {
    const ScalarType type = rng_.chance(0.7) ? ScalarType::I64 : ScalarType::I32;
    const std::string var = program_.next_name("k");
    Expr begin = ir::make_int(type, rng_.between(-2, 2));
    std::int64_t points = 1;
    for (auto r : range_) points *= r;
    const std::int64_t most = points > 4000 ? 3 : 7;
    Expr trips = rng_.chance(0.5) ? ir::make_int(type, rng_.between(0, most))
                                  : ir::make_binary(BinaryOp::And, value(type, 2), ir::make_int(type, most));
    Expr end = ir::make_binary(BinaryOp::Add, begin, trips);
    Expr step = ir::make_int(type, rng_.chance(0.8) ? 1 : 2);
    ++loops_;
    locals_.push_back(Local{var, type, false});
    loop_vars_.push_back(Local{var, type, false});
    const std::size_t scope = locals_.size();
    Stmt body = ir::make_block(block(budget, depth + 1));
    locals_.resize(scope - 1);
    loop_vars_.pop_back();
    --loops_;
    return ir::make_for(var, begin, end, step, body);
  }

  // if (index(k) >= 1 && index(k) + 1 < extent) { ... neighbours along k ... }
  Stmt guarded(int& budget, int depth) {
    const int k = int(rng_.below(std::uint64_t(dims())));
    const std::int64_t extent = std::max<std::int64_t>(3, range(k));
    Expr index = ir::make_index(k);
    Expr cond = ir::make_binary(
        BinaryOp::And, ir::make_compare(ir::CompareOp::Ge, index, i64(1)),
        ir::make_compare(ir::CompareOp::Lt, ir::make_binary(BinaryOp::Add, index, i64(1)), i64(extent)));
    guards_.push_back(Guard{k, extent});
    Stmt body = ir::make_block(block(budget, depth + 1));
    guards_.pop_back();
    // Or as two Ifs, each ordering the index against a bound (the CPU's SIMD
    // lanes run those unmasked where a whole vector agrees).
    if (rng_.chance(0.5)) {
      const auto& both = cond->as<ir::Binary>();
      return ir::make_if(both.lhs, ir::make_block({ir::make_if(both.rhs, body)}));
    }
    return ir::make_if(cond, body);
  }

  // Every kernel changes something: an owned array, an atomic one or a reduction.
  void ensure_effects(std::vector<Stmt>& body) {
    for (int array : owned_) {
      bool stored = false;
      for (const auto& use : uses_) stored = stored || (use.array == array && use.written);
      if (!stored && rng_.chance(0.8)) body.push_back(store());
    }
    for (int array : atomics_) {
      bool added = false;
      for (const auto& use : uses_) added = added || (use.array == array && use.written);
      if (!added) body.push_back(atomic());
    }
    for (int param : reductions_)
      if (std::find(reduced_.begin(), reduced_.end(), param) == reduced_.end()) {
        reduced_.push_back(param);
        body.push_back(ir::make_reduce(param, value(kernel_.params[std::size_t(param)].type, 2)));
      }
    if (owned_.empty() && atomics_.empty() && reductions_.empty()) {
      add_reduction();
      body.push_back(reduce());
    }
  }

  ProgramBuilder& program_;
  Rng& rng_;
  std::vector<std::int64_t> range_;
  ir::Kernel kernel_;
  std::vector<int> array_of_param_;
  std::vector<std::optional<std::int64_t>> fixed_;  // per parameter: the value every launch passes (offset())
  std::deque<ArrayUse> uses_;                       // a deque: references to its elements outlive later uses
  std::vector<int> owned_, atomics_, reductions_, reduced_;
  std::vector<Local> locals_;
  std::vector<Local> loop_vars_;  ///< the counters of the loops around, innermost last
  std::vector<Guard> guards_;
  bool elementwise_ = false;  ///< every access at the point's own index, no atomics
  int loops_ = 0;
};

// ---- the steps ---------------------------------------------------------------------

struct KernelPlan {
  std::vector<std::int64_t> range;  ///< the largest range it may run over
  std::unique_ptr<KernelBuilder> builder;
  bool elementwise = false;
};

// A kernel whose every point writes o[index(0) + c] (or reads x[index(0) - 1]):
// a launch over more points than the arrays hold must be refused.
Step refusal(ProgramBuilder& program) {
  Rng& rng = program.rng();
  const ScalarType type = pick(rng, kNumeric);
  const int o = program.values(type, 1, {});
  const int x = program.values(type, 1, {o});
  const std::int64_t n = program.array(o).extents[0], m = program.array(x).extents[0];
  ir::Kernel k;
  k.name = program.next_name("refuse");
  k.params = {ir::Param::array("o", type, 1, ir::Access::Out), ir::Param::array("x", type, 1, ir::Access::In)};
  const bool backwards = rng.chance(0.3);
  const std::int64_t c = backwards ? -1 : rng.between(0, 2);
  Expr at = ir::make_binary(BinaryOp::Add, ir::make_index(0), i64(backwards ? 0 : c));
  Expr from = ir::make_binary(BinaryOp::Add, ir::make_index(0), i64(backwards ? -1 : 0));
  k.body = ir::make_block({ir::make_store(0, {at}, ir::make_load(type, 1, {from}))});
  ir::verify(k);
  program.program().kernels.push_back(std::make_shared<const ir::Kernel>(k));
  Step step;
  step.kind = StepKind::Refused;
  step.kernel = int(program.program().kernels.size()) - 1;
  // An o shorter than the shift (n < c) fits no point: any range of one or more points reaches past it.
  const std::int64_t fits = std::min(n - c, m);
  step.range = {backwards ? rng.between(1, fits) : std::max<std::int64_t>(fits, 0) + rng.between(1, 3)};
  step.args = {o, x};
  return step;
}

// A kernel whose every point reads x[index(0) + shift], launched with shift
// the extent of x: checked mode must report it; unchecked runs leave it out.
Step faulty(ProgramBuilder& program) {
  Rng& rng = program.rng();
  const ScalarType type = pick(rng, kNumeric);
  const int o = program.values(type, 1, {});
  const int x = program.values(type, 1, {o});
  ir::Kernel k;
  k.name = program.next_name("faulty");
  k.params = {ir::Param::array("o", type, 1, ir::Access::Out), ir::Param::array("x", type, 1, ir::Access::In),
              ir::Param::scalar("shift", ScalarType::I64)};
  Expr past = ir::make_binary(BinaryOp::Add, ir::make_index(0), ir::make_param(ScalarType::I64, 2));
  k.body = ir::make_block({ir::make_store(0, {ir::make_index(0)}, ir::make_load(type, 1, {past}))});
  ir::verify(k);
  program.program().kernels.push_back(std::make_shared<const ir::Kernel>(k));
  Step step;
  step.kind = StepKind::Faulty;
  step.kernel = int(program.program().kernels.size()) - 1;
  step.range = {rng.between(1, program.array(o).extents[0])};
  step.args = {o, x, ir::RefValue::i64(program.array(x).extents[0])};
  return step;
}

Step launch(ProgramBuilder& program, int kernel, KernelPlan& plan) {
  Rng& rng = program.rng();
  Step step;
  step.kind = StepKind::Launch;
  step.kernel = kernel;
  if (plan.elementwise && program.side().chance(0.85))
    step.range = plan.range;  // a run of them can fuse only over one range
  else
    for (auto r : plan.range) {
      const double draw = rng.unit();
      step.range.push_back(draw < 0.65   ? r
                           : draw < 0.93 ? rng.between(1, r)
                                         : rng.between(0, std::min<std::int64_t>(r, 1)));
    }
  step.args = plan.builder->arguments();
  step.policy = static_cast<PolicyKind>(rng.below(6));
  step.policy_seed = rng.next() >> 16;
  step.at_leaf = rng.chance(0.1) ? int(rng.below(3)) : -1;
  return step;
}

Step other_step(ProgramBuilder& program) {
  Rng& rng = program.rng();
  const auto& arrays = program.program().arrays;
  Step step;
  const double draw = rng.unit();
  if (draw < 0.3 && !arrays.empty()) {
    step.kind = StepKind::HostWrite;
    step.array = int(rng.below(arrays.size()));
    step.seed = rng.next() >> 16;
    step.count = rng.between(1, std::min<std::int64_t>(arrays[std::size_t(step.array)].size(), 12));
  } else if (draw < 0.6 && !arrays.empty()) {
    step.kind = StepKind::HostRead;
    step.array = int(rng.below(arrays.size()));
  } else if (draw < 0.75) {
    step.kind = StepKind::Pause;
  } else if (draw < 0.9) {
    step.kind = StepKind::Tree;
    step.change = static_cast<TreeChange>(rng.below(4));
    step.leaf = int(rng.below(3));
  } else if (draw < 0.95) {
    return refusal(program);
  } else {
    return faulty(program);
  }
  return step;
}

}  // namespace

Program generate_program(std::uint64_t seed, const GeneratorOptions& options) {
  ProgramBuilder program(seed, options);
  Rng& rng = program.rng();
  std::vector<KernelPlan> plans;
  const int kernels = int(rng.between(1, options.max_kernels));
  for (int k = 0; k < kernels; ++k) {
    const double draw = rng.unit();
    const int dims = draw < 0.55 ? 1 : draw < 0.85 ? 2 : 3;
    KernelPlan plan;
    plan.elementwise = program.side().chance(options.elementwise);
    for (auto b : program.base(dims)) plan.range.push_back(std::max<std::int64_t>(1, b - rng.between(0, 2)));
    if (plan.elementwise) plan.range = program.base(dims);
    plan.builder = std::make_unique<KernelBuilder>(program, dims, plan.range, plan.elementwise);
    program.program().kernels.push_back(plan.builder->build());
    plans.push_back(std::move(plan));
  }
  // Every kernel runs at least once; the other steps fall in between.
  std::vector<int> order;
  for (int k = 0; k < kernels; ++k) order.push_back(k);
  const int extra = int(rng.between(0, options.max_steps));
  for (int s = 0; s < extra; ++s) order.push_back(rng.chance(0.45) ? int(rng.below(std::uint64_t(kernels))) : -1);
  for (std::size_t s = order.size() - 1; s > 0; --s) std::swap(order[s], order[rng.below(s + 1)]);
  // Runs of element-wise launches: what the recorder fuses.
  std::vector<int> elementwise;
  for (int k = 0; k < kernels; ++k)
    if (plans[std::size_t(k)].elementwise) elementwise.push_back(k);
  if (!elementwise.empty()) {
    std::vector<int> runs;
    for (int k : order) {
      runs.push_back(k);
      if (k < 0 || !plans[std::size_t(k)].elementwise || !program.side().chance(0.6)) continue;
      for (auto more = program.side().between(1, 3); more > 0; --more)
        runs.push_back(elementwise[program.side().below(elementwise.size())]);
    }
    order = std::move(runs);
  }
  for (int k : order) {
    if (k >= 0)
      program.program().steps.push_back(launch(program, k, plans[std::size_t(k)]));
    else
      program.program().steps.push_back(other_step(program));
  }
  return std::move(program.program());
}

}  // namespace canopy::diff
