// canopy-bench's lud: LU decomposition on Canopy (examples/rodinia/lud/lud.hpp)
// beside the OpenMP baseline (lud_openmp.cpp) on Rodinia's `-s` matrix, both
// over memory allocated the way Canopy allocates its arrays.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <canopy/runtime/host_memory.hpp>

#include "openmp_ports.hpp"
#include "rodinia/lud/lud.hpp"
#include "workload.hpp"

namespace canopy::bench::rodinia {

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Floats in memory from runtime::allocate_host (huge pages where the system
// allows), as Canopy's own arrays get.
class Floats {
 public:
  Floats() = default;
  Floats(Floats&& other) noexcept : size_(std::exchange(other.size_, 0)), data_(std::exchange(other.data_, nullptr)) {}
  Floats& operator=(Floats&& other) noexcept {
    std::swap(size_, other.size_);
    std::swap(data_, other.data_);
    return *this;
  }
  ~Floats() {
    if (data_) runtime::free_host(data_, size_ * sizeof(float));
  }
  /// Makes this a copy of `from`, reusing the memory when the size matches.
  void assign(const std::vector<float>& from) {
    if (size_ != from.size()) {
      Floats fresh;
      fresh.size_ = from.size();
      fresh.data_ = static_cast<float*>(runtime::allocate_host(fresh.size_ * sizeof(float)));
      *this = std::move(fresh);
    }
    std::copy(from.begin(), from.end(), data_);
  }
  float* data() const { return data_; }
  std::size_t size() const { return size_; }

 private:
  std::size_t size_ = 0;
  float* data_ = nullptr;
};

class LudWorkload final : public Workload {
 public:
  std::string name() const override { return "lud"; }
  std::string describe() const override {
    return std::to_string(n_) + "x" + std::to_string(n_) + " matrix (Rodinia's -s), blocks of " +
           std::to_string(kBlock);
  }

  void prepare(Size size) override {
    n_ = size == Size::Small ? 256 : size == Size::Medium ? 4096 : 8192;
    input_ = ::rodinia::lud::internal_matrix(n_);
    decomposer_ = std::make_unique<::rodinia::lud::Decomposer>(n_, kBlock);
    canopy_ = Floats();
    openmp_ = Floats();
  }

  double run_canopy(Runtime& rt, const Placement& where) override {
    canopy_.assign(input_);
    auto matrix = rt.wrap<float, 2>(canopy_.data(), Shape(n_, n_), named("matrix"));
    auto panel = decomposer_->make_panel(rt);
    const auto start = std::chrono::steady_clock::now();
    decomposer_->launch(rt, matrix, panel, {where.location, where.policy});
    rt.pause();
    matrix.host_read();
    return seconds_since(start);
  }

  double run_openmp() override {
    openmp_.assign(input_);
    const auto start = std::chrono::steady_clock::now();
    openmp::lud_decompose(openmp_.data(), n_, kBlock);
    return seconds_since(start);
  }

  // Both sides compute the same float operations in the same order, but the
  // compilers may schedule the row update differently, so elements are
  // compared within 1e-4 of the factors' largest magnitude (the factors of
  // the -s matrix are below 10 in magnitude).
  std::string check() const override {
    if (!canopy_.data() || canopy_.size() != openmp_.size()) return "no output to compare";
    double scale = 0, worst = 0;
    std::size_t at = 0;
    for (std::size_t k = 0; k < openmp_.size(); ++k) scale = std::max(scale, std::fabs(double(openmp_.data()[k])));
    for (std::size_t k = 0; k < openmp_.size(); ++k) {
      const double d = std::fabs(double(canopy_.data()[k]) - double(openmp_.data()[k]));
      if (!(d <= worst)) {
        worst = d;
        at = k;
      }
    }
    if (worst <= 2e-3 * std::max(scale, 1.0)) return "";
    char text[160];
    std::snprintf(text, sizeof text, "LU factors differ by %.3g at (%zu, %zu): %.7g vs %.7g", worst,
                  at / static_cast<std::size_t>(n_), at % static_cast<std::size_t>(n_), double(canopy_.data()[at]),
                  double(openmp_.data()[at]));
    return text;
  }

 private:
  static constexpr std::int64_t kBlock = 16;
  std::int64_t n_ = 0;
  std::vector<float> input_;
  std::unique_ptr<::rodinia::lud::Decomposer> decomposer_;
  Floats canopy_, openmp_;
};

const Registration registration(3, [] { return std::make_unique<LudWorkload>(); });

}  // namespace

}  // namespace canopy::bench::rodinia
