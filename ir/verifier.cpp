#include "verifier.hpp"

#include <fmt/format.h>

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "error.hpp"
#include "printer.hpp"

namespace canopy::ir {

namespace {

// Why `name` (which is_valid_name rejects) cannot be a name, as the end of a sentence.
std::string name_problem(const std::string&) {
  return " is not a valid identifier; use letters, digits, '_' and '.', starting with a letter or '_'";
}

// Walks a kernel once, checking every rule of verifier.hpp; the first broken
// rule throws. Every node is checked for null children before anything reads
// them, so a malformed tree gives a message, never a crash.
//
// Children are checked before their parent, so the innermost problem is the
// one reported. The walk (expr, stmt) is what sits on the stack once per
// nesting level, so it only recurses; the rules, which build messages, live in
// out-of-line check_* functions that run after the children are done.
class Verifier {
 public:
  explicit Verifier(const Kernel& kernel) : kernel_(kernel), prefix_(fmt::format("kernel '{}': ", kernel.name)) {}

  void run() {
    if (!is_valid_name(kernel_.name)) fail("the kernel's name" + name_problem(kernel_.name));
    if (kernel_.dims < 1 || kernel_.dims > 3)
      fail(fmt::format("dims is {}; a kernel has 1 to 3 index dimensions", kernel_.dims));
    std::set<std::string> param_names;
    for (const Param& param : kernel_.params) check_param(param, param_names);
    if (!kernel_.body) fail("the body is null; give it a Block, even an empty one");
    if (kernel_.body->kind != StmtKind::Block) fail("the body is not a Block", kernel_.body);
    stmt(kernel_.body);
  }

 private:
  // A local variable or loop counter visible at the current point.
  struct Local {
    std::string name;
    ScalarType type;
    bool is_loop_var;
  };

  // ---- failing

  [[noreturn, gnu::noinline, gnu::cold]] void fail(const std::string& problem) const { throw Error(prefix_ + problem); }
  [[noreturn, gnu::noinline, gnu::cold]] void fail(const std::string& problem, const Expr& at) const {
    throw Error(fmt::format("{}{} in `{}`", prefix_, problem, print(at, kernel_)));
  }
  [[noreturn, gnu::noinline, gnu::cold]] void fail(const std::string& problem, const Stmt& at) const {
    const std::string text = print(at, kernel_, 0);
    throw Error(fmt::format("{}{} in `{}`", prefix_, problem, text.substr(0, text.find('\n'))));
  }

  // ---- parameters

  void check_param(const Param& param, std::set<std::string>& seen) const {
    if (!is_valid_name(param.name)) fail(fmt::format("parameter name '{}'{}", param.name, name_problem(param.name)));
    if (!seen.insert(param.name).second) fail(fmt::format("two parameters are named '{}'; rename one", param.name));
    if (param.is_array() && (param.rank < 1 || param.rank > 3))
      fail(fmt::format("array '{}' has rank {}; arrays have 1 to 3 dimensions", param.name, param.rank));
    if (param.is_reduction() && param.type == ScalarType::Bool)
      fail(fmt::format("reduction '{}' is bool; reductions are i32, i64, f32 or f64", param.name));
  }

  // The parameter numbered `number`, or a failure naming `at`.
  template <class Node>
  const Param& param_at(int number, const Node& at) const {
    if (number < 0 || static_cast<std::size_t>(number) >= kernel_.params.size())
      fail(fmt::format("refers to parameter {}, but the kernel has {} parameters", number, kernel_.params.size()), at);
    return kernel_.params[static_cast<std::size_t>(number)];
  }

  template <class Node>
  const Param& array_at(int number, const Node& at) const {
    const Param& param = param_at(number, at);
    if (!param.is_array()) fail(fmt::format("'{}' is not an array parameter", param.name), at);
    return param;
  }

  // Index lists of loads, stores and atomic adds (already walked): one i64
  // index per dimension of `array`.
  template <class Node>
  void check_indices(const Param& array, const std::vector<Expr>& indices, const Node& at) const {
    if (indices.size() != static_cast<std::size_t>(array.rank))
      fail(fmt::format("indexes array '{}' of rank {} with {} indices", array.name, array.rank, indices.size()), at);
    for (const Expr& index : indices)
      if (index->type != ScalarType::I64)
        fail(fmt::format("an index of array '{}' is {}; indices are i64", array.name, name_of(index->type)), at);
  }

  // ---- expressions: the walk

  void expr(const Expr& e) {
    check_children_present(e);
    switch (e->kind) {
      case ExprKind::Load:
        for (const Expr& index : e->as<Load>().indices) expr(index);
        break;
      case ExprKind::Unary: expr(e->as<Unary>().operand); break;
      case ExprKind::Binary:
        expr(e->as<Binary>().lhs);
        expr(e->as<Binary>().rhs);
        break;
      case ExprKind::Compare:
        expr(e->as<Compare>().lhs);
        expr(e->as<Compare>().rhs);
        break;
      case ExprKind::Cast: expr(e->as<Cast>().operand); break;
      case ExprKind::Call:
        for (const Expr& arg : e->as<Call>().args) expr(arg);
        break;
      case ExprKind::Select:
        expr(e->as<Select>().cond);
        expr(e->as<Select>().if_true);
        expr(e->as<Select>().if_false);
        break;
      default: break;
    }
    check_node(e);
  }

  [[gnu::noinline]] void check_children_present(const Expr& e) const {
    auto present = [](const std::vector<Expr>& exprs) {
      for (const Expr& x : exprs)
        if (!x) return false;
      return true;
    };
    switch (e->kind) {
      case ExprKind::Load:
        if (!present(e->as<Load>().indices)) fail("null index", e);
        return;
      case ExprKind::Unary:
        if (!e->as<Unary>().operand) fail("null operand", e);
        return;
      case ExprKind::Binary:
        if (!e->as<Binary>().lhs || !e->as<Binary>().rhs) fail("null operand", e);
        return;
      case ExprKind::Compare:
        if (!e->as<Compare>().lhs || !e->as<Compare>().rhs) fail("null operand", e);
        return;
      case ExprKind::Cast:
        if (!e->as<Cast>().operand) fail("null operand", e);
        return;
      case ExprKind::Call:
        if (!present(e->as<Call>().args)) fail("null argument", e);
        return;
      case ExprKind::Select: {
        const auto& node = e->as<Select>();
        if (!node.cond || !node.if_true || !node.if_false) fail("null operand", e);
        return;
      }
      default: return;
    }
  }

  // ---- expressions: the rules of each node, its children already checked

  [[gnu::noinline]] void check_node(const Expr& e) const {
    switch (e->kind) {
      case ExprKind::Const: return check_literal(e);
      case ExprKind::Index: {
        const int dim = e->as<Index>().dim;
        if (dim < 0 || dim >= kernel_.dims)
          fail(fmt::format("index dimension {} is out of range for a kernel with dims {}", dim, kernel_.dims), e);
        return check_type(e, ScalarType::I64, "index");
      }
      case ExprKind::Param: return check_param_ref(e);
      case ExprKind::Var: return check_var_ref(e);
      case ExprKind::Extent: {
        const auto& node = e->as<Extent>();
        const Param& array = array_at(node.param, e);
        if (node.dim < 0 || node.dim >= array.rank)
          fail(fmt::format("extent dimension {} is out of range for array '{}' of rank {}", node.dim, array.name,
                           array.rank),
               e);
        return check_type(e, ScalarType::I64, "extent");
      }
      case ExprKind::Load: return check_load(e);
      case ExprKind::Unary: return check_unary(e);
      case ExprKind::Binary: return check_binary(e);
      case ExprKind::Compare: return check_compare(e);
      case ExprKind::Cast: return;  // any scalar converts to any other
      case ExprKind::Call: return check_call(e);
      case ExprKind::Select: return check_select(e);
    }
    fail("unknown expression kind", e);
  }

  void check_type(const Expr& e, ScalarType wanted, std::string_view what) const {
    if (e->type != wanted)
      fail(fmt::format("{} has type {} but must be {}", what, name_of(e->type), name_of(wanted)), e);
  }

  void check_literal(const Expr& e) const {
    const auto& node = e->as<Const>();
    switch (node.type) {
      case ScalarType::Bool:
        if (node.int_value != 0 && node.int_value != 1)
          fail(fmt::format("bool literal holds {}; use 0 or 1", node.int_value), e);
        return;
      case ScalarType::I32:
        if (node.int_value < INT32_MIN || node.int_value > INT32_MAX)
          fail(fmt::format("i32 literal holds {}, outside the range of i32", node.int_value), e);
        return;
      case ScalarType::F32: {
        const double value = node.float_value;
        if (value == value && static_cast<double>(static_cast<float>(value)) != value)
          fail("f32 literal holds a value that is not a float; build it with make_const", e);
        return;
      }
      case ScalarType::I64:
      case ScalarType::F64: return;
    }
  }

  void check_param_ref(const Expr& e) const {
    const Param& param = param_at(e->as<ParamRef>().param, e);
    if (param.is_array()) fail(fmt::format("uses array '{}' as a value; index it", param.name), e);
    if (param.is_reduction())
      fail(fmt::format("reads reduction '{}'; a reduction can only be reduced into", param.name), e);
    if (param.type != e->type)
      fail(fmt::format("scalar '{}' is {} but is read as {}", param.name, name_of(param.type), name_of(e->type)), e);
  }

  void check_var_ref(const Expr& e) const {
    const auto& node = e->as<VarRef>();
    const Local* local = local_named(node.name);
    if (!local) {
      if (all_locals_.count(node.name)) fail(fmt::format("variable '{}' is used outside its scope", node.name), e);
      fail(fmt::format("variable '{}' is not declared here: a Value or Var of another kernel, or of a For or If "
                       "body that has ended, is used in this one (values live inside the body that made them)",
                       node.name),
           e);
    }
    if (local->type != e->type)
      fail(fmt::format("variable '{}' is {} but is read as {}", node.name, name_of(local->type), name_of(e->type)), e);
  }

  void check_load(const Expr& e) const {
    const auto& node = e->as<Load>();
    const Param& array = array_at(node.param, e);
    check_indices(array, node.indices, e);
    if (array.access == Access::Out)
      fail(fmt::format("reads array '{}' declared out; declare it inout", array.name), e);
    if (array.type != e->type)
      fail(fmt::format("loads {} from array '{}' of {}", name_of(e->type), array.name, name_of(array.type)), e);
  }

  void check_unary(const Expr& e) const {
    const auto& node = e->as<Unary>();
    const std::string_view op = node.op == UnaryOp::Neg ? "neg" : "not";
    const ScalarType operand = node.operand->type;
    if (node.op == UnaryOp::Neg && !is_numeric(operand)) fail("neg of bool; neg needs a numeric operand", e);
    if (node.op == UnaryOp::Not && is_float(operand))
      fail(fmt::format("not of {}; not needs a bool or integer operand", name_of(operand)), e);
    if (e->type != operand)
      fail(fmt::format("{} has type {} but its operand is {}", op, name_of(e->type), name_of(operand)), e);
  }

  // Both operands of a Binary or Compare have one type.
  void check_same_operands(const Expr& e, std::string_view op, const Expr& lhs, const Expr& rhs) const {
    if (lhs->type != rhs->type)
      fail(fmt::format("operands of {} have different types ({} and {}); cast one", op, name_of(lhs->type),
                       name_of(rhs->type)),
           e);
  }

  void check_binary(const Expr& e) const {
    const auto& node = e->as<Binary>();
    const std::string_view op = name_of(node.op);
    const ScalarType operand = node.lhs->type;
    check_same_operands(e, op, node.lhs, node.rhs);
    switch (node.op) {
      case BinaryOp::And:
      case BinaryOp::Or:
      case BinaryOp::Xor:
        if (is_float(operand))
          fail(fmt::format("{} on {}; {} needs bool or integer operands", op, name_of(operand), op), e);
        break;
      case BinaryOp::Shl:
      case BinaryOp::Shr:
        if (!is_int(operand)) fail(fmt::format("{} on {}; {} needs integer operands", op, name_of(operand), op), e);
        break;
      default:
        if (!is_numeric(operand)) fail(fmt::format("{} on bool; {} needs numeric operands", op, op), e);
        break;
    }
    if (e->type != operand)
      fail(fmt::format("{} has type {} but its operands are {}", op, name_of(e->type), name_of(operand)), e);
  }

  void check_compare(const Expr& e) const {
    const auto& node = e->as<Compare>();
    const std::string_view op = name_of(node.op);
    check_same_operands(e, op, node.lhs, node.rhs);
    if (node.lhs->type == ScalarType::Bool && node.op != CompareOp::Eq && node.op != CompareOp::Ne)
      fail(fmt::format("{} on bool; bools compare only with == and !=", op), e);
    check_type(e, ScalarType::Bool, "comparison");
  }

  void check_call(const Expr& e) const {
    const auto& node = e->as<Call>();
    const std::string_view fn = name_of(node.fn);
    const auto arity = static_cast<std::size_t>(arity_of(node.fn));
    if (node.args.size() != arity)
      fail(fmt::format("{} takes {} argument{}, given {}", fn, arity, arity == 1 ? "" : "s", node.args.size()), e);
    const ScalarType operand = node.args[0]->type;
    for (const Expr& arg : node.args)
      if (arg->type != operand)
        fail(fmt::format("arguments of {} have different types ({} and {}); cast one", fn, name_of(operand),
                         name_of(arg->type)),
             e);
    if (node.fn == MathFn::Abs) {
      if (!is_numeric(operand)) fail("abs of bool; abs needs a numeric argument", e);
    } else if (!is_float(operand)) {
      fail(fmt::format("{} of {}; {} needs f32 or f64 arguments; cast them", fn, name_of(operand), fn), e);
    }
    if (e->type != operand)
      fail(fmt::format("{} has type {} but its arguments are {}", fn, name_of(e->type), name_of(operand)), e);
  }

  void check_select(const Expr& e) const {
    const auto& node = e->as<Select>();
    if (node.cond->type != ScalarType::Bool)
      fail(fmt::format("select condition is {}; it must be bool", name_of(node.cond->type)), e);
    if (node.if_true->type != node.if_false->type)
      fail(fmt::format("select branches have different types ({} and {})", name_of(node.if_true->type),
                       name_of(node.if_false->type)),
           e);
    if (e->type != node.if_true->type)
      fail(fmt::format("select has type {} but its branches are {}", name_of(e->type), name_of(node.if_true->type)), e);
  }

  // ---- statements

  const Local* local_named(const std::string& name) const {
    for (auto it = scope_.rbegin(); it != scope_.rend(); ++it)
      if (it->name == name) return &*it;
    return nullptr;
  }

  // A new local or loop variable: a valid name, used nowhere else in the kernel.
  void declare_name(const std::string& name, std::string_view what, const Stmt& at) {
    if (!is_valid_name(name)) fail(fmt::format("{} name '{}'{}", what, name, name_problem(name)), at);
    if (kernel_.param_index(name)) fail(fmt::format("{} '{}' has the name of a parameter; rename it", what, name), at);
    if (!all_locals_.insert(name).second)
      fail(
          fmt::format("{} '{}' reuses a name declared before; locals and loop variables need unique names", what, name),
          at);
  }

  // A statement in its own scope (a Block, or the body of an If or For):
  // its declarations end with it.
  void scoped(const Stmt& s) {
    const std::size_t depth = scope_.size();
    stmt(s);
    scope_.resize(depth);
  }

  void stmt(const Stmt& s) {
    switch (s->kind) {
      case StmtKind::Block: {
        const auto& stmts = s->as<Block>().stmts;
        const std::size_t depth = scope_.size();
        for (std::size_t i = 0; i < stmts.size(); ++i) {
          if (!stmts[i]) fail_null_statement(i);
          stmt(stmts[i]);
        }
        scope_.resize(depth);
        return;
      }
      case StmtKind::Decl: return check_decl(s);
      case StmtKind::Assign: return check_assign(s);
      case StmtKind::Store: return check_store(s);
      case StmtKind::AtomicAdd: return check_atomic_add(s);
      case StmtKind::Reduce: return check_reduce(s);
      case StmtKind::If: {
        const auto& node = s->as<If>();
        check_if(s);
        scoped(node.then_body);
        if (node.else_body) scoped(node.else_body);
        return;
      }
      case StmtKind::For: {
        const std::size_t depth = scope_.size();
        check_for(s);  // brings the loop variable into scope
        stmt(s->as<For>().body);
        scope_.resize(depth);
        return;
      }
    }
    fail("unknown statement kind", s);
  }

  [[noreturn, gnu::noinline, gnu::cold]] void fail_null_statement(std::size_t position) const {
    fail(fmt::format("statement {} of a block is null", position + 1));
  }

  [[gnu::noinline]] void check_decl(const Stmt& s) {
    const auto& node = s->as<Decl>();
    if (!node.init) fail(fmt::format("variable '{}' has a null initial value", node.name), s);
    expr(node.init);  // before the name exists: `var x: f64 = x` reads an undeclared x
    declare_name(node.name, "variable", s);
    if (node.init->type != node.type)
      fail(fmt::format("variable '{}' is declared {} but initialised with {}", node.name, name_of(node.type),
                       name_of(node.init->type)),
           s);
    scope_.push_back(Local{node.name, node.type, false});
  }

  [[gnu::noinline]] void check_assign(const Stmt& s) {
    const auto& node = s->as<Assign>();
    if (!node.value) fail("assigns a null value", s);
    const Local* local = local_named(node.name);
    if (!local) {
      if (kernel_.param_index(node.name))
        fail(fmt::format("assigns to parameter '{}'; only locals declared with var can be assigned", node.name), s);
      if (all_locals_.count(node.name)) fail(fmt::format("assigns to variable '{}' outside its scope", node.name), s);
      fail(fmt::format("assigns to variable '{}', which is not declared", node.name), s);
    }
    if (local->is_loop_var)
      fail(fmt::format("assigns to loop variable '{}'; loop variables are read-only", node.name), s);
    const ScalarType wanted = local->type;
    expr(node.value);
    if (node.value->type != wanted)
      fail(fmt::format("assigns {} to variable '{}' of {}", name_of(node.value->type), node.name, name_of(wanted)), s);
  }

  // The array, indices and value of a Store or AtomicAdd: walked and checked.
  const Param& check_array_write(const Stmt& s, int param, const std::vector<Expr>& indices, const Expr& value) {
    if (!value) fail("writes a null value", s);
    for (const Expr& index : indices)
      if (!index) fail("null index", s);
    const Param& array = array_at(param, s);
    for (const Expr& index : indices) expr(index);
    expr(value);
    check_indices(array, indices, s);
    if (array.access == Access::In)
      fail(fmt::format("writes array '{}' declared in; declare it out or inout", array.name), s);
    return array;
  }

  [[gnu::noinline]] void check_store(const Stmt& s) {
    const auto& node = s->as<Store>();
    const Param& array = check_array_write(s, node.param, node.indices, node.value);
    if (node.value->type != array.type)
      fail(fmt::format("stores {} into array '{}' of {}", name_of(node.value->type), array.name, name_of(array.type)),
           s);
  }

  [[gnu::noinline]] void check_atomic_add(const Stmt& s) {
    const auto& node = s->as<AtomicAdd>();
    const Param& array = check_array_write(s, node.param, node.indices, node.value);
    if (array.type == ScalarType::Bool)
      fail(fmt::format("atomic add on bool array '{}'; atomic adds need i32, i64, f32 or f64", array.name), s);
    if (node.value->type != array.type)
      fail(fmt::format("adds {} to array '{}' of {}", name_of(node.value->type), array.name, name_of(array.type)), s);
  }

  [[gnu::noinline]] void check_reduce(const Stmt& s) {
    const auto& node = s->as<Reduce>();
    if (!node.value) fail("reduces a null value", s);
    const Param& param = param_at(node.param, s);
    if (!param.is_reduction())
      fail(fmt::format("reduces into '{}', which is not a reduction parameter", param.name), s);
    expr(node.value);
    if (node.value->type != param.type)
      fail(fmt::format("reduces {} into reduction '{}' of {}", name_of(node.value->type), param.name,
                       name_of(param.type)),
           s);
  }

  // The condition and the presence of the then-body; the bodies are walked by stmt().
  [[gnu::noinline]] void check_if(const Stmt& s) {
    const auto& node = s->as<If>();
    if (!node.cond) fail("null condition", s);
    if (!node.then_body) fail("null then-body; use an empty Block", s);
    expr(node.cond);
    if (node.cond->type != ScalarType::Bool)
      fail(fmt::format("condition is {}; it must be bool", name_of(node.cond->type)), s);
  }

  // Everything but the body, which stmt() walks; declares the loop variable.
  [[gnu::noinline]] void check_for(const Stmt& s) {
    const auto& node = s->as<For>();
    if (!node.begin || !node.end || !node.step) fail("loop with a null bound or step", s);
    if (!node.body) fail("loop with a null body; use an empty Block", s);
    expr(node.begin);
    expr(node.end);
    expr(node.step);
    declare_name(node.var, "loop variable", s);
    const ScalarType type = node.begin->type;
    if (!is_int(type)) fail(fmt::format("loop bounds are {}; they must be i32 or i64", name_of(type)), s);
    if (node.end->type != type)
      fail(fmt::format("loop bounds have different types ({} and {})", name_of(type), name_of(node.end->type)), s);
    if (!is_const(node.step) || node.step->type != type || node.step->as<Const>().int_value <= 0)
      fail(fmt::format("the step must be a positive {} literal", name_of(type)), s);
    scope_.push_back(Local{node.var, type, true});
  }

  const Kernel& kernel_;
  std::string prefix_;
  std::vector<Local> scope_;
  std::set<std::string> all_locals_;  // every Decl and loop variable name seen so far
};

}  // namespace

void verify(const Kernel& kernel) { Verifier(kernel).run(); }

}  // namespace canopy::ir
