#include "c_source.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <functional>
#include <limits>
#include <unordered_map>

#include <canopy/ir/analysis/footprint.hpp>
#include <canopy/ir/error.hpp>
#include <canopy/ir/verifier.hpp>

namespace canopy::jit {

using ir::ScalarType;

namespace {

// C's operator precedence, higher binds tighter.
constexpr int kTernary = 3, kLogicalOr = 4, kLogicalAnd = 5, kBitOr = 6, kBitXor = 7, kBitAnd = 8, kEquality = 9,
              kRelational = 10, kShift = 11, kAdditive = 12, kMultiplicative = 13, kUnary = 15, kPrimary = 16;

// The coordinate names of index(0), index(1), index(2).
constexpr std::array<const char*, 3> kCoordinateNames{"i", "j", "k"};

// Words no name in the generated source may be, in every dialect: C's
// keywords, the types the base prints, the helpers it defines, and the
// functions and macros it calls.
constexpr std::string_view kReservedWords[] = {
    "auto",     "break",    "case",       "char",    "const",  "continue", "default", "do",     "double",   "else",
    "enum",     "extern",   "float",      "for",     "goto",   "if",       "inline",  "int",    "long",     "register",
    "restrict", "return",   "short",      "signed",  "sizeof", "static",   "struct",  "switch", "typedef",  "union",
    "unsigned", "void",     "volatile",   "while",   "bool",   "true",     "false",   "NULL",   "div_i32",  "div_i64",
    "rem_i32",  "rem_i64",  "abs_i32",    "abs_i64", "fmin",   "fmax",     "fmod",    "sqrt",   "exp",      "log",
    "sin",      "cos",      "floor",      "pow",     "fabs",   "abs",      "min",     "max",    "INFINITY", "NAN",
    "_Bool",    "_Complex", "_Imaginary", "main"};

// A valid C identifier close to `name`: characters C does not allow become
// '_', and names C reserves for the implementation (__x, _X) get a 'v' in front.
std::string sanitized(std::string_view name) {
  std::string out;
  for (char c : name) out += std::isalnum(static_cast<unsigned char>(c)) || c == '_' ? c : '_';
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0]))) out.insert(0, "v");
  if (out.size() > 1 && out[0] == '_' && (out[1] == '_' || std::isupper(static_cast<unsigned char>(out[1]))))
    out.insert(0, "v");
  return out;
}

// The locals and loop variables of a kernel, in the order they are declared.
struct LocalCollector : ir::Visitor {
  std::vector<std::string> names;
  void visit(const ir::Decl& node) override {
    names.push_back(node.name);
    ir::Visitor::visit(node);
  }
  void visit(const ir::For& node) override {
    names.push_back(node.var);
    ir::Visitor::visit(node);
  }
};

// Finds what features_of reports. An f64 value always comes from a literal,
// a parameter, a variable, a load or a cast; other nodes take their
// operands' type.
struct FeatureFinder : ir::Visitor {
  CSourceFeatures features;
  void note(ScalarType type) { features.uses_f64 = features.uses_f64 || type == ScalarType::F64; }
  void visit(const ir::Const& node) override { note(node.type); }
  void visit(const ir::ParamRef& node) override { note(node.type); }
  void visit(const ir::VarRef& node) override { note(node.type); }
  void visit(const ir::Load& node) override {
    note(node.type);
    ir::Visitor::visit(node);
  }
  void visit(const ir::Cast& node) override {
    note(node.type);
    ir::Visitor::visit(node);
  }
  void visit(const ir::Decl& node) override {
    note(node.type);
    ir::Visitor::visit(node);
  }
};

// True when an expression reads no local variable other than the loop
// counters in `counters`, and no array: its value cannot change while a loop
// runs.
struct InvarianceCheck : ir::Visitor {
  const std::set<std::string>& counters;
  bool invariant = true;
  explicit InvarianceCheck(const std::set<std::string>& c) : counters(c) {}
  void visit(const ir::VarRef& node) override { invariant = invariant && counters.count(node.name) > 0; }
  void visit(const ir::Load&) override { invariant = false; }
};

std::string shortest(double value, bool is_f32) {
  std::array<char, 64> buffer{};
  auto result = is_f32 ? std::to_chars(buffer.data(), buffer.data() + buffer.size(), static_cast<float>(value))
                       : std::to_chars(buffer.data(), buffer.data() + buffer.size(), value);
  std::string text(buffer.data(), result.ptr);
  // A float literal needs a point or an exponent: "1" is an int.
  if (text.find_first_of(".e") == std::string::npos) text += ".0";
  return text;
}

std::string parenthesised(const std::string& text, int precedence, int at_least) {
  return precedence < at_least ? "(" + text + ")" : text;
}

}  // namespace

// ---- names ----------------------------------------------------------------------

struct CSourcePrinter::Names {
  std::set<std::string> taken;
  std::string kernel;
  std::vector<std::string> params;                ///< per parameter; a reduction's accumulator
  std::vector<std::vector<std::string>> extents;  ///< per array parameter
  std::vector<std::string> firsts;                ///< per array parameter: the element at the pointer
  std::vector<std::string> partials, scratch;     ///< per reduction parameter
  std::unordered_map<std::string, std::string> locals;
  std::array<std::string, 3> coordinate, begin, end, count;
  std::string points, items, item, chunk, first, last, point, lane, half;
};

CSourcePrinter::CSourcePrinter(const ir::Kernel& kernel, CSourceOptions options)
    : kernel_(kernel), options_(options), names_(std::make_unique<Names>()) {}

CSourcePrinter::~CSourcePrinter() = default;

void CSourcePrinter::claim_names() {
  Names& n = *names_;
  n.kernel = unreserved(kernel_.name);
  const std::size_t count = kernel_.params.size();
  for (const auto& param : kernel_.params) n.params.push_back(claim(param.name));
  LocalCollector locals;
  locals.walk(kernel_.body);
  for (const auto& name : locals.names)
    if (!n.locals.count(name)) n.locals[name] = claim(name);
  for (int d = 0; d < kernel_.dims; ++d) n.coordinate[d] = claim(kCoordinateNames[d]);
  n.extents.resize(count);
  n.firsts.resize(count);
  n.partials.resize(count);
  n.scratch.resize(count);
  for (std::size_t p = 0; p < count; ++p) {
    const auto& param = kernel_.params[p];
    for (int d = 0; d < param.rank && param.is_array(); ++d)
      n.extents[p].push_back(claim(param.name + "_n" + std::to_string(d)));
    if (param.is_array()) n.firsts[p] = claim(param.name + "_first");
    if (!param.is_reduction()) continue;
    n.partials[p] = claim(param.name + "_partials");
    n.scratch[p] = claim(param.name + "_scratch");
  }
  for (int d = 0; d < kernel_.dims; ++d) {
    n.begin[d] = claim(std::string(kCoordinateNames[d]) + "_begin");
    n.end[d] = claim(std::string(kCoordinateNames[d]) + "_end");
    n.count[d] = claim(std::string(kCoordinateNames[d]) + "_count");
  }
  for (auto [field, word] : {std::pair{&n.points, "points"},
                             {&n.items, "items"},
                             {&n.item, "item"},
                             {&n.chunk, "chunk"},
                             {&n.first, "first"},
                             {&n.last, "last"},
                             {&n.point, "point"},
                             {&n.lane, "lane"},
                             {&n.half, "width"}})
    *field = claim(word);
}

std::string CSourcePrinter::claim(std::string_view wanted) {
  const std::string base = unreserved(wanted);
  std::string candidate = base;
  for (int suffix = 2; names_->taken.count(candidate); ++suffix) candidate = base + "_" + std::to_string(suffix);
  names_->taken.insert(candidate);
  return candidate;
}

// `name` as a C identifier that is no reserved word: `int` becomes `int_`,
// and a name in a reserved family (`convert_x`) becomes `v_convert_x`.
std::string CSourcePrinter::unreserved(std::string_view name) const {
  std::string word = sanitized(name);
  if (!is_reserved(word)) return word;
  if (!is_reserved(word + "_")) return word + "_";
  return "v_" + word;
}

bool CSourcePrinter::is_reserved(std::string_view word) const {
  for (auto reserved : kReservedWords)
    if (word == reserved) return true;
  return false;
}

// ---- the translation unit ---------------------------------------------------

CSource CSourcePrinter::print() {
  ir::verify(kernel_);
  claim_names();
  const CSourceFeatures features = features_of(kernel_);
  helpers_.clear();
  indent_ = 1;
  CSource source;
  source.entry = names_->kernel;
  std::string functions;
  if (features.has_reductions) {
    functions = signature(source.entry) + " {\n" + printed([&] { print_reduction_kernel(); }) + "}\n";
  } else {
    source.edge_entry = unreserved(kernel_.name + "_edges");
    const std::string statements = printed([&] {
      for (const auto& stmt : kernel_.body->as<ir::Block>().stmts) walk(stmt);
    });
    functions = "// Whole work-groups: every work-item is a point of the piece.\n" + signature(source.entry) + " {\n" +
                printed([&] { print_coordinates(false); }) + statements + "}\n\n" +
                "// The work-groups at the ends of the piece: work-items past an end do nothing.\n" +
                signature(source.edge_entry) + " {\n" + printed([&] { print_coordinates(true); }) + statements + "}\n";
    const std::optional<ScalarType> type = options_.streaming_entry ? streaming_entry_type(kernel_) : std::nullopt;
    if (type && !vector_type(*type, 64 / static_cast<int>(ir::size_of(*type))).empty()) {
      const int width = 64 / static_cast<int>(ir::size_of(*type));
      source.stream_entry = claim(kernel_.name + "_stream");
      source.stream_width = width;
      const std::string vector = claim("vector");
      functions += "\n// Streaming: work-item w runs points " + std::to_string(width) + "w .. " +
                   std::to_string(width) + "w+" + std::to_string(width - 1) +
                   " as one vector (whole work-groups inside the piece).\n" + signature(source.stream_entry) +
                   " {\n  const " + type_name(ScalarType::I64) + " " + vector + " = " + global_id(0) + ";\n" +
                   streaming_statements(*type, width, vector) + "}\n";
    }
  }
  source.text =
      "// Kernel '" + kernel_.name + "' in " + dialect_name() + ", generated by Canopy from its optimized IR.\n";
  source.text += preamble(features);
  for (const auto& name : helpers_) {
    std::string helper = base_helper(name);
    if (helper.empty()) helper = dialect_helper(name);
    if (helper.empty()) throw Error("the " + dialect_name() + " printer has no helper '" + name + "' (a Canopy bug)");
    source.text += "\n" + helper;
  }
  source.text += "\n" + functions;
  return source;
}

// ---- the streaming entry ----------------------------------------------------

std::optional<ScalarType> streaming_entry_type(const ir::Kernel& kernel) {
  if (kernel.dims != 1) return std::nullopt;
  std::optional<ScalarType> type;
  auto agree = [&](ScalarType t) {
    if (!ir::is_float(t) || (type && *type != t)) return false;
    type = t;
    return true;
  };
  for (const auto& param : kernel.params)
    if (param.is_reduction() || (param.is_array() && param.rank != 1) || !agree(param.type)) return std::nullopt;
  // Locals that hold the point's index (i = index(0)) may index arrays.
  std::set<std::string> index_names;
  auto at_point = [&](const std::vector<ir::Expr>& indices) {
    if (indices.size() != 1) return false;
    const ir::Expr& index = indices[0];
    return (index->kind == ir::ExprKind::Index && index->as<ir::Index>().dim == 0) ||
           (index->kind == ir::ExprKind::Var && index_names.count(index->as<ir::VarRef>().name));
  };
  std::function<bool(const ir::Expr&)> suits = [&](const ir::Expr& e) -> bool {
    if (!agree(e->type)) return false;
    switch (e->kind) {
      case ir::ExprKind::Const:
      case ir::ExprKind::Param:
      case ir::ExprKind::Var: return true;
      case ir::ExprKind::Load: return at_point(e->as<ir::Load>().indices);
      case ir::ExprKind::Unary: return e->as<ir::Unary>().op == ir::UnaryOp::Neg && suits(e->as<ir::Unary>().operand);
      case ir::ExprKind::Binary: {
        const auto& b = e->as<ir::Binary>();
        using ir::BinaryOp;
        const bool arithmetic = b.op == BinaryOp::Add || b.op == BinaryOp::Sub || b.op == BinaryOp::Mul ||
                                b.op == BinaryOp::Div || b.op == BinaryOp::Min || b.op == BinaryOp::Max;
        return arithmetic && suits(b.lhs) && suits(b.rhs);
      }
      case ir::ExprKind::Call: {
        const auto& c = e->as<ir::Call>();
        return (c.fn == ir::MathFn::Sqrt || c.fn == ir::MathFn::Abs) && c.args.size() == 1 && suits(c.args[0]);
      }
      default: return false;
    }
  };
  for (const auto& stmt : kernel.body->as<ir::Block>().stmts) {
    switch (stmt->kind) {
      case ir::StmtKind::Decl: {
        const auto& d = stmt->as<ir::Decl>();
        if (d.init->kind == ir::ExprKind::Index && d.init->as<ir::Index>().dim == 0) {
          index_names.insert(d.name);
          continue;
        }
        if (!agree(d.type) || !suits(d.init)) return std::nullopt;
        break;
      }
      case ir::StmtKind::Assign:
        if (index_names.count(stmt->as<ir::Assign>().name) || !suits(stmt->as<ir::Assign>().value)) return std::nullopt;
        break;
      case ir::StmtKind::Store:
        if (!at_point(stmt->as<ir::Store>().indices) || !suits(stmt->as<ir::Store>().value)) return std::nullopt;
        break;
      default: return std::nullopt;
    }
  }
  return type;
}

std::string CSourcePrinter::vector_expression(const ir::Expr& expr, int width, const std::string& vector) {
  const Names& n = *names_;
  auto sub = [&](const ir::Expr& e) {
    const std::string text = vector_expression(e, width, vector);
    const bool compound = e->kind == ir::ExprKind::Binary || e->kind == ir::ExprKind::Unary;
    return compound ? "(" + text + ")" : text;
  };
  switch (expr->kind) {
    case ir::ExprKind::Const: return literal(expr->as<ir::Const>());
    case ir::ExprKind::Param: return n.params[static_cast<std::size_t>(expr->as<ir::ParamRef>().param)];
    case ir::ExprKind::Var: return n.locals.at(expr->as<ir::VarRef>().name);
    case ir::ExprKind::Load: {
      const auto p = static_cast<std::size_t>(expr->as<ir::Load>().param);
      return vector_load(n.params[p], window_vector(n.firsts[p], vector, width), width);
    }
    case ir::ExprKind::Unary: return "-" + sub(expr->as<ir::Unary>().operand);
    case ir::ExprKind::Binary: {
      const auto& b = expr->as<ir::Binary>();
      switch (b.op) {
        case ir::BinaryOp::Add: return sub(b.lhs) + " + " + sub(b.rhs);
        case ir::BinaryOp::Sub: return sub(b.lhs) + " - " + sub(b.rhs);
        case ir::BinaryOp::Mul: return sub(b.lhs) + " * " + sub(b.rhs);
        case ir::BinaryOp::Div: return sub(b.lhs) + " / " + sub(b.rhs);
        case ir::BinaryOp::Min: return "fmin(" + sub(b.lhs) + ", " + sub(b.rhs) + ")";
        default: return "fmax(" + sub(b.lhs) + ", " + sub(b.rhs) + ")";
      }
    }
    default: {
      const auto& c = expr->as<ir::Call>();
      return math_function(c.fn, c.type) + "(" + vector_expression(c.args[0], width, vector) + ")";
    }
  }
}

// The vector `vector` of an array whose buffer starts at element `first` (a
// multiple of every vector width: the runtime starts windows at multiples
// of 64 elements), counted from the buffer's start.
std::string CSourcePrinter::window_vector(const std::string& first, const std::string& vector, int width) {
  return "(" + vector + " - " + first + " / " + std::to_string(width) + ")";
}

std::string CSourcePrinter::streaming_statements(ScalarType type, int width, const std::string& vector) {
  // Arrays the kernel reads are stored with plain vector stores (a later
  // load in the kernel must see them); the others with streaming stores.
  std::set<int> read;
  for (const auto& array : ir::footprint_of(kernel_).arrays)
    if (array.reads.present) read.insert(array.param);
  const auto& stmts = kernel_.body->as<ir::Block>().stmts;
  const Names& n = *names_;
  const std::string vector_of = vector_type(type, width);
  std::string text;
  for (const auto& stmt : stmts) {
    if (stmt->kind == ir::StmtKind::Decl) {
      const auto& d = stmt->as<ir::Decl>();
      if (d.init->kind == ir::ExprKind::Index) {
        text += "  // " + n.locals.at(d.name) + ": the point's index, " + std::to_string(width) + " * " + vector +
                " + lane\n";
        continue;
      }
      text += "  " + vector_of + " " + n.locals.at(d.name) + " = " + vector_expression(d.init, width, vector) + ";\n";
    } else if (stmt->kind == ir::StmtKind::Assign) {
      const auto& a = stmt->as<ir::Assign>();
      text += "  " + n.locals.at(a.name) + " = " + vector_expression(a.value, width, vector) + ";\n";
    } else {
      const auto& st = stmt->as<ir::Store>();
      text += "  " +
              vector_store(n.params[static_cast<std::size_t>(st.param)],
                           window_vector(n.firsts[static_cast<std::size_t>(st.param)], vector, width),
                           vector_expression(st.value, width, vector), type, width, !read.count(st.param)) +
              "\n";
    }
  }
  return text;
}

std::string CSourcePrinter::printed(const std::function<void()>& print) {
  std::string saved;
  std::swap(saved, body_);
  print();
  std::swap(saved, body_);
  return saved;
}

std::string CSourcePrinter::signature(const std::string& function) {
  const Names& n = *names_;
  std::vector<std::string> groups;
  const std::string index_type = type_name(ScalarType::I64);
  for (std::size_t p = 0; p < kernel_.params.size(); ++p) {
    const ir::Param& param = kernel_.params[p];
    std::string group;
    if (param.is_array()) {
      group = global_pointer(param.type, !param.writes()) + " " + n.params[p];
      for (const auto& extent : n.extents[p]) group += ", " + index_type + " " + extent;
      group += ", " + index_type + " " + n.firsts[p];
    } else if (param.is_scalar()) {
      group = scalar_argument_type(param.type) + " " + n.params[p];
    } else {
      group = global_pointer(param.type, false) + " " + n.partials[p];
      if (auto scratch = scratch_parameter(param.type, n.scratch[p]); !scratch.empty()) group += ", " + scratch;
    }
    groups.push_back(group);
  }
  const bool reduces = features_of(kernel_).has_reductions;
  std::string range;
  for (int d = 0; d < kernel_.dims; ++d) {
    if (!range.empty()) range += ", ";
    if (reduces || !begin_in_global_offset()) range += index_type + " " + n.begin[d] + ", ";
    range += index_type + " " + n.end[d];
  }
  groups.push_back(range);
  std::string text = kernel_qualifier() + " " + function + "(";
  for (std::size_t g = 0; g < groups.size(); ++g) text += "\n    " + groups[g] + (g + 1 < groups.size() ? "," : ")");
  return text;
}

void CSourcePrinter::line(const std::string& text) {
  body_.append(static_cast<std::size_t>(indent_) * 2, ' ');
  body_ += text;
  body_ += '\n';
}

// The point's coordinates from the global ids (the last index in device
// dimension 0), and when `guarded` the check against the piece's ends.
void CSourcePrinter::print_coordinates(bool guarded) {
  const Names& n = *names_;
  const std::string index_type = type_name(ScalarType::I64);
  std::string guard;
  for (int d = 0; d < kernel_.dims; ++d) {
    const std::string id = global_id(kernel_.dims - 1 - d);
    const std::string value = begin_in_global_offset() ? id : n.begin[d] + " + " + id;
    line("const " + index_type + " " + n.coordinate[d] + " = " + value + ";");
    guard += (d ? " || " : "") + n.coordinate[d] + " >= " + n.end[d];
  }
  if (guarded) line("if (" + guard + ") return;");
}

void CSourcePrinter::print_reduction_kernel() {
  const Names& n = *names_;
  for (std::size_t p = 0; p < kernel_.params.size(); ++p) {
    const ir::Param& param = kernel_.params[p];
    if (!param.is_reduction()) continue;
    const auto identity = ir::identity_of(param.reduce, param.type);
    line(type_name(param.type) + " " + n.params[p] + " = " + literal(identity->as<ir::Const>()) + ";");
    if (auto scratch = scratch_declaration(param.type, n.scratch[p]); !scratch.empty()) line(scratch);
  }
  print_walk();
  print_work_group_combine();
}

// The loop over this work-item's points of the piece, with the kernel's body inside.
void CSourcePrinter::print_walk() {
  const Names& n = *names_;
  const std::string index_type = type_name(ScalarType::I64);
  const int dims = kernel_.dims;
  std::string points = "(" + n.end[0] + " - " + n.begin[0] + ")";
  for (int d = 1; d < dims; ++d) {
    line("const " + index_type + " " + n.count[d] + " = " + n.end[d] + " - " + n.begin[d] + ";");
    points += " * " + n.count[d];
  }
  if (dims == 1) points = n.end[0] + " - " + n.begin[0];
  line("const " + index_type + " " + n.points + " = " + points + ";");
  line("const " + index_type + " " + n.items + " = " + global_size() + ";");
  line("const " + index_type + " " + n.item + " = " + global_id(0) + ";");
  if (options_.reduction_walk == ReductionWalk::Chunked) {
    line("const " + index_type + " " + n.chunk + " = (" + n.points + " + " + n.items + " - 1) / " + n.items + ";");
    line("const " + index_type + " " + n.first + " = " + n.item + " * " + n.chunk + ";");
    line("const " + index_type + " " + n.last + " = " + integer_min_max(true, n.first + " + " + n.chunk, n.points) +
         ";");
    line("for (" + index_type + " " + n.point + " = " + n.first + "; " + n.point + " < " + n.last + "; ++" + n.point +
         ") {");
  } else {
    line("for (" + index_type + " " + n.point + " = " + n.item + "; " + n.point + " < " + n.points + "; " + n.point +
         " += " + n.items + ") {");
  }
  ++indent_;
  // The point's coordinates, the last index fastest.
  std::array<std::string, 3> offset{n.point, n.point, n.point};
  if (dims == 2) {
    offset[0] = n.point + " / " + n.count[1];
    offset[1] = n.point + " % " + n.count[1];
  } else if (dims == 3) {
    offset[0] = n.point + " / (" + n.count[1] + " * " + n.count[2] + ")";
    offset[1] = n.point + " / " + n.count[2] + " % " + n.count[1];
    offset[2] = n.point + " % " + n.count[2];
  }
  for (int d = 0; d < dims; ++d)
    line("const " + index_type + " " + n.coordinate[d] + " = " + n.begin[d] + " + " + offset[d] + ";");
  for (const auto& stmt : kernel_.body->as<ir::Block>().stmts) walk(stmt);
  --indent_;
  line("}");
}

// Each work-group combines its work-items' values in a tree in scratch
// memory; work-item 0 writes the group's partial result.
void CSourcePrinter::print_work_group_combine() {
  const Names& n = *names_;
  std::vector<std::size_t> reductions;
  for (std::size_t p = 0; p < kernel_.params.size(); ++p)
    if (kernel_.params[p].is_reduction()) reductions.push_back(p);
  line("// One partial result per work-group: a tree over its work-items' values.");
  line("const int " + n.lane + " = " + local_id() + ";");
  for (auto p : reductions) line(n.scratch[p] + "[" + n.lane + "] = " + n.params[p] + ";");
  line(barrier());
  line("for (int " + n.half + " = " + local_size() + " / 2; " + n.half + " > 0; " + n.half + " /= 2) {");
  ++indent_;
  line("if (" + n.lane + " < " + n.half + ") {");
  ++indent_;
  for (auto p : reductions) {
    const ir::Param& param = kernel_.params[p];
    const std::string mine = n.scratch[p] + "[" + n.lane + "]";
    const std::string other = n.scratch[p] + "[" + n.lane + " + " + n.half + "]";
    line(mine + " = " + combine(param.reduce, param.type, mine, other) + ";");
  }
  --indent_;
  line("}");
  line(barrier());
  --indent_;
  line("}");
  line("if (" + n.lane + " == 0) {");
  ++indent_;
  for (auto p : reductions) line(n.partials[p] + "[" + group_id() + "] = " + n.scratch[p] + "[0];");
  --indent_;
  line("}");
}

// ---- helpers ------------------------------------------------------------------

void CSourcePrinter::need_helper(const std::string& name) {
  for (const auto& helper : helpers_)
    if (helper == name) return;
  helpers_.push_back(name);
}

std::string CSourcePrinter::integer_abs(const std::string& operand, ScalarType type) {
  const std::string name = type == ScalarType::I64 ? "abs_i64" : "abs_i32";
  need_helper(name);
  return name + "(" + operand + ")";
}

std::string CSourcePrinter::base_helper(const std::string& name) const {
  const bool is_div = name.rfind("div_", 0) == 0, is_rem = name.rfind("rem_", 0) == 0,
             is_abs = name.rfind("abs_", 0) == 0;
  if (!is_div && !is_rem && !is_abs) return "";
  const ScalarType type = name.substr(4) == "i32" ? ScalarType::I32 : ScalarType::I64;
  const std::string t = type_name(type), u = unsigned_type_name(type);
  const std::string qualifier = helper_qualifier().empty() ? "" : helper_qualifier() + " ";
  if (is_abs)
    return "// Canopy's integer abs: abs(MIN) wraps to MIN, never undefined.\n" + qualifier + t + " " + name + "(" + t +
           " x) {\n  return x < 0 ? (" + t + ")((" + u + ")0 - (" + u + ")x) : x;\n}\n";
  if (is_div)
    return "// Canopy's integer division: x / 0 == 0 and MIN / -1 == MIN, never a trap.\n" + qualifier + t + " " +
           name + "(" + t + " x, " + t + " y) {\n  if (y == 0) return 0;\n  if (y == -1) return (" + t + ")-(" + u +
           ")x;\n  return x / y;\n}\n";
  return "// Canopy's integer remainder: x % 0 == 0 and MIN % -1 == 0, never a trap.\n" + qualifier + t + " " + name +
         "(" + t + " x, " + t + " y) {\n  if (y == 0 || y == -1) return 0;\n  return x % y;\n}\n";
}

std::string CSourcePrinter::type_name(ScalarType type) const {
  switch (type) {
    case ScalarType::Bool: return "bool";
    case ScalarType::I32: return "int";
    case ScalarType::I64: return "long";
    case ScalarType::F32: return "float";
    case ScalarType::F64: return "double";
  }
  return "int";
}

std::string CSourcePrinter::unsigned_type_name(ScalarType type) const {
  return type == ScalarType::I64 || type == ScalarType::F64 ? "ulong" : "uint";
}

std::string CSourcePrinter::storage_type_name(ScalarType type) const {
  return type == ScalarType::Bool ? "uchar" : type_name(type);
}

std::string CSourcePrinter::scalar_argument_type(ScalarType type) const {
  return type == ScalarType::Bool ? "int" : type_name(type);
}

std::string CSourcePrinter::math_function(ir::MathFn fn, ScalarType type) const {
  if (fn == ir::MathFn::Abs) return "fabs";
  return std::string(ir::name_of(fn));
}

std::string CSourcePrinter::integer_min_max(bool is_min, const std::string& a, const std::string& b) const {
  return std::string(is_min ? "min" : "max") + "(" + a + ", " + b + ")";
}

std::string CSourcePrinter::literal(const ir::Const& node) const {
  switch (node.type) {
    case ScalarType::Bool: return node.int_value ? "true" : "false";
    case ScalarType::I32:
      if (node.int_value == std::numeric_limits<std::int32_t>::min()) return "(-2147483647 - 1)";
      return std::to_string(node.int_value);
    case ScalarType::I64:
      if (node.int_value == std::numeric_limits<std::int64_t>::min())
        return "(-9223372036854775807" + long_suffix() + " - 1" + long_suffix() + ")";
      return std::to_string(node.int_value) + long_suffix();
    case ScalarType::F32:
    case ScalarType::F64: {
      const bool is_f32 = node.type == ScalarType::F32;
      const double value = node.float_value;
      const std::string cast = is_f32 ? "" : "(double)";
      if (std::isnan(value)) return (std::signbit(value) ? "-" : "") + cast + "NAN";
      if (std::isinf(value)) return (value < 0 ? "-" : "") + cast + "INFINITY";
      return shortest(value, is_f32) + (is_f32 ? "f" : "");
    }
  }
  return "0";
}

std::string CSourcePrinter::combine(ir::ReduceOp op, ScalarType type, const std::string& a, const std::string& b) {
  const bool is_float = ir::is_float(type);
  switch (op) {
    case ir::ReduceOp::Sum:
      if (is_float) return a + " + " + b;
      return "(" + type_name(type) + ")((" + unsigned_type_name(type) + ")" + a + " + (" + unsigned_type_name(type) +
             ")" + b + ")";
    case ir::ReduceOp::Min: return is_float ? "fmin(" + a + ", " + b + ")" : integer_min_max(true, a, b);
    case ir::ReduceOp::Max: return is_float ? "fmax(" + a + ", " + b + ")" : integer_min_max(false, a, b);
  }
  return a;
}

bool CSourcePrinter::invariant_in_loops(const ir::Expr& expr) const {
  InvarianceCheck check(loop_vars_);
  check.walk(expr);
  return check.invariant;
}

// ---- bounds of integer expressions ---------------------------------------------

CSourcePrinter::Bounds CSourcePrinter::type_limits(ScalarType type) {
  if (type == ScalarType::I32)
    return {std::numeric_limits<std::int32_t>::min(), std::numeric_limits<std::int32_t>::max()};
  if (type == ScalarType::Bool) return {0, 1};
  return {std::numeric_limits<std::int64_t>::min(), std::numeric_limits<std::int64_t>::max()};
}

// What is known of an integer expression's value without running it: exact
// for literals, the range of indices and extents, and what arithmetic on
// known bounds gives; nothing for values from memory or parameters.
std::optional<CSourcePrinter::Bounds> CSourcePrinter::bounds(const ir::Expr& expr) const {
  if (!expr || !(ir::is_int(expr->type) || expr->type == ScalarType::Bool)) return std::nullopt;
  switch (expr->kind) {
    case ir::ExprKind::Const: return Bounds{expr->as<ir::Const>().int_value, expr->as<ir::Const>().int_value};
    case ir::ExprKind::Index:
      // index(d) < end <= the largest i64, so index(d) + 1 never overflows.
      if (coordinates_non_negative()) return Bounds{0, std::numeric_limits<std::int64_t>::max() - 1};
      return Bounds{std::numeric_limits<std::int64_t>::min(), std::numeric_limits<std::int64_t>::max() - 1};
    case ir::ExprKind::Extent: return Bounds{0, kLargestExtent};
    case ir::ExprKind::Binary: return binary_bounds(expr->as<ir::Binary>());
    case ir::ExprKind::Cast: {
      const auto& cast = expr->as<ir::Cast>();
      auto inner = bounds(cast.operand);
      const Bounds limits = type_limits(cast.type);
      if (inner && inner->lo >= limits.lo && inner->hi <= limits.hi) return inner;
      return limits;
    }
    default: return type_limits(expr->type);
  }
}

// The exact (unwrapped) bounds of + - * min max of two integers whose
// bounds are known; nothing for other operators.
std::optional<CSourcePrinter::Bounds> CSourcePrinter::exact_bounds(const ir::Binary& node) const {
  auto a = bounds(node.lhs), b = bounds(node.rhs);
  if (!a || !b || !ir::is_int(node.type)) return std::nullopt;
  switch (node.op) {
    case ir::BinaryOp::Add: return Bounds{a->lo + b->lo, a->hi + b->hi};
    case ir::BinaryOp::Sub: return Bounds{a->lo - b->hi, a->hi - b->lo};
    case ir::BinaryOp::Mul: {
      const Wide products[4] = {a->lo * b->lo, a->lo * b->hi, a->hi * b->lo, a->hi * b->hi};
      return Bounds{*std::min_element(products, products + 4), *std::max_element(products, products + 4)};
    }
    case ir::BinaryOp::Min: return Bounds{std::min(a->lo, b->lo), std::min(a->hi, b->hi)};
    case ir::BinaryOp::Max: return Bounds{std::max(a->lo, b->lo), std::max(a->hi, b->hi)};
    default: return std::nullopt;
  }
}

std::optional<CSourcePrinter::Bounds> CSourcePrinter::binary_bounds(const ir::Binary& node) const {
  const Bounds limits = type_limits(node.type);
  const auto exact = exact_bounds(node);
  // A result that may wrap can be anything.
  if (!exact || exact->lo < limits.lo || exact->hi > limits.hi) return limits;
  return exact;
}

// True when + - * of `node` cannot overflow its type.
bool CSourcePrinter::fits(const ir::Binary& node) const {
  const Bounds limits = type_limits(node.type);
  const auto exact = exact_bounds(node);
  return exact && exact->lo >= limits.lo && exact->hi <= limits.hi;
}

// ---- expressions ----------------------------------------------------------------

CSourcePrinter::Code CSourcePrinter::code_of(const ir::Expr& expr) {
  result_ = {};
  walk(expr);
  return std::move(result_);
}

std::string CSourcePrinter::operand(const ir::Expr& expr, int at_least) {
  Code code = code_of(expr);
  return parenthesised(code.text, code.precedence, at_least);
}

std::string CSourcePrinter::unsigned_operand(const ir::Expr& expr, ScalarType type) {
  if (ir::is_const(expr) && expr->as<ir::Const>().int_value >= 0 &&
      expr->as<ir::Const>().int_value != std::numeric_limits<std::int64_t>::min())
    return std::to_string(expr->as<ir::Const>().int_value) + (type == ScalarType::I64 ? "U" + long_suffix() : "u");
  return "(" + unsigned_type_name(type) + ")" + operand(expr, kUnary);
}

// (T)((U)a op (U)b): wrapping integer arithmetic without C's undefined overflow.
std::string CSourcePrinter::wrap(const std::string& op, const ir::Expr& lhs, const ir::Expr& rhs, ScalarType type) {
  return "(" + type_name(type) + ")(" + unsigned_operand(lhs, type) + " " + op + " " + unsigned_operand(rhs, type) +
         ")";
}

std::string CSourcePrinter::element(int param, const std::vector<ir::Expr>& indices) {
  const auto& extents = names_->extents.at(static_cast<std::size_t>(param));
  std::string index;
  if (indices.size() == 1) {
    index = operand(indices[0], kAdditive);  // "- first" follows
  } else {
    index = operand(indices[0], kMultiplicative);
    for (std::size_t d = 1; d < indices.size(); ++d) {
      if (d > 1) index = "(" + index + ")";
      // (i * n1) + j - 1 is i * n1 + (j - 1): an element's offset never overflows.
      index += " * " + extents.at(d) + " + " + operand(indices[d], kAdditive);
    }
  }
  const auto p = static_cast<std::size_t>(param);
  return names_->params.at(p) + "[" + index + " - " + names_->firsts.at(p) + "]";
}

void CSourcePrinter::visit(const ir::Const& node) {
  std::string text = literal(node);
  const int precedence = text[0] == '-' ? kUnary : kPrimary;
  result_ = {std::move(text), precedence};
}

void CSourcePrinter::visit(const ir::Index& node) {
  result_ = {names_->coordinate.at(static_cast<std::size_t>(node.dim)), kPrimary};
}

void CSourcePrinter::visit(const ir::ParamRef& node) {
  result_ = {names_->params.at(static_cast<std::size_t>(node.param)), kPrimary};
}

void CSourcePrinter::visit(const ir::VarRef& node) { result_ = {names_->locals.at(node.name), kPrimary}; }

void CSourcePrinter::visit(const ir::Extent& node) {
  result_ = {names_->extents.at(static_cast<std::size_t>(node.param)).at(static_cast<std::size_t>(node.dim)), kPrimary};
}

void CSourcePrinter::visit(const ir::Load& node) { result_ = {element(node.param, node.indices), kPrimary}; }

void CSourcePrinter::visit(const ir::Unary& node) {
  const ScalarType type = node.type;
  if (node.op == ir::UnaryOp::Not) {
    result_ = {(type == ScalarType::Bool ? "!" : "~") + operand(node.operand, kUnary), kUnary};
  } else if (ir::is_float(type)) {
    std::string x = operand(node.operand, kUnary);
    result_ = {"-" + (x[0] == '-' ? "(" + x + ")" : x), kUnary};
  } else if (auto range = bounds(node.operand); range && range->lo > type_limits(type).lo) {
    std::string x = operand(node.operand, kUnary);
    result_ = {"-" + (x[0] == '-' ? "(" + x + ")" : x), kUnary};
  } else {
    // -(U)x wraps: the negation of MIN is MIN.
    result_ = {"(" + type_name(type) + ")-(" + unsigned_type_name(type) + ")" + operand(node.operand, kUnary), kUnary};
  }
}

CSourcePrinter::Code CSourcePrinter::infix(const ir::Binary& node, const char* op, int precedence, int lhs_at_least,
                                           int rhs_at_least) {
  return {operand(node.lhs, lhs_at_least) + " " + op + " " + operand(node.rhs, rhs_at_least), precedence};
}

CSourcePrinter::Code CSourcePrinter::call(const ir::Binary& node, const std::string& function) {
  return {function + "(" + operand(node.lhs, kTernary) + ", " + operand(node.rhs, kTernary) + ")", kPrimary};
}

void CSourcePrinter::visit(const ir::Binary& node) {
  if (ir::is_float(node.type))
    result_ = float_binary(node);
  else if (node.op == ir::BinaryOp::Shl || node.op == ir::BinaryOp::Shr)
    result_ = shift(node);
  else
    result_ = integer_binary(node);
}

CSourcePrinter::Code CSourcePrinter::float_binary(const ir::Binary& node) {
  using ir::BinaryOp;
  switch (node.op) {
    case BinaryOp::Add: return infix(node, "+", kAdditive, kAdditive, kMultiplicative);
    case BinaryOp::Sub: return infix(node, "-", kAdditive, kAdditive, kMultiplicative);
    case BinaryOp::Mul: return infix(node, "*", kMultiplicative, kMultiplicative, kUnary);
    case BinaryOp::Div: return infix(node, "/", kMultiplicative, kMultiplicative, kUnary);
    case BinaryOp::Rem: return call(node, "fmod");
    case BinaryOp::Min: return call(node, "fmin");
    case BinaryOp::Max: return call(node, "fmax");
    default: no_c_form(node);
  }
}

// Integer and bool operators. + - * print as plain C where the operands'
// bounds prove the result fits (no overflow to wrap), else on the unsigned type.
CSourcePrinter::Code CSourcePrinter::integer_binary(const ir::Binary& node) {
  using ir::BinaryOp;
  const ScalarType type = node.type;
  const bool is_bool = type == ScalarType::Bool;
  const std::string width = type == ScalarType::I64 ? "i64" : "i32";
  switch (node.op) {
    case BinaryOp::Add:
      return fits(node) ? infix(node, "+", kAdditive, kAdditive, kMultiplicative)
                        : Code{wrap("+", node.lhs, node.rhs, type), kUnary};
    case BinaryOp::Sub:
      return fits(node) ? infix(node, "-", kAdditive, kAdditive, kMultiplicative)
                        : Code{wrap("-", node.lhs, node.rhs, type), kUnary};
    case BinaryOp::Mul:
      return fits(node) ? infix(node, "*", kMultiplicative, kMultiplicative, kUnary)
                        : Code{wrap("*", node.lhs, node.rhs, type), kUnary};
    case BinaryOp::Div: need_helper("div_" + width); return call(node, "div_" + width);
    case BinaryOp::Rem: need_helper("rem_" + width); return call(node, "rem_" + width);
    case BinaryOp::Min:
    case BinaryOp::Max:
      return {integer_min_max(node.op == BinaryOp::Min, operand(node.lhs, kTernary), operand(node.rhs, kTernary)),
              kPrimary};
    case BinaryOp::And:
      return is_bool ? infix(node, "&&", kLogicalAnd, kLogicalAnd, kBitOr) : infix(node, "&", kBitAnd, kUnary, kUnary);
    case BinaryOp::Or:
      return is_bool ? infix(node, "||", kLogicalOr, kLogicalOr, kLogicalAnd)
                     : infix(node, "|", kBitOr, kUnary, kUnary);
    case BinaryOp::Xor: return infix(node, "^", kBitXor, kUnary, kUnary);
    default: no_c_form(node);
  }
}

// a << b and a >> b with the amount taken modulo the width; << shifts the
// unsigned bits (a negative a is no undefined behaviour), >> is arithmetic.
CSourcePrinter::Code CSourcePrinter::shift(const ir::Binary& node) {
  if (!ir::is_int(node.type)) no_c_form(node);
  const int bits = node.type == ScalarType::I64 ? 64 : 32;
  std::string amount;
  if (ir::is_const(node.rhs))
    amount = std::to_string(node.rhs->as<ir::Const>().int_value & (bits - 1));
  else
    amount = "(" + operand(node.rhs, kUnary) + " & " + std::to_string(bits - 1) + ")";
  if (node.op == ir::BinaryOp::Shr) return {operand(node.lhs, kUnary) + " >> " + amount, kShift};
  return {"(" + type_name(node.type) + ")(" + unsigned_operand(node.lhs, node.type) + " << " + amount + ")", kUnary};
}

void CSourcePrinter::no_c_form(const ir::Binary& node) const {
  throw Error("kernel '" + kernel_.name + "': operator " + std::string(ir::name_of(node.op)) + " on " +
              std::string(ir::name_of(node.type)) +
              " has no C form (run ir::verify; this is a Canopy bug if it passes)");
}

void CSourcePrinter::visit(const ir::Compare& node) {
  static constexpr std::array<const char*, 6> kOperators{"==", "!=", "<", "<=", ">", ">="};
  const auto op = static_cast<std::size_t>(node.op);
  const int precedence = op < 2 ? kEquality : kRelational;
  result_ = {operand(node.lhs, kShift) + " " + kOperators.at(op) + " " + operand(node.rhs, kShift), precedence};
}

void CSourcePrinter::visit(const ir::Cast& node) {
  const ScalarType from = node.operand->type, to = node.type;
  if (from == to) {
    result_ = code_of(node.operand);
  } else if (to == ScalarType::Bool) {
    const std::string zero = from == ScalarType::F32 ? "0.0f" : from == ScalarType::F64 ? "0.0" : "0";
    result_ = {operand(node.operand, kShift) + " != " + zero, kEquality};
  } else if (ir::is_float(from) && ir::is_int(to)) {
    result_ = {float_to_int(operand(node.operand, kTernary), from, to), kPrimary};
  } else {
    result_ = {"(" + type_name(to) + ")" + operand(node.operand, kUnary), kUnary};
  }
}

void CSourcePrinter::visit(const ir::Call& node) {
  if (node.fn == ir::MathFn::Abs && !ir::is_float(node.type)) {
    result_ = {integer_abs(operand(node.args.at(0), kTernary), node.type), kPrimary};
    return;
  }
  std::string text = math_function(node.fn, node.type) + "(";
  for (std::size_t a = 0; a < node.args.size(); ++a) text += (a ? ", " : "") + operand(node.args[a], kTernary);
  result_ = {text + ")", kPrimary};
}

void CSourcePrinter::visit(const ir::Select& node) {
  result_ = {operand(node.cond, kLogicalOr) + " ? " + operand(node.if_true, kLogicalOr) + " : " +
                 operand(node.if_false, kTernary),
             kTernary};
}

// ---- statements -----------------------------------------------------------------

void CSourcePrinter::visit(const ir::Block& node) {
  // A block inside a block: its own scope.
  if (node.stmts.empty()) return;
  line("{");
  ++indent_;
  for (const auto& stmt : node.stmts) walk(stmt);
  --indent_;
  line("}");
}

void CSourcePrinter::visit(const ir::Decl& node) {
  line(type_name(node.type) + " " + names_->locals.at(node.name) + " = " + operand(node.init, kTernary) + ";");
}

void CSourcePrinter::visit(const ir::Assign& node) {
  line(names_->locals.at(node.name) + " = " + operand(node.value, kTernary) + ";");
}

void CSourcePrinter::visit(const ir::Store& node) {
  line(element(node.param, node.indices) + " = " + operand(node.value, kTernary) + ";");
}

void CSourcePrinter::visit(const ir::AtomicAdd& node) {
  line(atomic_add("&" + element(node.param, node.indices), operand(node.value, kTernary), node.value->type) + ";");
}

void CSourcePrinter::visit(const ir::Reduce& node) {
  const ir::Param& param = kernel_.params.at(static_cast<std::size_t>(node.param));
  const std::string& accumulator = names_->params.at(static_cast<std::size_t>(node.param));
  if (param.reduce == ir::ReduceOp::Sum && ir::is_float(param.type)) {
    line(accumulator + " += " + operand(node.value, kTernary) + ";");
    return;
  }
  const std::string value = operand(node.value, param.reduce == ir::ReduceOp::Sum ? kUnary : kTernary);
  line(accumulator + " = " + combine(param.reduce, param.type, accumulator, value) + ";");
}

void CSourcePrinter::visit(const ir::If& node) {
  std::string keyword = "if (";
  const ir::If* current = &node;
  for (;;) {
    line(keyword + operand(current->cond, kTernary) + ") {");
    ++indent_;
    walk_body(current->then_body);
    --indent_;
    const ir::Stmt& otherwise = current->else_body;
    if (!otherwise) break;
    // else { if ... } prints as else if.
    const ir::Stmt* only = &otherwise;
    if (otherwise->kind == ir::StmtKind::Block && otherwise->as<ir::Block>().stmts.size() == 1)
      only = &otherwise->as<ir::Block>().stmts[0];
    if ((*only)->kind == ir::StmtKind::If) {
      current = &(*only)->as<ir::If>();
      keyword = "} else if (";
      continue;
    }
    line("} else {");
    ++indent_;
    walk_body(otherwise);
    --indent_;
    break;
  }
  line("}");
}

void CSourcePrinter::visit(const ir::For& node) {
  const ScalarType type = node.begin->type;
  const std::string t = type_name(type);
  const std::string& var = names_->locals.at(node.var);
  std::string end;
  if (invariant_in_loops(node.end)) {
    end = operand(node.end, kShift);
  } else {
    // The IR evaluates the end once; the body may change what it reads.
    end = claim(var + "_end");
    line("const " + t + " " + end + " = " + operand(node.end, kTernary) + ";");
  }
  const std::int64_t step = node.step->as<ir::Const>().int_value;
  const std::int64_t largest =
      type == ScalarType::I32 ? std::numeric_limits<std::int32_t>::max() : std::numeric_limits<std::int64_t>::max();
  std::string next;
  if (step == 1) {
    next = "++" + var;
  } else if (ir::is_const(node.end) && node.end->as<ir::Const>().int_value <= largest - (step - 1)) {
    next = var + " += " + literal(node.step->as<ir::Const>());
  } else {
    // var + step could pass the largest value: stop at end instead.
    const std::string u = unsigned_type_name(type);
    next = var + " = (" + u + ")" + end + " - (" + u + ")" + var + " > " + unsigned_operand(node.step, type) + " ? " +
           var + " + " + literal(node.step->as<ir::Const>()) + " : " + end;
  }
  line("for (" + t + " " + var + " = " + operand(node.begin, kTernary) + "; " + var + " < " + end + "; " + next +
       ") {");
  ++indent_;
  loop_vars_.insert(node.var);
  walk_body(node.body);
  loop_vars_.erase(node.var);
  --indent_;
  line("}");
}

void CSourcePrinter::walk_body(const ir::Stmt& body) {
  if (body && body->kind == ir::StmtKind::Block) {
    for (const auto& stmt : body->as<ir::Block>().stmts) walk(stmt);
  } else {
    walk(body);
  }
}

// ---- free functions -------------------------------------------------------------

CSourceFeatures features_of(const ir::Kernel& kernel) {
  FeatureFinder finder;
  for (const auto& param : kernel.params) {
    finder.note(param.type);
    finder.features.has_reductions = finder.features.has_reductions || param.is_reduction();
  }
  struct AtomicFinder : ir::Visitor {
    const ir::Kernel& kernel;
    CSourceFeatures& features;
    AtomicFinder(const ir::Kernel& k, CSourceFeatures& f) : kernel(k), features(f) {}
    void visit(const ir::AtomicAdd& node) override {
      const auto type = node.value->type;
      if (type == ScalarType::I64 || type == ScalarType::F64)
        features.int64_atomics = true;
      else
        features.int32_atomics = true;
    }
  } atomics(kernel, finder.features);
  finder.walk(kernel.body);
  atomics.walk(kernel.body);
  return finder.features;
}

std::string numbered_source(std::string_view source) {
  std::string out;
  int number = 1;
  while (!source.empty()) {
    const auto end = source.find('\n');
    const auto text = source.substr(0, end);
    std::string label = std::to_string(number++);
    out += std::string(label.size() < 4 ? 4 - label.size() : 0, ' ') + label + " | ";
    out += text;
    out += '\n';
    if (end == std::string_view::npos) break;
    source.remove_prefix(end + 1);
  }
  return out;
}

}  // namespace canopy::jit
