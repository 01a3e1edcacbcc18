// Element-wise ops against a host reference on random inputs: every op, every dtype it takes,
// broadcasting, and non-contiguous (sliced with a step, transposed) operands.
#include <map>

#include "frontend_test_util.h"
#include "op_rows.h"

namespace tandem::testing {

namespace {

const std::vector<DType> kAllTypes{nd::float32, nd::float64, nd::int32, nd::int64};

// Inputs that keep every op defined: positive bases for power, non-zero integer divisors.
Host operand(const Shape& shape, std::mt19937_64& rng, DType dtype, bool positive) {
  const bool integral = !ops::is_floating(dtype);
  Host h = random_host(shape, rng, positive ? 1.0 : -5.0, 5.0, integral);
  if (integral && !positive) {
    for (double& v : h.values) {
      if (v == 0) v = 3;
    }
  }
  if (!integral) {
    for (double& v : h.values) v = round_to(v, dtype);
  }
  return h;
}

double integer_reference(const BinaryRow& c, double a, double b) {
  return c.integer_reference(a, b);
}

// The (a, b) shape pairs every binary op is tried on.
const std::vector<std::pair<Shape, Shape>> kShapePairs{
    {{3, 4}, {3, 4}}, {{3, 4}, {4}}, {{3, 1}, {1, 4}},       {{2, 3, 4}, {3, 1}}, {{5}, {}},
    {{}, {2, 2}},     {{1}, {7}},    {{4, 1, 3}, {1, 5, 1}}, {{0, 3}, {3}},       {{2, 1}, {2, 0}},
};

}  // namespace

TEST_SUITE("frontend.elementwise") {
  TEST_CASE("binary ops match the reference for every dtype and broadcast") {
    std::mt19937_64 rng(1);
    for (const BinaryRow& c : binary_rows()) {
      for (DType dtype : kAllTypes) {
        if (c.floating_only && !ops::is_floating(dtype)) continue;
        for (const auto& [sa, sb] : kShapePairs) {
          const Host a = operand(sa, rng, dtype, c.floating_only);
          const Host b = operand(sb, rng, dtype, c.floating_only);
          const bool integral = !ops::is_floating(dtype);
          Host expected = host_binary(a, b, [&](double x, double y) {
            return round_to(integral ? integer_reference(c, x, y) : c.reference(x, y), dtype);
          });
          const NDArray result = c.function(to_array(a, dtype), to_array(b, dtype));
          CHECK(result.dtype() == dtype);
          check_matches(result, expected,
                        std::string(c.name) + " " + dtype_name(dtype) + " " + sa.to_string() +
                            " with " + sb.to_string());
        }
      }
    }
  }

  TEST_CASE("binary ops read non-contiguous views correctly") {
    std::mt19937_64 rng(2);
    const std::int64_t n = scaled(300, 8);  // big enough to take the parallel path at scale 1
    for (DType dtype : {nd::float32, nd::int64}) {
      const Host base_a = operand({2 * n, 70}, rng, dtype, false);
      const Host base_b = operand({70, n}, rng, dtype, false);
      const NDArray a = to_array(base_a, dtype).slice(1, 2 * n, 2);  // every other row
      const NDArray b = to_array(base_b, dtype).T();                 // n x 70, column-major
      REQUIRE_FALSE(a.is_contiguous());
      REQUIRE_FALSE(b.is_contiguous());
      const Host ha = host_slice(base_a, 1, 2 * n, 2), hb = host_transpose(base_b);
      for (const BinaryRow& c : binary_rows()) {
        if (c.floating_only) continue;
        const bool integral = !ops::is_floating(dtype);
        check_matches(c.function(a, b),
                      host_binary(ha, hb,
                                  [&](double x, double y) {
                                    return round_to(
                                        integral ? integer_reference(c, x, y) : c.reference(x, y),
                                        dtype);
                                  }),
                      std::string(c.name) + " on views, " + dtype_name(dtype));
      }
      // A strided row (a column of base_b) broadcast over a strided matrix.
      const NDArray column = to_array(base_b, dtype).T()[3];
      Host hcolumn{{70}, {}};
      for (std::int64_t k = 0; k < 70; ++k) hcolumn.values.push_back(base_b.at(k * n + 3));
      check_matches(a + column, host_binary(ha, hcolumn, std::plus<double>()),
                    "strided row broadcast over a strided view");
    }
  }

  TEST_CASE("scalar ops on either side") {
    std::mt19937_64 rng(3);
    for (DType dtype : kAllTypes) {
      const Host h = operand({4, 5}, rng, dtype, false);
      const NDArray x = to_array(h, dtype);
      const bool integral = !ops::is_floating(dtype);
      const auto r = [&](double v) { return round_to(v, dtype); };
      check_matches(x + 2, host_unary(h, [&](double v) { return r(v + 2); }), "x + 2");
      check_matches(2 - x, host_unary(h, [&](double v) { return r(2 - v); }), "2 - x");
      check_matches(x * 3, host_unary(h, [&](double v) { return r(v * 3); }), "x * 3");
      check_matches(
          x / 2, host_unary(h, [&](double v) { return r(integral ? std::trunc(v / 2) : v / 2); }),
          "x / 2");
      check_matches(
          12 / x,
          host_unary(h, [&](double v) { return r(integral ? std::trunc(12 / v) : 12 / v); }),
          "12 / x");
      check_matches(x > 0.0, host_unary(h, [](double v) { return double(v > 0); }), "x > 0");
      check_matches(x == h.at(0), host_unary(h, [&](double v) { return double(v == h.at(0)); }),
                    "x == x[0]");
      check_matches(nd::maximum(x, 1.0), host_unary(h, [](double v) { return std::max(v, 1.0); }),
                    "maximum(x, 1)");
      check_matches(nd::minimum(x, 1.0), host_unary(h, [](double v) { return std::min(v, 1.0); }),
                    "minimum(x, 1)");
    }
    const NDArray f = nd::array({1, 2, 3});
    check_matches(nd::power(f, 2.0), Host{{3}, {1, 4, 9}}, "power(x, 2)");
    // A scalar is converted to the array's dtype first.
    check_matches(nd::full({2}, 5, nd::int32) + 1.9, Host{{2}, {6, 6}}, "int + 1.9");
  }

  TEST_CASE("unary ops match the reference") {
    std::mt19937_64 rng(4);
    // The unary ops are the rows of TANDEM_UNARY_OPS (op_rows.h).
    for (const UnaryRow& c : unary_rows()) {
      for (DType dtype : kAllTypes) {
        if (c.floating_only && !ops::is_floating(dtype)) continue;
        const Host base = operand({6, 9}, rng, dtype, !c.whole_line);
        const NDArray x = to_array(base, dtype);
        const bool integral = !ops::is_floating(dtype);
        const auto expected = [&](const Host& h) {
          return host_unary(h, [&](double v) {
            return round_to(integral ? c.integer_reference(v) : c.reference(v), dtype);
          });
        };
        check_matches(c.function(x), expected(base), std::string(c.name) + " " + dtype_name(dtype));
        check_matches(c.function(x.T()), expected(host_transpose(base)),
                      std::string(c.name) + " transposed " + dtype_name(dtype));
        check_matches(c.function(x.slice(1, 6, 3)), expected(host_slice(base, 1, 6, 3)),
                      std::string(c.name) + " stepped " + dtype_name(dtype));
      }
    }
    // A big array takes the parallel path.
    const std::int64_t n = scaled(400000, 1000);
    const NDArray big = nd::arange(static_cast<double>(n), 0, -1, nd::float64);
    const auto values = nd::sqrt(big).to_vector<double>();
    bool all = true;
    for (std::int64_t i = 0; i < n; ++i)
      all = all && values[static_cast<std::size_t>(i)] == std::sqrt(static_cast<double>(n - i));
    CHECK(all);
    CHECK(nd::exp(nd::zeros({3})).exp().to_vector<float>() ==
          std::vector<float>(3, std::exp(1.0f)));
  }

  TEST_CASE("in-place ops and assignment write the target's var") {
    std::mt19937_64 rng(5);
    const Host hx = operand({4, 6}, rng, nd::float64, false);
    const Host hy = operand({6}, rng, nd::float64, false);
    NDArray x = to_array(hx, nd::float64);
    const NDArray y = to_array(hy, nd::float64);
    NDArray alias = x;
    x += y;
    x *= 2.0;
    x -= 1.0;
    x /= y;
    const Host expected = host_binary(
        host_unary(host_binary(hx, hy, std::plus<double>()), [](double v) { return v * 2 - 1; }),
        hy, std::divides<double>());
    check_matches(alias, expected, "x += y; x *= 2; x -= 1; x /= y through another handle");

    // Into a strided view: only its elements change.
    NDArray z = nd::zeros({4, 3}, nd::int32);
    z.slice(0, 4, 2) += nd::ones({3}, nd::int32);
    z.T()[2] -= 5.0;
    check_matches(z, Host{{4, 3}, {1, 1, -4, 0, 0, -5, 1, 1, -4, 0, 0, -5}}, "in place on views");

    // Assignment, with broadcasting and from a scalar.
    NDArray w = nd::zeros({2, 3});
    w.assign(nd::array({1, 2, 3}));
    w[1].assign(7.0);
    check_matches(w, Host{{2, 3}, {1, 2, 3, 7, 7, 7}}, "assign");

    // Overlapping views read the values from before the op (as NumPy does).
    NDArray v = nd::arange(6);
    v.slice(1, 6) += v.slice(0, 5);
    check_matches(v, Host{{6}, {0, 1, 3, 5, 7, 9}}, "overlapping in-place add");
    NDArray u = nd::arange(6);
    u.slice(0, 5).assign(u.slice(1, 6));
    check_matches(u, Host{{6}, {1, 2, 3, 4, 5, 5}}, "overlapping assign");
    NDArray self = nd::arange(4);
    self += self;
    check_matches(self, Host{{4}, {0, 2, 4, 6}}, "x += x");
  }

  TEST_CASE("integer arithmetic wraps around and truncates toward zero") {
    const NDArray big = nd::full({1}, 2147483647, nd::int32);
    CHECK((big + 1).scalar<std::int32_t>() == -2147483647 - 1);
    CHECK((nd::array({-7, 7}).astype(nd::int64) / 2).to_vector<std::int64_t>() ==
          std::vector<std::int64_t>{-3, 3});
    CHECK(nd::abs(nd::full({1}, -2147483648.0, nd::int32)).scalar<std::int32_t>() ==
          -2147483647 - 1);
  }

}  // TEST_SUITE

}  // namespace tandem::testing
