#include "shrink.hpp"

#include <algorithm>

#include <canopy/ir/error.hpp>
#include <canopy/ir/verifier.hpp>

namespace canopy::diff {

namespace {

using ir::Stmt;

// Each way of making `stmt` one step smaller: a statement of a block left
// out, an If replaced by one of its bodies, a loop's body emptied.
std::vector<Stmt> smaller(const Stmt& stmt) {
  std::vector<Stmt> found;
  switch (stmt->kind) {
    case ir::StmtKind::Block: {
      const auto& stmts = stmt->as<ir::Block>().stmts;
      for (std::size_t k = 0; k < stmts.size(); ++k) {
        auto without = stmts;
        without.erase(without.begin() + std::ptrdiff_t(k));
        found.push_back(ir::make_block(without));
      }
      for (std::size_t k = 0; k < stmts.size(); ++k)
        for (const Stmt& child : smaller(stmts[k])) {
          auto changed = stmts;
          changed[k] = child;
          found.push_back(ir::make_block(changed));
        }
      break;
    }
    case ir::StmtKind::If: {
      const auto& node = stmt->as<ir::If>();
      found.push_back(node.then_body);
      if (node.else_body) {
        found.push_back(node.else_body);
        found.push_back(ir::make_if(node.cond, node.then_body));
      }
      for (const Stmt& child : smaller(node.then_body)) found.push_back(ir::make_if(node.cond, child, node.else_body));
      if (node.else_body)
        for (const Stmt& child : smaller(node.else_body))
          found.push_back(ir::make_if(node.cond, node.then_body, child));
      break;
    }
    case ir::StmtKind::For: {
      const auto& node = stmt->as<ir::For>();
      for (const Stmt& child : smaller(node.body))
        found.push_back(ir::make_for(node.var, node.begin, node.end, node.step, child));
      break;
    }
    default: break;
  }
  return found;
}

bool verifies(const ir::Kernel& kernel) {
  try {
    ir::verify(kernel);
    return true;
  } catch (const Error&) {
    return false;
  }
}

// The program without the kernels and arrays no step uses (renumbered).
Program without_unused(const Program& program) {
  std::vector<int> kernel_at(program.kernels.size(), -1), array_at(program.arrays.size(), -1);
  Program out;
  out.seed = program.seed;
  for (const Step& step : program.steps) {
    if (step.kernel >= 0) kernel_at[std::size_t(step.kernel)] = 0;
    if (step.array >= 0) array_at[std::size_t(step.array)] = 0;
    for (const auto& arg : step.args)
      if (auto* a = std::get_if<int>(&arg)) array_at[std::size_t(*a)] = 0;
  }
  for (std::size_t k = 0; k < program.kernels.size(); ++k)
    if (kernel_at[k] == 0) {
      kernel_at[k] = int(out.kernels.size());
      out.kernels.push_back(program.kernels[k]);
    }
  for (std::size_t a = 0; a < program.arrays.size(); ++a)
    if (array_at[a] == 0) {
      array_at[a] = int(out.arrays.size());
      out.arrays.push_back(program.arrays[a]);
    }
  for (Step step : program.steps) {
    if (step.kernel >= 0) step.kernel = kernel_at[std::size_t(step.kernel)];
    if (step.array >= 0) step.array = array_at[std::size_t(step.array)];
    for (auto& arg : step.args)
      if (auto* a = std::get_if<int>(&arg)) *a = array_at[std::size_t(*a)];
    out.steps.push_back(step);
  }
  return out;
}

class Shrinker {
 public:
  Shrinker(const std::function<bool(const Program&)>& fails, int attempts) : fails_(fails), attempts_(attempts) {}

  // True when `candidate` still fails (and it becomes the best so far).
  bool keep(const Program& candidate) {
    if (attempts_ <= 0) return false;
    --attempts_;
    if (!fails_(candidate)) return false;
    best_ = candidate;
    return true;
  }

  Program run(Program program, int mismatch_step) {
    best_ = std::move(program);
    if (mismatch_step >= 0 && std::size_t(mismatch_step) + 1 < best_.steps.size()) {
      Program cut = best_;
      cut.steps.resize(std::size_t(mismatch_step) + 1);
      keep(cut);
    }
    drop_steps();
    keep(without_unused(best_));
    simplify_kernels();
    halve_ranges();
    return best_;
  }

 private:
  void drop_steps() {
    for (std::size_t s = best_.steps.size(); s-- > 0 && attempts_ > 0;) {
      if (s >= best_.steps.size()) continue;
      Program candidate = best_;
      candidate.steps.erase(candidate.steps.begin() + std::ptrdiff_t(s));
      keep(candidate);
    }
  }

  void simplify_kernels() {
    for (std::size_t k = 0; k < best_.kernels.size(); ++k) {
      bool smaller_found = true;
      while (smaller_found && attempts_ > 0) {
        smaller_found = false;
        for (const Stmt& body : smaller(best_.kernels[k]->body)) {
          ir::Kernel kernel = *best_.kernels[k];
          kernel.body = body->kind == ir::StmtKind::Block ? body : ir::make_block({body});
          if (!verifies(kernel)) continue;
          Program candidate = best_;
          candidate.kernels[k] = std::make_shared<const ir::Kernel>(kernel);
          if (keep(candidate)) {
            smaller_found = true;
            break;
          }
          if (attempts_ <= 0) break;
        }
      }
    }
  }

  void halve_ranges() {
    for (std::size_t s = 0; s < best_.steps.size(); ++s) {
      if (best_.steps[s].kind != StepKind::Launch) continue;
      for (std::size_t d = 0; d < best_.steps[s].range.size(); ++d)
        while (best_.steps[s].range[d] > 1 && attempts_ > 0) {
          Program candidate = best_;
          candidate.steps[s].range[d] /= 2;
          if (!keep(candidate)) break;
        }
    }
  }

  const std::function<bool(const Program&)>& fails_;
  int attempts_;
  Program best_;
};

}  // namespace

Program shrink(const Program& program, int mismatch_step, const std::function<bool(const Program&)>& fails,
               int attempts) {
  return Shrinker(fails, attempts).run(program, mismatch_step);
}

}  // namespace canopy::diff
