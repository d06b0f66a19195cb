#include "parser.hpp"

#include <charconv>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "error.hpp"
#include "printer.hpp"
#include "verifier.hpp"

namespace canopy::ir {

namespace {

// ---- tokens ----------------------------------------------------------------

enum class TokenKind : std::uint8_t {
  Name,    ///< identifiers and keywords
  Number,  ///< digits with an optional sign, fraction and exponent; also -inf and -nan
  Punct,   ///< operators and brackets
  End,     ///< end of the input
  Bad,     ///< a character the text form does not use
};

struct Token {
  TokenKind kind = TokenKind::End;
  std::string_view text;  ///< for an escaped name ($word), the word alone
  int line = 1;
  int column = 1;
  bool escaped = false;  ///< a name written $word: never a keyword
};

bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_name_char(char c) { return is_name_start(c) || is_digit(c) || c == '.'; }

// Splits the whole text into tokens (the last one is End).
std::vector<Token> tokenize(std::string_view text) {
  static constexpr std::string_view kTwoCharPuncts[] = {"<<", ">>", "<=", ">=", "==", "!=", "+=", "<-", ".."};
  static constexpr std::string_view kOneCharPuncts = "()[]{},:=+-*/%&|^<>";
  std::vector<Token> tokens;
  std::size_t i = 0;
  int line = 1;
  int column = 1;
  auto word_at = [&](std::size_t at) {
    std::size_t end = at;
    while (end < text.size() && is_name_char(text[end])) ++end;
    return text.substr(at, end - at);
  };
  while (i < text.size()) {
    const char c = text[i];
    if (c == '\n') {
      ++line;
      column = 1;
      ++i;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\r') {
      ++column;
      ++i;
      continue;
    }
    if (c == '#') {
      while (i < text.size() && text[i] != '\n') ++i;
      continue;
    }
    Token token{TokenKind::Bad, text.substr(i, 1), line, column};
    std::size_t length = 1;
    if (is_name_start(c)) {
      token.kind = TokenKind::Name;
      length = word_at(i).size();
    } else if (c == '$' && i + 1 < text.size() && is_name_start(text[i + 1])) {
      token.kind = TokenKind::Name;
      token.escaped = true;
      length = 1 + word_at(i + 1).size();
    } else if (is_digit(c) || (c == '-' && i + 1 < text.size() && is_digit(text[i + 1]))) {
      token.kind = TokenKind::Number;
      std::size_t end = c == '-' ? i + 1 : i;
      while (end < text.size() && is_digit(text[end])) ++end;
      if (end + 1 < text.size() && text[end] == '.' && is_digit(text[end + 1])) {
        ++end;
        while (end < text.size() && is_digit(text[end])) ++end;
      }
      if (end < text.size() && (text[end] == 'e' || text[end] == 'E')) {
        std::size_t exponent = end + 1;
        if (exponent < text.size() && (text[exponent] == '+' || text[exponent] == '-')) ++exponent;
        if (exponent < text.size() && is_digit(text[exponent])) {
          end = exponent;
          while (end < text.size() && is_digit(text[end])) ++end;
        }
      }
      length = end - i;
    } else if (c == '-' && (word_at(i + 1) == "inf" || word_at(i + 1) == "nan")) {
      token.kind = TokenKind::Number;
      length = 4;
    } else {
      for (auto punct : kTwoCharPuncts) {
        if (text.substr(i, 2) == punct) {
          token.kind = TokenKind::Punct;
          length = 2;
          break;
        }
      }
      if (token.kind == TokenKind::Bad && kOneCharPuncts.find(c) != std::string_view::npos)
        token.kind = TokenKind::Punct;
    }
    token.text = token.escaped ? text.substr(i + 1, length - 1) : text.substr(i, length);
    tokens.push_back(token);
    i += length;
    column += static_cast<int>(length);
  }
  tokens.push_back(Token{TokenKind::End, {}, line, column});
  return tokens;
}

// How a token reads in an error message: quoted, shortened, control bytes escaped.
std::string describe(const Token& token) {
  if (token.kind == TokenKind::End) return "end of input";
  constexpr std::size_t kShown = 40;
  std::string out = "'";
  for (char c : token.text.substr(0, kShown)) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte >= 0x7f) {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[byte >> 4];
      out += kHex[byte & 0xf];
    } else {
      out += c;
    }
  }
  if (token.text.size() > kShown) out += "...";
  out += "'";
  return out;
}

std::optional<MathFn> math_fn_named(std::string_view name) {
  for (auto fn : {MathFn::Sqrt, MathFn::Exp, MathFn::Log, MathFn::Sin, MathFn::Cos, MathFn::Floor, MathFn::Pow,
                  MathFn::Abs, MathFn::Fma})
    if (name_of(fn) == name) return fn;
  return std::nullopt;
}

std::optional<BinaryOp> infix_binary_named(std::string_view name) {
  for (auto op : {BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul, BinaryOp::Div, BinaryOp::Rem, BinaryOp::And,
                  BinaryOp::Or, BinaryOp::Xor, BinaryOp::Shl, BinaryOp::Shr})
    if (name_of(op) == name) return op;
  return std::nullopt;
}

std::optional<CompareOp> compare_named(std::string_view name) {
  for (auto op : {CompareOp::Eq, CompareOp::Ne, CompareOp::Lt, CompareOp::Le, CompareOp::Gt, CompareOp::Ge})
    if (name_of(op) == name) return op;
  return std::nullopt;
}

// ---- the parser ------------------------------------------------------------

class Parser {
 public:
  Parser(std::string_view text, std::string_view source) : tokens_(tokenize(text)), source_(source) {}

  Kernel kernel() {
    expect("kernel");
    kernel_.name = std::string(expect_name("kernel name").text);
    expect("(");
    if (!peek_is(")")) {
      kernel_.params.push_back(param());
      while (accept(",")) kernel_.params.push_back(param());
    }
    expect(")");
    expect("dims");
    kernel_.dims = small_number("number of dimensions");
    expect("{");
    kernel_.body = block();
    if (peek().kind != TokenKind::End) fail_expected("end of input", peek());
    return std::move(kernel_);
  }

 private:
  // A local variable or loop counter visible at the current point.
  struct Local {
    std::string_view name;
    ScalarType type;
    bool is_loop_var;
  };

  // Counts one level of nesting while alive; throws past kMaxParseDepth.
  class DepthGuard {
   public:
    DepthGuard(Parser& parser, const Token& at) : parser_(parser) {
      if (++parser_.depth_ > kMaxParseDepth) parser_.fail_too_deep(at);
    }
    ~DepthGuard() { --parser_.depth_; }
    DepthGuard(const DepthGuard&) = delete;
    DepthGuard& operator=(const DepthGuard&) = delete;

   private:
    Parser& parser_;
  };

  // ---- tokens

  const Token& peek() const { return tokens_[position_]; }
  const Token& next() {
    const Token& token = tokens_[position_];
    if (position_ + 1 < tokens_.size()) ++position_;
    return token;
  }
  bool peek_is(std::string_view text) const {
    return (peek().kind == TokenKind::Punct || (peek().kind == TokenKind::Name && !peek().escaped)) &&
           peek().text == text;
  }
  bool accept(std::string_view text) {
    if (!peek_is(text)) return false;
    next();
    return true;
  }
  const Token& expect(std::string_view text) {
    if (!peek_is(text)) fail_expected(fmt::format("'{}'", text), peek());
    return next();
  }
  const Token& expect_name(std::string_view what) {
    if (peek().kind != TokenKind::Name || (!peek().escaped && is_keyword(peek().text))) fail_expected(what, peek());
    return next();
  }

  [[noreturn, gnu::noinline, gnu::cold]] void fail(const Token& at, const std::string& problem) const {
    throw Error(fmt::format("{}:{}:{}: {}", source_, at.line, at.column, problem));
  }
  [[noreturn, gnu::noinline, gnu::cold]] void fail_too_deep(const Token& at) const {
    fail(at, fmt::format("text nests deeper than {} levels; split the expression with `var` locals", kMaxParseDepth));
  }
  [[noreturn, gnu::noinline, gnu::cold]] void fail_expected(std::string_view what, const Token& found) const {
    fail(found, fmt::format("expected {}, found {}", what, describe(found)));
  }

  // A non-negative decimal integer without a type suffix (dims, ranks, dimension numbers).
  int small_number(std::string_view what) {
    const Token& token = peek();
    int value = 0;
    if (token.kind != TokenKind::Number) fail_expected(what, token);
    auto [end, error] = std::from_chars(token.text.data(), token.text.data() + token.text.size(), value);
    if (error != std::errc() || end != token.text.data() + token.text.size() || value < 0) fail_expected(what, token);
    next();
    return value;
  }

  ScalarType type(std::string_view what = "type") {
    auto found = scalar_type_named(peek().text);
    if (peek().kind != TokenKind::Name || peek().escaped || !found) fail_expected(what, peek());
    next();
    return *found;
  }

  // ---- names

  std::optional<int> param_named(std::string_view name) const { return kernel_.param_index(name); }

  const Local* local_named(std::string_view name) const {
    for (auto it = locals_.rbegin(); it != locals_.rend(); ++it)
      if (it->name == name) return &*it;
    return nullptr;
  }

  // The number of the array parameter `token` names; `what` says what the array is for.
  int array_param(const Token& token) {
    auto param = param_named(token.text);
    if (!param) {
      if (local_named(token.text)) fail(token, fmt::format("'{}' is a local, not an array parameter", token.text));
      fail(token, fmt::format("unknown name '{}'", token.text));
    }
    if (!kernel_.params[static_cast<std::size_t>(*param)].is_array())
      fail(token, fmt::format("'{}' is not an array parameter", token.text));
    return *param;
  }

  // ---- parameters

  Param param() {
    const Token& kind = peek();
    if (kind.kind == TokenKind::Name) {
      for (auto access : {Access::In, Access::Out, Access::InOut}) {
        if (kind.text != name_of(access)) continue;
        next();
        ScalarType element = type("element type");
        expect("[");
        int rank = small_number("array rank");
        expect("]");
        return Param::array(std::string(expect_name("parameter name").text), element, rank, access);
      }
      if (kind.text == "val") {
        next();
        ScalarType value_type = type();
        return Param::scalar(std::string(expect_name("parameter name").text), value_type);
      }
      for (auto op : {ReduceOp::Sum, ReduceOp::Min, ReduceOp::Max}) {
        if (kind.text != name_of(op)) continue;
        next();
        ScalarType value_type = type();
        return Param::reduction(std::string(expect_name("parameter name").text), value_type, op);
      }
    }
    fail_expected("parameter (in, out, inout, val, sum, min or max)", kind);
  }

  // ---- statements

  // The statements up to the closing '}' (the '{' is already read).
  Stmt block() {
    DepthGuard guard(*this, peek());
    const std::size_t scope = locals_.size();
    std::vector<Stmt> stmts;
    while (!peek_is("}")) stmts.push_back(statement());
    next();
    locals_.resize(scope);
    return make_block(std::move(stmts));
  }

  // One statement, chosen by its first word. Like expression(), each kind has
  // its own out-of-line function so that nested blocks cost little stack.
  Stmt statement() {
    const Token& first = peek();
    if (first.kind != TokenKind::Name) fail_expected("statement", first);
    if (first.escaped) return store_or_assign();
    if (first.text == "var") return declaration();
    if (first.text == "atomic") return atomic_add();
    if (first.text == "reduce") return reduction();
    if (first.text == "if") return conditional();
    if (first.text == "for") return loop();
    if (is_keyword(first.text)) fail_expected("statement", first);
    return store_or_assign();
  }

  [[gnu::noinline]] Stmt atomic_add() {
    next();  // atomic
    int param = array_param(expect_name("array name"));
    auto indices = index_list();
    expect("+=");
    return make_atomic_add(param, std::move(indices), expression());
  }

  [[gnu::noinline]] Stmt reduction() {
    next();  // reduce
    const Token& name = expect_name("reduction name");
    auto param = param_named(name.text);
    if (!param || !kernel_.params[static_cast<std::size_t>(*param)].is_reduction())
      fail(name, fmt::format("'{}' is not a reduction parameter", name.text));
    expect("<-");
    return make_reduce(*param, expression());
  }

  [[gnu::noinline]] Stmt conditional() {
    next();  // if
    Expr cond = expression();
    expect("{");
    Stmt then_body = block();
    Stmt else_body;
    if (accept("else")) {
      expect("{");
      else_body = block();
    }
    return make_if(std::move(cond), std::move(then_body), std::move(else_body));
  }

  [[gnu::noinline]] Stmt store_or_assign() {
    const Token& first = next();
    if (peek_is("[")) {
      int param = array_param(first);
      auto indices = index_list();
      expect("=");
      return make_store(param, std::move(indices), expression());
    }
    const Local* local = local_named(first.text);
    if (!local) {
      if (param_named(first.text))
        fail(first,
             fmt::format("cannot assign to parameter '{}'; only locals declared with var can be assigned", first.text));
      fail(first, fmt::format("unknown name '{}'", first.text));
    }
    if (local->is_loop_var)
      fail(first, fmt::format("cannot assign to loop variable '{}'; loop variables are read-only", first.text));
    expect("=");
    return make_assign(std::string(first.text), expression());
  }

  [[gnu::noinline]] Stmt declaration() {
    next();  // var
    const Token& name = expect_name("variable name");
    expect(":");
    ScalarType declared = type();
    expect("=");
    Expr init = expression();
    locals_.push_back(Local{name.text, declared, false});
    return std::make_shared<Decl>(std::string(name.text), declared, std::move(init));
  }

  [[gnu::noinline]] Stmt loop() {
    next();  // for
    const Token& var = expect_name("loop variable name");
    expect("in");
    Expr begin = expression();
    expect("..");
    Expr end = expression();
    Expr step = accept("step") ? expression() : make_int(begin->type, 1);
    expect("{");
    locals_.push_back(Local{var.text, begin->type, true});
    Stmt body = block();  // pops the loop variable with the body's scope
    locals_.pop_back();
    return make_for(std::string(var.text), std::move(begin), std::move(end), std::move(step), std::move(body));
  }

  // ---- expressions

  [[gnu::noinline]] std::vector<Expr> index_list() {
    expect("[");
    std::vector<Expr> indices{expression()};
    while (accept(",")) indices.push_back(expression());
    expect("]");
    return indices;
  }

  // `(` e `,` e ... `)` with exactly `count` arguments.
  [[gnu::noinline]] std::vector<Expr> arguments(std::size_t count) {
    expect("(");
    std::vector<Expr> args;
    for (std::size_t i = 0; i < count; ++i) {
      if (i > 0) expect(",");
      args.push_back(expression());
    }
    expect(")");
    return args;
  }

  // Every expression passes through here, so this frame (and those of the
  // helpers it calls on the way down) is what each nesting level costs on the
  // stack. The helpers stay out of line to keep it small, sanitizers included.
  Expr expression() {
    DepthGuard guard(*this, peek());
    const Token& token = peek();
    if (token.kind == TokenKind::Number) return literal();
    if (token.kind == TokenKind::Punct && token.text == "(") return infix();
    if (token.kind != TokenKind::Name) fail_expected("expression", token);
    if (!token.escaped && (is_keyword(token.text) || is_word_literal())) return builtin();
    return named(next());
  }

  // inf and nan lex as names; followed by ':' they are literals.
  bool is_word_literal() const {
    const Token& after = tokens_[position_ + 1];
    return (peek().text == "inf" || peek().text == "nan") && after.kind == TokenKind::Punct && after.text == ":";
  }

  // An expression that starts with a keyword (or is an inf/nan literal).
  [[gnu::noinline]] Expr builtin() {
    const Token& token = peek();
    const std::string_view word = token.text;
    if (is_word_literal()) return literal();
    if (word == "true" || word == "false") {
      next();
      return make_bool(word == "true");
    }
    if (word == "index") return index_expr();
    if (word == "extent") return extent_expr();
    if (word == "select") return select_expr();
    if (word == "neg" || word == "not") return unary_expr(word == "neg" ? UnaryOp::Neg : UnaryOp::Not);
    if (word == "min" || word == "max") return min_max_expr(word == "min" ? BinaryOp::Min : BinaryOp::Max);
    if (auto to = scalar_type_named(word)) return cast_expr(*to);
    if (auto fn = math_fn_named(word)) return call_expr(*fn);
    fail_expected("expression", token);
  }

  [[gnu::noinline]] Expr index_expr() {
    next();
    expect("(");
    int dim = small_number("dimension number");
    expect(")");
    return make_index(dim);
  }

  [[gnu::noinline]] Expr extent_expr() {
    next();
    expect("(");
    int param = array_param(expect_name("array name"));
    expect(",");
    int dim = small_number("dimension number");
    expect(")");
    return make_extent(param, dim);
  }

  [[gnu::noinline]] Expr select_expr() {
    next();
    auto args = arguments(3);
    return make_select(std::move(args[0]), std::move(args[1]), std::move(args[2]));
  }

  [[gnu::noinline]] Expr unary_expr(UnaryOp op) {
    next();
    return make_unary(op, std::move(arguments(1)[0]));
  }

  [[gnu::noinline]] Expr min_max_expr(BinaryOp op) {
    next();
    auto args = arguments(2);
    return make_binary(op, std::move(args[0]), std::move(args[1]));
  }

  [[gnu::noinline]] Expr cast_expr(ScalarType to) {
    next();
    return make_cast(to, std::move(arguments(1)[0]));
  }

  // A math function with any number of arguments (the verifier checks the arity).
  [[gnu::noinline]] Expr call_expr(MathFn fn) {
    next();
    expect("(");
    std::vector<Expr> args{expression()};
    while (accept(",")) args.push_back(expression());
    expect(")");
    return make_call(fn, std::move(args));
  }

  // A parameter or local used in an expression.
  [[gnu::noinline]] Expr named(const Token& name) {
    if (auto param = param_named(name.text)) {
      const Param& p = kernel_.params[static_cast<std::size_t>(*param)];
      if (p.is_array()) {
        if (!peek_is("[")) fail_expected(fmt::format("'[' after array '{}'", name.text), peek());
        return make_load(p.type, *param, index_list());
      }
      if (p.is_reduction())
        fail(name, fmt::format("reduction '{}' cannot be read; only `reduce` can use it", name.text));
      return make_param(p.type, *param);
    }
    if (const Local* local = local_named(name.text)) return make_var(local->type, std::string(name.text));
    fail(name, fmt::format("unknown name '{}'", name.text));
  }

  [[gnu::noinline]] Expr infix() {
    next();  // (
    Expr lhs = expression();
    const Token& op = peek();
    std::optional<BinaryOp> binary;
    std::optional<CompareOp> compare;
    if (op.kind == TokenKind::Punct) {
      binary = infix_binary_named(op.text);
      compare = compare_named(op.text);
    }
    if (!binary && !compare) fail_expected("operator", op);
    next();
    Expr rhs = expression();
    expect(")");
    if (binary) return make_binary(*binary, std::move(lhs), std::move(rhs));
    return make_compare(*compare, std::move(lhs), std::move(rhs));
  }

  // NUMBER `:` TYPE (also inf/nan, which lex as names).
  [[gnu::noinline]] Expr literal() {
    const Token& number = next();
    expect(":");
    const Token& suffix = peek();
    ScalarType literal_type = type("literal type (i32, i64, f32 or f64)");
    const char* first = number.text.data();
    const char* last = first + number.text.size();
    switch (literal_type) {
      case ScalarType::Bool: fail_expected("literal type (i32, i64, f32 or f64)", suffix);
      case ScalarType::I32:
      case ScalarType::I64: {
        std::int64_t value = 0;
        auto [end, error] = std::from_chars(first, last, value);
        if (end != last || (error != std::errc() && error != std::errc::result_out_of_range))
          fail_expected(fmt::format("integer literal for {}", name_of(literal_type)), number);
        if (error == std::errc::result_out_of_range ||
            (literal_type == ScalarType::I32 && (value < INT32_MIN || value > INT32_MAX)))
          fail(number,
               fmt::format("integer literal {} is out of range for {}", describe(number), name_of(literal_type)));
        return make_int(literal_type, value);
      }
      case ScalarType::F32: {
        float value = 0;
        auto [end, error] = std::from_chars(first, last, value);
        check_float(number, end == last, error, literal_type);
        return make_const(literal_type, static_cast<double>(value));
      }
      case ScalarType::F64: {
        double value = 0;
        auto [end, error] = std::from_chars(first, last, value);
        check_float(number, end == last, error, literal_type);
        return make_const(literal_type, value);
      }
    }
    fail_expected("literal", number);
  }

  void check_float(const Token& number, bool whole, std::errc error, ScalarType literal_type) const {
    if (error == std::errc::result_out_of_range)
      fail(number, fmt::format("float literal {} is out of range for {}", describe(number), name_of(literal_type)));
    if (!whole || error != std::errc()) fail_expected("float literal", number);
  }

  std::vector<Token> tokens_;
  std::size_t position_ = 0;
  std::string_view source_;
  int depth_ = 0;
  Kernel kernel_;
  std::vector<Local> locals_;
};

}  // namespace

Kernel parse(std::string_view text, std::string_view source) {
  Kernel kernel = Parser(text, source).kernel();
  try {
    verify(kernel);
  } catch (const Error& error) {
    throw Error(fmt::format("{}: {}", source, error.what()));
  }
  return kernel;
}

}  // namespace canopy::ir
