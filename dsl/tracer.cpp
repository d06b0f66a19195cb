#include "tracer.hpp"

#include <canopy/ir/passes/snapshots.hpp>

#include <algorithm>

#include <canopy/ir/error.hpp>
#include <canopy/ir/printer.hpp>
#include <canopy/ir/verifier.hpp>

namespace canopy::dsl {

namespace {
thread_local Tracer* current_tracer = nullptr;
}

Tracer::Tracer(std::string kernel_name) : name_(std::move(kernel_name)), blocks_(1), previous_(current_tracer) {
  if (previous_)
    throw Error("kernel '" + name_ + "' is being defined inside the body of kernel '" + previous_->name_ +
                "'; define kernels outside each other's bodies");
  current_tracer = this;
}

Tracer::~Tracer() { current_tracer = previous_; }

Tracer& Tracer::current(std::string_view operation) {
  if (!current_tracer)
    throw Error(std::string(operation) +
                " was used outside a kernel body; DSL operations only work while a Kernel traces its lambda");
  return *current_tracer;
}

Tracer* Tracer::active() { return current_tracer; }

void Tracer::fail(std::string_view operation, std::string_view problem) const {
  throw Error("kernel '" + name_ + "': " + std::string(operation) + ": " + std::string(problem));
}

int Tracer::add_param(ir::Param param) {
  std::string name = "p";  // (not "p" + ...: GCC 12 warns falsely on that, -Wrestrict)
  name += std::to_string(params_.size());
  param.name = std::move(name);
  params_.push_back(std::move(param));
  return static_cast<int>(params_.size()) - 1;
}

void Tracer::reserve_names(const std::vector<std::string>& names) { used_names_.insert(names.begin(), names.end()); }

std::string Tracer::fresh_name(std::string_view hint) {
  // Unnamed locals are v0, v1, ...; a named one keeps its name, or gets a
  // number after it (x, x1, x2, ...) when the name is taken. Names are only
  // ever added, so each sequence's candidates are tried in order, once.
  const std::string base = hint.empty() ? "v" : std::string(hint);
  auto candidate = [&](int k) { return k > 0 ? base + std::to_string(k) : hint.empty() ? base + "0" : base; };
  int& next = next_number_[hint.empty() ? std::string() : base];
  while (used_names_.count(candidate(next))) ++next;
  std::string name = candidate(next++);
  used_names_.insert(name);
  return name;
}

void Tracer::note_index(int dim) { max_index_dim_ = std::max(max_index_dim_, dim); }

ir::Expr Tracer::snapshot(const ir::Expr& read) {
  const std::string name = fresh_name("snap_");
  snapshots_.insert(name);
  emit(ir::make_decl(name, read));
  return ir::make_var(read->type, name);
}

void Tracer::emit(ir::Stmt stmt) { blocks_.back().push_back(std::move(stmt)); }

Tracer::Place Tracer::next_place() const { return {blocks_.size() - 1, blocks_.back().size()}; }

void Tracer::replace(Place place, ir::Stmt stmt) {
  if (place.depth >= blocks_.size() || place.position >= blocks_[place.depth].size())
    fail("Else", "it must follow its If in the same block");
  blocks_[place.depth][place.position] = std::move(stmt);
}

std::vector<ir::Stmt> Tracer::take_snapshots_after(Place place) {
  std::vector<ir::Stmt> taken;
  if (place.depth >= blocks_.size()) return taken;
  auto& block = blocks_[place.depth];
  std::size_t first = place.position + 1;
  while (first < block.size() && block[first]->kind == ir::StmtKind::Decl &&
         snapshots_.count(block[first]->as<ir::Decl>().name))
    ++first;
  if (first != block.size()) return taken;  // something else came after: leave it all
  taken.assign(block.begin() + static_cast<std::ptrdiff_t>(place.position + 1), block.end());
  block.resize(place.position + 1);
  return taken;
}

ir::Kernel Tracer::finish(const std::vector<std::string>& param_names) {
  if (!param_names.empty() && param_names.size() != params_.size())
    fail("parameter names",
         std::to_string(param_names.size()) + " names given for " + std::to_string(params_.size()) + " parameters");
  ir::Kernel kernel;
  kernel.name = name_;
  kernel.params = params_;
  // The locals were named around the parameters' names (reserve_names).
  for (std::size_t i = 0; i < param_names.size(); ++i) kernel.params[i].name = param_names[i];
  kernel.dims = max_index_dim_ + 1;
  std::vector<ir::ScalarType> element_types;
  for (const auto& param : params_) element_types.push_back(param.type);
  kernel.body = ir::forward_snapshots(ir::make_block(std::move(blocks_.front())), snapshots_, element_types);
  blocks_.assign(1, {});
  snapshots_.clear();
  ir::verify(kernel);
  return kernel;
}

}  // namespace canopy::dsl
