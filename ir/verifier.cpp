#include "verifier.hpp"

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "error.hpp"
#include "printer.hpp"

namespace canopy::ir {

namespace {

std::string type_name(ScalarType type) { return std::string(name_of(type)); }

// Why `name` (which is_valid_name rejects) cannot be a name, as the end of a sentence.
std::string name_problem(const std::string& name) {
  if (is_keyword(name)) return " is a keyword of the IR's text form; rename it";
  return " is not a valid identifier; use letters, digits, '_' and '.', starting with a letter or '_'";
}

// Walks a kernel once, checking every rule of verifier.hpp; the first broken
// rule throws. Every node is checked for null children before anything reads
// them, so a malformed tree gives a message, never a crash.
class Verifier {
 public:
  explicit Verifier(const Kernel& kernel) : kernel_(kernel), prefix_("kernel '" + kernel.name + "': ") {}

  void run() {
    if (!is_valid_name(kernel_.name)) fail("the kernel's name" + name_problem(kernel_.name));
    if (kernel_.dims < 1 || kernel_.dims > 3)
      fail("dims is " + std::to_string(kernel_.dims) + "; a kernel has 1 to 3 index dimensions");
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

  [[noreturn]] void fail(const std::string& problem) const { throw Error(prefix_ + problem); }
  [[noreturn]] void fail(const std::string& problem, const Expr& at) const {
    throw Error(prefix_ + problem + " in `" + print(at, kernel_) + "`");
  }
  [[noreturn]] void fail(const std::string& problem, const Stmt& at) const {
    std::string text = print(at, kernel_, 0);
    text = text.substr(0, text.find('\n'));
    throw Error(prefix_ + problem + " in `" + text + "`");
  }

  // ---- parameters

  void check_param(const Param& param, std::set<std::string>& seen) const {
    if (!is_valid_name(param.name)) fail("parameter name '" + param.name + "'" + name_problem(param.name));
    if (!seen.insert(param.name).second) fail("two parameters are named '" + param.name + "'; rename one");
    if (param.is_array() && (param.rank < 1 || param.rank > 3))
      fail("array '" + param.name + "' has rank " + std::to_string(param.rank) + "; arrays have 1 to 3 dimensions");
    if (param.is_reduction() && param.type == ScalarType::Bool)
      fail("reduction '" + param.name + "' is bool; reductions are i32, i64, f32 or f64");
  }

  // The parameter numbered `number`, or a failure naming `at`.
  template <class Node>
  const Param& param_at(int number, const Node& at) const {
    if (number < 0 || static_cast<std::size_t>(number) >= kernel_.params.size())
      fail("refers to parameter " + std::to_string(number) + ", but the kernel has " +
               std::to_string(kernel_.params.size()) + " parameters",
           at);
    return kernel_.params[static_cast<std::size_t>(number)];
  }

  template <class Node>
  const Param& array_at(int number, const Node& at) const {
    const Param& param = param_at(number, at);
    if (!param.is_array()) fail("'" + param.name + "' is not an array parameter", at);
    return param;
  }

  // Index lists of loads, stores and atomic adds: one i64 index per dimension.
  template <class Node>
  void check_indices(const Param& array, const std::vector<Expr>& indices, const Node& at) {
    for (const Expr& index : indices)
      if (!index) fail("an index of array '" + array.name + "' is null", at);
    for (const Expr& index : indices) expr(index);
    if (indices.size() != static_cast<std::size_t>(array.rank))
      fail("indexes array '" + array.name + "' of rank " + std::to_string(array.rank) + " with " +
               std::to_string(indices.size()) + " indices",
           at);
    for (const Expr& index : indices)
      if (index->type != ScalarType::I64)
        fail("an index of array '" + array.name + "' is " + type_name(index->type) + "; indices are i64", at);
  }

  // ---- expressions

  void expr(const Expr& e) {
    switch (e->kind) {
      case ExprKind::Const: return literal(e);
      case ExprKind::Index: {
        int dim = e->as<Index>().dim;
        if (dim < 0 || dim >= kernel_.dims)
          fail("index dimension " + std::to_string(dim) + " is out of range for a kernel with dims " +
                   std::to_string(kernel_.dims),
               e);
        return expect_type(e, ScalarType::I64, "index");
      }
      case ExprKind::Param: return param_ref(e);
      case ExprKind::Var: return var_ref(e);
      case ExprKind::Extent: {
        const auto& node = e->as<Extent>();
        const Param& array = array_at(node.param, e);
        if (node.dim < 0 || node.dim >= array.rank)
          fail("extent dimension " + std::to_string(node.dim) + " is out of range for array '" + array.name +
                   "' of rank " + std::to_string(array.rank),
               e);
        return expect_type(e, ScalarType::I64, "extent");
      }
      case ExprKind::Load: return load(e);
      case ExprKind::Unary: return unary(e);
      case ExprKind::Binary: return binary(e);
      case ExprKind::Compare: return compare(e);
      case ExprKind::Cast: {
        if (!e->as<Cast>().operand) fail("null operand", e);
        return expr(e->as<Cast>().operand);
      }
      case ExprKind::Call: return call(e);
      case ExprKind::Select: return select(e);
    }
    fail("unknown expression kind", e);
  }

  void expect_type(const Expr& e, ScalarType wanted, const std::string& what) const {
    if (e->type != wanted) fail(what + " has type " + type_name(e->type) + " but must be " + type_name(wanted), e);
  }

  void literal(const Expr& e) const {
    const auto& node = e->as<Const>();
    switch (node.type) {
      case ScalarType::Bool:
        if (node.int_value != 0 && node.int_value != 1)
          fail("bool literal holds " + std::to_string(node.int_value) + "; use 0 or 1", e);
        return;
      case ScalarType::I32:
        if (node.int_value < INT32_MIN || node.int_value > INT32_MAX)
          fail("i32 literal holds " + std::to_string(node.int_value) + ", outside the range of i32", e);
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

  void param_ref(const Expr& e) const {
    const auto& node = e->as<ParamRef>();
    const Param& param = param_at(node.param, e);
    if (param.is_array()) fail("uses array '" + param.name + "' as a value; index it", e);
    if (param.is_reduction()) fail("reads reduction '" + param.name + "'; a reduction can only be reduced into", e);
    if (param.type != e->type)
      fail("scalar '" + param.name + "' is " + type_name(param.type) + " but is read as " + type_name(e->type), e);
  }

  void var_ref(const Expr& e) const {
    const auto& node = e->as<VarRef>();
    const Local* local = local_named(node.name);
    if (!local) {
      if (all_locals_.count(node.name)) fail("variable '" + node.name + "' is used outside its scope", e);
      fail("variable '" + node.name + "' is not declared", e);
    }
    if (local->type != e->type)
      fail("variable '" + node.name + "' is " + type_name(local->type) + " but is read as " + type_name(e->type), e);
  }

  void load(const Expr& e) {
    const auto& node = e->as<Load>();
    const Param& array = array_at(node.param, e);
    check_indices(array, node.indices, e);
    if (array.access == Access::Out) fail("reads array '" + array.name + "' declared out; declare it inout", e);
    if (array.type != e->type)
      fail("loads " + type_name(e->type) + " from array '" + array.name + "' of " + type_name(array.type), e);
  }

  void unary(const Expr& e) {
    const auto& node = e->as<Unary>();
    if (!node.operand) fail("null operand", e);
    expr(node.operand);
    const std::string op = node.op == UnaryOp::Neg ? "neg" : "not";
    const ScalarType operand = node.operand->type;
    if (node.op == UnaryOp::Neg && !is_numeric(operand)) fail("neg of bool; neg needs a numeric operand", e);
    if (node.op == UnaryOp::Not && is_float(operand))
      fail("not of " + type_name(operand) + "; not needs a bool or integer operand", e);
    if (e->type != operand)
      fail(op + " has type " + type_name(e->type) + " but its operand is " + type_name(operand), e);
  }

  void binary(const Expr& e) {
    const auto& node = e->as<Binary>();
    if (!node.lhs || !node.rhs) fail("null operand", e);
    expr(node.lhs);
    expr(node.rhs);
    const std::string op(name_of(node.op));
    const ScalarType operand = node.lhs->type;
    if (node.rhs->type != operand)
      fail("operands of " + op + " have different types (" + type_name(operand) + " and " + type_name(node.rhs->type) +
               "); cast one",
           e);
    switch (node.op) {
      case BinaryOp::And:
      case BinaryOp::Or:
      case BinaryOp::Xor:
        if (is_float(operand))
          fail(op + " on " + type_name(operand) + "; " + op + " needs bool or integer operands", e);
        break;
      case BinaryOp::Shl:
      case BinaryOp::Shr:
        if (!is_int(operand)) fail(op + " on " + type_name(operand) + "; " + op + " needs integer operands", e);
        break;
      default:
        if (!is_numeric(operand)) fail(op + " on bool; " + op + " needs numeric operands", e);
        break;
    }
    if (e->type != operand)
      fail(op + " has type " + type_name(e->type) + " but its operands are " + type_name(operand), e);
  }

  void compare(const Expr& e) {
    const auto& node = e->as<Compare>();
    if (!node.lhs || !node.rhs) fail("null operand", e);
    expr(node.lhs);
    expr(node.rhs);
    const std::string op(name_of(node.op));
    const ScalarType operand = node.lhs->type;
    if (node.rhs->type != operand)
      fail("operands of " + op + " have different types (" + type_name(operand) + " and " + type_name(node.rhs->type) +
               "); cast one",
           e);
    if (operand == ScalarType::Bool && node.op != CompareOp::Eq && node.op != CompareOp::Ne)
      fail(op + " on bool; bools compare only with == and !=", e);
    expect_type(e, ScalarType::Bool, "comparison");
  }

  void call(const Expr& e) {
    const auto& node = e->as<Call>();
    const std::string fn(name_of(node.fn));
    for (const Expr& arg : node.args)
      if (!arg) fail("null argument", e);
    for (const Expr& arg : node.args) expr(arg);
    const auto arity = static_cast<std::size_t>(arity_of(node.fn));
    if (node.args.size() != arity)
      fail(fn + " takes " + std::to_string(arity) + (arity == 1 ? " argument" : " arguments") + ", given " +
               std::to_string(node.args.size()),
           e);
    const ScalarType operand = node.args[0]->type;
    for (const Expr& arg : node.args)
      if (arg->type != operand)
        fail("arguments of " + fn + " have different types (" + type_name(operand) + " and " + type_name(arg->type) +
                 "); cast one",
             e);
    if (node.fn == MathFn::Abs) {
      if (!is_numeric(operand)) fail("abs of bool; abs needs a numeric argument", e);
    } else if (!is_float(operand)) {
      fail(fn + " of " + type_name(operand) + "; " + fn + " needs f32 or f64 arguments; cast them", e);
    }
    if (e->type != operand)
      fail(fn + " has type " + type_name(e->type) + " but its arguments are " + type_name(operand), e);
  }

  void select(const Expr& e) {
    const auto& node = e->as<Select>();
    if (!node.cond || !node.if_true || !node.if_false) fail("null operand", e);
    expr(node.cond);
    expr(node.if_true);
    expr(node.if_false);
    if (node.cond->type != ScalarType::Bool)
      fail("select condition is " + type_name(node.cond->type) + "; it must be bool", e);
    if (node.if_true->type != node.if_false->type)
      fail("select branches have different types (" + type_name(node.if_true->type) + " and " +
               type_name(node.if_false->type) + ")",
           e);
    if (e->type != node.if_true->type)
      fail("select has type " + type_name(e->type) + " but its branches are " + type_name(node.if_true->type), e);
  }

  // ---- statements

  const Local* local_named(const std::string& name) const {
    for (auto it = scope_.rbegin(); it != scope_.rend(); ++it)
      if (it->name == name) return &*it;
    return nullptr;
  }

  // A new local or loop variable: a valid name, used nowhere else in the kernel.
  void declare_name(const std::string& name, const std::string& what, const Stmt& at) {
    if (!is_valid_name(name)) fail(what + " name '" + name + "'" + name_problem(name), at);
    if (kernel_.param_index(name)) fail(what + " '" + name + "' has the name of a parameter; rename it", at);
    if (!all_locals_.insert(name).second)
      fail(what + " '" + name + "' reuses a name declared before; locals and loop variables need unique names", at);
  }

  // A body of an If or For: its declarations end with it.
  void body(const Stmt& s) {
    const std::size_t depth = scope_.size();
    stmt(s);
    scope_.resize(depth);
  }

  void stmt(const Stmt& s) {
    switch (s->kind) {
      case StmtKind::Block: {
        const auto& node = s->as<Block>();
        const std::size_t depth = scope_.size();
        for (std::size_t i = 0; i < node.stmts.size(); ++i) {
          if (!node.stmts[i]) fail("statement " + std::to_string(i + 1) + " of a block is null");
          stmt(node.stmts[i]);
        }
        scope_.resize(depth);
        return;
      }
      case StmtKind::Decl: return decl(s);
      case StmtKind::Assign: return assign(s);
      case StmtKind::Store: {
        const auto& node = s->as<Store>();
        if (!node.value) fail("stores a null value", s);
        const Param& array = array_at(node.param, s);
        check_indices(array, node.indices, s);
        expr(node.value);
        if (array.access == Access::In)
          fail("writes array '" + array.name + "' declared in; declare it out or inout", s);
        if (node.value->type != array.type)
          fail("stores " + type_name(node.value->type) + " into array '" + array.name + "' of " + type_name(array.type),
               s);
        return;
      }
      case StmtKind::AtomicAdd: {
        const auto& node = s->as<AtomicAdd>();
        if (!node.value) fail("adds a null value", s);
        const Param& array = array_at(node.param, s);
        check_indices(array, node.indices, s);
        expr(node.value);
        if (array.access == Access::In)
          fail("writes array '" + array.name + "' declared in; declare it out or inout", s);
        if (array.type == ScalarType::Bool)
          fail("atomic add on bool array '" + array.name + "'; atomic adds need i32, i64, f32 or f64", s);
        if (node.value->type != array.type)
          fail("adds " + type_name(node.value->type) + " to array '" + array.name + "' of " + type_name(array.type), s);
        return;
      }
      case StmtKind::Reduce: {
        const auto& node = s->as<Reduce>();
        if (!node.value) fail("reduces a null value", s);
        const Param& param = param_at(node.param, s);
        if (!param.is_reduction()) fail("reduces into '" + param.name + "', which is not a reduction parameter", s);
        expr(node.value);
        if (node.value->type != param.type)
          fail("reduces " + type_name(node.value->type) + " into reduction '" + param.name + "' of " +
                   type_name(param.type),
               s);
        return;
      }
      case StmtKind::If: {
        const auto& node = s->as<If>();
        if (!node.cond) fail("null condition", s);
        if (!node.then_body) fail("null then-body; use an empty Block", s);
        expr(node.cond);
        if (node.cond->type != ScalarType::Bool)
          fail("condition is " + type_name(node.cond->type) + "; it must be bool", s);
        body(node.then_body);
        if (node.else_body) body(node.else_body);
        return;
      }
      case StmtKind::For: return loop(s);
    }
    fail("unknown statement kind", s);
  }

  void decl(const Stmt& s) {
    const auto& node = s->as<Decl>();
    if (!node.init) fail("variable '" + node.name + "' has a null initial value", s);
    declare_name(node.name, "variable", s);
    expr(node.init);
    if (node.init->type != node.type)
      fail("variable '" + node.name + "' is declared " + type_name(node.type) + " but initialised with " +
               type_name(node.init->type),
           s);
    scope_.push_back(Local{node.name, node.type, false});
  }

  void assign(const Stmt& s) {
    const auto& node = s->as<Assign>();
    if (!node.value) fail("assigns a null value", s);
    const Local* local = local_named(node.name);
    if (!local) {
      if (kernel_.param_index(node.name))
        fail("assigns to parameter '" + node.name + "'; only locals declared with var can be assigned", s);
      if (all_locals_.count(node.name)) fail("assigns to variable '" + node.name + "' outside its scope", s);
      fail("assigns to variable '" + node.name + "', which is not declared", s);
    }
    if (local->is_loop_var) fail("assigns to loop variable '" + node.name + "'; loop variables are read-only", s);
    const ScalarType wanted = local->type;
    expr(node.value);
    if (node.value->type != wanted)
      fail("assigns " + type_name(node.value->type) + " to variable '" + node.name + "' of " + type_name(wanted), s);
  }

  void loop(const Stmt& s) {
    const auto& node = s->as<For>();
    if (!node.begin || !node.end || !node.step) fail("loop with a null bound or step", s);
    if (!node.body) fail("loop with a null body; use an empty Block", s);
    declare_name(node.var, "loop variable", s);
    expr(node.begin);
    expr(node.end);
    expr(node.step);
    const ScalarType type = node.begin->type;
    if (!is_int(type)) fail("loop bounds are " + type_name(type) + "; they must be i32 or i64", s);
    if (node.end->type != type)
      fail("loop bounds have different types (" + type_name(type) + " and " + type_name(node.end->type) + ")", s);
    if (!is_const(node.step) || node.step->type != type || node.step->as<Const>().int_value <= 0)
      fail("the step must be a positive " + type_name(type) + " literal", s);
    const std::size_t depth = scope_.size();
    scope_.push_back(Local{node.var, type, true});
    stmt(node.body);
    scope_.resize(depth);
  }

  const Kernel& kernel_;
  std::string prefix_;
  std::vector<Local> scope_;
  std::set<std::string> all_locals_;  // every Decl and loop variable name seen so far
};

}  // namespace

void verify(const Kernel& kernel) { Verifier(kernel).run(); }

}  // namespace canopy::ir
