#include "bounds_check.hpp"

#include <unordered_map>
#include <vector>

#include "../error.hpp"
#include "../mutator.hpp"
#include "../verifier.hpp"
#include "internal/uses.hpp"

namespace canopy::ir {

namespace {

Expr i64(std::int64_t value) { return make_int(ScalarType::I64, value); }

// True when reading `e` twice costs nothing and gives the same value: it can
// stand in both the check and the access without a local.
bool is_trivial(const Expr& e) {
  return e->kind == ExprKind::Const || e->kind == ExprKind::Index || e->kind == ExprKind::Param ||
         e->kind == ExprKind::Var;
}

// A parameter name no parameter or local of `kernel` uses: canopy_fault0 unless taken.
std::string record_name_for(const Kernel& kernel) {
  return passes_internal::FreshNames(kernel, kFaultRecordName).next();
}

class BoundsChecker;

// Replaces every Load of an expression by a local that a guarded load filled
// just before, appending the statements that do so to `out` (inner loads
// first, so an index read from memory is itself checked).
class LoadHoister final : public Mutator {
 public:
  LoadHoister(BoundsChecker& checker, std::vector<Stmt>& out) : checker_(checker), out_(out) {}

 protected:
  Expr visit(const Load& node, const Expr& self) override;

 private:
  BoundsChecker& checker_;
  std::vector<Stmt>& out_;
  std::unordered_map<const ExprNode*, Expr> done_;  // a load shared in the tree is loaded once
};

class BoundsChecker {
 public:
  BoundsChecker(const Kernel& kernel, int record) : record_(record), names_(kernel, "canopy_bc") {}

  // The statements that replace `stmt`, appended to `out` in order.
  void rewrite(const Stmt& stmt, std::vector<Stmt>& out) {
    if (!stmt) return;
    switch (stmt->kind) {
      case StmtKind::Block:
        for (const auto& s : stmt->as<Block>().stmts) rewrite(s, out);
        return;
      case StmtKind::Decl: {
        const auto& node = stmt->as<Decl>();
        auto init = hoist(node.init, out);
        out.push_back(init == node.init ? stmt : make_decl(node.name, init));
        return;
      }
      case StmtKind::Assign: {
        const auto& node = stmt->as<Assign>();
        auto value = hoist(node.value, out);
        out.push_back(value == node.value ? stmt : make_assign(node.name, value));
        return;
      }
      case StmtKind::Store: {
        const auto& node = stmt->as<Store>();
        auto indices = named(hoist_all(node.indices, out), out);
        auto value = hoist(node.value, out);
        out.push_back(guarded(node.param, indices, true, make_store(node.param, indices, value)));
        return;
      }
      case StmtKind::AtomicAdd: {
        const auto& node = stmt->as<AtomicAdd>();
        auto indices = named(hoist_all(node.indices, out), out);
        auto value = hoist(node.value, out);
        out.push_back(guarded(node.param, indices, true, make_atomic_add(node.param, indices, value)));
        return;
      }
      case StmtKind::Reduce: {
        const auto& node = stmt->as<Reduce>();
        out.push_back(make_reduce(node.param, hoist(node.value, out)));
        return;
      }
      case StmtKind::If: {
        const auto& node = stmt->as<If>();
        auto cond = hoist(node.cond, out);
        out.push_back(make_if(cond, body(node.then_body), node.else_body ? body(node.else_body) : nullptr));
        return;
      }
      case StmtKind::For: {
        // The bounds are evaluated once, before the first iteration.
        const auto& node = stmt->as<For>();
        auto begin = hoist(node.begin, out);
        auto end = hoist(node.end, out);
        out.push_back(make_for(node.var, begin, end, node.step, body(node.body)));
        return;
      }
    }
  }

  // A body (of the kernel, an If or a For) rewritten into one Block.
  Stmt body(const Stmt& stmt) {
    std::vector<Stmt> out;
    rewrite(stmt, out);
    return make_block(std::move(out));
  }

  // `type` array[indices] of parameter `param`, loaded under the check into a
  // new local, which the returned expression reads.
  Expr guarded_load(int param, ScalarType type, const std::vector<Expr>& loaded_indices, std::vector<Stmt>& out) {
    auto indices = named(loaded_indices, out);
    auto value = names_.next();
    out.push_back(make_decl(value, make_const(type, 0)));
    out.push_back(guarded(param, indices, false, make_assign(value, make_load(type, param, indices))));
    return make_var(type, value);
  }

 private:
  Expr hoist(const Expr& e, std::vector<Stmt>& out) {
    LoadHoister hoister(*this, out);
    return hoister.mutate(e);
  }

  std::vector<Expr> hoist_all(const std::vector<Expr>& exprs, std::vector<Stmt>& out) {
    LoadHoister hoister(*this, out);
    std::vector<Expr> result;
    for (const auto& e : exprs) result.push_back(hoister.mutate(e));
    return result;
  }

  // Each index that is not trivial, computed once into a new local.
  std::vector<Expr> named(const std::vector<Expr>& indices, std::vector<Stmt>& out) {
    std::vector<Expr> result;
    for (const auto& index : indices) {
      if (is_trivial(index)) {
        result.push_back(index);
        continue;
      }
      auto name = names_.next();
      out.push_back(make_decl(name, index));
      result.push_back(make_var(index->type, name));
    }
    return result;
  }

  // `access` when every index is inside its extent; else the fault record
  // names the first dimension that is not.
  Stmt guarded(int param, const std::vector<Expr>& indices, bool write, Stmt access) {
    Stmt inner = std::move(access);
    for (int d = static_cast<int>(indices.size()) - 1; d >= 0; --d) {
      const Expr& index = indices[static_cast<std::size_t>(d)];
      Expr inside = make_binary(BinaryOp::And, make_compare(CompareOp::Ge, index, i64(0)),
                                make_compare(CompareOp::Lt, index, make_extent(param, d)));
      inner = make_if(inside, make_block({inner}), make_block({record_fault(param, d, index, write)}));
    }
    return inner;
  }

  // Fills the fault record unless a fault is already there.
  Stmt record_fault(int param, int dim, const Expr& index, bool write) {
    auto field = [&](FaultField f, Expr value) { return make_store(record_, {i64(f)}, std::move(value)); };
    std::vector<Stmt> fields{field(kFaultParam, i64(param)),
                             field(kFaultDim, i64(dim)),
                             field(kFaultIndex, index),
                             field(kFaultExtent, make_extent(param, dim)),
                             field(kFaultWrite, i64(write ? 1 : 0)),
                             field(kFaultFlag, i64(1))};
    Expr clear = make_compare(CompareOp::Eq, make_load(ScalarType::I64, record_, {i64(kFaultFlag)}), i64(0));
    return make_if(clear, make_block(std::move(fields)));
  }

  int record_;
  passes_internal::FreshNames names_;
};

Expr LoadHoister::visit(const Load& node, const Expr& self) {
  if (auto known = done_.find(self.get()); known != done_.end()) return known->second;
  bool changed = false;
  auto indices = mutate_all(node.indices, changed);
  auto value = checker_.guarded_load(node.param, node.type, indices, out_);
  done_.emplace(self.get(), value);
  return value;
}

}  // namespace

Kernel check_bounds(const Kernel& kernel) {
  verify(kernel);
  Kernel checked = kernel;
  const int record = static_cast<int>(kernel.params.size());
  checked.params.push_back(Param::array(record_name_for(kernel), ScalarType::I64, 1, Access::InOut));
  BoundsChecker checker(checked, record);
  checked.body = checker.body(kernel.body);
  try {
    verify(checked);
  } catch (const Error& e) {
    throw Error("checking the bounds of kernel '" + kernel.name +
                "' produced a kernel that does not verify; this is a bug in Canopy, please report it with the "
                "kernel's text (CANOPY_DUMP=ir). The verifier said: " +
                e.what());
  }
  return checked;
}

std::string describe_fault(const Kernel& kernel, const FaultRecord& record) {
  if (record[kFaultFlag] == 0) return "";
  const auto param = record[kFaultParam];
  std::string array = "number " + std::to_string(param);
  if (param >= 0 && param < static_cast<std::int64_t>(kernel.params.size()))
    array = kernel.describe_param(static_cast<std::size_t>(param));
  return "kernel '" + kernel.name + "' " + (record[kFaultWrite] ? "wrote" : "read") + " array " + array +
         " out of bounds: index " + std::to_string(record[kFaultIndex]) + " in dimension " +
         std::to_string(record[kFaultDim]) + ", whose extent is " + std::to_string(record[kFaultExtent]) +
         " (found by CANOPY_CHECK=bounds; the access was skipped); keep every index in [0, extent)";
}

}  // namespace canopy::ir
