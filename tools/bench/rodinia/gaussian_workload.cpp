// canopy-bench's gaussian: forward elimination on Canopy
// (examples/rodinia/gaussian/gaussian.hpp) beside the OpenMP baseline
// (gaussian_openmp.cpp) on Rodinia's `-s` system, both over memory allocated
// the way Canopy allocates its arrays; back substitution on the host, as in
// Rodinia, is part of both timings.
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
#include "rodinia/gaussian/gaussian.hpp"
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
    resize(from.size());
    std::copy(from.begin(), from.end(), data_);
  }
  /// n zeros.
  void zeros(std::size_t n) {
    resize(n);
    std::fill(data_, data_ + n, 0.0f);
  }
  float* data() const { return data_; }
  std::size_t size() const { return size_; }

 private:
  void resize(std::size_t n) {
    if (size_ == n) return;
    Floats fresh;
    fresh.size_ = n;
    fresh.data_ = static_cast<float*>(runtime::allocate_host(n * sizeof(float)));
    *this = std::move(fresh);
  }
  std::size_t size_ = 0;
  float* data_ = nullptr;
};

struct Output {
  Floats a, b, m;
  std::vector<float> x;
};

class GaussianWorkload final : public Workload {
 public:
  std::string name() const override { return "gaussian"; }
  std::string describe() const override {
    return std::to_string(system_.n) + "x" + std::to_string(system_.n) + " system (Rodinia's -s)";
  }

  void prepare(Size size) override {
    system_ = ::rodinia::gaussian::internal_system(size == Size::Small ? 128 : size == Size::Medium ? 4096 : 8192);
    eliminator_ = std::make_unique<::rodinia::gaussian::Eliminator>(system_.n);
    canopy_ = Output();
    openmp_ = Output();
  }

  double run_canopy(Runtime& rt, const Placement& where) override {
    const std::int64_t n = system_.n;
    reset(canopy_);
    auto a = rt.wrap<float, 2>(canopy_.a.data(), Shape(n, n), named("a"));
    auto b = rt.wrap<float>(canopy_.b.data(), n, named("b"));
    auto m = rt.wrap<float, 2>(canopy_.m.data(), Shape(n, n), named("m"));
    const auto start = std::chrono::steady_clock::now();
    eliminator_->launch(rt, a, b, m, {where.location, where.policy});
    rt.pause();
    m.host_read();
    canopy_.x = ::rodinia::gaussian::back_substitute(a.host_read().data(), b.host_read().data(), n);
    return seconds_since(start);
  }

  double run_openmp() override {
    const std::int64_t n = system_.n;
    reset(openmp_);
    const auto start = std::chrono::steady_clock::now();
    openmp::gaussian_forward(openmp_.a.data(), openmp_.b.data(), openmp_.m.data(), n);
    openmp_.x = ::rodinia::gaussian::back_substitute(openmp_.a.data(), openmp_.b.data(), n);
    return seconds_since(start);
  }

  // The two sides round differently (the baseline's compiler contracts the
  // multiply-subtract into fused multiply-adds, Canopy's JIT does not), so
  // the solution and the multipliers are compared within 1e-3 of their
  // largest magnitude: the -s system is well conditioned (its diagonal
  // dominates), and float elimination of it agrees with double precision to
  // about 1e-5 relative at these sizes.
  std::string check() const override {
    if (canopy_.x.size() != openmp_.x.size() || canopy_.x.empty()) return "no output to compare";
    std::string problem = compare("x", canopy_.x.data(), openmp_.x.data(), openmp_.x.size());
    if (problem.empty()) problem = compare("m", canopy_.m.data(), openmp_.m.data(), openmp_.m.size());
    return problem;
  }

 private:
  void reset(Output& out) const {
    out.a.assign(system_.a);
    out.b.assign(system_.b);
    out.m.zeros(system_.a.size());
    out.x.clear();
  }

  static std::string compare(const char* what, const float* mine, const float* theirs, std::size_t count) {
    double scale = 0, worst = 0;
    std::size_t at = 0;
    for (std::size_t k = 0; k < count; ++k) scale = std::max(scale, std::fabs(double(theirs[k])));
    for (std::size_t k = 0; k < count; ++k) {
      const double d = std::fabs(double(mine[k]) - double(theirs[k]));
      if (!(d <= worst)) {
        worst = d;
        at = k;
      }
    }
    if (worst <= 1e-3 * scale) return "";
    char text[160];
    std::snprintf(text, sizeof text, "%s differs by %.3g at [%zu]: %.7g vs %.7g (largest |%s| %.3g)", what, worst, at,
                  double(mine[at]), double(theirs[at]), what, scale);
    return text;
  }

  ::rodinia::gaussian::System system_;
  std::unique_ptr<::rodinia::gaussian::Eliminator> eliminator_;
  Output canopy_, openmp_;
};

const Registration registration(5, [] { return std::make_unique<GaussianWorkload>(); });

}  // namespace

}  // namespace canopy::bench::rodinia
