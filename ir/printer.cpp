#include "printer.hpp"

#include <array>
#include <charconv>
#include <cstdint>
#include <string>

namespace canopy::ir {

namespace {

// Appends the text form of expressions and statements to one string.
class Printer {
 public:
  explicit Printer(const Kernel& kernel) : kernel_(kernel) {}

  std::string take() { return std::move(out_); }

  void expr(const Expr& e) {
    if (!e) {
      out_ += "<null>";
      return;
    }
    switch (e->kind) {
      case ExprKind::Const: return literal(e->as<Const>());
      case ExprKind::Index:
        out_ += "index(";
        number(e->as<Index>().dim);
        out_ += ')';
        return;
      case ExprKind::Param: return param_name(e->as<ParamRef>().param);
      case ExprKind::Var: append_name(out_, e->as<VarRef>().name); return;
      case ExprKind::Extent: {
        const auto& node = e->as<Extent>();
        out_ += "extent(";
        param_name(node.param);
        out_ += ", ";
        number(node.dim);
        out_ += ')';
        return;
      }
      case ExprKind::Load: {
        const auto& node = e->as<Load>();
        param_name(node.param);
        indices(node.indices);
        return;
      }
      case ExprKind::Unary: {
        const auto& node = e->as<Unary>();
        call(node.op == UnaryOp::Neg ? "neg" : "not", {&node.operand});
        return;
      }
      case ExprKind::Binary: return binary(e->as<Binary>());
      case ExprKind::Compare: {
        const auto& node = e->as<Compare>();
        infix(node.lhs, name_of(node.op), node.rhs);
        return;
      }
      case ExprKind::Cast: call(name_of(e->type), {&e->as<Cast>().operand}); return;
      case ExprKind::Call: {
        const auto& node = e->as<Call>();
        out_ += name_of(node.fn);
        out_ += '(';
        list(node.args);
        out_ += ')';
        return;
      }
      case ExprKind::Select: {
        const auto& node = e->as<Select>();
        call("select", {&node.cond, &node.if_true, &node.if_false});
        return;
      }
    }
    out_ += "<unknown expression>";
  }

  void stmt(const Stmt& s, int indent) {
    if (s && s->kind == StmtKind::Block) {
      for (const auto& child : s->as<Block>().stmts) stmt(child, indent);
      return;
    }
    line_start(indent);
    if (!s) {
      out_ += "<null>\n";
      return;
    }
    switch (s->kind) {
      case StmtKind::Block: break;  // handled above
      case StmtKind::Decl: {
        const auto& node = s->as<Decl>();
        out_ += "var ";
        append_name(out_, node.name);
        out_ += ": ";
        out_ += name_of(node.type);
        out_ += " = ";
        expr(node.init);
        break;
      }
      case StmtKind::Assign: {
        const auto& node = s->as<Assign>();
        append_name(out_, node.name);
        out_ += " = ";
        expr(node.value);
        break;
      }
      case StmtKind::Store: {
        const auto& node = s->as<Store>();
        param_name(node.param);
        indices(node.indices);
        out_ += " = ";
        expr(node.value);
        break;
      }
      case StmtKind::AtomicAdd: {
        const auto& node = s->as<AtomicAdd>();
        out_ += "atomic ";
        param_name(node.param);
        indices(node.indices);
        out_ += " += ";
        expr(node.value);
        break;
      }
      case StmtKind::Reduce: {
        const auto& node = s->as<Reduce>();
        out_ += "reduce ";
        param_name(node.param);
        out_ += " <- ";
        expr(node.value);
        break;
      }
      case StmtKind::If: {
        const auto& node = s->as<If>();
        out_ += "if ";
        expr(node.cond);
        out_ += " {\n";
        stmt(node.then_body, indent + 1);
        if (node.else_body) {
          line_start(indent);
          out_ += "} else {\n";
          stmt(node.else_body, indent + 1);
        }
        line_start(indent);
        out_ += '}';
        break;
      }
      case StmtKind::For: {
        const auto& node = s->as<For>();
        out_ += "for ";
        append_name(out_, node.var);
        out_ += " in ";
        expr(node.begin);
        out_ += " .. ";
        expr(node.end);
        if (!is_unit_step(node)) {
          out_ += " step ";
          expr(node.step);
        }
        out_ += " {\n";
        stmt(node.body, indent + 1);
        line_start(indent);
        out_ += '}';
        break;
      }
    }
    out_ += '\n';
  }

 private:
  // The step a `for` line leaves out: the literal 1 of the loop's type.
  static bool is_unit_step(const For& node) {
    return node.begin && is_const_value(node.step, 1.0) && node.step->type == node.begin->type;
  }

  // Kept out of line, like the other helpers that need buffers, so that the
  // recursive expr() stays a small stack frame.
  [[gnu::noinline]] void number(std::int64_t value) {
    std::array<char, 24> buffer{};
    auto written = std::to_chars(buffer.data(), buffer.data() + buffer.size(), value);
    out_.append(buffer.data(), written.ptr);
  }

  void line_start(int indent) {
    if (indent > 0) out_.append(static_cast<std::size_t>(indent) * 2, ' ');
  }

  [[gnu::noinline]] void param_name(int param) {
    if (param >= 0 && static_cast<std::size_t>(param) < kernel_.params.size()) {
      append_name(out_, kernel_.params[static_cast<std::size_t>(param)].name);
    } else {
      out_ += "<param ";
      number(param);
      out_ += '>';
    }
  }

  [[gnu::noinline]] void literal(const Const& node) {
    std::array<char, 64> buffer{};
    std::to_chars_result written{};
    switch (node.type) {
      case ScalarType::Bool: out_ += node.int_value != 0 ? "true" : "false"; return;
      case ScalarType::I32:
      case ScalarType::I64:
        written = std::to_chars(buffer.data(), buffer.data() + buffer.size(), node.int_value);
        break;
      case ScalarType::F32:
        written = std::to_chars(buffer.data(), buffer.data() + buffer.size(), static_cast<float>(node.float_value));
        break;
      case ScalarType::F64:
        written = std::to_chars(buffer.data(), buffer.data() + buffer.size(), node.float_value);
        break;
    }
    out_.append(buffer.data(), written.ptr);
    out_ += ':';
    out_ += name_of(node.type);
  }

  void binary(const Binary& node) {
    if (node.op == BinaryOp::Min || node.op == BinaryOp::Max) {
      call(node.op == BinaryOp::Min ? "min" : "max", {&node.lhs, &node.rhs});
    } else {
      infix(node.lhs, name_of(node.op), node.rhs);
    }
  }

  void infix(const Expr& lhs, std::string_view op, const Expr& rhs) {
    out_ += '(';
    expr(lhs);
    out_ += ' ';
    out_ += op;
    out_ += ' ';
    expr(rhs);
    out_ += ')';
  }

  void call(std::string_view name, std::initializer_list<const Expr*> args) {
    out_ += name;
    out_ += '(';
    bool first = true;
    for (const Expr* arg : args) {
      if (!first) out_ += ", ";
      first = false;
      expr(*arg);
    }
    out_ += ')';
  }

  void list(const std::vector<Expr>& exprs) {
    for (std::size_t i = 0; i < exprs.size(); ++i) {
      if (i > 0) out_ += ", ";
      expr(exprs[i]);
    }
  }

  void indices(const std::vector<Expr>& exprs) {
    out_ += '[';
    list(exprs);
    out_ += ']';
  }

  const Kernel& kernel_;
  std::string out_;
};

void print_param(std::string& out, const Param& param) {
  switch (param.kind) {
    case ParamKind::Array:
      out += name_of(param.access);
      out += ' ';
      out += name_of(param.type);
      out += '[';
      out += std::to_string(param.rank);
      out += "] ";
      break;
    case ParamKind::Scalar:
      out += "val ";
      out += name_of(param.type);
      out += ' ';
      break;
    case ParamKind::Reduction:
      out += name_of(param.reduce);
      out += ' ';
      out += name_of(param.type);
      out += ' ';
      break;
  }
  append_name(out, param.name);
}

constexpr std::string_view kKeywords[] = {
    "kernel", "dims",  "var",  "if",  "else", "for",   "in",     "step",   "atomic", "reduce", "true", "false", "val",
    "out",    "inout", "sum",  "min", "max",  "index", "extent", "select", "neg",    "not",    "bool", "i32",   "i64",
    "f32",    "f64",   "sqrt", "exp", "log",  "sin",   "cos",    "floor",  "abs",    "pow",    "fma",
};

}  // namespace

bool is_keyword(std::string_view word) {
  for (auto keyword : kKeywords)
    if (keyword == word) return true;
  return false;
}

bool is_valid_name(std::string_view name) {
  if (name.empty()) return false;
  auto is_letter = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  if (!is_letter(name[0])) return false;
  for (char c : name.substr(1))
    if (!is_letter(c) && !(c >= '0' && c <= '9') && c != '.') return false;
  return true;
}

void append_name(std::string& out, std::string_view name) {
  if (is_keyword(name) || name == "inf" || name == "nan") out += '$';
  out += name;
}

std::string print(const Kernel& kernel) {
  std::string out = "kernel ";
  append_name(out, kernel.name);
  out += '(';
  for (std::size_t i = 0; i < kernel.params.size(); ++i) {
    if (i > 0) out += ", ";
    print_param(out, kernel.params[i]);
  }
  out += ") dims ";
  out += std::to_string(kernel.dims);
  out += " {\n";
  if (kernel.body) out += print(kernel.body, kernel, 1);
  out += "}\n";
  return out;
}

std::string print(const Expr& expr, const Kernel& kernel) {
  Printer printer(kernel);
  printer.expr(expr);
  return printer.take();
}

std::string print(const Stmt& stmt, const Kernel& kernel, int indent) {
  Printer printer(kernel);
  printer.stmt(stmt, indent);
  return printer.take();
}

std::ostream& operator<<(std::ostream& out, const Kernel& kernel) { return out << print(kernel); }

}  // namespace canopy::ir
