// Snapshots of locals (snapshots.hpp): which can go, and the rewrite.
//
// One pass over each block, statement by statement: a snapshot is watched
// until a statement changes what its value reads (then it is "frozen": its
// value differs from here on), and it must stay when a statement reads it
// after it froze, or reads it in the very statement that froze it other
// than before writing. Every statement's reads and writes are collected once,
// so a block of n statements costs about n walks, not n^2 (a kernel whose C++
// loop unrolled thousands of updates of one Var traced in seconds otherwise).
#include "snapshots.hpp"

#include <map>
#include <vector>

#include "../mutator.hpp"
#include "internal/uses.hpp"

namespace canopy::ir {

namespace {

using passes_internal::ExprReads;
using passes_internal::reads_of;
using passes_internal::writes_of;

// Puts each snapshot's value back for its reads.
class Inline final : public Mutator {
 public:
  explicit Inline(const std::map<std::string, Expr>& values) : values_(values) {}
  using Mutator::mutate;

 protected:
  Expr visit(const VarRef& node, const Expr& self) override {
    auto found = values_.find(node.name);
    return found == values_.end() ? self : found->second;
  }

 private:
  const std::map<std::string, Expr>& values_;
};

bool reads_before_writing(const Stmt& stmt, const std::string& s);

// Whether the statements of `body` read `s` only before the first of them
// that stores or assigns (each such read itself before writing).
bool body_reads_before_writing(const Stmt& body, const std::string& s) {
  if (!body) return true;
  if (body->kind != StmtKind::Block) return !reads_of(body).locals.count(s) || reads_before_writing(body, s);
  bool wrote = false;
  for (const Stmt& stmt : body->as<Block>().stmts) {
    if (reads_of(stmt).locals.count(s) && (wrote || !reads_before_writing(stmt, s))) return false;
    const auto writes = writes_of(stmt);
    wrote = wrote || !writes.assigned.empty() || !writes.arrays.empty();
  }
  return true;
}

// Whether `stmt` reads `s` only before it writes anything: in the value of an
// Assign or a Store, an If's condition and its branches' statements before
// their first write (`if (c) o[i] = f(x)`, with o and x one array), a For's
// bounds (its body runs again after writing).
bool reads_before_writing(const Stmt& stmt, const std::string& s) {
  auto reads_in = [&](const Stmt& body) { return body && reads_of(body).locals.count(s) > 0; };
  switch (stmt->kind) {
    case StmtKind::Assign:
    case StmtKind::Store:
    case StmtKind::AtomicAdd: return true;
    case StmtKind::If:
      return body_reads_before_writing(stmt->as<If>().then_body, s) &&
             body_reads_before_writing(stmt->as<If>().else_body, s);
    case StmtKind::For: return !reads_in(stmt->as<For>().body);
    default: return false;
  }
}

// A snapshot declared in the block being read.
struct Snapshot {
  Expr value;
  ExprReads reads;  ///< what its value reads, through the snapshots it reads too
  bool frozen = false;
  bool keep = false;
};

// Which of the snapshots declared in `stmts` must stay.
std::map<std::string, Snapshot> decide(const std::vector<Stmt>& stmts, const std::set<std::string>& names,
                                       const std::vector<ScalarType>& element_types) {
  std::map<std::string, Snapshot> snapshots;
  std::map<std::string, std::vector<std::string>> watching_local;  // local -> snapshots whose value reads it
  // Arrays are watched by element type: two parameters of one type may be one array.
  auto memory_of = [&](int array) {
    return array >= 0 && static_cast<std::size_t>(array) < element_types.size()
               ? static_cast<int>(element_types[static_cast<std::size_t>(array)])
               : -1 - array;
  };
  std::map<int, std::vector<std::string>> watching_array;  // memory -> snapshots whose value reads it
  for (const Stmt& stmt : stmts) {
    const ExprReads read = reads_of(stmt);
    for (const auto& local : read.locals)
      if (auto found = snapshots.find(local); found != snapshots.end() && found->second.frozen)
        found->second.keep = true;
    if (stmt->kind == StmtKind::Decl && names.count(stmt->as<Decl>().name)) {
      Snapshot s{stmt->as<Decl>().init, reads_of(stmt->as<Decl>().init)};
      for (const auto& local : std::set<std::string>(s.reads.locals))
        if (auto found = snapshots.find(local); found != snapshots.end()) {
          s.reads.locals.insert(found->second.reads.locals.begin(), found->second.reads.locals.end());
          s.reads.arrays.insert(found->second.reads.arrays.begin(), found->second.reads.arrays.end());
        }
      const std::string& name = stmt->as<Decl>().name;
      for (const auto& local : s.reads.locals) watching_local[local].push_back(name);
      for (int array : s.reads.arrays) watching_array[memory_of(array)].push_back(name);
      snapshots.emplace(name, std::move(s));
      continue;
    }
    const auto writes = writes_of(stmt);
    std::vector<std::string> changed;
    for (const auto& local : writes.assigned)
      if (auto w = watching_local.find(local); w != watching_local.end()) {
        changed.insert(changed.end(), w->second.begin(), w->second.end());
        watching_local.erase(w);
      }
    for (int array : writes.arrays)
      if (auto w = watching_array.find(memory_of(array)); w != watching_array.end()) {
        changed.insert(changed.end(), w->second.begin(), w->second.end());
        watching_array.erase(w);
      }
    for (const auto& name : changed) {
      Snapshot& s = snapshots.at(name);
      if (s.frozen) continue;
      s.frozen = true;
      if (read.locals.count(name) && !reads_before_writing(stmt, name)) s.keep = true;
    }
  }
  return snapshots;
}

class Forward final : public Mutator {
 public:
  Forward(const std::set<std::string>& snapshots, const std::vector<ScalarType>& element_types)
      : snapshots_(snapshots), element_types_(element_types) {}
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
    // The values of the snapshots that go, each with the earlier ones put back.
    std::map<std::string, Expr> values;
    const auto decided = decide(stmts, snapshots_, element_types_);
    for (const Stmt& s : stmts) {
      if (s->kind != StmtKind::Decl) continue;
      auto found = decided.find(s->as<Decl>().name);
      if (found == decided.end() || found->second.keep) continue;
      Inline earlier(values);
      values.emplace(found->first, earlier.mutate(found->second.value));
    }
    if (values.empty()) return changed ? make_block(std::move(stmts)) : self;
    Inline put_back(values);
    std::vector<Stmt> kept;
    for (const Stmt& s : stmts)
      if (!(s->kind == StmtKind::Decl && values.count(s->as<Decl>().name))) kept.push_back(put_back.mutate(s));
    return make_block(std::move(kept));
  }

 private:
  const std::set<std::string>& snapshots_;
  const std::vector<ScalarType>& element_types_;
};

}  // namespace

Stmt forward_snapshots(const Stmt& body, const std::set<std::string>& snapshots,
                       const std::vector<ScalarType>& element_types) {
  if (snapshots.empty()) return body;
  Forward forward(snapshots, element_types);
  return forward.mutate(body);
}

}  // namespace canopy::ir
