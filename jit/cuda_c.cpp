#include "cuda_c.hpp"

#include <algorithm>
#include <iterator>

namespace canopy::jit {

using ir::ScalarType;

namespace {

// Words of CUDA C++ that a kernel, parameter or local name may not be:
// C++'s keywords (NVRTC compiles C++), CUDA's qualifiers and built-in
// variables, device functions a kernel could call, and this printer's
// helpers. Families are matched by prefix below.
constexpr std::string_view kCudaWords[] = {
    // C++ keywords beyond C's
    "alignas", "alignof", "and", "and_eq", "asm", "bitand", "bitor", "catch", "char8_t", "char16_t", "char32_t",
    "class", "compl", "concept", "consteval", "constexpr", "constinit", "const_cast", "co_await", "co_return",
    "co_yield", "decltype", "delete", "dynamic_cast", "explicit", "export", "friend", "mutable", "namespace", "new",
    "noexcept", "not", "not_eq", "nullptr", "operator", "or", "or_eq", "private", "protected", "public",
    "reinterpret_cast", "requires", "static_assert", "static_cast", "template", "this", "thread_local", "throw", "try",
    "typeid", "typename", "using", "virtual", "wchar_t", "xor", "xor_eq", "std", "size_t", "ptrdiff_t", "nullptr_t",
    // CUDA's built-in variables and types
    "threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize", "dim3", "uint3", "cudaError_t", "half", "nv_bfloat16",
    // device functions
    "atomicAdd", "atomicSub", "atomicExch", "atomicMin", "atomicMax", "atomicInc", "atomicDec", "atomicCAS",
    "atomicAnd", "atomicOr", "atomicXor", "printf", "malloc", "free", "memcpy", "memset", "assert", "clock", "clock64",
    "llmin", "llmax", "umin", "umax", "ullmin", "ullmax", "llabs", "labs", "fminf", "fmaxf", "fmodf", "sqrtf", "expf",
    "logf", "sinf", "cosf", "floorf", "powf", "fabsf", "acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh",
    "cbrt", "ceil", "copysign", "cosh", "cospi", "erf", "erfc", "erfinv", "exp2", "exp10", "expm1", "fdim", "fma",
    "frexp", "hypot", "ilogb", "isfinite", "isinf", "isnan", "ldexp", "lgamma", "log2", "log10", "log1p", "logb",
    "modf", "nan", "nearbyint", "nextafter", "norm", "rcbrt", "remainder", "remquo", "rhypot", "rint", "round", "rsqrt",
    "scalbn", "signbit", "sincos", "sinh", "sinpi", "tan", "tanh", "tgamma", "trunc", "lround", "llround", "lrint",
    "llrint", "brev", "clz", "ffs", "popc", "mul24", "umul24", "mulhi", "umulhi", "mul64hi", "umul64hi", "sad", "usad",
    "byte_perm", "float2int", "int2float",
    // the printer's helpers
    "f32_to_i32", "f32_to_i64", "f64_to_i32", "f64_to_i64"};

// Families: CUDA's qualifiers, intrinsics and predefined macros (__global__,
// __syncthreads, __float_as_int, __CUDA_ARCH__), the make_<vector>
// functions, and the runtime's and NVIDIA's own names.
constexpr std::string_view kCudaPrefixes[] = {"__", "make_", "cuda", "CUDA", "nv_", "NV_"};

// CUDA's vector types: a scalar name followed by 1, 2, 3 or 4.
bool is_vector_type(std::string_view word) {
  for (std::string_view scalar : {"char", "uchar", "short", "ushort", "int", "uint", "long", "ulong", "longlong",
                                  "ulonglong", "float", "double"}) {
    if (word.substr(0, scalar.size()) != scalar) continue;
    const auto width = word.substr(scalar.size());
    if (width == "1" || width == "2" || width == "3" || width == "4") return true;
  }
  return false;
}

const char* bits_of(ScalarType type) { return type == ScalarType::I64 ? "i64" : "i32"; }

// The helper converting float type `from` to integer type `to`: rounds
// toward zero, saturates at the integer type's limits and gives 0 for NaN.
// The limits are powers of two, exact in both float types: a value at or
// past one saturates, and every value strictly inside truncates exactly.
std::string conversion_helper(ScalarType from, ScalarType to) {
  const bool is_f32 = from == ScalarType::F32, is_i64 = to == ScalarType::I64;
  const std::string f = is_f32 ? "float" : "double", t = is_i64 ? "long long" : "int";
  const std::string suffix = is_f32 ? "f" : "";
  const std::string limit = is_i64 ? "9223372036854775808.0" : "2147483648.0";
  const std::string lowest = is_i64 ? "(-9223372036854775807LL - 1LL)" : "(-2147483647 - 1)";
  const std::string highest = is_i64 ? "9223372036854775807LL" : "2147483647";
  const std::string name = std::string(is_f32 ? "f32" : "f64") + "_to_" + (is_i64 ? "i64" : "i32");
  return "// Canopy's " + f + " to " + t + ": toward zero, saturating, NaN gives 0.\n__device__ " + t + " " + name +
         "(" + f + " x) {\n  if (x != x) return 0;\n  if (x <= -" + limit + suffix + ") return " + lowest +
         ";\n  if (x >= " + limit + suffix + ") return " + highest + ";\n  return (" + t + ")x;\n}\n";
}

}  // namespace

bool CudaCPrinter::is_cuda_word(std::string_view word) {
  if (std::find(std::begin(kCudaWords), std::end(kCudaWords), word) != std::end(kCudaWords)) return true;
  for (auto prefix : kCudaPrefixes)
    if (word.substr(0, prefix.size()) == prefix) return true;
  return is_vector_type(word);
}

bool CudaCPrinter::is_reserved(std::string_view word) const {
  return CSourcePrinter::is_reserved(word) || is_cuda_word(word);
}

void CudaCPrinter::need(const std::string& name) const {
  // The hooks that ask for helpers are const in the base; the printer itself
  // is not (print() is a non-const member), so this cast is well defined.
  const_cast<CudaCPrinter*>(this)->need_helper(name);
}

std::string CudaCPrinter::preamble(const CSourceFeatures& features) const {
  return "// Compiled by NVRTC with --fmad=false: a * b + c is never fused into an fma.\n"
         "#ifndef INFINITY\n#define INFINITY __int_as_float(0x7f800000)\n#endif\n"
         "#ifndef NAN\n#define NAN __int_as_float(0x7fffffff)\n#endif\n";
}

std::string CudaCPrinter::type_name(ScalarType type) const {
  return type == ScalarType::I64 ? "long long" : CSourcePrinter::type_name(type);
}

std::string CudaCPrinter::unsigned_type_name(ScalarType type) const {
  return type == ScalarType::I64 || type == ScalarType::F64 ? "unsigned long long" : "unsigned int";
}

std::string CudaCPrinter::storage_type_name(ScalarType type) const {
  return type == ScalarType::Bool ? "unsigned char" : type_name(type);
}

std::string CudaCPrinter::global_pointer(ScalarType type, bool read_only) const {
  return std::string(read_only ? "const " : "") + storage_type_name(type) + "*";
}

std::string CudaCPrinter::scratch_declaration(ScalarType type, const std::string& name) const {
  return "__shared__ " + type_name(type) + " " + name + "[" + std::to_string(kCudaReductionBlock) + "];";
}

std::string CudaCPrinter::global_id(int dim) const {
  static constexpr const char* kAxes[] = {"x", "y", "z"};
  const std::string axis = kAxes[dim];
  return "((long long)blockIdx." + axis + " * blockDim." + axis + " + threadIdx." + axis + ")";
}

std::string CudaCPrinter::math_function(ir::MathFn fn, ScalarType type) const {
  const std::string name = CSourcePrinter::math_function(fn, type);
  return type == ScalarType::F32 ? name + "f" : name;
}

std::string CudaCPrinter::float_to_int(const std::string& operand, ScalarType from, ScalarType to) {
  const std::string name = std::string(from == ScalarType::F32 ? "f32" : "f64") + "_to_" + bits_of(to);
  need_helper(name);
  return name + "(" + operand + ")";
}

std::string CudaCPrinter::atomic_add(const std::string& address, const std::string& value, ScalarType type) {
  if (type == ScalarType::I64)
    return "atomicAdd((unsigned long long*)" + address + ", (unsigned long long)(" + value + "))";
  return "atomicAdd(" + address + ", " + value + ")";
}

std::string CudaCPrinter::dialect_helper(const std::string& name) const {
  for (ScalarType from : {ScalarType::F32, ScalarType::F64})
    for (ScalarType to : {ScalarType::I32, ScalarType::I64})
      if (name == std::string(from == ScalarType::F32 ? "f32" : "f64") + "_to_" + bits_of(to))
        return conversion_helper(from, to);
  return "";
}

CSource cuda_c_source(const ir::Kernel& kernel, const CSourceOptions& options) {
  return CudaCPrinter(kernel, options).print();
}

std::vector<std::string> cuda_compile_options(const std::string& architecture) {
  return {"--gpu-architecture=" + architecture, "--fmad=false", "--prec-div=true", "--prec-sqrt=true", "--ftz=false"};
}

}  // namespace canopy::jit
