#include "opencl_c.hpp"

#include <algorithm>
#include <array>
#include <cctype>

namespace canopy::jit {

using ir::ScalarType;

namespace {

// OpenCL C's keywords, types and built-in functions (OpenCL C 1.2 and the
// words later versions added), which a kernel, parameter or local name may
// not be. Families of names are matched by prefix below.
constexpr std::string_view kOpenCLWords[] = {
    // address spaces, access qualifiers, other keywords
    "__global", "global", "__local", "local", "__constant", "constant", "__private", "private", "__kernel", "kernel",
    "__read_only", "read_only", "__write_only", "write_only", "__read_write", "read_write", "uniform", "pipe",
    "complex", "imaginary", "__attribute__", "typeof", "generic", "__generic",
    // types
    "char", "uchar", "short", "ushort", "uint", "ulong", "half", "quad", "size_t", "ptrdiff_t", "intptr_t", "uintptr_t",
    "sampler_t", "event_t", "queue_t", "ndrange_t", "clk_event_t", "reserve_id_t", "cl_mem_fence_flags", "memory_order",
    "memory_scope",
    // work-item functions
    "get_work_dim", "get_global_size", "get_global_id", "get_local_size", "get_local_id", "get_num_groups",
    "get_group_id", "get_global_offset", "get_enqueued_local_size", "get_global_linear_id", "get_local_linear_id",
    // math
    "acos", "acosh", "acospi", "asin", "asinh", "asinpi", "atan", "atan2", "atanh", "atanpi", "atan2pi", "cbrt", "ceil",
    "copysign", "cosh", "cospi", "erfc", "erf", "exp2", "exp10", "expm1", "fdim", "fma", "fract", "frexp", "hypot",
    "ilogb", "ldexp", "lgamma", "lgamma_r", "log2", "log10", "log1p", "logb", "mad", "maxmag", "minmag", "modf", "nan",
    "nextafter", "pown", "powr", "remainder", "remquo", "rint", "rootn", "round", "rsqrt", "sincos", "sinh", "sinpi",
    "tan", "tanh", "tanpi", "tgamma", "trunc",
    // integer
    "abs_diff", "add_sat", "hadd", "rhadd", "clamp", "clz", "ctz", "mad_hi", "mad_sat", "mul_hi", "rotate", "sub_sat",
    "upsample", "popcount", "mad24", "mul24",
    // common, geometric, relational
    "degrees", "mix", "radians", "step", "smoothstep", "sign", "cross", "dot", "distance", "length", "normalize",
    "fast_distance", "fast_length", "fast_normalize", "isequal", "isnotequal", "isgreater", "isgreaterequal", "isless",
    "islessequal", "islessgreater", "isfinite", "isinf", "isnan", "isnormal", "isordered", "isunordered", "signbit",
    "any", "all", "bitselect", "select",
    // vectors, synchronisation, copies, output
    "shuffle", "shuffle2", "barrier", "mem_fence", "read_mem_fence", "write_mem_fence", "work_group_barrier",
    "async_work_group_copy", "async_work_group_strided_copy", "wait_group_events", "prefetch", "printf",
    "enqueue_kernel", "enqueue_marker", "retain_event", "release_event", "create_user_event", "is_valid_event",
    "set_user_event_status", "capture_event_profiling_info", "get_default_queue", "ndrange_1D", "ndrange_2D",
    "ndrange_3D", "to_global", "to_local", "to_private", "get_fence", "sub_group_barrier", "get_sub_group_size",
    "get_max_sub_group_size", "get_num_sub_groups", "get_enqueued_num_sub_groups", "get_sub_group_id",
    "get_sub_group_local_id", "work_group_all", "work_group_any", "work_group_broadcast", "work_group_reduce_add",
    "work_group_reduce_min", "work_group_reduce_max", "work_group_scan_exclusive_add", "work_group_scan_inclusive_add",
    "sub_group_all", "sub_group_any", "sub_group_broadcast", "sub_group_reduce_add", "sub_group_reduce_min",
    "sub_group_reduce_max", "read_pipe", "write_pipe", "reserve_read_pipe", "reserve_write_pipe", "commit_read_pipe",
    "commit_write_pipe", "is_valid_reserve_id", "get_pipe_num_packets", "get_pipe_max_packets", "vec_step",
    // the printer's own helpers
    "atomic_add_f32", "atomic_add_f64", "endian_little", "kernel_exec", "vec_type_hint", "work_group_size_hint",
    "reqd_work_group_size", "nosvm"};

// Families of OpenCL names: built-ins by prefix, and the predefined macros
// (which would replace a variable of that name).
constexpr std::string_view kOpenCLPrefixes[] = {
    "stream_store_", "native_",     "half_",     "vload",    "vstore",   "atomic_", "atom_",   "convert_", "as_",
    "read_image",    "write_image", "get_image", "image1d",  "image2d",  "image3d", "CL_",     "CLK_",     "FLT_",
    "DBL_",          "HALF_",       "M_",        "MAXFLOAT", "HUGE_VAL", "FP_",     "CHAR_",   "SCHAR_",   "UCHAR_",
    "SHRT_",         "USHRT_",      "INT_",      "UINT_",    "LONG_",    "ULONG_",  "ATOMIC_", "__OPENCL", "cl_"};

// True for vector types: a scalar type name followed by 2, 3, 4, 8 or 16.
bool is_vector_type(std::string_view word) {
  for (std::string_view scalar :
       {"char", "uchar", "short", "ushort", "int", "uint", "long", "ulong", "float", "double", "half", "bool"}) {
    if (word.substr(0, scalar.size()) != scalar) continue;
    auto width = word.substr(scalar.size());
    if (width == "2" || width == "3" || width == "4" || width == "8" || width == "16") return true;
  }
  return false;
}

std::string ocl_type(ScalarType type) {
  switch (type) {
    case ScalarType::Bool: return "uchar";
    case ScalarType::I32: return "int";
    case ScalarType::I64: return "long";
    case ScalarType::F32: return "float";
    case ScalarType::F64: return "double";
  }
  return "int";
}

}  // namespace

bool OpenCLCPrinter::is_opencl_word(std::string_view word) {
  if (std::find(std::begin(kOpenCLWords), std::end(kOpenCLWords), word) != std::end(kOpenCLWords)) return true;
  for (auto prefix : kOpenCLPrefixes)
    if (word.substr(0, prefix.size()) == prefix) return true;
  return is_vector_type(word);
}

bool OpenCLCPrinter::is_reserved(std::string_view word) const {
  return CSourcePrinter::is_reserved(word) || is_opencl_word(word);
}

std::string OpenCLCPrinter::preamble(const CSourceFeatures& features) const {
  std::string text = "#pragma OPENCL FP_CONTRACT OFF\n";
  if (features.uses_f64) text += "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n";
  if (features.int64_atomics) text += "#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable\n";
  return text;
}

std::string OpenCLCPrinter::global_pointer(ScalarType type, bool read_only) const {
  return std::string("__global ") + (read_only ? "const " : "") + ocl_type(type) + "*";
}

std::string OpenCLCPrinter::scratch_parameter(ScalarType type, const std::string& name) const {
  return "__local " + ocl_type(type) + "* " + name;
}

std::string OpenCLCPrinter::global_id(int dim) const { return "get_global_id(" + std::to_string(dim) + ")"; }

std::string OpenCLCPrinter::float_to_int(const std::string& operand, ScalarType from, ScalarType to) {
  return "convert_" + ocl_type(to) + "_sat_rtz(" + operand + ")";
}

std::string OpenCLCPrinter::atomic_add(const std::string& address, const std::string& value, ScalarType type) {
  switch (type) {
    case ScalarType::I32: return "atomic_add(" + address + ", " + value + ")";
    case ScalarType::I64: return "atom_add(" + address + ", " + value + ")";
    case ScalarType::F32: need_helper("atomic_add_f32"); return "atomic_add_f32(" + address + ", " + value + ")";
    default: need_helper("atomic_add_f64"); return "atomic_add_f64(" + address + ", " + value + ")";
  }
}

std::string OpenCLCPrinter::dialect_helper(const std::string& name) const {
  constexpr std::string_view kStreamStore = "stream_store_";
  if (name.starts_with(kStreamStore)) {
    const std::string vector = name.substr(kStreamStore.size());
    return "// A streaming (non-temporal) store where the compiler has one, else a plain store.\nvoid " + name + "(" +
           vector + " value, __global " + vector +
           "* target) {\n#if defined(__clang__) && defined(__has_builtin) && "
           "__has_builtin(__builtin_nontemporal_store)\n  __builtin_nontemporal_store(value, target);\n#else\n  "
           "*target = value;\n#endif\n}\n";
  }
  const bool is_f32 = name == "atomic_add_f32";
  if (!is_f32 && name != "atomic_add_f64") return "";
  const std::string f = is_f32 ? "float" : "double", bits = is_f32 ? "int" : "long";
  const std::string exchange = is_f32 ? "atomic_cmpxchg" : "atom_cmpxchg";
  return "// Atomic add of a " + f + ": a compare-and-swap loop on its bits.\nvoid " + name + "(volatile __global " +
         f + "* target, " + f + " value) {\n  volatile __global " + bits + "* bits = (volatile __global " + bits +
         "*)target;\n  " + bits + " expected = *bits;\n  for (;;) {\n    const " + bits + " seen = " + exchange +
         "(bits, expected, as_" + bits + "(as_" + f +
         "(expected) + value));\n    if (seen == expected) return;\n"
         "    expected = seen;\n  }\n}\n";
}

std::string OpenCLCPrinter::vector_type(ScalarType type, int width) const {
  if (type != ScalarType::F32 && type != ScalarType::F64) return "";
  return ocl_type(type) + std::to_string(width);
}

std::string OpenCLCPrinter::vector_load(const std::string& pointer, const std::string& index, int width) const {
  return "vload" + std::to_string(width) + "(" + index + ", " + pointer + ")";
}

std::string OpenCLCPrinter::vector_store(const std::string& pointer, const std::string& index, const std::string& value,
                                         ScalarType type, int width, bool streaming) {
  if (!streaming) return "vstore" + std::to_string(width) + "(" + value + ", " + index + ", " + pointer + ");";
  const std::string vector = vector_type(type, width);
  need_helper("stream_store_" + vector);
  return "stream_store_" + vector + "(" + value + ", (__global " + vector + "*)" + pointer + " + " + index + ");";
}

CSource opencl_c_source(const ir::Kernel& kernel, const CSourceOptions& options) {
  return OpenCLCPrinter(kernel, options).print();
}

}  // namespace canopy::jit
