// canopy-bench's nw: Needleman-Wunsch on Canopy (examples/rodinia/nw/nw.hpp)
// beside the OpenMP baseline (nw_openmp.cpp), both over memory allocated the
// way Canopy allocates its arrays; the score matrices must agree exactly.
#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <canopy/runtime/host_memory.hpp>

#include "openmp_ports.hpp"
#include "rodinia/nw/nw.hpp"
#include "workload.hpp"

namespace canopy::bench::rodinia {

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// A matrix in memory from runtime::allocate_host (huge pages where the system
// allows), as Canopy's own arrays get.
class Matrix {
 public:
  Matrix() = default;
  /// `size` zeros.
  explicit Matrix(std::size_t size) : size_(size), data_(static_cast<std::int32_t*>(runtime::allocate_host(bytes()))) {}
  /// A copy of `from`.
  explicit Matrix(const std::vector<std::int32_t>& from) : Matrix(from.size()) {
    std::copy(from.begin(), from.end(), data_);
  }
  Matrix(Matrix&& other) noexcept : size_(std::exchange(other.size_, 0)), data_(std::exchange(other.data_, nullptr)) {}
  Matrix& operator=(Matrix&& other) noexcept {
    std::swap(size_, other.size_);
    std::swap(data_, other.data_);
    return *this;
  }
  ~Matrix() {
    if (data_) runtime::free_host(data_, bytes());
  }
  std::int32_t* data() const { return data_; }
  std::size_t size() const { return size_; }

 private:
  std::size_t bytes() const { return size_ * sizeof(std::int32_t); }
  std::size_t size_ = 0;
  std::int32_t* data_ = nullptr;
};

class NwWorkload final : public Workload {
 public:
  std::string name() const override { return "nw"; }
  std::string describe() const override {
    return std::to_string(dim_) + "x" + std::to_string(dim_) + " alignment, penalty " + std::to_string(penalty_) +
           ", blocks of " + std::to_string(block_) + "x" + std::to_string(block_);
  }

  void prepare(Size size) override {
    dim_ = size == Size::Small ? 512 : size == Size::Medium ? 16384 : 24576;
    penalty_ = 10;
    auto problem = ::rodinia::nw::generate(dim_, penalty_);
    reference_ = Matrix(problem.reference);
    block_ = ::rodinia::nw::default_block(dim_);
    aligner_ = std::make_unique<::rodinia::nw::Aligner>(dim_, block_);
    canopy_score_ = Matrix();
    openmp_score_ = Matrix();
  }

  double run_canopy(Runtime& rt, const Placement& where) override {
    const std::int64_t side = dim_ + 1;
    reset(canopy_score_);
    auto reference = rt.wrap<std::int32_t, 2>(reference_.data(), Shape(side, side), read_only() | named("reference"));
    auto score = rt.wrap<std::int32_t, 2>(canopy_score_.data(), Shape(side, side), named("score"));
    const auto start = std::chrono::steady_clock::now();
    aligner_->launch(rt, score, reference, penalty_, {where.location, where.policy});
    rt.pause();
    score.host_read();
    return seconds_since(start);
  }

  double run_openmp() override {
    reset(openmp_score_);
    const auto start = std::chrono::steady_clock::now();
    openmp::nw_align(openmp_score_.data(), reference_.data(), dim_, block_, penalty_);
    return seconds_since(start);
  }

  std::string check() const override {
    if (!canopy_score_.data() || canopy_score_.size() != openmp_score_.size()) return "no output to compare";
    std::size_t differ = 0, first = 0;
    for (std::size_t k = 0; k < canopy_score_.size(); ++k)
      if (canopy_score_.data()[k] != openmp_score_.data()[k] && differ++ == 0) first = k;
    if (differ == 0) return "";
    const auto side = static_cast<std::size_t>(dim_ + 1);
    return std::to_string(differ) + " scores differ, first at (" + std::to_string(first / side) + ", " +
           std::to_string(first % side) + "): " + std::to_string(canopy_score_.data()[first]) + " vs " +
           std::to_string(openmp_score_.data()[first]);
  }

 private:
  // The scores before a run, as Rodinia sets them: the gap penalties in row 0
  // and column 0, zero elsewhere (made here rather than kept: 1 GB at medium size).
  void reset(Matrix& score) const {
    const std::int64_t side = dim_ + 1;
    if (score.size() != std::size_t(side * side)) score = Matrix(std::size_t(side * side));
    std::fill(score.data(), score.data() + score.size(), 0);
    for (std::int64_t k = 1; k < side; ++k) {
      score.data()[k * side] = static_cast<std::int32_t>(-k * penalty_);
      score.data()[k] = static_cast<std::int32_t>(-k * penalty_);
    }
  }

  std::int64_t dim_ = 0, block_ = 0;
  std::int32_t penalty_ = 10;
  Matrix reference_;
  std::unique_ptr<::rodinia::nw::Aligner> aligner_;
  Matrix canopy_score_, openmp_score_;
};

const Registration registration(4, [] { return std::make_unique<NwWorkload>(); });

}  // namespace

}  // namespace canopy::bench::rodinia
