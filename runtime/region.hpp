// Region: one launch of a kernel over an index range, built step by step:
//
//   rt.region(triad).over(n).policy("static").launch(a, b, c, 0.4);  // asynchronous
//   double d = rt.region(dot).over(n).reduce(a, b);                   // waits, returns the sum
//
// launch() takes one argument per array and scalar parameter of the kernel,
// in order (reduction parameters take none); their types are checked against
// the kernel's signature when the program compiles.
#pragma once

#include <array>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <canopy/dsl/kernel.hpp>
#include <canopy/ir/error.hpp>

#include "array.hpp"
#include "engine.hpp"

namespace canopy {

namespace runtime {

/// For each parameter of Ps..., its position among launch()'s arguments, or
/// -1 for a reduction parameter (which takes no argument).
template <class... Ps>
constexpr std::array<int, sizeof...(Ps)> launch_positions() {
  std::array<int, sizeof...(Ps)> positions{};
  int next = 0;
  std::size_t k = 0;
  ((positions[k++] = dsl::is_reduction_param_v<Ps> ? -1 : next++), ...);
  return positions;
}

template <class... Ps>
constexpr int launch_arity() {
  return (0 + ... + (dsl::is_reduction_param_v<Ps> ? 0 : 1));
}

/// Throw canopy::Error: scalar parameter `index` of `kernel` cannot hold `value`.
[[noreturn]] void throw_out_of_range(const ir::Kernel& kernel, std::size_t index, long long value);
[[noreturn]] void throw_out_of_range(const ir::Kernel& kernel, std::size_t index, unsigned long long value);
[[noreturn]] void throw_out_of_range(const ir::Kernel& kernel, std::size_t index, double value);

/// The argument `a` for parameter `index` of `kernel`, of type P: its type
/// checked at compile time, a scalar's value against P's range at run time.
template <class P, class A>
ArgRef bind_argument(const A& a, const ir::Kernel& kernel, std::size_t index) {
  using Arg = std::decay_t<A>;
  if constexpr (dsl::is_array_param_v<P>) {
    using T = typename P::element_type;
    static_assert(std::is_same_v<Arg, Array<T, P::rank>>,
                  "an array parameter takes an Array of the same element type and rank");
    if (!a) throw Error("an empty Array handle was passed to a kernel");
    return a.storage();
  } else {
    using T = typename P::value_type;
    static_assert(std::is_arithmetic_v<Arg>, "a scalar parameter (Val<T>) takes a number");
    static_assert(!(std::is_integral_v<T> && std::is_floating_point_v<Arg>),
                  "an integer scalar parameter takes an integer, not a floating-point number");
    // A value the parameter cannot hold is refused, not wrapped or made
    // infinite: Val<int32_t> given 3000000000 ran with -1294967296.
    bool fits = true;
    if constexpr (std::is_integral_v<T> && std::is_integral_v<Arg> && !std::is_same_v<T, bool> &&
                  !std::is_same_v<Arg, bool>)
      fits = std::in_range<T>(a);
    else if constexpr (std::is_floating_point_v<T> && std::is_floating_point_v<Arg> && sizeof(Arg) > sizeof(T))
      fits = !std::isfinite(a) || std::isfinite(static_cast<T>(a));  // rounds to T's largest: fits
    if (!fits) {
      if constexpr (std::is_floating_point_v<Arg>)
        throw_out_of_range(kernel, index, static_cast<double>(a));
      else if constexpr (std::is_signed_v<Arg>)
        throw_out_of_range(kernel, index, static_cast<long long>(a));
      else
        throw_out_of_range(kernel, index, static_cast<unsigned long long>(a));
    }
    return backends::scalar_arg<T>(static_cast<T>(a));
  }
}

template <class... Ts>
struct type_list {};

/// The reduction parameter types among Ps..., appended to the list Found.
template <class Found, class... Ps>
struct reductions_of {
  using type = Found;
};
template <class... Found, class P, class... Rest>
struct reductions_of<type_list<Found...>, P, Rest...> {
  using type = typename reductions_of<
      std::conditional_t<dsl::is_reduction_param_v<P>, type_list<Found..., P>, type_list<Found...>>, Rest...>::type;
};

}  // namespace runtime

template <class Signature>
class Region;

template <class... Ps>
class Region<void(Ps...)> {
 public:
  Region(std::weak_ptr<runtime::Engine> engine, const Kernel<void(Ps...)>& kernel) : engine_(std::move(engine)) {
    request_.kernel = kernel.ir_ptr();
  }

  /// The index range: n, (n0, n1) or (n0, n1, n2); the kernel's number of
  /// index dimensions must match. Without over(), a region runs one point.
  Region& over(Shape range) {
    request_.range = range;
    return *this;
  }
  Region& over(std::int64_t n0, std::int64_t n1) { return over(Shape(n0, n1)); }
  Region& over(std::int64_t n0, std::int64_t n1, std::int64_t n2) { return over(Shape(n0, n1, n2)); }
  /// How the range is split over the leaves ("static", "flatten", ...).
  Region& policy(std::string policy) {
    request_.policy = std::move(policy);
    return *this;
  }
  /// Runs the region at `location` instead of where its arguments point.
  Region& at(std::string location) {
    request_.location = std::move(location);
    return *this;
  }

  /// Queues the region and returns at once; Runtime::pause() waits for it.
  template <class... As>
  void launch(const As&... args) {
    submit(args...);
  }

  /// Runs the region, waits for it and returns its reduction results: the
  /// value of the one Sum/Min/Max parameter, or a tuple of them in order.
  template <class... As>
  auto reduce(const As&... args) {
    auto handle = submit(args...);
    handle.completion->wait();
    return results(*handle.results);
  }

 private:
  template <class... As>
  runtime::RegionHandle submit(const As&... args) {
    static_assert(sizeof...(As) == runtime::launch_arity<Ps...>(),
                  "launch() takes one argument per array and scalar parameter of the kernel, in order");
    auto bound = std::forward_as_tuple(args...);
    constexpr auto positions = runtime::launch_positions<Ps...>();
    runtime::RegionRequest request = request_;
    request.args.reserve(sizeof...(Ps));
    const ir::Kernel& kernel = *request.kernel;
    [&]<std::size_t... K>(std::index_sequence<K...>) {
      (request.args.push_back(bind_at<K, positions[K]>(bound, kernel)), ...);
    }
    (std::index_sequence_for<Ps...>{});
    // A Region kept past its Runtime's end launched into freed memory.
    const std::shared_ptr<runtime::Engine> engine = engine_.lock();
    if (!engine)
      throw Error("kernel '" + request.kernel->name +
                  "': its region was made by a Runtime that no longer exists; make the region with a live Runtime");
    return engine->submit(std::move(request));
  }

  template <std::size_t K, int Position, class Tuple>
  static runtime::ArgRef bind_at(const Tuple& bound, const ir::Kernel& kernel) {
    using P = std::tuple_element_t<K, std::tuple<Ps...>>;
    if constexpr (Position < 0)
      return backends::ReductionArg{};
    else
      return runtime::bind_argument<P>(std::get<Position>(bound), kernel, K);
  }

  static auto results(const std::vector<backends::ReductionValue>& values) {
    return reduction_values(values, typename runtime::reductions_of<runtime::type_list<>, Ps...>::type{});
  }

  template <class... Rs>
  static auto reduction_values(const std::vector<backends::ReductionValue>& values, runtime::type_list<Rs...>) {
    if constexpr (sizeof...(Rs) == 0) {
      return;
    } else if constexpr (sizeof...(Rs) == 1) {
      return backends::value_of<typename Rs::result_type...>(values.at(0));
    } else {
      return [&]<std::size_t... K>(std::index_sequence<K...>) {
        return std::tuple<typename Rs::result_type...>(backends::value_of<typename Rs::result_type>(values.at(K))...);
      }
      (std::index_sequence_for<Rs...>{});
    }
  }

  std::weak_ptr<runtime::Engine> engine_;
  runtime::RegionRequest request_;
};

}  // namespace canopy
