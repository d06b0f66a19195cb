#include "internal/spir_lowering.hpp"

#include <cmath>

#include <llvm/ADT/PostOrderIterator.h>
#include <llvm/IR/CFG.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/IntrinsicInst.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/Metadata.h>
#include <llvm/Transforms/Utils/Local.h>

#include <canopy/ir/error.hpp>

namespace canopy::jit {

using ir::ScalarType;

namespace {

constexpr unsigned kGlobal = 1;  // SPIR address spaces
constexpr unsigned kLocal = 3;
constexpr std::uint32_t kLocalMemFence = 1;  // CLK_LOCAL_MEM_FENCE

// The OpenCL C spelling of a value of `type` in kernel argument metadata.
std::string opencl_type_name(ScalarType type) {
  switch (type) {
    case ScalarType::Bool: return "uchar";
    case ScalarType::I32: return "int";
    case ScalarType::I64: return "long";
    case ScalarType::F32: return "float";
    case ScalarType::F64: return "double";
  }
  return "int";
}

// The Itanium mangling of an OpenCL built-in taking `arguments` (each
// "f", "d", "i", "l" or "j"): _Z<length><name><arguments>.
std::string mangled(const std::string& name, const std::string& arguments) {
  return "_Z" + std::to_string(name.size()) + name + arguments;
}

std::string float_suffix(ScalarType type) { return type == ScalarType::F32 ? "f" : "d"; }

}  // namespace

SpirLowering::SpirLowering(llvm::Module& module, const ir::Kernel& kernel) : LlvmLowering(module, kernel) {
  for (const auto& param : kernel.params) has_reductions_ = has_reductions_ || param.is_reduction();
}

// ---- the entry and its arguments ---------------------------------------------

llvm::Function* SpirLowering::declare_entry(const std::string& symbol) {
  auto* i64 = builder_.getInt64Ty();
  std::vector<llvm::Type*> types;
  std::vector<std::string> names;
  for (const ir::Param& param : kernel_.params) {
    switch (param.kind) {
      case ir::ParamKind::Array:
        types.push_back(memory_type(param.type)->getPointerTo(kGlobal));
        names.push_back(param.name);
        for (int d = 0; d < param.rank; ++d) {
          types.push_back(i64);
          names.push_back(param.name + ".extent" + std::to_string(d));
        }
        types.push_back(i64);
        names.push_back(param.name + ".first");
        break;
      case ir::ParamKind::Scalar:
        types.push_back(param.type == ScalarType::Bool ? builder_.getInt32Ty() : value_type(param.type));
        names.push_back(param.name);
        break;
      case ir::ParamKind::Reduction:
        types.push_back(memory_type(param.type)->getPointerTo(kGlobal));
        names.push_back(param.name + ".partials");
        types.push_back(memory_type(param.type)->getPointerTo(kLocal));
        names.push_back(param.name + ".scratch");
        break;
    }
  }
  for (int d = 0; d < kernel_.dims; ++d) {
    types.push_back(i64);
    names.push_back("begin" + std::to_string(d));
    types.push_back(i64);
    names.push_back("end" + std::to_string(d));
  }
  auto* type = llvm::FunctionType::get(builder_.getVoidTy(), types, false);
  auto* function = llvm::Function::Create(type, llvm::Function::ExternalLinkage, symbol, module_);
  function->setCallingConv(llvm::CallingConv::SPIR_KERNEL);
  function->addFnAttr(llvm::Attribute::NoUnwind);
  for (unsigned a = 0; a < function->arg_size(); ++a) function->getArg(a)->setName(names[a]);
  function_ = function;
  attach_argument_metadata();
  return function;
}

// OpenCL's kernel_arg_* metadata: what SPIR consumers read to learn each
// argument's address space, type and qualifiers.
void SpirLowering::attach_argument_metadata() {
  std::vector<llvm::Metadata*> spaces, access, types, qualifiers, names;
  auto add = [&](unsigned space, const std::string& type, const std::string& qualifier, const std::string& name) {
    spaces.push_back(llvm::ConstantAsMetadata::get(builder_.getInt32(space)));
    access.push_back(llvm::MDString::get(context_, "none"));
    types.push_back(llvm::MDString::get(context_, type));
    qualifiers.push_back(llvm::MDString::get(context_, qualifier));
    names.push_back(llvm::MDString::get(context_, name));
  };
  for (const ir::Param& param : kernel_.params) {
    const std::string element = opencl_type_name(param.type);
    switch (param.kind) {
      case ir::ParamKind::Array:
        add(kGlobal, element + "*", param.writes() ? "" : "const", param.name);
        for (int d = 0; d < param.rank; ++d) add(0, "long", "", param.name + "_n" + std::to_string(d));
        add(0, "long", "", param.name + "_first");
        break;
      case ir::ParamKind::Scalar: add(0, param.type == ScalarType::Bool ? "int" : element, "", param.name); break;
      case ir::ParamKind::Reduction:
        add(kGlobal, element + "*", "", param.name + "_partials");
        add(kLocal, element + "*", "", param.name + "_scratch");
        break;
    }
  }
  for (int d = 0; d < kernel_.dims; ++d) {
    add(0, "long", "", "begin" + std::to_string(d));
    add(0, "long", "", "end" + std::to_string(d));
  }
  function_->setMetadata("kernel_arg_addr_space", llvm::MDNode::get(context_, spaces));
  function_->setMetadata("kernel_arg_access_qual", llvm::MDNode::get(context_, access));
  function_->setMetadata("kernel_arg_type", llvm::MDNode::get(context_, types));
  function_->setMetadata("kernel_arg_base_type", llvm::MDNode::get(context_, types));
  function_->setMetadata("kernel_arg_type_qual", llvm::MDNode::get(context_, qualifiers));
  function_->setMetadata("kernel_arg_name", llvm::MDNode::get(context_, names));
}

void SpirLowering::load_params() {
  unsigned next = 0;
  auto argument = [&] { return function_->getArg(next++); };
  params_.assign(kernel_.params.size(), {});
  scratch_.assign(kernel_.params.size(), nullptr);
  for (std::size_t p = 0; p < kernel_.params.size(); ++p) {
    const ir::Param& param = kernel_.params[p];
    LoweredParam& lowered = params_[p];
    switch (param.kind) {
      case ir::ParamKind::Array:
        lowered.base = argument();
        for (int d = 0; d < param.rank; ++d) lowered.extents.push_back(argument());
        lowered.first = argument();
        break;
      case ir::ParamKind::Scalar:
        lowered.value = argument();
        if (param.type == ScalarType::Bool)
          lowered.value = builder_.CreateICmpNE(lowered.value, builder_.getInt32(0), param.name + ".bool");
        break;
      case ir::ParamKind::Reduction:
        lowered.partial = argument();
        scratch_[p] = argument();
        break;
    }
  }
  begin_.clear();
  end_.clear();
  for (int d = 0; d < kernel_.dims; ++d) {
    begin_.push_back(argument());
    end_.push_back(argument());
  }
}

// ---- built-in functions -----------------------------------------------------

llvm::Value* SpirLowering::call_builtin(const std::string& mangled_name, llvm::Type* result,
                                        const std::vector<llvm::Value*>& args, bool convergent) {
  std::vector<llvm::Type*> types;
  for (auto* arg : args) types.push_back(arg->getType());
  auto* type = llvm::FunctionType::get(result, types, false);
  auto callee = module_.getOrInsertFunction(mangled_name, type);
  auto* function = llvm::cast<llvm::Function>(callee.getCallee());
  function->setCallingConv(llvm::CallingConv::SPIR_FUNC);
  function->addFnAttr(llvm::Attribute::NoUnwind);
  if (convergent) {
    function->addFnAttr(llvm::Attribute::Convergent);
  } else {
    function->addFnAttr(llvm::Attribute::ReadNone);
    function->addFnAttr(llvm::Attribute::WillReturn);
  }
  auto* call = builder_.CreateCall(callee, args);
  call->setCallingConv(llvm::CallingConv::SPIR_FUNC);
  call->setAttributes(function->getAttributes());
  return call;
}

llvm::Value* SpirLowering::work_item(const std::string& name, int dim) {
  return call_builtin(mangled(name, "j"), builder_.getInt64Ty(), {builder_.getInt32(static_cast<std::uint32_t>(dim))});
}

llvm::Value* SpirLowering::emit_math(ir::MathFn fn, ScalarType type, const std::vector<llvm::Value*>& args) {
  llvm::Type* result = value_type(type);
  if (fn == ir::MathFn::Abs) {
    if (ir::is_float(type)) return call_builtin(mangled("fabs", float_suffix(type)), result, args);
    // OpenCL's abs returns the unsigned magnitude: abs(MIN) is MIN's bits.
    return call_builtin(mangled("abs", type == ScalarType::I32 ? "i" : "l"), result, args);
  }
  if (!ir::is_float(type)) fail("math function " + std::string(ir::name_of(fn)) + " on a non-float value");
  const std::string s = float_suffix(type);
  switch (fn) {
    case ir::MathFn::Sqrt: return call_builtin(mangled("sqrt", s), result, args);
    case ir::MathFn::Exp: return call_builtin(mangled("exp", s), result, args);
    case ir::MathFn::Log: return call_builtin(mangled("log", s), result, args);
    case ir::MathFn::Sin: return call_builtin(mangled("sin", s), result, args);
    case ir::MathFn::Cos: return call_builtin(mangled("cos", s), result, args);
    case ir::MathFn::Floor: return call_builtin(mangled("floor", s), result, args);
    case ir::MathFn::Pow: return call_builtin(mangled("pow", s + s), result, args);
    case ir::MathFn::Fma: return call_builtin(mangled("fma", s + s + s), result, args);
    case ir::MathFn::Abs: break;
  }
  fail("unknown math function");
}

// ---- the index space --------------------------------------------------------

void SpirLowering::emit_index_space(const std::function<void()>& body) {
  if (has_reductions_)
    emit_strided_walk(body);
  else
    emit_points(body);
}

// One point per work-item: device dimension 0 is the last index (fastest in
// memory); work-items past the piece's end in any dimension do nothing.
void SpirLowering::emit_points(const std::function<void()>& body) {
  const int dims = kernel_.dims;
  index_.assign(static_cast<std::size_t>(dims), nullptr);
  llvm::Value* inside = nullptr;
  for (int d = 0; d < dims; ++d) {
    llvm::Value* id = work_item("get_global_id", dims - 1 - d);
    // begin >= 0 and the id is below the launch's size: no overflow.
    index_[d] = builder_.CreateAdd(begin_[d], id, "i" + std::to_string(d), false, true);
    llvm::Value* below_end = builder_.CreateICmpSLT(index_[d], end_[d]);
    inside = inside ? builder_.CreateAnd(inside, below_end) : below_end;
  }
  auto* point = llvm::BasicBlock::Create(context_, "point", function_);
  auto* done = llvm::BasicBlock::Create(context_, "done", function_);
  builder_.CreateCondBr(inside, point, done);
  builder_.SetInsertPoint(point);
  body();
  builder_.CreateBr(done);
  builder_.SetInsertPoint(done);
}

// Kernels with reductions: work-item w of a one-dimensional launch of W
// work-items takes the piece's points w, w + W, w + 2W, ... (row-major
// order, the last index fastest), so that neighbouring work-items read
// neighbouring elements.
void SpirLowering::emit_strided_walk(const std::function<void()>& body) {
  const int dims = kernel_.dims;
  std::vector<llvm::Value*> counts;
  llvm::Value* points = nullptr;
  for (int d = 0; d < dims; ++d) {
    counts.push_back(builder_.CreateSub(end_[d], begin_[d], "count" + std::to_string(d)));
    points = points ? builder_.CreateMul(points, counts.back()) : counts.back();
  }
  points->setName("points");
  llvm::Value* items = work_item("get_global_size", 0);
  llvm::Value* item = work_item("get_global_id", 0);
  auto* before = builder_.GetInsertBlock();
  auto* loop = llvm::BasicBlock::Create(context_, "walk", function_);
  auto* after = llvm::BasicBlock::Create(context_, "walked", function_);
  builder_.CreateCondBr(builder_.CreateICmpSLT(item, points), loop, after);

  builder_.SetInsertPoint(loop);
  auto* point = builder_.CreatePHI(builder_.getInt64Ty(), 2, "point");
  point->addIncoming(item, before);
  // The point's coordinates; every count is positive here (point < points).
  std::vector<llvm::Value*> offset(static_cast<std::size_t>(dims), point);
  if (dims == 2) {
    offset[0] = builder_.CreateUDiv(point, counts[1]);
    offset[1] = builder_.CreateURem(point, counts[1]);
  } else if (dims == 3) {
    offset[0] = builder_.CreateUDiv(point, builder_.CreateMul(counts[1], counts[2]));
    offset[1] = builder_.CreateURem(builder_.CreateUDiv(point, counts[2]), counts[1]);
    offset[2] = builder_.CreateURem(point, counts[2]);
  }
  index_.assign(static_cast<std::size_t>(dims), nullptr);
  for (int d = 0; d < dims; ++d)
    index_[d] =
        builder_.CreateAdd(begin_[d], offset[static_cast<std::size_t>(d)], "i" + std::to_string(d), false, true);
  body();
  auto* next = builder_.CreateAdd(point, items, "point.next", false, true);
  point->addIncoming(next, builder_.GetInsertBlock());
  builder_.CreateCondBr(builder_.CreateICmpSLT(next, points), loop, after);
  builder_.SetInsertPoint(after);
}

// Each work-group combines its work-items' accumulators in a tree in scratch
// memory (the work-group size is a power of two); work-item 0 writes the
// group's partial result at partials[group id].
void SpirLowering::finish_reductions() {
  if (!has_reductions_) return;
  std::vector<std::size_t> reductions;
  for (std::size_t p = 0; p < kernel_.params.size(); ++p)
    if (kernel_.params[p].is_reduction()) reductions.push_back(p);
  auto* i64 = builder_.getInt64Ty();
  auto slot = [&](std::size_t p, llvm::Value* at) {
    return builder_.CreateInBoundsGEP(memory_type(kernel_.params[p].type), scratch_[p], at);
  };
  auto barrier = [&] {
    call_builtin(mangled("barrier", "j"), builder_.getVoidTy(), {builder_.getInt32(kLocalMemFence)}, true);
  };

  llvm::Value* lane = work_item("get_local_id", 0);
  llvm::Value* size = work_item("get_local_size", 0);
  for (auto p : reductions) {
    llvm::AllocaInst* accumulator = params_[p].accumulator;
    auto* value = builder_.CreateLoad(accumulator->getAllocatedType(), accumulator);
    builder_.CreateStore(to_memory(value, kernel_.params[p].type), slot(p, lane));
  }
  barrier();

  auto* half_of_size = builder_.CreateLShr(size, 1, "half");
  auto* before = builder_.GetInsertBlock();
  auto* step = llvm::BasicBlock::Create(context_, "tree", function_);
  auto* fold = llvm::BasicBlock::Create(context_, "tree.fold", function_);
  auto* latch = llvm::BasicBlock::Create(context_, "tree.next", function_);
  auto* write = llvm::BasicBlock::Create(context_, "write", function_);
  auto* written = llvm::BasicBlock::Create(context_, "written", function_);
  auto* publish = llvm::BasicBlock::Create(context_, "publish", function_);
  builder_.CreateCondBr(builder_.CreateICmpNE(half_of_size, llvm::ConstantInt::get(i64, 0)), step, publish);

  builder_.SetInsertPoint(step);
  auto* half = builder_.CreatePHI(i64, 2, "half");
  half->addIncoming(half_of_size, before);
  builder_.CreateCondBr(builder_.CreateICmpULT(lane, half), fold, latch);

  builder_.SetInsertPoint(fold);
  for (auto p : reductions) {
    const ir::Param& param = kernel_.params[p];
    llvm::Type* memory = memory_type(param.type);
    auto* mine_address = slot(p, lane);
    auto* mine = from_memory(builder_.CreateLoad(memory, mine_address), param.type);
    auto* other = from_memory(builder_.CreateLoad(memory, slot(p, builder_.CreateAdd(lane, half))), param.type);
    builder_.CreateStore(to_memory(combine(param.reduce, param.type, mine, other), param.type), mine_address);
  }
  builder_.CreateBr(latch);

  builder_.SetInsertPoint(latch);
  barrier();
  auto* next_half = builder_.CreateLShr(half, 1, "half.next");
  half->addIncoming(next_half, latch);
  builder_.CreateCondBr(builder_.CreateICmpNE(next_half, llvm::ConstantInt::get(i64, 0)), step, publish);

  builder_.SetInsertPoint(publish);
  llvm::Value* group = work_item("get_group_id", 0);
  builder_.CreateCondBr(builder_.CreateICmpEQ(lane, llvm::ConstantInt::get(i64, 0)), write, written);
  builder_.SetInsertPoint(write);
  for (auto p : reductions) {
    llvm::Type* memory = memory_type(kernel_.params[p].type);
    auto* total = builder_.CreateLoad(memory, slot(p, llvm::ConstantInt::get(i64, 0)));
    builder_.CreateStore(total, builder_.CreateInBoundsGEP(memory, params_[p].partial, group));
  }
  builder_.CreateBr(written);
  builder_.SetInsertPoint(written);
}

// ---- atomics ----------------------------------------------------------------

void SpirLowering::emit_atomic_add(llvm::Value* address, llvm::Value* value, ScalarType type) {
  const auto align = module_.getDataLayout().getABITypeAlign(value->getType());
  if (!ir::is_float(type)) {
    builder_.CreateAtomicRMW(llvm::AtomicRMWInst::Add, address, value, align, llvm::AtomicOrdering::Monotonic);
    return;
  }
  // A compare-and-swap loop on the element's bits: read, add, and publish
  // the sum unless another work-item changed the element in between.
  auto* bits_type = builder_.getIntNTy(type == ScalarType::F32 ? 32 : 64);
  auto* bits_address = builder_.CreateBitCast(address, bits_type->getPointerTo(kGlobal));
  auto* first = builder_.CreateLoad(bits_type, bits_address, "seen");
  auto* before = builder_.GetInsertBlock();
  auto* retry = llvm::BasicBlock::Create(context_, "atomic.retry", function_);
  auto* done = llvm::BasicBlock::Create(context_, "atomic.done", function_);
  builder_.CreateBr(retry);
  builder_.SetInsertPoint(retry);
  auto* seen = builder_.CreatePHI(bits_type, 2, "expected");
  seen->addIncoming(first, before);
  auto* sum = builder_.CreateFAdd(builder_.CreateBitCast(seen, value->getType()), value);
  auto* exchange = builder_.CreateAtomicCmpXchg(bits_address, seen, builder_.CreateBitCast(sum, bits_type), align,
                                                llvm::AtomicOrdering::Monotonic, llvm::AtomicOrdering::Monotonic);
  auto* found = builder_.CreateExtractValue(exchange, 0, "found");
  seen->addIncoming(found, retry);
  builder_.CreateCondBr(builder_.CreateExtractValue(exchange, 1, "stored"), done, retry);
  builder_.SetInsertPoint(done);
}

// ---- legalization -----------------------------------------------------------

namespace {

// `name` called with `args` as an OpenCL built-in (spir_func, no side effects).
llvm::Value* builtin_call(llvm::IRBuilder<>& builder, llvm::Module& module, const std::string& name,
                          const std::vector<llvm::Value*>& args) {
  std::vector<llvm::Type*> types;
  for (auto* arg : args) types.push_back(arg->getType());
  auto callee = module.getOrInsertFunction(name, llvm::FunctionType::get(args[0]->getType(), types, false));
  auto* function = llvm::cast<llvm::Function>(callee.getCallee());
  function->setCallingConv(llvm::CallingConv::SPIR_FUNC);
  function->addFnAttr(llvm::Attribute::NoUnwind);
  function->addFnAttr(llvm::Attribute::ReadNone);
  function->addFnAttr(llvm::Attribute::WillReturn);
  auto* call = builder.CreateCall(callee, args);
  call->setCallingConv(llvm::CallingConv::SPIR_FUNC);
  call->setAttributes(function->getAttributes());
  return call;
}

// x converted to integer type `to`: toward zero, saturating, NaN gives 0,
// without ever converting a value out of range.
llvm::Value* saturating_float_to_int(llvm::IRBuilder<>& builder, llvm::Value* x, llvm::IntegerType* to) {
  const unsigned width = to->getBitWidth();
  auto* float_type = x->getType();
  // -2^(width-1) and 2^(width-1) are powers of two: exact in any float type.
  auto* lowest = llvm::ConstantFP::get(float_type, -std::ldexp(1.0, static_cast<int>(width) - 1));
  auto* past_highest = llvm::ConstantFP::get(float_type, std::ldexp(1.0, static_cast<int>(width) - 1));
  auto* is_nan = builder.CreateFCmpUNO(x, x, "is_nan");
  auto* below = builder.CreateFCmpOLE(x, lowest, "below");
  auto* above = builder.CreateFCmpOGE(x, past_highest, "above");
  auto* outside = builder.CreateOr(is_nan, builder.CreateOr(below, above));
  auto* safe = builder.CreateSelect(outside, llvm::ConstantFP::get(float_type, 0.0), x);
  llvm::Value* result = builder.CreateFPToSI(safe, to);
  result = builder.CreateSelect(above, llvm::ConstantInt::get(to, llvm::APInt::getSignedMaxValue(width)), result);
  result = builder.CreateSelect(below, llvm::ConstantInt::get(to, llvm::APInt::getSignedMinValue(width)), result);
  return builder.CreateSelect(is_nan, llvm::ConstantInt::get(to, 0), result);
}

// The replacement of intrinsic call `call`, or null when it needs none.
llvm::Value* legal_replacement(llvm::IntrinsicInst& call, llvm::Module& module) {
  llvm::IRBuilder<> builder(&call);
  auto arg = [&](unsigned k) { return call.getArgOperand(k); };
  auto suffix = [&](llvm::Type* type) { return std::string(type->isFloatTy() ? "f" : "d"); };
  switch (call.getIntrinsicID()) {
    case llvm::Intrinsic::smin: return builder.CreateSelect(builder.CreateICmpSLT(arg(0), arg(1)), arg(0), arg(1));
    case llvm::Intrinsic::smax: return builder.CreateSelect(builder.CreateICmpSGT(arg(0), arg(1)), arg(0), arg(1));
    case llvm::Intrinsic::abs: {
      // Wrapping: abs(MIN) is MIN.
      auto* zero = llvm::ConstantInt::get(arg(0)->getType(), 0);
      return builder.CreateSelect(builder.CreateICmpSLT(arg(0), zero), builder.CreateSub(zero, arg(0)), arg(0));
    }
    case llvm::Intrinsic::minnum: {
      const std::string s = suffix(arg(0)->getType());
      return builtin_call(builder, module, mangled("fmin", s + s), {arg(0), arg(1)});
    }
    case llvm::Intrinsic::maxnum: {
      const std::string s = suffix(arg(0)->getType());
      return builtin_call(builder, module, mangled("fmax", s + s), {arg(0), arg(1)});
    }
    case llvm::Intrinsic::fptosi_sat:
      return saturating_float_to_int(builder, arg(0), llvm::cast<llvm::IntegerType>(call.getType()));
    default: return nullptr;
  }
}

}  // namespace

void legalize_for_spirv(llvm::Module& module) {
  std::vector<llvm::IntrinsicInst*> calls;
  for (auto& function : module)
    for (auto& block : function)
      for (auto& instruction : block)
        if (auto* call = llvm::dyn_cast<llvm::IntrinsicInst>(&instruction)) calls.push_back(call);
  for (auto* call : calls) {
    if (llvm::Value* replacement = legal_replacement(*call, module)) {
      replacement->takeName(call);
      call->replaceAllUsesWith(replacement);
      call->eraseFromParent();
    }
  }
  // Declarations of intrinsics nothing calls any more.
  std::vector<llvm::Function*> unused;
  for (auto& function : module)
    if (function.isIntrinsic() && function.use_empty()) unused.push_back(&function);
  for (auto* function : unused) function->eraseFromParent();
  // SPIR-V wants every block after the blocks that dominate it; the
  // lowering appends blocks as it needs them (a loop's exit before the
  // blocks of its body). Reverse post-order has that property.
  for (auto& function : module) {
    if (function.isDeclaration()) continue;
    llvm::removeUnreachableBlocks(function);
    llvm::ReversePostOrderTraversal<llvm::Function*> order(&function);
    llvm::BasicBlock* previous = nullptr;
    for (llvm::BasicBlock* block : order) {
      if (previous) block->moveAfter(previous);
      previous = block;
    }
  }
}

}  // namespace canopy::jit
