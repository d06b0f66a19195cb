// CSourcePrinter: kernel IR to C-like device source, shared by the dialects
// that are C with a few words changed (OpenCL C, CUDA C). The base class
// prints the whole kernel: statements, expressions with the IR's exact
// semantics, the index space, the reduction scaffolding; a dialect subclass
// overrides only the hooks where the spelling differs (kernel and address
// space qualifiers, work-item ids and barriers, type names, atomics, math
// function names, saturating conversions). See opencl_c.hpp.
//
// The source is meant to be read (CANOPY_DUMP=opencl writes it): the
// kernel's own parameter and local names, one statement per line, operators
// parenthesised only where C needs it. A name is changed only where it would
// collide with a word of the dialect or another name (`int` becomes `int_`,
// `a.b` becomes `a_b`, and a second `a_b` becomes `a_b_2`).
//
// Semantics (ir/expr.hpp), and how the source keeps them without undefined
// behaviour in C:
//  - integer + - * and unary - wrap: computed on the unsigned type and cast
//    back, `(int)((uint)a + (uint)b)`, except where the operands' bounds
//    prove that the result fits (index and extent arithmetic such as
//    `(i - 1) * n1 + j` prints as plain C: extents lie in [0, 2^62], and
//    indices in [0, 2^63 - 1) where the host never runs negative ones);
//  - x / 0 == 0, x % 0 == 0, MIN / -1 == MIN: helper functions div_i32,
//    rem_i64, ... emitted before the kernel when it uses them;
//  - shift amounts are masked, `a >> (b & 31)`; << shifts the unsigned bits;
//  - float min and max are fmin and fmax; float % is fmod; abs of MIN is MIN;
//  - float to integer casts saturate, round toward zero, NaN gives 0 (the
//    dialect's saturating conversion); casts to bool compare with zero;
//  - bool values are C bools (0 or 1); bool array elements are one byte.
//
// The kernel ABI (every dialect; the host sets arguments in this order):
//  1. for each IR parameter, in order:
//     - array of rank r: a global pointer to the buffer (bool elements are
//       one byte, `uchar`), then its r extents as 64-bit integers, outermost
//       first, named <array>_n0, <array>_n1, ...; then <array>_first, the
//       element the buffer starts at (a device holding only part of an
//       array: runtime/internal/device_copies.hpp; a multiple of 64); element
//       (i,j,k) of extents (n0,n1,n2) is ((i*n1)+j)*n2+k, at
//       [((i*n1)+j)*n2+k - <array>_first] in the buffer;
//     - scalar: its value (bool as a 32-bit int holding 0 or 1);
//     - reduction: a global pointer <name>_partials where work-group g
//       writes its partial result at [g], then (where the dialect passes it
//       as an argument) work-group scratch memory <name>_scratch of one
//       element per work-item;
//  2. then the range of the piece, as 64-bit integers:
//     - kernels without reductions: the end of each index dimension (i_end,
//       j_end, k_end; index(0) is i). When the dialect passes the piece's
//       start through the global work offset (OpenCL), that is all;
//       otherwise each end is preceded by its begin (i_begin, i_end, ...).
//       Each work-item runs one point; the device dimension 0 is the LAST
//       index (fastest in memory), so index(0) of a 2-D kernel is device
//       dimension 1. Such kernels have two entry points with these same
//       arguments (CSource): `entry` for whole work-groups inside the piece,
//       which checks nothing (so that a compiler can vectorise across
//       work-items), and `edge_entry`, whose work-items past an end do
//       nothing, for the work-groups that straddle the piece's ends (the
//       global size rounded up to a multiple of the work-group size).
//     - kernels with reductions: i_begin, i_end (j_begin, j_end, k_begin,
//       k_end for more dimensions). The launch is one-dimensional, without
//       a global work offset, with a power-of-two work-group size; the work-items walk all the points of
//       the piece (ReductionWalk), each folding its points into a private
//       accumulator, and each work-group then combines its accumulators in
//       a tree in scratch memory and writes one partial result. The host
//       combines the partials (in group order).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <canopy/ir/kernel.hpp>
#include <canopy/ir/visitor.hpp>

namespace canopy::jit {

/// How the work-items of a reduction kernel share the points of the piece.
enum class ReductionWalk : std::uint8_t {
  /// Work-item w takes points w, w + items, w + 2 items, ...: neighbouring
  /// work-items load neighbouring elements (coalesced loads on GPUs).
  Strided,
  /// Work-item w takes one contiguous run of points: right where a core runs
  /// a work-group's items one after another (CPU devices), since each item
  /// then streams through memory in order.
  Chunked,
};

/// Choices about the generated code beyond the kernel itself.
struct CSourceOptions {
  ReductionWalk reduction_walk = ReductionWalk::Strided;
  /// Also print a streaming entry (CSource::stream_entry) when the kernel
  /// suits one and the dialect has vector loads and stores (OpenCL): for
  /// CPU devices, whose compilers do not turn a work-item's scalar stores
  /// into streaming stores.
  bool streaming_entry = false;
};

/// What a kernel needs from a device, found by walking it.
struct CSourceFeatures {
  bool uses_f64 = false;       ///< any f64 value, parameter or element
  bool int64_atomics = false;  ///< atomic adds on i64 or f64 arrays (64-bit compare-and-swap)
  bool int32_atomics = false;  ///< atomic adds on i32 or f32 arrays
  bool has_reductions = false;
};

/// The features of `kernel` (which should verify).
CSourceFeatures features_of(const ir::Kernel& kernel);

/// When `kernel` suits a streaming entry (see CSource::stream_entry), the
/// float type of all its values; nothing otherwise.
std::optional<ir::ScalarType> streaming_entry_type(const ir::Kernel& kernel);

/// Generated source and the name of its kernel function.
struct CSource {
  std::string text;
  /// The kernel function's name in `text` (the IR name unless it collides).
  /// For kernels without reductions it runs whole work-groups only.
  std::string entry;
  /// Kernels without reductions: the same kernel with a check of each
  /// work-item against the piece's ends, for the partial work-groups at the
  /// ends. Empty for reduction kernels.
  std::string edge_entry;
  /// With CSourceOptions::streaming_entry, for a kernel that suits it: an
  /// entry with the same arguments whose work-item w runs the stream_width
  /// points stream_width*w .. stream_width*w + stream_width - 1 as one
  /// 64-byte vector, storing the arrays the kernel only writes with
  /// streaming (non-temporal) stores where the compiler has them. The host
  /// passes the first vector in the global work offset and launches whole
  /// work-groups of vectors; every array must start on a 64-byte boundary.
  /// A kernel suits it when it is one-dimensional, without reductions,
  /// atomics, branches or loops, every array is one-dimensional and
  /// accessed only at the point's own index, and every value is of one
  /// float type (the arrays', scalars' and literals'), computed with + - *
  /// / min max neg abs and sqrt. Empty otherwise.
  std::string stream_entry;
  int stream_width = 0;  ///< points per work-item of stream_entry
};

class CSourcePrinter : protected ir::Visitor {
 public:
  /// The kernel should verify (ir::verify); print() verifies it again.
  CSourcePrinter(const ir::Kernel& kernel, CSourceOptions options);
  ~CSourcePrinter() override;

  /// The whole translation unit: a header comment, the dialect's pragmas,
  /// helper functions the kernel needs, then the kernel. Throws
  /// canopy::Error when the kernel does not verify.
  CSource print();

 protected:
  // ---- hooks: where the dialects differ -----------------------------------

  /// The dialect as the header comment names it ("OpenCL C 1.2").
  virtual std::string dialect_name() const = 0;
  /// Lines between the header comment and the helpers (pragmas, includes).
  virtual std::string preamble(const CSourceFeatures& features) const = 0;
  /// What precedes the kernel function's name: "__kernel void".
  virtual std::string kernel_qualifier() const = 0;
  /// What precedes a helper function's return type ("" or "__device__").
  virtual std::string helper_qualifier() const { return ""; }
  /// The C type of a value of `type` in registers ("long"); bool is "bool".
  virtual std::string type_name(ir::ScalarType type) const;
  /// The unsigned integer type of the same width as `type` ("ulong").
  virtual std::string unsigned_type_name(ir::ScalarType type) const;
  /// The C type of an element of `type` in memory (bool: a byte type).
  virtual std::string storage_type_name(ir::ScalarType type) const;
  /// The type of a kernel argument holding a scalar parameter (bool: "int").
  virtual std::string scalar_argument_type(ir::ScalarType type) const;
  /// A pointer to global memory of elements of `type`: "__global const double*".
  virtual std::string global_pointer(ir::ScalarType type, bool read_only) const = 0;
  /// A kernel parameter for a reduction's work-group scratch memory, or ""
  /// when the dialect declares it inside the kernel (scratch_declaration).
  virtual std::string scratch_parameter(ir::ScalarType type, const std::string& name) const = 0;
  /// A statement declaring the scratch memory inside the kernel, or "".
  virtual std::string scratch_declaration(ir::ScalarType type, const std::string& name) const { return ""; }
  /// True when the host passes the piece's first point as the global work
  /// offset (then global_id includes it and no *_begin argument exists).
  virtual bool begin_in_global_offset() const = 0;
  /// The work-item's global id in device dimension `dim` (0 fastest), as a
  /// 64-bit signed value.
  virtual std::string global_id(int dim) const = 0;
  /// The total number of work-items of a one-dimensional launch.
  virtual std::string global_size() const = 0;
  virtual std::string local_id() const = 0;    ///< in a one-dimensional work-group
  virtual std::string local_size() const = 0;  ///< of a one-dimensional work-group
  virtual std::string group_id() const = 0;    ///< of a one-dimensional launch
  /// A statement that waits for the work-group and makes scratch writes visible.
  virtual std::string barrier() const = 0;
  /// True when the host never runs a piece with a negative index (OpenCL:
  /// global ids are unsigned): index(d) + 1 then never overflows, which lets
  /// index arithmetic print as plain C.
  virtual bool coordinates_non_negative() const { return false; }
  /// The suffix of a 64-bit integer literal ("L"; "LL" where long is 32-bit).
  virtual std::string long_suffix() const { return "L"; }
  /// A literal: integers with their type's suffix, floats in the shortest
  /// text that reads back exactly ("0.4f", "1e+300"), INFINITY and NAN
  /// (cast to double for f64), bools as true and false.
  virtual std::string literal(const ir::Const& node) const;
  /// The function computing `fn` on `type` ("sqrt", "fabs").
  virtual std::string math_function(ir::MathFn fn, ir::ScalarType type) const;
  /// abs of an integer `operand` that wraps at MIN, as an expression: a
  /// helper of the base (abs_i32, abs_i64), not the dialect's abs, whose
  /// result at MIN a compiler may take as undefined (PoCL's clang does: it
  /// then sign-extends abs(INT_MIN) as if it were positive).
  std::string integer_abs(const std::string& operand, ir::ScalarType type);
  /// min or max of two integers.
  virtual std::string integer_min_max(bool is_min, const std::string& a, const std::string& b) const;
  /// `operand` of float type `from` converted to integer type `to`, rounding
  /// toward zero, saturating, NaN giving 0 (an expression).
  virtual std::string float_to_int(const std::string& operand, ir::ScalarType from, ir::ScalarType to) = 0;
  /// The statement `*address += value`, atomic; may call need_helper().
  virtual std::string atomic_add(const std::string& address, const std::string& value, ir::ScalarType type) = 0;
  /// The definition of a helper function the dialect names in its hooks
  /// (called once per name passed to need_helper); "" for unknown names.
  virtual std::string dialect_helper(const std::string& name) const { return ""; }
  /// True for words a name in the source may not be: keywords, types,
  /// built-in functions and macros of the dialect. The base knows C's.
  virtual bool is_reserved(std::string_view word) const;
  /// Vectors of `width` elements of `type`, for the streaming entry: the
  /// vector type ("double8"); "" when the dialect has none (no streaming entry).
  virtual std::string vector_type(ir::ScalarType type, int width) const { return ""; }
  /// The vector at vector index `index` of `pointer` (an expression).
  virtual std::string vector_load(const std::string& pointer, const std::string& index, int width) const { return ""; }
  /// The statement storing `value` at vector index `index` of `pointer`,
  /// with a streaming store when `streaming`; may call need_helper().
  virtual std::string vector_store(const std::string& pointer, const std::string& index, const std::string& value,
                                   ir::ScalarType type, int width, bool streaming) {
    return "";
  }

  // ---- helpers for the hooks ----------------------------------------------

  /// Asks for helper function `name` before the kernel (defined by the base
  /// for div_*/rem_*, else by dialect_helper).
  void need_helper(const std::string& name);
  const ir::Kernel& kernel() const { return kernel_; }
  const CSourceOptions& options() const { return options_; }

 private:
  struct Code {
    std::string text;
    int precedence = 0;
  };
  struct Names;
  /// Bounds of an integer value, wide enough that + - * of two i64 bounds is exact.
  using Wide = __int128;
  struct Bounds {
    Wide lo = 0, hi = 0;
  };
  /// The largest extent an array can have (no array in memory has 2^62 elements).
  static constexpr std::int64_t kLargestExtent = std::int64_t{1} << 62;

  // statements
  void visit(const ir::Block& node) override;
  void visit(const ir::Decl& node) override;
  void visit(const ir::Assign& node) override;
  void visit(const ir::Store& node) override;
  void visit(const ir::AtomicAdd& node) override;
  void visit(const ir::Reduce& node) override;
  void visit(const ir::If& node) override;
  void visit(const ir::For& node) override;
  // expressions
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

  void claim_names();
  std::string unreserved(std::string_view name) const;
  /// A new name in the source, close to `wanted`, unique and no reserved word.
  std::string claim(std::string_view wanted);
  std::string signature(const std::string& function);
  /// What `print` writes with line(), returned instead of added to the body.
  std::string printed(const std::function<void()>& print);
  void print_coordinates(bool guarded);
  /// The streaming entry's statements (after its vector index is declared).
  std::string streaming_statements(ir::ScalarType type, int width, const std::string& vector);
  static std::string window_vector(const std::string& first, const std::string& vector, int width);
  std::string vector_expression(const ir::Expr& expr, int width, const std::string& vector);
  void print_reduction_kernel();
  void print_walk();
  void print_work_group_combine();
  /// The statements of an If or For body (a Block prints without braces of its own).
  void walk_body(const ir::Stmt& body);

  Code code_of(const ir::Expr& expr);
  /// The expression's text, parenthesised when its precedence is below `at_least`.
  std::string operand(const ir::Expr& expr, int at_least);
  static Bounds type_limits(ir::ScalarType type);
  std::optional<Bounds> bounds(const ir::Expr& expr) const;
  std::optional<Bounds> exact_bounds(const ir::Binary& node) const;
  std::optional<Bounds> binary_bounds(const ir::Binary& node) const;
  bool fits(const ir::Binary& node) const;
  Code infix(const ir::Binary& node, const char* op, int precedence, int lhs_at_least, int rhs_at_least);
  Code call(const ir::Binary& node, const std::string& function);
  Code float_binary(const ir::Binary& node);
  Code integer_binary(const ir::Binary& node);
  Code shift(const ir::Binary& node);
  [[noreturn]] void no_c_form(const ir::Binary& node) const;
  std::string element(int param, const std::vector<ir::Expr>& indices);
  std::string wrap(const std::string& op, const ir::Expr& lhs, const ir::Expr& rhs, ir::ScalarType type);
  std::string unsigned_operand(const ir::Expr& expr, ir::ScalarType type);
  std::string combine(ir::ReduceOp op, ir::ScalarType type, const std::string& a, const std::string& b);
  bool invariant_in_loops(const ir::Expr& expr) const;
  void line(const std::string& text);
  std::string base_helper(const std::string& name) const;

  const ir::Kernel& kernel_;
  CSourceOptions options_;
  std::unique_ptr<Names> names_;
  std::string body_;  ///< the kernel function being printed
  int indent_ = 0;
  Code result_;                       ///< the expression just visited
  std::vector<std::string> helpers_;  ///< in the order first needed
  std::set<std::string> loop_vars_;   ///< loop counters in scope (read-only)
};

/// Writes `source` with each line numbered ("  12 | text"), for error messages.
std::string numbered_source(std::string_view source);

}  // namespace canopy::jit
