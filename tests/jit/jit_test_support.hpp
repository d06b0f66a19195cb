// Shared by the JIT tests: a fresh cache directory per test, an ArgSlot block
// filled by parameter position as cpu_arg_layout says, and short names for
// the IR's types.
#pragma once

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include <unistd.h>

#include <canopy/ir/kernel.hpp>
#include <canopy/jit/cpu_abi.hpp>

#include "temporary_folder.hpp"

namespace canopy::jit::testing {

inline constexpr auto Bool = ir::ScalarType::Bool;
inline constexpr auto I32 = ir::ScalarType::I32;
inline constexpr auto I64 = ir::ScalarType::I64;
inline constexpr auto F32 = ir::ScalarType::F32;
inline constexpr auto F64 = ir::ScalarType::F64;

/// a + b and a * b in the IR, for kernels built by hand.
inline ir::Expr add(ir::Expr a, ir::Expr b) { return ir::make_binary(ir::BinaryOp::Add, std::move(a), std::move(b)); }
inline ir::Expr mul(ir::Expr a, ir::Expr b) { return ir::make_binary(ir::BinaryOp::Mul, std::move(a), std::move(b)); }

/// A new empty directory under the system's temporary directory, removed
/// (with its contents) when the object goes.
class TempDir : public canopy::testing::TemporaryFolder {
 public:
  TempDir() : TemporaryFolder("jit-test") {}
  std::string str() const { return path().string(); }
};

/// The whole contents of a file (empty when it cannot be read).
inline std::string read_all(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

/// Replaces a file's contents with `bytes`.
inline void write_all(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

/// Collects what is written to stderr (file descriptor 2) from construction
/// until finish(), which restores stderr and returns the text.
class StderrCapture {
 public:
  StderrCapture() {
    std::fflush(stderr);
    file_ = std::tmpfile();
    saved_ = ::dup(2);
    ::dup2(::fileno(file_), 2);
  }
  ~StderrCapture() { finish(); }
  std::string finish() {
    if (!file_) return text_;
    std::fflush(stderr);
    ::dup2(saved_, 2);
    ::close(saved_);
    std::rewind(file_);
    char buffer[4096];
    std::size_t got;
    while ((got = std::fread(buffer, 1, sizeof(buffer), file_)) > 0) text_.append(buffer, got);
    std::fclose(file_);
    file_ = nullptr;
    return text_;
  }

 private:
  std::FILE* file_ = nullptr;
  int saved_ = -1;
  std::string text_;
};

/// The argument block of one kernel call, filled by parameter position.
class ArgBlock {
 public:
  explicit ArgBlock(const ir::Kernel& kernel) : layout_(cpu_arg_layout(kernel)), slots_(layout_.slot_count) {
    for (auto& slot : slots_) slot.integer = 0;
  }
  template <class T>
  ArgBlock& array(int param, T* data, std::vector<std::int64_t> extents) {
    const int first = layout_.first_slot.at(param);
    slots_.at(first).pointer = static_cast<void*>(data);
    for (std::size_t d = 0; d < extents.size(); ++d) slots_.at(first + 1 + d).integer = extents[d];
    return *this;
  }
  ArgBlock& integer(int param, std::int64_t value) {
    slots_.at(layout_.first_slot.at(param)).integer = value;
    return *this;
  }
  ArgBlock& f64(int param, double value) {
    slots_.at(layout_.first_slot.at(param)).f64 = value;
    return *this;
  }
  ArgBlock& f32(int param, float value) {
    slots_.at(layout_.first_slot.at(param)).f32 = value;
    return *this;
  }
  ArgBlock& partial(int param, void* target) {
    slots_.at(layout_.first_slot.at(param)).pointer = target;
    return *this;
  }
  /// The range of dimension `dim` (1 or 2).
  ArgBlock& range(int dim, std::int64_t lo, std::int64_t hi) {
    slots_.at(layout_.range_slot + 2 * (dim - 1)).integer = lo;
    slots_.at(layout_.range_slot + 2 * (dim - 1) + 1).integer = hi;
    return *this;
  }
  const ArgSlot* data() const { return slots_.data(); }
  const CpuArgLayout& layout() const { return layout_; }

 private:
  CpuArgLayout layout_;
  std::vector<ArgSlot> slots_;
};

/// A kernel with the given parts.
inline ir::Kernel make_kernel(std::string name, std::vector<ir::Param> params, int dims, std::vector<ir::Stmt> body) {
  ir::Kernel kernel;
  kernel.name = std::move(name);
  kernel.params = std::move(params);
  kernel.dims = dims;
  kernel.body = ir::make_block(std::move(body));
  return kernel;
}

}  // namespace canopy::jit::testing
