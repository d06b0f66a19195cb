// Snapshots of locals (snapshots.hpp): which can go, and the rewrite.
#include "snapshots.hpp"

#include <vector>

#include "../mutator.hpp"
#include "internal/uses.hpp"

namespace canopy::ir {

namespace {

using passes_internal::reads_of;
using passes_internal::writes_of;

// The locals a statement reads anywhere in it.
void collect_reads(const Stmt& stmt, std::set<std::string>& out) {
  if (!stmt) return;
  auto add = [&](const Expr& e) {
    if (e) {
      const auto reads = reads_of(e);
      out.insert(reads.locals.begin(), reads.locals.end());
    }
  };
  switch (stmt->kind) {
    case StmtKind::Block:
      for (const Stmt& s : stmt->as<Block>().stmts) collect_reads(s, out);
      break;
    case StmtKind::Decl: add(stmt->as<Decl>().init); break;
    case StmtKind::Assign: add(stmt->as<Assign>().value); break;
    case StmtKind::Store:
      for (const Expr& e : stmt->as<Store>().indices) add(e);
      add(stmt->as<Store>().value);
      break;
    case StmtKind::AtomicAdd:
      for (const Expr& e : stmt->as<AtomicAdd>().indices) add(e);
      add(stmt->as<AtomicAdd>().value);
      break;
    case StmtKind::Reduce: add(stmt->as<Reduce>().value); break;
    case StmtKind::If:
      add(stmt->as<If>().cond);
      collect_reads(stmt->as<If>().then_body, out);
      collect_reads(stmt->as<If>().else_body, out);
      break;
    case StmtKind::For:
      add(stmt->as<For>().begin);
      add(stmt->as<For>().end);
      add(stmt->as<For>().step);
      collect_reads(stmt->as<For>().body, out);
      break;
  }
}

bool reads(const Stmt& stmt, const std::string& name) {
  std::set<std::string> names;
  collect_reads(stmt, names);
  return names.count(name) > 0;
}

// Puts an expression back for the reads of one local.
class Inline final : public Mutator {
 public:
  Inline(std::string name, Expr value) : name_(std::move(name)), value_(std::move(value)) {}
  using Mutator::mutate;

 protected:
  Expr visit(const VarRef& node, const Expr& self) override { return node.name == name_ ? value_ : self; }

 private:
  std::string name_;
  Expr value_;
};

// Whether `stmt` (with its children) could change what `reads` read.
bool changes(const Stmt& stmt, const passes_internal::ExprReads& reads) {
  const auto writes = writes_of(stmt);
  for (const auto& local : reads.locals)
    if (writes.assigned.count(local)) return true;
  for (int array : reads.arrays)
    if (writes.arrays.count(array)) return true;
  return false;
}

// Whether `stmt` reads `s` only before it writes anything: in the value of an
// Assign or a Store, an If's condition, a For's bounds.
bool reads_before_writing(const Stmt& stmt, const std::string& s) {
  switch (stmt->kind) {
    case StmtKind::Assign:
    case StmtKind::Store:
    case StmtKind::AtomicAdd: return true;
    case StmtKind::If: return !reads(stmt->as<If>().then_body, s) && !reads(stmt->as<If>().else_body, s);
    case StmtKind::For: return !reads(stmt->as<For>().body, s);
    default: return false;
  }
}

// Whether snapshot `s` of `value`, declared at stmts[k], reads the same as
// `value` would at each of its uses: no statement after it changes what
// `value` reads before the last use, except one that reads `s` before it
// writes (reads_before_writing).
bool same_as_value(const std::vector<Stmt>& stmts, std::size_t k, const std::string& s, const Expr& value) {
  const auto value_reads = reads_of(value);
  for (std::size_t j = k + 1; j < stmts.size(); ++j) {
    if (!changes(stmts[j], value_reads)) continue;
    if (reads(stmts[j], s) && !reads_before_writing(stmts[j], s)) return false;
    for (std::size_t later = j + 1; later < stmts.size(); ++later)
      if (reads(stmts[later], s)) return false;
    return true;
  }
  return true;
}

class Forward final : public Mutator {
 public:
  explicit Forward(const std::set<std::string>& snapshots) : snapshots_(snapshots) {}
  using Mutator::mutate;

 protected:
  Stmt visit(const Block& node, const Stmt& self) override {
    std::vector<Stmt> stmts;
    bool changed = false;
    for (const Stmt& s : node.stmts) {
      Stmt m = mutate(s);
      changed = changed || m != s;
      if (m) stmts.push_back(std::move(m));
    }
    for (std::size_t k = 0; k < stmts.size();) {
      const Stmt& s = stmts[k];
      if (s->kind == StmtKind::Decl && snapshots_.count(s->as<Decl>().name)) {
        const std::string name = s->as<Decl>().name;
        const Expr value = s->as<Decl>().init;
        if (same_as_value(stmts, k, name, value)) {
          Inline put_back(name, value);
          for (std::size_t j = k + 1; j < stmts.size(); ++j) stmts[j] = put_back.mutate(stmts[j]);
          stmts.erase(stmts.begin() + static_cast<std::ptrdiff_t>(k));
          changed = true;
          continue;
        }
      }
      ++k;
    }
    return changed ? make_block(std::move(stmts)) : self;
  }

 private:
  const std::set<std::string>& snapshots_;
};

}  // namespace

Stmt forward_snapshots(const Stmt& body, const std::set<std::string>& snapshots) {
  if (snapshots.empty()) return body;
  Forward forward(snapshots);
  return forward.mutate(body);
}

}  // namespace canopy::ir
