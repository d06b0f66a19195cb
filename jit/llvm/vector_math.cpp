#include "internal/vector_math.hpp"

#include <limits>
#include <string>
#include <vector>

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
constexpr double kLn2 = 6.93147180559945286227e-01;
// pi/2 as 0x1.921fb544p+0 + 0x1.0b4611a6p-34 + 0x1.3198a2e037073p-69, and
// 2/pi. Below kTrigLimit, k = rint(x 2/pi) < 2^20.
constexpr double kPiOver2Hi = 0x1.921fb544p+0, kPiOver2Mid = 0x1.0b4611a6p-34, kPiOver2Lo = 0x1.3198a2e037073p-69;
constexpr double kTwoOverPi = 6.36619772367581382433e-01;
constexpr double kTrigLimit = 0x1p19;

// An internal function `name` of one vector argument, computed in lanes of
// double, with the helpers its body needs. Null `function` when the module
// already has it (then `existing` is it).
struct VectorFunction {
  VectorFunction(llvm::Module& module, llvm::VectorType* type, const std::string& base)
      : is_float(type->getElementType()->isFloatTy()),
        lanes(static_cast<unsigned>(type->getElementCount().getFixedValue())),
        name(base + (is_float ? ".f32" : ".f64") + ".x" + std::to_string(lanes)),
        existing(module.getFunction(name)),
        b(module.getContext()) {
    if (existing) return;
    function = llvm::Function::Create(llvm::FunctionType::get(type, {type}, false), llvm::GlobalValue::InternalLinkage,
                                      name, module);
    function->setDoesNotAccessMemory();
    function->setDoesNotThrow();
    function->setWillReturn();
    b.SetInsertPoint(llvm::BasicBlock::Create(module.getContext(), "entry", function));
    f64 = llvm::VectorType::get(b.getDoubleTy(), lanes, false);
    i64 = llvm::VectorType::get(b.getInt64Ty(), lanes, false);
    argument = function->getArg(0);
    x = is_float ? b.CreateFPExt(argument, f64) : argument;
  }

  llvm::Constant* constant(double v) const { return llvm::ConstantFP::get(f64, v); }
  llvm::Constant* integer(std::int64_t v) const { return llvm::ConstantInt::get(i64, v, true); }
  llvm::Value* multiply_add(llvm::Value* a, llvm::Value* m, llvm::Value* c) {
    return b.CreateIntrinsic(llvm::Intrinsic::fmuladd, {f64}, {a, m, c});
  }
  // c[0] + z (c[1] + z (c[2] + ...)), Horner's rule.
  llvm::Value* polynomial(llvm::Value* z, const std::vector<double>& c) {
    llvm::Value* p = constant(c.back());
    for (std::size_t k = c.size() - 1; k-- > 0;) p = multiply_add(p, z, constant(c[k]));
    return p;
  }
  // The integer n (a double, |n| < 2^51) in the low bits of an int64: adding
  // 1.5 * 2^52 puts n, in two's complement, in the significand's low bits.
  llvm::Value* low_bits_of(llvm::Value* n, double offset = 0) {
    return b.CreateBitCast(b.CreateFAdd(n, constant(0x1.8p52 + offset)), i64);
  }
  // 2^n for an integer n (a double) in the range of normal doubles.
  llvm::Value* power_of_two(llvm::Value* n) {
    return b.CreateBitCast(b.CreateShl(low_bits_of(n, 1023), integer(52)), f64);
  }
  // Rounds a double result back to the argument's type and returns it.
  llvm::Function* finish(llvm::Value* result) {
    if (is_float) result = b.CreateFPTrunc(result, argument->getType());
    b.CreateRet(result);
    return function;
  }

  const bool is_float;
  const unsigned lanes;
  const std::string name;
  llvm::Function* const existing;
  llvm::IRBuilder<> b;
  llvm::Function* function = nullptr;
  llvm::VectorType* f64 = nullptr;
  llvm::VectorType* i64 = nullptr;
  llvm::Value* argument = nullptr;  // as given
  llvm::Value* x = nullptr;         // in double
};

llvm::Function* exp_function(llvm::Module& module, llvm::VectorType* type) {
  VectorFunction v(module, type, "canopy.exp");
  if (v.existing) return v.existing;
  llvm::IRBuilder<>& b = v.b;
  // NaN is clamped like any number here and put back at the end.
  llvm::Value* clamped = b.CreateBinaryIntrinsic(
      llvm::Intrinsic::minnum, b.CreateBinaryIntrinsic(llvm::Intrinsic::maxnum, v.x, v.constant(kLowest)),
      v.constant(kHighest));
  llvm::Value* k = b.CreateUnaryIntrinsic(llvm::Intrinsic::rint, b.CreateFMul(clamped, v.constant(kInvLn2)));
  llvm::Value* minus_k = b.CreateFNeg(k);
  llvm::Value* r = v.multiply_add(minus_k, v.constant(kLn2Hi), clamped);
  r = v.multiply_add(minus_k, v.constant(kLn2Lo), r);

  // e^r = 1 + r + r^2 (1/2! + r/3! + ... + r^(n-2)/n!): the terms past n are
  // below 2^-60 of the result for double (n = 13), 2^-30 for float (n = 8).
  const int degree = v.is_float ? 8 : 13;
  std::vector<double> coefficients;
  double factorial = 2;
  for (int n = 2; n <= degree; factorial *= ++n) coefficients.push_back(1.0 / factorial);
  llvm::Value* t = v.polynomial(r, coefficients);
  llvm::Value* y = b.CreateFAdd(v.constant(1.0), v.multiply_add(t, b.CreateFMul(r, r), r));

  // y * 2^k as y * 2^k1 * 2^k2: each half is a normal power of two, the first
  // product is exact and the second rounds once (to infinity, or a denormal).
  // k stays a double (converting vectors of double to int64 takes a call per
  // lane where AVX-512 is missing).
  llvm::Value* k1 = b.CreateUnaryIntrinsic(llvm::Intrinsic::floor, b.CreateFMul(k, v.constant(0.5)));
  llvm::Value* k2 = b.CreateFSub(k, k1);
  llvm::Value* result = b.CreateFMul(b.CreateFMul(y, v.power_of_two(k1)), v.power_of_two(k2));
  return v.finish(b.CreateSelect(b.CreateFCmpUNO(v.x, v.x), v.x, result));
}

// Only for float, whose every value (denormals included) is a normal double:
// no scaling of tiny arguments is needed, and double's 53 bits leave the
// float result one rounding from the exact one.
llvm::Function* log_function(llvm::Module& module, llvm::VectorType* type) {
  VectorFunction v(module, type, "canopy.log");
  if (v.existing) return v.existing;
  llvm::IRBuilder<>& b = v.b;
  // x = 2^e m with m in [sqrt(1/2), sqrt(2)). The biased exponent becomes a
  // double through its bits (or'd into those of 2^52), not through a
  // conversion of int64 lanes, which AVX2 lacks.
  llvm::Value* bits = b.CreateBitCast(v.x, v.i64);
  llvm::Value* biased = b.CreateFSub(
      b.CreateBitCast(b.CreateOr(b.CreateLShr(bits, v.integer(52)), v.integer(std::int64_t(0x433) << 52)), v.f64),
      v.constant(0x1p52));  // x > 0: no sign bit
  llvm::Value* m = b.CreateBitCast(
      b.CreateOr(b.CreateAnd(bits, v.integer((std::int64_t(1) << 52) - 1)), v.integer(std::int64_t(1023) << 52)),
      v.f64);
  llvm::Value* high = b.CreateFCmpOGT(m, v.constant(1.4142135623730951));
  m = b.CreateSelect(high, b.CreateFMul(m, v.constant(0.5)), m);
  llvm::Value* e = b.CreateFSub(biased, b.CreateSelect(high, v.constant(1022.0), v.constant(1023.0)));
  // log m = 2 atanh(s) = 2s (1 + s^2/3 + s^4/5 + ...) with s = (m - 1)/(m + 1),
  // |s| <= 0.1716: the terms past s^10/11 are below 2^-34 of the sum.
  llvm::Value* f = b.CreateFSub(m, v.constant(1.0));  // exact
  llvm::Value* s = b.CreateFDiv(f, b.CreateFAdd(m, v.constant(1.0)));
  llvm::Value* z = b.CreateFMul(s, s);
  llvm::Value* series = v.polynomial(z, {1.0 / 3, 1.0 / 5, 1.0 / 7, 1.0 / 9, 1.0 / 11});
  llvm::Value* two_s = b.CreateFAdd(s, s);
  llvm::Value* log_m = v.multiply_add(b.CreateFMul(two_s, z), series, two_s);
  llvm::Value* result = v.multiply_add(e, v.constant(kLn2), log_m);
  // log(+inf) = +inf, log(+-0) = -inf, log(x < 0) and log(NaN) = NaN.
  const double infinity = std::numeric_limits<double>::infinity();
  result = b.CreateSelect(b.CreateFCmpOEQ(v.x, v.constant(infinity)), v.constant(infinity), result);
  result = b.CreateSelect(b.CreateFCmpOEQ(v.x, v.constant(0.0)), v.constant(-infinity), result);
  result = b.CreateSelect(b.CreateFCmpULT(v.x, v.constant(0.0)), v.constant(std::numeric_limits<double>::quiet_NaN()),
                          result);
  return v.finish(result);
}

// Only for float, and only where |x| < kTrigLimit (the caller sends other
// lanes to the C library): x = k pi/2 + r, |r| <= pi/4, with pi/2 in three
// parts whose first two have 33 significant bits, so that for k < 2^20 the
// products k * part are exact and r keeps double's precision even where x is
// close to a multiple of pi/2.
llvm::Function* sin_cos_function(llvm::Module& module, llvm::VectorType* type, bool cosine) {
  VectorFunction v(module, type, cosine ? "canopy.cos" : "canopy.sin");
  if (v.existing) return v.existing;
  llvm::IRBuilder<>& b = v.b;
  llvm::Value* k = b.CreateUnaryIntrinsic(llvm::Intrinsic::rint, b.CreateFMul(v.x, v.constant(kTwoOverPi)));
  llvm::Value* minus_k = b.CreateFNeg(k);
  llvm::Value* r = b.CreateFSub(v.x, b.CreateFMul(k, v.constant(kPiOver2Hi)));  // exact
  r = v.multiply_add(minus_k, v.constant(kPiOver2Mid), r);
  r = v.multiply_add(minus_k, v.constant(kPiOver2Lo), r);
  // Taylor polynomials on |r| <= pi/4: the first term left out is below
  // 2^-36 of the result for both.
  llvm::Value* z = b.CreateFMul(r, r);
  llvm::Value* sin_r = v.multiply_add(
      b.CreateFMul(r, z), v.polynomial(z, {-1.0 / 6, 1.0 / 120, -1.0 / 5040, 1.0 / 362880, -1.0 / 39916800}), r);
  llvm::Value* cos_r =
      v.multiply_add(z, v.polynomial(z, {-1.0 / 2, 1.0 / 24, -1.0 / 720, 1.0 / 40320, -1.0 / 3628800, 1.0 / 479001600}),
                     v.constant(1.0));
  // sin x by quadrant: sin r, cos r, -sin r, -cos r; cos x is one quadrant on.
  llvm::Value* quadrant = v.low_bits_of(k, cosine ? 1 : 0);
  llvm::Value* odd = b.CreateICmpNE(b.CreateAnd(quadrant, v.integer(1)), v.integer(0));
  llvm::Value* negative = b.CreateICmpNE(b.CreateAnd(quadrant, v.integer(2)), v.integer(0));
  llvm::Value* result = b.CreateSelect(odd, cos_r, sin_r);
  result = b.CreateSelect(negative, b.CreateFNeg(result), result);
  // sin(-0) = -0 (x - 0 * pi/2 above is +0).
  if (!cosine) result = b.CreateSelect(b.CreateFCmpOEQ(v.x, v.constant(0.0)), v.x, result);
  return v.finish(result);
}

llvm::Value* call(llvm::IRBuilder<>& builder, llvm::Function* (*make)(llvm::Module&, llvm::VectorType*),
                  llvm::Value* x) {
  llvm::Module& module = *builder.GetInsertBlock()->getModule();
  return builder.CreateCall(make(module, llvm::cast<llvm::VectorType>(x->getType())), {x});
}

}  // namespace

llvm::Value* emit_vector_exp(llvm::IRBuilder<>& builder, llvm::Value* x) { return call(builder, exp_function, x); }

llvm::Value* emit_vector_log(llvm::IRBuilder<>& builder, llvm::Value* x) { return call(builder, log_function, x); }

llvm::Value* emit_vector_sin(llvm::IRBuilder<>& builder, llvm::Value* x) {
  return call(
      builder, [](llvm::Module& m, llvm::VectorType* t) { return sin_cos_function(m, t, false); }, x);
}

llvm::Value* emit_vector_cos(llvm::IRBuilder<>& builder, llvm::Value* x) {
  return call(
      builder, [](llvm::Module& m, llvm::VectorType* t) { return sin_cos_function(m, t, true); }, x);
}

llvm::Value* vector_trig_unreduced(llvm::IRBuilder<>& builder, llvm::Value* x) {
  llvm::Value* magnitude = builder.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
  return builder.CreateFCmpUGE(magnitude, llvm::ConstantFP::get(x->getType(), kTrigLimit));
}

}  // namespace canopy::jit
