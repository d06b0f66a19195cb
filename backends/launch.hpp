// What a backend needs to run one piece of a region: the kernel's arguments
// in a form every device API can take, and the part of the index range the
// piece covers. Backends know nothing of the hierarchy; the runtime fills these.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include <canopy/ir/kernel.hpp>

namespace canopy::backends {

/// An array argument: where its elements are on the device that runs the
/// piece (a host pointer for CPU leaves), and its extents.
struct ArrayArg {
  void* data = nullptr;
  std::array<std::int64_t, 3> extents{1, 1, 1};  ///< unused dimensions are 1
  /// The element of the array at `data`: a device copy may hold a window of
  /// the array only (a multiple of 64; always 0 on the CPU).
  std::int64_t first = 0;
};

/// A scalar argument, held as the widest type of its kind.
struct ScalarArg {
  ir::ScalarType type = ir::ScalarType::F64;
  std::int64_t int_value = 0;  ///< bool, i32, i64
  double float_value = 0.0;    ///< f32, f64
};

/// A reduction parameter: the launch fills `result` with the piece's value.
struct ReductionArg {};

using KernelArg = std::variant<ArrayArg, ScalarArg, ReductionArg>;

/// The points a piece covers: index(d) in [begin[d], end[d]) for d < dims.
struct Range {
  int dims = 1;
  std::array<std::int64_t, 3> begin{0, 0, 0};
  std::array<std::int64_t, 3> end{1, 1, 1};

  std::int64_t points() const;
  bool empty() const { return points() == 0; }
};

/// A reduction's value, held like a ScalarArg.
using ReductionValue = ScalarArg;

/// The identity of `op` for `type`, as a ReductionValue.
ReductionValue identity_value(ir::ReduceOp op, ir::ScalarType type);
/// a op b.
ReductionValue combine(ir::ReduceOp op, const ReductionValue& a, const ReductionValue& b);
/// The value of `type` stored at `bytes` as the kernel wrote it (a partial
/// result a device left in memory: 4 bytes for i32 and f32, 8 for i64 and f64).
ReductionValue partial_value(ir::ScalarType type, const unsigned char* bytes);

/// The scalar argument for a C++ value of kernel type T.
template <class T>
ScalarArg scalar_arg(T value) {
  ScalarArg arg;
  arg.type = ir::scalar_type_of<T>();
  if constexpr (std::is_floating_point_v<T>)
    arg.float_value = static_cast<double>(value);
  else
    arg.int_value = static_cast<std::int64_t>(value);
  return arg;
}

/// The C++ value of a reduction result of kernel type T.
template <class T>
T value_of(const ReductionValue& v) {
  if constexpr (std::is_floating_point_v<T>)
    return static_cast<T>(v.float_value);
  else
    return static_cast<T>(v.int_value);
}

/// The automatic streaming-store threshold of a device whose last-level
/// cache holds `cache_bytes`: twice that, or 64 MiB where the cache size is
/// unknown (0).
std::size_t streaming_threshold_for_cache(std::size_t cache_bytes);

/// A device's streaming-store threshold (see takes_streaming_stores):
/// `automatic` (as streaming_threshold_for_cache gives), or as
/// CANOPY_STREAMING_STORES says (on: 0, off: never, auto: `automatic`).
/// Throws canopy::Error for another value.
std::size_t streaming_threshold_from_environment(std::size_t automatic);

/// Whether a launch writes the arrays it only writes with streaming
/// (non-temporal) stores on a device whose threshold is `threshold`: when
/// the bytes it passes through all its arrays (`passed`, those written
/// included) reach the threshold, since a line stored the plain way would
/// leave the caches before a later region could read it there, and it
/// writes at least a sixteenth of the threshold into them (`written`): less
/// saves too few reads of a line before its write to pay for the streaming
/// variant. A threshold of 0 streams every launch that writes; the largest
/// size_t, none.
bool takes_streaming_stores(std::size_t written, std::size_t passed, std::size_t threshold);

/// The bytes a launch over `points` points passes through the arrays of
/// `kernel`, as takes_streaming_stores counts them: an array of the
/// kernel's rank one element per point (a piece reads and writes its own
/// part), any other array whole: `elements[p]` elements for parameter p
/// (0 where not known).
std::size_t bytes_passed(const ir::Kernel& kernel, std::int64_t points, const std::vector<std::int64_t>& elements);
/// The same for a launch's arguments: each array whole by its extents.
std::size_t bytes_passed(const ir::Kernel& kernel, std::int64_t points, const std::vector<KernelArg>& args);

}  // namespace canopy::backends
