// Tests of the access-footprint analysis (ir/analysis/footprint.hpp): the
// pattern of every array dimension, the site counts and flags, rows_touched
// and the printed form. Kernels are built with the make_* functions so that
// the tests do not depend on the parser.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <canopy/ir/analysis/footprint.hpp>
#include <canopy/ir/error.hpp>
#include <cstdint>
#include <iterator>
#include <limits>
#include <optional>
#include <random>
#include <sstream>

using namespace canopy::ir;

namespace {

// One unconditional, plain (not atomic) access site with these dimensions.
AccessFootprint one_site(std::vector<DimFootprint> dims) {
  AccessFootprint access;
  access.present = true;
  access.dims = std::move(dims);
  access.sites = 1;
  access.unconditional = true;
  return access;
}

constexpr auto I64 = ScalarType::I64;
constexpr auto F64 = ScalarType::F64;

Expr idx(int dim) { return make_index(dim); }
Expr lit(std::int64_t v) { return make_int(I64, v); }
Expr plus(Expr a, Expr b) { return make_binary(BinaryOp::Add, std::move(a), std::move(b)); }
Expr minus(Expr a, Expr b) { return make_binary(BinaryOp::Sub, std::move(a), std::move(b)); }
Expr times(Expr a, Expr b) { return make_binary(BinaryOp::Mul, std::move(a), std::move(b)); }
Expr load(int param, std::vector<Expr> indices) { return make_load(F64, param, std::move(indices)); }
Expr one() { return make_const(F64, 1.0); }

Kernel make_kernel(std::string name, std::vector<Param> params, int dims, std::vector<Stmt> body) {
  Kernel k;
  k.name = std::move(name);
  k.params = std::move(params);
  k.dims = dims;
  k.body = make_block(std::move(body));
  return k;
}

Param in1(std::string name) { return Param::array(std::move(name), F64, 1, Access::In); }
Param out1(std::string name) { return Param::array(std::move(name), F64, 1, Access::Out); }

DimFootprint affine(std::array<std::int64_t, 3> coeff, std::int64_t lo, std::int64_t hi) {
  return DimFootprint::affine(coeff, lo, hi);
}

/// A kernel `k(out a, in b) dims 1 { a[i] = b[index] }` for one read index.
Kernel read_of_b(Expr index, std::vector<Param> extra = {}) {
  std::vector<Param> params{out1("a"), in1("b")};
  for (auto& p : extra) params.push_back(std::move(p));
  return make_kernel("k", std::move(params), 1, {make_store(0, {idx(0)}, load(1, {std::move(index)}))});
}

DimFootprint read_dim0_of_b(Expr index, std::vector<Param> extra = {}) {
  return footprint_of(read_of_b(std::move(index), std::move(extra)), 1).reads.dims.at(0);
}

}  // namespace

TEST_CASE("footprint: copy a[i] = b[i]") {
  const Kernel k = make_kernel("copy", {out1("a"), in1("b")}, 1, {make_store(0, {idx(0)}, load(1, {idx(0)}))});
  const Footprint fp = footprint_of(k);
  REQUIRE(fp.arrays.size() == 2);
  const ArrayFootprint* a = fp.of(0);
  const ArrayFootprint* b = fp.of(1);
  REQUIRE(a != nullptr);
  REQUIRE(b != nullptr);
  CHECK(fp.of(2) == nullptr);
  CHECK(a->name == "a");

  CHECK_FALSE(a->reads.present);
  CHECK(a->writes.present);
  CHECK(a->writes.sites == 1);
  CHECK(a->writes.unconditional);
  CHECK_FALSE(a->writes.atomic);
  CHECK(a->writes.dims == std::vector<DimFootprint>{affine({1, 0, 0}, 0, 0)});

  CHECK(b->reads.present);
  CHECK(b->reads.sites == 1);
  CHECK(b->reads.unconditional);
  CHECK_FALSE(b->writes.present);
  CHECK(b->reads.dims == std::vector<DimFootprint>{affine({1, 0, 0}, 0, 0)});

  CHECK(rows_touched(b->reads, 0, 10, 20, 100) == Interval{10, 20});
  CHECK(rows_touched(a->writes, 0, 90, 120, 100) == Interval{90, 100});  // clamped to the extent
  CHECK(rows_touched(a->writes, 0, 10, 10, 100) == Interval{});          // an empty piece
  CHECK(rows_touched(a->reads, 0, 10, 20, 100) == Interval{});           // not read at all
  CHECK(rows_touched(b->reads, 0, 10, 20, 0) == Interval{});             // empty array

  CHECK(describe(fp, k) == "a: written dim0 i0\nb: read dim0 i0");
  std::ostringstream out;
  out << fp;
  CHECK(out.str() == "a: written dim0 i0\nb: read dim0 i0");
  CHECK(fmt::format("{}", fp) == "a: written dim0 i0\nb: read dim0 i0");
}

TEST_CASE("footprint: 5-point 2-D stencil") {
  // a[i][j] = b[i-1][j] + b[i+1][j] + b[i][j-1] + b[i][j+1] + b[i][j]
  auto b = [](Expr r, Expr c) { return load(1, {std::move(r), std::move(c)}); };
  auto i = idx(0), j = idx(1);
  Expr sum = b(minus(i, lit(1)), j);
  sum = make_binary(BinaryOp::Add, sum, b(plus(i, lit(1)), j));
  sum = make_binary(BinaryOp::Add, sum, b(i, minus(j, lit(1))));
  sum = make_binary(BinaryOp::Add, sum, b(i, plus(j, lit(1))));
  sum = make_binary(BinaryOp::Add, sum, b(i, j));
  const Kernel k =
      make_kernel("stencil", {Param::array("a", F64, 2, Access::Out), Param::array("b", F64, 2, Access::In)}, 2,
                  {make_store(0, {i, j}, sum)});
  const Footprint fp = footprint_of(k);
  const auto& reads = fp.of(1)->reads;
  CHECK(reads.sites == 5);
  CHECK(reads.unconditional);
  CHECK(reads.dims == std::vector<DimFootprint>{affine({1, 0, 0}, -1, 1), affine({0, 1, 0}, -1, 1)});
  const auto& writes = fp.of(0)->writes;
  CHECK(writes.dims == std::vector<DimFootprint>{affine({1, 0, 0}, 0, 0), affine({0, 1, 0}, 0, 0)});

  // The piece's rows plus one halo row on either side, clamped at the edges.
  CHECK(rows_touched(reads, 0, 10, 20, 100) == Interval{9, 21});
  CHECK(rows_touched(reads, 0, 0, 50, 100) == Interval{0, 51});
  CHECK(rows_touched(reads, 0, 50, 100, 100) == Interval{49, 100});
  CHECK(rows_touched(writes, 0, 10, 20, 100) == Interval{10, 20});
  // Dimension 1 follows index(1), whose range a piece does not restrict.
  CHECK(rows_touched(reads, 1, 10, 20, 64) == Interval{0, 64});
  CHECK_THROWS_AS(rows_touched(reads, 2, 10, 20, 64), canopy::Error);
  CHECK_THROWS_AS(rows_touched(reads, -1, 10, 20, 64), canopy::Error);

  CHECK(describe(fp, k) == "a: written dim0 i0 dim1 i1\nb: read dim0 i0+[-1,1] dim1 i1+[-1,1]");
}

TEST_CASE("footprint: an inout array read around the point it writes") {
  // a[i] = a[i-1] + a[i+1]
  const Kernel k =
      make_kernel("smooth", {Param::array("a", F64, 1, Access::InOut)}, 1,
                  {make_store(0, {idx(0)}, plus(load(0, {minus(idx(0), lit(1))}), load(0, {plus(idx(0), lit(1))})))});
  const Footprint fp = footprint_of(k);
  CHECK(fp.of(0)->reads.dims == std::vector<DimFootprint>{affine({1, 0, 0}, -1, 1)});
  CHECK(fp.of(0)->reads.sites == 2);
  CHECK(describe(fp, k) == "a: read dim0 i0+[-1,1]; written dim0 i0");
}

TEST_CASE("footprint: strided access b[2*i+1] and b[2*i]") {
  const auto odd = read_dim0_of_b(plus(times(lit(2), idx(0)), lit(1)));
  CHECK(odd == affine({2, 0, 0}, 1, 1));
  CHECK(describe(odd) == "2*i0+1");
  AccessFootprint access = one_site({odd});
  // i in [10, 20) touches 21, 23, ..., 39.
  CHECK(rows_touched(access, 0, 10, 20, 1000) == Interval{21, 40});

  const auto even = read_dim0_of_b(times(idx(0), lit(2)));
  CHECK(even == affine({2, 0, 0}, 0, 0));
  access.dims = {even};
  CHECK(rows_touched(access, 0, 10, 20, 1000) == Interval{20, 39});  // [2*begin, 2*end-1)
  CHECK(rows_touched(access, 0, 10, 20, 30) == Interval{20, 29});    // 28 is the last even row
  access.dims = {affine({3, 0, 0}, -1, 1)};                          // 3i-1 .. 3i+1: no gaps
  CHECK(rows_touched(access, 0, 10, 20, 1000) == Interval{29, 59});
  CHECK(rows_touched(access, 0, 10, 20, 40) == Interval{29, 40});
  CHECK(rows_touched(access, 0, 10, 20, 15) == Interval{});  // entirely past the end

  // A shift is a multiplication by a power of two.
  CHECK(read_dim0_of_b(make_binary(BinaryOp::Shl, idx(0), lit(3))) == affine({8, 0, 0}, 0, 0));
}

TEST_CASE("footprint: gather a[idx[i]] and scatter with atomics") {
  // dst[i] = a[idx[i]]
  const Kernel gather = make_kernel("gather", {out1("dst"), in1("a"), Param::array("idx", I64, 1, Access::In)}, 1,
                                    {make_store(0, {idx(0)}, load(1, {make_load(I64, 2, {idx(0)})}))});
  const Footprint fp = footprint_of(gather);
  CHECK(fp.of(1)->reads.dims == std::vector<DimFootprint>{DimFootprint::data_dependent()});
  CHECK(fp.of(2)->reads.dims == std::vector<DimFootprint>{affine({1, 0, 0}, 0, 0)});
  CHECK(rows_touched(fp.of(1)->reads, 0, 10, 20, 100) == Interval{0, 100});
  CHECK(rows_touched(fp.of(2)->reads, 0, 10, 20, 100) == Interval{10, 20});
  CHECK(describe(fp, gather) == "dst: written dim0 i0\na: read dim0 data-dependent\nidx: read dim0 i0");

  // atomic hist[bin[i]] += 1.0, and the same through a local
  const Kernel histogram =
      make_kernel("histogram", {Param::array("hist", F64, 1, Access::InOut), Param::array("bin", I64, 1, Access::In)},
                  1, {make_decl("t", make_load(I64, 1, {idx(0)})), make_atomic_add(0, {make_var(I64, "t")}, one())});
  const Footprint h = footprint_of(histogram);
  CHECK(h.of(0)->writes.atomic);
  CHECK(h.of(0)->writes.unconditional);
  CHECK_FALSE(h.of(0)->reads.present);
  CHECK(h.of(0)->writes.dims == std::vector<DimFootprint>{DimFootprint::data_dependent()});
  CHECK(describe(h, histogram) == "hist: written atomically dim0 data-dependent\nbin: read dim0 i0");

  // A data-dependent value that is masked is bounded again: a[idx[i] & 7] lies in [0, 7].
  const auto masked = read_dim0_of_b(make_binary(BinaryOp::And, make_load(I64, 2, {idx(0)}), lit(7)),
                                     {Param::array("idx", I64, 1, Access::In)});
  CHECK(masked == affine({0, 0, 0}, 0, 7));
  const auto remainder = read_dim0_of_b(make_binary(BinaryOp::Rem, make_load(I64, 2, {idx(0)}), lit(4)),
                                        {Param::array("idx", I64, 1, Access::In)});
  CHECK(remainder == affine({0, 0, 0}, -3, 3));
  CHECK(rows_touched(one_site({remainder}), 0, 10, 20, 100) == Interval{0, 4});
}

TEST_CASE("footprint: reversed access a[99 - i]") {
  const auto reversed = read_dim0_of_b(minus(lit(99), idx(0)));
  CHECK(reversed == affine({-1, 0, 0}, 99, 99));
  CHECK(describe(reversed) == "-i0+99");
  const AccessFootprint access = one_site({reversed});
  // i in [10, 20) touches 80 .. 89.
  CHECK(rows_touched(access, 0, 10, 20, 100) == Interval{80, 90});
  CHECK(rows_touched(access, 0, 0, 100, 100) == Interval{0, 100});
  CHECK(rows_touched(access, 0, 90, 110, 100) == Interval{0, 10});  // -10 .. 9 clamped
  // -2*i + [0, 1] over [5, 8): -14 .. -9, wholly before the array.
  const AccessFootprint twice = one_site({affine({-2, 0, 0}, 0, 1)});
  CHECK(rows_touched(twice, 0, 5, 8, 100) == Interval{});
  const AccessFootprint shifted = one_site({affine({-2, 0, 0}, 20, 21)});
  CHECK(rows_touched(shifted, 0, 5, 8, 100) == Interval{6, 12});  // 6 .. 11
}

TEST_CASE("footprint: counted For loops") {
  // for k in 0..3 { a[i] = b[i + k] }
  auto loop_kernel = [](Expr begin, Expr end, Expr step, std::vector<Param> extra = {}) {
    std::vector<Param> params{out1("a"), in1("b")};
    for (auto& p : extra) params.push_back(std::move(p));
    return make_kernel("k", std::move(params), 1,
                       {make_for("k", std::move(begin), std::move(end), std::move(step),
                                 make_block({make_store(0, {idx(0)}, load(1, {plus(idx(0), make_var(I64, "k"))}))}))});
  };
  const Kernel literal = loop_kernel(lit(0), lit(3), lit(1));
  const Footprint fp = footprint_of(literal);
  CHECK(fp.of(1)->reads.dims == std::vector<DimFootprint>{affine({1, 0, 0}, 0, 2)});
  CHECK(fp.of(0)->writes.unconditional);  // the loop always runs
  CHECK(rows_touched(fp.of(1)->reads, 0, 10, 20, 100) == Interval{10, 22});
  CHECK(describe(fp, literal) == "a: written dim0 i0\nb: read dim0 i0+[0,2]");

  // Step 2 over [1, 8): k takes 1, 3, 5, 7.
  CHECK(footprint_of(loop_kernel(lit(1), lit(8), lit(2)), 1).reads.dims.at(0) == affine({1, 0, 0}, 1, 7));
  // Step 3 over [0, 8): k takes 0, 3, 6.
  CHECK(footprint_of(loop_kernel(lit(0), lit(8), lit(3)), 1).reads.dims.at(0) == affine({1, 0, 0}, 0, 6));
  // Bounds that follow the index: for k in i-1 .. i+2 reads b[2i-1 .. 2i+1].
  const auto following = footprint_of(loop_kernel(minus(idx(0), lit(1)), plus(idx(0), lit(2)), lit(1)), 1);
  CHECK(following.reads.dims.at(0) == affine({2, 0, 0}, -1, 1));

  // A loop that never runs touches nothing.
  const Footprint never = footprint_of(loop_kernel(lit(3), lit(3), lit(1)));
  CHECK_FALSE(never.of(1)->reads.present);
  CHECK_FALSE(never.of(0)->writes.present);

  // Run-time bounds: the counter is unbounded and the body may not run.
  const Kernel runtime = loop_kernel(lit(0), make_param(I64, 2), lit(1), {Param::scalar("n", I64)});
  const Footprint r = footprint_of(runtime);
  CHECK(r.of(1)->reads.dims == std::vector<DimFootprint>{DimFootprint::whole()});
  CHECK_FALSE(r.of(0)->writes.unconditional);
  CHECK_FALSE(r.of(1)->reads.unconditional);
  CHECK(describe(r, runtime) == "a: written conditionally dim0 i0\nb: read dim0 whole");

  // Bounds read from memory (a CSR row): the counter is data dependent.
  const Kernel csr = loop_kernel(make_load(I64, 2, {idx(0)}), make_load(I64, 2, {plus(idx(0), lit(1))}), lit(1),
                                 {Param::array("rows", I64, 1, Access::In)});
  const Footprint c = footprint_of(csr);
  CHECK(c.of(1)->reads.dims == std::vector<DimFootprint>{DimFootprint::data_dependent()});
  CHECK(c.of(2)->reads.dims == std::vector<DimFootprint>{affine({1, 0, 0}, 0, 1)});
  CHECK(c.of(2)->reads.sites == 2);
  CHECK(c.of(2)->reads.unconditional);  // loop bounds are always evaluated
}

TEST_CASE("footprint: locals") {
  // var t = i + 1; a[t] = b[t - 1]
  const Kernel once = make_kernel("k", {out1("a"), in1("b")}, 1,
                                  {make_decl("t", plus(idx(0), lit(1))),
                                   make_store(0, {make_var(I64, "t")}, load(1, {minus(make_var(I64, "t"), lit(1))}))});
  const Footprint fp = footprint_of(once);
  CHECK(fp.of(0)->writes.dims == std::vector<DimFootprint>{affine({1, 0, 0}, 1, 1)});
  CHECK(fp.of(1)->reads.dims == std::vector<DimFootprint>{affine({1, 0, 0}, 0, 0)});
  CHECK(describe(fp, once) == "a: written dim0 i0+1\nb: read dim0 i0");

  // Through a chain of locals and a constant local: var c = 2 * 3; var u = t + c.
  const Kernel chain = make_kernel("k", {out1("a"), in1("b")}, 1,
                                   {make_decl("c", times(lit(2), lit(3))), make_decl("t", plus(idx(0), lit(1))),
                                    make_decl("u", plus(make_var(I64, "t"), make_var(I64, "c"))),
                                    make_store(0, {idx(0)}, load(1, {make_var(I64, "u")}))});
  CHECK(footprint_of(chain, 1).reads.dims.at(0) == affine({1, 0, 0}, 7, 7));

  // A reassigned local is Whole; one computed from memory is DataDependent.
  const Kernel reassigned = make_kernel("k", {out1("a"), in1("b")}, 1,
                                        {make_decl("t", idx(0)), make_assign("t", plus(make_var(I64, "t"), lit(1))),
                                         make_store(0, {make_var(I64, "t")}, load(1, {idx(0)}))});
  CHECK(footprint_of(reassigned, 0).writes.dims.at(0) == DimFootprint::whole());
  const Kernel from_memory = make_kernel("k", {out1("a"), in1("b"), Param::array("idx", I64, 1, Access::In)}, 1,
                                         {make_decl("t", idx(0)), make_assign("t", make_load(I64, 2, {idx(0)})),
                                          make_store(0, {make_var(I64, "t")}, load(1, {idx(0)}))});
  CHECK(footprint_of(from_memory, 0).writes.dims.at(0) == DimFootprint::data_dependent());
}

TEST_CASE("footprint: scalar parameters and non-affine indices are Whole") {
  const Param n = Param::scalar("n", I64);
  const auto offset = read_dim0_of_b(plus(idx(0), make_param(I64, 2)), {n});
  CHECK(offset == DimFootprint::whole());
  CHECK(describe(offset) == "whole");
  const AccessFootprint access = one_site({offset});
  CHECK(rows_touched(access, 0, 10, 20, 100) == Interval{0, 100});

  CHECK(read_dim0_of_b(times(idx(0), idx(0))) == DimFootprint::whole());
  CHECK(read_dim0_of_b(make_binary(BinaryOp::Div, idx(0), lit(2))) == DimFootprint::whole());
  CHECK(read_dim0_of_b(minus(make_extent(1, 0), idx(0))) == DimFootprint::whole());
  CHECK(read_dim0_of_b(make_binary(BinaryOp::Min, idx(0), make_param(I64, 2)), {n}) == DimFootprint::whole());
  // Bounded but not affine: i % 4 is in [0, 3] (index(0) is never negative).
  CHECK(read_dim0_of_b(make_binary(BinaryOp::Rem, idx(0), lit(4))) == affine({0, 0, 0}, 0, 3));
  // Constant arithmetic folds: (7 / 2) * i - (10 % 4).
  CHECK(read_dim0_of_b(minus(times(make_binary(BinaryOp::Div, lit(7), lit(2)), idx(0)),
                             make_binary(BinaryOp::Rem, lit(10), lit(4)))) == affine({3, 0, 0}, -2, -2));
  // Either side of a select, and min/max of the same shape.
  const Expr cond = make_compare(CompareOp::Gt, load(1, {idx(0)}), make_const(F64, 0.0));
  CHECK(read_dim0_of_b(make_select(cond, idx(0), plus(idx(0), lit(1)))) == affine({1, 0, 0}, 0, 1));
  CHECK(read_dim0_of_b(make_binary(BinaryOp::Max, minus(idx(0), lit(2)), plus(idx(0), lit(1)))) ==
        affine({1, 0, 0}, 1, 1));
  // Sites of one dimension with different coefficients.
  const Kernel mixed =
      make_kernel("k", {out1("a"), in1("b")}, 1, {make_store(0, {idx(0)}, plus(load(1, {idx(0)}), load(1, {lit(0)})))});
  CHECK(footprint_of(mixed, 1).reads.dims.at(0) == DimFootprint::whole());
  CHECK(footprint_of(mixed, 1).reads.sites == 2);
  // Whole and DataDependent sites together are DataDependent.
  const Kernel both = make_kernel(
      "k", {out1("a"), in1("b"), Param::array("idx", I64, 1, Access::In), n}, 1,
      {make_store(0, {idx(0)}, plus(load(1, {make_param(I64, 3)}), load(1, {make_load(I64, 2, {idx(0)})})))});
  CHECK(footprint_of(both, 1).reads.dims.at(0) == DimFootprint::data_dependent());
}

TEST_CASE("footprint: conditional writes") {
  // if (b[i] > 0) { a[i] = 1 }
  const Expr positive = make_compare(CompareOp::Gt, load(1, {idx(0)}), make_const(F64, 0.0));
  const Kernel k =
      make_kernel("k", {out1("a"), in1("b")}, 1, {make_if(positive, make_block({make_store(0, {idx(0)}, one())}))});
  const Footprint fp = footprint_of(k);
  CHECK(fp.of(0)->writes.present);
  CHECK_FALSE(fp.of(0)->writes.unconditional);
  CHECK(fp.of(1)->reads.unconditional);  // the condition itself is always evaluated
  CHECK(describe(fp, k) == "a: written conditionally dim0 i0\nb: read dim0 i0");

  // One unconditional site and one conditional site: not unconditional.
  const Kernel mixed = make_kernel(
      "k", {out1("a"), in1("b")}, 1,
      {make_store(0, {idx(0)}, one()), make_if(positive, make_block({make_store(0, {idx(0)}, load(1, {idx(0)}))}))});
  const Footprint m = footprint_of(mixed);
  CHECK(m.of(0)->writes.sites == 2);
  CHECK_FALSE(m.of(0)->writes.unconditional);
  // b is read once in the condition and once under it: two distinct sites, one conditional.
  CHECK(m.of(1)->reads.sites == 2);
  CHECK_FALSE(m.of(1)->reads.unconditional);

  // A literal condition picks its side.
  const Kernel literal = make_kernel("k", {out1("a"), in1("b")}, 1,
                                     {make_if(make_bool(true), make_block({make_store(0, {idx(0)}, one())}),
                                              make_block({make_store(0, {plus(idx(0), lit(5))}, one())}))});
  const Footprint l = footprint_of(literal);
  CHECK(l.of(0)->writes.unconditional);
  CHECK(l.of(0)->writes.sites == 1);
  CHECK(l.of(0)->writes.dims == std::vector<DimFootprint>{affine({1, 0, 0}, 0, 0)});
}

TEST_CASE("footprint: a 3-D kernel") {
  // a[i][j][k] = b[i+1][j][k-1] + c[k][j][i]
  auto i = idx(0), j = idx(1), kk = idx(2);
  const Kernel k = make_kernel(
      "k3",
      {Param::array("a", F64, 3, Access::Out), Param::array("b", F64, 3, Access::In),
       Param::array("c", F64, 3, Access::In)},
      3, {make_store(0, {i, j, kk}, plus(load(1, {plus(i, lit(1)), j, minus(kk, lit(1))}), load(2, {kk, j, i})))});
  const Footprint fp = footprint_of(k);
  CHECK(fp.of(1)->reads.dims ==
        std::vector<DimFootprint>{affine({1, 0, 0}, 1, 1), affine({0, 1, 0}, 0, 0), affine({0, 0, 1}, -1, -1)});
  CHECK(fp.of(2)->reads.dims ==
        std::vector<DimFootprint>{affine({0, 0, 1}, 0, 0), affine({0, 1, 0}, 0, 0), affine({1, 0, 0}, 0, 0)});
  CHECK(rows_touched(fp.of(1)->reads, 0, 4, 8, 16) == Interval{5, 9});
  CHECK(rows_touched(fp.of(1)->reads, 2, 4, 8, 16) == Interval{0, 16});
  // c is transposed: a piece of index(0) restricts its last dimension only.
  CHECK(rows_touched(fp.of(2)->reads, 0, 4, 8, 16) == Interval{0, 16});
  CHECK(rows_touched(fp.of(2)->reads, 2, 4, 8, 16) == Interval{4, 8});
  CHECK(describe(fp, k) ==
        "a: written dim0 i0 dim1 i1 dim2 i2\n"
        "b: read dim0 i0+1 dim1 i1 dim2 i2-1\n"
        "c: read dim0 i2 dim1 i1 dim2 i0");
  // A combined index i0 + 4*i1 - i2 in one dimension.
  const Kernel combined = make_kernel("k", {Param::array("a", F64, 1, Access::Out)}, 3,
                                      {make_store(0, {minus(plus(i, times(lit(4), j)), kk)}, one())});
  const auto dim = footprint_of(combined, 0).writes.dims.at(0);
  CHECK(dim == affine({1, 4, -1}, 0, 0));
  CHECK(describe(dim) == "i0+4*i1-i2");
  CHECK(rows_touched(footprint_of(combined, 0).writes, 0, 4, 8, 16) == Interval{0, 16});
}

TEST_CASE("footprint: describe spellings") {
  CHECK(describe(affine({0, 0, 0}, 3, 3)) == "3");
  CHECK(describe(affine({0, 0, 0}, -2, -2)) == "-2");
  CHECK(describe(affine({0, 0, 0}, 0, 2)) == "[0,2]");
  CHECK(describe(affine({-1, 0, 0}, -1, 1)) == "-i0+[-1,1]");
  CHECK(describe(affine({-3, 0, 1}, 0, 0)) == "-3*i0+i2");
  CHECK(describe(DimFootprint::data_dependent()) == "data-dependent");
  CHECK(describe(affine({std::numeric_limits<std::int64_t>::min(), 0, 0}, 0, 0)) == "-9223372036854775808*i0");
  CHECK(fmt::format("{}", Interval{2, 5}) == "[2,5)");
  CHECK(fmt::format("{}", IndexPattern::Affine) == "affine");
  CHECK(describe(AccessFootprint{}) == "none");

  const Kernel unused = make_kernel("k", {out1("a"), in1("b"), Param::scalar("s", F64)}, 1,
                                    {make_store(0, {idx(0)}, make_param(F64, 2))});
  CHECK(describe(footprint_of(unused), unused) == "a: written dim0 i0\nb: unused");
}

TEST_CASE("footprint: errors and malformed input") {
  const Kernel k = read_of_b(idx(0), {Param::scalar("s", F64)});
  CHECK_THROWS_WITH_AS(footprint_of(k, 2),
                       "footprint_of: parameter 2 ('s') of kernel 'k' is a scalar, not an array; pass the position "
                       "of an array parameter",
                       canopy::Error);
  CHECK_THROWS_AS(footprint_of(k, 3), canopy::Error);
  CHECK_THROWS_AS(footprint_of(k, -1), canopy::Error);

  // Parameters out of range, an index dim the kernel lacks, a missing index,
  // an undeclared local: no crash, Whole where it matters.
  const Kernel bad = make_kernel("bad", {out1("a"), in1("b")}, 1,
                                 {make_store(7, {idx(0)}, one()), make_store(0, {idx(2)}, load(1, {})),
                                  make_store(0, {make_var(I64, "nowhere")}, load(5, {idx(0)}))});
  const Footprint fp = footprint_of(bad);
  CHECK(fp.of(0)->writes.dims == std::vector<DimFootprint>{DimFootprint::whole()});
  CHECK(fp.of(1)->reads.dims == std::vector<DimFootprint>{DimFootprint::whole()});

  Kernel empty;
  empty.name = "empty";
  empty.params = {out1("a")};
  CHECK_FALSE(footprint_of(empty).of(0)->writes.present);
}

TEST_CASE("footprint: overflow falls back to Whole and rows_touched saturates") {
  constexpr std::int64_t big = std::numeric_limits<std::int64_t>::max();
  CHECK(read_dim0_of_b(plus(idx(0), lit(big))) == affine({1, 0, 0}, big, big));
  CHECK(read_dim0_of_b(plus(plus(idx(0), lit(big)), lit(1))) == DimFootprint::whole());
  CHECK(read_dim0_of_b(times(times(idx(0), lit(std::int64_t{1} << 62)), lit(4))) == DimFootprint::whole());
  CHECK(read_dim0_of_b(make_unary(UnaryOp::Neg, minus(lit(std::numeric_limits<std::int64_t>::min()), idx(0)))) ==
        DimFootprint::whole());
  // An i32 offset outside i32's range wraps in the kernel: Whole.
  const Expr i32_index = make_cast(ScalarType::I32, idx(0));
  CHECK(read_dim0_of_b(make_cast(I64, plus(i32_index, make_int(ScalarType::I32, 7)))) == affine({1, 0, 0}, 7, 7));
  CHECK(read_dim0_of_b(make_cast(I64, plus(plus(i32_index, make_int(ScalarType::I32, 2147483647)),
                                           make_int(ScalarType::I32, 1)))) == DimFootprint::whole());

  const AccessFootprint huge = one_site({affine({std::int64_t{1} << 40, 0, 0}, 0, 0)});
  CHECK(rows_touched(huge, 0, std::int64_t{1} << 30, (std::int64_t{1} << 30) + 2, 100) == Interval{});
  CHECK(rows_touched(huge, 0, 0, std::int64_t{1} << 30, 100) == Interval{0, 1});
  const AccessFootprint falling = one_site({affine({-(std::int64_t{1} << 40), 0, 0}, big, big)});
  CHECK(rows_touched(falling, 0, std::int64_t{1} << 40, std::int64_t{1} << 41, 100) == Interval{});
  const AccessFootprint edge = one_site({affine({1, 0, 0}, big, big)});
  CHECK(rows_touched(edge, 0, 0, big, big) == Interval{});
  const AccessFootprint low_edge = one_site({affine({1, 0, 0}, -big, 0)});
  CHECK(rows_touched(low_edge, 0, 0, big, big) == Interval{0, big});
}

TEST_CASE("footprint: shared and deep expressions stay cheap and safe") {
  // e = i; e = e + e, 80 times, as a DAG: 2^80 paths, 80 nodes. The
  // coefficient overflows past 2^62, so the index is Whole.
  Expr doubled = idx(0);
  for (int n = 0; n < 80; ++n) doubled = plus(doubled, doubled);
  CHECK(read_dim0_of_b(doubled) == DimFootprint::whole());
  Expr shared_load = load(1, {idx(0)});
  Expr value = shared_load;
  for (int n = 0; n < 80; ++n) value = plus(value, value);
  const Kernel k = make_kernel("k", {out1("a"), in1("b")}, 1, {make_store(0, {idx(0)}, value)});
  CHECK(footprint_of(k, 1).reads.sites == 1);

  // A chain nested deeper than the analysis follows: Whole, no crash.
  Expr deep = idx(0);
  for (int n = 0; n < 3000; ++n) deep = plus(deep, lit(1));
  CHECK(read_dim0_of_b(deep) == DimFootprint::whole());
  Expr shallow = idx(0);
  for (int n = 0; n < 100; ++n) shallow = plus(shallow, lit(1));
  CHECK(read_dim0_of_b(shallow) == affine({1, 0, 0}, 100, 100));
}

// ---- properties checked on random inputs ------------------------------------

namespace {

/// A random i64 index expression over index(0), index(1), the loop counter k,
/// idx[index(0)] and literals, with the operators the analysis reasons about.
class RandomIndex {
 public:
  explicit RandomIndex(std::uint64_t seed) : rng_(seed) {}

  Expr make(int depth) {
    if (depth == 0 || pick(4) == 0) return leaf();
    switch (pick(17)) {
      case 0: return make_unary(UnaryOp::Neg, make(depth - 1));
      case 1: return make_unary(UnaryOp::Not, make(depth - 1));
      case 2: return make_call(MathFn::Abs, {make(depth - 1)});
      case 3:
        return make_select(make_compare(CompareOp::Lt, make(depth - 1), make(depth - 1)), make(depth - 1),
                           make(depth - 1));
      case 4: return make_cast(I64, make_compare(CompareOp::Ge, make(depth - 1), make(depth - 1)));
      default: {
        static constexpr BinaryOp ops[] = {BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul, BinaryOp::Div,
                                           BinaryOp::Rem, BinaryOp::Min, BinaryOp::Max, BinaryOp::And,
                                           BinaryOp::Or,  BinaryOp::Xor, BinaryOp::Shl, BinaryOp::Shr};
        const BinaryOp op = ops[pick(std::size(ops))];
        // Shifts and divisions mostly by literals, as real index code has them.
        Expr rhs = (op >= BinaryOp::Div && op != BinaryOp::Min && op != BinaryOp::Max && pick(4) != 0)
                       ? lit(static_cast<std::int64_t>(pick(9)) - 4)
                       : make(depth - 1);
        return make_binary(op, make(depth - 1), rhs);
      }
    }
  }

  std::uint64_t pick(std::uint64_t n) { return rng_() % n; }

 private:
  Expr leaf() {
    switch (pick(8)) {
      case 0:
      case 1: return idx(0);
      case 2: return idx(1);
      case 3: return make_var(I64, "k");
      case 4: return make_load(I64, 2, {idx(0)});
      case 5: return lit(pick(50) == 0 ? std::numeric_limits<std::int64_t>::max() - 3 : 0);
      default: return lit(static_cast<std::int64_t>(pick(11)) - 5);
    }
  }
  std::mt19937_64 rng_;
};

/// The IR's value of `e` at one point, or nothing when some step overflows
/// int64 (the analysis assumes index arithmetic never wraps).
struct Point {
  std::int64_t i0, i1, k;
  const std::vector<std::int64_t>* idx;
};

std::optional<std::int64_t> value_at(const Expr& e, const Point& p) {
  using R = std::optional<std::int64_t>;
  switch (e->kind) {
    case ExprKind::Const: return e->as<Const>().int_value;
    case ExprKind::Index: return e->as<Index>().dim == 0 ? p.i0 : p.i1;
    case ExprKind::Var: return p.k;
    case ExprKind::Load: return p.idx->at(static_cast<std::size_t>(p.i0));
    case ExprKind::Unary: {
      auto x = value_at(e->as<Unary>().operand, p);
      if (!x) return x;
      if (e->as<Unary>().op == UnaryOp::Not) return ~*x;
      return *x == std::numeric_limits<std::int64_t>::min() ? R{} : R{-*x};
    }
    case ExprKind::Call: {
      auto x = value_at(e->as<Call>().args[0], p);
      if (!x || *x == std::numeric_limits<std::int64_t>::min()) return R{};
      return *x < 0 ? -*x : *x;
    }
    case ExprKind::Compare: {
      auto a = value_at(e->as<Compare>().lhs, p), b = value_at(e->as<Compare>().rhs, p);
      if (!a || !b) return R{};
      return e->as<Compare>().op == CompareOp::Lt ? *a < *b : *a >= *b;
    }
    case ExprKind::Cast: return value_at(e->as<Cast>().operand, p);
    case ExprKind::Select: {
      auto c = value_at(e->as<Select>().cond, p);
      auto t = value_at(e->as<Select>().if_true, p), f = value_at(e->as<Select>().if_false, p);
      if (!c || !t || !f) return R{};
      return *c ? t : f;
    }
    case ExprKind::Binary: {
      const auto& b = e->as<Binary>();
      auto x = value_at(b.lhs, p), y = value_at(b.rhs, p);
      if (!x || !y) return R{};
      std::int64_t r = 0;
      switch (b.op) {
        case BinaryOp::Add: return __builtin_add_overflow(*x, *y, &r) ? R{} : R{r};
        case BinaryOp::Sub: return __builtin_sub_overflow(*x, *y, &r) ? R{} : R{r};
        case BinaryOp::Mul: return __builtin_mul_overflow(*x, *y, &r) ? R{} : R{r};
        case BinaryOp::Div:
          if (*y == 0) return 0;
          if (*y == -1 && *x == std::numeric_limits<std::int64_t>::min()) return R{};
          return *x / *y;
        case BinaryOp::Rem: return (*y == 0 || *y == -1) ? 0 : *x % *y;
        case BinaryOp::Min: return std::min(*x, *y);
        case BinaryOp::Max: return std::max(*x, *y);
        case BinaryOp::And: return *x & *y;
        case BinaryOp::Or: return *x | *y;
        case BinaryOp::Xor: return *x ^ *y;
        case BinaryOp::Shl: {
          const int s = static_cast<int>(*y & 63);
          if (s == 63) return *x == 0 ? R{0} : R{};
          return __builtin_mul_overflow(*x, std::int64_t{1} << s, &r) ? R{} : R{r};
        }
        case BinaryOp::Shr: return *x >> (*y & 63);
      }
      return R{};
    }
    default: return R{};
  }
}

bool has_load(const Expr& e) {
  if (e->kind == ExprKind::Load) return true;
  bool found = false;
  auto check = [&](const Expr& c) { found = found || has_load(c); };
  switch (e->kind) {
    case ExprKind::Unary: check(e->as<Unary>().operand); break;
    case ExprKind::Cast: check(e->as<Cast>().operand); break;
    case ExprKind::Call: check(e->as<Call>().args[0]); break;
    case ExprKind::Compare:
      check(e->as<Compare>().lhs);
      check(e->as<Compare>().rhs);
      break;
    case ExprKind::Binary:
      check(e->as<Binary>().lhs);
      check(e->as<Binary>().rhs);
      break;
    case ExprKind::Select:
      check(e->as<Select>().cond);
      check(e->as<Select>().if_true);
      check(e->as<Select>().if_false);
      break;
    default: break;
  }
  return found;
}

}  // namespace

TEST_CASE("footprint: every value a random index takes lies in its footprint") {
  RandomIndex random(20240611);
  std::vector<std::int64_t> contents(12);
  int affine_count = 0, checked_points = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    for (auto& v : contents) v = static_cast<std::int64_t>(random.pick(41)) - 20;
    const Expr index = random.make(1 + static_cast<int>(random.pick(4)));
    const std::int64_t k_begin = static_cast<std::int64_t>(random.pick(7)) - 3;
    const std::int64_t k_end = k_begin + static_cast<std::int64_t>(random.pick(6));
    const std::int64_t k_step = 1 + static_cast<std::int64_t>(random.pick(3));
    // for k in k_begin..k_end step k_step { a[i] = b[index] }
    const Kernel k = make_kernel("k", {out1("a"), in1("b"), Param::array("idx", I64, 1, Access::In)}, 2,
                                 {make_for("k", lit(k_begin), lit(k_end), lit(k_step),
                                           make_block({make_store(0, {idx(0)}, load(1, {index}))}))});
    const AccessFootprint reads = footprint_of(k, 1).reads;
    if (k_end <= k_begin) {
      CHECK_FALSE(reads.present);
      continue;
    }
    REQUIRE(reads.present);
    const DimFootprint dim = reads.dims.at(0);
    if (!dim.is_affine()) {
      // Unbounded: data dependent exactly when the index reads memory.
      CHECK((dim.pattern == IndexPattern::DataDependent) == has_load(index));
      continue;
    }
    ++affine_count;
    for (std::int64_t i0 = 0; i0 < 12; ++i0)
      for (std::int64_t i1 = 0; i1 < 5; ++i1)
        for (std::int64_t kv = k_begin; kv < k_end; kv += k_step) {
          const auto value = value_at(index, Point{i0, i1, kv, &contents});
          if (!value) continue;
          ++checked_points;
          const __int128 offset = __int128{*value} - __int128{dim.coeff[0]} * i0 - __int128{dim.coeff[1]} * i1;
          if (offset < dim.lo || offset > dim.hi) {
            FAIL_CHECK("value outside the footprint: " << describe(dim) << " at i0=" << i0 << " i1=" << i1
                                                       << " k=" << kv << " value " << *value);
            i0 = 12;  // one report per expression
            break;
          }
        }
  }
  // The generator must exercise the affine paths, not only the fallbacks.
  CHECK(affine_count > 500);
  CHECK(checked_points > 10000);
}

TEST_CASE("footprint: rows_touched is the exact hull of the touched positions") {
  std::mt19937_64 rng(7);
  auto draw = [&](std::int64_t lo, std::int64_t hi) {
    return lo + static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(hi - lo + 1));
  };
  for (int trial = 0; trial < 20000; ++trial) {
    const std::int64_t c = draw(-4, 4), lo = draw(-6, 6), hi = lo + draw(0, 4);
    const std::int64_t begin = draw(0, 30), end = draw(0, 30), extent = draw(-1, 40);
    const AccessFootprint access = one_site({affine({c, 0, 0}, lo, hi)});
    std::int64_t first = std::numeric_limits<std::int64_t>::max(), last = std::numeric_limits<std::int64_t>::min();
    for (std::int64_t i = begin; i < end; ++i)
      for (std::int64_t off = lo; off <= hi; ++off) {
        const std::int64_t pos = c * i + off;
        if (pos < 0 || pos >= extent) continue;
        first = std::min(first, pos);
        last = std::max(last, pos);
      }
    const Interval expected = first <= last ? Interval{first, last + 1} : Interval{};
    const Interval got = rows_touched(access, 0, begin, end, extent);
    if (got != expected) {
      FAIL_CHECK("c=" << c << " off=[" << lo << "," << hi << "] piece=[" << begin << "," << end << ") extent=" << extent
                      << ": got " << got << ", expected " << expected);
      break;
    }
  }
}

TEST_CASE("footprint: a store in both branches of an If counts as unconditional") {
  // if (b[i] > 0) { a[i] = 1 } else { a[i] = b[i] }: every point writes a[i].
  auto cond = make_compare(CompareOp::Gt, load(1, {idx(0)}), make_const(F64, 0.0));
  const Kernel both = make_kernel("both", {out1("a"), in1("b")}, 1,
                                  {make_if(cond, make_block({make_store(0, {idx(0)}, one())}),
                                           make_block({make_store(0, {idx(0)}, load(1, {idx(0)}))}))});
  CHECK(footprint_of(both, 0).writes.unconditional);
  CHECK(footprint_of(both, 0).writes.sites == 2);

  // Only one branch writes: conditional.
  const Kernel one_side =
      make_kernel("one_side", {out1("a"), in1("b")}, 1, {make_if(cond, make_block({make_store(0, {idx(0)}, one())}))});
  CHECK_FALSE(footprint_of(one_side, 0).writes.unconditional);

  // The branches write different elements: conditional.
  const Kernel different = make_kernel("different", {out1("a"), in1("b")}, 1,
                                       {make_if(cond, make_block({make_store(0, {idx(0)}, one())}),
                                                make_block({make_store(0, {plus(idx(0), lit(1))}, one())}))});
  CHECK_FALSE(footprint_of(different, 0).writes.unconditional);

  // Inside another If, the pair is still conditional.
  const Kernel nested = make_kernel("nested", {out1("a"), in1("b")}, 1, {make_if(cond, make_block({both.body}))});
  CHECK_FALSE(footprint_of(nested, 0).writes.unconditional);
}

TEST_CASE("footprint: an index clamped to a bound, with the launch's range known") {
  // a[i] = b[min(i + 1, extent(b, 0) - 1)] and b[max(i - 1, 0)]: i + [0, 1]
  // and i + [-1, 0] over a range as long as b, where without the range each
  // was the whole of b. Checked against every position each point reads,
  // for bounds at the end, inside and past the range.
  auto clamped = [](BinaryOp op, Expr shifted, Expr bound) {
    return read_of_b(make_binary(op, std::move(shifted), std::move(bound)));
  };
  const Kernel next = clamped(BinaryOp::Min, plus(idx(0), lit(1)), minus(make_extent(1, 0), lit(1)));
  const Kernel previous = clamped(BinaryOp::Max, minus(idx(0), lit(1)), lit(0));
  CHECK(footprint_of(next).of(1)->reads.dims == std::vector<DimFootprint>{DimFootprint::whole()});
  CHECK(footprint_inputs(next).range);
  CHECK(footprint_inputs(previous).range);
  LaunchValues whole;
  whole.extents = {{100}, {100}};
  whole.range = {100};
  CHECK(footprint_of(next, whole).of(1)->reads.dims == std::vector<DimFootprint>{affine({1, 0, 0}, 0, 1)});
  CHECK(footprint_of(previous, whole).of(1)->reads.dims == std::vector<DimFootprint>{affine({1, 0, 0}, -1, 0)});
  CHECK(footprint_of(next, LaunchValues{whole.scalars, whole.extents, {}}).of(1)->reads.dims ==
        std::vector<DimFootprint>{DimFootprint::whole()});
  // Every position in b that a point of a piece of [0, n) reads lies in the
  // piece's rows.
  for (const std::int64_t n : {1, 2, 7, 100}) {
    for (const std::int64_t bound : {-3, 0, 2, 5, 99, 250}) {
      for (const std::int64_t shift : {-2, 1, 3}) {
        for (const BinaryOp op : {BinaryOp::Min, BinaryOp::Max}) {
          CAPTURE(n);
          CAPTURE(bound);
          CAPTURE(shift);
          const Kernel kernel = clamped(op, plus(times(idx(0), lit(2)), lit(shift)), lit(bound));
          LaunchValues values;
          values.extents = {{1000}, {1000}};
          values.range = {n};
          const auto reads = footprint_of(kernel, values).of(1)->reads;
          REQUIRE(reads.dims.size() == 1);
          REQUIRE(reads.dims[0].is_affine());
          for (std::int64_t begin = 0; begin < n; ++begin)
            for (std::int64_t end = begin + 1; end <= n; ++end) {
              const Interval rows = rows_touched(reads, 0, begin, end, std::int64_t{1} << 40);
              for (std::int64_t i = begin; i < end; ++i) {
                const std::int64_t at =
                    op == BinaryOp::Min ? std::min(2 * i + shift, bound) : std::max(2 * i + shift, bound);
                if (at >= 0) CHECK((rows.begin <= at && at < rows.end));  // a negative one is out of b
              }
            }
        }
      }
    }
  }
}

TEST_CASE("footprint: a launch's scalar values and extents bound") {
  // a[i] = b[i + k], k a scalar parameter: Whole for the kernel, i0+3 for a
  // launch with k = 3, and k is what the footprint depends on.
  const Kernel offset = read_of_b(plus(idx(0), make_param(I64, 2)), {Param::scalar("k", I64)});
  CHECK(footprint_of(offset).of(1)->reads.dims == std::vector<DimFootprint>{DimFootprint::whole()});
  LaunchValues k3;
  k3.scalars = {std::nullopt, std::nullopt, 3};
  const Footprint bound = footprint_of(offset, k3);
  CHECK(bound.of(1)->reads.dims == std::vector<DimFootprint>{affine({1, 0, 0}, 3, 3)});
  CHECK(bound.of(1)->reads.sure_sites.size() == 1);
  CHECK(rows_touched(bound.of(1)->reads, 0, 10, 20, 100) == Interval{13, 23});
  const FootprintInputs inputs = footprint_inputs(offset);
  CHECK(inputs.scalars == std::vector<int>{2});
  CHECK(inputs.extents.empty());
  // A value the launch does not give stays unbounded.
  CHECK(footprint_of(offset, LaunchValues{}).of(1)->reads.dims == std::vector<DimFootprint>{DimFootprint::whole()});

  // a[i] = b[extent(b, 0) - 1 - i]: reversed over an array of 100.
  const Kernel reversed = read_of_b(minus(minus(make_extent(1, 0), lit(1)), idx(0)));
  LaunchValues hundred;
  hundred.extents = {{100}, {100}};
  CHECK(footprint_of(reversed, hundred).of(1)->reads.dims == std::vector<DimFootprint>{affine({-1, 0, 0}, 99, 99)});
  CHECK(footprint_inputs(reversed).extents == std::vector<std::pair<int, int>>{{1, 0}});

  // a[i] = b[i * m + 1], m a scalar: the coefficient is the launch's m.
  const Kernel strided = read_of_b(plus(times(idx(0), make_param(I64, 2)), lit(1)), {Param::scalar("m", I64)});
  LaunchValues m4;
  m4.scalars = {std::nullopt, std::nullopt, 4};
  CHECK(footprint_of(strided, m4).of(1)->reads.dims == std::vector<DimFootprint>{affine({4, 0, 0}, 1, 1)});

  // for j in 0..n { a[i] = b[i + j] }: counted once n is known, and then
  // every point surely runs the loop.
  const Kernel loop =
      make_kernel("k", {out1("a"), in1("b"), Param::scalar("n", I64)}, 1,
                  {make_for("j", lit(0), make_param(I64, 2), lit(1),
                            make_block({make_store(0, {idx(0)}, load(1, {plus(idx(0), make_var(I64, "j"))}))}))});
  LaunchValues n5;
  n5.scalars = {std::nullopt, std::nullopt, 5};
  const Footprint counted = footprint_of(loop, n5);
  CHECK(counted.of(1)->reads.dims == std::vector<DimFootprint>{affine({1, 0, 0}, 0, 4)});
  CHECK(counted.of(0)->writes.unconditional);
  CHECK(footprint_inputs(loop).scalars == std::vector<int>{2});

  // A float scalar is never an index's input; a kernel whose indices use no
  // scalar or extent has none.
  const Kernel scaled = make_kernel("k", {out1("a"), in1("b"), Param::scalar("s", F64)}, 1,
                                    {make_store(0, {idx(0)}, times(load(1, {idx(0)}), make_param(F64, 2)))});
  CHECK(footprint_inputs(scaled).empty());
  // A gather's index stays data dependent whatever the launch gives.
  const Kernel gather =
      make_kernel("k", {out1("a"), in1("b"), Param::array("idx", I64, 1, Access::In), Param::scalar("k", I64)}, 1,
                  {make_store(0, {idx(0)}, load(1, {plus(make_load(I64, 2, {idx(0)}), make_param(I64, 3))}))});
  LaunchValues gather_values;
  gather_values.scalars = {std::nullopt, std::nullopt, std::nullopt, 7};
  CHECK(footprint_of(gather, gather_values).of(1)->reads.dims ==
        std::vector<DimFootprint>{DimFootprint::data_dependent()});
}
