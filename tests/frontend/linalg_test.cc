// dot (every shape combination, transposed and strided operands, every dtype), transpose views
// and concat, against host references.
#include "frontend_test_util.h"

namespace tandem::testing {

namespace {

Host host_dot(const Host& a, const Host& b) {
  const bool a_vec = a.shape.ndim() == 1, b_vec = b.shape.ndim() == 1;
  const std::int64_t m = a_vec ? 1 : a.shape[0], k = a.shape[a.shape.ndim() - 1];
  const std::int64_t n = b_vec ? 1 : b.shape[1];
  Shape shape;
  if (!a_vec) shape.push_back(m);
  if (!b_vec) shape.push_back(n);
  if (shape.ndim() == 0) shape.push_back(1);
  Host out{shape, std::vector<double>(static_cast<std::size_t>(m * n), 0.0)};
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (std::int64_t p = 0; p < k; ++p) s += a.at(i * k + p) * b.at(p * n + j);
      out.values[static_cast<std::size_t>(i * n + j)] = s;
    }
  }
  return out;
}

void check_close_dot(const NDArray& actual, const Host& expected, std::int64_t k,
                     const std::string& what) {
  INFO(what);
  REQUIRE(actual.shape().to_string() == expected.shape.to_string());
  const auto values = actual.to_vector<double>();
  // float32 sums of k products: allow k * eps relative to the magnitudes involved.
  const double tolerance = actual.dtype() == nd::float32 ? 1e-6 * static_cast<double>(k + 8)
                                                         : 1e-13 * static_cast<double>(k + 8);
  int bad = 0;
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (std::fabs(values[i] - expected.values[i]) >
        tolerance * std::max(1.0, std::fabs(expected.values[i]) + 4.0 * static_cast<double>(k))) {
      if (bad++ < 3)
        FAIL_CHECK("element " << i << ": " << values[i] << " vs " << expected.values[i]);
    }
  }
  CHECK(bad == 0);
}

}  // namespace

TEST_SUITE("frontend.linalg") {
  TEST_CASE("dot of matrices and vectors matches the reference for every dtype") {
    std::mt19937_64 rng(21);
    for (DType dtype : {nd::float32, nd::float64, nd::int32, nd::int64}) {
      const bool integral = !ops::is_floating(dtype);
      for (const auto& [sa, sb] : std::vector<std::pair<Shape, Shape>>{{{3, 4}, {4, 5}},
                                                                       {{1, 7}, {7, 1}},
                                                                       {{6, 3}, {3}},
                                                                       {{3}, {3, 6}},
                                                                       {{5}, {5}},
                                                                       {{4, 0}, {0, 3}},
                                                                       {{0, 2}, {2, 3}}}) {
        Host a = random_host(sa, rng, -4, 4, integral), b = random_host(sb, rng, -4, 4, integral);
        for (double& v : a.values) v = round_to(v, dtype);
        for (double& v : b.values) v = round_to(v, dtype);
        const NDArray c = nd::dot(to_array(a, dtype), to_array(b, dtype));
        CHECK(c.dtype() == dtype);
        check_close_dot(
            c, host_dot(a, b), sa[sa.ndim() - 1],
            std::string(dtype_name(dtype)) + " " + sa.to_string() + " . " + sb.to_string());
      }
    }
  }

  TEST_CASE("dot takes transposed and strided operands") {
    std::mt19937_64 rng(22);
    const std::int64_t n = scaled(300, 17);  // 300: several row blocks at scale 1
    const Host a = random_host({n, 2 * n}, rng), b = random_host({2 * n, n}, rng);
    for (DType dtype : {nd::float32, nd::float64}) {
      const NDArray xa = to_array(a, dtype), xb = to_array(b, dtype);
      check_close_dot(nd::dot(xa, xb), host_dot(a, b), 2 * n, "plain");
      check_close_dot(nd::dot(xb.T(), xa.T()), host_transpose(host_dot(a, b)), 2 * n,
                      "both transposed");
      check_close_dot(nd::dot(xa.T(), xa), host_dot(host_transpose(a), a), n, "a.T . a");
      const Host rows = host_slice(b, 0, 2 * n, 2);  // n x n
      check_close_dot(nd::dot(xb.slice(0, 2 * n, 2), xa.T().slice(1, 2 * n, 2)),
                      host_dot(rows, host_slice(host_transpose(a), 1, 2 * n, 2)), n,
                      "stepped slices");
      // A strided vector: a column of b.
      const NDArray column = xb.T()[1];
      Host hcol{{2 * n}, {}};
      for (std::int64_t i = 0; i < 2 * n; ++i) hcol.values.push_back(b.at(i * n + 1));
      check_close_dot(nd::dot(xa, column), host_dot(a, hcol), 2 * n, "matrix . strided vector");
      check_close_dot(nd::dot(column, xb), host_dot(hcol, b), 2 * n, "strided vector . matrix");
    }
  }

  TEST_CASE("dot of the seeds: 2000x2000 float32, within float tolerance of float64") {
    const std::int64_t n = scaled(2000, 64);
    nd::random::seed(7);
    const NDArray x = nd::random::uniform({n, n});
    const double single = nd::dot(x, x).sum().scalar<double>();
    const double precise =
        nd::dot(x.astype(nd::float64), x.astype(nd::float64)).sum().scalar<double>();
    CHECK(std::fabs(single - precise) <= 1e-5 * precise);
    // E[sum] = n^3 / 4 for U[0, 1) entries.
    CHECK(precise == doctest::Approx(static_cast<double>(n * n * n) / 4).epsilon(0.05));
  }

  TEST_CASE("transpose permutes axes as a view") {
    const NDArray x = nd::arange(24).reshape({2, 3, 4});
    const NDArray t = nd::transpose(x, {2, 0, 1});
    CHECK(t.shape() == Shape{4, 2, 3});
    CHECK(t.shares_storage_with(x));
    const Host hx = host_of(x);
    Host expected{{4, 2, 3}, {}};
    for (std::int64_t i = 0; i < 24; ++i) {
      const auto m = unravel(i, expected.shape);
      expected.values.push_back(hx.at(ravel({m[1], m[2], m[0]}, hx.shape)));
    }
    check_matches(t, expected, "transpose(x, {2, 0, 1})");
    check_matches(nd::transpose(x), host_transpose(hx), "transpose(x)");
    check_matches(nd::transpose(x, {-1, 1, 0}), host_transpose(hx), "negative axes");
  }

  TEST_CASE("concat along any axis, from views too") {
    const NDArray a = nd::arange(6).reshape({2, 3});
    const NDArray b = nd::arange(6, 15).reshape({3, 3});
    check_matches(nd::concat({a, b}),
                  Host{{5, 3}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14}}, "axis 0");
    check_matches(nd::concat({a, a.slice(0, 2)}, 1),
                  Host{{2, 6}, {0, 1, 2, 0, 1, 2, 3, 4, 5, 3, 4, 5}}, "axis 1");
    check_matches(nd::concat({b.T(), a.T()}, -1),
                  Host{{3, 5}, {6, 9, 12, 0, 3, 7, 10, 13, 1, 4, 8, 11, 14, 2, 5}},
                  "transposed inputs");
    check_matches(nd::concat({a}), host_of(a), "one input");
  }

}  // TEST_SUITE

}  // namespace tandem::testing
