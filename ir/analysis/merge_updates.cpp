#include "merge_updates.hpp"

#include <algorithm>

#include "../passes/internal/equality.hpp"
#include "../visitor.hpp"

namespace canopy::ir {

namespace {

BinaryOp combining_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return BinaryOp::Add;
    case ReduceOp::Min: return BinaryOp::Min;
    case ReduceOp::Max: return BinaryOp::Max;
  }
  return BinaryOp::Add;
}

// Walks the kernel, keeping the first access to `param` that does not combine.
class CombiningCheck final : public Visitor {
 public:
  CombiningCheck(std::vector<int> params, ReduceOp op) : params_(std::move(params)), op_(op) {}
  /// The first non-combining access, where the kernel writes the array at all.
  std::string problem() const { return writes_ ? problem_ : std::string(); }

 protected:
  void visit(const Load& node) override {
    if (ours(node.param)) note("reads it other than in a store that combines into the element it read");
    Visitor::visit(node);
  }
  void visit(const AtomicAdd& node) override {
    writes_ = writes_ || ours(node.param);
    if (ours(node.param) && op_ != ReduceOp::Sum)
      note("adds to it atomically, which combines as a sum, not as its " + std::string(name_of(op_)));
    Visitor::visit(node);
  }
  void visit(const Store& node) override {
    if (!ours(node.param)) {
      Visitor::visit(node);
      return;
    }
    writes_ = true;
    for (const auto& i : node.indices) walk(i);
    // value = m[same element] op x, either way round: x is walked, the read is not.
    const Load* read = nullptr;
    Expr other;
    if (node.value->kind == ExprKind::Binary) {
      const auto& combined = node.value->as<Binary>();
      auto same_element = [&](const Expr& e) {
        if (e->kind != ExprKind::Load) return false;
        const auto& load = e->as<Load>();
        if (!ours(load.param) || load.indices.size() != node.indices.size()) return false;
        for (std::size_t d = 0; d < load.indices.size(); ++d)
          if (!passes_internal::equal(load.indices[d], node.indices[d])) return false;
        return true;
      };
      if (combined.op == combining_op(op_)) {
        if (same_element(combined.lhs)) {
          read = &combined.lhs->as<Load>();
          other = combined.rhs;
        } else if (same_element(combined.rhs)) {
          read = &combined.rhs->as<Load>();
          other = combined.lhs;
        }
      }
    }
    if (!read) {
      // A plain store of x: a device's element becomes op(identity, x) = x,
      // combined as op(old, x); a CPU leaf's becomes x. Under min and max the
      // two agree wherever x does not lose to what the element held (bfs's
      // levels, which only grow under max): the program's promise, as with
      // disjoint elements. Under sum they agree only on an element that held
      // 0, which a sum of contributions has no use for.
      if (op_ == ReduceOp::Sum) note("stores to it a value that is not <it> + x of the element stored to");
      walk(node.value);
      return;
    }
    for (const auto& i : read->indices) walk(i);
    walk(other);
  }

 private:
  bool ours(int param) const { return std::find(params_.begin(), params_.end(), param) != params_.end(); }
  void note(std::string problem) {
    if (problem_.empty()) problem_ = std::move(problem);
  }

  std::vector<int> params_;
  ReduceOp op_;
  std::string problem_;
  bool writes_ = false;
};

}  // namespace

std::string non_combining_access(const Kernel& kernel, const std::vector<int>& params, ReduceOp op) {
  CombiningCheck check(params, op);
  check.walk(kernel.body);
  return check.problem();
}

std::string non_combining_access(const Kernel& kernel, int param, ReduceOp op) {
  return non_combining_access(kernel, std::vector<int>{param}, op);
}

}  // namespace canopy::ir
