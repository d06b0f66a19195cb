#include "internal/llvm_lowering.hpp"

#include "internal/host_math.hpp"
#include "internal/page_prefetch.hpp"

#include <limits>
#include <optional>

#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>

#include <canopy/ir/analysis/footprint.hpp>
#include <canopy/ir/error.hpp>

namespace canopy::jit {

using ir::ScalarType;

LlvmLowering::LlvmLowering(llvm::Module& module, const ir::Kernel& kernel)
    : context_(module.getContext()), module_(module), kernel_(kernel), builder_(module.getContext()) {}

LlvmLowering::~LlvmLowering() = default;

void LlvmLowering::fail(const std::string& what) const {
  throw Error("cannot compile kernel '" + kernel_.name + "' with LLVM: " + what +
              " (run ir::verify on the kernel; if it passes, this is a Canopy bug to report)");
}

llvm::Function* LlvmLowering::lower(const std::string& symbol) {
  function_ = declare_entry(symbol);
  entry_block_ = llvm::BasicBlock::Create(context_, "entry", function_);
  builder_.SetInsertPoint(entry_block_);
  load_params();
  begin_reductions();
  emit_index_space([&] { walk(kernel_.body); });
  finish_reductions();
  builder_.CreateRetVoid();

  std::string problems;
  llvm::raw_string_ostream out(problems);
  if (llvm::verifyFunction(*function_, &out)) fail("LLVM rejected the generated function: " + out.str());
  return function_;
}

// ---- the CPU hooks ----------------------------------------------------------

llvm::Function* LlvmLowering::declare_entry(const std::string& symbol) {
  auto* i64 = builder_.getInt64Ty();
  auto* type = llvm::FunctionType::get(builder_.getVoidTy(), {i64, i64, builder_.getPtrTy()}, false);
  auto* function = llvm::Function::Create(type, llvm::Function::ExternalLinkage, symbol, module_);
  function->addFnAttr(llvm::Attribute::NoUnwind);
  function->getArg(0)->setName("begin");
  function->getArg(1)->setName("end");
  function->getArg(2)->setName("args");
  function->addParamAttr(2, llvm::Attribute::NoCapture);
  function->addParamAttr(2, llvm::Attribute::ReadOnly);
  return function;
}

void LlvmLowering::load_params() {
  llvm::Value* block = function_->getArg(2);
  auto* i64 = builder_.getInt64Ty();
  int slot = 0;
  auto slot_address = [&](int index) { return builder_.CreateConstInBoundsGEP1_64(i64, block, index); };
  auto load_slot = [&](llvm::Type* type, const std::string& name) {
    return builder_.CreateLoad(type, slot_address(slot++), name);
  };
  auto* array_pointer = builder_.getPtrTy(array_address_space());
  params_.assign(kernel_.params.size(), {});
  for (std::size_t p = 0; p < kernel_.params.size(); ++p) {
    const ir::Param& param = kernel_.params[p];
    LoweredParam& lowered = params_[p];
    switch (param.kind) {
      case ir::ParamKind::Array:
        lowered.base = load_slot(array_pointer, param.name);
        for (int d = 0; d < param.rank; ++d)
          lowered.extents.push_back(load_slot(i64, param.name + ".extent" + std::to_string(d)));
        break;
      case ir::ParamKind::Scalar:
        switch (param.type) {
          case ScalarType::F32: lowered.value = load_slot(builder_.getFloatTy(), param.name); break;
          case ScalarType::F64: lowered.value = load_slot(builder_.getDoubleTy(), param.name); break;
          case ScalarType::Bool:
            lowered.value =
                builder_.CreateICmpNE(load_slot(i64, param.name + ".slot"), builder_.getInt64(0), param.name);
            break;
          case ScalarType::I32:
            lowered.value =
                builder_.CreateTrunc(load_slot(i64, param.name + ".slot"), builder_.getInt32Ty(), param.name);
            break;
          case ScalarType::I64: lowered.value = load_slot(i64, param.name); break;
        }
        break;
      case ir::ParamKind::Reduction: lowered.partial = load_slot(builder_.getPtrTy(), param.name + ".partial"); break;
    }
  }
  ranges_.assign(1, {function_->getArg(0), function_->getArg(1)});
  for (int d = 1; d < kernel_.dims; ++d) {
    auto* lo = load_slot(i64, "lo" + std::to_string(d));
    auto* hi = load_slot(i64, "hi" + std::to_string(d));
    ranges_.emplace_back(lo, hi);
  }
}

bool points_run_backward(const ir::Kernel& kernel) {
  if (kernel.dims < 1) return false;
  for (const ir::Param& param : kernel.params)
    if (param.is_reduction()) return false;
  const auto innermost = static_cast<std::size_t>(kernel.dims - 1);
  bool descends = false;
  for (const ir::ArrayFootprint& array : ir::footprint_of(kernel).arrays) {
    if (array.writes.atomic) return false;
    for (const ir::AccessFootprint* access : {&array.reads, &array.writes}) {
      if (!access->present) continue;
      for (const ir::DimFootprint& dim : access->dims) {
        if (!dim.is_affine()) continue;
        if (dim.coeff[innermost] > 0) return false;
        descends = descends || dim.coeff[innermost] < 0;
      }
    }
  }
  return descends;
}

void LlvmLowering::emit_index_space(const std::function<void()>& body) {
  index_.assign(kernel_.dims, nullptr);
  std::function<void(int)> nest = [&](int dim) {
    if (dim == kernel_.dims) return body();
    std::string name = "i";  // (not "i" + ...: GCC 12 warns falsely on that)
    name += std::to_string(dim);
    auto [begin, end] = ranges_[dim];
    const bool innermost = dim == kernel_.dims - 1;
    // Backward, point i of the loop is index begin + end - 1 - i: wrapping
    // arithmetic, exact for every begin <= i < end even where begin + end
    // does not fit.
    llvm::Value* last = innermost && points_backward_
                            ? builder_.CreateSub(builder_.CreateAdd(begin, end), builder_.getInt64(1), name + ".last")
                            : nullptr;
    emit_counted_loop(
        begin, end, 1, name,
        [&](llvm::Value* i) {
          index_[dim] = last ? builder_.CreateSub(last, i, name + ".back") : i;
          nest(dim + 1);
        },
        0, Bounds::Any, innermost);
  };
  nest(0);
}

void LlvmLowering::begin_reductions() {
  for (std::size_t p = 0; p < kernel_.params.size(); ++p) {
    const ir::Param& param = kernel_.params[p];
    if (!param.is_reduction()) continue;
    params_[p].accumulator = entry_alloca(value_type(param.type), param.name + ".acc");
    builder_.CreateStore(value_of(ir::identity_of(param.reduce, param.type)), params_[p].accumulator);
  }
}

void LlvmLowering::emit_reduce(int param, llvm::Value* value) {
  const ir::Param& p = kernel_.params.at(param);
  llvm::AllocaInst* accumulator = params_.at(param).accumulator;
  if (!accumulator) fail("reduce into parameter '" + p.name + "', which is not a reduction");
  auto* current = builder_.CreateLoad(accumulator->getAllocatedType(), accumulator);
  builder_.CreateStore(combine(p.reduce, p.type, current, value), accumulator);
}

void LlvmLowering::finish_reductions() {
  for (std::size_t p = 0; p < kernel_.params.size(); ++p) {
    const ir::Param& param = kernel_.params[p];
    if (!param.is_reduction()) continue;
    llvm::AllocaInst* accumulator = params_[p].accumulator;
    auto* result = builder_.CreateLoad(accumulator->getAllocatedType(), accumulator);
    builder_.CreateStore(to_memory(result, param.type), params_[p].partial);
  }
}

void LlvmLowering::emit_add_to(int param, llvm::Value* address, llvm::Value* value, ScalarType type) {
  if (std::find(plain_adds_.begin(), plain_adds_.end(), param) == plain_adds_.end()) {
    emit_atomic_add(address, value, type);
    return;
  }
  const auto align = module_.getDataLayout().getABITypeAlign(value->getType());
  llvm::Value* held = builder_.CreateAlignedLoad(value->getType(), address, align);
  llvm::Value* sum = ir::is_float(type) ? builder_.CreateFAdd(held, value) : builder_.CreateAdd(held, value);
  builder_.CreateAlignedStore(sum, address, align);
}

void LlvmLowering::emit_atomic_add(llvm::Value* address, llvm::Value* value, ScalarType type) {
  const auto op = ir::is_float(type) ? llvm::AtomicRMWInst::FAdd : llvm::AtomicRMWInst::Add;
  const auto align = module_.getDataLayout().getABITypeAlign(value->getType());
  builder_.CreateAtomicRMW(op, address, value, align, llvm::AtomicOrdering::Monotonic);
}

llvm::Value* LlvmLowering::emit_math(ir::MathFn fn, ScalarType type, const std::vector<llvm::Value*>& args) {
  if (fn == ir::MathFn::Abs) {
    if (ir::is_float(type)) return builder_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, args[0]);
    // llvm.abs with "INT_MIN is poison" off: abs(INT_MIN) wraps to INT_MIN.
    return builder_.CreateBinaryIntrinsic(llvm::Intrinsic::abs, args[0], builder_.getFalse());
  }
  if (!ir::is_float(type)) fail("math function " + std::string(ir::name_of(fn)) + " on a non-float value");
  if (type == ScalarType::F64 && (fn == ir::MathFn::Sin || fn == ir::MathFn::Cos) &&
      !args[0]->getType()->isVectorTy()) {
    // glibc's, mended for large arguments (host_math.hpp); SimdLowering calls it lane by lane.
    auto* f64 = builder_.getDoubleTy();
    const llvm::AttributeList attributes = llvm::AttributeList::get(
        context_, llvm::AttributeList::FunctionIndex,
        {llvm::Attribute::NoUnwind, llvm::Attribute::WillReturn, llvm::Attribute::NoSync, llvm::Attribute::ReadNone});
    auto callee = module_.getOrInsertFunction(fn == ir::MathFn::Sin ? kHostSinF64 : kHostCosF64, attributes, f64, f64);
    return builder_.CreateCall(callee, {args[0]});
  }
  switch (fn) {
    case ir::MathFn::Sqrt: return builder_.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, args[0]);
    case ir::MathFn::Exp: return builder_.CreateUnaryIntrinsic(llvm::Intrinsic::exp, args[0]);
    case ir::MathFn::Log: return builder_.CreateUnaryIntrinsic(llvm::Intrinsic::log, args[0]);
    case ir::MathFn::Sin: return builder_.CreateUnaryIntrinsic(llvm::Intrinsic::sin, args[0]);
    case ir::MathFn::Cos: return builder_.CreateUnaryIntrinsic(llvm::Intrinsic::cos, args[0]);
    case ir::MathFn::Floor: return builder_.CreateUnaryIntrinsic(llvm::Intrinsic::floor, args[0]);
    case ir::MathFn::Pow: return builder_.CreateBinaryIntrinsic(llvm::Intrinsic::pow, args[0], args[1]);
    case ir::MathFn::Fma:
      return builder_.CreateIntrinsic(llvm::Intrinsic::fma, {args[0]->getType()}, {args[0], args[1], args[2]});
    case ir::MathFn::Abs: break;
  }
  fail("unknown math function");
}

// ---- helpers ----------------------------------------------------------------

llvm::Type* LlvmLowering::value_type(ScalarType type) const {
  switch (type) {
    case ScalarType::Bool: return llvm::Type::getInt1Ty(context_);
    case ScalarType::I32: return llvm::Type::getInt32Ty(context_);
    case ScalarType::I64: return llvm::Type::getInt64Ty(context_);
    case ScalarType::F32: return llvm::Type::getFloatTy(context_);
    case ScalarType::F64: return llvm::Type::getDoubleTy(context_);
  }
  fail("unknown scalar type");
}

llvm::Type* LlvmLowering::memory_type(ScalarType type) const {
  return type == ScalarType::Bool ? llvm::Type::getInt8Ty(context_) : value_type(type);
}

llvm::Value* LlvmLowering::to_memory(llvm::Value* value, ScalarType type) {
  if (type != ScalarType::Bool) return value;
  return builder_.CreateZExt(value, with_lanes_of(builder_.getInt8Ty(), value->getType()));
}

llvm::Value* LlvmLowering::from_memory(llvm::Value* value, ScalarType type) {
  return type == ScalarType::Bool ? builder_.CreateICmpNE(value, llvm::ConstantInt::get(value->getType(), 0)) : value;
}

llvm::Type* LlvmLowering::with_lanes_of(llvm::Type* scalar, llvm::Type* like) {
  if (auto* vector = llvm::dyn_cast<llvm::VectorType>(like)) return llvm::VectorType::get(scalar, vector);
  return scalar;
}

llvm::Value* LlvmLowering::value_of(const ir::Expr& expr) {
  if (!expr) fail("an expression is missing");
  value_ = nullptr;
  walk(expr);
  if (!value_) fail("an expression produced no value");
  return value_;
}

llvm::Value* LlvmLowering::combine(ir::ReduceOp op, ScalarType type, llvm::Value* a, llvm::Value* b) {
  if (type == ScalarType::Bool) return op == ir::ReduceOp::Min ? builder_.CreateAnd(a, b) : builder_.CreateOr(a, b);
  const bool is_float = ir::is_float(type);
  switch (op) {
    case ir::ReduceOp::Sum: {
      if (!is_float) return builder_.CreateAdd(a, b);
      llvm::Value* sum = builder_.CreateFAdd(a, b);
      // The one fast-math flag Canopy uses: lets the vectorizer split the sum
      // into vector lanes (the result may differ from a serial sum in rounding).
      if (auto* instruction = llvm::dyn_cast<llvm::Instruction>(sum)) instruction->setHasAllowReassoc(true);
      return sum;
    }
    case ir::ReduceOp::Min:
      return is_float ? builder_.CreateMinNum(a, b) : builder_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, a, b);
    case ir::ReduceOp::Max:
      return is_float ? builder_.CreateMaxNum(a, b) : builder_.CreateBinaryIntrinsic(llvm::Intrinsic::smax, a, b);
  }
  fail("unknown reduction operator");
}

llvm::AllocaInst* LlvmLowering::entry_alloca(llvm::Type* type, const std::string& name) {
  llvm::IRBuilder<> at_entry(entry_block_, entry_block_->begin());
  return at_entry.CreateAlloca(type, nullptr, name);
}

void LlvmLowering::emit_counted_loop(llvm::Value* begin, llvm::Value* end, std::int64_t step, const std::string& name,
                                     const std::function<void(llvm::Value*)>& body, int interleave, Bounds bounds,
                                     bool points, bool unroll_fully) {
  auto* type = llvm::cast<llvm::IntegerType>(begin->getType());
  auto* step_value = llvm::ConstantInt::get(type, step, true);
  const bool next_below_end = step == 1 || bounds == Bounds::WholeSteps;
  llvm::Value* limit = nullptr;
  llvm::Value* can_step = nullptr;
  if (!next_below_end) {
    // counter + step < end  <=>  counter < end - step, where end - step is only
    // meaningful when it does not wrap, i.e. when end >= MIN + step.
    limit = builder_.CreateSub(end, step_value, name + ".limit");
    auto* lowest_end = llvm::ConstantInt::get(type, llvm::APInt::getSignedMinValue(type->getBitWidth()) + step);
    can_step = builder_.CreateICmpSGE(end, lowest_end, name + ".can_step");
  }
  auto* before = builder_.GetInsertBlock();
  auto* loop = llvm::BasicBlock::Create(context_, name + ".loop", function_);
  auto* after = llvm::BasicBlock::Create(context_, name + ".done", function_);
  builder_.CreateCondBr(builder_.CreateICmpSLT(begin, end), loop, after);

  builder_.SetInsertPoint(loop);
  auto* counter = builder_.CreatePHI(type, 2, name);
  counter->addIncoming(begin, before);
  body(counter);
  // counter < end here, and the loop goes on only when counter + step < end:
  // the increment cannot overflow on the path that uses it (with whole steps,
  // or a step of 1, counter + step <= end).
  auto* next = builder_.CreateAdd(counter, step_value, name + ".next", false, true);
  llvm::Value* again = next_below_end ? builder_.CreateICmpSLT(next, end)
                                      : builder_.CreateAnd(can_step, builder_.CreateICmpSLT(counter, limit));
  counter->addIncoming(next, builder_.GetInsertBlock());
  auto* latch = builder_.CreateCondBr(again, loop, after);
  if (interleave > 0 || points || unroll_fully) {
    std::vector<llvm::Metadata*> parts{nullptr};  // a loop's id names itself first
    if (unroll_fully)
      parts.push_back(llvm::MDNode::get(context_, {llvm::MDString::get(context_, "llvm.loop.unroll.full")}));
    if (interleave > 0) {
      llvm::Metadata* count[] = {
          llvm::MDString::get(context_, "llvm.loop.interleave.count"),
          llvm::ConstantAsMetadata::get(llvm::ConstantInt::get(builder_.getInt32Ty(), interleave))};
      parts.push_back(llvm::MDNode::get(context_, count));
    }
    if (points) parts.push_back(llvm::MDNode::get(context_, {llvm::MDString::get(context_, kPointLoopProperty)}));
    auto* id = llvm::MDNode::getDistinct(context_, parts);
    id->replaceOperandWith(0, id);
    latch->setMetadata(llvm::LLVMContext::MD_loop, id);
  }
  builder_.SetInsertPoint(after);
}

llvm::Value* LlvmLowering::element_address(int param, const std::vector<ir::Expr>& indices) {
  const ir::Param& p = kernel_.params.at(param);
  const LoweredParam& lowered = params_.at(param);
  if (!p.is_array() || indices.size() != lowered.extents.size())
    fail("parameter '" + p.name + "' indexed as an array of rank " + std::to_string(indices.size()));
  auto* i64 = builder_.getInt64Ty();
  llvm::Value* linear = nullptr;
  for (std::size_t d = 0; d < indices.size(); ++d) {
    llvm::Value* index = builder_.CreateSExtOrTrunc(value_of(indices[d]), i64);
    linear = d == 0 ? index : builder_.CreateAdd(builder_.CreateMul(linear, lowered.extents[d]), index);
  }
  // A device copy that holds a window of the array starts at element `first`.
  if (lowered.first) linear = builder_.CreateSub(linear, lowered.first);
  // In bounds: a kernel never addresses outside its arrays (checked mode says so when it would).
  return builder_.CreateInBoundsGEP(memory_type(p.type), lowered.base, linear);
}

// ---- expressions ------------------------------------------------------------

void LlvmLowering::visit(const ir::Const& node) {
  switch (node.type) {
    case ScalarType::Bool: value_ = builder_.getInt1(node.int_value != 0); break;
    case ScalarType::I32: value_ = builder_.getInt32(static_cast<std::uint32_t>(node.int_value)); break;
    case ScalarType::I64: value_ = builder_.getInt64(static_cast<std::uint64_t>(node.int_value)); break;
    case ScalarType::F32:
      value_ = llvm::ConstantFP::get(builder_.getFloatTy(), static_cast<float>(node.float_value));
      break;
    case ScalarType::F64: value_ = llvm::ConstantFP::get(builder_.getDoubleTy(), node.float_value); break;
  }
}

void LlvmLowering::visit(const ir::Index& node) {
  if (node.dim < 0 || node.dim >= static_cast<int>(index_.size()) || !index_[node.dim])
    fail("index(" + std::to_string(node.dim) + ") in a kernel of " + std::to_string(kernel_.dims) + " dimensions");
  value_ = index_[node.dim];
}

void LlvmLowering::visit(const ir::ParamRef& node) {
  if (node.param < 0 || node.param >= static_cast<int>(params_.size()) || !params_[node.param].value)
    fail("parameter " + std::to_string(node.param) + " read as a scalar");
  value_ = params_[node.param].value;
}

void LlvmLowering::visit(const ir::VarRef& node) {
  if (auto counter = loop_counters_.find(node.name); counter != loop_counters_.end()) {
    value_ = counter->second;
    return;
  }
  auto local = locals_.find(node.name);
  if (local == locals_.end()) fail("variable '" + node.name + "' read before its declaration");
  value_ = builder_.CreateLoad(local->second->getAllocatedType(), local->second, node.name);
}

void LlvmLowering::visit(const ir::Extent& node) {
  if (node.param < 0 || node.param >= static_cast<int>(params_.size()) || node.dim < 0 ||
      node.dim >= static_cast<int>(params_[node.param].extents.size()))
    fail("extent of dimension " + std::to_string(node.dim) + " of parameter " + std::to_string(node.param));
  value_ = params_[node.param].extents[node.dim];
}

void LlvmLowering::visit(const ir::Load& node) {
  llvm::Value* address = element_address(node.param, node.indices);
  value_ = from_memory(builder_.CreateLoad(memory_type(node.type), address), node.type);
}

void LlvmLowering::visit(const ir::Unary& node) {
  llvm::Value* x = value_of(node.operand);
  if (node.op == ir::UnaryOp::Not) {
    value_ = builder_.CreateNot(x);  // logical on i1, bitwise on integers
  } else {
    value_ = ir::is_float(node.type) ? builder_.CreateFNeg(x) : builder_.CreateNeg(x);
  }
}

void LlvmLowering::visit(const ir::Binary& node) {
  llvm::Value* a = value_of(node.lhs);
  llvm::Value* b = value_of(node.rhs);
  value_ = lower_binary(node.op, node.type, a, b);
}

llvm::Value* LlvmLowering::lower_binary(ir::BinaryOp op, ScalarType type, llvm::Value* a, llvm::Value* b) {
  using ir::BinaryOp;
  if (ir::is_float(type)) {
    switch (op) {
      case BinaryOp::Add: return builder_.CreateFAdd(a, b);
      case BinaryOp::Sub: return builder_.CreateFSub(a, b);
      case BinaryOp::Mul: return builder_.CreateFMul(a, b);
      case BinaryOp::Div: return builder_.CreateFDiv(a, b);
      case BinaryOp::Rem: return builder_.CreateFRem(a, b);  // C's fmod
      case BinaryOp::Min: return builder_.CreateMinNum(a, b);
      case BinaryOp::Max: return builder_.CreateMaxNum(a, b);
      default: fail("operator " + std::string(ir::name_of(op)) + " on floats");
    }
  }
  switch (op) {
    case BinaryOp::And: return builder_.CreateAnd(a, b);
    case BinaryOp::Or: return builder_.CreateOr(a, b);
    case BinaryOp::Xor: return builder_.CreateXor(a, b);
    default: break;
  }
  if (type == ScalarType::Bool) fail("operator " + std::string(ir::name_of(op)) + " on bools");
  llvm::Type* int_type = a->getType();  // an integer, or a vector of them (constants below splat)
  const unsigned width = int_type->getScalarSizeInBits();
  switch (op) {
    case BinaryOp::Add: return builder_.CreateAdd(a, b);  // wrapping: no nsw
    case BinaryOp::Sub: return builder_.CreateSub(a, b);
    case BinaryOp::Mul: return builder_.CreateMul(a, b);
    case BinaryOp::Div:
    case BinaryOp::Rem: {
      // x / 0 == 0, x % 0 == 0, MIN / -1 == MIN, MIN % -1 == 0: divide by 1
      // instead in those cases (x / 1 == x, x % 1 == 0), then zero x / 0.
      auto* zero = llvm::ConstantInt::get(int_type, 0);
      auto* divisor_is_zero = builder_.CreateICmpEQ(b, zero);
      auto* minus_one = llvm::ConstantInt::getSigned(int_type, -1);
      if (op == BinaryOp::Rem) {
        // x % -1 == 0 == x % 1 for every x: the safe divisor depends on the
        // divisor alone, so rems by one divisor share it (and LLVM shares
        // equal rems: a 3 x 3 stencil wrapped with % had 7 divisions a point).
        auto* unsafe = builder_.CreateOr(divisor_is_zero, builder_.CreateICmpEQ(b, minus_one));
        return builder_.CreateSRem(a, builder_.CreateSelect(unsafe, llvm::ConstantInt::get(int_type, 1), b));
      }
      auto* overflows = builder_.CreateAnd(
          builder_.CreateICmpEQ(a, llvm::ConstantInt::get(int_type, llvm::APInt::getSignedMinValue(width))),
          builder_.CreateICmpEQ(b, minus_one));
      auto* safe_divisor =
          builder_.CreateSelect(builder_.CreateOr(divisor_is_zero, overflows), llvm::ConstantInt::get(int_type, 1), b);
      return builder_.CreateSelect(divisor_is_zero, zero, builder_.CreateSDiv(a, safe_divisor));
    }
    case BinaryOp::Min: return builder_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, a, b);
    case BinaryOp::Max: return builder_.CreateBinaryIntrinsic(llvm::Intrinsic::smax, a, b);
    case BinaryOp::Shl:
    case BinaryOp::Shr: {
      auto* amount = builder_.CreateAnd(b, llvm::ConstantInt::get(int_type, width - 1));
      return op == BinaryOp::Shl ? builder_.CreateShl(a, amount) : builder_.CreateAShr(a, amount);
    }
    default: break;
  }
  fail("operator " + std::string(ir::name_of(op)) + " on integers");
}

void LlvmLowering::visit(const ir::Compare& node) {
  llvm::Value* a = value_of(node.lhs);
  llvm::Value* b = value_of(node.rhs);
  value_ = lower_compare(node.op, node.lhs->type, a, b);
}

llvm::Value* LlvmLowering::lower_compare(ir::CompareOp op, ScalarType type, llvm::Value* a, llvm::Value* b) {
  using P = llvm::CmpInst::Predicate;
  using ir::CompareOp;
  P predicate = P::BAD_ICMP_PREDICATE;
  if (ir::is_float(type)) {
    // Ordered (false on NaN), except != which is true on NaN, as in C++.
    switch (op) {
      case CompareOp::Eq: predicate = P::FCMP_OEQ; break;
      case CompareOp::Ne: predicate = P::FCMP_UNE; break;
      case CompareOp::Lt: predicate = P::FCMP_OLT; break;
      case CompareOp::Le: predicate = P::FCMP_OLE; break;
      case CompareOp::Gt: predicate = P::FCMP_OGT; break;
      case CompareOp::Ge: predicate = P::FCMP_OGE; break;
    }
    return builder_.CreateFCmp(predicate, a, b);
  }
  // Bools compare as 0 and 1 (unsigned); integers are signed.
  const bool is_unsigned = type == ScalarType::Bool;
  switch (op) {
    case CompareOp::Eq: predicate = P::ICMP_EQ; break;
    case CompareOp::Ne: predicate = P::ICMP_NE; break;
    case CompareOp::Lt: predicate = is_unsigned ? P::ICMP_ULT : P::ICMP_SLT; break;
    case CompareOp::Le: predicate = is_unsigned ? P::ICMP_ULE : P::ICMP_SLE; break;
    case CompareOp::Gt: predicate = is_unsigned ? P::ICMP_UGT : P::ICMP_SGT; break;
    case CompareOp::Ge: predicate = is_unsigned ? P::ICMP_UGE : P::ICMP_SGE; break;
  }
  return builder_.CreateICmp(predicate, a, b);
}

void LlvmLowering::visit(const ir::Cast& node) {
  value_ = lower_cast(value_of(node.operand), node.operand->type, node.type);
}

llvm::Value* LlvmLowering::lower_cast(llvm::Value* value, ScalarType from, ScalarType to) {
  if (from == to) return value;
  llvm::Type* target = with_lanes_of(value_type(to), value->getType());
  if (to == ScalarType::Bool) {
    if (ir::is_float(from)) return builder_.CreateFCmpUNE(value, llvm::ConstantFP::get(value->getType(), 0.0));
    return builder_.CreateICmpNE(value, llvm::ConstantInt::get(value->getType(), 0));
  }
  if (from == ScalarType::Bool)
    return ir::is_float(to) ? builder_.CreateUIToFP(value, target) : builder_.CreateZExt(value, target);
  if (ir::is_int(from) && ir::is_int(to)) return builder_.CreateSExtOrTrunc(value, target);
  if (ir::is_int(from)) return builder_.CreateSIToFP(value, target);
  if (ir::is_int(to)) {
    // Rounds toward zero, saturates, NaN gives 0.
    return builder_.CreateIntrinsic(llvm::Intrinsic::fptosi_sat, {target, value->getType()}, {value});
  }
  return to == ScalarType::F64 ? builder_.CreateFPExt(value, target) : builder_.CreateFPTrunc(value, target);
}

void LlvmLowering::visit(const ir::Call& node) {
  if (static_cast<int>(node.args.size()) != ir::arity_of(node.fn))
    fail("math function " + std::string(ir::name_of(node.fn)) + " with " + std::to_string(node.args.size()) +
         " arguments");
  std::vector<llvm::Value*> args;
  for (const auto& arg : node.args) args.push_back(value_of(arg));
  value_ = emit_math(node.fn, node.type, args);
}

void LlvmLowering::visit(const ir::Select& node) {
  llvm::Value* cond = value_of(node.cond);
  llvm::Value* if_true = value_of(node.if_true);
  llvm::Value* if_false = value_of(node.if_false);
  value_ = builder_.CreateSelect(cond, if_true, if_false);
}

// ---- statements -------------------------------------------------------------

void LlvmLowering::visit(const ir::Block& node) {
  for (const auto& stmt : node.stmts) walk(stmt);
}

void LlvmLowering::visit(const ir::Decl& node) {
  llvm::Value* init = value_of(node.init);
  auto [slot, inserted] = locals_.try_emplace(node.name, nullptr);
  if (inserted) slot->second = entry_alloca(value_type(node.type), node.name);
  builder_.CreateStore(init, slot->second);
}

void LlvmLowering::visit(const ir::Assign& node) {
  auto local = locals_.find(node.name);
  if (local == locals_.end()) fail("assignment to undeclared variable '" + node.name + "'");
  builder_.CreateStore(value_of(node.value), local->second);
}

void LlvmLowering::visit(const ir::Store& node) {
  llvm::Value* value = value_of(node.value);
  llvm::Value* address = element_address(node.param, node.indices);
  builder_.CreateStore(to_memory(value, node.value->type), address);
}

void LlvmLowering::visit(const ir::AtomicAdd& node) {
  llvm::Value* value = value_of(node.value);
  llvm::Value* address = element_address(node.param, node.indices);
  if (!ir::is_numeric(node.value->type)) fail("atomic add of a bool");
  emit_add_to(node.param, address, value, node.value->type);
}

void LlvmLowering::visit(const ir::Reduce& node) { emit_reduce(node.param, value_of(node.value)); }

void LlvmLowering::visit(const ir::If& node) { emit_branch(value_of(node.cond), node); }

void LlvmLowering::emit_branch(llvm::Value* cond, const ir::If& node) {
  auto* then_block = llvm::BasicBlock::Create(context_, "then", function_);
  auto* else_block = node.else_body ? llvm::BasicBlock::Create(context_, "else", function_) : nullptr;
  auto* merge = llvm::BasicBlock::Create(context_, "endif", function_);
  builder_.CreateCondBr(cond, then_block, else_block ? else_block : merge);
  builder_.SetInsertPoint(then_block);
  walk(node.then_body);
  builder_.CreateBr(merge);
  if (else_block) {
    builder_.SetInsertPoint(else_block);
    walk(node.else_body);
    builder_.CreateBr(merge);
  }
  builder_.SetInsertPoint(merge);
}

namespace {

// The trips of a loop of constant bounds and fewer than 16 trips; nullopt
// for any other.
std::optional<std::int64_t> few_constant_trips(const ir::For& node) {
  constexpr std::int64_t kMostTrips = 16;
  if (!ir::is_const(node.begin) || !ir::is_const(node.end) || !ir::is_const(node.step) || !ir::is_int(node.step->type))
    return std::nullopt;
  const std::int64_t begin = node.begin->as<ir::Const>().int_value, end = node.end->as<ir::Const>().int_value;
  const std::int64_t step = node.step->as<ir::Const>().int_value;
  if (step <= 0 || end <= begin || (end - begin) / step >= kMostTrips) return std::nullopt;
  return (end - begin + step - 1) / step;
}

// The operations of `body` (loads, arithmetic, comparisons, casts, calls,
// selects). A loop in it makes it -1, unless `unrolled` and the loop has
// few constant trips: then it counts its trips times its body's, and
// `nested`, where given, says so.
std::int64_t count_operations(const ir::Stmt& body, bool unrolled, bool* nested = nullptr) {
  struct Counter : ir::Visitor {
    bool unrolled = false, loop = false, counted_loop = false;
    std::int64_t nodes = 0;
    void visit(const ir::For& n) override {
      const auto trips = unrolled ? few_constant_trips(n) : std::nullopt;
      const std::int64_t inner = trips ? count_operations(n.body, true) : -1;
      if (inner < 0) {
        loop = true;
      } else {
        nodes += *trips * std::max<std::int64_t>(inner, 1);
        counted_loop = true;
      }
    }
    void visit(const ir::Load& n) override { ++nodes, ir::Visitor::visit(n); }
    void visit(const ir::Unary& n) override { ++nodes, ir::Visitor::visit(n); }
    void visit(const ir::Binary& n) override { ++nodes, ir::Visitor::visit(n); }
    void visit(const ir::Compare& n) override { ++nodes, ir::Visitor::visit(n); }
    void visit(const ir::Cast& n) override { ++nodes, ir::Visitor::visit(n); }
    void visit(const ir::Call& n) override { ++nodes, ir::Visitor::visit(n); }
    void visit(const ir::Select& n) override { ++nodes, ir::Visitor::visit(n); }
  } counter;
  counter.unrolled = unrolled;
  counter.walk(body);
  if (nested) *nested = counter.counted_loop;
  return counter.loop ? -1 : counter.nodes;
}

// A loop body with no loop in it and at most kMostNodes expressions: more
// chains side by side would not fit the registers.
bool is_small_innermost(const ir::Stmt& body) {
  constexpr int kMostNodes = 256;
  const int operations = operations_without_loops(body);
  return operations >= 0 && operations <= kMostNodes;
}

}  // namespace

int operations_without_loops(const ir::Stmt& body) {
  const std::int64_t operations = count_operations(body, false);
  return operations < 0 ? -1 : static_cast<int>(std::min<std::int64_t>(operations, std::numeric_limits<int>::max()));
}

bool unrolls_fully(const ir::For& node) {
  // A nest unrolls whole only while small: Rodinia lud's 16-row block took
  // 370 ms to compile unrolled. Game of Life's 3 x 3 neighbours unrolled let
  // LLVM share and hoist their wrapped (%) rows and columns: 3.4x the time
  // of an OpenMP loop before.
  constexpr std::int64_t kMostOperations = 1024, kMostNestOperations = 256;
  const auto trips = few_constant_trips(node);
  if (!trips) return false;
  bool nest = false;
  const std::int64_t operations = count_operations(node.body, true, &nest);
  if (operations < 0) return false;
  return *trips * std::max<std::int64_t>(operations, 1) <= (nest ? kMostNestOperations : kMostOperations);
}

void LlvmLowering::visit(const ir::For& node) {
  if (!ir::is_const(node.step) || !ir::is_int(node.step->type) || node.step->as<ir::Const>().int_value <= 0)
    fail("loop over '" + node.var + "' whose step is not a positive integer literal");
  llvm::Value* begin = value_of(node.begin);
  llvm::Value* end = value_of(node.end);
  const int interleave = interleave_ > 0 && is_small_innermost(node.body) ? interleave_ : 0;
  emit_counted_loop(
      begin, end, node.step->as<ir::Const>().int_value, node.var,
      [&](llvm::Value* counter) {
        loop_counters_[node.var] = counter;
        walk(node.body);
        loop_counters_.erase(node.var);
      },
      interleave, Bounds::Any, false, unrolls_fully(node));
}

}  // namespace canopy::jit
