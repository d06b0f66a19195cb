// The DSL's run-time errors: misuse that C++ cannot reject when the program
// compiles is reported while the kernel is traced (or when the traced kernel
// is verified), as a canopy::Error with a message naming what is wrong. Each
// test checks the exact message, and that tracing works again afterwards.
#include <doctest/doctest.h>

#include <cstdint>
#include <functional>
#include <string>

#include <canopy/dsl/dsl.hpp>
#include <canopy/ir/printer.hpp>

using namespace canopy;

namespace {

// The message of the canopy::Error that `make` throws, or "" when it throws none.
std::string error_of(const std::function<void()>& make) {
  try {
    make();
  } catch (const Error& error) {
    return error.what();
  }
  return "";
}

// A small kernel traced after an error: the thread's tracing state was restored.
bool tracing_still_works() {
  Kernel k("after", [](Out<double> a) { a[index(0)] = 1.0; }, {"a"});
  return ir::print(k.ir()) ==
         "kernel after(out f64[1] a) dims 1 {\n"
         "  a[index(0)] = 1:f64\n"
         "}\n";
}

}  // namespace

TEST_CASE("dsl errors: index(3) and index(-1)") {
  CHECK(error_of([] { Kernel k("k", [](Out<double> a) { a[index(3)] = 1.0; }); }) ==
        "kernel 'k': index(3): dimensions are 0, 1 or 2");
  CHECK(error_of([] { Kernel k("k", [](Out<double> a) { a[index(-1)] = 1.0; }); }) ==
        "kernel 'k': index(-1): dimensions are 0, 1 or 2");
  CHECK(tracing_still_works());
}

TEST_CASE("dsl errors: DSL calls outside a kernel body") {
  CHECK(error_of([] { (void)index(0); }) ==
        "index() was used outside a kernel body; DSL operations only work while a Kernel traces its lambda");
  CHECK(error_of([] { Var<double> v = 1.0; }) ==
        "Var was used outside a kernel body; DSL operations only work while a Kernel traces its lambda");
  CHECK(error_of([] { If(true, [] {}); }) ==
        "If was used outside a kernel body; DSL operations only work while a Kernel traces its lambda");
  CHECK(error_of([] { For(0, 3, [](Idx) {}); }) ==
        "For was used outside a kernel body; DSL operations only work while a Kernel traces its lambda");

  // Parameters kept from a traced kernel cannot emit statements later.
  std::function<void()> late_store;
  Kernel k("k", [&](Out<double> a) {
    a[index(0)] = 1.0;
    late_store = [a] { a[0] = 2.0; };
  });
  CHECK(error_of(late_store) ==
        "array store was used outside a kernel body; DSL operations only work while a Kernel traces its lambda");
  CHECK(ir::print(k.ir()) ==
        "kernel k(out f64[1] p0) dims 1 {\n"
        "  p0[index(0)] = 1:f64\n"
        "}\n");
}

TEST_CASE("dsl errors: a Value reassigned inside an If or For body") {
  const std::string expected =
      "kernel 'k': assignment: a Value defined outside an If or For body was reassigned inside it; the C++ "
      "assignment happens whatever the condition, so declare it as Var<T>";
  CHECK(error_of([] {
          Kernel k("k", [](Out<double> a, In<double> b) {
            Idx i = index(0);
            Value<double> x = b[i];
            If(x > 0.0, [&] { x = 2.0; });
            a[i] = x;
          });
        }) == expected);
  CHECK(error_of([] {
          Kernel k("k", [](Out<double> a, In<double> b) {
            Idx i = index(0);
            Value<double> x = b[i];
            If(x > 0.0, [&] {}).Else([&] { x = x * 2; });
            a[i] = x;
          });
        }) == expected);
  CHECK(error_of([] {
          Kernel k("k", [](Out<double> a, In<double> b, Val<double> s) {
            Idx i = index(0);
            Value<double> x = s;
            For(0, 4, [&](Idx) { x = x * 2; });
            a[i] = x;
          });
        }) == expected);
  CHECK(tracing_still_works());
}

TEST_CASE("dsl errors: For with a step of 0 or below, or too large for an i32 counter") {
  CHECK(error_of([] { Kernel k("k", [](Out<double> a) { For(0, 10, 0, [&](Idx j) { a[j] = 1.0; }); }); }) ==
        "kernel 'k': For: the step must be a positive constant, got 0");
  CHECK(error_of([] { Kernel k("k", [](Out<double> a) { For(0, 10, -2, [&](Idx j) { a[j] = 1.0; }); }); }) ==
        "kernel 'k': For: the step must be a positive constant, got -2");
  // An i32 counter cannot step by 2^32 + 1 (it would wrap to a step of 1).
  CHECK(error_of([] {
          Kernel k("k", [](Out<double> a, Val<std::int32_t> n) {
            For(0, n, (std::int64_t{1} << 32) + 1, [&](Value<std::int32_t> j) { a[j] = 1.0; });
          });
        }) == "kernel 'k': For: the step 4294967297 does not fit the loop counter's type i32");
  CHECK(tracing_still_works());
}

TEST_CASE("dsl errors: an integer literal the other operand's type cannot hold") {
  // C++ compares x < 3000000000LL in 64 bits; the kernel's literal would
  // have wrapped to -1294967296 (found by a new user's program).
  CHECK(error_of(
            [] { Kernel k("k", [](Out<bool> o, In<std::int32_t> x) { o[index(0)] = x[index(0)] < 3000000000LL; }); }) ==
        "kernel 'k': a literal: the literal 3000000000 meets an operand of type i32, which cannot hold it (C++ would "
        "widen the operand; the kernel would wrap the literal); cast the operand to a wider type, e.g. "
        "cast<std::int64_t>(x), or use a literal that i32 holds");
  CHECK(error_of([] {
          Kernel k("k", [](Out<std::int32_t> o) { o[index(0)] = -2147483649LL; });
        }).find("the literal -2147483649 meets an operand of type i32") != std::string::npos);
  CHECK(error_of([] {
          Kernel k("k", [](Out<std::int64_t> o) { o[index(0)] = 18446744073709551615ULL + 0 * 1ULL; });
        }) == "");  // an unsigned mask within the width keeps its bits, as C++'s conversion does
  CHECK(error_of([] {
          Kernel k("k", [](Out<std::int32_t> o, In<std::int32_t> x) { o[index(0)] = x[index(0)] & 0xFFFF0000u; });
        }) == "");
  CHECK(error_of([] {
          Kernel k("k", [](Out<std::int32_t> o, In<std::int32_t> x) { o[index(0)] = x[index(0)] & 0x1FFFFFFFFull; });
        }).find("the literal 8589934591 meets an operand of type i32") != std::string::npos);
  // Widened, as the message says, it runs as C++ would.
  CHECK(error_of([] {
          Kernel k("k", [](Out<bool> o, In<std::int32_t> x) {
            o[index(0)] = cast<std::int64_t>(x[index(0)]) < 3000000000LL;
          });
        }) == "");
  CHECK(tracing_still_works());
}

TEST_CASE("dsl errors: a For counter used outside its loop, and a Value never set") {
  const std::string expected =
      "kernel 'k': a Value: a kernel value was used before it was set (a For counter outside its loop, or a default "
      "Value)";
  CHECK(error_of([] {
          Kernel k("k", [](Out<double> a) {
            Idx j;
            For(j, 0, 8, [&] { a[j] = 1.0; });
            a[j] = 2.0;
          });
        }) == expected);
  CHECK(error_of([] {
          Kernel k("k", [](Out<double> a) {
            Value<double> never;
            a[index(0)] = never;
          });
        }) == expected);
  // An error inside the loop body unbinds the counter as well.
  Idx escaped;
  CHECK(error_of([&] {
          Kernel k("k", [&](Out<double> a) {
            For(escaped, 0, 8, [&] {
              a[escaped] = 1.0;
              (void)index(7);
            });
          });
        }) == "kernel 'k': index(7): dimensions are 0, 1 or 2");
  CHECK_FALSE(escaped.is_set());
  CHECK(tracing_still_works());
}

TEST_CASE("dsl errors: parameter names") {
  CHECK(error_of([] {
          Kernel k("k", [](Out<double> a, In<double> b, Val<double> s) { a[index(0)] = b[index(0)] * s; }, {"a", "b"});
        }) == "kernel 'k': parameter names: 2 names given for 3 parameters");
  CHECK(error_of([] {
          Kernel k("k", [](Out<double> a) { a[index(0)] = 1.0; }, {"a", "b"});
        }) == "kernel 'k': parameter names: 2 names given for 1 parameters");
  CHECK(tracing_still_works());
}

TEST_CASE("dsl: locals are named around the parameters' names, a For counter's 'k' included") {
  // A parameter named as a local would be (a For counter is 'k', an unnamed
  // Var 'v0'): the local takes the next free name instead.
  Kernel named_like_locals("k",
                           [](InOut<std::int32_t> h, In<std::int32_t> k, In<std::int32_t> v0) {
                             Idx i = index(0);
                             Var<double> acc("acc", 1.0);
                             Var<std::int32_t> unnamed(0);
                             For(0, 3, [&](Idx j) { atomic_add(h[(i + j) % 5], k[i] + v0[i]); });
                             unnamed = unnamed + 1;
                             h[i] = h[i] + cast<std::int32_t>(acc) + unnamed;
                           },
                           {"h", "k", "v0"});
  const std::string text = ir::print(named_like_locals.ir());
  CHECK(text.find("kernel k(inout i32[1] h, in i32[1] k, in i32[1] v0)") == 0);
  CHECK(text.find("for k1 ") != std::string::npos);
  CHECK(text.find("var acc") != std::string::npos);
  CHECK(text.find("var v1") != std::string::npos);
  Kernel var_named_as_param("k",
                            [](Out<double> a) {
                              Var<double> acc("acc", 1.0);
                              a[index(0)] = acc;
                            },
                            {"acc"});
  CHECK(ir::print(var_named_as_param.ir()).find("var acc1") != std::string::npos);
}

TEST_CASE("dsl errors: ill-formed kernels are rejected by the verifier") {
  CHECK(error_of([] {
          Kernel k("k", [](Out<double> a, In<double> b) { a[index(0)] = b[index(0)]; }, {"a", "a"});
        }) == "kernel 'k': two parameters are named 'a'; rename one");
  CHECK(error_of([] { Kernel k("k", [](Out<double> a) { a[index(0)] = 1.0; }, {"my array"}); }) ==
        "kernel 'k': parameter name 'my array' is not a valid identifier; use letters, digits, '_' and '.', "
        "starting with a letter or '_'");
  // A kernel name that is not an identifier.
  CHECK(error_of([] { Kernel k("my kernel", [](Out<double> a) { a[index(0)] = 1.0; }, {"a"}); }) ==
        "kernel 'my kernel': the kernel's name is not a valid identifier; use letters, digits, '_' and '.', "
        "starting with a letter or '_'");
  // A local whose name is not an identifier.
  CHECK(error_of([] {
          Kernel k("k",
                   [](Out<double> a) {
                     Var<double> v("2x", 1.0);
                     a[index(0)] = v;
                   },
                   {"a"});
        }) ==
        "kernel 'k': variable name '2x' is not a valid identifier; use letters, digits, '_' and '.', starting "
        "with a letter or '_' in `var 2x: f64 = 1:f64`");
  // A parameter and a local of the same name (the parameter keeps its default name).
  CHECK(error_of([] {
          Kernel k("k", [](Out<double> a) {
            Var<double> v("p0", 1.0);
            a[index(0)] = v;
          });
        }) == "kernel 'k': variable 'p0' has the name of a parameter; rename it in `var p0: f64 = 1:f64`");
  // bools have no order: `<` compiles on Value<bool> but does not verify.
  CHECK(error_of([] {
          Kernel k("k",
                   [](Out<bool> a, In<bool> b) {
                     Idx i = index(0);
                     a[i] = b[i] < b[i + 1];
                   },
                   {"a", "b"});
        }) == "kernel 'k': < on bool; bools compare only with == and != in `(b[index(0)] < b[(index(0) + 1:i64)])`");
  CHECK(tracing_still_works());
}

TEST_CASE("dsl errors: extent() out of range, kernels traced inside kernels") {
  CHECK(error_of([] { Kernel k("k", [](Out<double, 2> a) { a(index(0), 0) = cast<double>(a.extent(2)); }); }) ==
        "kernel 'k': extent(2): the array has 2 dimension(s)");
  CHECK(error_of([] {
          Kernel outer("outer", [](Out<double> a) {
            Kernel inner("inner", [](Out<double> b) { b[index(0)] = 1.0; });
            a[index(0)] = 2.0;
          });
        }) ==
        "kernel 'inner' is being defined inside the body of kernel 'outer'; define kernels outside each other's "
        "bodies");
  CHECK(tracing_still_works());
}
