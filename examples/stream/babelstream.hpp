// BabelStream's five kernels (copy, mul, add, triad, dot) in Canopy's DSL,
// with the benchmark's initial values, its result check and its byte counts.
// Used by the stream example and by `canopy-bench stream`.
#pragma once

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <canopy/canopy.hpp>

namespace babelstream {

using namespace canopy;

inline constexpr double start_a = 0.1, start_b = 0.2, start_c = 0.0, start_scalar = 0.4;
inline constexpr std::array<const char*, 5> kernel_names{"copy", "mul", "add", "triad", "dot"};

/// Bytes each kernel moves per element, in units of sizeof(T).
inline constexpr std::array<int, 5> arrays_touched{2, 2, 3, 3, 2};

/// Best, worst and total time of each kernel over the repetitions.
struct Timings {
  std::array<double, 5> best, worst, total;
  Timings() {
    best.fill(std::numeric_limits<double>::infinity());
    worst.fill(0.0);
    total.fill(0.0);
  }
  void add(int kernel, double seconds) {
    best[kernel] = std::min(best[kernel], seconds);
    worst[kernel] = std::max(worst[kernel], seconds);
    total[kernel] += seconds;
  }
};

inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

/// The five kernels for element type T.
template <class T>
struct Kernels {
  Kernel<void(Out<T>, In<T>)> copy{"copy",
                                   [](Out<T> c, In<T> a) {
                                     Idx i = index(0);
                                     c[i] = a[i];
                                   },
                                   {"c", "a"}};
  Kernel<void(Out<T>, In<T>, Val<T>)> mul{"mul",
                                          [](Out<T> b, In<T> c, Val<T> scalar) {
                                            Idx i = index(0);
                                            b[i] = scalar * c[i];
                                          },
                                          {"b", "c", "scalar"}};
  Kernel<void(Out<T>, In<T>, In<T>)> add{"add",
                                         [](Out<T> c, In<T> a, In<T> b) {
                                           Idx i = index(0);
                                           c[i] = a[i] + b[i];
                                         },
                                         {"c", "a", "b"}};
  Kernel<void(Out<T>, In<T>, In<T>, Val<T>)> triad{"triad",
                                                   [](Out<T> a, In<T> b, In<T> c, Val<T> scalar) {
                                                     Idx i = index(0);
                                                     a[i] = b[i] + scalar * c[i];
                                                   },
                                                   {"a", "b", "c", "scalar"}};
  Kernel<void(In<T>, In<T>, Sum<T>)> dot{"dot",
                                         [](In<T> a, In<T> b, Sum<T> total) {
                                           Idx i = index(0);
                                           total += a[i] * b[i];
                                         },
                                         {"a", "b", "total"}};
  Kernel<void(Out<T>, Out<T>, Out<T>, Val<T>, Val<T>, Val<T>)> init{
      "init",
      [](Out<T> a, Out<T> b, Out<T> c, Val<T> va, Val<T> vb, Val<T> vc) {
        Idx i = index(0);
        a[i] = va;
        b[i] = vb;
        c[i] = vc;
      },
      {"a", "b", "c", "va", "vb", "vc"}};

  /// The kernels' IR, in BabelStream's order (copy, mul, add, triad, dot).
  std::array<const ir::Kernel*, 5> ir() const { return {&copy.ir(), &mul.ir(), &add.ir(), &triad.ir(), &dot.ir()}; }
};

/// Canopy's run of BabelStream on one runtime.
template <class T>
class Stream {
 public:
  Stream(Runtime& rt, std::int64_t n, std::string policy = "static")
      : rt_(rt), n_(n), policy_(std::move(policy)), a_(rt.array<T>(n)), b_(rt.array<T>(n)), c_(rt.array<T>(n)) {
    rt_.region(kernels_.init).over(n_).policy(policy_).launch(a_, b_, c_, T(start_a), T(start_b), T(start_c));
    rt_.pause();
  }

  /// Runs kernel k (0..4) once and returns its time in seconds.
  double run(int k) {
    const T scalar = T(start_scalar);
    auto start = std::chrono::steady_clock::now();
    switch (k) {
      case 0: rt_.region(kernels_.copy).over(n_).policy(policy_).launch(c_, a_); break;
      case 1: rt_.region(kernels_.mul).over(n_).policy(policy_).launch(b_, c_, scalar); break;
      case 2: rt_.region(kernels_.add).over(n_).policy(policy_).launch(c_, a_, b_); break;
      case 3: rt_.region(kernels_.triad).over(n_).policy(policy_).launch(a_, b_, c_, scalar); break;
      default: sum_ = rt_.region(kernels_.dot).over(n_).policy(policy_).reduce(a_, b_); break;
    }
    rt_.pause();
    return seconds_since(start);
  }

  /// BabelStream's check after `repeats` rounds of the five kernels; an
  /// empty string when the results are right, else what is wrong.
  std::string check(int repeats) const {
    return check_results(a_.host().data(), b_.host().data(), c_.host().data(), n_, sum_, repeats);
  }

  /// The check on plain arrays (shared with the OpenMP baseline).
  static std::string check_results(const T* a, const T* b, const T* c, std::int64_t n, T sum, int repeats) {
    T gold_a = T(start_a), gold_b = T(start_b), gold_c = T(start_c);
    const T scalar = T(start_scalar);
    for (int r = 0; r < repeats; ++r) {
      gold_c = gold_a;
      gold_b = scalar * gold_c;
      gold_c = gold_a + gold_b;
      gold_a = gold_b + scalar * gold_c;
    }
    const T gold_sum = gold_a * gold_b * T(n);
    auto mean_error = [&](const T* x, T gold) {
      double total = 0;
      for (std::int64_t i = 0; i < n; ++i) total += std::fabs(double(x[i]) - double(gold));
      return total / double(std::max<std::int64_t>(n, 1));
    };
    const double epsilon = std::is_same_v<T, float> ? 1e-6 : 1e-13;
    std::string problems;
    auto expect = [&](const char* name, double error, double gold) {
      if (error / std::fabs(gold) > epsilon)
        problems += std::string(problems.empty() ? "" : "; ") + "array " + name + " is off by " +
                    std::to_string(error) + " on average (expected " + std::to_string(gold) + ")";
    };
    expect("a", mean_error(a, gold_a), gold_a);
    expect("b", mean_error(b, gold_b), gold_b);
    expect("c", mean_error(c, gold_c), gold_c);
    const double sum_error = std::fabs((double(sum) - double(gold_sum)) / double(gold_sum));
    if (sum_error > (std::is_same_v<T, float> ? 1e-6 : 1e-8))
      problems += std::string(problems.empty() ? "" : "; ") + "dot is " + std::to_string(double(sum)) + ", expected " +
                  std::to_string(double(gold_sum));
    return problems;
  }

  const Kernels<T>& kernels() const { return kernels_; }
  T sum() const { return sum_; }
  /// The three arrays (a baseline may run on them between Canopy's kernels).
  const Array<T>& a() const { return a_; }
  const Array<T>& b() const { return b_; }
  const Array<T>& c() const { return c_; }

 private:
  Runtime& rt_;
  std::int64_t n_;
  std::string policy_;
  Kernels<T> kernels_;
  Array<T> a_, b_, c_;
  T sum_ = 0;
};

}  // namespace babelstream
