#include "internal/vector_math.hpp"

#include <cmath>
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
// The same for float lanes: ln 2 as a float of 15 significant bits (k * hi is
// exact for |k| < 2^9) and the float nearest the rest (ln 2 - hi - lo is
// 5.5e-14), and the range past which e^x is a float infinity or rounds to 0.
constexpr double kLn2HiF = 0x1.62e4p-1, kLn2LoF = 0x1.7f7d1cp-20;
constexpr double kLowestF = -104.0, kHighestF = 89.0;
// pi/2 as 0x1.921fb544p+0 + 0x1.0b4611a6p-34 + 0x1.3198a2e037073p-69, and
// 2/pi. Below kTrigLimit, k = rint(x 2/pi) < 2^20.
constexpr double kPiOver2Hi = 0x1.921fb544p+0, kPiOver2Mid = 0x1.0b4611a6p-34, kPiOver2Lo = 0x1.3198a2e037073p-69;
constexpr double kTwoOverPi = 6.36619772367581382433e-01;
constexpr double kTrigLimit = 0x1p19;
// pi/2 as three floats (the nearest float, the float nearest the rest, and
// again: 1.1e-23 is left), for float lanes below kTrigLimitF, where k < 2^11.
constexpr double kPiOver2HiF = 0x1.921fb6p+0, kPiOver2MidF = -0x1.777a5cp-25, kPiOver2LoF = -0x1.ee59dap-50;
constexpr double kTrigLimitF = 0x1p12;

// How a function computes: in lanes of double (a float argument widened,
// the result rounded once at the end) or in lanes of the argument's own type.
enum class Work { Double, Own };

// An internal function `name` of one vector argument, computed in lanes of
// `work` (double, or the argument's own type), with the helpers its body
// needs. Null `function` when the module already has it (then `existing` is
// it).
struct VectorFunction {
  VectorFunction(llvm::Module& module, llvm::VectorType* type, const std::string& base, Work work_in = Work::Double)
      : is_float(type->getElementType()->isFloatTy()),
        in_double(!is_float || work_in == Work::Double),
        lanes(static_cast<unsigned>(type->getElementCount().getFixedValue())),
        name(base + (is_float ? (in_double ? ".f32d" : ".f32") : ".f64") + ".x" + std::to_string(lanes)),
        existing(module.getFunction(name)),
        b(module.getContext()) {
    if (existing) return;
    function = llvm::Function::Create(llvm::FunctionType::get(type, {type}, false), llvm::GlobalValue::InternalLinkage,
                                      name, module);
    function->setDoesNotAccessMemory();
    function->setDoesNotThrow();
    function->setWillReturn();
    b.SetInsertPoint(llvm::BasicBlock::Create(module.getContext(), "entry", function));
    work = in_double ? llvm::VectorType::get(b.getDoubleTy(), lanes, false) : type;
    bits = llvm::VectorType::get(in_double ? b.getInt64Ty() : b.getInt32Ty(), lanes, false);
    argument = function->getArg(0);
    x = is_float && in_double ? b.CreateFPExt(argument, work) : argument;
  }

  llvm::Constant* constant(double v) const { return llvm::ConstantFP::get(work, v); }
  llvm::Constant* integer(std::int64_t v) const { return llvm::ConstantInt::get(bits, v, true); }
  llvm::Value* multiply_add(llvm::Value* a, llvm::Value* m, llvm::Value* c) {
    return b.CreateIntrinsic(llvm::Intrinsic::fmuladd, {work}, {a, m, c});
  }
  // c[0] + z (c[1] + z (c[2] + ...)), Horner's rule.
  llvm::Value* polynomial(llvm::Value* z, const std::vector<double>& c) {
    llvm::Value* p = constant(c.back());
    for (std::size_t k = c.size() - 1; k-- > 0;) p = multiply_add(p, z, constant(c[k]));
    return p;
  }
  // Bits of the significand below its leading one: 52 for double, 23 for float.
  int significand_bits() const { return in_double ? 52 : 23; }
  // The integer n (|n| < 2^51 in double, 2^22 in float) in the low bits of an
  // integer of the same width: adding 1.5 * 2^52 (2^23) puts n, in two's
  // complement, in the significand's low bits.
  llvm::Value* low_bits_of(llvm::Value* n, double offset = 0) {
    return b.CreateBitCast(b.CreateFAdd(n, constant(std::ldexp(1.5, significand_bits()) + offset)), bits);
  }
  // 2^n for an integer n (in the working type) in the range of its normal numbers.
  llvm::Value* power_of_two(llvm::Value* n) {
    return b.CreateBitCast(b.CreateShl(low_bits_of(n, in_double ? 1023 : 127), integer(significand_bits())), work);
  }
  // Rounds a result in double back to the argument's type and returns it.
  llvm::Function* finish(llvm::Value* result) {
    if (is_float && in_double) result = b.CreateFPTrunc(result, argument->getType());
    b.CreateRet(result);
    return function;
  }

  const bool is_float;
  const bool in_double;
  const unsigned lanes;
  const std::string name;
  llvm::Function* const existing;
  llvm::IRBuilder<> b;
  llvm::Function* function = nullptr;
  llvm::VectorType* work = nullptr;  // the lanes' type while computing
  llvm::VectorType* bits = nullptr;  // integers of the same width
  llvm::Value* argument = nullptr;   // as given
  llvm::Value* x = nullptr;          // in `work`
};

llvm::Function* exp_function(llvm::Module& module, llvm::VectorType* type) {
  VectorFunction v(module, type, "canopy.exp", Work::Own);
  if (v.existing) return v.existing;
  llvm::IRBuilder<>& b = v.b;
  const bool wide = v.in_double;
  // NaN is clamped like any number here and put back at the end.
  llvm::Value* clamped = b.CreateBinaryIntrinsic(
      llvm::Intrinsic::minnum,
      b.CreateBinaryIntrinsic(llvm::Intrinsic::maxnum, v.x, v.constant(wide ? kLowest : kLowestF)),
      v.constant(wide ? kHighest : kHighestF));
  llvm::Value* k = b.CreateUnaryIntrinsic(llvm::Intrinsic::rint, b.CreateFMul(clamped, v.constant(kInvLn2)));
  llvm::Value* minus_k = b.CreateFNeg(k);
  llvm::Value* r = v.multiply_add(minus_k, v.constant(wide ? kLn2Hi : kLn2HiF), clamped);
  r = v.multiply_add(minus_k, v.constant(wide ? kLn2Lo : kLn2LoF), r);

  // e^r = 1 + r + r^2 (1/2! + r/3! + ... + r^(n-2)/n!): the terms past n are
  // below 2^-60 of the result for double (n = 13), 2^-27 for float (n = 7).
  const int degree = wide ? 13 : 7;
  std::vector<double> coefficients;
  double factorial = 2;
  for (int n = 2; n <= degree; factorial *= ++n) coefficients.push_back(1.0 / factorial);
  llvm::Value* t = v.polynomial(r, coefficients);
  llvm::Value* y = b.CreateFAdd(v.constant(1.0), v.multiply_add(t, b.CreateFMul(r, r), r));

  // y * 2^k as y * 2^k1 * 2^k2: each half is a normal power of two, the first
  // product is exact and the second rounds once (to infinity, or a denormal).
  // k stays a floating-point number (converting vectors of double to int64
  // takes a call per lane where AVX-512 is missing).
  llvm::Value* k1 = b.CreateUnaryIntrinsic(llvm::Intrinsic::floor, b.CreateFMul(k, v.constant(0.5)));
  llvm::Value* k2 = b.CreateFSub(k, k1);
  llvm::Value* result = b.CreateFMul(b.CreateFMul(y, v.power_of_two(k1)), v.power_of_two(k2));
  return v.finish(b.CreateSelect(b.CreateFCmpUNO(v.x, v.x), v.x, result));
}

// Only for float, in float lanes.
llvm::Function* log_function(llvm::Module& module, llvm::VectorType* type) {
  VectorFunction v(module, type, "canopy.log", Work::Own);
  if (v.existing) return v.existing;
  llvm::IRBuilder<>& b = v.b;
  // A denormal x is scaled by 2^23 into the normal numbers first.
  llvm::Value* tiny = b.CreateFCmpOLT(v.x, v.constant(0x1p-126));
  llvm::Value* normal = b.CreateSelect(tiny, b.CreateFMul(v.x, v.constant(0x1p23)), v.x);
  // x = 2^e m with m in [sqrt(1/2), sqrt(2)), e from the exponent's bits
  // (x > 0: no sign bit).
  llvm::Value* bits = b.CreateBitCast(normal, v.bits);
  llvm::Value* biased = b.CreateSIToFP(b.CreateLShr(bits, v.integer(23)), v.work);
  llvm::Value* m =
      b.CreateBitCast(b.CreateOr(b.CreateAnd(bits, v.integer((1 << 23) - 1)), v.integer(127 << 23)), v.work);
  llvm::Value* high = b.CreateFCmpOGT(m, v.constant(1.41421353816986083984375));
  m = b.CreateSelect(high, b.CreateFMul(m, v.constant(0.5)), m);
  llvm::Value* e = b.CreateFSub(biased, b.CreateSelect(high, v.constant(126.0), v.constant(127.0)));
  e = b.CreateFSub(e, b.CreateSelect(tiny, v.constant(23.0), v.constant(0.0)));
  // With f = m - 1 (exact) and s = f/(2 + f), log m = 2s + s R, where
  // R = 2s^2/3 + 2s^4/5 + ... (|s| <= 0.1716: the terms past 2s^8/9 are below
  // 2^-28 of the sum), and 2s = f - f^2/2 + s f^2/2. So log m = f - (f^2/2 -
  // s (f^2/2 + R)): f is exact and the rest is small, and the roundings of s
  // and of R reach the result shrunk by it.
  llvm::Value* f = b.CreateFSub(m, v.constant(1.0));
  llvm::Value* s = b.CreateFDiv(f, b.CreateFAdd(f, v.constant(2.0)));
  llvm::Value* z = b.CreateFMul(s, s);
  llvm::Value* r = b.CreateFMul(z, v.polynomial(z, {2.0 / 3, 2.0 / 5, 2.0 / 7, 2.0 / 9}));
  llvm::Value* half_f2 = b.CreateFMul(v.constant(0.5), b.CreateFMul(f, f));
  // log x = e ln2 + log m, with e ln2 in two parts: the high one (exact
  // times e) added last.
  llvm::Value* small = v.multiply_add(s, b.CreateFAdd(half_f2, r), b.CreateFMul(e, v.constant(kLn2LoF)));
  llvm::Value* rest = b.CreateFSub(b.CreateFSub(half_f2, small), f);
  llvm::Value* result = b.CreateFSub(b.CreateFMul(e, v.constant(kLn2HiF)), rest);
  // log(+inf) = +inf, log(+-0) = -inf, log(x < 0) and log(NaN) = NaN.
  const double infinity = std::numeric_limits<double>::infinity();
  result = b.CreateSelect(b.CreateFCmpOEQ(v.x, v.constant(infinity)), v.constant(infinity), result);
  result = b.CreateSelect(b.CreateFCmpOEQ(v.x, v.constant(0.0)), v.constant(-infinity), result);
  result = b.CreateSelect(b.CreateFCmpULT(v.x, v.constant(0.0)), v.constant(std::numeric_limits<double>::quiet_NaN()),
                          result);
  return v.finish(result);
}

// sin x or cos x in v's lanes for |x| below the reduction's limit: x = k pi/2
// + r, |r| <= pi/4, with pi/2 in three parts, then Taylor polynomials of sin r
// and cos r, picked and signed by k mod 4. In double (kTrigLimit) the first
// two parts have 33 significant bits, so that for k < 2^20 the products
// k * part are exact and r keeps double's precision even where x is close to
// a multiple of pi/2; in float (kTrigLimitF) each part is the float nearest
// what the ones before leave, and the fused multiply-adds keep each step
// exact but for one rounding of a number already near r.
llvm::Value* sin_cos_of(VectorFunction& v, bool cosine) {
  llvm::IRBuilder<>& b = v.b;
  const bool wide = v.in_double;
  llvm::Value* k = b.CreateUnaryIntrinsic(llvm::Intrinsic::rint, b.CreateFMul(v.x, v.constant(kTwoOverPi)));
  llvm::Value* minus_k = b.CreateFNeg(k);
  // x - k part: in double either way (the product is exact); in float it
  // must be fused, so llvm.fma rather than fmuladd, which LLVM may split.
  auto reduce = [&](double part, llvm::Value* from) -> llvm::Value* {
    if (wide) return v.multiply_add(minus_k, v.constant(part), from);
    return b.CreateIntrinsic(llvm::Intrinsic::fma, {v.work}, {minus_k, v.constant(part), from});
  };
  llvm::Value* r = reduce(wide ? kPiOver2Hi : kPiOver2HiF, v.x);
  r = reduce(wide ? kPiOver2Mid : kPiOver2MidF, r);
  r = reduce(wide ? kPiOver2Lo : kPiOver2LoF, r);
  // Taylor polynomials on |r| <= pi/4: the first term left out is below
  // 2^-36 of the result for both in double, 2^-28 in float.
  std::vector<double> sin_terms = {-1.0 / 6, 1.0 / 120, -1.0 / 5040, 1.0 / 362880};
  std::vector<double> cos_terms = {-1.0 / 2, 1.0 / 24, -1.0 / 720, 1.0 / 40320, -1.0 / 3628800};
  if (wide) {
    sin_terms.push_back(-1.0 / 39916800);
    cos_terms.push_back(1.0 / 479001600);
  }
  llvm::Value* z = b.CreateFMul(r, r);
  llvm::Value* sin_r = v.multiply_add(b.CreateFMul(r, z), v.polynomial(z, sin_terms), r);
  llvm::Value* cos_r = v.multiply_add(z, v.polynomial(z, cos_terms), v.constant(1.0));
  // sin x by quadrant: sin r, cos r, -sin r, -cos r; cos x is one quadrant on.
  llvm::Value* quadrant = v.low_bits_of(k, cosine ? 1 : 0);
  llvm::Value* odd = b.CreateICmpNE(b.CreateAnd(quadrant, v.integer(1)), v.integer(0));
  llvm::Value* negative = b.CreateICmpNE(b.CreateAnd(quadrant, v.integer(2)), v.integer(0));
  llvm::Value* result = b.CreateSelect(odd, cos_r, sin_r);
  result = b.CreateSelect(negative, b.CreateFNeg(result), result);
  // sin(-0) = -0 (x - 0 * pi/2 above is +0).
  if (!cosine) result = b.CreateSelect(b.CreateFCmpOEQ(v.x, v.constant(0.0)), v.x, result);
  return result;
}

// Only for float, and only where |x| < kTrigLimit (the caller sends other
// lanes to the C library), in double lanes.
llvm::Function* sin_cos_in_double(llvm::Module& module, llvm::VectorType* type, bool cosine) {
  VectorFunction v(module, type, cosine ? "canopy.cos" : "canopy.sin", Work::Double);
  if (v.existing) return v.existing;
  return v.finish(sin_cos_of(v, cosine));
}

// The same in float lanes where every lane is below kTrigLimitF, else in
// double lanes for the lanes past it. The float reduction needs a fused
// multiply-add: its first part has 24 significant bits.
llvm::Function* sin_cos_function(llvm::Module& module, llvm::VectorType* type, bool cosine) {
  VectorFunction v(module, type, cosine ? "canopy.cos" : "canopy.sin", Work::Own);
  if (v.existing) return v.existing;
  llvm::IRBuilder<>& b = v.b;
  llvm::Value* in_float = sin_cos_of(v, cosine);
  llvm::Value* far = b.CreateFCmpUGE(b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, v.x), v.constant(kTrigLimitF));
  llvm::Value* any_far = b.CreateICmpNE(b.CreateBitCast(far, b.getIntNTy(v.lanes)), b.getIntN(v.lanes, 0));
  llvm::BasicBlock* entry = b.GetInsertBlock();
  llvm::BasicBlock* wide = llvm::BasicBlock::Create(module.getContext(), "far", v.function);
  llvm::BasicBlock* done = llvm::BasicBlock::Create(module.getContext(), "done", v.function);
  b.CreateCondBr(any_far, wide, done);

  b.SetInsertPoint(wide);
  llvm::Value* in_double = b.CreateCall(sin_cos_in_double(module, type, cosine), {v.argument});
  llvm::Value* mixed = b.CreateSelect(far, in_double, in_float);
  b.CreateBr(done);

  b.SetInsertPoint(done);
  llvm::PHINode* result = b.CreatePHI(type, 2);
  result->addIncoming(in_float, entry);
  result->addIncoming(mixed, wide);
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

llvm::Value* emit_vector_sin(llvm::IRBuilder<>& builder, llvm::Value* x, bool fused_multiply_add) {
  if (fused_multiply_add)
    return call(
        builder, [](llvm::Module& m, llvm::VectorType* t) { return sin_cos_function(m, t, false); }, x);
  return call(
      builder, [](llvm::Module& m, llvm::VectorType* t) { return sin_cos_in_double(m, t, false); }, x);
}

llvm::Value* emit_vector_cos(llvm::IRBuilder<>& builder, llvm::Value* x, bool fused_multiply_add) {
  if (fused_multiply_add)
    return call(
        builder, [](llvm::Module& m, llvm::VectorType* t) { return sin_cos_function(m, t, true); }, x);
  return call(
      builder, [](llvm::Module& m, llvm::VectorType* t) { return sin_cos_in_double(m, t, true); }, x);
}

llvm::Value* vector_trig_unreduced(llvm::IRBuilder<>& builder, llvm::Value* x) {
  llvm::Value* magnitude = builder.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
  return builder.CreateFCmpUGE(magnitude, llvm::ConstantFP::get(x->getType(), kTrigLimit));
}

}  // namespace canopy::jit
