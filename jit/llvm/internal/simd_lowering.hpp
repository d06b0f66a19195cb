// SimdLowering: the CPU lowering with one SIMD lane per point. The points of
// a kernel are independent (the kernel's contract), so the innermost
// dimension of the index space runs `lanes` consecutive points at a time, one
// per lane, instead of leaving LLVM to vectorize whatever innermost loop it
// can prove safe (which is never the point loop when a point has a loop of
// its own, as in an n-body force or a matrix product).
//
// Every value has a shape, decided while lowering:
//   uniform   the same in every lane: a scalar, computed once for all lanes;
//   linear    lane l holds base + l * stride (integers only): the index of the
//             vector dimension and what adds or scales it;
//   varying   anything else: an LLVM vector of `lanes` elements.
// Array accesses follow the shape of their linear element number: uniform is
// one scalar access, linear with stride 1 a vector load or store, anything
// else a gather or scatter. An index clamped to a uniform bound (min or max
// of a linear index and a bound: a stencil's x[min(i + 1, n - 1)]) is linear
// in every vector that does not meet the bound: its loads are a vector load
// there and a gather in the vector that meets it. Control flow whose condition or bounds vary
// between lanes becomes a mask: an `If` runs each side under the lanes that
// take it and skips a side no lane takes; a `For` whose bounds vary runs
// while any lane is still in its range. Stores, reductions and atomics only
// happen in active lanes; the last points, fewer than `lanes`, run under a
// mask too.
//
// Each lane computes exactly what the scalar lowering computes for its point
// (the same LLVM operations on vectors, the same math intrinsics), so integer
// results are identical and floating-point results are the same except for
// the order in which a float sum reduction is combined, which the scalar
// code leaves to LLVM already. Kernels that this lowering does not take (see
// simd_plan and SimdLowering::refusal) use the scalar lowering, and the LLVM
// dump says why.
#pragma once

#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "llvm_lowering.hpp"

namespace canopy::jit {

/// How a kernel is lowered for the host CPU.
struct SimdPlan {
  int lanes = 0;       ///< points per vector; 0: the scalar lowering
  std::string reason;  ///< why, for the dumps ("8 lanes of dimension 0", or why not)
};

/// Decides, from CANOPY_SIMD and CANOPY_SIMD_WIDTH and the kernel, whether
/// the kernel is lowered with SIMD across points and with how many lanes.
/// `vector_bits` is the width of the host's vector registers (128, 256, 512).
/// In `auto` mode every kernel is planned for lanes, and SimdLowering::refusal
/// may still send it back to the scalar lowering (with `on` it may not).
SimdPlan simd_plan(const ir::Kernel& kernel, int vector_bits);

/// A bound on the lanes' own index in a condition: index(lanes' dimension)
/// + offset `op` bound, where the bound is the same for every point of a row.
struct EdgeBound {
  ir::CompareOp op;
  std::int64_t offset;
  ir::Expr bound;
};

class SimdLowering final : public LlvmLowering {
 public:
  SimdLowering(llvm::Module& module, const ir::Kernel& kernel, int lanes);

  /// After lower(): why the scalar lowering is expected to run this kernel
  /// faster, or empty. A point whose innermost loop (or whose body, without
  /// loops) gathers or scatters (a row per point walked along its columns,
  /// an edge list per node, a row of a matrix per point) is cheaper as a
  /// scalar loop, whose inner loop LLVM may vectorize itself, with
  /// interleaved loads where a row is read whole, and whose accesses follow
  /// the cache lines; SIMD across points pays where the innermost accesses
  /// are the same for every lane or consecutive across them, and in a body
  /// without loops whose arithmetic outweighs its gathers (kArithmeticPerGather).
  /// A point body without loops that gathers or scatters keeps the lanes
  /// when it does at least this many operations on lanes per gather or
  /// scatter (a record parsed from its bytes: the lanes' arithmetic outweighs
  /// the gathers, and the scalar loop would not be vectorized either).
  static constexpr int kArithmeticPerGather = 16;
  std::string refusal() const;

  /// Whether the CPU converts int64 lanes to double itself (HostTarget::
  /// converts_int64_lanes); when not, such conversions are Canopy's own
  /// exact vector code instead of LLVM's lane-by-lane one. Default: true.
  void set_int64_lanes_native(bool native) { int64_lanes_native_ = native; }

  /// Whether the CPU has a fused multiply-add (HostTarget::
  /// fuses_multiply_add): `sin` and `cos` of floats are computed in float
  /// lanes only with one (emit_vector_sin). Default: true.
  void set_fused_multiply_add(bool fused) { fused_multiply_add_ = fused; }

  /// The width of the host's vector registers in bits (HostTarget::
  /// vector_bits): a row block is filled a register of each row at a time,
  /// transposed in registers. Default: 256.
  void set_vector_bits(int bits) { vector_bits_ = bits; }

 private:
  enum class Shape { Uniform, Linear, Varying };
  /// A lowered value and its shape. Linear: `value` is lane 0's value and
  /// `stride` the step from one lane to the next (both scalars).
  ///
  /// A linear value may hold under a `guard` only (an i1 scalar): an index
  /// clamped to a uniform bound (a stencil's x[min(i + 1, n - 1)]) is linear
  /// in every vector but the one that meets the bound. Then `exact` is the
  /// value in every lane (a vector), which vector_of gives; a load takes one
  /// vector load where the guard holds and a gather elsewhere, and every
  /// other use sees the exact lanes.
  struct Shaped {
    Shape shape = Shape::Uniform;
    llvm::Value* value = nullptr;
    llvm::Value* stride = nullptr;
    llvm::Value* guard = nullptr;
    llvm::Value* exact = nullptr;
  };

  // ---- hooks ----
  void load_params() override;
  void emit_index_space(const std::function<void()>& body) override;
  void begin_reductions() override;
  void finish_reductions() override;

  // ---- shapes ----
  Shaped shaped_of(const ir::Expr& expr);
  static Shaped uniform(llvm::Value* value) { return {Shape::Uniform, value, nullptr}; }
  static Shaped varying(llvm::Value* value) { return {Shape::Varying, value, nullptr}; }
  Shaped linear(llvm::Value* base, llvm::Value* stride);
  /// Linear where `guard` holds, `exact` in every lane (see Shaped); the
  /// guards of the operands `a` and `b` (where given) join `guard`.
  Shaped guarded(llvm::Value* base, llvm::Value* stride, llvm::Value* guard, llvm::Value* exact,
                 const Shaped* a = nullptr, const Shaped* b = nullptr);
  /// min or max of a linear integer with a constant step up and a uniform
  /// bound: linear under the guard that no lane reaches the bound (and the
  /// lanes do not wrap). Unset for any other operands.
  std::optional<Shaped> clamped(ir::BinaryOp op, const Shaped& a, const Shaped& b, llvm::Value* exact);
  /// The same value without a guard: its exact lanes.
  Shaped unguarded(const Shaped& value) { return value.guard ? varying(value.exact) : value; }
  /// The value as a vector of `lanes_` elements.
  llvm::Value* vector_of(const Shaped& value);
  llvm::Value* splat(llvm::Value* scalar);
  /// The mask of active lanes as a vector (all true when every lane is).
  llvm::Value* active_lanes();
  /// True in some lane of `mask`.
  llvm::Value* any_lane(llvm::Value* mask);
  /// Shaped integer arithmetic: linear where it stays linear.
  Shaped add(const Shaped& a, const Shaped& b);
  Shaped multiply(const Shaped& a, const Shaped& b);
  Shaped negate(const Shaped& a);
  /// The element number of `indices` in array `param`, and its element type in memory.
  Shaped element_number(int param, const std::vector<ir::Expr>& indices);
  /// A load of `number` (consecutive under a guard): one vector load where
  /// the guard holds, a gather of the exact lanes elsewhere.
  llvm::Value* load_guarded(llvm::Type* type, int param, const Shaped& number, llvm::Align align);
  /// The addresses of the elements `number` of `param`: a scalar pointer when
  /// uniform or consecutive (lane 0's), else a vector of pointers.
  llvm::Value* element_pointer(int param, const Shaped& number);
  /// The same as a vector of one pointer per lane, whatever the shape.
  llvm::Value* element_pointers(int param, const Shaped& number);
  /// Linear with stride 1: one vector load or store.
  static bool is_consecutive(const Shaped& number);
  /// Neither uniform nor consecutive: a gather or scatter.
  static bool is_scattered(const Shaped& number);
  /// <0, 1, ..., lanes - 1> of the integer `type`.
  llvm::Constant* lane_numbers(llvm::Type* type) const;
  /// `fn` of the vectors `args` through the C library, called once per lane
  /// active in mask_ (under a branch most lanes may be inactive, and each
  /// call costs as much as a whole vector of arithmetic).
  llvm::Value* call_per_active_lane(ir::MathFn fn, ir::ScalarType type, const std::vector<llvm::Value*>& args);
  /// Runs `body` under `mask` (a vector), skipping it when no lane is active.
  void under_mask(llvm::Value* mask, const std::function<void()>& body);
  /// For an If whose condition orders a linear integer against a uniform one
  /// (a bound check on the lanes' own index: a stencil's `if (j > 0)`): an i1
  /// that is true when the first and the last lane decide alike, and then so
  /// does every lane between (the lanes' values are monotonic, checked not to
  /// wrap), and the first lane's decision. Nulls for any other condition.
  std::pair<llvm::Value*, llvm::Value*> lanes_agree(const ir::Expr& cond);
  /// An If with a varying condition: each side under its mask.
  void masked_if(const ir::If& node);
  /// The whole vectors of points from `lo` to `whole_end` where the body has
  /// conditions that bound the lanes' own index (a stencil's `j > 0`, `j <
  /// cols - 1`; `bounds`, found in `conditions`): the vectors where every
  /// bound holds in every lane (the interior) run a second lowering of the
  /// body with those conditions taken as true, without the tests and masked
  /// paths; the vectors at the edges run the general one, in the points'
  /// order. `whole_vector(i)` lowers the body for the vector at i.
  void emit_whole_vectors_around_interior(llvm::Value* lo, llvm::Value* whole_end, const std::vector<EdgeBound>& bounds,
                                          const std::vector<const ir::ExprNode*>& conditions,
                                          const std::function<void(llvm::Value*)>& whole_vector);

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

  void visit(const ir::Decl& node) override;
  void visit(const ir::Assign& node) override;
  void visit(const ir::Store& node) override;
  void visit(const ir::AtomicAdd& node) override;
  void visit(const ir::Reduce& node) override;
  void visit(const ir::If& node) override;
  void visit(const ir::For& node) override;

  // ---- row blocks ----
  // A point that walks its own row of a read-only array in a loop (kmeans'
  // distance to each centre: points(i, f) for every f, again for every
  // centre) would gather one element per lane at each step, which costs as
  // much as the scalar loads it replaces. Instead, each group of lanes first
  // copies its rows into a stack buffer, transposed (element u of lane l's
  // row at u * lanes + l), and every such load becomes one vector load of
  // that buffer. Taken where the rows fit the buffer and the array overlaps
  // no array the kernel writes; otherwise the same load gathers.
  struct RowBlock {
    llvm::AllocaInst* buffer = nullptr;
    llvm::Value* row_length = nullptr;  ///< elements per row: the product of the extents past the first
    llvm::Value* usable = nullptr;      ///< i1, per call: the rows fit and nothing written overlaps them
  };
  /// Copies the rows of `count` lanes from row `first_row` into each row
  /// block; `whole`: count is every lane.
  void fill_row_blocks(llvm::Value* first_row, llvm::Value* count, bool whole);
  /// A whole group's rows, `tile` lanes and `tile` columns at a time: a
  /// register of each of `tile` rows, transposed in registers, stored as a
  /// register of each of `tile` columns. Returns the first column it left.
  llvm::Value* fill_row_block_by_tiles(const RowBlock& block, int param, llvm::Value* first_row, int tile);
  /// The load `node` through its row block, or null when it has none.
  llvm::Value* load_through_row_block(const ir::Load& node);

  /// The operations on lanes (arithmetic, comparisons, selects,
  /// conversions, math) in the function lowered so far.
  int lane_arithmetic() const;
  /// Notes a memory access of the given shape at the depth of the innermost
  /// loop whose iterations its address may differ in (an access that only
  /// depends on values from outside a loop is LLVM's to hoist out of it);
  /// `store`: a plain store.
  void note_access(const Shaped& number, bool store = false);
  /// That depth for `value`: 0 outside every loop of the point.
  int varying_depth(llvm::Value* value) const;
  int varying_depth(llvm::Value* value, std::unordered_map<const llvm::Instruction*, int>& seen, int budget) const;
  /// The loaded elements `number` of `node`'s array: one scalar load when
  /// uniform, a vector load when consecutive (masked in the tail), else a gather.
  Shaped load_elements(const ir::Load& node, const Shaped& number);

  /// A consecutive store under a mask, as a masked store or, where the
  /// whole vector's points are inside the array and only each point itself
  /// stores to its element (own_point_stores_), as a load, a blend and a
  /// whole store: a masked store is many times slower on some CPUs (AMD's),
  /// and LLVM merges the blends of the branches of an If into one store.
  void store_under_mask(int param, llvm::Value* value, llvm::Value* pointer, llvm::Align align);

  const int lanes_;
  bool int64_lanes_native_ = true;
  bool fused_multiply_add_ = true;
  int vector_bits_ = 256;
  /// Per parameter: an array whose every store is at the storing point's own
  /// element (ir::at_own_point), so that no other point writes the elements
  /// of a vector's points.
  std::vector<bool> own_point_stores_;
  /// True while the body is lowered for a whole vector of points (not the
  /// last, partial one under a mask).
  bool whole_vector_ = false;
  /// While the interior's vectors are lowered: the conditions that hold in
  /// every lane (emit_whole_vectors_around_interior).
  std::unordered_set<const ir::ExprNode*> known_true_;
  /// The operations on lanes of the interior's lowering, which refusal()
  /// leaves out.
  int interior_arithmetic_ = 0;
  /// int64 lanes to double, correctly rounded, without a conversion
  /// instruction: x = hi * 2^32 + lo, each half made exact through a
  /// double's significand, summed with one rounding.
  llvm::Value* int64_lanes_to_double(llvm::Value* lanes);
  /// For loops around the current statement, within a point, outermost
  /// first: how many blocks the function had when each began (blocks are
  /// only ever appended, so every later block belongs to the loop).
  std::vector<std::size_t> loop_first_blocks_;
  /// Each block's position in the function, counted again when a new one is asked about.
  mutable std::unordered_map<const llvm::BasicBlock*, std::size_t> block_numbers_;
  int deepest_ = 0;              ///< the deepest loop depth with a memory access
  int scattered_ = 0;            ///< gathers and scatters at that depth
  Shaped shaped_;                ///< the result of the expression just visited
  std::vector<Shaped> indices_;  ///< index(d) at the current points
  llvm::Value* mask_ = nullptr;  ///< the active lanes; null when all are
  /// Variables assigned after their declaration live in vector stack slots;
  /// the others are bound to their value (of any shape) where declared.
  std::unordered_set<std::string> assigned_;
  std::unordered_map<std::string, Shaped> bound_;
  std::unordered_map<std::string, llvm::AllocaInst*> slots_;
  /// Per reduction parameter: one accumulator per lane.
  std::vector<llvm::AllocaInst*> lane_accumulators_;
  /// Row blocks by parameter: the candidates from the kernel's body, then
  /// their buffers (made in load_params).
  std::unordered_map<int, RowBlock> row_blocks_;
};

}  // namespace canopy::jit
