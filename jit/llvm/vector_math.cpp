#include "internal/vector_math.hpp"

#include <string>

#include <llvm/IR/Intrinsics.h>

namespace canopy::jit {

namespace {

// ln 2 in two parts: the high part has 32 trailing zero bits, so k * hi is
// exact for every k this code uses (|k| < 2^11), and x - k * hi is exact too.
constexpr double kLn2Hi = 6.93147180369123816490e-01;
constexpr double kLn2Lo = 1.90821492927058770002e-10;
constexpr double kInvLn2 = 1.44269504088896338700e+00;
// Past these, e^x is infinity or below half the smallest denormal double,
// and the scaling below stays within the exponent range of its two halves.
constexpr double kLowest = -746.0, kHighest = 710.0;

llvm::Function* exp_function(llvm::Module& module, llvm::VectorType* type) {
  const bool is_float = type->getElementType()->isFloatTy();
  const auto lanes = static_cast<unsigned>(type->getElementCount().getFixedValue());
  const std::string name = std::string("canopy.exp.") + (is_float ? "f32" : "f64") + ".x" + std::to_string(lanes);
  if (llvm::Function* existing = module.getFunction(name)) return existing;

  llvm::LLVMContext& context = module.getContext();
  auto* function = llvm::Function::Create(llvm::FunctionType::get(type, {type}, false),
                                          llvm::GlobalValue::InternalLinkage, name, module);
  function->setDoesNotAccessMemory();
  function->setDoesNotThrow();
  function->setWillReturn();
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(context, "entry", function));

  auto* f64 = llvm::VectorType::get(b.getDoubleTy(), lanes, false);
  auto* i64 = llvm::VectorType::get(b.getInt64Ty(), lanes, false);
  auto constant = [&](double v) { return llvm::ConstantFP::get(f64, v); };
  auto integer = [&](std::int64_t v) { return llvm::ConstantInt::get(i64, v, true); };
  auto multiply_add = [&](llvm::Value* a, llvm::Value* m, llvm::Value* c) {
    return b.CreateIntrinsic(llvm::Intrinsic::fmuladd, {f64}, {a, m, c});
  };

  llvm::Value* x = function->getArg(0);
  if (is_float) x = b.CreateFPExt(x, f64);
  // NaN is clamped like any number here and put back at the end.
  llvm::Value* clamped = b.CreateBinaryIntrinsic(llvm::Intrinsic::minnum,
                                                 b.CreateBinaryIntrinsic(llvm::Intrinsic::maxnum, x, constant(kLowest)),
                                                 constant(kHighest));
  llvm::Value* k = b.CreateUnaryIntrinsic(llvm::Intrinsic::rint, b.CreateFMul(clamped, constant(kInvLn2)));
  llvm::Value* minus_k = b.CreateFNeg(k);
  llvm::Value* r = multiply_add(minus_k, constant(kLn2Hi), clamped);
  r = multiply_add(minus_k, constant(kLn2Lo), r);

  // e^r = 1 + r + r^2 (1/2! + r/3! + ... + r^(n-2)/n!): the terms past n are
  // below 2^-60 of the result for double (n = 13), 2^-30 for float (n = 8).
  const int degree = is_float ? 8 : 13;
  double factorial = 1;
  for (int n = 2; n <= degree; ++n) factorial *= n;
  llvm::Value* t = constant(1.0 / factorial);
  for (int n = degree - 1; n >= 2; --n) {
    factorial /= n + 1;
    t = multiply_add(t, r, constant(1.0 / factorial));
  }
  llvm::Value* y = b.CreateFAdd(constant(1.0), multiply_add(t, b.CreateFMul(r, r), r));

  // y * 2^k as y * 2^k1 * 2^k2: each half is a normal power of two, the first
  // product is exact and the second rounds once (to infinity, or a denormal).
  llvm::Value* k_int = b.CreateFPToSI(k, i64);
  llvm::Value* k1 = b.CreateAShr(k_int, integer(1));
  llvm::Value* k2 = b.CreateSub(k_int, k1);
  auto power_of_two = [&](llvm::Value* e) {
    return b.CreateBitCast(b.CreateShl(b.CreateAdd(e, integer(1023)), integer(52)), f64);
  };
  llvm::Value* result = b.CreateFMul(b.CreateFMul(y, power_of_two(k1)), power_of_two(k2));
  result = b.CreateSelect(b.CreateFCmpUNO(x, x), x, result);
  if (is_float) result = b.CreateFPTrunc(result, type);
  b.CreateRet(result);
  return function;
}

}  // namespace

llvm::Value* emit_vector_exp(llvm::IRBuilder<>& builder, llvm::Value* x) {
  auto* type = llvm::cast<llvm::VectorType>(x->getType());
  llvm::Module& module = *builder.GetInsertBlock()->getModule();
  return builder.CreateCall(exp_function(module, type), {x});
}

}  // namespace canopy::jit
