#include "internal/simd_lowering.hpp"

#include <algorithm>
#include <optional>

#include <llvm/IR/IntrinsicInst.h>
#include <llvm/IR/Intrinsics.h>

#include <canopy/ir/analysis/footprint.hpp>
#include <canopy/ir/error.hpp>
#include <canopy/ir/settings.hpp>
#include <canopy/ir/visitor.hpp>

#include "internal/vector_math.hpp"

namespace canopy::jit {

using ir::ScalarType;

namespace {

// What a plan needs to know of a kernel's body, in one walk.
struct BodyFacts : ir::Visitor {
  std::unordered_set<std::string> assigned;
  int widest_bits = 0;  ///< of the floats and 32-bit integers points compute with

  void note(ScalarType type) {
    if (ir::is_float(type) || type == ScalarType::I32)
      widest_bits = std::max(widest_bits, static_cast<int>(ir::size_of(type) * 8));
  }
  void visit(const ir::Assign& node) override {
    assigned.insert(node.name);
    Visitor::visit(node);
  }
  void visit(const ir::Decl& node) override {
    note(node.type);
    Visitor::visit(node);
  }
  void visit(const ir::Load& node) override {
    note(node.type);
    Visitor::visit(node);
  }
};

// The points' indices and the variables an expression mentions.
struct Mentions : ir::Visitor {
  std::unordered_set<int> indices;
  std::unordered_set<std::string> variables;
  void visit(const ir::Index& node) override { indices.insert(node.dim); }
  void visit(const ir::VarRef& node) override { variables.insert(node.name); }
};

// True when `index` is index(lane_dim), the lanes' own index.
bool is_lane_index(const ir::Expr& index, int lane_dim) {
  return index->kind == ir::ExprKind::Index && index->as<ir::Index>().dim == lane_dim;
}

// The read-only arrays whose rows points walk in a loop (SimdLowering's row
// blocks): loaded inside a For at (index(lanes' dimension), ...), with the
// other indices free of that index and following some enclosing loop.
struct RowWalks : ir::Visitor {
  const ir::Kernel& kernel;
  const int lane_dim;
  std::vector<std::string> loops;
  std::unordered_set<int> params;

  explicit RowWalks(const ir::Kernel& k) : kernel(k), lane_dim(k.dims - 1) {}

  void visit(const ir::For& node) override {
    walk(node.begin);
    walk(node.end);
    loops.push_back(node.var);
    walk(node.body);
    loops.pop_back();
  }
  void visit(const ir::Load& node) override {
    Visitor::visit(node);
    const ir::Param& param = kernel.params.at(node.param);
    if (loops.empty() || !param.is_array() || param.access != ir::Access::In || node.indices.size() < 2) return;
    if (!is_lane_index(node.indices[0], lane_dim)) return;
    bool follows_a_loop = false;
    for (std::size_t d = 1; d < node.indices.size(); ++d) {
      Mentions mentions;
      mentions.walk(node.indices[d]);
      if (mentions.indices.count(lane_dim)) return;
      for (const auto& loop : loops) follows_a_loop = follows_a_loop || mentions.variables.count(loop) > 0;
    }
    if (follows_a_loop) params.insert(node.param);
  }
};

// A row block's buffer: small enough to stay in the level-1 cache beside the
// rest of a point's data.
constexpr std::int64_t kRowBlockBytes = 16 * 1024;

// True when `expr` is the same for every point of a row of the lanes'
// dimension `lane_dim` and can be computed before the row's loop: literals,
// scalar parameters, extents, the indices of outer dimensions and integer
// arithmetic on them (no variable, no load).
bool row_invariant(const ir::Expr& expr, int lane_dim) {
  switch (expr->kind) {
    case ir::ExprKind::Const:
    case ir::ExprKind::Param:
    case ir::ExprKind::Extent: return ir::is_int(expr->type);
    case ir::ExprKind::Index: return expr->as<ir::Index>().dim < lane_dim;
    case ir::ExprKind::Binary: {
      const auto& b = expr->as<ir::Binary>();
      const bool arithmetic = b.op == ir::BinaryOp::Add || b.op == ir::BinaryOp::Sub || b.op == ir::BinaryOp::Mul ||
                              b.op == ir::BinaryOp::Min || b.op == ir::BinaryOp::Max;
      return arithmetic && expr->type == ir::ScalarType::I64 && row_invariant(b.lhs, lane_dim) &&
             row_invariant(b.rhs, lane_dim);
    }
    case ir::ExprKind::Cast: {
      const auto& c = expr->as<ir::Cast>();
      return expr->type == ir::ScalarType::I64 && ir::is_int(c.operand->type) && row_invariant(c.operand, lane_dim);
    }
    default: return false;
  }
}

// `cond` as an EdgeBound (the index moved to the left), when it compares
// index(lane_dim), plus or minus a literal of at most 2^31, with a
// row-invariant value: a stencil's `j > 0` or `j + 1 < cols`.
std::optional<EdgeBound> edge_bound(const ir::Expr& cond, int lane_dim) {
  if (cond->kind != ir::ExprKind::Compare) return std::nullopt;
  const auto& compare = cond->as<ir::Compare>();
  if (compare.op == ir::CompareOp::Eq || compare.op == ir::CompareOp::Ne || compare.lhs->type != ir::ScalarType::I64)
    return std::nullopt;
  constexpr std::int64_t kMostOffset = std::int64_t{1} << 31;
  // index(lane_dim) + offset, or nothing.
  auto own_index = [&](const ir::Expr& e) -> std::optional<std::int64_t> {
    if (is_lane_index(e, lane_dim)) return 0;
    if (e->kind != ir::ExprKind::Binary) return std::nullopt;
    const auto& b = e->as<ir::Binary>();
    if (b.op != ir::BinaryOp::Add && b.op != ir::BinaryOp::Sub) return std::nullopt;
    const bool literal_right = ir::is_const(b.rhs) && is_lane_index(b.lhs, lane_dim);
    const bool literal_left = b.op == ir::BinaryOp::Add && ir::is_const(b.lhs) && is_lane_index(b.rhs, lane_dim);
    if (!literal_right && !literal_left) return std::nullopt;
    const std::int64_t value = (literal_right ? b.rhs : b.lhs)->as<ir::Const>().int_value;
    if (value <= -kMostOffset || value >= kMostOffset) return std::nullopt;
    return b.op == ir::BinaryOp::Sub ? -value : value;
  };
  if (auto offset = own_index(compare.lhs); offset && row_invariant(compare.rhs, lane_dim))
    return EdgeBound{compare.op, *offset, compare.rhs};
  if (auto offset = own_index(compare.rhs); offset && row_invariant(compare.lhs, lane_dim))
    return EdgeBound{ir::mirrored(compare.op), *offset, compare.lhs};
  return std::nullopt;
}

// The conditions of a body's Ifs and selects that bound the lanes' own index
// (edge_bound), each alone or in a logical and of such bounds, with the
// bounds.
struct EdgeConditions : ir::Visitor {
  int lane_dim;
  std::vector<const ir::ExprNode*> conditions;
  std::vector<EdgeBound> bounds;

  explicit EdgeConditions(int dim) : lane_dim(dim) {}

  // Adds `cond` when every part of it is a bound.
  bool add(const ir::Expr& cond) {
    if (cond->kind == ir::ExprKind::Binary && cond->as<ir::Binary>().op == ir::BinaryOp::And &&
        cond->type == ir::ScalarType::Bool) {
      const auto& both = cond->as<ir::Binary>();
      const std::size_t kept = bounds.size(), noted = conditions.size();
      if (!add(both.lhs) || !add(both.rhs)) {
        bounds.resize(kept);
        conditions.resize(noted);
        return false;
      }
      conditions.push_back(cond.get());
      return true;
    }
    auto bound = edge_bound(cond, lane_dim);
    if (!bound) return false;
    bounds.push_back(*bound);
    conditions.push_back(cond.get());
    return true;
  }

  void visit(const ir::If& node) override {
    add(node.cond);
    ir::Visitor::visit(node);
  }
  void visit(const ir::Select& node) override {
    add(node.cond);
    ir::Visitor::visit(node);
  }
};

}  // namespace

SimdPlan simd_plan(const ir::Kernel& kernel, int vector_bits) {
  const Settings& s = settings();
  if (s.simd == "off") return {0, "scalar point loop: CANOPY_SIMD=off"};
  if (kernel.dims < 1) return {0, "scalar point loop: the kernel has no index space"};
  if (s.simd != "on") {
    // Lanes that all compute the same thing (a one-point region's panel
    // update in Rodinia's lud) save nothing, and keep LLVM's vectorizers off
    // the loops that could use them: 40-46 ms against the OpenMP loop's 22.
    Mentions mentions;
    mentions.walk(kernel.body);
    if (!mentions.indices.count(kernel.dims - 1))
      return {0, "scalar point loop: the kernel does not read index(" + std::to_string(kernel.dims - 1) +
                     "), so every lane would do the same work"};
  }
  BodyFacts facts;
  facts.walk(kernel.body);
  for (const auto& param : kernel.params)
    if (param.is_array()) facts.note(param.type);
  // Two registers' worth of the widest type: two independent chains per
  // accumulator hide the latency of floating-point adds. A body without
  // loops takes at least 1024 bits: with 256-bit registers, four of them per
  // value pay for each vector's fixed costs (the loop over the points, a
  // stencil's edge tests) over twice the points (hotspot ran 0.84-0.97x its
  // OpenMP loop at 16 float lanes on AVX2, 0.93-1.18x at 32), where in a
  // loop, lanes wait for the slowest (Mandelbrot's escape loop: 4.0x at 16
  // lanes, 2.5x at 32).
  const int widest = std::max(facts.widest_bits, 32);
  const int bits = ir::has_loops(kernel) ? 2 * vector_bits : std::max(2 * vector_bits, 1024);
  int lanes = s.simd_width > 0 ? s.simd_width : std::clamp(bits / widest, 2, 32);
  return {lanes, "SIMD across points: " + std::to_string(lanes) + " lanes of dimension " +
                     std::to_string(kernel.dims - 1) + (s.simd_width > 0 ? " (CANOPY_SIMD_WIDTH)" : "")};
}

SimdLowering::SimdLowering(llvm::Module& module, const ir::Kernel& kernel, int lanes)
    : LlvmLowering(module, kernel), lanes_(lanes) {
  BodyFacts facts;
  facts.walk(kernel.body);
  assigned_ = std::move(facts.assigned);
  RowWalks walks(kernel);
  walks.walk(kernel.body);
  for (int param : walks.params) row_blocks_[param] = {};
  const ir::Footprint footprint = ir::footprint_of(kernel);
  own_point_stores_.assign(kernel.params.size(), false);
  for (const auto& array : footprint.arrays)
    own_point_stores_[static_cast<std::size_t>(array.param)] = ir::at_own_point(array.writes, kernel.dims);
}

void SimdLowering::load_params() {
  LlvmLowering::load_params();
  auto* i64 = builder_.getInt64Ty();
  // Where each array's elements start and end, as integers.
  auto bounds = [&](int p) {
    llvm::Value* count = builder_.getInt64(1);
    for (llvm::Value* extent : params_[p].extents) count = builder_.CreateMul(count, extent);
    llvm::Type* element = memory_type(kernel_.params[p].type);
    llvm::Value* start = builder_.CreatePtrToInt(params_[p].base, i64);
    llvm::Value* bytes =
        builder_.CreateMul(count, builder_.getInt64(module_.getDataLayout().getTypeAllocSize(element)));
    return std::pair{start, builder_.CreateAdd(start, bytes)};
  };
  for (auto& [p, block] : row_blocks_) {
    llvm::Type* element = memory_type(kernel_.params[p].type);
    const auto element_bytes = static_cast<std::int64_t>(module_.getDataLayout().getTypeAllocSize(element));
    const std::int64_t capacity = kRowBlockBytes / element_bytes;
    block.buffer = entry_alloca(llvm::ArrayType::get(element, static_cast<std::uint64_t>(capacity)),
                                kernel_.params[p].name + ".rows");
    block.buffer->setAlignment(llvm::Align(64));
    block.row_length = builder_.getInt64(1);
    for (std::size_t d = 1; d < params_[p].extents.size(); ++d)
      block.row_length = builder_.CreateMul(block.row_length, params_[p].extents[d]);
    block.usable = builder_.CreateICmpULE(block.row_length, builder_.getInt64(capacity / lanes_));
    // An array passed twice, once to be written, must be read as the scalar
    // loop reads it: from memory, after this point's own writes.
    const auto [start, end] = bounds(p);
    for (std::size_t q = 0; q < kernel_.params.size(); ++q) {
      const ir::Param& other = kernel_.params[q];
      if (!other.is_array() || other.access == ir::Access::In) continue;
      const auto [other_start, other_end] = bounds(static_cast<int>(q));
      llvm::Value* apart =
          builder_.CreateOr(builder_.CreateICmpULE(end, other_start), builder_.CreateICmpULE(other_end, start));
      block.usable = builder_.CreateAnd(block.usable, apart);
    }
    block.usable->setName(kernel_.params[p].name + ".rows.usable");
  }
}

void SimdLowering::fill_row_blocks(llvm::Value* first_row, llvm::Value* count, bool whole) {
  if (row_blocks_.empty()) return;
  auto* i64 = builder_.getInt64Ty();
  for (auto& [p, block] : row_blocks_) {
    llvm::Type* element = memory_type(kernel_.params[p].type);
    auto* fill = llvm::BasicBlock::Create(context_, kernel_.params[p].name + ".rows.fill", function_);
    auto* filled = llvm::BasicBlock::Create(context_, kernel_.params[p].name + ".rows.filled", function_);
    builder_.CreateCondBr(block.usable, fill, filled);
    builder_.SetInsertPoint(fill);
    // A whole group: by tiles of a register's width (at most 16 elements,
    // so that a tile's rows stay in registers), where the lanes split into
    // them; the columns past the last whole tile, and a partial group's
    // rows, element by element.
    const int element_bits = static_cast<int>(module_.getDataLayout().getTypeAllocSize(element)) * 8;
    const int tile = std::min({vector_bits_ / element_bits, 16, lanes_});
    llvm::Value* first_column = builder_.getInt64(0);
    if (whole && tile >= 4 && lanes_ % tile == 0) first_column = fill_row_block_by_tiles(block, p, first_row, tile);
    // Only the active lanes' rows: past the last point there may be none.
    emit_counted_loop(builder_.getInt64(0), count, 1, "row", [&](llvm::Value* lane) {
      llvm::Value* row = builder_.CreateInBoundsGEP(
          element, params_[p].base, builder_.CreateMul(builder_.CreateAdd(first_row, lane), block.row_length));
      emit_counted_loop(first_column, block.row_length, 1, "column", [&](llvm::Value* u) {
        llvm::Value* value = builder_.CreateLoad(element, builder_.CreateInBoundsGEP(element, row, u));
        llvm::Value* at = builder_.CreateAdd(builder_.CreateMul(u, llvm::ConstantInt::get(i64, lanes_)), lane);
        builder_.CreateStore(value, builder_.CreateInBoundsGEP(element, block.buffer, at));
      });
    });
    builder_.CreateBr(filled);
    builder_.SetInsertPoint(filled);
  }
}

llvm::Value* SimdLowering::fill_row_block_by_tiles(const RowBlock& block, int param, llvm::Value* first_row, int tile) {
  llvm::Type* element = memory_type(kernel_.params[param].type);
  auto* type = llvm::FixedVectorType::get(element, static_cast<unsigned>(tile));
  const llvm::Align align = module_.getDataLayout().getABITypeAlign(element);
  llvm::Value* tiled_columns =
      builder_.CreateAnd(block.row_length, builder_.getInt64(-std::int64_t{tile}), "rows.tiled_columns");
  llvm::Value* zero = builder_.getInt64(0);
  emit_counted_loop(zero, tiled_columns, tile, "rows.tile", Bounds::WholeSteps, [&](llvm::Value* column) {
    for (int group = 0; group < lanes_; group += tile) {
      // Row r of the tile: lane group + r's elements column .. column + tile.
      std::vector<llvm::Value*> rows(static_cast<std::size_t>(tile));
      for (int r = 0; r < tile; ++r) {
        llvm::Value* row =
            builder_.CreateMul(builder_.CreateAdd(first_row, builder_.getInt64(group + r)), block.row_length);
        rows[static_cast<std::size_t>(r)] = builder_.CreateAlignedLoad(
            type, builder_.CreateInBoundsGEP(element, params_[param].base, builder_.CreateAdd(row, column)), align);
      }
      // The transpose, in log2(tile) steps: at step `half`, within each
      // square of 2 * half rows and columns, the top-right and bottom-left
      // squares of `half` change places.
      for (int half = tile / 2; half >= 1; half /= 2) {
        std::vector<int> low, high;
        for (int at = 0; at < tile; ++at) {
          const int square = at / (2 * half) * (2 * half), offset = at % (2 * half);
          const bool second = offset >= half;
          const int from = square + offset % half;
          low.push_back(second ? tile + from : from);
          high.push_back(second ? tile + from + half : from + half);
        }
        for (int r = 0; r < tile; ++r) {
          if (r / half % 2 != 0) continue;
          llvm::Value* top = rows[static_cast<std::size_t>(r)];
          llvm::Value* bottom = rows[static_cast<std::size_t>(r + half)];
          rows[static_cast<std::size_t>(r)] = builder_.CreateShuffleVector(top, bottom, low);
          rows[static_cast<std::size_t>(r + half)] = builder_.CreateShuffleVector(top, bottom, high);
        }
      }
      // Now rows[c] holds column column + c of lanes group .. group + tile.
      for (int c = 0; c < tile; ++c) {
        llvm::Value* at = builder_.CreateAdd(
            builder_.CreateMul(builder_.CreateAdd(column, builder_.getInt64(c)), builder_.getInt64(lanes_)),
            builder_.getInt64(group));
        builder_.CreateAlignedStore(rows[static_cast<std::size_t>(c)],
                                    builder_.CreateInBoundsGEP(element, block.buffer, at), align);
      }
    }
  });
  return tiled_columns;
}

llvm::Value* SimdLowering::load_through_row_block(const ir::Load& node) {
  auto found = row_blocks_.find(node.param);
  if (found == row_blocks_.end()) return nullptr;
  const RowBlock& block = found->second;
  if (!is_lane_index(node.indices[0], kernel_.dims - 1)) return nullptr;
  // The element within the row, the same in every lane.
  const LoweredParam& lowered = params_.at(node.param);
  llvm::Value* column = nullptr;
  for (std::size_t d = 1; d < node.indices.size(); ++d) {
    const Shaped index = shaped_of(node.indices[d]);
    if (index.shape != Shape::Uniform) return nullptr;
    llvm::Value* value = builder_.CreateSExtOrTrunc(index.value, builder_.getInt64Ty());
    column = d == 1 ? value : builder_.CreateAdd(builder_.CreateMul(column, lowered.extents[d]), value);
  }
  note_access(Shaped{Shape::Linear, column, builder_.getInt64(1)});
  // Out of its row (a kernel's bug, which the scalar loop would read from
  // the next row) or without a usable block: the gather.
  llvm::Type* element = memory_type(node.type);
  auto* type = llvm::VectorType::get(element, lanes_, false);
  llvm::Value* inside = builder_.CreateAnd(block.usable, builder_.CreateICmpULT(column, block.row_length));
  auto* from_block = llvm::BasicBlock::Create(context_, "rows.load", function_);
  auto* gather = llvm::BasicBlock::Create(context_, "rows.gather", function_);
  auto* done = llvm::BasicBlock::Create(context_, "rows.loaded", function_);
  builder_.CreateCondBr(inside, from_block, gather);
  builder_.SetInsertPoint(from_block);
  llvm::Value* at = builder_.CreateMul(column, builder_.getInt64(lanes_));
  llvm::Value* fast =
      from_memory(builder_.CreateAlignedLoad(type, builder_.CreateInBoundsGEP(element, block.buffer, at),
                                             module_.getDataLayout().getABITypeAlign(element)),
                  node.type);
  builder_.CreateBr(done);
  builder_.SetInsertPoint(gather);
  llvm::Value* slow = vector_of(load_elements(node, element_number(node.param, node.indices)));
  auto* gather_end = builder_.GetInsertBlock();
  builder_.CreateBr(done);
  builder_.SetInsertPoint(done);
  auto* loaded = builder_.CreatePHI(slow->getType(), 2);
  loaded->addIncoming(fast, from_block);
  loaded->addIncoming(slow, gather_end);
  return loaded;
}

// ---- the index space --------------------------------------------------------

void SimdLowering::emit_index_space(const std::function<void()>& body) {
  const int last = kernel_.dims - 1;
  indices_.assign(kernel_.dims, {});
  auto* i64 = builder_.getInt64Ty();
  auto* one = builder_.getInt64(1);
  std::function<void(int)> nest = [&](int dim) {
    if (dim < last) {
      std::string name = "i";
      name += std::to_string(dim);
      emit_counted_loop(ranges_[dim].first, ranges_[dim].second, 1, name, [&](llvm::Value* i) {
        indices_[dim] = uniform(i);
        nest(dim + 1);
      });
      return;
    }
    // Whole vectors of points, then the rest under a mask.
    auto [lo, hi] = ranges_[last];
    llvm::Value* count = builder_.CreateBinaryIntrinsic(llvm::Intrinsic::smax, builder_.CreateSub(hi, lo),
                                                        llvm::ConstantInt::get(i64, 0), nullptr, "points");
    llvm::Value* whole = builder_.CreateAnd(count, llvm::ConstantInt::get(i64, -std::int64_t{lanes_}));
    llvm::Value* whole_end = builder_.CreateAdd(lo, whole, "whole_end");
    auto whole_vector = [&](llvm::Value* i) {
      indices_[last] = linear(i, one);
      mask_ = nullptr;
      fill_row_blocks(i, llvm::ConstantInt::get(i64, lanes_), true);
      whole_vector_ = true;
      body();
      whole_vector_ = false;
    };
    // A body with such conditions is lowered twice: not one with a loop
    // (whose work outweighs the tests) or of more than 256 operations.
    EdgeConditions edges(last);
    const int operations = operations_without_loops(kernel_.body);
    if (operations >= 0 && operations <= 256) edges.walk(kernel_.body);
    if (!edges.bounds.empty())
      emit_whole_vectors_around_interior(lo, whole_end, edges.bounds, edges.conditions, whole_vector);
    else
      emit_counted_loop(lo, whole_end, lanes_, "v" + std::to_string(last), Bounds::WholeSteps, whole_vector, true);
    llvm::Value* rest = builder_.CreateSub(count, whole, "rest");
    auto* tail = llvm::BasicBlock::Create(context_, "tail", function_);
    auto* done = llvm::BasicBlock::Create(context_, "tail.done", function_);
    builder_.CreateCondBr(builder_.CreateICmpSGT(rest, llvm::ConstantInt::get(i64, 0)), tail, done);
    builder_.SetInsertPoint(tail);
    mask_ = builder_.CreateICmpSLT(lane_numbers(i64), splat(rest), "tail.lanes");
    indices_[last] = linear(whole_end, one);
    fill_row_blocks(whole_end, rest, false);
    body();
    mask_ = nullptr;
    builder_.CreateBr(done);
    builder_.SetInsertPoint(done);
  };
  nest(0);
}

void SimdLowering::emit_whole_vectors_around_interior(llvm::Value* lo, llvm::Value* whole_end,
                                                      const std::vector<EdgeBound>& bounds,
                                                      const std::vector<const ir::ExprNode*>& conditions,
                                                      const std::function<void(llvm::Value*)>& whole_vector) {
  auto* i64 = builder_.getInt64Ty();
  auto constant = [&](std::int64_t v) { return llvm::ConstantInt::get(i64, v, true); };
  auto saturating = [&](llvm::Intrinsic::ID id, llvm::Value* a, std::int64_t b) {
    return builder_.CreateBinaryIntrinsic(id, a, constant(b));
  };
  // The interior: the vectors whose first lane starts in [first, last) and
  // in which every bound holds in every lane. A bound on index + c holds in
  // lanes i .. i + L - 1 when, for >, i + c > u; for >=, i + c >= u; for <,
  // i + L - 1 + c < u; for <=, i + L - 1 + c <= u (saturating: a bound out
  // of reach leaves the interior empty or whole, never wrong).
  llvm::Value* first = lo;
  llvm::Value* last = whole_end;
  const std::int64_t reach = lanes_ - 1;
  for (const EdgeBound& b : bounds) {
    llvm::Value* u = shaped_of(b.bound).value;
    llvm::Value* shifted = saturating(llvm::Intrinsic::ssub_sat, u, b.offset);  // u - c
    switch (b.op) {
      case ir::CompareOp::Gt:
        first = builder_.CreateBinaryIntrinsic(llvm::Intrinsic::smax, first,
                                               saturating(llvm::Intrinsic::sadd_sat, shifted, 1));
        break;
      case ir::CompareOp::Ge: first = builder_.CreateBinaryIntrinsic(llvm::Intrinsic::smax, first, shifted); break;
      case ir::CompareOp::Lt:
        last = builder_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, last,
                                              saturating(llvm::Intrinsic::ssub_sat, shifted, reach));
        break;
      case ir::CompareOp::Le:
        last = builder_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, last,
                                              saturating(llvm::Intrinsic::ssub_sat, shifted, reach - 1));
        break;
      default: break;
    }
  }
  // On whole vectors from lo: first rounded up, last (exclusive) rounded up,
  // both within [lo, whole_end]. Indices this far from the ends of int64
  // keep i + c + L from wrapping (|c| < 2^31); beyond, no interior.
  auto on_vectors = [&](llvm::Value* at) {
    llvm::Value* clamped = builder_.CreateBinaryIntrinsic(
        llvm::Intrinsic::smin, builder_.CreateBinaryIntrinsic(llvm::Intrinsic::smax, at, lo), whole_end);
    llvm::Value* offset = builder_.CreateSub(clamped, lo);
    llvm::Value* up = builder_.CreateAnd(builder_.CreateAdd(offset, constant(lanes_ - 1)), constant(-lanes_));
    return builder_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, builder_.CreateAdd(lo, up), whole_end);
  };
  llvm::Value* interior_first = on_vectors(first);
  llvm::Value* interior_end = builder_.CreateBinaryIntrinsic(llvm::Intrinsic::smax, on_vectors(last), interior_first);
  constexpr std::int64_t kFar = std::int64_t{1} << 62;
  llvm::Value* in_reach = builder_.CreateAnd(builder_.CreateICmpSGE(lo, constant(-kFar)),
                                             builder_.CreateICmpSLE(whole_end, constant(kFar)));
  llvm::Value* has_interior = builder_.CreateAnd(in_reach, builder_.CreateICmpSLT(interior_first, interior_end));
  // Where the loop over the edges' vectors turns to the interior's: a start
  // it never meets when there is none.
  llvm::Value* turn = builder_.CreateSelect(has_interior, interior_first, whole_end, "interior.first");

  // for (i = lo; i < whole_end;) { if (i == turn) { the interior; i = its end; } else { a vector; i += L; } }
  auto* before = builder_.GetInsertBlock();
  auto* header = llvm::BasicBlock::Create(context_, "edges.loop", function_);
  auto* edge = llvm::BasicBlock::Create(context_, "edges.vector", function_);
  auto* interior = llvm::BasicBlock::Create(context_, "interior", function_);
  auto* done = llvm::BasicBlock::Create(context_, "edges.done", function_);
  builder_.CreateCondBr(builder_.CreateICmpSLT(lo, whole_end), header, done);

  builder_.SetInsertPoint(header);
  auto* i = builder_.CreatePHI(i64, 3, "edges.i");
  i->addIncoming(lo, before);
  builder_.CreateCondBr(builder_.CreateICmpEQ(i, turn), interior, edge);

  builder_.SetInsertPoint(edge);
  whole_vector(i);
  llvm::Value* next = builder_.CreateAdd(i, constant(lanes_), "edges.next", false, true);
  i->addIncoming(next, builder_.GetInsertBlock());
  builder_.CreateCondBr(builder_.CreateICmpSLT(next, whole_end), header, done);

  // The interior's body, lowered with its bounds known to hold. It counts
  // for nothing in refusal(): the kernel's shape is the edges' body's.
  builder_.SetInsertPoint(interior);
  const int deepest = deepest_, scattered = scattered_, arithmetic = lane_arithmetic();
  for (const ir::ExprNode* condition : conditions) known_true_.insert(condition);
  emit_counted_loop(interior_first, interior_end, lanes_, "interior.v", Bounds::WholeSteps, whole_vector, true);
  known_true_.clear();
  interior_arithmetic_ += lane_arithmetic() - arithmetic;
  deepest_ = deepest;
  scattered_ = scattered;
  i->addIncoming(interior_end, builder_.GetInsertBlock());
  builder_.CreateCondBr(builder_.CreateICmpSLT(interior_end, whole_end), header, done);

  builder_.SetInsertPoint(done);
}

void SimdLowering::begin_reductions() {
  LlvmLowering::begin_reductions();
  lane_accumulators_.assign(kernel_.params.size(), nullptr);
  for (std::size_t p = 0; p < kernel_.params.size(); ++p) {
    const ir::Param& param = kernel_.params[p];
    if (!param.is_reduction()) continue;
    llvm::Value* identity = value_of(ir::identity_of(param.reduce, param.type));
    lane_accumulators_[p] =
        entry_alloca(llvm::VectorType::get(identity->getType(), lanes_, false), param.name + ".lanes");
    builder_.CreateStore(splat(identity), lane_accumulators_[p]);
  }
}

void SimdLowering::finish_reductions() {
  // The lanes are combined into the scalar accumulator, which the scalar
  // lowering then publishes.
  for (std::size_t p = 0; p < kernel_.params.size(); ++p) {
    llvm::AllocaInst* lanes = lane_accumulators_[p];
    if (!lanes) continue;
    const ir::Param& param = kernel_.params[p];
    llvm::AllocaInst* accumulator = params_[p].accumulator;
    llvm::Value* vector = builder_.CreateLoad(lanes->getAllocatedType(), lanes);
    llvm::Value* total = builder_.CreateLoad(accumulator->getAllocatedType(), accumulator);
    if (param.reduce == ir::ReduceOp::Sum && ir::is_float(param.type)) {
      // In any order, as every float sum reduction may be combined.
      auto* sum = builder_.CreateFAddReduce(total, vector);
      sum->setHasAllowReassoc(true);
      total = sum;
    } else {
      for (int l = 0; l < lanes_; ++l)
        total = combine(param.reduce, param.type, total, builder_.CreateExtractElement(vector, l));
    }
    builder_.CreateStore(total, accumulator);
  }
  LlvmLowering::finish_reductions();
}

// ---- shapes -----------------------------------------------------------------

SimdLowering::Shaped SimdLowering::shaped_of(const ir::Expr& expr) {
  if (!expr) fail("an expression is missing");
  shaped_ = {};
  walk(expr);
  if (!shaped_.value) fail("an expression produced no value");
  return shaped_;
}

SimdLowering::Shaped SimdLowering::linear(llvm::Value* base, llvm::Value* stride) {
  if (auto* constant = llvm::dyn_cast<llvm::ConstantInt>(stride); constant && constant->isZero()) return uniform(base);
  return {Shape::Linear, base, stride};
}

SimdLowering::Shaped SimdLowering::guarded(llvm::Value* base, llvm::Value* stride, llvm::Value* guard,
                                           llvm::Value* exact, const Shaped* a, const Shaped* b) {
  for (const Shaped* operand : {a, b})
    if (operand && operand->guard) guard = guard ? builder_.CreateAnd(guard, operand->guard) : operand->guard;
  if (!guard) return linear(base, stride);
  // A zero step would make it uniform under the guard only: nothing gained.
  if (auto* constant = llvm::dyn_cast<llvm::ConstantInt>(stride); constant && constant->isZero()) return varying(exact);
  return {Shape::Linear, base, stride, guard, exact};
}

std::optional<SimdLowering::Shaped> SimdLowering::clamped(ir::BinaryOp op, const Shaped& a, const Shaped& b,
                                                          llvm::Value* exact) {
  if (op != ir::BinaryOp::Min && op != ir::BinaryOp::Max) return std::nullopt;
  const bool a_linear = a.shape == Shape::Linear && b.shape == Shape::Uniform;
  const bool b_linear = b.shape == Shape::Linear && a.shape == Shape::Uniform;
  if (!a_linear && !b_linear) return std::nullopt;
  const Shaped& line = a_linear ? a : b;
  llvm::Value* bound = a_linear ? b.value : a.value;
  auto* step = llvm::dyn_cast<llvm::ConstantInt>(line.stride);
  if (!step || !step->getValue().isStrictlyPositive()) return std::nullopt;
  // The lanes rise from the first to the last: min keeps them all when the
  // last is at most the bound, max when the first is at least the bound.
  llvm::Value* span = builder_.CreateBinaryIntrinsic(llvm::Intrinsic::smul_with_overflow, line.stride,
                                                     llvm::ConstantInt::get(line.value->getType(), lanes_ - 1));
  llvm::Value* last = builder_.CreateBinaryIntrinsic(llvm::Intrinsic::sadd_with_overflow, line.value,
                                                     builder_.CreateExtractValue(span, 0));
  llvm::Value* kept = op == ir::BinaryOp::Min ? builder_.CreateICmpSLE(builder_.CreateExtractValue(last, 0), bound)
                                              : builder_.CreateICmpSGE(line.value, bound);
  llvm::Value* wraps = builder_.CreateOr(builder_.CreateExtractValue(span, 1), builder_.CreateExtractValue(last, 1));
  llvm::Value* guard = builder_.CreateAnd(kept, builder_.CreateNot(wraps));
  return guarded(line.value, line.stride, guard, exact, &line);
}

llvm::Value* SimdLowering::splat(llvm::Value* scalar) { return builder_.CreateVectorSplat(lanes_, scalar); }

llvm::Constant* SimdLowering::lane_numbers(llvm::Type* type) const {
  std::vector<llvm::Constant*> numbers;
  for (int l = 0; l < lanes_; ++l) numbers.push_back(llvm::ConstantInt::get(type, l));
  return llvm::ConstantVector::get(numbers);
}

llvm::Value* SimdLowering::vector_of(const Shaped& value) {
  if (value.guard) return value.exact;
  switch (value.shape) {
    case Shape::Varying: return value.value;
    case Shape::Uniform: return splat(value.value);
    case Shape::Linear:
      // Wrapping arithmetic, as the scalar code's would be for each point.
      return builder_.CreateAdd(splat(value.value),
                                builder_.CreateMul(lane_numbers(value.value->getType()), splat(value.stride)));
  }
  fail("unknown shape");
}

llvm::Value* SimdLowering::active_lanes() { return mask_ ? mask_ : splat(builder_.getTrue()); }

llvm::Value* SimdLowering::any_lane(llvm::Value* mask) {
  return builder_.CreateUnaryIntrinsic(llvm::Intrinsic::vector_reduce_or, mask);
}

SimdLowering::Shaped SimdLowering::add(const Shaped& a, const Shaped& b) {
  if (a.shape == Shape::Varying || b.shape == Shape::Varying)
    return varying(builder_.CreateAdd(vector_of(a), vector_of(b)));
  llvm::Value* value = builder_.CreateAdd(a.value, b.value);
  if (a.shape == Shape::Uniform && b.shape == Shape::Uniform) return uniform(value);
  llvm::Value* stride = a.shape == Shape::Uniform   ? b.stride
                        : b.shape == Shape::Uniform ? a.stride
                                                    : builder_.CreateAdd(a.stride, b.stride);
  if (!a.guard && !b.guard) return linear(value, stride);
  return guarded(value, stride, nullptr, builder_.CreateAdd(vector_of(a), vector_of(b)), &a, &b);
}

SimdLowering::Shaped SimdLowering::multiply(const Shaped& a, const Shaped& b) {
  if (a.shape == Shape::Uniform && b.shape == Shape::Uniform) return uniform(builder_.CreateMul(a.value, b.value));
  if (a.shape == Shape::Linear && b.shape == Shape::Uniform) {
    llvm::Value* base = builder_.CreateMul(a.value, b.value);
    llvm::Value* stride = builder_.CreateMul(a.stride, b.value);
    if (!a.guard) return linear(base, stride);
    return guarded(base, stride, nullptr, builder_.CreateMul(a.exact, splat(b.value)), &a);
  }
  if (a.shape == Shape::Uniform && b.shape == Shape::Linear) return multiply(b, a);
  return varying(builder_.CreateMul(vector_of(a), vector_of(b)));
}

SimdLowering::Shaped SimdLowering::negate(const Shaped& a) {
  switch (a.shape) {
    case Shape::Uniform: return uniform(builder_.CreateNeg(a.value));
    case Shape::Linear:
      if (a.guard)
        return guarded(builder_.CreateNeg(a.value), builder_.CreateNeg(a.stride), nullptr, builder_.CreateNeg(a.exact),
                       &a);
      return linear(builder_.CreateNeg(a.value), builder_.CreateNeg(a.stride));
    case Shape::Varying: return varying(builder_.CreateNeg(a.value));
  }
  fail("unknown shape");
}

bool SimdLowering::is_consecutive(const Shaped& number) {
  if (number.shape != Shape::Linear) return false;
  auto* stride = llvm::dyn_cast<llvm::ConstantInt>(number.stride);
  return stride && stride->isOne();
}

bool SimdLowering::is_scattered(const Shaped& number) {
  return number.shape == Shape::Varying || (number.shape == Shape::Linear && !is_consecutive(number));
}

SimdLowering::Shaped SimdLowering::element_number(int param, const std::vector<ir::Expr>& indices) {
  const ir::Param& p = kernel_.params.at(param);
  const LoweredParam& lowered = params_.at(param);
  if (!p.is_array() || indices.size() != lowered.extents.size())
    fail("parameter '" + p.name + "' indexed as an array of rank " + std::to_string(indices.size()));
  Shaped number;
  for (std::size_t d = 0; d < indices.size(); ++d) {
    Shaped index = shaped_of(indices[d]);
    if (index.value->getType()->getScalarSizeInBits() != 64) {
      // Widening a linear i32 could wrap between lanes: only uniform values stay as they are.
      if (index.shape == Shape::Uniform)
        index = uniform(builder_.CreateSExt(index.value, builder_.getInt64Ty()));
      else
        index =
            varying(builder_.CreateSExt(vector_of(index), llvm::VectorType::get(builder_.getInt64Ty(), lanes_, false)));
    }
    number = d == 0 ? index : add(multiply(number, uniform(lowered.extents[d])), index);
  }
  return number;
}

llvm::Value* SimdLowering::element_pointer(int param, const Shaped& number) {
  llvm::Type* element = memory_type(kernel_.params.at(param).type);
  llvm::Value* base = params_.at(param).base;
  // In bounds: a kernel never addresses outside its arrays (checked mode says so when it would).
  return builder_.CreateInBoundsGEP(element, base, is_scattered(number) ? vector_of(number) : number.value);
}

llvm::Value* SimdLowering::load_guarded(llvm::Type* type, int param, const Shaped& number, llvm::Align align) {
  llvm::Type* element = memory_type(kernel_.params.at(param).type);
  llvm::Value* base = params_.at(param).base;
  auto* whole = llvm::BasicBlock::Create(context_, "clamped.vector", function_);
  auto* gather = llvm::BasicBlock::Create(context_, "clamped.gather", function_);
  auto* done = llvm::BasicBlock::Create(context_, "clamped.done", function_);
  builder_.CreateCondBr(number.guard, whole, gather);
  builder_.SetInsertPoint(whole);
  llvm::Value* first = builder_.CreateInBoundsGEP(element, base, number.value);
  llvm::Value* loaded = nullptr;
  if (mask_)
    loaded = builder_.CreateMaskedLoad(type, first, align, mask_, llvm::PoisonValue::get(type));
  else
    loaded = builder_.CreateAlignedLoad(type, first, align);
  llvm::BasicBlock* whole_end = builder_.GetInsertBlock();
  builder_.CreateBr(done);
  builder_.SetInsertPoint(gather);
  llvm::Value* gathered = builder_.CreateMaskedGather(type, builder_.CreateInBoundsGEP(element, base, number.exact),
                                                      align, active_lanes(), llvm::PoisonValue::get(type));
  llvm::BasicBlock* gather_end = builder_.GetInsertBlock();
  builder_.CreateBr(done);
  builder_.SetInsertPoint(done);
  auto* value = builder_.CreatePHI(type, 2);
  value->addIncoming(loaded, whole_end);
  value->addIncoming(gathered, gather_end);
  return value;
}

llvm::Value* SimdLowering::element_pointers(int param, const Shaped& number) {
  llvm::Value* pointer = element_pointer(param, number);
  if (is_scattered(number)) return pointer;
  if (number.shape == Shape::Uniform) return splat(pointer);
  return builder_.CreateInBoundsGEP(memory_type(kernel_.params.at(param).type), pointer,
                                    lane_numbers(builder_.getInt64Ty()));
}

void SimdLowering::note_access(const Shaped& number, bool store) {
  int depth = varying_depth(number.value);
  if (number.shape == Shape::Linear) depth = std::max(depth, varying_depth(number.stride));
  if (depth > deepest_) {
    deepest_ = depth;
    scattered_ = 0;
  }
  // A strided store in a point body without loops (into a column of a
  // row-major array: a transpose's writes) costs the scalar loop no less
  // than the lanes (a transpose of 4096x4096 floats: 68-74 ms in the scalar
  // loop, 45-47 ms in lanes, 55-56 ms as an OpenMP loop); a strided load,
  // a store in a point's loop or one that varies freely counts against the
  // lanes (backprop's weight updates: 4.5x slower in lanes).
  const bool strided_store = store && depth == 0 && number.shape == Shape::Linear;
  if (depth == deepest_ && is_scattered(number) && !strided_store) ++scattered_;
}

int SimdLowering::varying_depth(llvm::Value* value) const {
  std::unordered_map<const llvm::Instruction*, int> seen;
  return varying_depth(value, seen, 64);
}

int SimdLowering::varying_depth(llvm::Value* value, std::unordered_map<const llvm::Instruction*, int>& seen,
                                int budget) const {
  auto* instruction = llvm::dyn_cast<llvm::Instruction>(value);
  if (!instruction) return 0;  // a constant or an argument
  if (auto known = seen.find(instruction); known != seen.end()) return known->second;
  auto numbered = block_numbers_.find(instruction->getParent());
  if (numbered == block_numbers_.end()) {  // a block made since the last count
    std::size_t n = 0;
    for (const llvm::BasicBlock& b : *function_) block_numbers_[&b] = n++;
    numbered = block_numbers_.find(instruction->getParent());
  }
  int depth = 0;  // of the innermost loop that the instruction is in
  while (depth < static_cast<int>(loop_first_blocks_.size()) && loop_first_blocks_[depth] <= numbered->second) ++depth;
  // Arithmetic on values from outside a loop is the same in every iteration
  // (past `budget` steps back, an instruction counts where it is).
  if (depth > 0 && budget > 0 && !instruction->mayReadOrWriteMemory() && !llvm::isa<llvm::PHINode>(instruction)) {
    int deepest = 0;
    for (llvm::Value* operand : instruction->operands())
      deepest = std::max(deepest, varying_depth(operand, seen, budget - 1));
    depth = deepest;
  }
  seen[instruction] = depth;
  return depth;
}

int SimdLowering::lane_arithmetic() const {
  int count = 0;
  for (const llvm::BasicBlock& block : *function_)
    for (const llvm::Instruction& instruction : block) {
      if (!instruction.getType()->isVectorTy()) continue;
      const auto* call = llvm::dyn_cast<llvm::IntrinsicInst>(&instruction);
      const bool math = call && !call->mayReadOrWriteMemory();
      count += instruction.isBinaryOp() || instruction.isUnaryOp() || llvm::isa<llvm::CmpInst>(instruction) ||
               llvm::isa<llvm::SelectInst>(instruction) ||
               (llvm::isa<llvm::CastInst>(instruction) && !llvm::isa<llvm::BitCastInst>(instruction)) || math;
    }
  return count;
}

std::string SimdLowering::refusal() const {
  if (scattered_ == 0) return "";
  const int arithmetic = lane_arithmetic() - interior_arithmetic_;
  if (deepest_ == 0 && arithmetic >= kArithmeticPerGather * scattered_) return "";
  return "scalar point loop: " + std::to_string(scattered_) + " gathers or scatters " +
         (deepest_ > 0 ? "in the innermost loop of a point"
                       : "in a point beside " + std::to_string(arithmetic) + " operations on lanes") +
         " would cost more than the scalar loop";
}

void SimdLowering::under_mask(llvm::Value* mask, const std::function<void()>& body) {
  auto* run = llvm::BasicBlock::Create(context_, "lanes", function_);
  auto* after = llvm::BasicBlock::Create(context_, "lanes.done", function_);
  builder_.CreateCondBr(any_lane(mask), run, after);
  builder_.SetInsertPoint(run);
  llvm::Value* outer = mask_;
  mask_ = mask;
  body();
  mask_ = outer;
  builder_.CreateBr(after);
  builder_.SetInsertPoint(after);
}

// ---- expressions ------------------------------------------------------------

void SimdLowering::visit(const ir::Const& node) {
  LlvmLowering::visit(node);
  shaped_ = uniform(value_);
}

void SimdLowering::visit(const ir::Index& node) {
  if (node.dim < 0 || node.dim >= static_cast<int>(indices_.size()) || !indices_[node.dim].value)
    fail("index(" + std::to_string(node.dim) + ") in a kernel of " + std::to_string(kernel_.dims) + " dimensions");
  shaped_ = indices_[node.dim];
}

void SimdLowering::visit(const ir::ParamRef& node) {
  LlvmLowering::visit(node);
  shaped_ = uniform(value_);
}

void SimdLowering::visit(const ir::Extent& node) {
  LlvmLowering::visit(node);
  shaped_ = uniform(value_);
}

void SimdLowering::visit(const ir::VarRef& node) {
  if (auto bound = bound_.find(node.name); bound != bound_.end()) {
    shaped_ = bound->second;
    return;
  }
  auto slot = slots_.find(node.name);
  if (slot == slots_.end()) fail("variable '" + node.name + "' read before its declaration");
  shaped_ = varying(builder_.CreateLoad(slot->second->getAllocatedType(), slot->second, node.name));
}

void SimdLowering::visit(const ir::Load& node) {
  if (llvm::Value* through_block = load_through_row_block(node)) {
    shaped_ = varying(through_block);
    return;
  }
  const Shaped number = element_number(node.param, node.indices);
  note_access(number);
  shaped_ = load_elements(node, number);
}

SimdLowering::Shaped SimdLowering::load_elements(const ir::Load& node, const Shaped& guarded_number) {
  llvm::Type* element = memory_type(node.type);
  const auto align = module_.getDataLayout().getABITypeAlign(element);
  if (guarded_number.guard && is_consecutive(guarded_number))
    return varying(from_memory(
        load_guarded(llvm::VectorType::get(element, lanes_, false), node.param, guarded_number, align), node.type));
  const Shaped number = unguarded(guarded_number);
  llvm::Value* pointer = element_pointer(node.param, number);
  if (number.shape == Shape::Uniform) {
    // Some lane is active wherever code runs, and its point loads this element.
    return uniform(from_memory(builder_.CreateLoad(element, pointer), node.type));
  }
  auto* type = llvm::VectorType::get(element, lanes_, false);
  llvm::Value* loaded = nullptr;
  if (is_consecutive(number)) {
    if (mask_)
      loaded = builder_.CreateMaskedLoad(type, pointer, align, mask_, llvm::PoisonValue::get(type));
    else
      loaded = builder_.CreateAlignedLoad(type, pointer, align);
  } else {
    loaded = builder_.CreateMaskedGather(type, pointer, align, active_lanes(), llvm::PoisonValue::get(type));
  }
  return varying(from_memory(loaded, node.type));
}

void SimdLowering::visit(const ir::Unary& node) {
  const Shaped x = shaped_of(node.operand);
  if (node.op == ir::UnaryOp::Neg && !ir::is_float(node.type)) {
    shaped_ = negate(x);
    return;
  }
  llvm::Value* operand = x.shape == Shape::Uniform ? x.value : vector_of(x);
  llvm::Value* result = node.op == ir::UnaryOp::Not ? builder_.CreateNot(operand)
                        : ir::is_float(node.type)   ? builder_.CreateFNeg(operand)
                                                    : builder_.CreateNeg(operand);
  shaped_ = x.shape == Shape::Uniform ? uniform(result) : varying(result);
}

void SimdLowering::visit(const ir::Binary& node) {
  const Shaped a = shaped_of(node.lhs);
  const Shaped b = shaped_of(node.rhs);
  if (ir::is_int(node.type)) {
    switch (node.op) {
      case ir::BinaryOp::Add: shaped_ = add(a, b); return;
      case ir::BinaryOp::Sub: shaped_ = add(a, negate(b)); return;
      case ir::BinaryOp::Mul: shaped_ = multiply(a, b); return;
      default: break;
    }
  }
  if (a.shape == Shape::Uniform && b.shape == Shape::Uniform) {
    shaped_ = uniform(lower_binary(node.op, node.type, a.value, b.value));
    return;
  }
  llvm::Value* exact = lower_binary(node.op, node.type, vector_of(a), vector_of(b));
  if (node.type == ScalarType::I32 || node.type == ScalarType::I64)
    if (auto clamp = clamped(node.op, a, b, exact)) {
      shaped_ = *clamp;
      return;
    }
  shaped_ = varying(exact);
}

void SimdLowering::visit(const ir::Compare& node) {
  const Shaped a = shaped_of(node.lhs);
  const Shaped b = shaped_of(node.rhs);
  if (a.shape == Shape::Uniform && b.shape == Shape::Uniform) {
    shaped_ = uniform(lower_compare(node.op, node.lhs->type, a.value, b.value));
    return;
  }
  shaped_ = varying(lower_compare(node.op, node.lhs->type, vector_of(a), vector_of(b)));
}

void SimdLowering::visit(const ir::Cast& node) {
  const Shaped x = shaped_of(node.operand);
  const ScalarType from = node.operand->type;
  if (x.shape == Shape::Uniform) {
    shaped_ = uniform(lower_cast(x.value, from, node.type));
  } else if (x.shape == Shape::Linear && !x.guard && ir::is_int(node.type) &&
             ir::size_of(node.type) <= ir::size_of(from)) {
    // Narrowing (or none) keeps lanes linear: truncation respects wrapping sums and products.
    shaped_ = linear(lower_cast(x.value, from, node.type), lower_cast(x.stride, from, node.type));
  } else if (!int64_lanes_native_ && from == ScalarType::I64 && node.type == ScalarType::F64) {
    shaped_ = varying(int64_lanes_to_double(vector_of(x)));
  } else {
    shaped_ = varying(lower_cast(vector_of(x), from, node.type));
  }
}

llvm::Value* SimdLowering::int64_lanes_to_double(llvm::Value* lanes) {
  auto& b = builder_;
  llvm::Type* ints = lanes->getType();
  llvm::Type* doubles = llvm::VectorType::get(b.getDoubleTy(), lanes_, false);
  auto bits = [&](std::uint64_t v) { return llvm::ConstantInt::get(ints, v); };
  auto number = [&](double v) { return llvm::ConstantFP::get(doubles, v); };
  // hi in [-2^31, 2^31): 1.5 * 2^52 + hi is exact in a double's significand.
  llvm::Value* hi = b.CreateAShr(lanes, bits(32));
  llvm::Value* high =
      b.CreateFSub(b.CreateBitCast(b.CreateAdd(hi, bits(0x4338000000000000ull)), doubles), number(0x1.8p52));
  // lo in [0, 2^32): 2^52 + lo, the same way.
  llvm::Value* lo = b.CreateAnd(lanes, bits(0xFFFFFFFFull));
  llvm::Value* low =
      b.CreateFSub(b.CreateBitCast(b.CreateOr(lo, bits(0x4330000000000000ull)), doubles), number(0x1p52));
  // Both parts are exact; the sum rounds once, as a conversion does.
  return b.CreateFAdd(b.CreateFMul(high, number(0x1p32)), low);
}

void SimdLowering::visit(const ir::Call& node) {
  if (static_cast<int>(node.args.size()) != ir::arity_of(node.fn))
    fail("math function " + std::string(ir::name_of(node.fn)) + " with " + std::to_string(node.args.size()) +
         " arguments");
  std::vector<Shaped> shaped;
  bool all_uniform = true;
  for (const auto& arg : node.args) {
    shaped.push_back(shaped_of(arg));
    all_uniform = all_uniform && shaped.back().shape == Shape::Uniform;
  }
  std::vector<llvm::Value*> args;
  for (const auto& arg : shaped) args.push_back(all_uniform ? arg.value : vector_of(arg));
  if (all_uniform) {
    shaped_ = uniform(emit_math(node.fn, node.type, args));
    return;
  }
  if (node.fn == ir::MathFn::Exp) {
    // In every lane, active or not: it has no side effects and costs a few
    // vector instructions, where a library call costs as much per lane.
    shaped_ = varying(emit_vector_exp(builder_, args[0]));
    return;
  }
  if (node.type == ScalarType::F32 && node.fn == ir::MathFn::Log) {
    shaped_ = varying(emit_vector_log(builder_, args[0]));
    return;
  }
  if (node.type == ScalarType::F32 && (node.fn == ir::MathFn::Sin || node.fn == ir::MathFn::Cos)) {
    llvm::Value* lanes = node.fn == ir::MathFn::Sin ? emit_vector_sin(builder_, args[0], fused_multiply_add_)
                                                    : emit_vector_cos(builder_, args[0], fused_multiply_add_);
    // Lanes too large for the vector code's reduction (rare) go to the C
    // library, one call per such lane, and only where one is active.
    llvm::Value* unreduced = vector_trig_unreduced(builder_, args[0]);
    llvm::Value* const outer_mask = mask_;
    mask_ = outer_mask ? builder_.CreateAnd(outer_mask, unreduced) : unreduced;
    llvm::Value* library = call_per_active_lane(node.fn, node.type, args);
    mask_ = outer_mask;
    shaped_ = varying(builder_.CreateSelect(unreduced, library, lanes));
    return;
  }
  const bool library_call = node.fn == ir::MathFn::Log || node.fn == ir::MathFn::Sin || node.fn == ir::MathFn::Cos ||
                            node.fn == ir::MathFn::Pow;
  if (!mask_ && node.type == ScalarType::F64 && (node.fn == ir::MathFn::Sin || node.fn == ir::MathFn::Cos)) {
    // Canopy's scalar functions (host_math.hpp), called for every lane.
    mask_ = llvm::ConstantInt::getTrue(llvm::VectorType::get(builder_.getInt1Ty(), lanes_, false));
    shaped_ = varying(call_per_active_lane(node.fn, node.type, args));
    mask_ = nullptr;
    return;
  }
  if (!mask_ || !library_call) {
    shaped_ = varying(emit_math(node.fn, node.type, args));
    return;
  }
  shaped_ = varying(call_per_active_lane(node.fn, node.type, args));
}

llvm::Value* SimdLowering::call_per_active_lane(ir::MathFn fn, ScalarType type, const std::vector<llvm::Value*>& args) {
  // Arguments and results go through stack arrays, so that each lane is a
  // scalar load and store rather than a whole vector's insert.
  llvm::Type* element = value_type(type);
  auto* vector_type = llvm::VectorType::get(element, lanes_, false);
  std::vector<llvm::AllocaInst*> arg_slots;
  for (std::size_t a = 0; a < args.size(); ++a) {
    arg_slots.push_back(entry_alloca(args[a]->getType(), "arg.lanes"));
    builder_.CreateStore(args[a], arg_slots.back());
  }
  auto* result = entry_alloca(vector_type, std::string(ir::name_of(fn)) + ".lanes");
  auto* bits_type = builder_.getIntNTy(static_cast<unsigned>(lanes_));
  llvm::Value* first_bits = builder_.CreateBitCast(mask_, bits_type);
  auto* before = builder_.GetInsertBlock();
  auto* loop = llvm::BasicBlock::Create(context_, "call.lane", function_);
  auto* done = llvm::BasicBlock::Create(context_, "call.done", function_);
  builder_.CreateCondBr(builder_.CreateICmpNE(first_bits, llvm::ConstantInt::get(bits_type, 0)), loop, done);
  builder_.SetInsertPoint(loop);
  auto* bits = builder_.CreatePHI(bits_type, 2, "lanes.left");
  bits->addIncoming(first_bits, before);
  llvm::Value* lane = builder_.CreateZExt(
      builder_.CreateBinaryIntrinsic(llvm::Intrinsic::cttz, bits, builder_.getTrue()), builder_.getInt64Ty());
  std::vector<llvm::Value*> lane_args;
  for (auto* slot : arg_slots)
    lane_args.push_back(builder_.CreateLoad(element, builder_.CreateInBoundsGEP(element, slot, lane)));
  builder_.CreateStore(emit_math(fn, type, lane_args), builder_.CreateInBoundsGEP(element, result, lane));
  llvm::Value* rest = builder_.CreateAnd(bits, builder_.CreateSub(bits, llvm::ConstantInt::get(bits_type, 1)));
  bits->addIncoming(rest, builder_.GetInsertBlock());
  builder_.CreateCondBr(builder_.CreateICmpNE(rest, llvm::ConstantInt::get(bits_type, 0)), loop, done);
  builder_.SetInsertPoint(done);
  return builder_.CreateLoad(vector_type, result);
}

void SimdLowering::visit(const ir::Select& node) {
  if (known_true_.count(node.cond.get())) {  // in the interior: every lane takes the first
    shaped_ = shaped_of(node.if_true);
    return;
  }
  const Shaped cond = shaped_of(node.cond);
  const Shaped if_true = shaped_of(node.if_true);
  const Shaped if_false = shaped_of(node.if_false);
  if (cond.shape == Shape::Uniform && if_true.shape == Shape::Uniform && if_false.shape == Shape::Uniform) {
    shaped_ = uniform(builder_.CreateSelect(cond.value, if_true.value, if_false.value));
    return;
  }
  // A uniform condition may pick between vectors as a whole.
  llvm::Value* c = cond.shape == Shape::Uniform ? cond.value : vector_of(cond);
  shaped_ = varying(builder_.CreateSelect(c, vector_of(if_true), vector_of(if_false)));
}

// ---- statements -------------------------------------------------------------

void SimdLowering::visit(const ir::Decl& node) {
  const Shaped init = shaped_of(node.init);
  if (!assigned_.count(node.name)) {
    bound_[node.name] = init;  // never assigned: the value itself, of whatever shape
    return;
  }
  auto [slot, inserted] = slots_.try_emplace(node.name, nullptr);
  if (inserted)
    slot->second = entry_alloca(llvm::VectorType::get(value_type(node.type), lanes_, false), node.name + ".lanes");
  // Inactive lanes may take the value too: the variable is not visible outside this block.
  builder_.CreateStore(vector_of(init), slot->second);
}

void SimdLowering::visit(const ir::Assign& node) {
  auto slot = slots_.find(node.name);
  if (slot == slots_.end()) fail("assignment to undeclared variable '" + node.name + "'");
  llvm::Value* value = vector_of(shaped_of(node.value));
  if (mask_) {
    llvm::Value* old = builder_.CreateLoad(slot->second->getAllocatedType(), slot->second);
    value = builder_.CreateSelect(mask_, value, old);
  }
  builder_.CreateStore(value, slot->second);
}

void SimdLowering::visit(const ir::Store& node) {
  const Shaped shaped = shaped_of(node.value);
  // A clamped index's lanes may meet at the bound: stored lane by lane.
  const Shaped number = unguarded(element_number(node.param, node.indices));
  note_access(number, /*store=*/true);
  llvm::Value* pointer = element_pointer(node.param, number);
  const auto align = module_.getDataLayout().getABITypeAlign(memory_type(node.value->type));
  if (number.shape == Shape::Uniform && shaped.shape == Shape::Uniform) {
    // Every active lane (there is one wherever code runs) stores the same value to the same element.
    builder_.CreateAlignedStore(to_memory(shaped.value, node.value->type), pointer, align);
    return;
  }
  llvm::Value* value = to_memory(vector_of(shaped), node.value->type);
  if (is_consecutive(number)) {
    if (mask_)
      store_under_mask(node.param, value, pointer, align);
    else
      builder_.CreateAlignedStore(value, pointer, align);
    return;
  }
  // A scatter writes its lanes in order, so the last point that stores to an
  // element wins, as in the scalar loop.
  builder_.CreateMaskedScatter(value, is_scattered(number) ? pointer : splat(pointer), align, active_lanes());
}

void SimdLowering::store_under_mask(int param, llvm::Value* value, llvm::Value* pointer, llvm::Align align) {
  if (!whole_vector_ || !own_point_stores_[static_cast<std::size_t>(param)]) {
    builder_.CreateMaskedStore(value, pointer, align, mask_);
    return;
  }
  // The store is at the point's own element, so the vector's elements are
  // its points' (index d in dimension d): inside the array when every index
  // but the last is below its extent and the last lane's is too. Then the
  // inactive lanes' elements belong to no other point, and storing their old
  // values back leaves them as they were. Otherwise (a kernel whose range
  // passes its array, guarding the store), the masked store.
  const std::vector<llvm::Value*>& extents = params_.at(param).extents;
  const int last = kernel_.dims - 1;
  llvm::Value* inside =
      builder_.CreateICmpSLT(builder_.CreateAdd(indices_[last].value, builder_.getInt64(lanes_ - 1)), extents[last]);
  for (int d = 0; d < last; ++d)
    inside = builder_.CreateAnd(inside, builder_.CreateICmpSLT(indices_[d].value, extents[d]));
  auto* blend = llvm::BasicBlock::Create(context_, "store.blend", function_);
  auto* masked = llvm::BasicBlock::Create(context_, "store.masked", function_);
  auto* done = llvm::BasicBlock::Create(context_, "store.done", function_);
  builder_.CreateCondBr(inside, blend, masked);
  builder_.SetInsertPoint(blend);
  llvm::Value* old = builder_.CreateAlignedLoad(value->getType(), pointer, align);
  builder_.CreateAlignedStore(builder_.CreateSelect(mask_, value, old), pointer, align);
  builder_.CreateBr(done);
  builder_.SetInsertPoint(masked);
  builder_.CreateMaskedStore(value, pointer, align, mask_);
  builder_.CreateBr(done);
  builder_.SetInsertPoint(done);
}

void SimdLowering::visit(const ir::AtomicAdd& node) {
  if (!ir::is_numeric(node.value->type)) fail("atomic add of a bool");
  llvm::Value* values = vector_of(shaped_of(node.value));
  const Shaped number = unguarded(element_number(node.param, node.indices));
  note_access(number);
  llvm::Value* pointer = element_pointers(node.param, number);
  // One atomic per active lane, in lane order (a plain add per lane into memory of the thread's own).
  for (int l = 0; l < lanes_; ++l) {
    auto emit = [&] {
      emit_add_to(node.param, builder_.CreateExtractElement(pointer, l), builder_.CreateExtractElement(values, l),
                  node.value->type);
    };
    if (!mask_) {
      emit();
      continue;
    }
    auto* run = llvm::BasicBlock::Create(context_, "atomic.lane", function_);
    auto* after = llvm::BasicBlock::Create(context_, "atomic.next", function_);
    builder_.CreateCondBr(builder_.CreateExtractElement(mask_, l), run, after);
    builder_.SetInsertPoint(run);
    emit();
    builder_.CreateBr(after);
    builder_.SetInsertPoint(after);
  }
}

void SimdLowering::visit(const ir::Reduce& node) {
  const ir::Param& p = kernel_.params.at(node.param);
  llvm::AllocaInst* lanes = lane_accumulators_.at(node.param);
  if (!lanes) fail("reduce into parameter '" + p.name + "', which is not a reduction");
  llvm::Value* current = builder_.CreateLoad(lanes->getAllocatedType(), lanes);
  llvm::Value* next = combine(p.reduce, p.type, current, vector_of(shaped_of(node.value)));
  if (mask_) next = builder_.CreateSelect(mask_, next, current);
  builder_.CreateStore(next, lanes);
}

void SimdLowering::visit(const ir::If& node) {
  if (known_true_.count(node.cond.get())) {  // in the interior: every lane takes it
    walk(node.then_body);
    return;
  }
  if (!mask_) {
    // All lanes active and, in most vectors, all deciding alike: that side
    // runs as plain vector code, without masks; the vectors where the lanes
    // part (at an edge) take the masked path.
    if (auto [agree, side] = lanes_agree(node.cond); agree) {
      auto* together = llvm::BasicBlock::Create(context_, "lanes.agree", function_);
      auto* apart = llvm::BasicBlock::Create(context_, "lanes.apart", function_);
      auto* joined = llvm::BasicBlock::Create(context_, "lanes.joined", function_);
      builder_.CreateCondBr(agree, together, apart);
      builder_.SetInsertPoint(together);
      emit_branch(side, node);
      builder_.CreateBr(joined);
      builder_.SetInsertPoint(apart);
      masked_if(node);
      builder_.CreateBr(joined);
      builder_.SetInsertPoint(joined);
      return;
    }
  }
  masked_if(node);
}

std::pair<llvm::Value*, llvm::Value*> SimdLowering::lanes_agree(const ir::Expr& cond) {
  if (cond->kind != ir::ExprKind::Compare) return {};
  const auto& compare = cond->as<ir::Compare>();
  const ScalarType type = compare.lhs->type;
  if (compare.op == ir::CompareOp::Eq || compare.op == ir::CompareOp::Ne ||
      (type != ScalarType::I32 && type != ScalarType::I64))
    return {};
  const Shaped a = shaped_of(compare.lhs);
  const Shaped b = shaped_of(compare.rhs);
  const bool a_linear = a.shape == Shape::Linear && !a.guard && b.shape == Shape::Uniform;
  const bool b_linear = b.shape == Shape::Linear && !b.guard && a.shape == Shape::Uniform;
  if (!a_linear && !b_linear) return {};
  const Shaped& line = a_linear ? a : b;
  // The last lane's value, and whether reaching it wraps.
  llvm::Value* span = builder_.CreateBinaryIntrinsic(llvm::Intrinsic::smul_with_overflow, line.stride,
                                                     llvm::ConstantInt::get(line.value->getType(), lanes_ - 1));
  llvm::Value* last = builder_.CreateBinaryIntrinsic(llvm::Intrinsic::sadd_with_overflow, line.value,
                                                     builder_.CreateExtractValue(span, 0));
  llvm::Value* wraps = builder_.CreateOr(builder_.CreateExtractValue(span, 1), builder_.CreateExtractValue(last, 1));
  llvm::Value* first_lane = lower_compare(compare.op, type, a.value, b.value);
  llvm::Value* last_lane = a_linear ? lower_compare(compare.op, type, builder_.CreateExtractValue(last, 0), b.value)
                                    : lower_compare(compare.op, type, a.value, builder_.CreateExtractValue(last, 0));
  llvm::Value* agree = builder_.CreateAnd(builder_.CreateICmpEQ(first_lane, last_lane), builder_.CreateNot(wraps));
  return {agree, first_lane};
}

void SimdLowering::masked_if(const ir::If& node) {
  const Shaped cond = shaped_of(node.cond);
  if (cond.shape == Shape::Uniform) return emit_branch(cond.value, node);  // the same way for every lane
  llvm::Value* c = vector_of(cond);
  llvm::Value* taken = mask_ ? builder_.CreateAnd(mask_, c) : c;
  llvm::Value* not_taken = node.else_body ? builder_.CreateNot(c) : nullptr;
  if (not_taken && mask_) not_taken = builder_.CreateAnd(mask_, not_taken);
  under_mask(taken, [&] { walk(node.then_body); });
  if (node.else_body) under_mask(not_taken, [&] { walk(node.else_body); });
}

void SimdLowering::visit(const ir::For& node) {
  if (!ir::is_const(node.step) || !ir::is_int(node.step->type) || node.step->as<ir::Const>().int_value <= 0)
    fail("loop over '" + node.var + "' whose step is not a positive integer literal");
  const std::int64_t step = node.step->as<ir::Const>().int_value;
  const Shaped begin = shaped_of(node.begin);
  const Shaped end = shaped_of(node.end);
  if (begin.shape == Shape::Uniform && end.shape == Shape::Uniform) {
    loop_first_blocks_.push_back(function_->size());
    emit_counted_loop(
        begin.value, end.value, step, node.var,
        [&](llvm::Value* counter) {
          bound_[node.var] = uniform(counter);
          walk(node.body);
        },
        0, Bounds::Any, false, unrolls_fully(node));
    loop_first_blocks_.pop_back();
    bound_.erase(node.var);
    return;
  }
  // Bounds that differ between lanes: each lane counts on its own, and the
  // loop runs while any lane is still below its end. A lane's counter never
  // wraps: once its next value would pass its end, it is set to the end.
  llvm::Value* first = vector_of(begin);
  llvm::Value* last = vector_of(end);
  auto* type = first->getType();
  auto* element = llvm::cast<llvm::IntegerType>(type->getScalarType());
  llvm::Value* step_value = llvm::ConstantInt::get(type, step, true);
  llvm::Value* limit = builder_.CreateSub(last, step_value, node.var + ".limit");
  llvm::Value* can_step = builder_.CreateICmpSGE(
      last, llvm::ConstantInt::get(type, llvm::APInt::getSignedMinValue(element->getBitWidth()) + step));
  llvm::Value* outer = mask_;
  auto* before = builder_.GetInsertBlock();
  loop_first_blocks_.push_back(function_->size());
  auto* header = llvm::BasicBlock::Create(context_, node.var + ".lanes.loop", function_);
  auto* body = llvm::BasicBlock::Create(context_, node.var + ".lanes.body", function_);
  auto* after = llvm::BasicBlock::Create(context_, node.var + ".lanes.done", function_);
  builder_.CreateBr(header);
  builder_.SetInsertPoint(header);
  auto* counter = builder_.CreatePHI(type, 2, node.var);
  counter->addIncoming(first, before);
  llvm::Value* active = builder_.CreateICmpSLT(counter, last);
  if (outer) active = builder_.CreateAnd(outer, active);
  builder_.CreateCondBr(any_lane(active), body, after);
  builder_.SetInsertPoint(body);
  mask_ = active;
  bound_[node.var] = varying(counter);
  walk(node.body);
  loop_first_blocks_.pop_back();
  bound_.erase(node.var);
  mask_ = outer;
  llvm::Value* steps = builder_.CreateAnd(can_step, builder_.CreateICmpSLT(counter, limit));
  llvm::Value* next = builder_.CreateSelect(steps, builder_.CreateAdd(counter, step_value), last);
  counter->addIncoming(next, builder_.GetInsertBlock());
  builder_.CreateBr(header);
  builder_.SetInsertPoint(after);
}

}  // namespace canopy::jit
