#include "stmt.hpp"

namespace canopy::ir {

Stmt make_block(std::vector<Stmt> stmts) { return std::make_shared<Block>(std::move(stmts)); }
Stmt make_decl(std::string name, Expr init) {
  auto type = init->type;
  return std::make_shared<Decl>(std::move(name), type, std::move(init));
}
Stmt make_assign(std::string name, Expr value) { return std::make_shared<Assign>(std::move(name), std::move(value)); }
Stmt make_store(int param, std::vector<Expr> indices, Expr value) {
  return std::make_shared<Store>(param, std::move(indices), std::move(value));
}
Stmt make_atomic_add(int param, std::vector<Expr> indices, Expr value) {
  return std::make_shared<AtomicAdd>(param, std::move(indices), std::move(value));
}
Stmt make_reduce(int param, Expr value) { return std::make_shared<Reduce>(param, std::move(value)); }
Stmt make_if(Expr cond, Stmt then_body, Stmt else_body) {
  return std::make_shared<If>(std::move(cond), std::move(then_body), std::move(else_body));
}
Stmt make_for(std::string var, Expr begin, Expr end, Stmt body) {
  auto step = make_int(begin->type, 1);
  return make_for(std::move(var), std::move(begin), std::move(end), std::move(step), std::move(body));
}
Stmt make_for(std::string var, Expr begin, Expr end, Expr step, Stmt body) {
  return std::make_shared<For>(std::move(var), std::move(begin), std::move(end), std::move(step), std::move(body));
}

}  // namespace canopy::ir
