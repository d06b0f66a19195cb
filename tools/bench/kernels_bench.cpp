// canopy-bench kernels: five kernels of the shapes users write, each beside
// the OpenMP loop a careful programmer writes for it (kernels_openmp.cpp,
// -O3 -march=native), in the same run: an n-body force loop (float), a
// naive matrix product (double), kmeans' nearest-centre search (float), a
// Mandelbrot set (a data-dependent loop per point) and a kernel with a
// three-way branch per point. Every result is checked against the
// baseline's; the ratio is the baseline's time over Canopy's.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <canopy/canopy.hpp>

#include "baselines.hpp"
#include "report.hpp"

namespace canopy::bench {

namespace {

double seconds_of(const std::function<void()>& body) {
  const auto start = std::chrono::steady_clock::now();
  body();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// One kernel of the bench: its Canopy run, its baseline, and the check of
// Canopy's results against the baseline's (empty when they agree).
struct Workload {
  std::string name, what;
  std::function<void()> canopy, baseline;
  std::function<std::string()> check;
};

// How far apart two results are, relative to the largest magnitude among the
// expected ones (a sum of many terms near zero differs by rounding in its
// own last digits, so each element against itself would say too much).
template <class T>
double relative_difference(const std::vector<T>& got, const std::vector<T>& expected) {
  double largest = 1e-30, worst = 0;
  for (const T& e : expected) largest = std::max(largest, std::abs(double(e)));
  for (std::size_t k = 0; k < got.size(); ++k) worst = std::max(worst, std::abs(double(got[k]) - double(expected[k])));
  return worst / largest;
}

template <class T>
std::string within(const std::vector<T>& got, const std::vector<T>& expected, double tolerance) {
  const double d = relative_difference(got, expected);
  if (d <= tolerance) return "";
  char text[128];
  std::snprintf(text, sizeof text, "largest difference %.3g of the largest value, more than %.3g", d, tolerance);
  return text;
}

// Integer results that may differ in a few points (float rounding at a boundary).
std::string mostly_equal(const std::vector<std::int32_t>& got, const std::vector<std::int32_t>& expected,
                         double fraction) {
  std::size_t differ = 0;
  for (std::size_t k = 0; k < got.size(); ++k) differ += got[k] != expected[k];
  if (double(differ) <= fraction * double(got.size())) return "";
  return std::to_string(differ) + " of " + std::to_string(got.size()) + " results differ";
}

template <class T, int Rank>
std::vector<T> copy_of(const Array<T, Rank>& a) {
  auto view = a.host();
  return std::vector<T>(view.begin(), view.end());
}

// Kernels are made once per process (they are traced when constructed).
const auto& nbody_kernel() {
  static Kernel kernel("bench_nbody",
                       [](Out<float> ax, Out<float> ay, Out<float> az, In<float> x, In<float> y, In<float> z,
                          In<float> m, Val<float> eps2) {
                         Idx i = index(0);
                         const Idx n = x.extent(0);
                         const Value<float> xi = x[i], yi = y[i], zi = z[i];
                         Var<float> fx = 0.0f, fy = 0.0f, fz = 0.0f;
                         For(0, n, [&](Idx j) {
                           const Value<float> dx = x[j] - xi, dy = y[j] - yi, dz = z[j] - zi;
                           const Value<float> r2 = dx * dx + dy * dy + dz * dz + eps2;
                           const Value<float> inv = 1.0f / sqrt(r2);
                           const Value<float> s = m[j] * inv * inv * inv;
                           fx += dx * s;
                           fy += dy * s;
                           fz += dz * s;
                         });
                         ax[i] = fx;
                         ay[i] = fy;
                         az[i] = fz;
                       },
                       {"ax", "ay", "az", "x", "y", "z", "m", "eps2"});
  return kernel;
}

const auto& matmul_kernel() {
  static Kernel kernel("bench_matmul",
                       [](Out<double, 2> c, In<double, 2> a, In<double, 2> b) {
                         Idx i = index(0), j = index(1);
                         Var<double> acc = 0.0;
                         For(0, a.extent(1), [&](Idx k) { acc += a(i, k) * b(k, j); });
                         c(i, j) = acc;
                       },
                       {"c", "a", "b"});
  return kernel;
}

const auto& nearest_kernel() {
  static Kernel kernel("bench_nearest",
                       [](Out<std::int32_t> member, In<float, 2> points, In<float, 2> centres) {
                         Idx i = index(0);
                         Var<float> best = std::numeric_limits<float>::max();
                         Var<std::int32_t> nearest = 0;
                         For(0, centres.extent(0), [&](Idx c) {
                           Var<float> d = 0.0f;
                           For(0, points.extent(1), [&](Idx f) {
                             const Value<float> diff = points(i, f) - centres(c, f);
                             d += diff * diff;
                           });
                           If(d < best, [&] {
                             best = d;
                             nearest = cast<std::int32_t>(c);
                           });
                         });
                         member[i] = nearest;
                       },
                       {"member", "points", "centres"});
  return kernel;
}

const auto& mandelbrot_kernel() {
  static Kernel kernel(
      "bench_mandelbrot",
      [](Out<std::int32_t, 2> count, Val<float> x0, Val<float> y0, Val<float> step, Val<std::int32_t> iterations) {
        Idx i = index(0), j = index(1);
        const Value<float> cx = x0 + cast<float>(j) * step, cy = y0 + cast<float>(i) * step;
        Var<float> zr = 0.0f, zi = 0.0f;
        Var<std::int32_t> k = 0;
        For(0, iterations, [&](Value<std::int32_t>) {
          If(zr * zr + zi * zi <= 4.0f, [&] {
            const Value<float> t = zr * zr - zi * zi + cx;
            zi = 2.0f * zr * zi + cy;
            zr = t;
            k += 1;
          });
        });
        count(i, j) = k;
      },
      {"count", "x0", "y0", "step", "iterations"});
  return kernel;
}

const auto& branchy_kernel() {
  static Kernel kernel(
      "bench_branchy",
      [](Out<float> y, In<float> x) {
        Idx i = index(0);
        const Value<float> v = x[i];
        If(v < -1.0f, [&] { y[i] = exp(v); }).ElseIf(v < 1.0f, [&] { y[i] = v * v * 0.5f + sin(v); }).Else([&] {
          y[i] = sqrt(v) * log(v);
        });
      },
      {"y", "x"});
  return kernel;
}

std::vector<float> uniform(std::size_t n, float lo, float hi, unsigned seed) {
  std::mt19937 random(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> out(n);
  for (float& v : out) v = d(random);
  return out;
}

template <class T, int R>
void fill(Array<T, R>& a, const std::vector<T>& values) {
  auto view = a.host();
  std::copy(values.begin(), values.end(), view.begin());
}

}  // namespace

int kernels_command(int argc, char** argv) {
  Args args(argc, argv, {});
  const int repeat = static_cast<int>(args.count("--repeat", 5));
  const std::int64_t bodies = args.count("--bodies", 8192), order = args.count("--order", 512),
                     points = args.count("--points", 1 << 18), pixels = args.count("--pixels", 1024),
                     elements = args.count("--elements", 1 << 23);
  const std::string json = args.get("--json", "");
  std::vector<std::string> wanted(args.words().begin(), args.words().end());

  setenv("CANOPY_DEVICES", "cpu", 1);  // the CPU alone: the baselines are CPU loops
  Runtime rt;
  std::vector<Workload> workloads;

  // n-body: forces on every body from every body.
  const auto x0 = uniform(std::size_t(bodies), -1, 1, 1), y0 = uniform(std::size_t(bodies), -1, 1, 2),
             z0 = uniform(std::size_t(bodies), -1, 1, 3), m0 = uniform(std::size_t(bodies), 0.5f, 1.5f, 4);
  auto x = rt.array<float>(bodies), y = rt.array<float>(bodies), z = rt.array<float>(bodies),
       m = rt.array<float>(bodies), ax = rt.array<float>(bodies), ay = rt.array<float>(bodies),
       az = rt.array<float>(bodies);
  fill(x, x0), fill(y, y0), fill(z, z0), fill(m, m0);
  std::vector<float> bx(static_cast<std::size_t>(bodies)), by(bx), bz(bx);
  const float eps2 = 0.01f;
  workloads.push_back({"nbody", std::to_string(bodies) + " bodies, float",
                       [&] {
                         rt.region(nbody_kernel()).over(bodies).launch(ax, ay, az, x, y, z, m, eps2);
                         rt.pause();
                       },
                       [&] {
                         openmp::nbody(x0.data(), y0.data(), z0.data(), m0.data(), eps2, bodies, bx.data(), by.data(),
                                       bz.data());
                       },
                       [&] {
                         std::string problem = within(copy_of(ax), bx, 1e-4);
                         if (problem.empty()) problem = within(copy_of(ay), by, 1e-4);
                         if (problem.empty()) problem = within(copy_of(az), bz, 1e-4);
                         return problem;
                       }});

  // A naive matrix product.
  std::vector<double> a0(std::size_t(order * order)), b0(a0.size()), c0(a0.size());
  {
    const auto fa = uniform(a0.size(), -1, 1, 5), fb = uniform(a0.size(), -1, 1, 6);
    std::copy(fa.begin(), fa.end(), a0.begin());
    std::copy(fb.begin(), fb.end(), b0.begin());
  }
  auto a = rt.array<double, 2>(Shape(order, order)), b = rt.array<double, 2>(Shape(order, order)),
       c = rt.array<double, 2>(Shape(order, order));
  fill(a, a0), fill(b, b0);
  workloads.push_back({"matmul", std::to_string(order) + "x" + std::to_string(order) + ", double",
                       [&] {
                         rt.region(matmul_kernel()).over(order, order).launch(c, a, b);
                         rt.pause();
                       },
                       [&] { openmp::matmul(a0.data(), b0.data(), order, c0.data()); },
                       [&] { return within(copy_of(c), c0, 1e-12); }});

  // kmeans' nearest centre.
  const std::int64_t features = 16, clusters = 16;
  const auto p0 = uniform(std::size_t(points * features), 0, 1, 7),
             k0 = uniform(std::size_t(clusters * features), 0, 1, 8);
  auto p = rt.array<float, 2>(Shape(points, features)), k = rt.array<float, 2>(Shape(clusters, features));
  auto member = rt.array<std::int32_t>(points);
  fill(p, p0), fill(k, k0);
  std::vector<std::int32_t> bmember(static_cast<std::size_t>(points));
  workloads.push_back({"nearest",
                       std::to_string(points) + " points, " + std::to_string(features) + " features, " +
                           std::to_string(clusters) + " centres, float",
                       [&] {
                         rt.region(nearest_kernel()).over(points).launch(member, p, k);
                         rt.pause();
                       },
                       [&] { openmp::nearest(p0.data(), k0.data(), points, features, clusters, bmember.data()); },
                       [&] { return mostly_equal(copy_of(member), bmember, 1e-3); }});

  // Mandelbrot: a loop per point that ends where the point escapes.
  const float mx = -2.0f, my = -1.5f, mstep = 3.0f / float(pixels);
  const std::int32_t iterations = 256;
  auto count = rt.array<std::int32_t, 2>(Shape(pixels, pixels));
  std::vector<std::int32_t> bcount(static_cast<std::size_t>(pixels * pixels));
  workloads.push_back({"mandelbrot", std::to_string(pixels) + "x" + std::to_string(pixels) + ", 256 iterations",
                       [&] {
                         rt.region(mandelbrot_kernel()).over(pixels, pixels).launch(count, mx, my, mstep, iterations);
                         rt.pause();
                       },
                       [&] { openmp::mandelbrot(pixels, pixels, mx, my, mstep, iterations, bcount.data()); },
                       [&] { return mostly_equal(copy_of(count), bcount, 1e-2); }});

  // A branch per point, each arm with its own math.
  const auto v0 = uniform(std::size_t(elements), -4, 4, 9);
  auto v = rt.array<float>(elements), out = rt.array<float>(elements);
  fill(v, v0);
  std::vector<float> bout(static_cast<std::size_t>(elements));
  workloads.push_back({"branchy", std::to_string(elements) + " elements, float",
                       [&] {
                         rt.region(branchy_kernel()).over(elements).launch(out, v);
                         rt.pause();
                       },
                       [&] { openmp::branchy(v0.data(), elements, bout.data()); },
                       [&] { return within(copy_of(out), bout, 1e-5); }});

  std::erase_if(workloads, [&](const Workload& w) {
    return !wanted.empty() && std::find(wanted.begin(), wanted.end(), w.name) == wanted.end();
  });
  if (workloads.empty()) fail("no such kernel; the kernels are nbody, matmul, nearest, mandelbrot and branchy");

  std::printf(
      "kernels on the CPU, seconds: the best of %d runs of each, in turn (ratio: OpenMP's time over Canopy's)\n",
      repeat);
  std::printf("%-11s %-44s %10s %10s %7s  %s\n", "kernel", "size", "canopy", "openmp", "ratio", "check");
  std::vector<Row> rows;
  double log_sum = 0;
  bool all_right = true;
  for (auto& w : workloads) {
    w.canopy();  // compiles the kernel and touches the arrays
    w.baseline();
    double canopy = 1e300, baseline = 1e300;
    for (int r = 0; r < repeat; ++r) {
      settle();  // each run on idle cores (report.hpp)
      canopy = std::min(canopy, seconds_of(w.canopy));
      settle();
      baseline = std::min(baseline, seconds_of(w.baseline));
    }
    const std::string problem = w.check();
    all_right = all_right && problem.empty();
    const double ratio = baseline / canopy;
    log_sum += std::log(ratio);
    std::printf("%-11s %-44s %10.5f %10.5f %6.2fx  %s\n", w.name.c_str(), w.what.c_str(), canopy, baseline, ratio,
                problem.empty() ? "ok" : problem.c_str());
    Row row;
    row.set("kernel", w.name).set("size", w.what).set("canopy_seconds", canopy).set("openmp_seconds", baseline);
    row.set("ratio", ratio).set("check", problem.empty() ? "ok" : problem);
    rows.push_back(row);
  }
  const double geomean = std::exp(log_sum / double(workloads.size()));
  std::printf("geometric mean of the ratios: %.2fx (%d OpenMP threads)\n", geomean, openmp::threads());
  if (!json.empty()) write_json(json, rows, {{"geomean_ratio", geomean}});
  return all_right ? 0 : 1;
}

}  // namespace canopy::bench
