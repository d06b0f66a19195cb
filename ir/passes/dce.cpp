#include "dce.hpp"

#include <map>
#include <set>
#include <string>
#include <vector>

#include "../mutator.hpp"
#include "../visitor.hpp"
#include "internal/uses.hpp"

namespace canopy::ir {

namespace {

bool is_empty_block(const Stmt& s) { return !s || (s->kind == StmtKind::Block && s->as<Block>().stmts.empty()); }

// Marks the locals whose values can reach an effect: those read by a
// statement with an effect (or by control flow), then, transitively, those
// read by the definitions (Decl inits, Assign values) of live locals.
class LiveLocals final : public Visitor {
 public:
  std::set<std::string> compute(const Stmt& body) {
    walk(body);
    std::set<std::string> live;
    std::vector<std::string> pending(roots_.begin(), roots_.end());
    while (!pending.empty()) {
      auto name = std::move(pending.back());
      pending.pop_back();
      if (!live.insert(name).second) continue;
      for (const auto& read : definitions_[name]) pending.push_back(read);
    }
    return live;
  }

 protected:
  void visit(const Decl& node) override { define(node.name, node.init); }
  void visit(const Assign& node) override { define(node.name, node.value); }
  void visit(const Store& node) override {
    for (const auto& i : node.indices) root(i);
    root(node.value);
  }
  void visit(const AtomicAdd& node) override {
    for (const auto& i : node.indices) root(i);
    root(node.value);
  }
  void visit(const Reduce& node) override { root(node.value); }
  void visit(const If& node) override {
    root(node.cond);
    walk(node.then_body);
    walk(node.else_body);
  }
  void visit(const For& node) override {
    root(node.begin);
    root(node.end);
    root(node.step);
    walk(node.body);
  }

 private:
  void root(const Expr& e) {
    for (const auto& name : passes_internal::reads_of(e).locals) roots_.insert(name);
  }
  void define(const std::string& name, const Expr& value) {
    for (const auto& read : passes_internal::reads_of(value).locals) definitions_[name].insert(read);
  }

  std::set<std::string> roots_;
  std::map<std::string, std::set<std::string>> definitions_;
};

class DeadCodeRemover final : public Mutator {
 public:
  explicit DeadCodeRemover(std::set<std::string> live) : live_(std::move(live)) {}

 protected:
  Stmt visit(const Decl& node, const Stmt& self) override { return live_.count(node.name) ? self : nullptr; }
  Stmt visit(const Assign& node, const Stmt& self) override { return live_.count(node.name) ? self : nullptr; }

  Stmt visit(const Block& node, const Stmt& self) override {
    std::vector<Stmt> stmts;
    bool changed = false;
    for (const auto& s : node.stmts) {
      auto m = mutate(s);
      if (is_empty_block(m)) {
        changed = true;
        continue;
      }
      changed = changed || m != s;
      stmts.push_back(std::move(m));
    }
    return changed ? make_block(std::move(stmts)) : self;
  }

  Stmt visit(const If& node, const Stmt& self) override {
    auto then_body = mutate_body(node.then_body);
    auto else_body = mutate(node.else_body);
    if (is_empty_block(then_body) && is_empty_block(else_body)) return nullptr;
    if (is_empty_block(else_body)) else_body = nullptr;
    if (then_body == node.then_body && else_body == node.else_body) return self;
    return make_if(node.cond, std::move(then_body), std::move(else_body));
  }

  Stmt visit(const For& node, const Stmt& self) override {
    auto body = mutate_body(node.body);
    if (is_empty_block(body)) return nullptr;
    if (body == node.body) return self;
    return make_for(node.var, node.begin, node.end, node.step, std::move(body));
  }

 private:
  std::set<std::string> live_;
};

}  // namespace

Kernel eliminate_dead_code(const Kernel& kernel) {
  Kernel current = kernel;
  for (;;) {
    auto live = LiveLocals().compute(current.body);
    Kernel next = DeadCodeRemover(std::move(live)).mutate(current);
    if (next.body == current.body) return next;
    current = std::move(next);
  }
}

}  // namespace canopy::ir
