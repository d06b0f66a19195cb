// The tracing context behind the DSL. While a Kernel's lambda runs, one
// Tracer per thread collects the statements the DSL's calls emit and the
// parameters the lambda declares; at the end it hands back an ir::Kernel.
// Users never touch it: it is public only because the DSL's templates call it.
#pragma once

#include <cstddef>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <canopy/ir/kernel.hpp>

namespace canopy::dsl {

class Tracer {
 public:
  /// Starts tracing kernel `kernel_name` on this thread (tracers do not nest).
  explicit Tracer(std::string kernel_name);
  ~Tracer();
  Tracer(const Tracer&) = delete;
  Tracer& operator=(const Tracer&) = delete;

  /// The tracer of this thread; throws canopy::Error naming `operation` when
  /// called outside a kernel's body.
  static Tracer& current(std::string_view operation);
  /// The tracer of this thread, or null outside a kernel body.
  static Tracer* active();
  /// Nesting depth of the block being traced: 0 for the kernel body.
  int depth() const { return static_cast<int>(blocks_.size()) - 1; }

  /// Throws canopy::Error "kernel 'NAME': OPERATION: PROBLEM".
  [[noreturn]] void fail(std::string_view operation, std::string_view problem) const;

  const std::string& kernel_name() const { return name_; }

  /// Declares the next parameter; returns its position.
  int add_param(ir::Param param);
  const ir::Param& param(int index) const { return params_.at(static_cast<std::size_t>(index)); }

  /// A local name not used before in this kernel, from `hint` ("v" if empty).
  std::string fresh_name(std::string_view hint);
  /// Keeps `names` (the parameters' names a Kernel was given) from the
  /// locals: fresh_name never returns one of them. Call before tracing.
  void reserve_names(const std::vector<std::string>& names);
  /// Records that the body reads index(dim).
  void note_index(int dim);
  /// A read of a local or an array's element taken now: a snapshot
  /// local declared from it (finish() puts the read back wherever the two
  /// cannot differ; see ir/passes/snapshots.hpp). Returns the read to use.
  ir::Expr snapshot(const ir::Expr& read);

  /// Appends a statement to the innermost open block.
  void emit(ir::Stmt stmt);
  /// Where the next emitted statement will go: (block depth, position).
  struct Place {
    std::size_t depth;
    std::size_t position;
  };
  Place next_place() const;
  /// Replaces the statement at `place` (used by If(...).Else(...)).
  void replace(Place place, ir::Stmt stmt);
  /// Removes and returns the snapshots declared right after the statement at
  /// `place` in its block: those of an ElseIf's condition, which C++
  /// evaluates before ElseIf is called, and which belong in the else branch.
  std::vector<ir::Stmt> take_snapshots_after(Place place);
  /// Traces `body` into a new block and returns the block.
  template <class F>
  ir::Stmt trace_block(F&& body) {
    blocks_.emplace_back();
    try {
      body();
    } catch (...) {
      blocks_.pop_back();
      throw;
    }
    auto stmts = std::move(blocks_.back());
    blocks_.pop_back();
    return ir::make_block(std::move(stmts));
  }

  /// The traced kernel, verified. `param_names` (optional) renames the parameters.
  ir::Kernel finish(const std::vector<std::string>& param_names);

 private:
  std::string name_;
  std::vector<ir::Param> params_;
  std::vector<std::vector<ir::Stmt>> blocks_;
  std::unordered_set<std::string> used_names_;
  /// Per hint ("" for unnamed locals): the number fresh_name tries next, so
  /// that naming the n-th local costs one lookup, not n.
  std::unordered_map<std::string, int> next_number_;
  std::set<std::string> snapshots_;
  int max_index_dim_ = 0;
  Tracer* previous_;
};

}  // namespace canopy::dsl
