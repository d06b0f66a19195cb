// LlvmLowering: kernel IR to LLVM IR with IRBuilder, for every target that
// Canopy reaches through LLVM. The base class lowers for the host CPU's entry
// convention (cpu_abi.hpp): arguments from an ArgSlot block, the index space
// as a loop nest, reductions into a local accumulator stored at the end.
// A target whose code runs differently (spir64 for SPIR-V: kernel arguments
// in address space 1, the index from get_global_id, OpenCL math builtins)
// subclasses it and overrides only the hooks below.
//
// Everything else, the IR's arithmetic semantics (ir/expr.hpp) included, is
// shared: wrapping integers, guarded division, masked shifts, saturating
// float-to-int casts, C's fmin/fmax and fmod. No fast-math flags are used
// except `reassoc` on the combine of a float sum reduction, so the loop
// vectorizer may reorder that one sum; every other result matches plain C++.
#pragma once

#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>

#include <canopy/ir/kernel.hpp>
#include <canopy/ir/visitor.hpp>

namespace canopy::jit {

/// A kernel parameter as LLVM values, made once at the function's start.
struct LoweredParam {
  llvm::Value* base = nullptr;              ///< arrays: pointer to element `first`
  std::vector<llvm::Value*> extents;        ///< arrays: the extents (i64), outermost first
  llvm::Value* first = nullptr;             ///< arrays: the element at `base` (i64; none on the CPU: 0)
  llvm::Value* value = nullptr;             ///< scalars: the value
  llvm::Value* partial = nullptr;           ///< reductions: where the partial result goes
  llvm::AllocaInst* accumulator = nullptr;  ///< reductions: the running value (CPU lowering)
};

/// The operations of `body` (loads, arithmetic, comparisons, casts, calls,
/// selects; leaves not counted), or -1 when it has a loop.
int operations_without_loops(const ir::Stmt& body);

/// True when `node` is a loop LLVM should unroll completely: constant
/// bounds, fewer than 16 trips, no loop inside, and at most 1024 operations
/// in all once unrolled. The CPU pipelines unroll nothing else: LLVM's own
/// heuristics unrolled loop nests whole (Rodinia lud's 16-row block: 370 ms
/// of compile, 32 ms without) and gained nothing measurable at run time.
bool unrolls_fully(const ir::For& node);

/// True when `kernel`'s points touch memory in descending order along its
/// innermost index (the CPU's point loop): some array position has a
/// negative coefficient on that index (a row r = n-1-index(0), as Rodinia's
/// gaussian and lud write theirs to keep exact footprints) and none a
/// positive one, and the kernel has no reduction and no atomic add, whose
/// results could depend on the points' order. The CPU's scalar point loop
/// then runs its points from the last to the first, so that memory is
/// touched in ascending order: the hardware prefetchers follow rows that
/// ascend, and lose each one when rows of 16 KiB descend (a sweep over
/// 64 MiB in descending 16 KiB rows, each read and written ascending: 22
/// GB/s against 48 ascending on this machine's Zen 5).
bool points_run_backward(const ir::Kernel& kernel);

class LlvmLowering : protected ir::Visitor {
 public:
  /// Lowers into `module`, whose data layout and triple are already set.
  LlvmLowering(llvm::Module& module, const ir::Kernel& kernel);
  ~LlvmLowering() override;

  /// Asks LLVM's loop vectorizer to interleave `count` vectors in each
  /// innermost loop of the kernel whose body is not large (0: its own choice,
  /// the default). The vectorizer interleaves a loop that stores each
  /// iteration's value only when its body is small; a longer body, a chain
  /// of dependent floating-point operations per element (lud's update: 16
  /// multiply-adds in order), then runs at that chain's latency. Two chains
  /// side by side use the second FMA unit.
  void set_interleave(int count) { interleave_ = count; }

  /// Runs the innermost dimension's points from the last to the first (see
  /// points_run_backward; off by default). Only the CPU's loop nest heeds it.
  void set_points_backward(bool backward) { points_backward_ = backward; }

  /// The array parameters whose atomic adds become plain reads, adds and
  /// stores (CpuCompiler::CodeOptions::plain_adds): the caller gives each
  /// thread memory of its own there. Only the CPU's lowerings heed it.
  void set_plain_adds(std::vector<int> params) { plain_adds_ = std::move(params); }

  /// Builds the kernel's function called `symbol` and checks it with LLVM's
  /// verifier (a failure is a Canopy bug and throws canopy::Error).
  llvm::Function* lower(const std::string& symbol);

 protected:
  // ---- hooks: where targets differ --------------------------------------

  /// Declares the entry function. CPU: void (i64 begin, i64 end, ptr args).
  virtual llvm::Function* declare_entry(const std::string& symbol);
  /// Fills params_ (and anything the index space needs) in the entry block.
  /// CPU: loads every slot of the argument block once.
  virtual void load_params();
  /// Runs `body` once for every point, with index_ set. CPU: the loop nest,
  /// dimension 0 outermost.
  virtual void emit_index_space(const std::function<void()>& body);
  /// The address space array pointers live in. CPU: 0.
  virtual unsigned array_address_space() const { return 0; }
  /// A math function on lowered arguments. CPU: LLVM's intrinsics.
  virtual llvm::Value* emit_math(ir::MathFn fn, ir::ScalarType type, const std::vector<llvm::Value*>& args);
  /// Prepares the reductions before the index space. CPU: accumulators set to the identity.
  virtual void begin_reductions();
  /// `reduce param(value)`. CPU: combines into the accumulator.
  virtual void emit_reduce(int param, llvm::Value* value);
  /// Publishes the reductions after the index space. CPU: stores each accumulator.
  virtual void finish_reductions();
  /// `atomic *address += value`. CPU: atomicrmw add/fadd, monotonic.
  virtual void emit_atomic_add(llvm::Value* address, llvm::Value* value, ir::ScalarType type);
  /// emit_atomic_add, or a plain read, add and store where `param` is one of set_plain_adds'.
  void emit_add_to(int param, llvm::Value* address, llvm::Value* value, ir::ScalarType type);

  // ---- helpers for the hooks ----------------------------------------------

  /// The type a value of `type` has in registers (i1 for bool).
  llvm::Type* value_type(ir::ScalarType type) const;
  /// The type an element of `type` has in memory (i8 for bool).
  llvm::Type* memory_type(ir::ScalarType type) const;
  /// A register value of `type` as it is stored in memory, and back.
  llvm::Value* to_memory(llvm::Value* value, ir::ScalarType type);
  llvm::Value* from_memory(llvm::Value* value, ir::ScalarType type);
  /// `scalar`, or a vector of it with as many lanes as `like` when that is a vector.
  static llvm::Type* with_lanes_of(llvm::Type* scalar, llvm::Type* like);
  /// Lowers an expression at the builder's insertion point.
  llvm::Value* value_of(const ir::Expr& expr);
  /// `a op b` for a reduction operator (sum with `reassoc` on floats).
  llvm::Value* combine(ir::ReduceOp op, ir::ScalarType type, llvm::Value* a, llvm::Value* b);
  /// A stack slot in the entry block (so that mem2reg promotes it).
  llvm::AllocaInst* entry_alloca(llvm::Type* type, const std::string& name);
  /// What emit_counted_loop may assume of its bounds.
  enum class Bounds {
    Any,         ///< any begin and end
    WholeSteps,  ///< end - begin is a multiple of step, and not negative
  };
  /// for (counter = begin; counter < end; counter += step) body(counter),
  /// signed, evaluating begin and end once; `step` is positive. Never wraps:
  /// the loop stops when the next value would pass end. `interleave` > 0
  /// asks LLVM's vectorizer to interleave that many vectors. With
  /// Bounds::WholeSteps the counter meets end exactly, so the loop goes on
  /// while counter + step < end: a trip count LLVM can compute, and a loop
  /// without effects it can delete. `points`: the loop walks the points of
  /// the innermost range dimension (its loop id says so to
  /// PageAheadPrefetchPass, kPointLoopProperty). `unroll_fully`: LLVM
  /// unrolls the loop completely (unrolls_fully), as it unrolls no other.
  void emit_counted_loop(llvm::Value* begin, llvm::Value* end, std::int64_t step, const std::string& name,
                         const std::function<void(llvm::Value* counter)>& body, int interleave = 0,
                         Bounds bounds = Bounds::Any, bool points = false, bool unroll_fully = false);
  /// The same with `bounds` and no interleaving.
  void emit_counted_loop(llvm::Value* begin, llvm::Value* end, std::int64_t step, const std::string& name,
                         Bounds bounds, const std::function<void(llvm::Value* counter)>& body, bool points = false) {
    emit_counted_loop(begin, end, step, name, body, 0, bounds, points);
  }
  /// `node`'s then and else bodies as an ordinary branch on the i1 `cond`.
  void emit_branch(llvm::Value* cond, const ir::If& node);
  /// Throws canopy::Error for a kernel this lowering cannot handle.
  [[noreturn]] void fail(const std::string& what) const;

  llvm::LLVMContext& context_;
  llvm::Module& module_;
  const ir::Kernel& kernel_;
  llvm::IRBuilder<> builder_;
  llvm::Function* function_ = nullptr;
  llvm::BasicBlock* entry_block_ = nullptr;
  std::vector<LoweredParam> params_;
  /// index(d) at the current point, per dimension.
  std::vector<llvm::Value*> index_;
  /// CPU: the bounds of dimension d's loop, [0] from the entry's arguments.
  std::vector<std::pair<llvm::Value*, llvm::Value*>> ranges_;

  // ---- the IR nodes -------------------------------------------------------
  void visit(const ir::Const& node) override;
  void visit(const ir::Index& node) override;
  void visit(const ir::ParamRef& node) override;
  void visit(const ir::VarRef& node) override;
  void visit(const ir::Extent& node) override;
  void visit(const ir::Load& node) override;
  void visit(const ir::Unary& node) override;
  void visit(const ir::Binary& node) override;
  void visit(const ir::Compare& node) override;
  void visit(const ir::Cast& node) override;
  void visit(const ir::Call& node) override;
  void visit(const ir::Select& node) override;

  void visit(const ir::Block& node) override;
  void visit(const ir::Decl& node) override;
  void visit(const ir::Assign& node) override;
  void visit(const ir::Store& node) override;
  void visit(const ir::AtomicAdd& node) override;
  void visit(const ir::Reduce& node) override;
  void visit(const ir::If& node) override;
  void visit(const ir::For& node) override;

  llvm::Value* lower_binary(ir::BinaryOp op, ir::ScalarType type, llvm::Value* a, llvm::Value* b);
  llvm::Value* lower_cast(llvm::Value* value, ir::ScalarType from, ir::ScalarType to);
  llvm::Value* lower_compare(ir::CompareOp op, ir::ScalarType type, llvm::Value* a, llvm::Value* b);

  llvm::Value* value_ = nullptr;  ///< the result of the expression just visited

 private:
  /// Address of array element `indices` of parameter `param` (row-major, i64).
  llvm::Value* element_address(int param, const std::vector<ir::Expr>& indices);

  std::unordered_map<std::string, llvm::AllocaInst*> locals_;
  std::unordered_map<std::string, llvm::Value*> loop_counters_;
  int interleave_ = 0;            // set_interleave
  std::vector<int> plain_adds_;   // set_plain_adds
  bool points_backward_ = false;  // set_points_backward
};

}  // namespace canopy::jit
